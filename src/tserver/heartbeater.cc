#include "tserver/heartbeater.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>

#include <glog/logging.h>
#include <grpcpp/grpcpp.h>

#include "absl/time/clock.h"
#include "common/log_throttle.h"
#include "common/random.h"
#include "proto/master.grpc.pb.h"
#include "proto/master.pb.h"
#include "rpc/rpc_status.h"
#include "tserver/address_book.h"
#include "tserver/replica_report.h"
#include "tserver/ts_tablet_manager.h"

namespace basalt {

absl::Duration HeartbeatRetryDelay(absl::Duration interval, absl::Duration max_backoff,
                                   int consecutive_failures, double unit_random) {
  const absl::Duration cap = std::max(max_backoff, interval);
  absl::Duration backoff = interval;
  // Doubling stops at the cap, so a long outage never overflows the duration.
  for (int i = 1; i < consecutive_failures && backoff < cap; ++i) backoff *= 2;
  return std::min(backoff, cap) * (0.75 + 0.5 * unit_random);
}

struct Heartbeater::Master {
  explicit Master(uint64_t seed) : rng(seed) {}

  HostPort address;
  std::unique_ptr<pb::MasterService::Stub> stub;
  bool needs_full_report = true;
  // The report last acknowledged, serialized, by tablet id.
  std::map<std::string, std::string> acked;
  int consecutive_failures = 0;
  Random rng;               // The retry jitter.
  LogThrottle failure_log;  // The warnings about failed heartbeats.
};

Heartbeater::Heartbeater(HeartbeaterOptions options, TsTabletManager* manager, AddressBook* book)
    : options_(std::move(options)),
      manager_(manager),
      book_(book),
      // Servers that lost the same master must not retry in step: seeds differ by server and
      // start.
      seed_(static_cast<uint64_t>(absl::GetCurrentTimeNanos()) ^
            std::hash<std::string>()(options_.server_uuid)) {
  absl::MutexLock l(&mu_);
  for (const HostPort& hp : options_.masters) AddMasterLocked(hp);
}

Heartbeater::~Heartbeater() { Shutdown(); }

Heartbeater::Master* Heartbeater::AddMasterLocked(const HostPort& address) {
  if (!known_addresses_.insert(address.ToString()).second) return nullptr;
  auto m = std::make_unique<Master>(seed_ + masters_.size());
  m->address = address;
  m->stub = pb::MasterService::NewStub(NewChannel(address.ToString()));
  masters_.push_back(std::move(m));
  return masters_.back().get();
}

void Heartbeater::Start() {
  absl::MutexLock l(&mu_);
  started_ = true;
  for (auto& m : masters_) threads_.emplace_back([this, m = m.get()] { Loop(m); });
}

void Heartbeater::Shutdown() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;  // No thread is added from here on.
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void Heartbeater::LearnMasters(const pb::TSHeartbeatResponsePB& response) {
  absl::MutexLock l(&mu_);
  if (stopping_ || !started_) return;
  for (const pb::RaftPeerPB& peer : response.masters()) {
    if (!peer.has_address()) continue;
    Master* m = AddMasterLocked(HostPort::FromPB(peer.address()));
    if (m == nullptr) continue;
    LOG(INFO) << "heartbeating master " << peer.uuid() << " at " << m->address.ToString()
              << " too (a member of the catalog group that --master_addresses does not name)";
    threads_.emplace_back([this, m] { Loop(m); });
  }
}

void Heartbeater::TriggerNow() {
  absl::MutexLock l(&mu_);
  ++trigger_epoch_;
}

void Heartbeater::Loop(Master* m) {
  // A triggered report is followed by another one shortly after: the change that triggered it
  // (a new leader) may not be visible in every observer yet when the first one is built.
  constexpr absl::Duration kFollowUp = absl::Milliseconds(100);
  bool follow_up = false;
  uint64_t seen_epoch;
  {
    absl::MutexLock l(&mu_);
    seen_epoch = trigger_epoch_;
  }
  while (true) {
    const absl::Duration wait = RecordOutcome(m, Beat(m));
    absl::MutexLock l(&mu_);
    auto wake = [this, &seen_epoch]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || trigger_epoch_ != seen_epoch;
    };
    mu_.AwaitWithTimeout(absl::Condition(&wake), follow_up ? std::min(kFollowUp, wait) : wait);
    if (stopping_) return;
    follow_up = trigger_epoch_ != seen_epoch;
    seen_epoch = trigger_epoch_;
  }
}

