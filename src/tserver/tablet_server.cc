#include "tserver/tablet_server.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>
#include <grpcpp/support/server_interceptor.h>

#include "absl/strings/str_join.h"
#include "cfile/block_cache.h"
#include "cfile/block_manager.h"
#include "common/arena.h"
#include "common/clock.h"
#include "common/hybrid_clock.h"
#include "common/serial_task_pool.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/grpc_transport.h"
#include "consensus/server_log.h"
#include "proto/consensus.pb.h"
#include "rpc/frame_server.h"
#include "server/server_instance.h"
#include "server/webserver.h"
#include "tablet/maintenance_manager.h"
#include "tablet/memory_budget.h"
#include "tserver/address_book.h"
#include "tserver/block_gc.h"
#include "tserver/block_scrubber.h"
#include "tserver/consensus_service.h"
#include "tserver/disk_space_monitor.h"
#include "tserver/heartbeater.h"
#include "tserver/scanner_manager.h"
#include "tserver/tablet_copy_service.h"
#include "tserver/tablet_service.h"
#include "tserver/ts_tablet_manager.h"

DECLARE_int64(block_cache_capacity_mb);

DEFINE_int32(follower_unavailable_considered_failed_sec, 300,
             "A leader reports a follower FAILED to the master once it has heard nothing from it "
             "for this long; the master then replaces it (docs/tablet_copy.md).");

DEFINE_int32(tablet_apply_pool_threads, 0,
             "Threads applying committed Raft entries to tablets (each tablet's entries in log "
             "order, one at a time; different tablets in parallel). 0: the number of CPU cores, "
             "at least 2.");

DEFINE_int32(memrowset_block_cache_mb, 128,
             "MemRowSet memory blocks (2 MiB huge pages) freed by flushes, and those of decoded "
             "write batches, are kept, up to this many MiB and at most 1/8 of the memory limit, "
             "for the next MemRowSets and batches: reusing them spares the page faults and "
             "kernel zeroing of fresh memory. 0: return them at once.");
DEFINE_validator(memrowset_block_cache_mb, [](const char*, int32_t v) { return v >= 0; });
DEFINE_bool(memrowset_huge_pages, false,
            "Advise transparent huge pages (MADV_HUGEPAGE) for MemRowSet and write-batch memory: "
            "one page fault per 2 MiB instead of 512. Off by default: in virtual machines whose "
            "balloon driver reports free memory to the host, a fresh huge page costs about 8 "
            "times what its 4 KiB pages do (docs/performance.md, change 25).");

DEFINE_bool(log_per_server, true,
            "Whether the tablet replicas of this server share one write-ahead log (in "
            "<fs_wal_dir>/server-wal), so that the batches of different tablets written at the "
            "same time are synced together, instead of each replica having a log directory of "
            "its own (<fs_wal_dir>/wals/<tablet id>). Turning it on moves existing per-replica "
            "logs into the shared one at start; turning it off again is refused while the shared "
            "log exists.");
DEFINE_int64(fs_data_dirs_reserved_bytes, -1,
             "Free space kept on the data directory's file system: below it the directory is "
             "full, writes are refused with a retriable RESOURCE_EXHAUSTED (DISK_FULL) and "
             "flushes and compactions wait until space is freed. -1: 1% of the file system.");
DEFINE_int64(fs_wal_dir_reserved_bytes, -1,
             "Free space kept on the WAL directory's file system: below it writes are refused "
             "with a retriable RESOURCE_EXHAUSTED (DISK_FULL) until space is freed. -1: 1% of the "
             "file system.");

