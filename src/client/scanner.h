#pragma once

// Scanner: reads rows of one table (Kudu's KuduScanner).
//
// Lifecycle: construct with a table, configure (projection, predicates, key bounds, read mode,
// ...), Open(), then NextBatch() while HasMoreRows(), then Close() (or destroy). Configuration
// after Open() is FAILED_PRECONDITION.
//
// The scanner visits the tablets whose partitions can hold matching rows (partition pruning from
// the predicates and key bounds). An ordered scan (SetOrderMode(ORDERED) or SetFaultTolerant())
// or one with a limit reads them one at a time in partition-key order, and rows come back in
// primary key order within a tablet. Any other scan reads up to SetMaxConcurrentTablets(n)
// tablets at once (2 by default) on background threads, fetching their batches ahead of the
// caller; batches then come in the order they arrive, tablets interleaved (n = 1: one tablet at a
// time, in partition-key order).
//
// Read modes: READ_LATEST (the default) reads what each replica has applied; READ_AT_SNAPSHOT
// reads a repeatable snapshot (SetSnapshotMicros/Raw, or one picked by the first tablet and used
// for all the others); READ_YOUR_WRITES reads a snapshot that includes every write this client
// has seen acknowledged.
//
// Fault tolerance (SetFaultTolerant): an ordered READ_AT_SNAPSHOT scan that, when a replica fails
// or its scanner expires, reopens on another replica after the last primary key returned, so no
// row is returned twice or skipped. Without it a failure after the first batch of a tablet is
// returned to the caller.
//
// Aggregate scans (AddAggregate, AddGroupBy; docs/aggregates.md): the tablet servers aggregate
// the rows that match the predicates, each tablet returning partial aggregates per group, and
// the scanner merges them. Batches then hold one row per group: the GROUP BY columns, then one
// column per aggregate (GetProjectionSchema(): named by alias, or "sum(v)", "count(*)"), in
// ascending order of the group values (NULL first); without GROUP BY exactly one row. The limit
// counts groups. NextBatch may return no rows while it merges (HasMoreRows() stays true). A
// failure ends an aggregate scan: HasMoreRows() turns false and NextBatch keeps returning it.
// Reading tablets at once is the default for them (their answers are small).
//
// Errors: INVALID_ARGUMENT for bad configuration (naming the column or value), the failing RPC's
// status, DEADLINE_EXCEEDED when the scanner timeout (per NextBatch call) runs out, DATA_LOSS for a
// malformed response. A concurrent scan returns the batches fetched before a failure, then the
// failure, which ends it (HasMoreRows() turns false).
//
// Not thread-safe; the caller serializes.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/export.h"
#include "client/predicate.h"
#include "client/scan_batch.h"
#include "client/schema.h"

namespace basalt::client {

class PartialRow;
class Table;

class BASALT_EXPORT Scanner {
 public:
  enum ReadMode { READ_LATEST, READ_AT_SNAPSHOT, READ_YOUR_WRITES };
  enum OrderMode { UNORDERED, ORDERED };

  // `table` must outlive the scanner.
  explicit Scanner(Table* table);
  ~Scanner();
  Scanner(const Scanner&) = delete;
  Scanner& operator=(const Scanner&) = delete;

