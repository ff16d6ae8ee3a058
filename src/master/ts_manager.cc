#include "master/ts_manager.h"

#include <gflags/gflags.h>

DEFINE_int64(tserver_unresponsive_timeout_ms, 15000,
             "A tablet server not heard from for this many milliseconds is not live: the master "
             "places no new replicas on it and sends it no admin requests.");

namespace basalt {

TsManager::TsManager(Clock* clock, int64_t unresponsive_timeout_ms)
    : clock_(clock != nullptr ? clock : Clock::Default()),
      unresponsive_timeout_ms_(unresponsive_timeout_ms) {}

int64_t TsManager::timeout_micros() const {
  const int64_t ms = unresponsive_timeout_ms_ > 0 ? unresponsive_timeout_ms_
                                                  : FLAGS_tserver_unresponsive_timeout_ms;
  return ms * 1000;
}

TsManager::HeartbeatResult TsManager::Heartbeat(const std::string& uuid,
                                                const HostPort& rpc_address,
                                                const HostPort& http_address,
                                                int32_t num_live_tablets, bool full_report,
                                                const HostPort& frame_rpc_address) {
  const int64_t now = clock_->MonotonicMicros();
  absl::MutexLock l(&mu_);
  HeartbeatResult result;
  auto it = servers_.find(uuid);
  result.was_known = it != servers_.end();
  Entry& e = servers_[uuid];
  e.rpc_address = rpc_address;
  e.http_address = http_address;
  e.frame_rpc_address = frame_rpc_address;
  e.last_heartbeat_micros = now;
  e.num_live_tablets = num_live_tablets;
  if (full_report) e.full_report_received = true;
  result.needs_full_report = !e.full_report_received;
  return result;
}

TsDescriptor TsManager::Describe(const std::string& uuid, const Entry& e, int64_t now) const {
  TsDescriptor d;
  d.uuid = uuid;
  d.rpc_address = e.rpc_address;
  d.http_address = e.http_address;
  d.frame_rpc_address = e.frame_rpc_address;
  d.last_heartbeat_micros = e.last_heartbeat_micros;
  d.millis_since_heartbeat = (now - e.last_heartbeat_micros) / 1000;
  d.num_live_tablets = e.num_live_tablets;
  d.full_report_received = e.full_report_received;
  d.live = now - e.last_heartbeat_micros < timeout_micros();
  return d;
}

std::optional<TsDescriptor> TsManager::Get(const std::string& uuid) const {
  const int64_t now = clock_->MonotonicMicros();
  absl::MutexLock l(&mu_);
  auto it = servers_.find(uuid);
  if (it == servers_.end()) return std::nullopt;
  return Describe(uuid, it->second, now);
}

std::vector<TsDescriptor> TsManager::GetAll() const {
  const int64_t now = clock_->MonotonicMicros();
  absl::MutexLock l(&mu_);
  std::vector<TsDescriptor> out;
  out.reserve(servers_.size());
  for (const auto& [uuid, e] : servers_) out.push_back(Describe(uuid, e, now));
  return out;
}

std::vector<TsDescriptor> TsManager::GetLive() const {
  std::vector<TsDescriptor> out;
  for (TsDescriptor& d : GetAll()) {
    if (d.live) out.push_back(std::move(d));
  }
  return out;
}

int TsManager::NumLive() const { return static_cast<int>(GetLive().size()); }

}  // namespace basalt
