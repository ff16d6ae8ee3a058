#pragma once

// AggregatePlan: what an aggregate scan computes (docs/aggregates.md), validated against a table
// schema, and the three column layouts it implies:
//   - the input columns a tablet server reads (group-by columns, then aggregated columns, each
//     once);
//   - the partial schema: the rows a tablet server returns, one per group: the group values, then
//     each aggregate's partial state (COUNT: count; SUM: sum; AVG: sum and count; MIN/MAX: the
//     value; FIRST/LAST: the encoded primary key of the chosen row and its value);
//   - the result schema: one row per group as the client returns it: the group values, then one
//     column per aggregate.
// Servers and clients build the same plan from the same request fields, so both agree on the
// partial layout; it is a wire contract (docs/aggregates.md "Partial rows").
//
// Immutable after Create; const methods are thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/schema.h"
#include "common/types.h"

namespace basalt {

namespace pb {
class NewScanRequestPB;
}  // namespace pb

// Numbering equals basalt.pb.AggregatePB.Function (proto/tserver.proto).
enum class AggregateFunction : uint8_t {
  kCountAll = 1,  // COUNT(*)
  kCount = 2,     // non-NULL cells
  kSum = 3,
  kMin = 4,
  kMax = 5,
  kAvg = 6,
  kFirst = 7,  // the non-NULL cell of the smallest primary key
  kLast = 8,   // the non-NULL cell of the largest primary key
};
// "count", "sum", ... (lower case).
std::string_view AggregateFunctionName(AggregateFunction f);

struct AggregateSpec {
  AggregateFunction function = AggregateFunction::kCountAll;
  std::string column;  // Empty for kCountAll.
  std::string alias;   // The result column's name; empty: "sum(v)", "count(*)".
};

struct GroupBySpec {
  std::string column;
  // time_bucket(column, width, offset) of a UNIXTIME_MICROS column when width > 0.
  int64_t bucket_width_micros = 0;
  int64_t bucket_offset_micros = 0;
  std::string alias;  // The result column's name; empty: the column's name.
};

class AggregatePlan {
 public:
  // A resolved group-by column.
  struct Group {
    GroupBySpec spec;
    int input = 0;  // Index into input_columns().
    DataType type = DataType::kUnknown;
  };
  // A resolved aggregate.
  struct Aggregate {
    AggregateSpec spec;
    int input = -1;  // Index into input_columns(); -1 for COUNT(*).
    DataType input_type = DataType::kUnknown;
    // SUM and AVG: the partial sum's type, DOUBLE (floating point) or DECIMAL128 (integers and
    // decimals, exact).
    DataType sum_type = DataType::kUnknown;
    int partial = 0;  // First column of its state in partial_schema().
    int num_partial = 0;
  };

  AggregatePlan() = default;

  // INVALID_ARGUMENT naming the aggregate or group for: no aggregates; an unknown column; a
  // function the column's type does not support (SUM/AVG need a number: an integer, FLOAT,
  // DOUBLE or DECIMAL); a time bucket on a column that is not UNIXTIME_MICROS, or with a width
  // that is not positive; two result columns of the same name; too many columns.
  static absl::StatusOr<AggregatePlan> Create(const Schema& table, std::vector<GroupBySpec> groups,
                                              std::vector<AggregateSpec> aggregates);
  // From a scan request's `group_by` and `aggregates` (errors name the request field).
  static absl::StatusOr<AggregatePlan> FromPB(const Schema& table,
                                              const pb::NewScanRequestPB& request);
  // Sets the request's `group_by` and `aggregates` (aliases are the client's own: not sent).
  void ToPB(pb::NewScanRequestPB* request) const;

  const std::vector<Group>& groups() const { return groups_; }
  const std::vector<Aggregate>& aggregates() const { return aggregates_; }
  // Table columns the aggregation reads, each once.
  const std::vector<std::string>& input_columns() const { return input_columns_; }
  const std::vector<DataType>& input_types() const { return input_types_; }
  // Whether FIRST or LAST needs each row's encoded primary key.
  bool needs_key() const { return needs_key_; }
  const Schema& partial_schema() const { return partial_schema_; }
  const Schema& result_schema() const { return result_schema_; }
  // "count(*), sum(v) GROUP BY host, time_bucket(ts, 60000000)".
  std::string ToString() const;

 private:
  std::vector<Group> groups_;
  std::vector<Aggregate> aggregates_;
  std::vector<std::string> input_columns_;
  std::vector<DataType> input_types_;
  bool needs_key_ = false;
  Schema partial_schema_;
  Schema result_schema_;
};

}  // namespace basalt
