#include "testing/external_mini_cluster.h"

#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "absl/time/clock.h"
#include "common/env.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "proto/master.grpc.pb.h"
#include "proto/tserver.grpc.pb.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"
#include "testing/wait.h"

#ifndef BASALT_BIN_DIR
#define BASALT_BIN_DIR ""
#endif

namespace basalt {
namespace {

void SetDeadline(grpc::ClientContext* ctx, absl::Duration timeout) {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout)));
}

// Creates a fresh directory under $TEST_TMPDIR (or /tmp).
absl::StatusOr<std::string> MakeTempRoot() {
  const char* base = getenv("TEST_TMPDIR");
  std::string tmpl =
      JoinPath(base != nullptr && *base != '\0' ? base : "/tmp", "basalt-cluster-XXXXXX");
  if (mkdtemp(tmpl.data()) == nullptr) return PosixError(StrCat("mkdtemp ", tmpl), errno);
  return tmpl;
}

std::string RoleAndState(const pb::TabletStatusPB& t) {
  return StrCat(pb::RaftRolePB_Name(t.role()), "/", pb::TabletStatePB_Name(t.state()), " term ",
                t.term());
}

}  // namespace

std::string ExternalMiniCluster::ResolveBinDir(const std::string& configured) {
  if (!configured.empty()) return configured;
  const char* env = getenv("BASALT_BIN_DIR");
  if (env != nullptr && *env != '\0') return env;
  return BASALT_BIN_DIR;
}

ExternalMiniCluster::ExternalMiniCluster(ExternalMiniClusterOptions options)
    : options_(std::move(options)) {
  const char* keep = getenv("BASALT_KEEP_TEST_DATA");
  keep_root_dir_ = keep != nullptr && std::string(keep) == "1";
}

ExternalMiniCluster::~ExternalMiniCluster() {
  absl::Status s = Shutdown();
  if (!s.ok()) LOG(WARNING) << "cluster shutdown: " << s;
  masters_.clear();
  tservers_.clear();
  net_hosts_.clear();
  network_.reset();  // After the daemons: nothing runs in the namespaces any more.
  if (created_root_dir_ && !keep_root_dir_) {
    std::error_code ec;  // Best effort: a leftover temp dir is harmless.
    std::filesystem::remove_all(root_dir_, ec);
    if (ec) LOG(WARNING) << "cannot remove " << root_dir_ << ": " << ec.message();
  } else if (!root_dir_.empty()) {
    LOG(INFO) << "cluster data and logs kept in " << root_dir_;
  }
}

std::vector<std::string> ExternalMiniCluster::MasterFlags() const {
  std::vector<std::string> flags = {
      StrCat("--tserver_unresponsive_timeout_ms=", options_.tserver_unresponsive_timeout_ms),
      "--webserver_port=0"};
  if (options_.num_masters > 1) flags.push_back(StrCat("--master_addresses=", master_addresses_));
  flags.insert(flags.end(), options_.extra_master_flags.begin(), options_.extra_master_flags.end());
  return flags;
}

std::vector<std::string> ExternalMiniCluster::TserverFlags() const {
  std::vector<std::string> flags = {
      StrCat("--master_addresses=", master_addresses_),
      StrCat("--heartbeat_interval_ms=", options_.heartbeat_interval_ms), "--webserver_port=0"};
  flags.insert(flags.end(), options_.extra_tserver_flags.begin(),
               options_.extra_tserver_flags.end());
  return flags;
}

absl::StatusOr<ExternalMiniCluster::Endpoint> ExternalMiniCluster::NewEndpoint(
    const std::string& name, uint16_t namespace_port, std::vector<ReservedPort>* ports) {
  Endpoint ep;
  if (network_ == nullptr) {
    BASALT_ASSIGN_OR_RETURN(ReservedPort port, ReservedPort::Reserve());
    ep.host = port.host();
    ep.port = port.port();
    ports->push_back(std::move(port));
    return ep;
  }
  // A host of its own: the port is the daemon's alone, no reservation needed.
  BASALT_ASSIGN_OR_RETURN(ep.net_host, network_->AddHost(name));
  ep.host = network_->address(ep.net_host);
  ep.port = namespace_port;
  ep.netns_path = network_->netns_path(ep.net_host);
  return ep;
}

