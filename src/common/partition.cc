#include "common/partition.h"

#include <xxhash.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_join.h"
#include "common/coding.h"
#include "common/key_encoder.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "proto/common.pb.h"

namespace basalt {

namespace {

constexpr size_t kHashBucketBytes = 4;

std::string HexKey(std::string_view key) {
  return key.empty() ? "<empty>" : "0x" + absl::BytesToHexString(ToAbsl(key));
}

// Whether [a.lower, a.upper) and [b.lower, b.upper) share a key (empty upper = unbounded).
bool Overlaps(const RangeKeyInterval& a, const RangeKeyInterval& b) {
  return (b.upper.empty() || a.lower < b.upper) && (a.upper.empty() || b.lower < a.upper);
}

std::string RowOrUnbounded(const PartialRow& row) {
  return row.AnySet() ? row.ToString() : "(unbounded)";
}

std::string DescribeBounds(const RangeBounds& b) {
  return StrCat(b.lower_inclusive ? "[" : "(", RowOrUnbounded(b.lower), ", ",
                RowOrUnbounded(b.upper), b.upper_inclusive ? "]" : ")");
}

}  // namespace

void AppendHashBucket(int32_t bucket, std::string* out) {
  DCHECK_GE(bucket, 0);
  const uint32_t b = static_cast<uint32_t>(bucket);
  const char bytes[kHashBucketBytes] = {static_cast<char>(b >> 24), static_cast<char>(b >> 16),
                                        static_cast<char>(b >> 8), static_cast<char>(b)};
  out->append(bytes, kHashBucketBytes);
}

std::vector<HashPrefix> HashPrefixes(const std::vector<std::vector<int32_t>>& buckets_per_level) {
  std::vector<HashPrefix> out(1);
  for (const std::vector<int32_t>& level : buckets_per_level) {
    std::vector<HashPrefix> next;
    next.reserve(out.size() * level.size());
    for (const HashPrefix& p : out) {
      for (int32_t bucket : level) {
        HashPrefix q = p;
        q.buckets.push_back(bucket);
        AppendHashBucket(bucket, &q.key);
        next.push_back(std::move(q));
      }
    }
    out = std::move(next);
  }
  return out;
}

std::string PartitionKeyEnd(std::string_view hash_prefix, std::string_view range_key_end) {
  if (range_key_end.empty()) return PrefixSuccessor(hash_prefix);
  return StrCat(hash_prefix, range_key_end);
}

// ---------------------------------------------------------------------------------------------
// Partition

Partition::Partition(std::vector<int32_t> hash_buckets, std::string partition_key_start,
                     std::string partition_key_end)
    : hash_buckets_(std::move(hash_buckets)),
      partition_key_start_(std::move(partition_key_start)),
      partition_key_end_(std::move(partition_key_end)) {
  DCHECK_GE(partition_key_start_.size(), hash_buckets_.size() * kHashBucketBytes);
}

std::string_view Partition::range_key_start() const {
  return std::string_view(partition_key_start_).substr(hash_buckets_.size() * kHashBucketBytes);
}

std::string_view Partition::range_key_end() const {
  const size_t n = hash_buckets_.size() * kHashBucketBytes;
  if (n == 0) return partition_key_end_;
  // Within the same hash prefix, the end carries the range key; otherwise it is the successor of
  // the prefix and the range is unbounded.
  if (partition_key_end_.size() > n &&
      partition_key_end_.compare(0, n, partition_key_start_, 0, n) == 0) {
    return std::string_view(partition_key_end_).substr(n);
  }
  return {};
}

bool Partition::Contains(std::string_view partition_key) const {
  return partition_key >= partition_key_start_ &&
         (partition_key_end_.empty() || partition_key < partition_key_end_);
}

void Partition::ToPB(pb::PartitionPB* pb) const {
  pb->Clear();
  for (int32_t b : hash_buckets_) pb->add_hash_buckets(b);
  pb->set_partition_key_start(partition_key_start_);
  pb->set_partition_key_end(partition_key_end_);
}

absl::StatusOr<Partition> Partition::FromPB(const pb::PartitionPB& pb) {
  std::string prefix;
  for (int32_t b : pb.hash_buckets()) {
    if (b < 0) return absl::InvalidArgumentError(StrCat("partition has negative hash bucket ", b));
    AppendHashBucket(b, &prefix);
  }
  const std::string& start = pb.partition_key_start();
  const std::string& end = pb.partition_key_end();
  if (start.compare(0, prefix.size(), prefix) != 0) {
    return absl::InvalidArgumentError(StrCat("partition start key ", HexKey(start),
                                             " does not begin with its hash buckets ",
                                             HexKey(prefix)));
  }
  const bool end_in_prefix =
      end.size() > prefix.size() && end.compare(0, prefix.size(), prefix) == 0;
  if (!prefix.empty() && !end_in_prefix && end != PrefixSuccessor(prefix)) {
    return absl::InvalidArgumentError(StrCat("partition end key ", HexKey(end),
                                             " lies outside its hash buckets ", HexKey(prefix)));
  }
  if (!end.empty() && start >= end) {
    return absl::InvalidArgumentError(
        StrCat("partition start key ", HexKey(start), " is not below its end key ", HexKey(end)));
  }
  return Partition(std::vector<int32_t>(pb.hash_buckets().begin(), pb.hash_buckets().end()), start,
                   end);
}

std::string Partition::ToString() const {
  return StrCat("[buckets (", absl::StrJoin(hash_buckets_, ", "), "), keys [",
                HexKey(partition_key_start_), ", ", HexKey(partition_key_end_), "))");
}

// ---------------------------------------------------------------------------------------------
// PartitionSchema: construction

PartitionSchema::PartitionSchema(const Schema& schema, std::vector<HashLevel> hash_levels,
                                 std::vector<int> range_columns)
    : hash_levels_(std::move(hash_levels)), range_columns_(std::move(range_columns)) {
  for (int i = 0; i < schema.num_key_columns(); i++) {
    key_types_.push_back(schema.column(i).type());
    key_ids_.push_back(schema.column_id(i));
  }
}

PartitionSchema PartitionSchema::CreateDefault(const Schema& schema) {
  CHECK_GT(schema.num_key_columns(), 0);
  std::vector<int> range(schema.num_key_columns());
  for (int i = 0; i < schema.num_key_columns(); i++) range[i] = i;
  return PartitionSchema(schema, {}, std::move(range));
}

absl::Status PartitionSchema::Validate(const Schema& schema,
                                       const std::vector<HashLevel>& hash_levels,
                                       const std::vector<int>& range_columns) {
  auto check_key = [&](int idx, std::string_view where) -> absl::Status {
    if (!schema.is_key_column(idx)) {
      return absl::InvalidArgumentError(
          StrCat(where, " column '", schema.column(idx).name(), "' is not a primary key column"));
    }
    return absl::OkStatus();
  };
  std::set<int> hashed;
  for (size_t l = 0; l < hash_levels.size(); l++) {
    const HashLevel& level = hash_levels[l];
    const std::string where = StrCat("hash level ", l);
    if (level.column_indexes.empty()) {
      return absl::InvalidArgumentError(StrCat(where, " has no columns"));
    }
    if (level.num_buckets < 2) {
      return absl::InvalidArgumentError(
          StrCat(where, " has ", level.num_buckets, " buckets; at least 2 are required"));
    }
    std::set<int> in_level;
    for (int idx : level.column_indexes) {
      BASALT_RETURN_IF_ERROR(check_key(idx, where));
      const std::string& name = schema.column(idx).name();
      if (!in_level.insert(idx).second) {
        return absl::InvalidArgumentError(StrCat(where, " lists column '", name, "' twice"));
      }
      if (!hashed.insert(idx).second) {
        return absl::InvalidArgumentError(
            StrCat("column '", name, "' appears in more than one hash level"));
      }
    }
  }
  std::set<int> in_range;
  for (int idx : range_columns) {
    BASALT_RETURN_IF_ERROR(check_key(idx, "range partition"));
    if (!in_range.insert(idx).second) {
      return absl::InvalidArgumentError(
          StrCat("range partition lists column '", schema.column(idx).name(), "' twice"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<PartitionSchema> PartitionSchema::Create(
    const Schema& schema, const std::vector<HashLevelSpec>& hash_levels,
    const std::vector<std::string>& range_columns) {
  auto resolve = [&](const std::string& name) -> absl::StatusOr<int> {
    int idx = schema.find_column(name);
    if (idx < 0) {
      return absl::InvalidArgumentError(StrCat("partition column '", name, "' does not exist"));
    }
    return idx;
  };
  std::vector<HashLevel> levels;
  for (const HashLevelSpec& spec : hash_levels) {
    HashLevel level{{}, spec.num_buckets, spec.seed};
    for (const std::string& name : spec.columns) {
      BASALT_ASSIGN_OR_RETURN(int idx, resolve(name));
      level.column_indexes.push_back(idx);
    }
    levels.push_back(std::move(level));
  }
  std::vector<int> range;
  for (const std::string& name : range_columns) {
    BASALT_ASSIGN_OR_RETURN(int idx, resolve(name));
    range.push_back(idx);
  }
  BASALT_RETURN_IF_ERROR(Validate(schema, levels, range));
  return PartitionSchema(schema, std::move(levels), std::move(range));
}

namespace {

absl::StatusOr<std::vector<int>> ResolveColumns(
    const Schema& schema,
    const google::protobuf::RepeatedPtrField<pb::PartitionSchemaPB::ColumnIdentifierPB>& ids) {
  std::vector<int> out;
  for (const auto& id : ids) {
    int idx = -1;
    switch (id.identifier_case()) {
      case pb::PartitionSchemaPB::ColumnIdentifierPB::kId:
        idx = schema.find_column_by_id(id.id());
        if (idx < 0) {
          return absl::InvalidArgumentError(
              StrCat("partition column with id ", id.id(), " does not exist"));
        }
        break;
      case pb::PartitionSchemaPB::ColumnIdentifierPB::kName:
        idx = schema.find_column(id.name());
        if (idx < 0) {
          return absl::InvalidArgumentError(
              StrCat("partition column '", id.name(), "' does not exist"));
        }
        break;
      default:
        return absl::InvalidArgumentError("partition column identifier has neither id nor name");
    }
    out.push_back(idx);
  }
  return out;
}

}  // namespace

absl::StatusOr<PartitionSchema> PartitionSchema::FromPB(const pb::PartitionSchemaPB& pb,
                                                        const Schema& schema) {
  std::vector<HashLevel> levels;
  for (const auto& h : pb.hash_schema()) {
    BASALT_ASSIGN_OR_RETURN(std::vector<int> cols, ResolveColumns(schema, h.columns()));
    levels.push_back(HashLevel{std::move(cols), h.num_buckets(), h.seed()});
  }
  std::vector<int> range;
  if (pb.has_range_schema()) {
    BASALT_ASSIGN_OR_RETURN(range, ResolveColumns(schema, pb.range_schema().columns()));
  } else {
    for (int i = 0; i < schema.num_key_columns(); i++) range.push_back(i);
  }
  BASALT_RETURN_IF_ERROR(Validate(schema, levels, range));
  return PartitionSchema(schema, std::move(levels), std::move(range));
}

void PartitionSchema::ToPB(pb::PartitionSchemaPB* pb) const {
  pb->Clear();
  for (const HashLevel& level : hash_levels_) {
    auto* h = pb->add_hash_schema();
    for (int idx : level.column_indexes) h->add_columns()->set_id(key_ids_[idx]);
    h->set_num_buckets(level.num_buckets);
    h->set_seed(level.seed);
  }
  auto* range = pb->mutable_range_schema();
  for (int idx : range_columns_) range->add_columns()->set_id(key_ids_[idx]);
}

// ---------------------------------------------------------------------------------------------
// PartitionSchema: keys of rows

int32_t PartitionSchema::HashBucketForCells(int level, absl::Span<const void* const> cells) const {
  const HashLevel& h = hash_levels_[level];
  DCHECK_EQ(cells.size(), h.column_indexes.size());
  // Reused: a row's hashed key cells (ten string tags of a TSBS point) outgrow the inline
  // buffer, and this runs for every row a client writes.
  thread_local std::string encoded;
  encoded.clear();
  for (size_t i = 0; i < cells.size(); i++) {
    EncodeKeyCell(key_types_[h.column_indexes[i]], cells[i], i + 1 == cells.size(), &encoded);
  }
  const uint64_t hash = XXH64(encoded.data(), encoded.size(), h.seed);
  return static_cast<int32_t>(hash % static_cast<uint64_t>(h.num_buckets));
}

void PartitionSchema::AppendRangeKeyPrefix(absl::Span<const void* const> cells,
                                           std::string* out) const {
  DCHECK_LE(cells.size(), range_columns_.size());
  for (size_t i = 0; i < cells.size(); i++) {
    EncodeKeyCell(key_types_[range_columns_[i]], cells[i], i + 1 == range_columns_.size(), out);
  }
}

namespace {

// Collects the cells of `column_indexes` from a row buffer in `schema`'s layout.
absl::Span<const void* const> GatherCells(const Schema& schema, const uint8_t* row_data,
                                          const std::vector<int>& column_indexes,
                                          const void** cells) {
  DCHECK_LE(column_indexes.size(), static_cast<size_t>(kMaxKeyColumns));
  for (size_t i = 0; i < column_indexes.size(); i++) {
    cells[i] = row_data + schema.column_offset(column_indexes[i]);
  }
  return absl::MakeConstSpan(cells, column_indexes.size());
}

}  // namespace

std::string PartitionSchema::PartitionKey(const Schema& schema, const uint8_t* row_data) const {
  std::string key;
  const void* cells[kMaxKeyColumns];
  for (size_t l = 0; l < hash_levels_.size(); l++) {
    AppendHashBucket(
        HashBucketForCells(l, GatherCells(schema, row_data, hash_levels_[l].column_indexes, cells)),
        &key);
  }
  AppendRangeKeyPrefix(GatherCells(schema, row_data, range_columns_, cells), &key);
  return key;
}

std::string PartitionSchema::PartitionKey(const PartialRow& row) const {
#ifndef NDEBUG
  for (int i = 0; i < static_cast<int>(key_types_.size()); i++) {
    DCHECK_EQ(row.schema()->column_id(i), key_ids_[i]) << "row of another table";
  }
  for (const HashLevel& h : hash_levels_) {
    for (int idx : h.column_indexes) DCHECK(row.IsSet(idx) && !row.IsNull(idx));
  }
  for (int idx : range_columns_) DCHECK(row.IsSet(idx) && !row.IsNull(idx));
#endif
  return PartitionKey(*row.schema(), row.row_data());
}

int32_t PartitionSchema::HashBucket(const PartialRow& row, int level) const {
  const void* cells[kMaxKeyColumns];
  for (int idx : hash_levels_[level].column_indexes) DCHECK(row.IsSet(idx) && !row.IsNull(idx));
  return HashBucketForCells(
      level, GatherCells(*row.schema(), row.row_data(), hash_levels_[level].column_indexes, cells));
}

// ---------------------------------------------------------------------------------------------
// PartitionSchema: range bounds and creating partitions

absl::StatusOr<std::string> PartitionSchema::EncodeRangeRow(const PartialRow& row,
                                                            std::string_view what) const {
  const Schema& schema = *row.schema();
  auto range_names = [&] {
    std::vector<std::string> names;
    for (int idx : range_columns_) names.push_back(schema.column(idx).name());
    return StrCat("(", absl::StrJoin(names, ", "), ")");
  };
  for (int i = 0; i < schema.num_columns(); i++) {
    if (row.IsSet(i) &&
        std::find(range_columns_.begin(), range_columns_.end(), i) == range_columns_.end()) {
      return absl::InvalidArgumentError(
          StrCat(what, " ", row.ToString(), " sets column '", schema.column(i).name(),
                 "', which is not a range partition column; range columns: ", range_names()));
    }
  }
  const void* cells[kMaxKeyColumns];
  size_t num_set = 0;
  while (num_set < range_columns_.size() && row.IsSet(range_columns_[num_set])) {
    const int idx = range_columns_[num_set];
    if (row.IsNull(idx)) {
      return absl::InvalidArgumentError(
          StrCat(what, " ", row.ToString(), " sets '", schema.column(idx).name(), "' to NULL"));
    }
    cells[num_set++] = row.cell(idx);
  }
  for (size_t i = num_set; i < range_columns_.size(); i++) {
    if (row.IsSet(range_columns_[i])) {
      return absl::InvalidArgumentError(
          StrCat(what, " ", row.ToString(), " sets '", schema.column(range_columns_[i]).name(),
                 "' but not '", schema.column(range_columns_[num_set]).name(),
                 "': it must set a leading prefix of the range columns ", range_names()));
    }
  }
  std::string key;
  AppendRangeKeyPrefix(absl::MakeConstSpan(cells, num_set), &key);
  return key;
}

namespace {

// The smallest range key above every key that `key` (a bound setting a prefix of the range
// columns, or all of them) covers. "" when there is none. A complete key whose last column is
// variable-length is followed by key + '\0'; otherwise every covered key starts with `key`.
std::string RangeKeySuccessor(const std::string& key, bool complete, bool last_is_var_len) {
  return complete && last_is_var_len ? KeySuccessor(key) : PrefixSuccessor(key);
}

}  // namespace

absl::StatusOr<RangeKeyInterval> PartitionSchema::EncodeRangeBounds(
    const RangeBounds& bounds) const {
  RangeKeyInterval out;
  BASALT_ASSIGN_OR_RETURN(out.lower, EncodeRangeRow(bounds.lower, "range lower bound"));
  BASALT_ASSIGN_OR_RETURN(out.upper, EncodeRangeRow(bounds.upper, "range upper bound"));
  const bool last_var_len = !range_columns_.empty() &&
                            GetTypeInfo(key_types_[range_columns_.back()]).is_variable_length();
  auto complete = [&](const PartialRow& row) {
    return !range_columns_.empty() && row.IsSet(range_columns_.back());
  };
  // A set bound may still encode to "" (a last STRING column set to ""), so test AnySet().
  if (bounds.lower.AnySet() && !bounds.lower_inclusive) {
    out.lower = RangeKeySuccessor(out.lower, complete(bounds.lower), last_var_len);
    if (out.lower.empty()) {
      return absl::InvalidArgumentError(StrCat("range ", DescribeBounds(bounds),
                                               " is empty: nothing lies above its lower bound"));
    }
  }
  if (bounds.upper.AnySet()) {
    if (bounds.upper_inclusive) {
      out.upper = RangeKeySuccessor(out.upper, complete(bounds.upper), last_var_len);
    } else if (out.upper.empty()) {
      return absl::InvalidArgumentError(StrCat("range ", DescribeBounds(bounds),
                                               " is empty: nothing lies below its upper bound"));
    }
  }
  if (!out.upper.empty() && out.lower >= out.upper) {
    return absl::InvalidArgumentError(StrCat("range ", DescribeBounds(bounds),
                                             " is empty: its lower bound is not below its upper "
                                             "bound"));
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<RangeKeyInterval, size_t>>>
PartitionSchema::EncodeSortedBounds(const std::vector<RangeBounds>& bounds) const {
  std::vector<std::pair<RangeKeyInterval, size_t>> ranges;
  for (size_t i = 0; i < bounds.size(); i++) {
    BASALT_ASSIGN_OR_RETURN(RangeKeyInterval r, EncodeRangeBounds(bounds[i]));
    ranges.emplace_back(std::move(r), i);
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const auto& a, const auto& b) { return a.first.lower < b.first.lower; });
  for (size_t i = 1; i < ranges.size(); i++) {
    if (Overlaps(ranges[i - 1].first, ranges[i].first)) {
      return absl::InvalidArgumentError(
          StrCat("range partitions ", DescribeBounds(bounds[ranges[i - 1].second]), " and ",
                 DescribeBounds(bounds[ranges[i].second]), " overlap"));
    }
  }
  return ranges;
}

absl::StatusOr<std::vector<std::pair<std::string, size_t>>> PartitionSchema::EncodeSortedSplits(
    const std::vector<PartialRow>& split_rows) const {
  std::vector<std::pair<std::string, size_t>> splits;
  for (size_t i = 0; i < split_rows.size(); i++) {
    BASALT_ASSIGN_OR_RETURN(std::string key, EncodeRangeRow(split_rows[i], "split row"));
    if (!split_rows[i].AnySet()) {
      return absl::InvalidArgumentError(
          StrCat("split row ", split_rows[i].ToString(), " sets no range partition column"));
    }
    splits.emplace_back(std::move(key), i);
  }
  std::sort(splits.begin(), splits.end());
  for (size_t i = 1; i < splits.size(); i++) {
    if (splits[i - 1].first == splits[i].first) {
      return absl::InvalidArgumentError(
          StrCat("split rows ", split_rows[splits[i - 1].second].ToString(), " and ",
                 split_rows[splits[i].second].ToString(), " are equal"));
    }
  }
  return splits;
}

absl::StatusOr<std::vector<Partition>> PartitionSchema::CreatePartitions(
    const std::vector<PartialRow>& split_rows, const std::vector<RangeBounds>& bounds) const {
  BASALT_ASSIGN_OR_RETURN(auto ranges, EncodeSortedBounds(bounds));
  if (bounds.empty()) ranges.emplace_back(RangeKeyInterval{}, 0);
  BASALT_ASSIGN_OR_RETURN(auto splits, EncodeSortedSplits(split_rows));
  auto outside = [&](size_t s) {
    return absl::InvalidArgumentError(StrCat("split row ", split_rows[splits[s].second].ToString(),
                                             " lies outside every range partition"));
  };
  // Cut each range at the split rows inside it. Both lists are sorted, so one pass suffices.
  std::vector<RangeKeyInterval> pieces;
  size_t s = 0;
  for (const auto& [range, bound_index] : ranges) {
    std::string lower = range.lower;
    for (; s < splits.size() && (range.upper.empty() || splits[s].first < range.upper); s++) {
      const std::string& split = splits[s].first;
      if (split < range.lower) return outside(s);
      if (split == range.lower) {
        return absl::InvalidArgumentError(
            StrCat("split row ", split_rows[splits[s].second].ToString(),
                   " equals the lower bound of range partition ",
                   bounds.empty() ? "(unbounded)" : DescribeBounds(bounds[bound_index])));
      }
      pieces.push_back({std::move(lower), split});
      lower = split;
    }
    pieces.push_back({std::move(lower), range.upper});
  }
  if (s < splits.size()) return outside(s);
  return CrossProduct(pieces);
}

absl::StatusOr<std::vector<Partition>> PartitionSchema::CrossProduct(
    const std::vector<RangeKeyInterval>& ranges) const {
  const auto too_many = absl::InvalidArgumentError(
      StrCat("the table would have more than ", kMaxPartitionsPerCall,
             " partitions (hash bucket combinations times range partitions)"));
  int64_t count = static_cast<int64_t>(ranges.size());
  if (count > kMaxPartitionsPerCall) return too_many;
  std::vector<std::vector<int32_t>> all_buckets;
  for (const HashLevel& level : hash_levels_) {
    count *= level.num_buckets;  // No overflow: count <= kMaxPartitionsPerCall before this.
    if (count > kMaxPartitionsPerCall) return too_many;
    std::vector<int32_t> buckets(level.num_buckets);
    for (int32_t b = 0; b < level.num_buckets; b++) buckets[b] = b;
    all_buckets.push_back(std::move(buckets));
  }
  std::vector<Partition> out;
  out.reserve(count);
  for (const HashPrefix& prefix : HashPrefixes(all_buckets)) {
    for (const RangeKeyInterval& r : ranges) {
      out.emplace_back(prefix.buckets, StrCat(prefix.key, r.lower),
                       PartitionKeyEnd(prefix.key, r.upper));
    }
  }
  return out;
}

namespace {

// The distinct range intervals of `partitions`, sorted by lower bound.
std::vector<RangeKeyInterval> DistinctRanges(const std::vector<Partition>& partitions) {
  std::vector<RangeKeyInterval> out;
  for (const Partition& p : partitions) {
    out.push_back({std::string(p.range_key_start()), std::string(p.range_key_end())});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.lower, a.upper) < std::tie(b.lower, b.upper);
  });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

absl::StatusOr<std::vector<Partition>> PartitionSchema::PartitionsForNewRange(
    const std::vector<Partition>& existing, const RangeBounds& bounds) const {
  BASALT_ASSIGN_OR_RETURN(RangeKeyInterval range, EncodeRangeBounds(bounds));
  const Schema& schema = *bounds.lower.schema();
  for (const RangeKeyInterval& r : DistinctRanges(existing)) {
    if (Overlaps(r, range)) {
      return absl::InvalidArgumentError(StrCat(
          "new range partition ", DescribeBounds(bounds), " overlaps existing range partition [",
          RangeKeyDebugString(r.lower, schema), ", ", RangeKeyDebugString(r.upper, schema), ")"));
    }
  }
  return CrossProduct({range});
}

absl::StatusOr<std::vector<Partition>> PartitionSchema::PartitionsForDroppedRange(
    const std::vector<Partition>& existing, const RangeBounds& bounds) const {
  BASALT_ASSIGN_OR_RETURN(RangeKeyInterval range, EncodeRangeBounds(bounds));
  std::vector<Partition> out;
  for (const Partition& p : existing) {
    if (p.range_key_start() == range.lower && p.range_key_end() == range.upper) out.push_back(p);
  }
  if (out.empty()) {
    return absl::NotFoundError(StrCat("no range partition ", DescribeBounds(bounds),
                                      " exists; a dropped range must "
                                      "match an existing range partition exactly"));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// PartitionSchema: describing

std::string PartitionSchema::ToString(const Schema& schema) const {
  auto names = [&](const std::vector<int>& idxs) {
    std::vector<std::string> n;
    for (int idx : idxs) n.push_back(schema.column(idx).name());
    return absl::StrJoin(n, ", ");
  };
  std::vector<std::string> parts;
  for (const HashLevel& h : hash_levels_) {
    std::string part = StrCat("HASH (", names(h.column_indexes), ") PARTITIONS ", h.num_buckets);
    if (h.seed != 0) StrAppend(&part, " SEED ", h.seed);
    parts.push_back(std::move(part));
  }
  if (!range_columns_.empty() || hash_levels_.empty()) {
    parts.push_back(StrCat("RANGE (", names(range_columns_), ")"));
  }
  return absl::StrJoin(parts, ", ");
}

std::string PartitionSchema::RangeKeyDebugString(std::string_view key, const Schema& schema) const {
  std::string_view input = key;
  std::vector<std::string> cells;
  for (size_t i = 0; i < range_columns_.size() && !input.empty(); i++) {
    const int idx = range_columns_[i];
    auto value = DecodeKeyCell(key_types_[idx], i + 1 == range_columns_.size(), &input);
    if (!value.ok()) return HexKey(key);
    const ColumnSchema& col = schema.column(idx);
    cells.push_back(StrCat(col.name(), "=",
                           col.type_info().is_decimal()
                               ? FormatDecimal(value->int128_value(), col.attributes().scale)
                               : value->ToString()));
  }
  if (!input.empty()) return HexKey(key);
  return StrCat("(", absl::StrJoin(cells, ", "), ")");
}

std::string PartitionSchema::PartitionDebugString(const Partition& partition,
                                                  const Schema& schema) const {
  std::vector<std::string> parts;
  if (!hash_levels_.empty()) {
    parts.push_back(StrCat("HASH BUCKETS (", absl::StrJoin(partition.hash_buckets(), ", "), ")"));
  }
  if (!range_columns_.empty()) {
    const std::string_view lower = partition.range_key_start();
    const std::string_view upper = partition.range_key_end();
    parts.push_back(StrCat("RANGE [",
                           lower.empty() ? "<start>" : RangeKeyDebugString(lower, schema), ", ",
                           upper.empty() ? "<end>" : RangeKeyDebugString(upper, schema), ")"));
  }
  if (parts.empty()) return "UNPARTITIONED";
  return absl::StrJoin(parts, ", ");
}

}  // namespace basalt
