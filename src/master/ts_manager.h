#pragma once

// TsManager: the tablet servers this master has heard from (docs/master.md "Tablet servers").
// Each heartbeat registers or refreshes a server's descriptor: its addresses, when it was last
// heard from, the replica count it reports, and whether its full tablet report has arrived since
// this master started. A server is live while its last heartbeat is younger than
// --tserver_unresponsive_timeout_ms; only live servers receive new replicas.
//
// Descriptors are kept for the life of the process (a dead server may come back). Time is read
// from an injectable Clock (monotonic), so liveness tests need no sleeps.
//
// Thread-safe.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "rpc/net_util.h"

namespace basalt {

// A copy of what the master knows about one tablet server, with liveness computed at the time
// of the copy.
struct TsDescriptor {
  std::string uuid;
  HostPort rpc_address;
  HostPort http_address;
  HostPort frame_rpc_address;         // Port 0: the server has no frame RPC port.
  int64_t last_heartbeat_micros = 0;  // Monotonic (Clock::MonotonicMicros).
  int64_t millis_since_heartbeat = 0;
  int32_t num_live_tablets = 0;  // As reported.
  bool full_report_received = false;
  bool live = false;
};

class TsManager {
 public:
  // `clock` is borrowed and must outlive the manager (nullptr: Clock::Default()).
  // `unresponsive_timeout_ms` <= 0 means --tserver_unresponsive_timeout_ms (read at each check).
  explicit TsManager(Clock* clock = nullptr, int64_t unresponsive_timeout_ms = 0);

  struct HeartbeatResult {
    bool was_known = false;          // Registered before this heartbeat.
    bool needs_full_report = false;  // No full report received since this master started.
  };
  // Registers or refreshes `uuid`. A full report (`full_report`) marks it received.
  // `frame_rpc_address` with port 0: the server answers over gRPC only.
  HeartbeatResult Heartbeat(const std::string& uuid, const HostPort& rpc_address,
                            const HostPort& http_address, int32_t num_live_tablets,
                            bool full_report, const HostPort& frame_rpc_address = {})
      ABSL_LOCKS_EXCLUDED(mu_);

  std::optional<TsDescriptor> Get(const std::string& uuid) const ABSL_LOCKS_EXCLUDED(mu_);
  // Every known server, by uuid.
  std::vector<TsDescriptor> GetAll() const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<TsDescriptor> GetLive() const ABSL_LOCKS_EXCLUDED(mu_);
  int NumLive() const ABSL_LOCKS_EXCLUDED(mu_);
  // How long a server may go without a heartbeat and still be live.
  absl::Duration unresponsive_timeout() const { return absl::Microseconds(timeout_micros()); }

 private:
  struct Entry {
    HostPort rpc_address;
    HostPort http_address;
    HostPort frame_rpc_address;
    int64_t last_heartbeat_micros = 0;
    int32_t num_live_tablets = 0;
    bool full_report_received = false;
  };
  TsDescriptor Describe(const std::string& uuid, const Entry& e, int64_t now) const;
  int64_t timeout_micros() const;

  // Constant after construction.
  Clock* const clock_;
  const int64_t unresponsive_timeout_ms_;

  mutable absl::Mutex mu_;
  std::map<std::string, Entry> servers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace basalt
