#pragma once

// Partitioning: how rows map to tablets (DESIGN.md section 2; byte layout in
// docs/partitioning.md).
//
// A table's PartitionSchema has zero or more hash levels followed by an optional range level.
// Every row has a *partition key*:
//
//   partition key = BE32(bucket of hash level 0) ... BE32(bucket of hash level n-1) range key
//
// where a hash level's bucket is XXH64(encoded hash columns, seed) % num_buckets and the range
// key is the encoding (common/key_encoder.h) of the range columns, the last range column in the
// "last" form. Both the hash and the key encoding are wire and on-disk contracts: a change moves
// existing rows to other tablets.
//
// A Partition (one tablet) owns the half-open interval [partition_key_start, partition_key_end)
// of partition keys, an empty end meaning unbounded. The partitions of a table are the cross
// product of all hash bucket combinations and the table's range partitions, and never overlap.
// Their union need not cover every byte string: keys between range partitions (non-covered
// ranges) belong to no tablet, and a row whose key falls there cannot be written.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/partial_row.h"
#include "common/schema.h"

namespace basalt {

namespace pb {
class PartitionPB;
class PartitionSchemaPB;
}  // namespace pb

// Sanity limit on the number of partitions one CreatePartitions call produces (hash bucket
// combinations times ranges), so that a bad request cannot exhaust the master's memory.
inline constexpr int64_t kMaxPartitionsPerCall = 100000;

// The 4-byte big-endian encoding of a hash bucket, as it appears in partition keys.
void AppendHashBucket(int32_t bucket, std::string* out);

// One combination of hash buckets (one per level) and its encoded partition-key prefix.
struct HashPrefix {
  std::vector<int32_t> buckets;
  std::string key;
};
// Every combination of one bucket from each of `buckets_per_level` (each sorted ascending), in
// partition-key order. No levels gives one empty combination. The caller bounds the product.
std::vector<HashPrefix> HashPrefixes(const std::vector<std::vector<int32_t>>& buckets_per_level);

// The exclusive end of the partition keys with hash prefix `hash_prefix` and range keys below
// `range_key_end` (empty = unbounded): hash_prefix + range_key_end, or the successor of the
// prefix when the range is unbounded ("" when there are no hash levels either).
std::string PartitionKeyEnd(std::string_view hash_prefix, std::string_view range_key_end);

// The partition of one tablet: its bucket in each hash level and its interval of partition keys.
// Copyable value type; const methods are thread-safe.
class Partition {
 public:
  Partition() = default;
  Partition(std::vector<int32_t> hash_buckets, std::string partition_key_start,
            std::string partition_key_end);

  const std::vector<int32_t>& hash_buckets() const { return hash_buckets_; }
  const std::string& partition_key_start() const { return partition_key_start_; }
  // Exclusive; empty means unbounded.
  const std::string& partition_key_end() const { return partition_key_end_; }

  // The range-key interval of this partition: the partition keys without the hash prefix.
  // An empty range_key_end() means unbounded.
  std::string_view range_key_start() const;
  std::string_view range_key_end() const;

  // Whether `partition_key` lies in [partition_key_start, partition_key_end).
  bool Contains(std::string_view partition_key) const;

  void ToPB(pb::PartitionPB* pb) const;
  // INVALID_ARGUMENT when the message is not a partition this code could have produced: a
  // negative bucket, a start key that does not begin with the hash buckets, an end key that is
  // neither within the same hash prefix nor its successor, or start >= end.
  static absl::StatusOr<Partition> FromPB(const pb::PartitionPB& pb);

  bool operator==(const Partition& other) const = default;
  // "[buckets (1, 0), keys [0x0000000100000000, 0x0000000100000001))".
  std::string ToString() const;

