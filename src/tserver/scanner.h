#pragma once

// Scanner: one open scan of one tablet replica (docs/cluster.md "Scans"; docs/tserver.md): a
// tablet iterator over a projection, predicates and key bounds at an MVCC snapshot, producing
// columnar batches of about a requested size, with the call-sequence bookkeeping that lets a
// retried continuation get the same batch again.
//
// Lifecycle: Open() (validates the request and takes the snapshot) -> NextBatch() for the new
// scan's batch -> Continue() per continuation call, while has_more(). The replica (and so its
// tablet) stays alive while the scanner holds it.
//
// Not thread-safe: the caller serializes calls (the service holds mu() during a call).

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/column_block.h"
#include "common/hybrid_clock.h"
#include "common/schema.h"
#include "tablet/row_iterator.h"
#include "tserver/tablet_replica.h"

namespace basalt {

namespace pb {
class NewScanRequestPB;
class ScanResponsePB;
}  // namespace pb

class AggregatePlan;
class GroupAggregator;

class Scanner {
 public:
  // Validates `request` against the replica's schema (INVALID_ARGUMENT naming the field: unknown
  // or mismatched projected column, bad predicate, bad read mode) and takes its snapshot
  // (TabletReplica::SnapshotForRead's errors).
  static absl::StatusOr<std::unique_ptr<Scanner>> Open(std::shared_ptr<TabletReplica> replica,
                                                       const pb::NewScanRequestPB& request,
                                                       absl::Time deadline);
  ~Scanner();

  // Fills `response` with the next batch of about `batch_bytes` (data, has_more_results,
  // last_primary_key of ordered scans, snap_timestamp). Errors of the tablet iterator.
  absl::Status NextBatch(size_t batch_bytes, pb::ScanResponsePB* response);
  // A continuation call: `call_seq_id` equal to the next expected one produces the next batch; the
  // previous one again returns the previous batch (a retried RPC); anything else is
  // INVALID_ARGUMENT.
  absl::Status Continue(uint32_t call_seq_id, size_t batch_bytes, pb::ScanResponsePB* response);

  bool has_more() const { return has_more_; }
  const std::string& tablet_id() const { return replica_->tablet_id(); }
  absl::Mutex* mu() { return &mu_; }
  // Monotonic time of the last call (for the TTL), updated by Touch().
  int64_t last_access_micros() const { return last_access_micros_.load(); }
  void Touch();

 private:
  Scanner() = default;
  absl::Status Init(std::shared_ptr<TabletReplica> replica, const pb::NewScanRequestPB& request,
                    absl::Time deadline);
  // Projected column i of the request, checked against the tablet's (name, type,
  // nullability); its name.
  static absl::StatusOr<std::string> CheckProjectedColumn(const Schema& schema,
                                                          const pb::NewScanRequestPB& request,
                                                          int i);
  absl::Status BuildProjection(const Schema& schema, const pb::NewScanRequestPB& request);
  // An aggregate scan's projection: the key columns when needed, then the plan's inputs.
  absl::Status BuildAggregateProjection(const Schema& schema, const pb::NewScanRequestPB& request);
  // Partial aggregates of the rows read for this call (docs/aggregates.md).
  absl::Status NextAggregateBatch(size_t batch_bytes, pb::ScanResponsePB* response);
  void EncodeRowKey(size_t row, std::string* out) const;
  void RememberLastKey(size_t row);

  absl::Mutex mu_;  // Held by the caller for the duration of a call.
  std::shared_ptr<TabletReplica> replica_;
  Schema projection_;  // What the iterator reads: key columns first when needed.
  std::vector<DataType> out_types_;
  std::vector<int> out_inputs_;  // Output column i is projection_ column out_inputs_[i].
  bool ordered_ = false;
  int num_key_columns_ = 0;  // Key columns leading projection_ (ordered scans).
  std::unique_ptr<RowBlockIterator> iter_;
  std::vector<std::unique_ptr<ColumnBlockBuffer>> buffers_;
  std::vector<ColumnBlock*> blocks_;
  size_t capacity_ = 0;
  size_t row_width_ = 1;
  uint64_t limit_ = 0;  // 0: none.
  uint64_t rows_returned_ = 0;
  HybridTime snap_ts_ = HybridTime::kInvalid;
  std::string last_key_;
  bool has_more_ = true;
  uint32_t next_call_seq_ = 0;
  std::unique_ptr<pb::ScanResponsePB> last_response_;
  // Aggregate scans: the plan, its state, and where each of its inputs is in projection_.
  std::unique_ptr<AggregatePlan> plan_;
  std::unique_ptr<GroupAggregator> aggregator_;
  std::vector<int> agg_inputs_;
  std::vector<std::string> row_keys_;
  std::vector<std::string_view> row_key_views_;
  std::atomic<int64_t> last_access_micros_{0};
};

}  // namespace basalt
