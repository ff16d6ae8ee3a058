#include "client/write_schema.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "client/master_proxy.h"
#include "common/arena.h"
#include "common/bitmap.h"
#include "common/row_operations.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/common.pb.h"

namespace basalt::client::internal {

std::shared_ptr<const WriteSchema> WriteSchemaOf(const Table& table) {
  auto* td = Access::Data(&table);
  absl::MutexLock l(&td->mu);
  if (td->write_schema == nullptr) {
    // First use: the schema the table was opened with (copied once per table handle).
    auto ws = std::make_shared<WriteSchema>();
    ws->schema = std::make_shared<const basalt::Schema>(Access::Internal(td->schema));
    ws->pb = td->schema_pb;
    td->write_schema = std::move(ws);
  }
  return td->write_schema;
}

absl::StatusOr<std::shared_ptr<const WriteSchema>> RefreshWriteSchema(ClientData* client,
                                                                      const Table& table,
                                                                      absl::Time deadline) {
  auto* td = Access::Data(&table);
  pb::GetTableSchemaRequestPB req;
  req.mutable_table()->set_table_id(td->id);
  pb::GetTableSchemaResponsePB resp;
  BASALT_RETURN_IF_ERROR(client->master->Call("GetTableSchema", &MasterProxy::Stub::GetTableSchema,
                                              req, &resp, deadline));
  auto schema = basalt::Schema::FromPB(resp.schema());
  if (!schema.ok()) {
    return absl::DataLossError(StrCat("master returned a malformed schema for table ", td->id, ": ",
                                      schema.status().message()));
  }
  WriteSchemaOf(table);  // Sets td->write_schema if unset.
  absl::MutexLock l(&td->mu);
  // Another writer may have stored a newer one meanwhile: versions only move forward.
  if (schema->version() <= td->write_schema->schema->version()) return td->write_schema;
  auto ws = std::make_shared<WriteSchema>();
  ws->schema = std::make_shared<const basalt::Schema>(*std::move(schema));
  ws->pb = std::make_shared<const pb::SchemaPB>(resp.schema());
  td->write_schema = std::move(ws);
  return td->write_schema;
}

namespace {

// Builds op's row for `to` in `row` (is-set bitmap, null bitmap, cells), or says why it cannot.
absl::Status MapRow(const DecodedRowOperation& op, const basalt::Schema& to,
                    std::vector<uint8_t>* row) {
  const basalt::Schema& from = *op.schema;
  const size_t bm = BitmapSize(to.num_columns());
  row->assign(2 * bm + to.fixed_row_size(), 0);
  uint8_t* isset = row->data();
  uint8_t* isnull = isset + bm;
  uint8_t* cells = isnull + bm;
  for (int i = 0; i < from.num_columns(); ++i) {
    if (!op.IsSet(i)) continue;
    const basalt::ColumnSchema& col = from.column(i);
    const int j = to.find_column_by_id(from.column_id(i));
    if (j < 0) {
      // Dropped: a NULL loses nothing, a value would be lost silently.
      if (op.IsNull(i)) continue;
      return absl::InvalidArgumentError(StrCat("column '", col.name(),
                                               "' was dropped from the table (schema version ",
                                               to.version(), "); the row sets it"));
    }
    if (to.column(j).type() != col.type()) {
      return absl::InvalidArgumentError(StrCat("column '", col.name(), "' changed type to ",
                                               to.column(j).TypeToString(), " (schema version ",
                                               to.version(), ")"));
    }
    BitmapSet(isset, j);
    if (op.IsNull(i)) {
      BitmapSet(isnull, j);
      continue;
    }
    // Row-buffer form: fixed-width bytes, or a string_view into the payload's indirect data
    // (valid while the input payload is).
    std::memcpy(cells + to.column_offset(j), op.cell(i), col.type_info().size());
  }
  absl::Status s = CheckRowOperationColumns(op.type, to, isset, isnull);
  if (!s.ok()) {
    return absl::InvalidArgumentError(
        StrCat("after the table's schema changed to version ", to.version(), ": ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReencodedRows> ReencodeRows(const basalt::Schema& from, const basalt::Schema& to,
                                           std::string_view rows, std::string_view indirect) {
  Arena arena(64 * 1024);
  RowOperationsDecoder decoder(&from, &arena);
  std::vector<DecodedRowOperation> ops;
  BASALT_RETURN_IF_ERROR(decoder.Decode(rows, indirect, &ops));
  ReencodedRows out;
  RowOperationsEncoder enc(&out.rows, &out.indirect);
  const size_t bm = BitmapSize(to.num_columns());
  std::vector<uint8_t> row;
  for (size_t i = 0; i < ops.size(); ++i) {
    absl::Status s = MapRow(ops[i], to, &row);
    if (!s.ok()) {
      out.failed.push_back({static_cast<int>(i), std::move(s)});
      continue;
    }
    enc.Add(ops[i].type, DecodedRowOperation{ops[i].type, &to, row.data(), row.data() + bm,
                                             row.data() + 2 * bm});
    out.kept.push_back(static_cast<int>(i));
  }
  return out;
}

}  // namespace basalt::client::internal
