// KuduScanner: a Basalt Scanner behind Kudu's names. Row and columnar batches both come from
// Basalt's columnar batches without copying.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compat/kudu/internal.h"

namespace kudu {
namespace client {

namespace bc = basalt::client;
using internal::Access;

class KuduScanner::Data {
 public:
  explicit Data(KuduTable* t) : table(t), scanner(Access::Basalt(t)) {}

  // The projection as a KuduSchema; fixed once the scanner is open.
  const KuduSchema& Projection() {
    if (!has_projection) {
      projection = Access::MakeSchema(scanner.GetProjectionSchema());
      has_projection = true;
    }
    return projection;
  }

  KuduTable* const table;
  bc::Scanner scanner;
  uint64_t row_format_flags = NO_FLAGS;
  bool opened = false;
  KuduSchema projection;
  bool has_projection = false;
  // Holds the rows handed out by the deprecated NextBatch(std::vector<KuduRowResult>*).
  KuduScanBatch legacy_batch;
  ResourceMetrics metrics;
};

KuduScanner::KuduScanner(KuduTable* table) : data_(new Data(table)) {}
KuduScanner::~KuduScanner() { delete data_; }

Status KuduScanner::SetProjectedColumnNames(const std::vector<std::string>& col_names) {
  return FromAbsl(data_->scanner.SetProjectedColumnNames(col_names));
}
Status KuduScanner::SetProjectedColumnIndexes(const std::vector<int>& col_indexes) {
  return FromAbsl(data_->scanner.SetProjectedColumnIndexes(col_indexes));
}
Status KuduScanner::SetProjectedColumns(const std::vector<std::string>& col_names) {
  return SetProjectedColumnNames(col_names);
}
Status KuduScanner::SetQueryId(const std::string& query_id) { return Status::OK(); }

Status KuduScanner::AddConjunctPredicate(KuduPredicate* pred) {
  if (pred == nullptr) return Status::InvalidArgument("null predicate");
  std::unique_ptr<KuduPredicate> owned(pred);
  KuduPredicate::Data* d = Access::Data(pred);
  if (!d->error.ok()) return FromAbsl(d->error);
  return FromAbsl(data_->scanner.AddConjunctPredicate(std::move(d->pred)));
}

Status KuduScanner::AddLowerBound(const KuduPartialRow& key) {
  return FromAbsl(data_->scanner.AddLowerBound(Access::Basalt(key)));
}
Status KuduScanner::AddExclusiveUpperBound(const KuduPartialRow& key) {
  return FromAbsl(data_->scanner.AddExclusiveUpperBound(Access::Basalt(key)));
}

namespace {

Status NoEncodedKeys() {
  return Status::NotSupported("Kudu's encoded keys are not available in Basalt",
                              "use AddLowerBound/AddExclusiveUpperBound or predicates");
}

}  // namespace

Status KuduScanner::AddLowerBoundRaw(const Slice& key) { return NoEncodedKeys(); }
Status KuduScanner::AddExclusiveUpperBoundRaw(const Slice& key) { return NoEncodedKeys(); }
Status KuduScanner::AddLowerBoundPartitionKeyRaw(const Slice& partition_key) {
  return NoEncodedKeys();
}
Status KuduScanner::AddExclusiveUpperBoundPartitionKeyRaw(const Slice& partition_key) {
  return NoEncodedKeys();
}
Status KuduScanner::SetCacheBlocks(bool cache_blocks) { return Status::OK(); }

Status KuduScanner::Open() {
  KUDU_RETURN_NOT_OK(FromAbsl(data_->scanner.Open()));
  data_->opened = true;
  return Status::OK();
}

Status KuduScanner::KeepAlive() { return FromAbsl(data_->scanner.KeepAlive()); }

Status KuduScanner::StartKeepAlivePeriodically(uint64_t keep_alive_interval_ms) {
  return Status::NotSupported("periodic keep-alive is not available in Basalt",
                              "call KeepAlive() between batches");
}
void KuduScanner::StopKeepAlivePeriodically() {}
void KuduScanner::Close() { data_->scanner.Close(); }
bool KuduScanner::HasMoreRows() const { return data_->scanner.HasMoreRows(); }

Status KuduScanner::NextBatch(std::vector<KuduRowResult>* rows) {
  rows->clear();
  KUDU_RETURN_NOT_OK(NextBatch(&data_->legacy_batch));
  rows->reserve(data_->legacy_batch.NumRows());
  for (int i = 0; i < data_->legacy_batch.NumRows(); i++) {
    rows->push_back(data_->legacy_batch.Row(i));
  }
  return Status::OK();
}

Status KuduScanner::NextBatch(KuduScanBatch* batch) {
  KUDU_RETURN_NOT_OK(FromAbsl(data_->scanner.NextBatch(Access::Basalt(batch))));
  Access::SetSchema(batch, data_->Projection());
  return Status::OK();
}

Status KuduScanner::NextBatch(KuduColumnarScanBatch* batch) {
  if ((data_->row_format_flags & COLUMNAR_LAYOUT) == 0) {
    return Status::IllegalState("columnar batches need SetRowFormatFlags(COLUMNAR_LAYOUT)");
  }
  Access::ResetBitmaps(batch);
  return FromAbsl(data_->scanner.NextBatch(Access::Basalt(batch)));
}

Status KuduScanner::GetCurrentServer(KuduTabletServer** server) {
  return Status::NotSupported("GetCurrentServer is not available in Basalt");
}

const ResourceMetrics& KuduScanner::GetResourceMetrics() const { return data_->metrics; }

Status KuduScanner::SetBatchSizeBytes(uint32_t batch_size) {
  return FromAbsl(data_->scanner.SetBatchSizeBytes(batch_size));
}
Status KuduScanner::SetSelection(KuduClient::ReplicaSelection selection) { return Status::OK(); }
Status KuduScanner::SetReadMode(ReadMode read_mode) {
  return FromAbsl(data_->scanner.SetReadMode(static_cast<bc::Scanner::ReadMode>(read_mode)));
}
Status KuduScanner::SetOrderMode(OrderMode order_mode) {
  return FromAbsl(data_->scanner.SetOrderMode(static_cast<bc::Scanner::OrderMode>(order_mode)));
}
Status KuduScanner::SetFaultTolerant() { return FromAbsl(data_->scanner.SetFaultTolerant()); }
Status KuduScanner::SetSnapshotMicros(uint64_t snapshot_timestamp_micros) {
  return FromAbsl(data_->scanner.SetSnapshotMicros(snapshot_timestamp_micros));
}
Status KuduScanner::SetSnapshotRaw(uint64_t snapshot_timestamp) {
  return FromAbsl(data_->scanner.SetSnapshotRaw(snapshot_timestamp));
}
Status KuduScanner::SetTimeoutMillis(int millis) {
  return FromAbsl(data_->scanner.SetTimeoutMillis(millis));
}
KuduSchema KuduScanner::GetProjectionSchema() const {
  return Access::MakeSchema(data_->scanner.GetProjectionSchema());
}
sp::shared_ptr<KuduTable> KuduScanner::GetKuduTable() { return data_->table->shared_from_this(); }

Status KuduScanner::SetRowFormatFlags(uint64_t flags) {
  if ((flags & ~(PAD_UNIXTIME_MICROS_TO_16_BYTES | COLUMNAR_LAYOUT)) != 0) {
    return Status::InvalidArgument("unknown row format flags", std::to_string(flags));
  }
  if (data_->opened) return Status::IllegalState("the scanner is already open");
  data_->row_format_flags = flags;
  return Status::OK();
}

Status KuduScanner::SetLimit(int64_t limit) { return FromAbsl(data_->scanner.SetLimit(limit)); }
std::string KuduScanner::ToString() const { return data_->scanner.ToString(); }

}  // namespace client
}  // namespace kudu
