#pragma once

// The tables behind basalt-tsdbd's databases and measurements (docs/tsdb.md "Mapping"):
//   - database `db` exists once CREATE DATABASE made its marker table `db._basalt_database`;
//   - measurement `m` of `db` is table `db.m`: its tags (the tag keys of the first write, sorted)
//     are STRING key columns, then `time` (UNIXTIME_MICROS); fields are nullable columns added
//     as they first appear (float DOUBLE, integer and unsigned INT64, string STRING, boolean
//     BOOL); HASH over the tags, RANGE over time with one partition per UTC day, added for the
//     days writes reach and --tsdb_days_ahead days ahead of today.
// A point identifies its row by (tags, time): writing it again replaces its fields (upsert).
//
// Thread-safe: one mutex over the cached table handles and known day partitions.

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client/client.h"
#include "tsdb/line_protocol.h"

namespace basalt::tsdb {

inline constexpr char kTimeColumn[] = "time";
inline constexpr int64_t kMicrosPerDay = 86400LL * 1000000;
// Times InfluxDB can hold (nanoseconds in an int64), in microseconds.
inline constexpr int64_t kMaxTimeUs = INT64_MAX / 1000;
// Days one write may add partitions for.
inline constexpr size_t kMaxNewDaysPerWrite = 100;

struct CatalogOptions {
  int hash_partitions = 4;
  int num_replicas = 3;
  int days_ahead = 2;
};

class Catalog {
 public:
  Catalog(std::shared_ptr<client::Client> client, CatalogOptions options);

  // INVALID_ARGUMENT for a name that cannot be a database (empty, with '.').
  absl::Status CreateDatabase(const std::string& db);
  // Deletes the database's measurements and its marker.
  absl::Status DropDatabase(const std::string& db);
  absl::StatusOr<bool> DatabaseExists(const std::string& db);
  absl::StatusOr<std::vector<std::string>> Databases();
  absl::StatusOr<std::vector<std::string>> Measurements(const std::string& db);

  // The table of `measurement`, created or altered so that it holds `points` (all of that
  // measurement): their fields as columns, day partitions for their times. INVALID_ARGUMENT for
  // a point that cannot go in: a tag key the table lacks, a field whose type differs from its
  // column's, a tag or field named `time`, a time outside +-kMaxTimeUs; and for points reaching
  // more than kMaxNewDaysPerWrite days without a partition.
  absl::StatusOr<std::shared_ptr<client::Table>> TableForWrite(
      const std::string& db, const std::string& measurement,
      const std::vector<const Point*>& points) ABSL_LOCKS_EXCLUDED(mu_);
  // NOT_FOUND when the measurement has no table.
  absl::StatusOr<std::shared_ptr<client::Table>> TableForRead(const std::string& db,
                                                              const std::string& measurement)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Adds today's and the next days_ahead days' partitions to every cached measurement.
  absl::Status AddPartitionsAhead(int64_t now_us) ABSL_LOCKS_EXCLUDED(mu_);

  // The tag columns of a measurement's table (its key columns before `time`).
  static std::vector<std::string> TagColumns(const client::Schema& schema);
  static std::string TableName(const std::string& db, const std::string& measurement);

 private:
  struct Entry {
    std::shared_ptr<client::Table> table;
    std::set<int64_t> days;  // Day numbers (UTC) known to have a partition.
  };
  absl::StatusOr<Entry*> OpenLocked(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CreateTableLocked(const std::string& name, const std::vector<const Point*>& points)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AddFieldsLocked(const std::string& name, Entry* entry,
                               const std::vector<const Point*>& points)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AddDaysLocked(const std::string& name, Entry* entry, const std::set<int64_t>& days)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<client::Client> client_;
  const CatalogOptions options_;
  absl::Mutex mu_;
  std::map<std::string, Entry> tables_ ABSL_GUARDED_BY(mu_);
};

// The day (UTC) of a time in microseconds, rounding down.
int64_t DayOf(int64_t time_us);

}  // namespace basalt::tsdb
