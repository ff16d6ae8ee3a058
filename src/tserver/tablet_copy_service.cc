#include "tserver/tablet_copy_service.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/log_throttle.h"
#include "common/random.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/tablet_copy.grpc.pb.h"
#include "proto/tablet_copy.pb.h"
#include "rpc/rpc_status.h"
#include "tserver/request_checks.h"
#include "tserver/tablet_copy_source.h"
#include "tserver/ts_tablet_manager.h"

DEFINE_int32(tablet_copy_session_idle_timeout_ms, 60000,
             "A tablet copy session on the source that sees no call for this long is ended (its "
             "log anchor and open blocks released).");
DEFINE_int32(tablet_copy_max_sessions, 20,
             "Most tablet copy sessions this server serves at once (each holds its replica's "
             "blocks and log); a copy asked beyond it is refused with UNAVAILABLE and retried by "
             "its leader with backoff.");
DEFINE_int32(tablet_copy_chunk_bytes, 4 << 20,
             "Largest chunk of a block or of log entries one FetchData call returns (a request "
             "may ask for less).");
DEFINE_int32(tablet_copy_inject_corrupt_chunks, 0,
             "Test only: the first N chunks this server serves for tablet copies have a byte "
             "flipped after their checksum was computed.");
DEFINE_int32(tablet_copy_fetch_delay_ms, 0,
             "Test only: each FetchData call this server serves sleeps this long first.");

namespace basalt {
namespace {

std::string NewSessionId() {
  static constexpr char kHex[] = "0123456789abcdef";
  thread_local Random rng(static_cast<uint64_t>(absl::GetCurrentTimeNanos()) ^
                          std::hash<std::thread::id>()(std::this_thread::get_id()));
  std::string id(32, '0');
  for (char& c : id) c = kHex[rng.Next64() % 16];
  return id;
}

absl::Status SessionNotFound(const std::string& id) {
  return absl::NotFoundError(
      ToAbsl(StrCat("session_id: no tablet copy session ", id, " (unknown or expired)")));
}

class TabletCopyServiceImpl final : public TabletCopyService,
                                    public pb::TabletCopyService::Service {
 public:
  explicit TabletCopyServiceImpl(TsTabletManager* manager) : manager_(manager) {}
  ~TabletCopyServiceImpl() override { Shutdown(); }

  void Start() override {
    absl::MutexLock l(&mu_);
    if (reaper_.joinable() || stopping_) return;
    reaper_ = std::thread([this] { ReapLoop(); });
  }

  void Shutdown() override {
    std::map<std::string, std::shared_ptr<Session>> sessions;
    {
      absl::MutexLock l(&mu_);
      stopping_ = true;
      sessions.swap(sessions_);
    }
    if (reaper_.joinable()) reaper_.join();
  }

  grpc::Service* service() override { return this; }

  grpc::Status BeginTabletCopySession(grpc::ServerContext* context,
                                      const pb::BeginTabletCopySessionRequestPB* request,
                                      pb::BeginTabletCopySessionResponsePB* response) override {
    return ToGrpcStatus(DoBegin(*request, response));
  }

  grpc::Status CheckSessionActive(grpc::ServerContext* context,
                                  const pb::CheckTabletCopySessionActiveRequestPB* request,
                                  pb::CheckTabletCopySessionActiveResponsePB* response) override {
    std::shared_ptr<Session> session = Find(request->session_id(), request->keepalive());
    response->set_session_is_active(session != nullptr);
    return grpc::Status::OK;
  }

  grpc::Status FetchData(grpc::ServerContext* context, const pb::FetchDataRequestPB* request,
                         pb::FetchDataResponsePB* response) override {
    return ToGrpcStatus(DoFetch(*request, response));
  }

  grpc::Status EndTabletCopySession(grpc::ServerContext* context,
                                    const pb::EndTabletCopySessionRequestPB* request,
                                    pb::EndTabletCopySessionResponsePB* response) override {
    std::shared_ptr<Session> session;
    {
      absl::MutexLock l(&mu_);
      auto it = sessions_.find(request->session_id());
      if (it == sessions_.end()) return ToGrpcStatus(SessionNotFound(request->session_id()));
      session = std::move(it->second);
      sessions_.erase(it);
      // The next copy of this tablet to the requestor (it fell behind again) is logged at once.
      if (request->is_success()) {
        session_logs_.erase({session->source->tablet_id(), session->requestor});
      }
    }
    // The end of every session whose start was logged, and of every successful one.
    if (session->logged || request->is_success()) {
      LOG(INFO) << "tablet copy session " << request->session_id() << " of tablet "
                << session->source->tablet_id() << " to " << session->requestor << " ended"
                << (request->is_success() ? "" : " (the copy failed)");
    }
    return grpc::Status::OK;
  }

 private:
  struct Session {
    std::unique_ptr<TabletCopySource> source;
    std::string requestor;
    std::atomic<int64_t> last_used_nanos{0};
    bool logged = false;  // Its start was logged. Set before the session is published.
  };

  absl::Status CheckSessionCap() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    return CheckSessionCapLocked();
  }
  absl::Status CheckSessionCapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const size_t cap = static_cast<size_t>(std::max(FLAGS_tablet_copy_max_sessions, 1));
    if (sessions_.size() < cap) return absl::OkStatus();
    return absl::UnavailableError(
        StrCat("this server serves ", sessions_.size(),
               " tablet copy sessions already (--tablet_copy_max_sessions)"
               "; retry later"));
  }