std::unique_ptr<ExternalDaemon> ExternalMiniCluster::NewDaemon(const std::string& name,
                                                               const std::string& exe,
                                                               const Endpoint& endpoint,
                                                               std::vector<std::string> flags) {
  ExternalDaemonOptions o;
  o.name = name;
  o.exe = JoinPath(ResolveBinDir(options_.bin_dir), exe);
  o.dir = JoinPath(root_dir_, name);
  o.host = endpoint.host;
  o.rpc_port = endpoint.port;
  o.netns_path = endpoint.netns_path;
  o.flags = std::move(flags);
  o.start_timeout = options_.daemon_start_timeout;
  o.shutdown_timeout = options_.daemon_shutdown_timeout;
  auto daemon = std::make_unique<ExternalDaemon>(std::move(o));
  if (endpoint.net_host >= 0) net_hosts_[daemon.get()] = endpoint.net_host;
  return daemon;
}

absl::Status ExternalMiniCluster::Prepare() {
  if (options_.num_masters < 1) return absl::InvalidArgumentError("num_masters must be >= 1");
  if (options_.num_tablet_servers < 0) {
    return absl::InvalidArgumentError("num_tablet_servers must be >= 0");
  }
  if (options_.root_dir.empty()) {
    BASALT_ASSIGN_OR_RETURN(root_dir_, MakeTempRoot());
    created_root_dir_ = true;
  } else {
    root_dir_ = options_.root_dir;
    BASALT_RETURN_IF_ERROR(Env::Default()->CreateDirs(root_dir_));
  }
  LOG(INFO) << "cluster root: " << root_dir_;
  if (options_.network_namespaces) {
    BASALT_ASSIGN_OR_RETURN(network_, VirtualNetwork::Create());
  }
  std::vector<Endpoint> master_endpoints, tserver_endpoints;
  for (int i = 0; i < options_.num_masters; ++i) {
    BASALT_ASSIGN_OR_RETURN(
        Endpoint ep, NewEndpoint(StrCat("master-", i), kNamespaceMasterPort, &master_ports_));
    if (i > 0) master_addresses_ += ",";
    master_addresses_ += StrCat(ep.host, ":", ep.port);
    master_endpoints.push_back(std::move(ep));
  }
  for (int i = 0; i < options_.num_tablet_servers; ++i) {
    BASALT_ASSIGN_OR_RETURN(Endpoint ep,
                            NewEndpoint(StrCat("ts-", i), kNamespaceTserverPort, &tserver_ports_));
    tserver_endpoints.push_back(std::move(ep));
  }
  for (int i = 0; i < options_.num_masters; ++i) {
    masters_.push_back(
        NewDaemon(StrCat("master-", i), options_.master_exe, master_endpoints[i], MasterFlags()));
    master_channels_.push_back(NewChannel(masters_.back()->rpc_address()));
  }
  for (int i = 0; i < options_.num_tablet_servers; ++i) {
    tservers_.push_back(
        NewDaemon(StrCat("ts-", i), options_.tserver_exe, tserver_endpoints[i], TserverFlags()));
    tserver_channels_.push_back(NewChannel(tservers_.back()->rpc_address()));
  }
  prepared_ = true;
  return absl::OkStatus();
}

absl::Status ExternalMiniCluster::StartDaemons() {
  // Masters at once: the masters of a forming catalog group each wait for all the others.
  std::vector<ExternalDaemon*> starting;
  absl::Status s;
  for (auto& d : masters_) {
    if (d->IsRunning()) continue;
    s = d->BeginStart();
    if (!s.ok()) {
      KillAll();  // The others would wait for it in vain.
      return s;
    }
    starting.push_back(d.get());
  }
  for (ExternalDaemon* d : starting) {
    absl::Status f = d->FinishStart();
    if (s.ok()) s = f;
  }
  if (!s.ok()) {
    KillAll();
    return s;
  }
  for (auto& d : tservers_) {
    if (d->IsRunning()) continue;
    absl::Status s = d->Start();
    if (!s.ok()) {
      KillAll();
      return s;
    }
  }
  if (options_.wait_for_tablet_servers) {
    const absl::Time start = absl::Now();
    absl::Status s = WaitForTabletServerCount(num_tablet_servers(), options_.registration_timeout);
    LOG(INFO) << "waited " << absl::FormatDuration(absl::Now() - start) << " for "
              << num_tablet_servers() << " tablet servers to register";
    if (!s.ok()) {
      std::string tails = AllLogTails(20);
      KillAll();
      return absl::Status(s.code(), StrCat(s.message(), "\n", tails));
    }
  }
  return absl::OkStatus();
}

absl::Status ExternalMiniCluster::Start() {
  if (!prepared_) BASALT_RETURN_IF_ERROR(Prepare());
  return StartDaemons();
}

