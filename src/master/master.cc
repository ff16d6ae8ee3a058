#include "master/master.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <utility>
#include <vector>

#include <glog/logging.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/service_type.h>
#include <grpcpp/support/server_interceptor.h>

#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/grpc_transport.h"
#include "master/catalog_entries.h"
#include "master/catalog_manager.h"
#include "master/master_service.h"
#include "master/sys_catalog.h"
#include "master/ts_admin_client.h"
#include "master/ts_manager.h"
#include "proto/master.pb.h"
#include "server/server_instance.h"
#include "server/webserver.h"

namespace basalt {

namespace {

bool IsWildcard(const std::string& host) {
  return host == "0.0.0.0" || host == "::" || host == "[::]";
}

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace

Master::Master(MasterOptions options)
    : options_(std::move(options)), env_(options_.env != nullptr ? options_.env : Env::Default()) {}

Master::~Master() { Shutdown(); }

const std::string& Master::uuid() const { return instance_->uuid(); }

bool Master::is_leader() const { return catalog_open_.load() && sys_catalog_->IsLeader(); }

RaftCore::Role Master::role() const {
  return catalog_open_.load() ? sys_catalog_->role() : RaftCore::Role::kFollower;
}

std::vector<MasterPeer> Master::peers() const {
  absl::MutexLock l(&mu_);
  return peers_;
}

absl::StatusOr<std::unique_ptr<Master>> Master::Start(MasterOptions options) {
  std::unique_ptr<Master> m(new Master(std::move(options)));
  BASALT_RETURN_IF_ERROR(m->Init());
  return m;
}

absl::Status Master::Init() {
  if (options_.fs_data_dir.empty()) {
    return absl::InvalidArgumentError("--fs_data_dir is required");
  }
  const std::string wal_dir =
      options_.fs_wal_dir.empty() ? options_.fs_data_dir : options_.fs_wal_dir;
  BASALT_ASSIGN_OR_RETURN(instance_, ServerInstance::Open(env_, options_.fs_data_dir, "master"));
  LOG(INFO) << "master " << instance_->uuid() << " starting in " << options_.fs_data_dir;

  TsAdminClient* admin = options_.ts_admin_client;
  if (admin == nullptr) {
    owned_admin_client_ = NewGrpcTsAdminClient();
    admin = owned_admin_client_.get();
  }
  ts_manager_ =
      std::make_unique<TsManager>(options_.clock, options_.tserver_unresponsive_timeout_ms);
  CatalogManagerOptions cm;
  cm.clock = options_.clock;
  cm.placement_seed = options_.placement_seed;
  catalog_manager_ = std::make_unique<CatalogManager>(ts_manager_.get(), admin, cm);
  catalog_manager_->set_leader_address_lookup([this](const std::string& uuid) {
    std::optional<HostPort> address;
    for (const MasterPeer& p : peers()) {
      if (p.uuid == uuid) address = p.address;
    }
    return address;
  });

  GrpcTransportOptions to;
  to.server_id = instance_->uuid();
  to.bind_address = "";  // Served by this master's own gRPC server.
  transport_ = std::make_unique<GrpcTransport>(to);

  if (!options_.master_addresses.empty()) {
    BASALT_ASSIGN_OR_RETURN(configured_masters_,
                            ParseHostPortList(options_.master_addresses, 7051));
  }
  // Serving first: the other masters of a forming group ask for this one's uuid. Catalog
  // requests are refused until the catalog is open.
  BASALT_RETURN_IF_ERROR(StartRpcServer());
  BASALT_RETURN_IF_ERROR(transport_->Start());
  // /healthz answers "starting" from here until the catalog is loaded and its group runs.
  BASALT_RETURN_IF_ERROR(StartWebserver());
  BASALT_ASSIGN_OR_RETURN(std::vector<std::string> voters, SetUpPeers());

  SysCatalogOptions so;
  so.data_dir = options_.fs_data_dir;
  so.wal_dir = wal_dir;
  so.uuid = instance_->uuid();
  so.voters = voters;
  so.tick_interval_ms = options_.catalog_tick_interval_ms;
  so.joining = voters.empty();
  so.on_masters = [this](const pb::MasterPeersPB& masters) { OnMastersChanged(masters); };
  so.send_snapshot = [this](const std::string& peer, const pb::CatalogSnapshotPB& image) {
    return SendCatalogSnapshot(peer, image);
  };
  BASALT_ASSIGN_OR_RETURN(sys_catalog_,
                          SysCatalog::Open(env_, so, transport_.get(), catalog_manager_.get()));
  catalog_manager_->set_sys_catalog(sys_catalog_.get());
  catalog_open_.store(true);

  BASALT_RETURN_IF_ERROR(sys_catalog_->Start());
  if (voters.size() == 1) {
    BASALT_RETURN_IF_ERROR(sys_catalog_->WaitUntilLeader(options_.leader_wait_timeout));
  }
  catalog_manager_->SetReady(true);
  if (options_.start_reconciler) BASALT_RETURN_IF_ERROR(catalog_manager_->Start());
  RegisterMetrics();
  if (webserver_ != nullptr) webserver_->SetHealth(absl::OkStatus());
  if (voters.empty()) {
    LOG(INFO) << "master " << instance_->uuid() << " serving on " << rpc_address_.ToString()
              << ", waiting to join the catalog group: run `basalt master add <master addresses> "
              << rpc_address_.ToString() << "`";
  } else {
    LOG(INFO) << "master " << instance_->uuid() << " serving on " << rpc_address_.ToString() << " ("
              << voters.size() << " master" << (voters.size() == 1 ? "" : "s") << ")";
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> Master::SetUpPeers() {
  const std::vector<HostPort>& configured = configured_masters_;
  const std::string path = JoinPath(options_.fs_data_dir, "master_peers");
  bool joined_list = false;
  BASALT_ASSIGN_OR_RETURN(std::optional<std::vector<MasterPeer>> stored,
                          LoadMasterPeers(env_, path, &joined_list));
  const bool have_cmeta = env_->FileExists(JoinPath(options_.fs_data_dir, "cmeta"));
  const MasterPeer self{instance_->uuid(), rpc_address_};
  std::vector<MasterPeer> peers;
  bool join = false;
  if (stored.has_value() && joined_list && !have_cmeta) {
    // Joined a group earlier but has no catalog image yet: still waiting for it.
    BASALT_RETURN_IF_ERROR(CheckMasterPeersMatch(*stored, configured));
    peers = std::move(*stored);
    join = true;
  } else if (stored.has_value()) {
    // A group (formed, joined, or shrunk by `master remove`): the stored list rules.
    if (std::find(stored->begin(), stored->end(), self) == stored->end()) {
      return absl::DataLossError(
          StrCat(path, " does not list this master (", self.uuid, " at ", self.address.ToString(),
                 "): was it removed with `basalt master remove` (then wipe its directories to "
                 "reuse it), or was the data directory copied from another master?"));
    }
    if (!configured.empty() || stored->size() > 1) {
      BASALT_RETURN_IF_ERROR(CheckMasterPeersMatch(
          *stored, configured.empty() ? std::vector<HostPort>{rpc_address_} : configured));
    }
    peers = std::move(*stored);
  } else if (configured.size() <= 1) {
    peers.push_back(self);
  } else {
    BASALT_ASSIGN_OR_RETURN(int self_idx, FindSelfInMasters(configured, rpc_address_));
    if (have_cmeta) {
      return absl::InvalidArgumentError(
          "this master's catalog was formed by a single master; turning it into several masters "
          "is not supported (docs/master.md)");
    }
    LOG(INFO) << "looking for the catalog group of " << configured.size() << " masters";
    BASALT_ASSIGN_OR_RETURN(ResolvedMasters resolved,
                            ResolveMasterPeers(configured, self_idx, instance_->uuid(),
                                               absl::Now() + options_.leader_wait_timeout));
    peers = std::move(resolved.peers);
    join = resolved.join;
    // A joining master stores the group and itself, flagged: until its catalog image brings
    // consensus metadata, a restart keeps waiting instead of forming from the list.
    if (join) peers.push_back(self);
    BASALT_RETURN_IF_ERROR(StoreMasterPeers(env_, path, peers, /*joined=*/join));
  }
  std::vector<std::string> voters;
  for (const MasterPeer& p : peers) {
    if (!join) voters.push_back(p.uuid);
    if (p.uuid != instance_->uuid()) {
      BASALT_RETURN_IF_ERROR(transport_->AddPeer(p.uuid, p.address.ToString()));
    }
  }
  absl::MutexLock l(&mu_);
  peers_ = std::move(peers);
  return voters;
}

absl::Status Master::SetRpcAddress(const HostPort& bind) {
  if (!options_.rpc_advertised_address.empty()) {
    BASALT_ASSIGN_OR_RETURN(rpc_address_,
                            ParseHostPort(options_.rpc_advertised_address, rpc_port_));
  } else {
    rpc_address_.host = IsWildcard(bind.host) ? HostName() : bind.host;
    rpc_address_.port = static_cast<uint16_t>(rpc_port_);
  }
  return absl::OkStatus();
}

absl::Status Master::StartRpcServer() {
  BASALT_ASSIGN_OR_RETURN(HostPort bind, ParseHostPort(options_.rpc_bind_address, 7051));
  if (bind.port != 0) {
    // Before serving: GetMasterRegistration handlers read rpc_address_ from the first call on.
    rpc_port_ = bind.port;
    BASALT_RETURN_IF_ERROR(SetRpcAddress(bind));
  }
  master_service_ = NewMasterService(this);
  grpc::ServerBuilder builder;
  ConfigureServerBuilder(&builder);
  builder.AddListeningPort(bind.ToString(), grpc::InsecureServerCredentials(), &rpc_port_);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> icpt;
  icpt.push_back(NewRpcMetricsInterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(icpt));
  builder.RegisterService(master_service_.get());
  builder.RegisterService(transport_->service());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || rpc_port_ == 0) {
    server_.reset();
    return absl::UnavailableError(StrCat("cannot serve on ", bind.ToString()));
  }
  if (bind.port == 0) {
    // Nobody can know the port yet, so no handler reads rpc_address_ while it is set.
    BASALT_RETURN_IF_ERROR(SetRpcAddress(bind));
  }
  return absl::OkStatus();
}

int Master::webserver_port() const { return webserver_port_.load(); }

namespace {

// The catalog's live tables (ListTables skips deleted ones).
std::vector<pb::ListTablesResponsePB::TableInfoPB> LiveTables(CatalogManager* cm) {
  pb::ListTablesRequestPB req;
  pb::ListTablesResponsePB resp;
  if (!cm->ListTables(req, &resp).ok()) return {};
  return {resp.tables().begin(), resp.tables().end()};
}

}  // namespace

void Master::RegisterMetrics() {
  MetricRegistry* reg = MetricRegistry::Global();
  CatalogManager* cm = catalog_manager_.get();
  TsManager* tsm = ts_manager_.get();
  auto gauge = [&](const char* name, const char* help, std::function<double()> fn) {
    metric_handles_.push_back(
        reg->RegisterCallbackFamily(name, help, MetricType::kGauge, [fn = std::move(fn)] {
          return std::vector<MetricSample>{{{}, fn()}};
        }));
  };
  gauge("basalt_master_tables", "Tables in the catalog (not deleted).",
        [cm] { return static_cast<double>(LiveTables(cm).size()); });
  gauge("basalt_master_tablets", "Tablets of the catalog's tables (not deleted).", [cm] {
    double n = 0;
    for (const auto& t : LiveTables(cm)) n += t.num_tablets();
    return n;
  });
  gauge("basalt_master_tablet_servers", "Tablet servers this master has heard from.",
        [tsm] { return static_cast<double>(tsm->GetAll().size()); });
  gauge("basalt_master_live_tablet_servers", "Tablet servers that heartbeat recently.",
        [tsm] { return static_cast<double>(tsm->NumLive()); });
  gauge("basalt_master_is_leader", "1 if this master leads the catalog, else 0.",
        [this] { return is_leader() ? 1.0 : 0.0; });
  gauge("basalt_master_tablets_under_replicated",
        "Running tablets whose leader does not report the replication factor's number of healthy "
        "voters, or no leader at all (UNDER_REPLICATED, RECOVERING or UNAVAILABLE; meaningful on "
        "the leader master).",
        [cm] { return static_cast<double>(cm->UnhealthyTablets().size()); });
}

std::string Master::TablesPage() const {
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : LiveTables(catalog_manager_.get())) {
    std::shared_ptr<const TableInfo> info = catalog_manager_->GetTableByName(t.name());
    const std::string state =
        info != nullptr ? pb::SysTableEntryPB::State_Name(info->pb.state()) : "UNKNOWN";
    rows.push_back({t.name(), t.id(), StrCat(t.num_tablets()), StrCat(t.num_replicas()), state});
  }
  return HtmlTable({"name", "id", "tablets", "replicas", "state"}, rows);
}

std::string Master::TabletServersPage() const {
  std::vector<std::vector<std::string>> rows;
  for (const TsDescriptor& d : ts_manager_->GetAll()) {
    rows.push_back({d.uuid, d.rpc_address.ToString(), d.live ? "yes" : "no",
                    StrCat(d.millis_since_heartbeat, " ms ago"), StrCat(d.num_live_tablets)});
  }
  return HtmlTable({"uuid", "address", "live", "last heartbeat", "live replicas"}, rows);
}

std::string Master::UnhealthyTabletsPage() const {
  std::vector<std::vector<std::string>> rows;
  for (const CatalogManager::TabletHealth& h : catalog_manager_->UnhealthyTablets()) {
    rows.push_back({h.tablet_id, h.table_name, h.state, h.detail});
  }
  return HtmlTable({"tablet id", "table", "health", "detail"}, rows);
}

absl::Status Master::StartWebserver() {
  if (options_.webserver_port < 0) return absl::OkStatus();
  BASALT_ASSIGN_OR_RETURN(
      WebserverOptions w,
      DaemonWebserverOptions(options_.webserver_port, options_.webserver_bind_host,
                             options_.rpc_bind_address,
                             StrCat("basalt-master ", instance_->uuid())));
  webserver_ = std::make_unique<Webserver>(w);
  webserver_->RegisterPage("/tables", "Tables", [this] { return TablesPage(); });
  webserver_->RegisterPage("/tablet-servers", "Tablet servers",
                           [this] { return TabletServersPage(); });
  webserver_->RegisterPage("/unhealthy-tablets", "Under-replicated tablets",
                           [this] { return UnhealthyTabletsPage(); });
  BASALT_RETURN_IF_ERROR(webserver_->Start());
  webserver_port_.store(webserver_->port());
  return absl::OkStatus();
}

void Master::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (webserver_ != nullptr) webserver_->SetHealth(absl::UnavailableError("shutting down"));
  if (owned_admin_client_ != nullptr) owned_admin_client_->Shutdown();
  if (catalog_manager_ != nullptr) {
    catalog_manager_->SetReady(false);
    catalog_manager_->Shutdown();
  }
  // Pending catalog writes fail once the node stops, so no handler stays blocked.
  if (sys_catalog_ != nullptr) sys_catalog_->Shutdown();
  // Calls still running after a short grace period (a paused client's half-sent request) are
  // cancelled rather than waited for.
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  }
  if (transport_ != nullptr) transport_->Shutdown();
  if (webserver_ != nullptr) webserver_->Shutdown();
  metric_handles_.clear();
  LOG_IF(INFO, instance_ != nullptr) << "master " << instance_->uuid() << " shut down";
}

}  // namespace basalt
