#include "tsdb/point_writer.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt::tsdb {

namespace {

absl::Status SetField(client::PartialRow* row, int idx, const std::string& name,
                      const FieldValue& v) {
  switch (v.type) {
    case FieldValue::kFloat:
      return row->SetDouble(idx, v.f);
    case FieldValue::kInteger:
      return row->SetInt64(idx, v.i);
    case FieldValue::kUnsigned:
      if (v.u > static_cast<uint64_t>(INT64_MAX)) {
        return absl::InvalidArgumentError(
            StrCat("field ", name, ": unsigned value ", v.u, " is larger than 2^63-1"));
      }
      return row->SetInt64(idx, static_cast<int64_t>(v.u));
    case FieldValue::kString:
      return row->SetString(idx, v.s);
    case FieldValue::kBool:
      return row->SetBool(idx, v.b);
  }
  return absl::InternalError("unknown field type");
}

// Where a point's tags and fields go in its table's row: resolved by name once for a run of
// points with the same keys (SameKeys), instead of a name lookup per cell of every point.
struct RowLayout {
  const Point* resolved_for = nullptr;  // The last point it served (null: none yet, or an error).
  std::vector<int> tags;                // Column of each of the point's tags.
  std::vector<int> fields;              // Column of each of its fields.
  std::vector<int> missing_tags;  // Tag columns the point lacks: the empty string (InfluxDB's).
  int time = -1;
};

absl::Status ColumnOf(const client::Schema& schema, const std::string& name, int* idx) {
  *idx = schema.FindColumn(name);
  if (*idx < 0) return absl::NotFoundError(StrCat("no column named '", name, "'"));
  return absl::OkStatus();
}

// Resolves `p`'s columns into *layout. On error *layout matches no point (resolved_for null).
absl::Status Resolve(const client::Schema& schema, const Point& p, RowLayout* layout) {
  layout->resolved_for = nullptr;
  layout->tags.resize(p.tags.size());
  layout->fields.resize(p.fields.size());
  layout->missing_tags.clear();
  for (size_t i = 0; i < p.tags.size(); ++i) {
    BASALT_RETURN_IF_ERROR(ColumnOf(schema, p.tags[i].first, &layout->tags[i]));
  }
  for (size_t i = 0; i < p.fields.size(); ++i) {
    absl::Status s = ColumnOf(schema, p.fields[i].first, &layout->fields[i]);
    if (!s.ok()) return absl::InvalidArgumentError(StrCat("line ", p.line, ": ", s.message()));
  }
  BASALT_RETURN_IF_ERROR(ColumnOf(schema, kTimeColumn, &layout->time));
  for (const std::string& tag : Catalog::TagColumns(schema)) {
    const int idx = schema.FindColumn(tag);
    if (std::find(layout->tags.begin(), layout->tags.end(), idx) == layout->tags.end()) {
      layout->missing_tags.push_back(idx);
    }
  }
  return absl::OkStatus();
}

// The upsert of one point into `table` (whose schema holds its tags and fields).
absl::StatusOr<std::unique_ptr<client::WriteOperation>> Upsert(client::Table* table, const Point& p,
                                                               int64_t now_us, RowLayout* layout) {
  if (layout->resolved_for == nullptr || !SameKeys(*layout->resolved_for, p)) {
    BASALT_RETURN_IF_ERROR(Resolve(table->schema(), p, layout));
  }
  // The next point is compared with this one (same keys: the layout holds for both).
  layout->resolved_for = &p;
  std::unique_ptr<client::Upsert> op = table->NewUpsert();
  client::PartialRow* row = op->mutable_row();
  for (int idx : layout->missing_tags) BASALT_RETURN_IF_ERROR(row->SetString(idx, ""));
  for (size_t i = 0; i < p.tags.size(); ++i) {
    BASALT_RETURN_IF_ERROR(row->SetString(layout->tags[i], p.tags[i].second));
  }
  BASALT_RETURN_IF_ERROR(row->SetUnixTimeMicros(layout->time, p.timestamp_us.value_or(now_us)));
  for (size_t i = 0; i < p.fields.size(); ++i) {
    absl::Status s = SetField(row, layout->fields[i], p.fields[i].first, p.fields[i].second);
    if (!s.ok()) return absl::InvalidArgumentError(StrCat("line ", p.line, ": ", s.message()));
  }
  return std::unique_ptr<client::WriteOperation>(std::move(op));
}

}  // namespace

absl::Status WritePoints(Catalog* catalog, client::Client* client, const std::string& db,
                         const std::vector<Point>& points, int64_t now_us, WriteResult* result) {
  *result = WriteResult();
  // Measurements in the order they first appear; each gets its table before its rows.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Point*>> by_measurement;
  for (const Point& p : points) {
    auto& v = by_measurement[p.measurement];
    if (v.empty()) order.push_back(p.measurement);
    v.push_back(&p);
  }
  std::shared_ptr<client::Session> session = client->NewSession();
  BASALT_RETURN_IF_ERROR(session->SetFlushMode(client::Session::AUTO_FLUSH_BACKGROUND));
  int64_t applied = 0;
  absl::Status first;
  for (const std::string& m : order) {
    std::vector<const Point*>& ps = by_measurement[m];
    // The catalog sees each point with the time it is written at (now for those without).
    std::vector<Point> stamped;
    std::vector<const Point*> for_catalog;
    for (const Point* p : ps) {
      if (p->timestamp_us.has_value()) {
        for_catalog.push_back(p);
      } else {
        stamped.push_back(*p);
        stamped.back().timestamp_us = now_us;
      }
    }
    for (const Point& p : stamped) for_catalog.push_back(&p);
    absl::StatusOr<std::shared_ptr<client::Table>> table =
        catalog->TableForWrite(db, m, for_catalog);
    if (!table.ok()) {
      // This measurement's points fail; the others are still written (InfluxDB's partial write).
      if (first.ok()) first = table.status();
      result->points_failed += static_cast<int64_t>(ps.size());
      continue;
    }
    RowLayout layout;
    for (const Point* p : ps) {
      absl::StatusOr<std::unique_ptr<client::WriteOperation>> op =
          Upsert(table->get(), *p, now_us, &layout);
      if (!op.ok()) {
        if (first.ok()) first = op.status();
        result->points_failed++;
        continue;
      }
      absl::Status s = session->Apply(std::move(*op));
      if (!s.ok()) {
        if (first.ok()) first = s;
        result->points_failed++;
        continue;
      }
      applied++;
    }
  }
  absl::Status flushed = session->Flush();
  // Rows of batches the session sent in the background before Flush failed too: the error
  // collector has them all, whatever Flush returned.
  const int64_t failed_rows = session->CountPendingErrors();
  std::vector<std::unique_ptr<client::Error>> errors = session->GetPendingErrors();
  if (first.ok() && !errors.empty()) first = errors[0]->status();
  if (first.ok() && !flushed.ok()) first = flushed;
  result->points_written = applied - failed_rows;
  result->points_failed += failed_rows;
  return first;
}

}  // namespace basalt::tsdb