absl::Status ExternalMiniCluster::Shutdown() {
  // All at once: each daemon's shutdown is independent, and daemons waiting on RPC timeouts to
  // stopped peers would otherwise add up.
  for (auto* group : {&tservers_, &masters_}) {
    for (auto& d : *group) d->BeginShutdown();
  }
  absl::Status first;
  for (auto* group : {&tservers_, &masters_}) {
    for (auto& d : *group) {
      absl::Status s = d->FinishShutdown();
      if (!s.ok() && first.ok()) first = s;
    }
  }
  return first;
}

void ExternalMiniCluster::KillAll() {
  for (auto* group : {&tservers_, &masters_}) {
    for (auto& d : *group) d->Kill();
  }
}

absl::Status ExternalMiniCluster::Restart() {
  absl::Status s = Shutdown();
  if (!s.ok()) LOG(WARNING) << "shutdown before restart: " << s;
  return StartDaemons();
}

absl::StatusOr<int> ExternalMiniCluster::AddTabletServer() {
  CHECK(prepared_) << "Start() the cluster first";
  const int idx = num_tablet_servers();
  BASALT_ASSIGN_OR_RETURN(Endpoint ep,
                          NewEndpoint(StrCat("ts-", idx), kNamespaceTserverPort, &tserver_ports_));
  tservers_.push_back(NewDaemon(StrCat("ts-", idx), options_.tserver_exe, ep, TserverFlags()));
  tserver_channels_.push_back(NewChannel(tservers_.back()->rpc_address()));
  BASALT_RETURN_IF_ERROR(tservers_.back()->Start());
  if (!options_.wait_for_tablet_servers) return idx;
  // Only the new server: others may be stopped on purpose.
  const std::string uuid = tservers_.back()->uuid();
  BASALT_RETURN_IF_ERROR(WaitFor(
      options_.registration_timeout, StrCat(tservers_.back()->name(), " to register"),
      [&]() -> absl::Status {
        pb::ListTabletServersResponsePB resp;
        BASALT_RETURN_IF_ERROR(ListTabletServers(&resp));
        for (const auto& ts : resp.servers()) {
          if (ts.uuid() == uuid && ts.live()) return absl::OkStatus();
        }
        return absl::UnavailableError(StrCat("the master does not list ", uuid, " as live"));
      }));
  return idx;
}

absl::StatusOr<int> ExternalMiniCluster::AddMaster() {
  CHECK(prepared_) << "Start() the cluster first";
  const int idx = num_masters();
  BASALT_ASSIGN_OR_RETURN(
      Endpoint ep, NewEndpoint(StrCat("master-", idx), kNamespaceMasterPort, &master_ports_));
  master_addresses_ = StrCat(master_addresses_, ",", ep.host, ":", ep.port);
  std::vector<std::string> flags = MasterFlags();
  if (options_.num_masters <= 1) flags.push_back(StrCat("--master_addresses=", master_addresses_));
  masters_.push_back(NewDaemon(StrCat("master-", idx), options_.master_exe, ep, flags));
  master_channels_.push_back(NewChannel(masters_.back()->rpc_address()));
  BASALT_RETURN_IF_ERROR(masters_.back()->Start());
  return idx;
}

int ExternalMiniCluster::TabletServerIndexByUuid(const std::string& uuid) const {
  for (int i = 0; i < num_tablet_servers(); ++i) {
    if (tservers_[i]->uuid() == uuid) return i;
  }
  return -1;
}

std::shared_ptr<grpc::Channel> ExternalMiniCluster::master_channel(int idx) {
  CHECK(prepared_) << "Start() the cluster first";
  return master_channels_[idx];
}

std::shared_ptr<grpc::Channel> ExternalMiniCluster::tserver_channel(int idx) {
  CHECK(prepared_) << "Start() the cluster first";
  return tserver_channels_[idx];
}