namespace basalt {

TabletServer::TabletServer(TabletServerOptions options)
    : options_(std::move(options)), env_(options_.env != nullptr ? options_.env : Env::Default()) {
  if (options_.fs_data_dir.empty() && !options_.fs_data_dirs.empty()) {
    options_.fs_data_dir = options_.fs_data_dirs[0];
  }
  if (options_.fs_data_dirs.empty() && !options_.fs_data_dir.empty()) {
    options_.fs_data_dirs = {options_.fs_data_dir};
  }
  if (options_.fs_wal_dir.empty()) options_.fs_wal_dir = options_.fs_data_dir;
}

TabletServer::~TabletServer() { Shutdown(); }

const std::string& TabletServer::uuid() const { return instance_->uuid(); }

absl::Status TabletServer::Start() {
  if (started_) return absl::FailedPreconditionError("the tablet server was started before");
  started_ = true;
  if (options_.fs_data_dir.empty()) return absl::InvalidArgumentError("fs_data_dir: empty");
  if (options_.fs_data_dirs[0] != options_.fs_data_dir) {
    return absl::InvalidArgumentError(
        ToAbsl(StrCat("--fs_data_dir (", options_.fs_data_dir, ") must be the first of ",
                      "--fs_data_dirs (", absl::StrJoin(options_.fs_data_dirs, ","), ")")));
  }
  BASALT_ASSIGN_OR_RETURN(instance_, ServerInstance::Open(env_, options_.fs_data_dir, "tserver"));
  BASALT_ASSIGN_OR_RETURN(block_manager_, BlockManager::Open(env_, options_.fs_data_dirs));
  for (const BlockManager::DirInfo& d : block_manager_->Dirs()) {
    LOG_IF(ERROR, !d.error.ok()) << "data directory " << d.path << " failed at startup: " << d.error
                                 << "; the tablets with blocks in it are FAILED, the "
                                 << "others start";
  }
  const int64_t cache_bytes = options_.block_cache_capacity_bytes >= 0
                                  ? options_.block_cache_capacity_bytes
                                  : FLAGS_block_cache_capacity_mb << 20;
  block_cache_ = std::make_unique<BlockCache>(static_cast<size_t>(cache_bytes));
  clock_ = std::make_unique<HybridClock>(Clock::Default());
  MemoryBudgetOptions mem = MemoryBudgetOptions::FromFlags();
  if (options_.memory_limit_bytes > 0) mem.limit_bytes = options_.memory_limit_bytes;
  mem.write_delay_seconds = MetricRegistry::Global()->GetHistogram(
      "basalt_tserver_write_delay_seconds",
      "Delays of write batches by the memory budget: above its soft limit, and the one wait at "
      "the hard limit before a batch is refused.",
      {}, {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5});
  BASALT_ASSIGN_OR_RETURN(memory_budget_, MemoryBudget::Create(mem));
  Arena::SetAdviseHugePages(FLAGS_memrowset_huge_pages);
  // Process-wide; kept blocks are RSS outside the budget, hence the 1/8 cap.
  Arena::SetMappedBlockCacheLimit(static_cast<size_t>(std::min<int64_t>(
      int64_t{FLAGS_memrowset_block_cache_mb} << 20, memory_budget_->limit_bytes() / 8)));
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
  const int apply_threads =
      FLAGS_tablet_apply_pool_threads > 0
          ? FLAGS_tablet_apply_pool_threads
          : std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
  apply_pool_ = std::make_unique<SerialTaskPool>(apply_threads, "tablet-apply");
  std::vector<DiskSpaceMonitor::Dir> dirs;
  bool wal_is_a_data_dir = false;
  for (size_t i = 0; i < options_.fs_data_dirs.size(); ++i) {
    const std::string& path = options_.fs_data_dirs[i];
    const bool holds_wal = path == options_.fs_wal_dir;
    wal_is_a_data_dir |= holds_wal;
    dirs.push_back(
        {path, /*holds_data=*/true, holds_wal,
         holds_wal ? std::max(FLAGS_fs_data_dirs_reserved_bytes, FLAGS_fs_wal_dir_reserved_bytes)
                   : FLAGS_fs_data_dirs_reserved_bytes,
         static_cast<int>(i)});
  }
  if (!wal_is_a_data_dir) {
    dirs.push_back({options_.fs_wal_dir, /*holds_data=*/false, /*holds_wal=*/true,
                    FLAGS_fs_wal_dir_reserved_bytes});
  }
  disk_space_ = std::make_unique<DiskSpaceMonitor>(env_, instance_->uuid(), std::move(dirs));

  if (FLAGS_log_per_server) {
    BASALT_ASSIGN_OR_RETURN(server_log_,
                            ServerLog::Open(env_, JoinPath(options_.fs_wal_dir, kServerLogDirName),
                                            LogOptions::FromFlags()));
    BASALT_RETURN_IF_ERROR(server_log_->Start());
  }
  TabletReplicaContext ctx;
  ctx.env = env_;
  ctx.server_log = server_log_.get();
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
  ctx.apply_pool = apply_pool_.get();
  ctx.disk_space = disk_space_.get();
  ctx.raft_tick_interval_ms = options_.raft_tick_interval_ms;
  ctx.raft_election_ticks = options_.raft_election_ticks;
  ctx.on_status_change = [this] { OnReplicaStatusChange(); };
  ctx.on_disk_error = [this](const absl::Status&) {
    absl::MutexLock l(&space_watcher_mu_);
    probe_disks_ = true;
  };
  ctx.follower_failed_after =
      absl::Seconds(std::max(FLAGS_follower_unavailable_considered_failed_sec, 1));
  tablet_manager_ = std::make_unique<TsTabletManager>(ctx);
  // Handled by the watcher thread (see SpaceWatcherLoop); a directory that fails while the
  // replicas open keeps the later ones from opening and fails the earlier ones once it runs.
  block_manager_->SetDirFailureCallback(
      [this](int dir, const std::string& path, const absl::Status& error) {
        absl::MutexLock l(&space_watcher_mu_);
        failed_dirs_.push_back({dir, path, error});
      });
  BASALT_RETURN_IF_ERROR(tablet_manager_->OpenAll());
  StartBlockMaintenance();
  space_watcher_ = std::thread([this] { SpaceWatcherLoop(); });

  scanner_manager_ = std::make_unique<ScannerManager>(absl::Milliseconds(options_.scanner_ttl_ms),
                                                      options_.scanner_max_open);
  scanner_manager_->Start();
  BASALT_RETURN_IF_ERROR(StartRpcServer());
  // Leaders tell followers' servers where to copy a tablet from (TabletCopyTrigger).
  address_book_->Set(instance_->uuid(), advertised_);

  if (!options_.master_addresses.empty()) {
    HeartbeaterOptions h;
    h.server_uuid = instance_->uuid();
    h.rpc_address = advertised_;
    h.frame_rpc_address = frame_advertised_;
    h.masters = options_.master_addresses;
    h.interval = absl::Milliseconds(options_.heartbeat_interval_ms);
    h.max_failure_backoff = absl::Milliseconds(options_.heartbeat_max_failure_backoff_ms);
    heartbeater_ = std::make_unique<Heartbeater>(h, tablet_manager_.get(), address_book_.get());
    heartbeater_->Start();
    heartbeater_ptr_.store(heartbeater_.get());
  }
  RegisterMetrics();
  BASALT_RETURN_IF_ERROR(StartWebserver());
  LOG(INFO) << "tablet server " << instance_->uuid() << " serving on " << advertised_.ToString()
            << (frame_server_ != nullptr
                    ? StrCat(" (frame RPC on port ", frame_server_->port(), ")")
                    : std::string(" (frame RPC off)"));
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
  sctx.block_manager = block_manager_.get();
  sctx.wal_dir_state = [this] { return std::make_pair(options_.fs_wal_dir, WalDirState()); };
  sctx.scanner_default_batch_size_bytes = options_.scanner_default_batch_size_bytes;
  tablet_service_ = NewTabletServerService(sctx);
  admin_service_ = NewTabletServerAdminService(sctx);
  ConsensusServiceContext cctx;
  cctx.server_uuid = instance_->uuid();
  cctx.transport = transport_.get();
  cctx.tablet_manager = tablet_manager_.get();
  cctx.address_book = address_book_.get();
  consensus_service_ = NewConsensusService(cctx);
  tablet_copy_service_ = NewTabletCopyService(tablet_manager_.get());
  tablet_copy_service_->Start();
  grpc::ServerBuilder builder;
  ConfigureServerBuilder(&builder);
  if (!options_.rpc_reuse_port) builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(bind.ToString(), grpc::InsecureServerCredentials(), &rpc_port_);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> icpt;
  icpt.push_back(NewRpcMetricsInterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(icpt));
  builder.RegisterService(tablet_service_.get());
  builder.RegisterService(admin_service_.get());
  builder.RegisterService(consensus_service_.get());
  builder.RegisterService(tablet_copy_service_->service());
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
  return StartFrameServer(sctx);
}

absl::Status TabletServer::StartFrameServer(const TabletServiceContext& sctx) {
  if (options_.frame_rpc_port < 0) return absl::OkStatus();
  if (options_.frame_rpc_port > 65535) {
    return absl::InvalidArgumentError(
        StrCat("frame_rpc_port: ", options_.frame_rpc_port, " is not a port"));
  }
  BASALT_ASSIGN_OR_RETURN(HostPort bind, ParseHostPort(options_.rpc_bind_address, 7050));
  bind.port = static_cast<uint16_t>(options_.frame_rpc_port);
  FrameServerOptions fo;
  fo.bind_address = bind.ToString();
  fo.name = "tserver-frame";
  frame_server_ = std::make_unique<FrameServer>(fo);
  RegisterTabletFrameMethods(sctx, frame_server_.get());
  frame_server_->Register(pb::FRAME_UPDATE_CONSENSUS,
                          WithRpcMetrics("frame:/basalt.pb.ConsensusService/UpdateConsensus",
                                         transport_->UpdateConsensusFrameHandler()));
  BASALT_RETURN_IF_ERROR(frame_server_->Start());
  transport_->SetFrameRpcPort(frame_server_->port());
  frame_advertised_ = HostPort{advertised_.host, static_cast<uint16_t>(frame_server_->port())};
  return absl::OkStatus();
}

void TabletServer::SpaceWatcherLoop() {
  auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(space_watcher_mu_) {
    return space_watcher_stop_ || !failed_dirs_.empty() || probe_disks_;
  };
  absl::Time next_space_check = absl::Now() + absl::Seconds(1);
  while (true) {
    std::vector<FailedDataDir> failed;
    bool probe = false;
    {
      absl::MutexLock l(&space_watcher_mu_);
      // The timed wait is the period itself; Shutdown and a failed directory end it at once.
      space_watcher_mu_.AwaitWithDeadline(absl::Condition(&wake), next_space_check);
      if (space_watcher_stop_) return;
      failed.swap(failed_dirs_);
      std::swap(probe, probe_disks_);
    }
    if (probe) ProbeDisks();
    if (!failed.empty()) {
      const int n = tablet_manager_->FailReplicasOfFailedDataDirs();
      for (const FailedDataDir& d : failed) {
        LOG(ERROR) << "data directory " << d.path << " (position " << d.position
                   << ") failed: " << d.error;
      }
      LOG(ERROR) << "failed " << n << " tablet replicas that depend on a failed data directory; "
                 << "the others go on";
    }
    if (absl::Now() < next_space_check) continue;
    next_space_check = absl::Now() + absl::Seconds(1);
    tablet_manager_->ReopenPausedReplicas([this](const std::vector<int>& data_dirs) {
      return disk_space_->CheckRoomForWrites(data_dirs).ok();
    });
  }
}

void TabletServer::ProbeDisks() {
  auto probe = [this](const std::string& dir) {
    const std::string path = JoinPath(dir, ".disk_probe");
    absl::Status s = WriteFileAtomically(env_, path, "probe");
    if (s.ok()) s = env_->DeleteFile(path);
    return PrependToStatus(s, "probing the disk");
  };
  const std::vector<std::string>& data = options_.fs_data_dirs;
  const auto wal_it = std::find(data.begin(), data.end(), options_.fs_wal_dir);
  std::vector<int> positions = {0};
  if (wal_it != data.end()) positions.push_back(static_cast<int>(wal_it - data.begin()));
  bool failed = false;
  for (int p : positions) {
    if (block_manager_->DirFailed(p)) continue;
    absl::Status s = probe(data[p]);
    if (!BlockManager::IsDiskFailure(s)) continue;
    block_manager_->MarkDirFailed(p, s);
    failed = true;
  }
  if (wal_it == data.end() && tablet_manager_->WalDirFailure().ok()) {
    absl::Status s = probe(options_.fs_wal_dir);
    if (BlockManager::IsDiskFailure(s)) {
      LOG(ERROR) << "the WAL directory " << options_.fs_wal_dir << " failed: " << s
                 << "; every tablet replica fails";
      tablet_manager_->MarkWalDirFailed(s);
      failed = true;
    }
  }
  if (failed) tablet_manager_->FailReplicasOfFailedDataDirs();
}

absl::Status TabletServer::WalDirState() const {
  BASALT_RETURN_IF_ERROR(tablet_manager_->WalDirFailure());
  for (const BlockManager::DirInfo& d : block_manager_->Dirs()) {
    if (d.path == options_.fs_wal_dir) return d.error;
  }
  return absl::OkStatus();
}

void TabletServer::StartBlockMaintenance() {
  const std::string tablets_dir = JoinPath(options_.fs_data_dir, "tablets");
  BlockGcOptions gc = BlockGcOptions::FromFlags();
  gc.env = env_;
  gc.block_manager = block_manager_.get();
  gc.tablets_dir = tablets_dir;
  gc.metrics = MetricRegistry::Global();
  block_gc_ = std::make_unique<BlockGc>(gc);
  // Every replica, tombstone and unfinished copy is known now, so blocks that a crash left behind
  // go before new ones pile up. The replicas already run: the GC never touches blocks of this
  // process (block_gc.h).
  absl::StatusOr<BlockGcResult> r = block_gc_->RunOnce();
  LOG_IF(WARNING, !r.ok()) << "block GC at startup: " << r.status();
  block_gc_->Start();
  if (FLAGS_scrub_bytes_per_sec <= 0) return;
  BlockScrubberOptions scrub = BlockScrubberOptions::FromFlags();
  scrub.env = env_;
  scrub.block_manager = block_manager_.get();
  scrub.tablets_dir = tablets_dir;
  scrub.metrics = MetricRegistry::Global();
  scrub.on_corruption = [this](const std::string& tablet_id, BlockId block,
                               const absl::Status& error) {
    OnCorruptBlock(tablet_id, block, error);
  };
  block_scrubber_ = std::make_unique<BlockScrubber>(scrub);
  block_scrubber_->Start();
}

void TabletServer::OnCorruptBlock(const std::string& tablet_id, BlockId block,
                                  const absl::Status& error) {
  absl::StatusOr<std::shared_ptr<TabletReplica>> replica = tablet_manager_->Lookup(tablet_id);
  if (!replica.ok()) {
    // Deleted, or failed already: nothing serves the block.
    LOG(WARNING) << "corrupt " << (block.valid() ? "block " + block.ToString() : "superblock")
                 << " of tablet " << tablet_id << " not acted on: " << replica.status();
    return;
  }
  // The replica stops serving and the master replaces it from a healthy peer; the corrupt block
  // goes with the replica's data when the master deletes it.
  (*replica)->Fail(PrependToStatus(error, "the block scrubber found corrupt data"));
}

void TabletServer::OnReplicaStatusChange() {
  if (Heartbeater* h = heartbeater_ptr_.load()) h->TriggerNow();
}

int TabletServer::webserver_port() const { return webserver_ != nullptr ? webserver_->port() : 0; }

namespace {

// One sample per replica whose tablet is open, labelled with its tablet id.
std::vector<MetricSample> PerTablet(const TsTabletManager* manager,
                                    const std::function<double(const TabletReplica&)>& value) {
  std::vector<MetricSample> out;
  for (const auto& r : manager->List()) {
    if (r->tablet() == nullptr) continue;
    out.push_back({{{"tablet_id", r->tablet_id()}}, value(*r)});
  }
  return out;
}

}  // namespace

void TabletServer::RegisterMetrics() {
  MetricRegistry* reg = MetricRegistry::Global();
  const TsTabletManager* tm = tablet_manager_.get();
  auto per_tablet = [&](const char* name, const char* help, MetricType type,
                        std::function<double(const TabletReplica&)> fn) {
    metric_handles_.push_back(reg->RegisterCallbackFamily(
        name, help, type, [tm, fn = std::move(fn)] { return PerTablet(tm, fn); }));
  };
  auto stat = [](auto field) {
    return [field](const TabletReplica& r) {
      return static_cast<double>(r.tablet()->GetStats().*field);
    };
  };
  // A gauge family with one sample per directory (label "dir").
  auto per_dir = [&](const char* name, const char* help,
                     std::function<std::vector<std::pair<std::string, double>>()> values) {
    metric_handles_.push_back(
        reg->RegisterCallbackFamily(name, help, MetricType::kGauge, [values = std::move(values)] {
          std::vector<MetricSample> out;
          for (const auto& [dir, v] : values()) out.push_back({{{"dir", dir}}, v});
          return out;
        }));
  };
  DiskSpaceMonitor* disk = disk_space_.get();
  per_dir("basalt_tserver_dir_full",
          "1 for a data or WAL directory whose free space is below its reserve (writes are "
          "refused and flushes wait until space is freed).",
          [disk] {
            std::vector<std::pair<std::string, double>> out;
            for (const std::string& dir : disk->FullDirs()) out.emplace_back(dir, 1.0);
            return out;
          });
  BlockManager* blocks = block_manager_.get();
  per_dir("basalt_tserver_data_dir_failed",
          "1 for a data directory that failed (an I/O error; its tablets failed and were "
          "replaced), 0 for one that works.",
          [blocks] {
            std::vector<std::pair<std::string, double>> out;
            for (const BlockManager::DirInfo& d : blocks->Dirs()) {
              out.emplace_back(d.path, d.error.ok() ? 0.0 : 1.0);
            }
            return out;
          });
  per_dir("basalt_tserver_wal_dir_failed",
          "1 if the WAL directory failed (an I/O error; every tablet replica failed), else 0.",
          [this] {
            return std::vector<std::pair<std::string, double>>{
                {options_.fs_wal_dir, WalDirState().ok() ? 0.0 : 1.0}};
          });
  per_tablet("basalt_tablet_mrs_memory_bytes", "Bytes held by the tablet's MemRowSet.",
             MetricType::kGauge, stat(&TabletStats::mrs_bytes));
  per_tablet("basalt_tablet_dms_memory_bytes", "Bytes held by the tablet's DeltaMemStores.",
             MetricType::kGauge, stat(&TabletStats::dms_bytes));
  per_tablet("basalt_tablet_on_disk_bytes", "Bytes of the tablet's rowsets on disk.",
             MetricType::kGauge, stat(&TabletStats::on_disk_bytes));
  per_tablet("basalt_tablet_flushes_total", "MemRowSet and DeltaMemStore flushes of the tablet.",
             MetricType::kCounter, stat(&TabletStats::flushes));
  per_tablet("basalt_tablet_compactions_total", "Compactions of the tablet's rowsets and deltas.",
             MetricType::kCounter, stat(&TabletStats::compactions));
  per_tablet("basalt_tablet_raft_term", "The replica's current Raft term.", MetricType::kGauge,
             [](const TabletReplica& r) {
               RaftNode* raft = r.raft();
               return raft != nullptr ? static_cast<double>(raft->term()) : 0.0;
             });
  per_tablet("basalt_tablet_is_leader", "1 if the replica is its tablet's Raft leader, else 0.",
             MetricType::kGauge, [](const TabletReplica& r) {
               RaftNode* raft = r.raft();
               return raft != nullptr && raft->role() == RaftCore::Role::kLeader ? 1.0 : 0.0;
             });
  metric_handles_.push_back(reg->RegisterCallbackFamily(
      "basalt_tserver_tablets", "Tablet replicas on this tablet server, by state.",
      MetricType::kGauge, [tm] {
        std::map<std::string, int> by_state;
        for (const char* s : {"BOOTSTRAPPING", "RUNNING", "STOPPING", "FAILED"}) by_state[s] = 0;
        for (const auto& r : tm->List()) ++by_state[ReplicaStateName(r->state())];
        by_state["FAILED"] += static_cast<int>(tm->Failed().size());
        std::vector<MetricSample> out;
        for (const auto& [state, n] : by_state) out.push_back({{{"state", state}}, double(n)});
        return out;
      }));
  // Write throttling by the memory budget (docs/tablet.md "Memory budget"); the delays
  // themselves are the histogram basalt_tserver_write_delay_seconds (MemoryBudgetOptions).
  const MemoryBudget* budget = memory_budget_.get();
  auto budget_series = [&](const char* name, const char* help, MetricType type, MetricLabels labels,
                           std::function<double(const MemoryBudget&)> fn) {
    metric_handles_.push_back(reg->RegisterCallbackFamily(
        name, help, type, [budget, labels = std::move(labels), fn = std::move(fn)] {
          return std::vector<MetricSample>{{labels, fn(*budget)}};
        }));
  };
  budget_series("basalt_tserver_memory_budget_used_bytes",
                "Bytes the tablets' in-memory stores (MemRowSets, DeltaMemStores) hold.",
                MetricType::kGauge, {},
                [](const MemoryBudget& b) { return static_cast<double>(b.consumption()); });
  budget_series("basalt_tserver_memory_budget_limit_bytes",
                "The memory budget's limits (--memory_limit_bytes): writes are delayed above "
                "the soft one and refused at the hard one.",
                MetricType::kGauge, {{"limit", "hard"}},
                [](const MemoryBudget& b) { return static_cast<double>(b.limit_bytes()); });
  budget_series("basalt_tserver_memory_budget_limit_bytes", "", MetricType::kGauge,
                {{"limit", "soft"}},
                [](const MemoryBudget& b) { return static_cast<double>(b.soft_limit_bytes()); });
  // The server log (docs/wal.md "Server log"): records per round is its group commit.
  if (const ServerLog* wal = server_log_.get(); wal != nullptr) {
    auto wal_series = [&](const char* name, const char* help, MetricType type,
                          int64_t ServerLog::Stats::*field) {
      metric_handles_.push_back(reg->RegisterCallbackFamily(name, help, type, [wal, field] {
        return std::vector<MetricSample>{{{}, static_cast<double>(wal->stats().*field)}};
      }));
    };
    wal_series("basalt_wal_server_rounds_total",
               "Rounds the server WAL wrote: each one write and one sync of the records the "
               "replicas queued meanwhile.",
               MetricType::kCounter, &ServerLog::Stats::rounds);
    wal_series("basalt_wal_server_records_total",
               "Records (replica batches, truncations, resets, drops) in the server WAL's rounds.",
               MetricType::kCounter, &ServerLog::Stats::records);
    wal_series("basalt_wal_server_rewrites_total",
               "Replicas whose WAL entries were rewritten so that old segments could go.",
               MetricType::kCounter, &ServerLog::Stats::rewrites);
    wal_series("basalt_wal_server_segments", "Segment files of the server WAL.", MetricType::kGauge,
               &ServerLog::Stats::segments);
    wal_series("basalt_wal_server_groups", "Replica logs the server WAL holds.", MetricType::kGauge,
               &ServerLog::Stats::groups);
  }
  // Raft traffic with the peer servers (docs/raft.md "gRPC transport" and "Replies").
  const GrpcTransport* transport = transport_.get();
  auto consensus = [&](const char* name, const char* help,
                       std::function<std::vector<MetricSample>(const GrpcTransport::Stats&)> fn) {
    metric_handles_.push_back(reg->RegisterCallbackFamily(
        name, help, MetricType::kCounter,
        [transport, fn = std::move(fn)] { return fn(transport->stats()); }));
  };
  auto by = [](const char* label, const char* a, int64_t va, const char* b, int64_t vb) {
    return std::vector<MetricSample>{{{{label, a}}, static_cast<double>(va)},
                                     {{{label, b}}, static_cast<double>(vb)}};
  };
  auto one = [](int64_t v) { return std::vector<MetricSample>{{{}, static_cast<double>(v)}}; };
  consensus("basalt_consensus_rpcs_sent_total",
            "UpdateConsensus calls this server made to its peers, by transport.",
            [by](const GrpcTransport::Stats& s) {
              return by("transport", "frame", s.frame_rpcs_sent, "grpc",
                        s.rpcs_sent - s.frame_rpcs_sent);
            });
  consensus("basalt_consensus_rpcs_failed_total",
            "UpdateConsensus calls to peers that failed (their messages were dropped).",
            [one](const GrpcTransport::Stats& s) { return one(s.rpcs_failed); });
  consensus("basalt_consensus_messages_sent_total",
            "Raft messages sent to peers: in this server's own calls, or in its replies to "
            "theirs.",
            [by](const GrpcTransport::Stats& s) {
              return by("via", "call", s.messages_sent, "reply", s.reply_messages_sent);
            });
  consensus("basalt_consensus_messages_received_total",
            "Raft messages from peers delivered to a replica: from their calls, or from the "
            "replies to this server's calls.",
            [by](const GrpcTransport::Stats& s) {
              return by("via", "call", s.messages_received - s.reply_messages_received, "reply",
                        s.reply_messages_received);
            });
  consensus("basalt_consensus_messages_dropped_total",
            "Raft messages to peers dropped (unknown peer, full queue, failed call, shutdown); "
            "Raft sends them again.",
            [one](const GrpcTransport::Stats& s) { return one(s.messages_dropped); });
  metric_handles_.push_back(reg->RegisterCallbackFamily(
      "basalt_tserver_memrowset_block_cache_bytes",
      "Freed MemRowSet memory blocks kept for reuse (--memrowset_block_cache_mb).",
      MetricType::kGauge, [] {
        return std::vector<MetricSample>{{{}, static_cast<double>(Arena::MappedBlockCacheBytes())}};
      }));
  budget_series(
      "basalt_tserver_writes_delayed_total", "Write batches delayed by the memory budget.",
      MetricType::kCounter, {},
      [](const MemoryBudget& b) { return static_cast<double>(b.GetStats().writes_delayed); });
  budget_series("basalt_tserver_writes_refused_total", "Write batches refused, by reason.",
                MetricType::kCounter, {{"reason", "memory_limit"}}, [](const MemoryBudget& b) {
                  return static_cast<double>(b.GetStats().writes_rejected);
                });
}

std::string TabletServer::TabletsPage() const {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : tablet_manager_->List()) {
    const ReplicaStatus st = r->GetStatus();
    // A replica that failed (a bootstrap that could not finish, a failed apply) says why.
    const std::string state = st.state == ReplicaState::kFailed && !st.error.ok()
                                  ? StrCat("FAILED: ", st.error.ToString())
                                  : std::string(ReplicaStateName(st.state));
    rows.push_back({st.tablet_id, st.table_name, st.partition.ToString(), RoleName(st.role), state,
                    StrCat(st.term), st.leader_uuid, StrCat(st.on_disk_bytes),
                    StrCat(st.memory_bytes)});
  }
  for (const auto& [id, error] : tablet_manager_->Failed()) {
    rows.push_back({id, "", "", "", StrCat("FAILED: ", error.ToString()), "", "", "", ""});
  }
  return HtmlTable({"tablet id", "table", "partition", "role", "state", "term", "leader",
                    "on-disk bytes", "memory bytes"},
                   rows);
}

