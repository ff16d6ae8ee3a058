#include "tsdb/catalog.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt::tsdb {

namespace {

using client::ColumnSchema;

constexpr char kMarker[] = "_basalt_database";

ColumnSchema::DataType ColumnTypeOf(FieldValue::Type t) {
  switch (t) {
    case FieldValue::kFloat:
      return ColumnSchema::DOUBLE;
    case FieldValue::kInteger:
    case FieldValue::kUnsigned:
      return ColumnSchema::INT64;
    case FieldValue::kString:
      return ColumnSchema::STRING;
    case FieldValue::kBool:
      return ColumnSchema::BOOL;
  }
  return ColumnSchema::DOUBLE;
}

std::string_view InfluxTypeName(ColumnSchema::DataType t) {
  switch (t) {
    case ColumnSchema::DOUBLE:
      return "float";
    case ColumnSchema::INT64:
      return "integer";
    case ColumnSchema::STRING:
      return "string";
    case ColumnSchema::BOOL:
      return "boolean";
    default:
      return "unknown";
  }
}

absl::Status CheckDatabaseName(const std::string& db) {
  if (db.empty() || db.find('.') != std::string::npos) {
    return absl::InvalidArgumentError(StrCat("invalid database name '", db, "'"));
  }
  return absl::OkStatus();
}

// The day's range partition bounds on `time`.
absl::Status DayBounds(const client::Schema& schema, int64_t day,
                       std::unique_ptr<client::PartialRow>* lower,
                       std::unique_ptr<client::PartialRow>* upper) {
  *lower = schema.NewRow();
  *upper = schema.NewRow();
  BASALT_RETURN_IF_ERROR((*lower)->SetUnixTimeMicros(kTimeColumn, day * kMicrosPerDay));
  return (*upper)->SetUnixTimeMicros(kTimeColumn, (day + 1) * kMicrosPerDay);
}

bool IsOverlap(const absl::Status& s) {
  return absl::StrContains(s.message(), "overlaps existing range partition");
}

}  // namespace

int64_t DayOf(int64_t time_us) {
  return time_us / kMicrosPerDay - (time_us % kMicrosPerDay < 0 ? 1 : 0);
}

std::string Catalog::TableName(const std::string& db, const std::string& measurement) {
  return StrCat(db, ".", measurement);
}

std::vector<std::string> Catalog::TagColumns(const client::Schema& schema) {
  std::vector<std::string> tags;
  for (int i = 0; i < schema.num_key_columns(); i++) {
    if (schema.Column(i).name() != kTimeColumn) tags.push_back(schema.Column(i).name());
  }
  return tags;
}

Catalog::Catalog(std::shared_ptr<client::Client> client, CatalogOptions options)
    : client_(std::move(client)), options_(options) {}

absl::Status Catalog::CreateDatabase(const std::string& db) {
  BASALT_RETURN_IF_ERROR(CheckDatabaseName(db));
  BASALT_ASSIGN_OR_RETURN(bool exists, DatabaseExists(db));
  if (exists) return absl::OkStatus();  // As InfluxDB: creating an existing database is fine.
  client::SchemaBuilder b;
  b.AddColumn("k")->Type(ColumnSchema::INT32)->NotNull()->PrimaryKey();
  client::Schema schema;
  BASALT_RETURN_IF_ERROR(b.Build(&schema));
  absl::Status s = client_->NewTableCreator()
                       ->table_name(TableName(db, kMarker))
                       .schema(&schema)
                       .num_replicas(options_.num_replicas)
                       .Create();
  if (absl::IsAlreadyExists(s)) return absl::OkStatus();  // Created meanwhile.
  return s;
}

