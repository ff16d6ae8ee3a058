#pragma once

// Helpers shared by the CLI's commands: connecting to a cluster, turning scanned cells into
// output cells, and printing a schema the way a CREATE TABLE spec writes it.

#include <chrono>
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

// A client connected to the masters in `master_addresses` ("host:port[,host:port...]"), with
// --timeout_ms as its default admin operation and RPC timeouts (so every DDL call, session and
// scanner of the action gets it).
absl::Status ConnectToCluster(const std::string& master_addresses,
                              std::shared_ptr<client::Client>* client);

// The global --timeout_ms (the timeout of every RPC and client operation of a cluster action)
// as a duration, and as a deadline from now for direct gRPC calls (ClientContext::set_deadline).
std::chrono::milliseconds OperationTimeout();
std::chrono::system_clock::time_point OperationDeadline();

// Cell `column_idx` of row `row` of `batch`, formatted for output: numbers as numbers, DECIMAL
// with its scale, UNIXTIME_MICROS as "YYYY-MM-DD HH:MM:SS.ffffff" (UTC), DATE as "YYYY-MM-DD",
// BINARY with non-printable bytes as \xNN.
Cell FormatCell(const client::ScanBatch& batch, int column_idx, int64_t row);

// The shortest text that reads back as the same value ("200", "0.1"; the float overload is
// shortest for the float, not for its double widening).
std::string FormatFloatingPoint(double v);
std::string FormatFloatingPoint(float v);

// "DECIMAL" unscaled value as text: FormatDecimal(12345, 2) == "123.45".
std::string FormatDecimal(int64_t unscaled, int scale);

// One column as in a spec: "name INT32 NOT NULL DEFAULT 12345".
std::string ColumnToSpec(const client::ColumnSchema& col, bool is_key);

// The --format flag, checked.
absl::StatusOr<TableWriter::Format> OutputFormat();

// The commands of the tool, one per file.
Command TableCommand();
Command PerfCommand();
Command SqlCommand();
Command TserverCommand();
Command MasterCommand();
Command LocalCommand();
Command TabletCommand();
Command ClusterCommand();
Command FsCommand();
// `tablet change_config` (tool_tablet_change_config.cc), a group of TabletCommand.
Command TabletChangeConfigGroup();
// `table load` (tool_table_load.cc), one of TableCommand's actions.
Action TableLoadAction();
// `fs space` (tool_fs_space.cc).
Action FsSpaceAction();
// `cluster rebalance` (tool_cluster_rebalance.cc), one of ClusterCommand's actions.
Action ClusterRebalanceAction();
// `table alter` (tool_table_alter.cc) and `table copy` (tool_table_copy.cc).
Action TableAlterAction();
Action TableCopyAction();
std::vector<Command> AllCommands();

}  // namespace basalt::tools