std::string TabletServer::StoragePage() const {
  std::map<int, int> tablets;  // By data directory position.
  for (const auto& r : tablet_manager_->List()) {
    for (int d : r->data_dirs()) ++tablets[d];
  }
  const std::vector<std::string> full = disk_space_->FullDirs();
  auto is_full = [&](const std::string& path) {
    return std::find(full.begin(), full.end(), path) != full.end();
  };
  std::vector<std::vector<std::string>> rows;
  const std::vector<BlockManager::DirInfo> dirs = block_manager_->Dirs();
  for (size_t i = 0; i < dirs.size(); ++i) {
    const bool wal = dirs[i].path == options_.fs_wal_dir;
    std::string state = dirs[i].error.ok() ? "OK" : StrCat("FAILED: ", dirs[i].error.ToString());
    if (is_full(dirs[i].path)) state += " (full)";
    rows.push_back({dirs[i].path, StrCat(i), i == 0 ? "data, metadata" : "data", wal ? "yes" : "no",
                    state, StrCat(tablets[static_cast<int>(i)])});
  }
  if (std::find_if(dirs.begin(), dirs.end(), [&](const BlockManager::DirInfo& d) {
        return d.path == options_.fs_wal_dir;
      }) == dirs.end()) {
    const absl::Status wal = WalDirState();
    std::string state = wal.ok() ? "OK" : StrCat("FAILED: ", wal.ToString());
    if (is_full(options_.fs_wal_dir)) state += " (full)";
    rows.push_back({options_.fs_wal_dir, "", "WAL", "yes", state, ""});
  }
  return HtmlTable({"directory", "position", "holds", "WAL", "state", "tablets"}, rows);
}