absl::Status Catalog::DropDatabase(const std::string& db) {
  BASALT_RETURN_IF_ERROR(CheckDatabaseName(db));
  std::vector<std::string> tables;
  BASALT_RETURN_IF_ERROR(client_->ListTables(&tables));
  const std::string prefix = StrCat(db, ".");
  {
    absl::MutexLock l(&mu_);
    for (auto it = tables_.begin(); it != tables_.end();) {
      it = absl::StartsWith(it->first, prefix) ? tables_.erase(it) : std::next(it);
    }
  }
  for (const std::string& t : tables) {
    if (!absl::StartsWith(t, prefix)) continue;
    absl::Status s = client_->DeleteTable(t);
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Catalog::DatabaseExists(const std::string& db) {
  bool exists = false;
  BASALT_RETURN_IF_ERROR(client_->TableExists(TableName(db, kMarker), &exists));
  return exists;
}

absl::StatusOr<std::vector<std::string>> Catalog::Databases() {
  std::vector<std::string> tables;
  BASALT_RETURN_IF_ERROR(client_->ListTables(&tables));
  std::vector<std::string> dbs;
  const std::string suffix = StrCat(".", kMarker);
  for (const std::string& t : tables) {
    if (absl::EndsWith(t, suffix)) dbs.push_back(t.substr(0, t.size() - suffix.size()));
  }
  std::sort(dbs.begin(), dbs.end());
  return dbs;
}

absl::StatusOr<std::vector<std::string>> Catalog::Measurements(const std::string& db) {
  std::vector<std::string> tables;
  BASALT_RETURN_IF_ERROR(client_->ListTables(&tables));
  std::vector<std::string> out;
  const std::string prefix = StrCat(db, ".");
  for (const std::string& t : tables) {
    if (!absl::StartsWith(t, prefix)) continue;
    std::string m = t.substr(prefix.size());
    if (m != kMarker) out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<Catalog::Entry*> Catalog::OpenLocked(const std::string& name) {
  auto it = tables_.find(name);
  if (it != tables_.end()) return &it->second;
  std::shared_ptr<client::Table> table;
  BASALT_RETURN_IF_ERROR(client_->OpenTable(name, &table));
  Entry& e = tables_[name];
  e.table = std::move(table);
  return &e;
}

absl::Status Catalog::CreateTableLocked(const std::string& name,
                                        const std::vector<const Point*>& points) {
  std::set<std::string> tags;
  for (const Point* p : points) {
    for (const auto& [k, v] : p->tags) tags.insert(k);
  }
  client::SchemaBuilder b;
  std::vector<std::string> key(tags.begin(), tags.end());
  for (const std::string& t : key) b.AddColumn(t)->Type(ColumnSchema::STRING)->NotNull();
  b.AddColumn(kTimeColumn)->Type(ColumnSchema::UNIXTIME_MICROS)->NotNull();
  key.push_back(kTimeColumn);
  b.SetPrimaryKey(key);
  client::Schema schema;
  BASALT_RETURN_IF_ERROR(b.Build(&schema));
  auto creator = client_->NewTableCreator();
  creator->table_name(name).schema(&schema).num_replicas(options_.num_replicas);
  creator->add_hash_partitions(tags.empty() ? std::vector<std::string>{kTimeColumn}
                                            : std::vector<std::string>(tags.begin(), tags.end()),
                               options_.hash_partitions);
  creator->set_range_partition_columns({kTimeColumn});
  // The first write's days; the rest come with later writes and AddPartitionsAhead.
  std::set<int64_t> days;
  for (const Point* p : points) days.insert(DayOf(p->timestamp_us.value_or(0)));
  for (int64_t day : days) {
    std::unique_ptr<client::PartialRow> lower, upper;
    BASALT_RETURN_IF_ERROR(DayBounds(schema, day, &lower, &upper));
    creator->add_range_partition(std::move(lower), std::move(upper));
  }
  absl::Status s = creator->Create();
  if (!s.ok() && !absl::IsAlreadyExists(s)) return s;
  BASALT_ASSIGN_OR_RETURN(Entry * e, OpenLocked(name));
  if (s.ok()) e->days = days;
  return absl::OkStatus();
}

absl::Status Catalog::AddFieldsLocked(const std::string& name, Entry* entry,
                                      const std::vector<const Point*>& points) {
  const client::Schema& schema = entry->table->schema();
  const std::vector<std::string> tags = TagColumns(schema);
  std::map<std::string, ColumnSchema::DataType> added;
  const Point* checked = nullptr;  // The last point checked: a point with its keys passes too.
  for (const Point* p : points) {
    if (checked != nullptr && SameKeys(*checked, *p)) continue;
    checked = p;
    for (const auto& [k, v] : p->tags) {
      if (k == kTimeColumn) return absl::InvalidArgumentError("a tag may not be named 'time'");
      if (std::find(tags.begin(), tags.end(), k) == tags.end()) {
        return absl::InvalidArgumentError(
            StrCat("tag key '", k, "' is not one of measurement '", p->measurement,
                   "''s tag keys (fixed by its first write; docs/tsdb.md)"));
      }
    }
    for (const auto& [k, v] : p->fields) {
      if (k == kTimeColumn) return absl::InvalidArgumentError("a field may not be named 'time'");
      const ColumnSchema::DataType want = ColumnTypeOf(v.type);
      const int idx = schema.FindColumn(k);
      ColumnSchema::DataType have;
      if (idx >= 0) {
        if (idx < schema.num_key_columns()) {
          return absl::InvalidArgumentError(
              StrCat("field '", k, "' is a tag of measurement '", p->measurement, "'"));
        }
        have = schema.Column(idx).type();
      } else {
        auto it = added.emplace(k, want).first;
        have = it->second;
      }
      if (have != want) {
        return absl::InvalidArgumentError(
            StrCat("field type conflict: input field \"", k, "\" on measurement \"", p->measurement,
                   "\" is type ", InfluxTypeName(want), ", already exists as type ",
                   InfluxTypeName(have)));
      }
    }
  }
  if (added.empty()) return absl::OkStatus();
  auto alterer = client_->NewTableAlterer(name);
  for (const auto& [k, type] : added) alterer->AddColumn(k)->Type(type)->Nullable();
  absl::Status s = alterer->Alter();
  // Another writer may have added them meanwhile: the reopened schema tells.
  std::shared_ptr<client::Table> reopened;
  BASALT_RETURN_IF_ERROR(client_->OpenTable(name, &reopened));
  entry->table = std::move(reopened);
  for (const auto& [k, type] : added) {
    if (entry->table->schema().FindColumn(k) < 0) return s.ok() ? absl::InternalError(k) : s;
  }
  return absl::OkStatus();
}

absl::Status Catalog::AddDaysLocked(const std::string& name, Entry* entry,
                                    const std::set<int64_t>& days) {
  for (int64_t day : days) {
    if (entry->days.count(day) > 0) continue;
    std::unique_ptr<client::PartialRow> lower, upper;
    BASALT_RETURN_IF_ERROR(DayBounds(entry->table->schema(), day, &lower, &upper));
    auto alterer = client_->NewTableAlterer(name);
    alterer->AddRangePartition(std::move(lower), std::move(upper));
    absl::Status s = alterer->Alter();
    if (!s.ok() && !IsOverlap(s)) return s;
    entry->days.insert(day);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<client::Table>> Catalog::TableForWrite(
    const std::string& db, const std::string& measurement,
    const std::vector<const Point*>& points) {
  std::set<int64_t> days;
  int64_t last_day = INT64_MIN;
  for (const Point* p : points) {
    const int64_t t = p->timestamp_us.value_or(0);
    if (t < -kMaxTimeUs || t > kMaxTimeUs) {
      return absl::InvalidArgumentError(
          StrCat("line ", p->line, ": timestamp out of range (InfluxDB's: years 1677 to 2262)"));
    }
    const int64_t day = DayOf(t);
    if (day != last_day) days.insert(day);
    last_day = day;
  }
  const std::string name = TableName(db, measurement);
  absl::MutexLock l(&mu_);
  absl::StatusOr<Entry*> entry = OpenLocked(name);
  const bool create = absl::IsNotFound(entry.status());
  if (!create && !entry.ok()) return entry.status();
  size_t new_days = 0;
  for (int64_t d : days) new_days += create || (*entry)->days.count(d) == 0;
  if (new_days > kMaxNewDaysPerWrite) {
    // Each day is hash_partitions tablets: a backfill over years must come in pieces.
    return absl::InvalidArgumentError(
        StrCat("the points of measurement '", measurement, "' reach ", new_days,
               " days without a partition; a write may add at most ", kMaxNewDaysPerWrite));
  }
  if (create) {
    BASALT_RETURN_IF_ERROR(CreateTableLocked(name, points));
    entry = OpenLocked(name);
    if (!entry.ok()) return entry.status();
  }
  BASALT_RETURN_IF_ERROR(AddFieldsLocked(name, *entry, points));
  BASALT_RETURN_IF_ERROR(AddDaysLocked(name, *entry, days));
  return (*entry)->table;
}

absl::StatusOr<std::shared_ptr<client::Table>> Catalog::TableForRead(
    const std::string& db, const std::string& measurement) {
  absl::MutexLock l(&mu_);
  BASALT_ASSIGN_OR_RETURN(Entry * e, OpenLocked(TableName(db, measurement)));
  return e->table;
}

absl::Status Catalog::AddPartitionsAhead(int64_t now_us) {
  absl::MutexLock l(&mu_);
  std::set<int64_t> days;
  for (int i = 0; i <= options_.days_ahead; i++) days.insert(DayOf(now_us) + i);
  absl::Status first;
  for (auto& [name, entry] : tables_) {
    absl::Status s = AddDaysLocked(name, &entry, days);
    if (first.ok()) first = s;
  }
  return first;
}

}  // namespace basalt::tsdb
