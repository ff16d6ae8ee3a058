#pragma once

// The InfluxQL subset basalt-tsdbd answers (docs/tsdb.md), parsed into statements. Pure: names
// are resolved against a measurement's table by the executor (query_executor.h).
//
//   SELECT <agg>(<field>|*) [AS alias] [, ...] | * | <field> [, ...] FROM <measurement>
//     [WHERE <cond> [AND <cond> ...]] [GROUP BY time(<interval>[, <offset>]) | <tag> | * [, ...]]
//     [fill(null|none)] [ORDER BY time [ASC|DESC]] [LIMIT <n>] [SLIMIT <n>]
//   <cond>: time <op> '<RFC 3339>' | <integer>[ns|u|ms|s|m|h] | now() [- <duration>]
//         | <tag> = '<value>' | <tag> != '<value>' | (<tag> = '<v>' OR <tag> = '<v>' ...)
//         | <field> <op> <number>
//   SHOW DATABASES | SHOW MEASUREMENTS | SHOW TAG KEYS [FROM m] | SHOW FIELD KEYS [FROM m]
//   CREATE DATABASE <name> | DROP DATABASE <name>
// Several statements may be separated by ';'. Errors are INVALID_ARGUMENT naming the position.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace basalt::tsdb {

struct InfluxCondition {
  enum Kind { kTime, kTagIn, kTagNotEqual, kField };
  Kind kind = kTime;
  std::string name;  // tag or field (empty for kTime)
  // kTime / kField: the comparison; values[0] of kField is the number as written.
  enum Op { kLess, kLessEqual, kEqual, kGreaterEqual, kGreater, kNotEqual };
  Op op = kEqual;
  int64_t time_us = 0;              // kTime
  double number = 0;                // kField
  std::optional<int64_t> integer;   // kField written as an integer (exact beyond 2^53)
  std::vector<std::string> values;  // kTagIn (an OR of equalities), kTagNotEqual
};

struct InfluxSelect {
  struct Item {
    std::string function;  // "mean", "max", ... lower case; empty for a raw field or *
    std::string field;     // "*" for all fields
    std::string alias;
  };
  std::vector<Item> items;
  std::string measurement;
  std::vector<InfluxCondition> where;
  int64_t group_time_us = 0;  // GROUP BY time(...) width; 0: none
  int64_t group_time_offset_us = 0;
  std::vector<std::string> group_tags;
  bool group_all_tags = false;    // GROUP BY *
  bool fill_none = false;         // fill(none): no rows for empty intervals
  bool descending = false;        // ORDER BY time DESC
  std::optional<int64_t> limit;   // points per series
  std::optional<int64_t> slimit;  // series
};

struct InfluxStatement {
  enum Kind {
    kSelect,
    kShowDatabases,
    kShowMeasurements,
    kShowTagKeys,
    kShowFieldKeys,
    kCreateDatabase,
    kDropDatabase
  };
  Kind kind = kSelect;
  InfluxSelect select;
  std::string name;  // database (CREATE/DROP) or measurement (SHOW ... FROM)
};

// Parses `q` (one or more statements). `now_us` is what now() means.
absl::StatusOr<std::vector<InfluxStatement>> ParseInfluxQL(std::string_view q, int64_t now_us);

// A duration literal ("10s", "1m", "1h30m", "500ms", "2d", "1w", "100u", "5ns" rounded down to
// microseconds) in microseconds.
absl::StatusOr<int64_t> ParseInfluxDuration(std::string_view text);

// RFC 3339 ("2016-01-01T00:00:00Z", fractional seconds and offsets allowed) or a date
// ("2016-01-01") to microseconds since the epoch.
absl::StatusOr<int64_t> ParseInfluxTime(std::string_view text);

}  // namespace basalt::tsdb
