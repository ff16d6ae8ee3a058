#pragma once

// Runs parsed InfluxQL statements (influxql.h) against a database's measurements and renders the
// InfluxDB 1.x JSON answer of /query (docs/tsdb.md "Queries"). Every aggregate is an aggregate
// scan (docs/aggregates.md): the tablet servers compute it, only one row per group comes back.
//
// Thread-safe (the catalog is; each statement uses its own scanner).

#include <cstdint>
#include <string>
#include <vector>

#include "tsdb/catalog.h"
#include "tsdb/influxql.h"

namespace basalt::tsdb {

struct QueryOptions {
  std::string db;
  // Times as integers in this unit ("ns", "u", "ms", "s", "m", "h"); empty: RFC 3339 strings.
  std::string epoch;
  int64_t now_us = 0;  // What an open time range ends at (fill).
};

class QueryExecutor {
 public:
  explicit QueryExecutor(Catalog* catalog) : catalog_(catalog) {}

  // {"results":[{"statement_id":0,"series":[...]}, ...]}: each statement's series or its error.
  std::string Execute(const std::vector<InfluxStatement>& statements, const QueryOptions& options);

 private:
  // Appends `"series":[...]` members (or nothing when empty) to *out.
  absl::Status Select(const InfluxSelect& select, const QueryOptions& options, std::string* out);
  absl::Status Show(const InfluxStatement& s, const QueryOptions& options, std::string* out);
  // A raw query (fields and tags of the points themselves), sorted by series and time.
  // RESOURCE_EXHAUSTED past a million points.
  absl::Status SelectPoints(const InfluxSelect& select, const QueryOptions& options,
                            client::Table* table, const std::vector<std::string>& all_tags,
                            const std::vector<std::string>& fields,
                            const std::vector<std::string>& group_tags, std::string* out);

  Catalog* const catalog_;
};

// RFC 3339 with the fraction trimmed, as InfluxDB prints times ("2016-01-01T00:01:00Z").
std::string FormatInfluxTime(int64_t time_us);

}  // namespace basalt::tsdb
