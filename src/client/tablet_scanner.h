#pragma once

// The scan of one tablet: its server-side scanner, opened on a replica (leader first) and
// continued batch by batch, reopened on another replica when a fault-tolerant scan's server
// fails. Shared by the sequential scan (client::Scanner, one at a time) and the parallel one
// (ParallelScan, several at once on their own threads). Private to src/client.
//
// Thread-compatible: one thread drives a TabletScanner, except Cancel(), which any thread may
// call to abort the RPC in flight (the scanner then fails with CANCELLED and stays failed).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/scanner.h"
#include "common/column_predicate.h"

namespace grpc {
class ClientContext;
}  // namespace grpc

namespace basalt {
class AggregatePlan;
class PartitionPruner;
class FrameCancel;
class Schema;
namespace pb {
class ScanRequestPB;
class ScanResponsePB;
}  // namespace pb
}  // namespace basalt

namespace basalt::client::internal {

struct ClientData;
class RemoteTablet;
class ScanBlockPool;
class TableLocations;

// What every tablet scanner of one scan sends: fixed at Scanner::Open, except `snapshot`.
struct ScanConfig {
  TableLocations* locations = nullptr;  // The table's, in the client's meta cache.
  ClientData* client = nullptr;
  const basalt::Schema* schema = nullptr;
  std::vector<int> projection;  // Indexes into *schema.
  // An aggregate scan's plan (then `projection` is not sent), or null.
  const AggregatePlan* aggregates = nullptr;
  std::vector<ColumnPredicate> predicates;
  std::string lower_key;
  std::string upper_key;
  Scanner::ReadMode read_mode = Scanner::READ_LATEST;
  bool ordered = false;
  bool fault_tolerant = false;
  // READ_AT_SNAPSHOT / READ_YOUR_WRITES without a snapshot: set by the first tablet's answer and
  // used by every other tablet. Written only before a parallel scan starts its threads.
  uint64_t snapshot = 0;
  // Set before a concurrent scan starts its threads: from then on `snapshot` is only read.
  bool snapshot_fixed = false;
  uint32_t batch_size = 0;
  // Row blocks the caller is done with, for the next answers (scan_rpc.h).
  ScanBlockPool* blocks = nullptr;
};

// The next tablet of the scan from `pruner`'s remaining partition-key ranges (skipping gaps
// and pruned tablets), whose range it then removes; null when none is left.
absl::StatusOr<std::shared_ptr<RemoteTablet>> ClaimNextTablet(const ScanConfig& config,
                                                              PartitionPruner* pruner,
                                                              absl::Time deadline);

// Keeps the server-side scanner `scanner_id` on `server` alive.
absl::Status SendKeepAlive(ClientData* client, const std::string& server,
                           const std::string& scanner_id, absl::Time deadline);

class TabletScanner {
 public:
  TabletScanner(ScanConfig* config, std::shared_ptr<RemoteTablet> tablet);
  ~TabletScanner();
  TabletScanner(const TabletScanner&) = delete;
  TabletScanner& operator=(const TabletScanner&) = delete;

  // Opens a server-side scanner (asking for at most `limit` rows, 0: all), trying the replicas
  // in turn with retries until `deadline`; its first batch becomes the response. OK with no
  // response and range_dropped() when the tablet's range partition turns out to be dropped.
  absl::Status Open(absl::Time deadline, uint64_t limit);
  // Fetches the next batch into the response. A fault-tolerant scan reopens on another replica
  // after the last key returned when its server fails (asking for at most `limit` rows).
  absl::Status Continue(absl::Time deadline, uint64_t limit);
  // Keeps the server-side scanner alive; OK when none is open.
  absl::Status KeepAlive(absl::Time deadline);
  // Releases the server-side scanner (best effort, 1 s). Idempotent.
  void Close();
  // Aborts the RPC in flight and every later one. Thread-safe.
  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);

  // Whether the server holds more rows of this tablet for Continue().
  bool has_more() const { return has_more_; }
  // Whether Open found the tablet's range partition dropped: the scan skips it.
  bool range_dropped() const { return range_dropped_; }
  // The last answer (null once taken).
  std::unique_ptr<pb::ScanResponsePB> TakeResponse();
  // The server-side scanner (empty when none is open) and its server.
  const std::string& scanner_id() const { return scanner_id_; }
  const std::string& server() const { return server_; }

 private:
  absl::Status NewScan(absl::Time deadline, uint64_t limit);
  // Sends one Scan RPC to `address` (over its frame RPC port when it has one), cancellable
  // through Cancel().
  absl::Status Call(const std::string& address, const pb::ScanRequestPB& req, absl::Time deadline,
                    pb::ScanResponsePB* resp) ABSL_LOCKS_EXCLUDED(mu_);
  void Accept(const std::string& address, std::unique_ptr<pb::ScanResponsePB> resp);
  bool Cancelled() ABSL_LOCKS_EXCLUDED(mu_);

  ScanConfig* const config_;
  std::shared_ptr<RemoteTablet> tablet_;
  std::string server_;      // Address of the replica serving the open server-side scanner.
  std::string scanner_id_;  // Empty when the server holds no scanner.
  uint32_t call_seq_ = 0;
  bool has_more_ = false;
  bool range_dropped_ = false;
  std::string last_primary_key_;
  std::unique_ptr<pb::ScanResponsePB> response_;
  // The bytes of the last frame RPC answer, kept for their capacity (batches are ~1 MiB).
  std::string frame_answer_;

  absl::Mutex mu_;
  grpc::ClientContext* in_flight_ ABSL_GUARDED_BY(mu_) = nullptr;
  FrameCancel* frame_in_flight_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace basalt::client::internal