 private:
  std::vector<int32_t> hash_buckets_;
  std::string partition_key_start_;
  std::string partition_key_end_;
};

// One range partition given as rows over the range columns (only range columns may be set; the
// set columns must be a prefix of the range columns, and a row with no column set is unbounded).
// By default the lower bound is inclusive and the upper bound exclusive, as on the wire for
// RANGE_LOWER_BOUND / RANGE_UPPER_BOUND; EXCLUSIVE_RANGE_LOWER_BOUND and
// INCLUSIVE_RANGE_UPPER_BOUND set the flags. A bound that sets only a prefix of the range columns
// covers every value of the unset ones: inclusive lower (a=5) means a >= 5, exclusive upper (a=5)
// means a < 5, inclusive upper (a=5) means a <= 5, exclusive lower (a=5) means a > 5.
struct RangeBounds {
  PartialRow lower;
  PartialRow upper;
  bool lower_inclusive = true;
  bool upper_inclusive = false;
};

// A range partition as encoded range keys: [lower, upper), empty upper = unbounded (an empty
// lower is the smallest key).
struct RangeKeyInterval {
  std::string lower;
  std::string upper;
  bool operator==(const RangeKeyInterval& other) const = default;
};

// The partitioning of one table: hash levels and range columns, as column indexes into the table
// schema it was built against. Key columns keep their index in every version of a table's schema
// (they can be neither added nor dropped), so a PartitionSchema stays valid across schema
// changes; rows passed in must be built against some version of that table schema.
//
// Immutable after construction; const methods are thread-safe.
class PartitionSchema {
 public:
  struct HashLevel {
    std::vector<int> column_indexes;  // Key columns, in hashing order.
    int32_t num_buckets = 0;
    uint32_t seed = 0;
    bool operator==(const HashLevel& other) const = default;
  };
  // A hash level given by column names (for Create).
  struct HashLevelSpec {
    std::vector<std::string> columns;
    int32_t num_buckets = 0;
    uint32_t seed = 0;
  };

  // A placeholder with no hash levels and no range columns (every row maps to the key "").
  PartitionSchema() = default;

  // The default partitioning: no hash levels, range on all key columns in key order.
  // REQUIRES: `schema` has key columns.
  static PartitionSchema CreateDefault(const Schema& schema);
  // Builds and validates a partitioning; see Validate for the errors.
  static absl::StatusOr<PartitionSchema> Create(const Schema& schema,
                                                const std::vector<HashLevelSpec>& hash_levels,
                                                const std::vector<std::string>& range_columns);
  // Columns are identified by id or by name. An absent range_schema means the default range
  // partitioning on all key columns; a present but empty one means no range partitioning.
  // INVALID_ARGUMENT for an unknown or unidentified column and everything Validate rejects.
  static absl::StatusOr<PartitionSchema> FromPB(const pb::PartitionSchemaPB& pb,
                                                const Schema& schema);
  // Writes columns by id (ids are stable across renames).
  void ToPB(pb::PartitionSchemaPB* pb) const;

  const std::vector<HashLevel>& hash_levels() const { return hash_levels_; }
  const std::vector<int>& range_column_indexes() const { return range_columns_; }

  // --- Partition keys of rows ---------------------------------------------------------------

  // The partition key of a row. REQUIRES: every hash and range column is set in `row`.
  std::string PartitionKey(const PartialRow& row) const;
  // The same for a row buffer in the layout of `schema` (Schema::column_offset).
  std::string PartitionKey(const Schema& schema, const uint8_t* row_data) const;
  // The bucket of `row` in hash level `level`. REQUIRES: the level's columns are set.
  int32_t HashBucket(const PartialRow& row, int level) const;
  // The bucket of one value per column of hash level `level` (cells in row-buffer form, in the
  // level's column order).
  int32_t HashBucketForCells(int level, absl::Span<const void* const> cells) const;
  // Appends the range-key encoding of values for the first cells.size() range columns: a byte
  // prefix of the range key of every row with those leading values. Only the last range column
  // takes the "last" form. REQUIRES: cells.size() <= number of range columns.
  void AppendRangeKeyPrefix(absl::Span<const void* const> cells, std::string* out) const;

  // --- Creating partitions --------------------------------------------------------------------

