#pragma once

// Writes that outlive an ALTER TABLE. Private to src/client.
//
// A Table handle keeps the schema it was opened with, and the session encodes rows against it.
// When the table is altered, tablets refuse rows of the old version (SCHEMA_MISMATCH). The
// writer then asks the master for the table's current schema, records it in the table's state
// as the schema writes are sent with from now on (WriteSchemaOf), and re-encodes each batch from
// its own schema to that one (ReencodeRows): columns are matched by id, so a renamed column keeps
// its values, an added column is left for the tablet to fill with NULL or its default, and a
// dropped column the row does not set (or sets to NULL) is simply absent. A row that sets a
// dropped column, or that the new schema cannot hold otherwise, fails alone with a clear error.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/client_internal.h"
#include "client/tablet_writer.h"

namespace basalt::client::internal {

// One version of a table's schema as writes use it: the schema and the SchemaPB sent with them.
struct WriteSchema {
  std::shared_ptr<const basalt::Schema> schema;
  std::shared_ptr<const pb::SchemaPB> pb;
};

// The schema writes to the table are sent with: the newest one this client learned from the
// master after a SCHEMA_MISMATCH, else the one the table was opened with. Thread-safe.
std::shared_ptr<const WriteSchema> WriteSchemaOf(const Table& table);

// Asks the master (by table id, so a renamed table is found) for the table's schema and makes it
// the table's write schema if its version is newer than the current one. Returns the write schema
// after that. NOT_FOUND when the table was deleted; DATA_LOSS for a malformed answer.
absl::StatusOr<std::shared_ptr<const WriteSchema>> RefreshWriteSchema(ClientData* client,
                                                                      const Table& table,
                                                                      absl::Time deadline);

// A batch's operations re-encoded for another version of their table's schema.
struct ReencodedRows {
  std::string rows;
  std::string indirect;
  // Operation i of `rows` is operation kept[i] of the input.
  std::vector<int> kept;
  // Input operations the target schema cannot hold (by input index), INVALID_ARGUMENT naming the
  // column and the schema version.
  std::vector<RowError> failed;
};

// Re-encodes the operations in (rows, indirect), encoded against `from`, for `to` (see the file
// comment). INVALID_ARGUMENT if the input does not decode against `from`.
absl::StatusOr<ReencodedRows> ReencodeRows(const basalt::Schema& from, const basalt::Schema& to,
                                           std::string_view rows, std::string_view indirect);

}  // namespace basalt::client::internal
