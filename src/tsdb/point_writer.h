#pragma once

// Writes the points of one /write request (docs/tsdb.md "Writes"): each measurement's table is
// created or altered first (catalog.h), then every point is an UPSERT of its row (tags, time),
// sent with AUTO_FLUSH_BACKGROUND and flushed before the answer. A point without a timestamp
// gets `now_us`, the same for the whole request (as InfluxDB does).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/client.h"
#include "tsdb/catalog.h"
#include "tsdb/line_protocol.h"

namespace basalt::tsdb {

struct WriteResult {
  int64_t points_written = 0;
  int64_t points_failed = 0;
};

// INVALID_ARGUMENT when a measurement cannot take its points (nothing of that measurement is
// written; measurements before it in the request are); the first write error otherwise, with
// *result counting what was written and what failed.
absl::Status WritePoints(Catalog* catalog, client::Client* client, const std::string& db,
                         const std::vector<Point>& points, int64_t now_us, WriteResult* result);

}  // namespace basalt::tsdb
