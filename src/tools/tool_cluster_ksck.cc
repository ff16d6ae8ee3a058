// `basalt cluster ksck`: checks the health of every tablet of a cluster (docs/cli.md). The
// command's other action, `cluster rebalance`, is in tool_cluster_rebalance.cc.

#include <gflags/gflags.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/common.pb.h"
#include "proto/tserver.grpc.pb.h"
#include "tools/master_rpc.h"
#include "tools/tool_common.h"

DEFINE_bool(checksum, false,
            "Whether ksck also compares the checksums of every tablet's replicas at one snapshot.");
DEFINE_int32(ksck_checksum_timeout_ms, 3000,
             "How long ksck waits for a follower's safe time to reach the checksum snapshot the "
             "leader picked, ms.");

namespace basalt::tools {

namespace {

// What one tablet server said: its tablets, or why it could not be asked.
struct ServerReport {
  std::string address;
  absl::Status status;
  std::map<std::string, pb::TabletStatusPB> tablets;
  std::vector<pb::DataDirStatusPB> data_dirs;
  pb::DataDirStatusPB wal_dir;
};

template <typename Req, typename Resp>
absl::Status CallTserver(const std::string& address,
                         grpc::Status (pb::TabletServerService::Stub::*method)(grpc::ClientContext*,
                                                                               const Req&, Resp*),
                         const Req& req, Resp* resp,
                         absl::Time deadline = absl::FromChrono(OperationDeadline())) {
  auto stub = pb::TabletServerService::NewStub(NewChannel(address));
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(deadline));
  return FromGrpcStatus((stub.get()->*method)(&ctx, req, resp));
}

ServerReport AskServer(const std::string& address) {
  ServerReport r;
  r.address = address;
  pb::ListTabletsResponsePB resp;
  r.status = CallTserver(address, &pb::TabletServerService::Stub::ListTablets,
                         pb::ListTabletsRequestPB(), &resp);
  for (const auto& t : resp.tablets()) r.tablets[t.tablet_id()] = t;
  r.data_dirs.assign(resp.data_dirs().begin(), resp.data_dirs().end());
  r.wal_dir = resp.wal_dir();
  return r;
}

// Checksum of `tablet_id` on `address` at `snap` (0: the server, a leader, picks it). A follower
// serves `snap` once its safe time (propagated by the leader's heartbeats, docs/cluster.md
// "Scans") reaches it, waiting for it itself within the call's deadline; UNAVAILABLE (it did not
// get there in its own wait, or leadership moved) is retried until --ksck_checksum_timeout_ms.
absl::StatusOr<pb::ChecksumResponsePB> Checksum(const std::string& address,
                                                const std::string& tablet_id, uint64_t snap) {
  pb::ChecksumRequestPB req;
  req.set_tablet_id(tablet_id);
  req.set_snap_timestamp(snap);
  const absl::Time deadline = absl::Now() + absl::Milliseconds(FLAGS_ksck_checksum_timeout_ms);
  while (true) {
    pb::ChecksumResponsePB resp;
    // At least a few seconds per call: the scan itself takes time on a large tablet.
    absl::Status s = CallTserver(address, &pb::TabletServerService::Stub::Checksum, req, &resp,
                                 std::max(deadline, absl::Now() + absl::Seconds(5)));
    if (s.ok()) return resp;
    if (!absl::IsUnavailable(s) || absl::Now() > deadline) return s;
    absl::SleepFor(absl::Milliseconds(100));
  }
}

// Compares every replica's checksum with the leader's at the snapshot the leader picked; appends
// problems. Returns the agreed result ("N rows, checksum C") when every replica matched.
std::string CheckChecksums(const pb::TabletLocationsPB& loc, const std::string& leader_uuid,
                           const std::map<std::string, ServerReport>& servers,
                           std::vector<std::string>* problems) {
  const std::string leader_addr = servers.at(leader_uuid).address;
  auto ref = Checksum(leader_addr, loc.tablet_id(), 0);
  if (!ref.ok()) {
    problems->push_back(StrCat("checksum on leader ", leader_uuid, ": ", ref.status().ToString()));
    return "";
  }
  const size_t problems_before = problems->size();
  for (const auto& r : loc.replicas()) {
    const ServerReport& sr = servers.at(r.ts_uuid());
    if (r.ts_uuid() == leader_uuid || !sr.status.ok()) continue;
    auto c = Checksum(sr.address, loc.tablet_id(), ref->snap_timestamp());
    if (!c.ok()) {
      problems->push_back(StrCat("checksum on ", r.ts_uuid(), ": ", c.status().ToString()));
    } else if (c->checksum() != ref->checksum() || c->num_rows() != ref->num_rows()) {
      problems->push_back(StrCat("replica ", r.ts_uuid(), " checksum ", c->checksum(), " (",
                                 c->num_rows(), " rows) differs from the leader's ",
                                 ref->checksum(), " (", ref->num_rows(), " rows)"));
    }
  }
  if (problems->size() != problems_before) return "";
  return StrCat(ref->num_rows(), " rows, checksum ", ref->checksum());
}

// One tablet's health and its problems (none: healthy). With --checksum, *agreed gets the
// replicas' common result.
struct TabletCheck {
  // HEALTHY; UNAVAILABLE (not exactly one leader); UNDER_REPLICATED (fewer running voters than
  // the replication factor, nothing on its way); RECOVERING (a replica being added or caught up,
  // or a configuration change in flight).
  std::string health = "HEALTHY";
  std::vector<std::string> problems;
};

TabletCheck CheckTablet(const pb::TabletLocationsPB& loc, int num_replicas,
                        const std::map<std::string, ServerReport>& servers, std::string* agreed) {
  TabletCheck check;
  std::vector<std::string>& problems = check.problems;
  int running_voters = 0;
  bool in_motion = false;  // A learner, a bootstrapping replica or a differing configuration.
  std::set<std::string> master_peers;
  for (const auto& r : loc.replicas()) master_peers.insert(r.ts_uuid());
  std::string leader;
  uint64_t leader_term = 0;
  int leaders = 0;
  for (const auto& r : loc.replicas()) {
    const ServerReport& sr = servers.at(r.ts_uuid());
    const std::string who = StrCat("replica on ", r.ts_uuid(), " (", sr.address, ")");
    if (!sr.status.ok()) {
      problems.push_back(StrCat(who, ": tablet server unreachable: ", sr.status.ToString()));
      continue;
    }
    auto it = sr.tablets.find(loc.tablet_id());
    if (it == sr.tablets.end()) {
      problems.push_back(StrCat(who, ": replica missing"));
      continue;
    }
    const pb::TabletStatusPB& t = it->second;
    if (t.state() != pb::TABLET_RUNNING) {
      // A failed replica says why (a bootstrap that could not finish, a storage error).
      problems.push_back(StrCat(who, ": state ", pb::TabletStatePB_Name(t.state()),
                                t.has_error() ? StrCat(": ", t.error().message()) : ""));
      in_motion |= t.state() == pb::TABLET_BOOTSTRAPPING;
    }
    if (t.role() == pb::LEARNER) {
      problems.push_back(StrCat(who, ": a learner (being added or caught up)"));
      in_motion = true;
    } else if (t.state() == pb::TABLET_RUNNING &&
               (t.role() == pb::LEADER || t.role() == pb::FOLLOWER)) {
      ++running_voters;
    }
    if (t.role() == pb::LEADER) {
      if (leaders == 0 || t.term() > leader_term) leaders = 0;
      if (leaders == 0 || t.term() == leader_term) {
        ++leaders;
        leader = r.ts_uuid();
        leader_term = t.term();
      }
    }
    std::set<std::string> peers;
    for (const auto& p : t.config().peers()) peers.insert(p.uuid());
    if (peers != master_peers) {
      problems.push_back(StrCat(who, ": Raft config has ", peers.size(),
                                " peer(s) that differ from the master's ", master_peers.size()));
      in_motion = true;
    }
  }
  if (leaders != 1) problems.push_back(StrCat(leaders, " leaders (want exactly 1)"));
  if (running_voters < num_replicas) {
    problems.push_back(
        StrCat(running_voters, " running voter(s) of ", num_replicas, " (the replication factor)"));
  }
  if (FLAGS_checksum && leaders == 1) *agreed = CheckChecksums(loc, leader, servers, &problems);
  if (leaders != 1) {
    check.health = "UNAVAILABLE";
  } else if (in_motion) {
    check.health = "RECOVERING";
  } else if (!problems.empty()) {
    check.health = "UNDER_REPLICATED";
  }
  return check;
}

// Prints every master of the catalog group with its role; returns the problems (a master that
// does not answer, not exactly one leader).
std::vector<std::string> CheckMasters(const std::string& master_addresses, std::ostream* out) {
  pb::ListMastersResponsePB resp;
  absl::Status s = CallMaster(master_addresses, &pb::MasterService::Stub::ListMasters,
                              pb::ListMastersRequestPB(), &resp);
  if (!s.ok()) return {StrCat("ListMasters failed: ", s.ToString())};
  std::vector<std::string> problems;
  int leaders = 0;
  *out << "Masters:\n";
  for (const auto& m : resp.masters()) {
    *out << "  master " << m.uuid() << " (" << HostPort::FromPB(m.rpc_address()).ToString()
         << "): " << pb::RaftRolePB_Name(m.role()) << "\n";
    if (m.role() == pb::LEADER) ++leaders;
    if (m.role() == pb::UNKNOWN_ROLE) {
      problems.push_back(StrCat("master ", HostPort::FromPB(m.rpc_address()).ToString(),
                                " does not answer: ", m.error()));
    }
  }
  if (leaders != 1) problems.push_back(StrCat(leaders, " leader masters (want exactly 1)"));
  return problems;
}

absl::Status Ksck(const ActionContext& ctx) {
  const std::vector<std::string> master_problems = CheckMasters(ctx.args[0], ctx.out);
  for (const auto& p : master_problems) *ctx.out << "    " << p << "\n";
  pb::ListTablesResponsePB tables;
  BASALT_RETURN_IF_ERROR(CallMaster(ctx.args[0], &pb::MasterService::Stub::ListTables,
                                    pb::ListTablesRequestPB(), &tables));
  std::vector<pb::GetTableLocationsResponsePB> locations;
  std::map<std::string, ServerReport> servers;
  for (const auto& t : tables.tables()) {
    pb::GetTableLocationsRequestPB req;
    req.mutable_table()->set_table_name(t.name());
    req.set_max_returned_locations(100000);
    locations.emplace_back();
    BASALT_RETURN_IF_ERROR(CallMaster(ctx.args[0], &pb::MasterService::Stub::GetTableLocations, req,
                                      &locations.back()));
    for (const auto& loc : locations.back().tablet_locations()) {
      for (const auto& r : loc.replicas()) {
        if (!servers.count(r.ts_uuid())) {
          servers[r.ts_uuid()] = AskServer(HostPort::FromPB(r.rpc_address()).ToString());
        }
      }
    }
  }
  int bad_tablets = 0, num_tablets = 0;
  for (const auto& [uuid, sr] : servers) {
    if (!sr.status.ok()) {
      *ctx.out << "Tablet server " << uuid << " (" << sr.address
               << ") is unreachable: " << sr.status.ToString() << "\n";
    }
  }
  // Servers the master knows that hold no replica of any tablet: a dead one is only a warning
  // (its replicas were replaced; remove it from service when convenient).
  pb::ListTabletServersResponsePB all_servers;
  std::map<std::string, ServerReport> others;  // Live servers without replicas.
  if (CallMaster(ctx.args[0], &pb::MasterService::Stub::ListTabletServers,
                 pb::ListTabletServersRequestPB(), &all_servers)
          .ok()) {
    for (const auto& s : all_servers.servers()) {
      if (!s.live() && !servers.count(s.uuid())) {
        *ctx.out << "Warning: tablet server " << s.uuid() << " ("
                 << HostPort::FromPB(s.rpc_address()).ToString()
                 << ") is not live; it holds no replica the master lists\n";
      } else if (s.live() && !servers.count(s.uuid())) {
        others[s.uuid()] = AskServer(HostPort::FromPB(s.rpc_address()).ToString());
      }
    }
  }
  // A failed data directory is a warning: its tablets failed and were replaced elsewhere (the
  // tablet checks below say whether that is done); the disk wants replacing.
  for (const auto* reports : {&servers, &others}) {
    for (const auto& [uuid, sr] : *reports) {
      for (const pb::DataDirStatusPB& d : sr.data_dirs) {
        if (d.error().empty()) continue;
        *ctx.out << "Warning: tablet server " << uuid << " (" << sr.address << "): data directory "
                 << d.path() << " failed: " << d.error() << "\n";
      }
      if (!sr.wal_dir.error().empty()) {
        *ctx.out << "Warning: tablet server " << uuid << " (" << sr.address << "): WAL directory "
                 << sr.wal_dir.path() << " failed: " << sr.wal_dir.error() << "\n";
      }
    }
  }
  for (int i = 0; i < tables.tables_size(); ++i) {
    *ctx.out << "Table " << tables.tables(i).name() << ":\n";
    for (const auto& loc : locations[i].tablet_locations()) {
      ++num_tablets;
      std::string agreed;
      const TabletCheck check = CheckTablet(loc, tables.tables(i).num_replicas(), servers, &agreed);
      const std::vector<std::string>& problems = check.problems;
      *ctx.out << "  tablet " << loc.tablet_id() << ": "
               << (problems.empty() ? "OK"
                                    : StrCat(check.health, ", ", problems.size(), " problem(s)"))
               << (problems.empty() && !agreed.empty() ? StrCat(" (", agreed, ")") : "") << "\n";
      for (const auto& p : problems) *ctx.out << "    " << p << "\n";
      if (!problems.empty()) ++bad_tablets;
    }
  }
  if (bad_tablets > 0 || !master_problems.empty()) {
    return absl::InternalError(StrCat("ksck found problems in ", bad_tablets, " of ", num_tablets,
                                      " tablet(s) and ", master_problems.size(),
                                      " problem(s) with the masters"));
  }
  *ctx.out << "OK: " << tables.tables_size() << " table(s), " << num_tablets << " tablet(s), "
           << servers.size() << " tablet server(s) healthy"
           << (FLAGS_checksum ? ", replica checksums match" : "") << "\n";
  return absl::OkStatus();
}

}  // namespace

Command ClusterCommand() {
  return {
      "cluster",
      "Operate on a whole cluster",
      {{"ksck",
        "Check that every tablet's replicas are reachable, running and agree",
        "Every master of the catalog group answers and exactly one leads. For every tablet "
        "the master lists: each replica's tablet server answers, the replica "
        "is there and RUNNING, exactly one replica leads, the running voters reach the "
        "replication factor, every replica's Raft config names the master's replicas; with "
        "--checksum, every replica's checksum at one snapshot matches the leader's. An "
        "unhealthy tablet is UNAVAILABLE, UNDER_REPLICATED or RECOVERING. A dead tablet "
        "server that holds no replica, and a failed data directory, are only warnings. Exit code 1 "
        "when a tablet or a "
        "master is unhealthy.",
        {MasterAddressesArg()},
        {"checksum", "ksck_checksum_timeout_ms"},
        Ksck},
       ClusterRebalanceAction()}};
}

}  // namespace basalt::tools
