#include "tserver/tablet_server.h"

#include <unistd.h>

#include <chrono>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>

#include "cfile/block_cache.h"
#include "cfile/block_manager.h"
#include "common/clock.h"
#include "common/hybrid_clock.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/grpc_transport.h"
#include "server/server_instance.h"
#include "tablet/maintenance_manager.h"
#include "tablet/memory_budget.h"
#include "tserver/address_book.h"
#include "tserver/heartbeater.h"
#include "tserver/scanner_manager.h"
#include "tserver/tablet_service.h"
#include "tserver/ts_tablet_manager.h"

DECLARE_int64(block_cache_capacity_mb);

namespace basalt {

TabletServer::TabletServer(TabletServerOptions options)
    : options_(std::move(options)), env_(options_.env != nullptr ? options_.env : Env::Default()) {
  if (options_.fs_wal_dir.empty()) options_.fs_wal_dir = options_.fs_data_dir;
}

TabletServer::~TabletServer() { Shutdown(); }

const std::string& TabletServer::uuid() const { return instance_->uuid(); }

absl::Status TabletServer::Start() {
  if (started_) return absl::FailedPreconditionError("the tablet server was started before");
  started_ = true;
  if (options_.fs_data_dir.empty()) return absl::InvalidArgumentError("fs_data_dir: empty");
  BASALT_ASSIGN_OR_RETURN(instance_, ServerInstance::Open(env_, options_.fs_data_dir, "tserver"));
  BASALT_ASSIGN_OR_RETURN(block_manager_, BlockManager::Open(env_, options_.fs_data_dir));
  const int64_t cache_bytes = options_.block_cache_capacity_bytes >= 0
                                  ? options_.block_cache_capacity_bytes
                                  : FLAGS_block_cache_capacity_mb << 20;
  block_cache_ = std::make_unique<BlockCache>(static_cast<size_t>(cache_bytes));
  clock_ = std::make_unique<HybridClock>(Clock::Default());
  MemoryBudgetOptions mem = MemoryBudgetOptions::FromFlags();
  if (options_.memory_limit_bytes > 0) mem.limit_bytes = options_.memory_limit_bytes;
  BASALT_ASSIGN_OR_RETURN(memory_budget_, MemoryBudget::Create(mem));
  if (options_.enable_maintenance) {
    MaintenanceManager::Options mm = MaintenanceManager::Options::FromFlags();
    mm.memory_budget = memory_budget_.get();
    maintenance_manager_ = std::make_unique<MaintenanceManager>(mm);
    maintenance_manager_->Start();
  }
  GrpcTransportOptions topts;
  topts.server_id = instance_->uuid();
  topts.bind_address = "";  // Served on this server's port.
  transport_ = std::make_unique<GrpcTransport>(topts);
  BASALT_RETURN_IF_ERROR(transport_->Start());
  address_book_ = std::make_unique<AddressBook>(instance_->uuid(), transport_.get());

  TabletReplicaContext ctx;
  ctx.env = env_;
  ctx.server_uuid = instance_->uuid();
  ctx.data_dir = options_.fs_data_dir;
  ctx.wal_dir = options_.fs_wal_dir;
  ctx.block_manager = block_manager_.get();
  ctx.block_cache = block_cache_.get();
  ctx.clock = clock_.get();
  ctx.memory_budget = memory_budget_.get();
  ctx.maintenance_manager = maintenance_manager_.get();
  ctx.transport = transport_.get();
  ctx.address_book = address_book_.get();
  ctx.raft_tick_interval_ms = options_.raft_tick_interval_ms;
  ctx.raft_election_ticks = options_.raft_election_ticks;
  ctx.on_status_change = [this] { OnReplicaStatusChange(); };
  tablet_manager_ = std::make_unique<TsTabletManager>(ctx);
  BASALT_RETURN_IF_ERROR(tablet_manager_->OpenAll());

  scanner_manager_ = std::make_unique<ScannerManager>(absl::Milliseconds(options_.scanner_ttl_ms),
                                                      options_.scanner_max_open);
  scanner_manager_->Start();
  BASALT_RETURN_IF_ERROR(StartRpcServer());

  if (!options_.master_addresses.empty()) {
    HeartbeaterOptions h;
    h.server_uuid = instance_->uuid();
    h.rpc_address = advertised_;
    h.masters = options_.master_addresses;
    h.interval = absl::Milliseconds(options_.heartbeat_interval_ms);
    heartbeater_ = std::make_unique<Heartbeater>(h, tablet_manager_.get(), address_book_.get());
    heartbeater_->Start();
    heartbeater_ptr_.store(heartbeater_.get());
  }
  LOG(INFO) << "tablet server " << instance_->uuid() << " serving on " << advertised_.ToString();
  return absl::OkStatus();
}

absl::Status TabletServer::StartRpcServer() {
  BASALT_ASSIGN_OR_RETURN(HostPort bind, ParseHostPort(options_.rpc_bind_address, 7050));
  TabletServiceContext sctx;
  sctx.server_uuid = instance_->uuid();
  sctx.tablet_manager = tablet_manager_.get();
  sctx.scanner_manager = scanner_manager_.get();
  sctx.clock = clock_.get();
  sctx.address_book = address_book_.get();
  sctx.scanner_default_batch_size_bytes = options_.scanner_default_batch_size_bytes;
  tablet_service_ = NewTabletServerService(sctx);
  admin_service_ = NewTabletServerAdminService(sctx);
  grpc::ServerBuilder builder;
  ConfigureServerBuilder(&builder);
  if (!options_.rpc_reuse_port) builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(bind.ToString(), grpc::InsecureServerCredentials(), &rpc_port_);
  builder.RegisterService(tablet_service_.get());
  builder.RegisterService(admin_service_.get());
  builder.RegisterService(transport_->service());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || rpc_port_ == 0) {
    return absl::UnavailableError(ToAbsl(StrCat("cannot serve on ", bind.ToString())));
  }
  if (!options_.rpc_advertised_address.empty()) {
    BASALT_ASSIGN_OR_RETURN(advertised_, ParseHostPort(options_.rpc_advertised_address, 0));
    if (advertised_.port == 0) advertised_.port = static_cast<uint16_t>(rpc_port_);
  } else {
    advertised_ = bind;
    advertised_.port = static_cast<uint16_t>(rpc_port_);
    if (bind.host == "0.0.0.0" || bind.host == "::") {
      char host[256] = {};
      advertised_.host = gethostname(host, sizeof(host) - 1) == 0 ? host : "127.0.0.1";
    }
  }
  address_book_->Set(instance_->uuid(), advertised_);
  return absl::OkStatus();
}

void TabletServer::OnReplicaStatusChange() {
  if (Heartbeater* h = heartbeater_ptr_.load()) h->TriggerNow();
}

void TabletServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (heartbeater_ != nullptr) heartbeater_->Shutdown();
  // Replicas first: their shutdown fails proposals that RPC handlers wait for, so the gRPC
  // server's shutdown below does not wait on them.
  if (tablet_manager_ != nullptr) tablet_manager_->Shutdown();
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_->Wait();
  }
  if (scanner_manager_ != nullptr) scanner_manager_->Shutdown();
  if (transport_ != nullptr) transport_->Shutdown();
  if (maintenance_manager_ != nullptr) maintenance_manager_->Shutdown();
  heartbeater_ptr_.store(nullptr);
  heartbeater_.reset();
  tablet_manager_.reset();  // Replicas unregister their maintenance ops on shutdown.
  scanner_manager_.reset();
  server_.reset();
  maintenance_manager_.reset();
  transport_.reset();
}

}  // namespace basalt
