#include "tools/tool_common.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "common/types.h"
#include "tools/table_spec.h"

DEFINE_string(format, "table",
              "Output format of listings and scans: table (aligned columns), csv or json.");
DEFINE_int64(timeout_ms, 30000,
             "Timeout in milliseconds of every RPC and client operation (DDL, scan, write session) "
             "of a cluster action; an unreachable server fails the action once it runs out.");
DEFINE_bool(frame_rpc, true,
            "Whether writes and scans of a cluster action use the tablet servers' frame RPC "
            "ports where they offer one (docs/frame_rpc.md); false: gRPC only.");

DEFINE_int32(reply_spin_us, 200,
             "How long a frame call of a cluster action may poll for its reply before sleeping, "
             "in microseconds (0: never). Polling happens only while the server answers within "
             "about twice this time and no other call of the process waits (docs/frame_rpc.md).");

namespace basalt::tools {

using client::ColumnSchema;

ArgDef MasterAddressesArg() {
  return {"master_addresses", "Comma-separated master addresses (host:port,...)"};
}

ArgDef TableNameArg() { return {"table_name", "Name of the table"}; }

absl::Status ConnectToCluster(const std::string& master_addresses,
                              std::shared_ptr<client::Client>* client) {
  client::ClientBuilder builder;
  for (const auto& a : absl::StrSplit(master_addresses, ',')) {
    if (!a.empty()) builder.add_master_server_addr(std::string(a));
  }
  return builder.num_rpc_threads(4)
      .use_frame_rpc(FLAGS_frame_rpc)
      .reply_spin(std::chrono::microseconds(std::max(FLAGS_reply_spin_us, 0)))
      .default_admin_operation_timeout(OperationTimeout())
      .default_rpc_timeout(OperationTimeout())
      .Build(client);
}

std::chrono::milliseconds OperationTimeout() {
  return std::chrono::milliseconds(std::max<int64_t>(FLAGS_timeout_ms, 1));
}

std::chrono::system_clock::time_point OperationDeadline() {
  return std::chrono::system_clock::now() + OperationTimeout();
}

absl::StatusOr<TableWriter::Format> OutputFormat() {
  return TableWriter::ParseFormat(FLAGS_format);
}

std::string FormatDecimal(int64_t unscaled, int scale) {
  return basalt::FormatDecimal(absl::int128(unscaled), scale);
}

namespace {

std::string EscapeBinary(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isprint(c) && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace

std::string FormatFloatingPoint(double v) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr);
}

std::string FormatFloatingPoint(float v) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr);
}

Cell FormatCell(const client::ScanBatch& batch, int idx, int64_t row) {
  const client::ScanBatch::RowPtr r = batch.Row(row);
  if (r.IsNull(idx)) return Cell::Null();
  const ColumnSchema col = batch.projection_schema().Column(idx);
  switch (col.type()) {
    case ColumnSchema::BOOL: {
      bool v = false;
      (void)r.GetBool(idx, &v);
      return Cell::Bool(v);
    }
    case ColumnSchema::INT8: {
      int8_t v = 0;
      (void)r.GetInt8(idx, &v);
      return Cell::Number(std::to_string(v));
    }
    case ColumnSchema::INT16: {
      int16_t v = 0;
      (void)r.GetInt16(idx, &v);
      return Cell::Number(std::to_string(v));
    }
    case ColumnSchema::INT32: {
      int32_t v = 0;
      (void)r.GetInt32(idx, &v);
      return Cell::Number(std::to_string(v));
    }
    case ColumnSchema::INT64: {
      int64_t v = 0;
      (void)r.GetInt64(idx, &v);
      return Cell::Number(std::to_string(v));
    }
    case ColumnSchema::FLOAT: {
      float v = 0;
      (void)r.GetFloat(idx, &v);
      return Cell::Number(FormatFloatingPoint(v));
    }
    case ColumnSchema::DOUBLE: {
      double v = 0;
      (void)r.GetDouble(idx, &v);
      return Cell::Number(FormatFloatingPoint(v));
    }
    case ColumnSchema::DECIMAL: {
      // From the cell itself: an aggregate's DECIMAL(38, s) may not fit the int64 getter.
      const client::ScanBatch::ColumnView view = batch.Column(idx);
      const char* cell = static_cast<const char*>(view.data) + row * view.cell_size;
      absl::int128 v = 0;
      if (view.cell_size == 4) {
        int32_t x;
        std::memcpy(&x, cell, 4);
        v = x;
      } else if (view.cell_size == 8) {
        int64_t x;
        std::memcpy(&x, cell, 8);
        v = x;
      } else {
        std::memcpy(&v, cell, sizeof(v));
      }
      return Cell::Number(basalt::FormatDecimal(v, col.scale()));
    }
    case ColumnSchema::UNIXTIME_MICROS: {
      int64_t v = 0;
      (void)r.GetUnixTimeMicros(idx, &v);
      return Cell::String(
          absl::FormatTime("%Y-%m-%d %H:%M:%E6S", absl::FromUnixMicros(v), absl::UTCTimeZone()));
    }
    case ColumnSchema::DATE: {
      int32_t v = 0;
      (void)r.GetDate(idx, &v);
      return Cell::String(absl::FormatTime("%Y-%m-%d", absl::FromUnixSeconds(int64_t{v} * 86400),
                                           absl::UTCTimeZone()));
    }
    case ColumnSchema::BINARY: {
      std::string_view v;
      (void)r.GetBinary(idx, &v);
      return Cell::String(EscapeBinary(v));
    }
    case ColumnSchema::STRING:
    case ColumnSchema::VARCHAR: {
      std::string_view v;
      (void)r.GetString(idx, &v);
      return Cell::String(std::string(v));
    }
  }
  return Cell::Null();
}

std::string ColumnToSpec(const ColumnSchema& col, bool is_key) {
  std::string out = StrCat(
      col.name(), " ", TypeToSpecString(col.type(), col.precision(), col.scale(), col.length()));
  if (!is_key) StrAppend(&out, col.is_nullable() ? " NULL" : " NOT NULL");
  if (col.default_value()) {
    std::string v = col.default_value()->ToString();
    const bool quote = col.type() == ColumnSchema::STRING || col.type() == ColumnSchema::VARCHAR ||
                       col.type() == ColumnSchema::BINARY;
    if (col.type() == ColumnSchema::DECIMAL) {
      int64_t unscaled = 0;
      if (absl::SimpleAtoi(v, &unscaled)) v = FormatDecimal(unscaled, col.scale());
    }
    StrAppend(&out, " DEFAULT ", quote ? StrCat("'", v, "'") : v);
  }
  return out;
}

std::vector<Command> AllCommands() {
  return {ClusterCommand(), FsCommand(),    LocalCommand(),  MasterCommand(), PerfCommand(),
          SqlCommand(),     TableCommand(), TabletCommand(), TserverCommand()};
}

}  // namespace basalt::tools