  absl::Duration IdleTimeout() const {
    return absl::Milliseconds(std::max(FLAGS_tablet_copy_session_idle_timeout_ms, 1));
  }

  absl::Status DoBegin(const pb::BeginTabletCopySessionRequestPB& request,
                       pb::BeginTabletCopySessionResponsePB* response) {
    BASALT_RETURN_IF_ERROR(CheckTabletId(request.tablet_id()));
    BASALT_ASSIGN_OR_RETURN(std::shared_ptr<TabletReplica> replica,
                            manager_->Lookup(request.tablet_id()));
    BASALT_RETURN_IF_ERROR(CheckSessionCap());  // Before Begin anchors and opens anything.
    auto session = std::make_shared<Session>();
    BASALT_ASSIGN_OR_RETURN(session->source, TabletCopySource::Begin(replica, response));
    session->requestor = request.requestor_uuid();
    session->last_used_nanos = absl::GetCurrentTimeNanos();
    const std::string id = NewSessionId();
    response->set_session_id(id);
    response->set_session_idle_timeout_ms(absl::ToInt64Milliseconds(IdleTimeout()));
    int64_t n = 0;
    {
      absl::MutexLock l(&mu_);
      if (stopping_) return absl::UnavailableError("the tablet server is shutting down");
      BASALT_RETURN_IF_ERROR(CheckSessionCapLocked());  // Concurrent begins.
      // A copy that keeps failing brings a session per retry: the first is logged at once, the
      // others at most once a minute with their count.
      n = session_logs_[{request.tablet_id(), request.requestor_uuid()}].Record(absl::Now());
      session->logged = n > 0;
      sessions_[id] = session;
    }
    if (n > 0) {
      LOG(INFO) << "tablet copy session " << id << " of tablet " << request.tablet_id() << " to "
                << request.requestor_uuid() << ": " << response->blocks_size() << " blocks, log ("
                << response->log_prev_index() << ", " << response->log_last_index() << "]"
                << (n > 1 ? StrCat(" (", n, " sessions of this tablet to ",
                                   request.requestor_uuid(), " since the last report)")
                          : "");
    }
    return absl::OkStatus();
  }

  absl::Status DoFetch(const pb::FetchDataRequestPB& request, pb::FetchDataResponsePB* response) {
    if (FLAGS_tablet_copy_fetch_delay_ms > 0) {
      absl::SleepFor(absl::Milliseconds(FLAGS_tablet_copy_fetch_delay_ms));
    }
    std::shared_ptr<Session> session = Find(request.session_id(), /*touch=*/true);
    if (session == nullptr) return SessionNotFound(request.session_id());
    const uint64_t chunk_bytes = static_cast<uint64_t>(std::max(FLAGS_tablet_copy_chunk_bytes, 1));
    const uint64_t max =
        request.max_length() == 0 ? chunk_bytes : std::min(request.max_length(), chunk_bytes);
    pb::DataChunkPB* chunk = response->mutable_chunk();
    switch (request.type()) {
      case pb::BLOCK:
        BASALT_RETURN_IF_ERROR(
            session->source->FetchBlock(request.block_id(), request.offset(), max, chunk));
        break;
      case pb::LOG_ENTRIES:
        BASALT_RETURN_IF_ERROR(session->source->FetchLog(request.offset(), max, chunk));
        break;
      default:
        return absl::InvalidArgumentError(
            ToAbsl(StrCat("type: unknown data type ", static_cast<int>(request.type()))));
    }
    if (injected_corruptions_.fetch_add(1) < FLAGS_tablet_copy_inject_corrupt_chunks &&
        !chunk->data().empty()) {
      (*chunk->mutable_data())[chunk->data().size() / 2] ^= 0x01;
    }
    return absl::OkStatus();
  }

  std::shared_ptr<Session> Find(const std::string& id, bool touch) {
    absl::MutexLock l(&mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return nullptr;
    if (touch) it->second->last_used_nanos = absl::GetCurrentTimeNanos();
    return it->second;
  }

  void ReapLoop() {
    absl::MutexLock l(&mu_);
    while (!stopping_) {
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), IdleTimeout() / 4);
      const int64_t now = absl::GetCurrentTimeNanos();
      for (auto it = sessions_.begin(); it != sessions_.end();) {
        const absl::Duration idle = absl::Nanoseconds(now - it->second->last_used_nanos.load());
        if (idle < IdleTimeout()) {
          ++it;
          continue;
        }
        LOG(WARNING) << "tablet copy session " << it->first << " of tablet "
                     << it->second->source->tablet_id() << " to " << it->second->requestor
                     << " expired after " << absl::FormatDuration(idle) << " without a call";
        it = sessions_.erase(it);  // The source is destroyed when the last call holding it ends.
      }
    }
  }

  TsTabletManager* const manager_;
  std::atomic<int> injected_corruptions_{0};
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Session>> sessions_ ABSL_GUARDED_BY(mu_);
  // The session lines by (tablet id, requestor); an entry lives from a session's start until a
  // session of that pair succeeds. Lock order: mu_ before a LogThrottle's own lock.
  std::map<std::pair<std::string, std::string>, LogThrottle> session_logs_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread reaper_;
};

}  // namespace

std::unique_ptr<TabletCopyService> NewTabletCopyService(TsTabletManager* tablet_manager) {
  return std::make_unique<TabletCopyServiceImpl>(tablet_manager);
}

}  // namespace basalt