absl::Duration Heartbeater::RecordOutcome(Master* m, const absl::Status& s) {
  if (s.ok()) {
    acknowledged_.fetch_add(1);
    if (m->consecutive_failures > 0) {
      // One line per outage closes it, so the count of the failures after the last warning is
      // not lost.
      LOG(INFO) << "heartbeats to master " << m->address.ToString() << " succeed again after "
                << m->consecutive_failures << " failures";
      m->consecutive_failures = 0;
      m->failure_log.Reset();
    }
    return options_.interval;
  }
  ++m->consecutive_failures;
  const absl::Duration delay = HeartbeatRetryDelay(options_.interval, options_.max_failure_backoff,
                                                   m->consecutive_failures, m->rng.NextDouble());
  // The first failure at once, then one line a minute at most, however short the delays.
  if (const int64_t n = m->failure_log.Record(absl::Now()); n > 0) {
    LOG(WARNING) << "heartbeat to master " << m->address.ToString() << " failed"
                 << LogThrottle::Times(n) << "; next in "
                 << absl::FormatDuration(absl::Trunc(delay, absl::Milliseconds(1))) << ": " << s;
  }
  return delay;
}

absl::Status Heartbeater::Beat(Master* m) {
  pb::TSHeartbeatRequestPB request;
  request.set_ts_uuid(options_.server_uuid);
  options_.rpc_address.ToPB(request.mutable_rpc_address());
  if (options_.frame_rpc_address.port != 0) {
    options_.frame_rpc_address.ToPB(request.mutable_frame_rpc_address());
  }
  std::map<std::string, std::string> current;
  int live = 0;
  for (const auto& r : manager_->List()) {
    const ReplicaStatus st = r->GetStatus();
    if (st.state == ReplicaState::kRunning) ++live;
    pb::TSHeartbeatRequestPB::ReportedTabletPB report;
    ReplicaStatusToReport(st, options_.server_uuid, *book_, &report);
    current[st.tablet_id] = report.SerializeAsString();
  }
  for (const auto& [id, error] : manager_->Failed()) {
    pb::TSHeartbeatRequestPB::ReportedTabletPB report;
    FailedReplicaToReport(id, error, &report);
    current[id] = report.SerializeAsString();
  }
  for (const auto& [id, header] : manager_->Tombstones()) {
    pb::TSHeartbeatRequestPB::ReportedTabletPB report;
    TombstoneToReport(header, &report);
    current[id] = report.SerializeAsString();
  }
  request.set_num_live_tablets(live);
  request.set_is_incremental(!m->needs_full_report);
  for (const auto& [id, bytes] : current) {
    auto it = m->acked.find(id);
    if (m->needs_full_report || it == m->acked.end() || it->second != bytes) {
      request.add_updated_tablets()->ParseFromString(bytes);
    }
  }
  if (!m->needs_full_report) {
    for (const auto& [id, bytes] : m->acked) {
      if (!current.contains(id)) request.add_removed_tablet_ids(id);
    }
  }
  grpc::ClientContext context;
  // Two intervals, within [1 s, 10 s]: a hung master delays the others (and Shutdown) little.
  const int64_t timeout_ms =
      std::clamp<int64_t>(absl::ToInt64Milliseconds(options_.interval) * 2, 1000, 10000);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  pb::TSHeartbeatResponsePB response;
  absl::Status s = FromGrpcStatus(m->stub->TSHeartbeat(&context, request, &response));
  if (!s.ok()) return s;
  m->acked = std::move(current);
  m->needs_full_report = response.needs_full_tablet_report();
  for (const pb::RaftPeerPB& peer : response.tablet_servers()) {
    if (peer.has_address()) book_->Set(peer.uuid(), HostPort::FromPB(peer.address()));
  }
  LearnMasters(response);
  return absl::OkStatus();
}

}  // namespace basalt