  // The partitions of a new table: the cross product of every hash bucket combination and the
  // range partitions, sorted by partition key. With no `bounds`, the range partitioning is a
  // single unbounded range. Each split row splits the bound that contains it in two.
  // INVALID_ARGUMENT (naming the offending row) when: a row sets a non-range column or a
  // non-prefix of the range columns; a split row sets no column, lies outside every bound,
  // equals a bound or another split row; a bound is empty (lower >= upper); two bounds overlap;
  // the table has no range columns but split rows or bounded ranges are given; more than
  // kMaxPartitionsPerCall partitions would result. Inputs need not be sorted.
  absl::StatusOr<std::vector<Partition>> CreatePartitions(
      const std::vector<PartialRow>& split_rows, const std::vector<RangeBounds>& bounds) const;

  // For ALTER TABLE ADD RANGE PARTITION: checks that the range does not overlap any range of
  // `existing` (the table's current partitions) and returns its partitions (one per hash bucket
  // combination). INVALID_ARGUMENT for an invalid or empty range or an overlap (naming the
  // overlapped range).
  absl::StatusOr<std::vector<Partition>> PartitionsForNewRange(
      const std::vector<Partition>& existing, const RangeBounds& bounds) const;
  // For ALTER TABLE DROP RANGE PARTITION: the partitions of `existing` whose range is exactly
  // `bounds` (one per hash bucket combination). INVALID_ARGUMENT for an invalid range; NOT_FOUND
  // when no existing range partition matches it exactly.
  absl::StatusOr<std::vector<Partition>> PartitionsForDroppedRange(
      const std::vector<Partition>& existing, const RangeBounds& bounds) const;

  // The range-key interval of `bounds`, validated as for CreatePartitions.
  absl::StatusOr<RangeKeyInterval> EncodeRangeBounds(const RangeBounds& bounds) const;

  // --- Describing -----------------------------------------------------------------------------

  // "HASH (a) PARTITIONS 4, HASH (b, c) PARTITIONS 2 SEED 7, RANGE (a, b)". "RANGE ()" when
  // there are neither hash levels nor range columns (a single partition). Needs the schema for
  // column names.
  std::string ToString(const Schema& schema) const;
  // "HASH BUCKETS (1), RANGE [(a=5), (a=10))" with the range keys decoded; undecodable keys are
  // shown in hex.
  std::string PartitionDebugString(const Partition& partition, const Schema& schema) const;

  bool operator==(const PartitionSchema& other) const = default;

 private:
  // Checks the rules listed in the class comment of Create against `schema`.
  static absl::Status Validate(const Schema& schema, const std::vector<HashLevel>& hash_levels,
                               const std::vector<int>& range_columns);

  // The encoded range key of a bound row (prefix of set range columns; "" when none is set).
  // `what` names the row in errors ("split row", "lower bound").
  absl::StatusOr<std::string> EncodeRangeRow(const PartialRow& row, std::string_view what) const;
  // `bounds` encoded and sorted by lower bound, each with its index in `bounds`.
  // INVALID_ARGUMENT for an invalid bound or two overlapping ones.
  absl::StatusOr<std::vector<std::pair<RangeKeyInterval, size_t>>> EncodeSortedBounds(
      const std::vector<RangeBounds>& bounds) const;
  // Split rows encoded and sorted, each with its index. INVALID_ARGUMENT for an invalid, empty
  // or repeated split row.
  absl::StatusOr<std::vector<std::pair<std::string, size_t>>> EncodeSortedSplits(
      const std::vector<PartialRow>& split_rows) const;
  // The partitions of the cross product of all hash prefixes and `ranges` (sorted).
  absl::StatusOr<std::vector<Partition>> CrossProduct(
      const std::vector<RangeKeyInterval>& ranges) const;
  std::string RangeKeyDebugString(std::string_view key, const Schema& schema) const;

  PartitionSchema(const Schema& schema, std::vector<HashLevel> hash_levels,
                  std::vector<int> range_columns);

  std::vector<HashLevel> hash_levels_;
  std::vector<int> range_columns_;
  // Type and id of every key column of the schema this was built against, by column index.
  // Key columns never change type or id, so these hold for every version of the table schema.
  std::vector<DataType> key_types_;
  std::vector<ColumnId> key_ids_;
};

}  // namespace basalt