absl::Status ExternalMiniCluster::CheckNoDaemonDied() {
  std::string problems;
  for (auto* group : {&masters_, &tservers_}) {
    for (auto& d : *group) {
      if (d->IsRunning() || !d->ExitedUnexpectedly()) continue;
      StrAppend(&problems, "\n", d->name(), " ", d->last_exit(), "\n", d->LogTail());
    }
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InternalError(StrCat("daemons died:", problems));
}

std::string ExternalMiniCluster::AllLogTails(int max_lines) const {
  std::string out;
  for (auto* group : {&masters_, &tservers_}) {
    for (auto& d : *group) StrAppend(&out, d->LogTail(max_lines), "\n");
  }
  return out;
}

absl::Status ExternalMiniCluster::NetworkNamespacesAvailable() {
  return VirtualNetwork::Available();
}

absl::StatusOr<int> ExternalMiniCluster::HostOf(const ExternalDaemon* daemon) const {
  if (network_ == nullptr) {
    return absl::FailedPreconditionError(
        "network cuts need a started cluster with options.network_namespaces");
  }
  auto it = net_hosts_.find(daemon);
  if (it == net_hosts_.end()) {
    return absl::InvalidArgumentError("the daemon is not one of this cluster's");
  }
  return it->second;
}

absl::Status ExternalMiniCluster::CutOneWay(const ExternalDaemon* from, const ExternalDaemon* to) {
  BASALT_ASSIGN_OR_RETURN(int from_host, HostOf(from));
  BASALT_ASSIGN_OR_RETURN(int to_host, HostOf(to));
  BASALT_RETURN_IF_ERROR_PREPEND(network_->Block(from_host, to_host),
                                 StrCat("cutting ", from->name(), " -> ", to->name()));
  LOG(INFO) << "network: cut " << from->name() << " -> " << to->name();
  return absl::OkStatus();
}

absl::Status ExternalMiniCluster::Partition(const std::vector<const ExternalDaemon*>& side_a,
                                            const std::vector<const ExternalDaemon*>& side_b) {
  for (const ExternalDaemon* a : side_a) {
    for (const ExternalDaemon* b : side_b) {
      BASALT_RETURN_IF_ERROR(CutOneWay(a, b));
      BASALT_RETURN_IF_ERROR(CutOneWay(b, a));
    }
  }
  return absl::OkStatus();
}

absl::Status ExternalMiniCluster::Isolate(const ExternalDaemon* daemon) {
  BASALT_RETURN_IF_ERROR(HostOf(daemon).status());
  std::vector<const ExternalDaemon*> others;
  for (auto* group : {&masters_, &tservers_}) {
    for (auto& d : *group) {
      if (d.get() != daemon) others.push_back(d.get());
    }
  }
  return Partition({daemon}, others);
}

absl::Status ExternalMiniCluster::Heal() {
  if (network_ == nullptr) {
    return absl::FailedPreconditionError(
        "network cuts need a started cluster with options.network_namespaces");
  }
  BASALT_RETURN_IF_ERROR_PREPEND(network_->UnblockAll(), "healing the network");
  LOG(INFO) << "network: healed";
  return absl::OkStatus();
}

namespace {

// Calls `call` on each running, unpaused master in turn until one answers OK (the leader:
// followers answer NOT_THE_LEADER_MASTER); returns that master's index, or the last error.
template <typename Call>
absl::StatusOr<int> CallLeaderMaster(ExternalMiniCluster* cluster, const Call& call) {
  absl::Status last = absl::UnavailableError("no master is running");
  for (int i = 0; i < cluster->num_masters(); ++i) {
    if (!cluster->master(i)->IsRunning() || cluster->master(i)->IsPaused()) continue;
    auto stub = pb::MasterService::NewStub(cluster->master_channel(i));
    grpc::ClientContext ctx;
    SetDeadline(&ctx, cluster->options().rpc_timeout);
    last = FromGrpcStatus(call(stub.get(), &ctx));
    if (last.ok()) return i;
  }
  return last;
}

}  // namespace

absl::Status ExternalMiniCluster::ListTabletServers(pb::ListTabletServersResponsePB* resp) {
  return CallLeaderMaster(this,
                          [resp](pb::MasterService::Stub* stub, grpc::ClientContext* ctx) {
                            resp->Clear();
                            return stub->ListTabletServers(ctx, pb::ListTabletServersRequestPB(),
                                                           resp);
                          })
      .status();
}

absl::StatusOr<int> ExternalMiniCluster::LeaderMasterIndex() {
  pb::ListTablesResponsePB resp;
  return CallLeaderMaster(this, [&resp](pb::MasterService::Stub* stub, grpc::ClientContext* ctx) {
    return stub->ListTables(ctx, pb::ListTablesRequestPB(), &resp);
  });
}

absl::StatusOr<int> ExternalMiniCluster::WaitForLeaderMaster(absl::Duration timeout) {
  int idx = -1;
  BASALT_RETURN_IF_ERROR(WaitFor(timeout, "a ready leader master", [&]() -> absl::Status {
    BASALT_ASSIGN_OR_RETURN(idx, LeaderMasterIndex());
    return absl::OkStatus();
  }));
  return idx;
}

absl::Status ExternalMiniCluster::WaitForTabletServerCount(int n, absl::Duration timeout) {
  absl::Status s = WaitFor(timeout, StrCat(n, " live tablet servers"), [&]() -> absl::Status {
    pb::ListTabletServersResponsePB resp;
    BASALT_RETURN_IF_ERROR(ListTabletServers(&resp));
    int live = 0;
    std::string listing;
    for (const auto& ts : resp.servers()) {
      live += ts.live() ? 1 : 0;
      StrAppend(&listing, " ", ts.uuid(), ts.live() ? "(live)" : "(not live)");
    }
    if (live == n) return absl::OkStatus();
    return absl::UnavailableError(StrCat("the master lists ", live, " live:", listing));
  });
  if (s.ok() || masters_.empty()) return s;
  return absl::Status(s.code(), StrCat(s.message(), "\n", masters_[0]->LogTail(20)));
}

absl::Status ExternalMiniCluster::ListTablets(int ts_idx, pb::ListTabletsResponsePB* resp) {
  auto stub = pb::TabletServerService::NewStub(tserver_channel(ts_idx));
  grpc::ClientContext ctx;
  SetDeadline(&ctx, options_.rpc_timeout);
  resp->Clear();
  return FromGrpcStatus(stub->ListTablets(&ctx, pb::ListTabletsRequestPB(), resp));
}

absl::StatusOr<pb::TabletStatusPB> ExternalMiniCluster::GetReplicaStatus(
    int ts_idx, const std::string& tablet_id) {
  pb::ListTabletsResponsePB resp;
  BASALT_RETURN_IF_ERROR_PREPEND(ListTablets(ts_idx, &resp), tservers_[ts_idx]->name());
  for (const auto& t : resp.tablets()) {
    if (t.tablet_id() == tablet_id) return t;
  }
  return absl::NotFoundError(
      StrCat(tservers_[ts_idx]->name(), " has no replica of tablet ", tablet_id));
}

absl::StatusOr<TabletLeader> ExternalMiniCluster::FindTabletLeader(const std::string& tablet_id) {
  TabletLeader best;
  std::string seen;
  for (int i = 0; i < num_tablet_servers(); ++i) {
    ExternalDaemon* ts = tservers_[i].get();
    if (!ts->IsRunning() || ts->IsPaused()) continue;
    auto replica = GetReplicaStatus(i, tablet_id);
    if (!replica.ok()) {
      StrAppend(&seen, " ", ts->name(), ": ", replica.status().message(), ";");
      continue;
    }
    StrAppend(&seen, " ", ts->name(), ": ", RoleAndState(*replica), ";");
    if (replica->role() == pb::LEADER && replica->state() == pb::TABLET_RUNNING &&
        (best.ts_index < 0 || replica->term() > best.term)) {
      best = TabletLeader{i, ts->uuid(), replica->term()};
    }
  }
  if (best.ts_index < 0) {
    return absl::NotFoundError(StrCat("no running leader of tablet ", tablet_id, ":", seen));
  }
  return best;
}

absl::StatusOr<TabletLeader> ExternalMiniCluster::WaitForTabletLeader(const std::string& tablet_id,
                                                                      absl::Duration timeout,
                                                                      uint64_t min_term,
                                                                      int exclude_ts) {
  TabletLeader found;
  BASALT_RETURN_IF_ERROR(
      WaitFor(timeout, StrCat("a leader of tablet ", tablet_id, " with term >= ", min_term),
              [&]() -> absl::Status {
                BASALT_ASSIGN_OR_RETURN(found, FindTabletLeader(tablet_id));
                if (found.term < min_term || found.ts_index == exclude_ts) {
                  return absl::UnavailableError(StrCat("leader ", found.uuid, " at term ",
                                                       found.term, " on ts-", found.ts_index));
                }
                return absl::OkStatus();
              }));
  return found;
}

absl::Status ExternalMiniCluster::WaitForTabletRunning(const std::string& tablet_id,
                                                       const std::vector<int>& ts_indexes,
                                                       absl::Duration timeout) {
  return WaitFor(timeout, StrCat("tablet ", tablet_id, " running"), [&]() -> absl::Status {
    for (int i : ts_indexes) {
      if (!tservers_[i]->IsRunning() || tservers_[i]->IsPaused()) continue;
      BASALT_ASSIGN_OR_RETURN(auto replica, GetReplicaStatus(i, tablet_id));
      if (replica.state() != pb::TABLET_RUNNING) {
        return absl::UnavailableError(
            StrCat(tservers_[i]->name(), " reports ", RoleAndState(replica)));
      }
    }
    return absl::OkStatus();
  });
}

}  // namespace basalt