absl::Status TabletServer::StartWebserver() {
  if (options_.webserver_port < 0) return absl::OkStatus();
  BASALT_ASSIGN_OR_RETURN(
      WebserverOptions w,
      DaemonWebserverOptions(options_.webserver_port, options_.webserver_bind_host,
                             options_.rpc_bind_address,
                             StrCat("basalt-tserver ", instance_->uuid())));
  webserver_ = std::make_unique<Webserver>(w);
  webserver_->RegisterPage("/tablets", "Tablets", [this] { return TabletsPage(); });
  webserver_->RegisterPage("/storage", "Storage", [this] { return StoragePage(); });
  // "starting" until the replicas found at startup have bootstrapped (replicas created later
  // bootstrap in a moment and do not make the server unhealthy).
  std::vector<std::weak_ptr<TabletReplica>> at_start;
  for (const auto& r : tablet_manager_->List()) at_start.push_back(r);
  webserver_->SetHealthCheck([at_start = std::move(at_start)]() -> absl::Status {
    int n = 0;
    for (const auto& w : at_start) {
      auto r = w.lock();
      if (r != nullptr && r->state() == ReplicaState::kBootstrapping) ++n;
    }
    if (n == 0) return absl::OkStatus();
    return absl::UnavailableError(StrCat("starting: ", n, " tablets bootstrapping"));
  });
  BASALT_RETURN_IF_ERROR(webserver_->Start());
  webserver_->SetHealth(absl::OkStatus());
  return absl::OkStatus();
}

void TabletServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (webserver_ != nullptr) webserver_->SetHealth(absl::UnavailableError("shutting down"));
  if (heartbeater_ != nullptr) heartbeater_->Shutdown();
  // Before the replicas: the scrubber's callback looks them up.
  if (block_scrubber_ != nullptr) block_scrubber_->Shutdown();
  if (block_gc_ != nullptr) block_gc_->Shutdown();
  if (space_watcher_.joinable()) {  // Before the replicas: it reopens some.
    {
      absl::MutexLock l(&space_watcher_mu_);
      space_watcher_stop_ = true;
    }
    space_watcher_.join();
  }
  // Replicas first: their shutdown fails proposals that RPC handlers wait for, so the gRPC
  // server's shutdown below does not wait on them.
  if (tablet_manager_ != nullptr) tablet_manager_->Shutdown();
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_->Wait();
  }
  if (frame_server_ != nullptr) frame_server_->Shutdown();
  if (scanner_manager_ != nullptr) scanner_manager_->Shutdown();
  if (tablet_copy_service_ != nullptr) tablet_copy_service_->Shutdown();
  if (transport_ != nullptr) transport_->Shutdown();
  if (maintenance_manager_ != nullptr) maintenance_manager_->Shutdown();
  // Before the components the pages and metric callbacks read go away.
  if (webserver_ != nullptr) webserver_->Shutdown();
  metric_handles_.clear();
  heartbeater_ptr_.store(nullptr);
  heartbeater_.reset();
  tablet_manager_.reset();  // Replicas unregister their maintenance ops on shutdown.
  if (server_log_ != nullptr) server_log_->Shutdown();  // After every replica's log closed.
  scanner_manager_.reset();
  server_.reset();
  tablet_copy_service_.reset();
  maintenance_manager_.reset();
  transport_.reset();
}

}  // namespace basalt