  // Default: every column. An empty list scans no columns (counts rows).
  absl::Status SetProjectedColumnNames(const std::vector<std::string>& names);
  absl::Status SetProjectedColumnIndexes(const std::vector<int>& indexes);
  // Takes ownership; returns the predicate's own error if it could not be built.
  absl::Status AddConjunctPredicate(std::unique_ptr<Predicate> predicate);
  // Primary-key bounds; `key` must set every key column. The lower bound is inclusive.
  absl::Status AddLowerBound(const PartialRow& key);
  absl::Status AddExclusiveUpperBound(const PartialRow& key);
  absl::Status SetReadMode(ReadMode mode);
  absl::Status SetOrderMode(OrderMode mode);
  // READ_AT_SNAPSHOT at this time (microseconds since the epoch / raw HybridTime).
  absl::Status SetSnapshotMicros(uint64_t micros);
  absl::Status SetSnapshotRaw(uint64_t hybrid_time);
  // Ordered, READ_AT_SNAPSHOT, resumable on another replica.
  absl::Status SetFaultTolerant();
  absl::Status SetBatchSizeBytes(uint32_t bytes);
  // At most this many rows in total (0: no limit).
  absl::Status SetLimit(int64_t limit);
  // How many tablets an unordered scan without a limit reads at once, in [1,
  // kMaxConcurrentTablets] (default 2; 1: one at a time, in partition-key order). Each costs a
  // thread and up to two batches of memory while the scan is open. Aggregate scans default to
  // kDefaultAggregateTablets.
  static constexpr int kMaxConcurrentTablets = 64;
  static constexpr int kDefaultAggregateTablets = 8;
  absl::Status SetMaxConcurrentTablets(int tablets);
  // Aggregate scans (see the class comment). Numbering equals basalt.pb.AggregatePB.Function.
  enum AggregateFunction {
    COUNT_ALL = 1,  // COUNT(*): `column` empty.
    COUNT = 2,      // non-NULL cells
    SUM = 3,        // integers: INT64 (OUT_OF_RANGE naming the column on overflow); FLOAT,
                    // DOUBLE: DOUBLE; DECIMAL(p, s): DECIMAL(38, s)
    MIN = 4,
    MAX = 5,
    AVG = 6,    // DOUBLE
    FIRST = 7,  // the non-NULL cell of the smallest primary key in the group
    LAST = 8,   // the non-NULL cell of the largest primary key in the group
  };
  // Adds an aggregate; the result column is named `alias`, or "sum(v)" / "count(*)" when empty.
  // INVALID_ARGUMENT for an unknown column, a function its type lacks (SUM/AVG of a non-number)
  // or a duplicate result name. NULL cells are skipped; an empty group's SUM, MIN, MAX, AVG,
  // FIRST and LAST are NULL.
  absl::Status AddAggregate(AggregateFunction function, const std::string& column,
                            const std::string& alias = "");
  // Groups by a column's value.
  absl::Status AddGroupBy(const std::string& column, const std::string& alias = "");
  // Groups by time_bucket(column, width, offset) of a UNIXTIME_MICROS column: the group value is
  // offset + floor((value - offset) / width) * width (width > 0).
  absl::Status AddGroupByTimeBucket(const std::string& column, int64_t width_micros,
                                    int64_t offset_micros = 0, const std::string& alias = "");

  // Deadline of Open() and of each NextBatch() call (default: the client's RPC timeout).
  absl::Status SetTimeoutMillis(int millis);

  absl::Status Open();
  bool HasMoreRows() const;
  // Replaces *batch with the next rows (possibly none while HasMoreRows() stays true).
  absl::Status NextBatch(ScanBatch* batch);
  // Keeps the server-side scanner of the current tablet alive while the caller pauses between
  // batches for longer than the server's scanner TTL. OK when no server-side scanner is open;
  // the RPC's error otherwise (NOT_FOUND + SCANNER_EXPIRED if it already expired).
  absl::Status KeepAlive();
  // Releases the server-side scanner (best effort). Idempotent.
  void Close();

  // The columns of the batches: the projection, or an aggregate scan's groups and aggregates.
  const Schema& GetProjectionSchema() const;
  // The snapshot (raw HybridTime) a READ_AT_SNAPSHOT or READ_YOUR_WRITES scan reads at, known
  // after the first tablet answered; 0 before.
  uint64_t GetSnapshotRaw() const;
  std::string ToString() const;

 private:
  friend struct internal::Access;
  struct Data;
  std::unique_ptr<Data> data_;
};

}  // namespace basalt::client
