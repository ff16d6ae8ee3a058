#pragma once

// Helpers shared by the CLI's commands: connecting to a cluster, turning scanned cells into
// output cells, and printing a schema the way a CREATE TABLE spec writes it.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/client.h"
#include "tools/command.h"
#include "tools/output.h"

namespace basalt::tools {

// The <master_addresses> argument every cluster action takes.
ArgDef MasterAddressesArg();
ArgDef TableNameArg();

// A client connected to the masters in `master_addresses` ("host:port[,host:port...]").
absl::Status ConnectToCluster(const std::string& master_addresses,
                              std::shared_ptr<client::Client>* client);

// Cell `column_idx` of row `row` of `batch`, formatted for output: numbers as numbers, DECIMAL
// with its scale, UNIXTIME_MICROS as "YYYY-MM-DD HH:MM:SS.ffffff" (UTC), DATE as "YYYY-MM-DD",
// BINARY with non-printable bytes as \xNN.
Cell FormatCell(const client::ScanBatch& batch, int column_idx, int64_t row);

// "DECIMAL" unscaled value as text: FormatDecimal(12345, 2) == "123.45".
std::string FormatDecimal(int64_t unscaled, int scale);

// One column as in a spec: "name INT32 NOT NULL DEFAULT 12345".
std::string ColumnToSpec(const client::ColumnSchema& col, bool is_key);

// The --format flag, checked.
absl::StatusOr<TableWriter::Format> OutputFormat();

// The commands of the tool, one per file.
Command TableCommand();
Command PerfCommand();
Command TserverCommand();
Command MasterCommand();
Command LocalCommand();
Command TabletCommand();
Command ClusterCommand();
Command FsCommand();
// `table load` (tool_table_load.cc), one of TableCommand's actions.
Action TableLoadAction();
std::vector<Command> AllCommands();

}  // namespace basalt::tools
