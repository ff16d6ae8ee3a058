#pragma once

// The CREATE TABLE spec of `basalt table create` (grammar: docs/cli.md), parsed into a
// TableSpec, and literals converted to client::Value for a column's type. Pure: no I/O.
//
//   CREATE TABLE metrics (host STRING, ts UNIXTIME_MICROS, value DOUBLE, PRIMARY KEY (host, ts))
//   PARTITION BY HASH (host) PARTITIONS 4, RANGE (ts) (PARTITION VALUES >= 0 AND < 100)
//   REPLICAS 3

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/schema.h"
#include "client/value.h"

namespace basalt::tools {

// A constant as written in a spec or predicate.
struct Literal {
  enum Kind { kInteger, kFloat, kString, kBool, kNull };
  Kind kind = kNull;
  std::string text;  // Numbers as written; strings unquoted; TRUE/FALSE as "true"/"false".
  size_t pos = 0;    // Where it starts in the input (for errors).
};

struct ColumnSpecDef {
  std::string name;
  client::ColumnSchema::DataType type = client::ColumnSchema::INT32;
  int precision = 0;             // DECIMAL.
  int scale = 0;                 // DECIMAL.
  int length = 0;                // VARCHAR.
  std::optional<bool> nullable;  // Unset: NOT NULL for key columns, NULL for the others.
  std::optional<Literal> default_value;
  std::optional<client::ColumnStorageAttributes::EncodingType> encoding;
  std::optional<client::ColumnStorageAttributes::CompressionType> compression;
  size_t pos = 0;
};

struct HashPartitionDef {
  std::vector<std::string> columns;
  int32_t num_buckets = 0;
  int32_t seed = 0;
};

// One range partition; a missing bound is unbounded. Each bound has one value per range column.
struct RangePartitionDef {
  std::optional<std::vector<Literal>> lower;
  std::optional<std::vector<Literal>> upper;
  bool lower_inclusive = true;
  bool upper_inclusive = false;
};

struct TableSpec {
  std::string table_name;
  std::vector<ColumnSpecDef> columns;
  std::vector<std::string> key_columns;
  std::vector<HashPartitionDef> hash_partitions;
  std::optional<std::vector<std::string>> range_columns;
  std::vector<RangePartitionDef> range_partitions;
  std::vector<std::vector<Literal>> split_rows;
  int num_replicas = 0;  // 0: the master's default.
};

// Parses a spec. Errors are INVALID_ARGUMENT naming the bad token, its position and a caret line.
absl::StatusOr<TableSpec> ParseTableSpec(std::string_view spec);

// Parses a type name such as INT32, DECIMAL(10,2) or VARCHAR(20) at the stream's position.
class TokenStream;
absl::Status ParseColumnType(TokenStream* ts, ColumnSpecDef* col);

// The column type as written in a spec: "INT32", "DECIMAL(10, 2)", "VARCHAR(20)".
std::string TypeToSpecString(client::ColumnSchema::DataType type, int precision, int scale,
                             int length);

// Converts `literal` to a Value for a column of `type` (DECIMAL: the unscaled value at `scale`;
// UNIXTIME_MICROS also from 'YYYY-MM-DD[ HH:MM:SS[.ffffff]]' (UTC); DATE also from 'YYYY-MM-DD').
// NULL literals are INVALID_ARGUMENT (the caller handles NULL).
absl::StatusOr<client::Value> LiteralToValue(const Literal& literal,
                                             client::ColumnSchema::DataType type, int scale);

// Parses a literal (number, 'string', TRUE, FALSE, NULL) at the stream's position.
absl::StatusOr<Literal> ParseLiteral(TokenStream* ts);

// Parses a column definition as in CREATE TABLE (`name type option*`) into *col (col->pos is the
// name's position); *primary_key tells whether PRIMARY KEY was among the options.
absl::Status ParseColumnDef(TokenStream* ts, ColumnSpecDef* col, bool* primary_key);

// Checks a parsed column's DEFAULT against its type and nullability (DEFAULT NULL only on a
// nullable column); errors point at the default's position.
absl::Status ValidateColumnDefault(const TokenStream& ts, const ColumnSpecDef& col);

// Describes the column `def` on `spec` (type and its attributes, nullability, default, encoding,
// compression). REQUIRES: the default, if any, fits the type (ValidateColumnDefault).
absl::Status ToColumnSpec(const ColumnSpecDef& def, client::ColumnSpec* spec);

// Parses one range partition as in CREATE TABLE: PARTITION VALUES [(>= | >) bound [AND]]
// [(< | <=) bound] or PARTITION VALUE = bound. Literals are not bound to types here.
absl::StatusOr<RangePartitionDef> ParseRangePartition(TokenStream* ts);

}  // namespace basalt::tools
