#include "common/row_operations.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_replace.h"
#include "common/arena.h"
#include "common/coding.h"
#include "common/partial_row.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "glog/logging.h"
#include "proto/common.pb.h"

namespace basalt {
namespace {
namespace row_operations_test_file {

using Type = RowOperationType;

constexpr Type kAllTypes[] = {
    Type::kInsert,
    Type::kUpdate,
    Type::kDelete,
    Type::kUpsert,
    Type::kInsertIgnore,
    Type::kUpdateIgnore,
    Type::kDeleteIgnore,
    Type::kSplitRow,
    Type::kRangeLowerBound,
    Type::kRangeUpperBound,
    Type::kExclusiveRangeLowerBound,
    Type::kInclusiveRangeUpperBound,
};

// ---- Schemas ------------------------------------------------------------------------------------

ColumnSchema Nullable(std::string name, DataType type, TypeAttributes attrs = {}) {
  return ColumnSchema(std::move(name), type, true, std::nullopt, attrs);
}

// Two key columns, every data type as a nullable column, a NOT NULL column without a default
// and one with a default: 19 columns, so the bitmaps span three bytes.
Schema AllTypesSchema() {
  return Schema::Create(
             {
                 ColumnSchema("k_int", DataType::kInt32),
                 ColumnSchema("k_str", DataType::kString),
                 Nullable("c_bool", DataType::kBool),
                 Nullable("c_int8", DataType::kInt8),
                 Nullable("c_int16", DataType::kInt16),
                 Nullable("c_int32", DataType::kInt32),
                 Nullable("c_int64", DataType::kInt64),
                 Nullable("c_float", DataType::kFloat),
                 Nullable("c_double", DataType::kDouble),
                 Nullable("c_string", DataType::kString),
                 Nullable("c_binary", DataType::kBinary),
                 Nullable("c_ts", DataType::kUnixtimeMicros),
                 Nullable("c_date", DataType::kDate),
                 Nullable("c_dec32", DataType::kDecimal32, {9, 2, 0}),
                 Nullable("c_dec64", DataType::kDecimal64, {18, 4, 0}),
                 Nullable("c_dec128", DataType::kDecimal128, {38, 10, 0}),
                 Nullable("c_varchar", DataType::kVarchar, {0, 0, 10}),
                 ColumnSchema("required", DataType::kInt32),
                 ColumnSchema("with_default", DataType::kInt64, false, Datum::Int64(7)),
             },
             2)
      .value();
}

// No nullable column, so no null bitmap on the wire.
Schema NoNullablesSchema() {
  return Schema::Create(
             {ColumnSchema("key", DataType::kInt64), ColumnSchema("s", DataType::kString),
              ColumnSchema("d", DataType::kDouble, false, Datum::Double(0.5))},
             1)
      .value();
}

// ---- Random rows --------------------------------------------------------------------------------

absl::int128 MaxUnscaled(int precision) {
  absl::int128 v = 1;
  for (int i = 0; i < precision; ++i) v *= 10;
  return v - 1;
}

std::string RandomUtf8(Random* rng, int max_chars) {
  // 1- to 4-byte characters, and NUL (valid UTF-8).
  static constexpr std::string_view kChars[] = {
      "a", "Z", " ", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", std::string_view("\0", 1)};
  std::string s;
  for (uint64_t n = rng->Uniform(max_chars + 1); n > 0; --n) {
    s.append(kChars[rng->Uniform(std::size(kChars))]);
  }
  return s;
}

// `max_bytes` bounds STRING/BINARY values; a few are empty or exactly max_bytes long.
std::string RandomBytes(Random* rng, size_t max_bytes) {
  if (rng->OneIn(8)) return "";
  if (rng->OneIn(8)) return rng->Bytes(max_bytes);
  return rng->Bytes(rng->Uniform(std::min<size_t>(max_bytes, 40) + 1));
}

Datum RandomValue(Random* rng, const ColumnSchema& col, size_t max_bytes) {
  const int p = col.attributes().precision;
  switch (col.type()) {
    case DataType::kBool:
      return Datum::Bool(rng->OneIn(2));
    case DataType::kInt8:
      return Datum::Int8(static_cast<int8_t>(rng->Next64()));
    case DataType::kInt16:
      return Datum::Int16(static_cast<int16_t>(rng->Next64()));
    case DataType::kInt32:
      return Datum::Int32(static_cast<int32_t>(rng->Next64()));
    case DataType::kInt64:
      return Datum::Int64(static_cast<int64_t>(rng->Next64()));
    case DataType::kFloat: {
      uint32_t bits = rng->Next32();
      float f;
      std::memcpy(&f, &bits, sizeof(f));
      return Datum::Float(f);
    }
    case DataType::kDouble: {
      uint64_t bits = rng->Next64();
      double d;
      std::memcpy(&d, &bits, sizeof(d));
      return Datum::Double(d);
    }
    case DataType::kString:
      return Datum::String(RandomBytes(rng, max_bytes));
    case DataType::kBinary:
      return Datum::Binary(RandomBytes(rng, max_bytes));
    case DataType::kUnixtimeMicros:
      return Datum::UnixtimeMicros(rng->Next64());
    case DataType::kDate:
      return Datum::Date(static_cast<int32_t>(rng->Next64()));
    case DataType::kDecimal32: {
      auto max = static_cast<int64_t>(MaxUnscaled(p));
      return Datum::Decimal32(static_cast<int32_t>(rng->UniformRange(-max, max)));
    }
    case DataType::kDecimal64: {
      auto max = static_cast<int64_t>(MaxUnscaled(p));
      return Datum::Decimal64(rng->UniformRange(-max, max));
    }
    case DataType::kDecimal128: {
      absl::int128 v = absl::MakeInt128(static_cast<int64_t>(rng->Next64()), rng->Next64());
      if (rng->OneIn(4)) return Datum::Decimal128(rng->OneIn(2) ? MaxUnscaled(p) : -MaxUnscaled(p));
      return Datum::Decimal128(v % (MaxUnscaled(p) + 1));
    }
    case DataType::kVarchar:
      return Datum::Varchar(RandomUtf8(rng, col.attributes().length));
    case DataType::kUnknown:
      break;
  }
  LOG(FATAL) << "unhandled type";
}

// Sets column `idx` to a random value, or (if nullable, one time in three) to NULL.
void SetRandom(Random* rng, PartialRow* row, int idx, size_t max_bytes) {
  const ColumnSchema& col = row->schema()->column(idx);
  absl::Status s = col.is_nullable() && rng->OneIn(3)
                       ? row->SetNull(idx)
                       : row->Set(idx, RandomValue(rng, col, max_bytes));
  CHECK(s.ok()) << s;
}

// A random row that satisfies the column rules of `type`.
PartialRow RandomRow(Random* rng, const Schema& schema, Type type, size_t max_bytes) {
  PartialRow row(&schema);
  const bool bound = RowOperationIsPartitionBound(type);
  for (int i = 0; i < schema.num_key_columns(); ++i) {
    if (!bound || rng->OneIn(2)) SetRandom(rng, &row, i, max_bytes);
  }
  if (bound || RowOperationIsDeleteLike(type)) return row;
  bool any = false;
  for (int i = schema.num_key_columns(); i < schema.num_columns(); ++i) {
    const ColumnSchema& col = schema.column(i);
    bool required =
        RowOperationIsInsertLike(type) && !col.is_nullable() && !col.default_value().has_value();
    if (required || rng->OneIn(2)) {
      SetRandom(rng, &row, i, max_bytes);
      any = true;
    }
  }
  if (!any) SetRandom(rng, &row, schema.num_key_columns(), max_bytes);  // Update-like needs one.
  return row;
}

void ExpectSameRow(const PartialRow& expected, const DecodedRowOperation& op) {
  const Schema& schema = *expected.schema();
  for (int i = 0; i < schema.num_columns(); ++i) {
    SCOPED_TRACE(schema.column(i).name());
    ASSERT_EQ(op.IsSet(i), expected.IsSet(i));
    if (!expected.IsSet(i)) continue;
    ASSERT_EQ(op.IsNull(i), expected.IsNull(i));
    Datum want = expected.Get(i);
    Datum got = op.Get(i);
    EXPECT_TRUE(got == want) << got.ToString() << " != " << want.ToString();
  }
}

// ---- Round trips --------------------------------------------------------------------------------

class RowOperationsRoundTripTest : public ::testing::Test {
 protected:
  RowOperationsRoundTripTest() : rng_(SeedFromEnvOrTime()) {}

  // Encodes `rows_per_type` random rows of every op type (interleaved), decodes, compares.
  void RoundTrip(const Schema& schema, int rows_per_type, size_t max_bytes) {
    std::vector<std::pair<Type, PartialRow>> expected;
    pb::RowOperationsPB pb;
    RowOperationsEncoder encoder(&pb);
    for (int r = 0; r < rows_per_type; ++r) {
      for (Type type : kAllTypes) {
        PartialRow row = RandomRow(&rng_, schema, type, max_bytes);
        BASALT_ASSERT_OK(CheckRowOperationColumns(type, row)) << row.ToString();
        encoder.Add(type, row);
        expected.emplace_back(type, std::move(row));
      }
    }
    EXPECT_EQ(encoder.encoded_size(), pb.rows().size() + pb.indirect_data().size());
    Arena arena;
    RowOperationsDecoder decoder(&schema, &arena);
    std::vector<DecodedRowOperation> ops;
    absl::Status s = decoder.Decode(pb, &ops);
    BASALT_ASSERT_OK(s);
    ASSERT_EQ(ops.size(), expected.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_EQ(ops[i].type, expected[i].first);
      ExpectSameRow(expected[i].second, ops[i]);
    }
    // Re-encoding the decoded ops reproduces the payload byte for byte.
    std::string rows, indirect;
    RowOperationsEncoder reencoder(&rows, &indirect);
    for (const DecodedRowOperation& op : ops) reencoder.Add(op.type, op);
    EXPECT_EQ(rows, pb.rows());
    EXPECT_EQ(indirect, pb.indirect_data());
  }

  Random rng_;
};

TEST_F(RowOperationsRoundTripTest, EveryOpTypeWithEveryDataType) {
  Schema schema = AllTypesSchema();
  RoundTrip(schema, 30, 100);
}

TEST_F(RowOperationsRoundTripTest, LargestStrings) {
  Schema schema = AllTypesSchema();
  RoundTrip(schema, 2, kMaxCellBytes);
}

TEST_F(RowOperationsRoundTripTest, SchemaWithoutNullableColumns) {
  Schema schema = NoNullablesSchema();
  RoundTrip(schema, 20, 100);
}

TEST_F(RowOperationsRoundTripTest, EmptyPayloadHasNoOps) {
  Schema schema = AllTypesSchema();
  Arena arena;
  RowOperationsDecoder decoder(&schema, &arena);
  std::vector<DecodedRowOperation> ops(3);
  BASALT_ASSERT_OK(decoder.Decode("", "", &ops));
  EXPECT_TRUE(ops.empty());
}

TEST_F(RowOperationsRoundTripTest, DecodedOpConvertsToPartialRowAndString) {
  Schema schema = NoNullablesSchema();
  PartialRow row(&schema);
  BASALT_ASSERT_OK(row.SetInt64("key", 5));
  BASALT_ASSERT_OK(row.SetString("s", "hi"));
  std::string rows, indirect;
  RowOperationsEncoder(&rows, &indirect).Add(Type::kInsert, row);
  Arena arena;
  std::vector<DecodedRowOperation> ops;
  BASALT_ASSERT_OK(RowOperationsDecoder(&schema, &arena).Decode(rows, indirect, &ops));
  ASSERT_EQ(ops.size(), 1u);
  PartialRow copy = ops[0].ToPartialRow();
  EXPECT_EQ(copy.ToString(), row.ToString());
  EXPECT_EQ(ops[0].ToString(), "INSERT " + row.ToString());
  // The string cell points into indirect_data (zero copy).
  std::string_view s;
  std::memcpy(&s, ops[0].cell(1), sizeof(s));
  EXPECT_EQ(s.data(), indirect.data());
}

TEST(RowOperationTypeTest, NamesAndClasses) {
  EXPECT_EQ(RowOperationTypeName(Type::kInsertIgnore), "INSERT_IGNORE");
  EXPECT_EQ(RowOperationTypeName(Type::kInclusiveRangeUpperBound), "INCLUSIVE_RANGE_UPPER_BOUND");
  EXPECT_EQ(RowOperationTypeName(static_cast<Type>(0)), "UNKNOWN(0)");
  EXPECT_FALSE(IsValidRowOperationType(0));
  EXPECT_FALSE(IsValidRowOperationType(13));
  int insert = 0, update = 0, del = 0, bound = 0;
  for (Type t : kAllTypes) {
    EXPECT_TRUE(IsValidRowOperationType(static_cast<int>(t)));
    // Each type is in exactly one class.
    EXPECT_EQ(RowOperationIsInsertLike(t) + RowOperationIsUpdateLike(t) +
                  RowOperationIsDeleteLike(t) + RowOperationIsPartitionBound(t),
              1)
        << RowOperationTypeName(t);
    insert += RowOperationIsInsertLike(t);
    update += RowOperationIsUpdateLike(t);
    del += RowOperationIsDeleteLike(t);
    bound += RowOperationIsPartitionBound(t);
    EXPECT_EQ(RowOperationTypeNeedsFullKey(t), RowOperationIsWrite(t));
  }
  EXPECT_EQ(insert, 3);
  EXPECT_EQ(update, 2);
  EXPECT_EQ(del, 2);
  EXPECT_EQ(bound, 5);
}

// ---- Golden bytes -------------------------------------------------------------------------------

// The example of docs/row_operations.md. If this test fails, the wire format changed: that breaks
// every client and server of another version, so update the doc and think twice.
TEST(RowOperationsGoldenTest, DocumentedExample) {
  Schema schema = Schema::Create({ColumnSchema("key", DataType::kInt32),
                                  ColumnSchema("name", DataType::kString, true),
                                  ColumnSchema("v", DataType::kInt64, true)},
                                 1)
                      .value();
  pb::RowOperationsPB pb;
  RowOperationsEncoder encoder(&pb);
  PartialRow r1(&schema);
  BASALT_ASSERT_OK(r1.SetInt32("key", 1));
  BASALT_ASSERT_OK(r1.SetString("name", "ab"));
  BASALT_ASSERT_OK(r1.SetNull("v"));
  encoder.Add(Type::kInsert, r1);
  PartialRow r2(&schema);
  BASALT_ASSERT_OK(r2.SetInt32("key", 2));
  BASALT_ASSERT_OK(r2.SetInt64("v", -2));
  encoder.Add(Type::kUpdate, r2);
  PartialRow r3(&schema);
  BASALT_ASSERT_OK(r3.SetInt32("key", 3));
  BASALT_ASSERT_OK(r3.SetString("name", ""));
  encoder.Add(Type::kUpsert, r3);
  PartialRow r4(&schema);
  BASALT_ASSERT_OK(r4.SetInt32("key", 258));
  encoder.Add(Type::kDelete, r4);

  EXPECT_EQ(absl::BytesToHexString(pb.rows()),
            absl::StrReplaceAll("01 07 04 01000000 00000000 02000000 "  // INSERT (1, "ab", NULL)
                                "02 05 00 02000000 feffffffffffffff "   // UPDATE 2 SET v = -2
                                "04 03 00 03000000 02000000 00000000 "  // UPSERT (3, "")
                                "03 01 00 02010000",                    // DELETE 258
                                {{" ", ""}}));
  EXPECT_EQ(pb.indirect_data(), "ab");

  Arena arena;
  std::vector<DecodedRowOperation> ops;
  BASALT_ASSERT_OK(RowOperationsDecoder(&schema, &arena).Decode(pb, &ops));
  ASSERT_EQ(ops.size(), 4u);
  ExpectSameRow(r1, ops[0]);
  ExpectSameRow(r2, ops[1]);
  ExpectSameRow(r3, ops[2]);
  ExpectSameRow(r4, ops[3]);
}

TEST(RowOperationsGoldenTest, NoNullBitmapWithoutNullableColumns) {
  Schema schema = NoNullablesSchema();
  PartialRow row(&schema);
  BASALT_ASSERT_OK(row.SetInt64("key", -1));
  std::string rows, indirect;
  RowOperationsEncoder(&rows, &indirect).Add(Type::kDelete, row);
  EXPECT_EQ(absl::BytesToHexString(rows), "0301ffffffffffffffff");
  EXPECT_EQ(indirect, "");
}

// ---- Validation of hand-crafted payloads --------------------------------------------------------

// Columns: 0 k1 INT32 key, 1 k2 STRING key, 2 req INT32 NOT NULL, 3 def INT64 NOT NULL DEFAULT 7,
// 4 name STRING, 5 flag BOOL, 6 price DECIMAL(5, 2), 7 vc VARCHAR(3), 8 bin BINARY.
// Nine columns: bitmaps are two bytes, bits 1..7 of the second byte are padding.
class RowOperationsValidationTest : public ::testing::Test {
 protected:
  RowOperationsValidationTest()
      : schema_(
            Schema::Create(
                {ColumnSchema("k1", DataType::kInt32), ColumnSchema("k2", DataType::kString),
                 ColumnSchema("req", DataType::kInt32),
                 ColumnSchema("def", DataType::kInt64, false, Datum::Int64(7)),
                 Nullable("name", DataType::kString), Nullable("flag", DataType::kBool),
                 Nullable("price", DataType::kDecimal32, {5, 2, 0}),
                 Nullable("vc", DataType::kVarchar, {0, 0, 3}), Nullable("bin", DataType::kBinary)},
                2)
                .value()) {}

  // A payload builder: append the op header, then cells in column order.
  struct Wire {
    std::string rows;
    std::string indirect;
    Wire& Op(Type t, uint16_t isset, uint16_t isnull = 0) {
      rows.push_back(static_cast<char>(t));
      rows.push_back(static_cast<char>(isset & 0xFF));
      rows.push_back(static_cast<char>(isset >> 8));
      rows.push_back(static_cast<char>(isnull & 0xFF));
      rows.push_back(static_cast<char>(isnull >> 8));
      return *this;
    }
    Wire& Byte(uint8_t b) {
      rows.push_back(static_cast<char>(b));
      return *this;
    }
    Wire& I32(int32_t v) {
      PutFixed32(&rows, static_cast<uint32_t>(v));
      return *this;
    }
    Wire& I64(int64_t v) {
      PutFixed64(&rows, static_cast<uint64_t>(v));
      return *this;
    }
    Wire& Ref(uint32_t offset, uint32_t length) {
      PutFixed32(&rows, offset);
      PutFixed32(&rows, length);
      return *this;
    }
    Wire& Str(std::string_view s) {
      Ref(static_cast<uint32_t>(indirect.size()), static_cast<uint32_t>(s.size()));
      indirect.append(s);
      return *this;
    }
    // k1, k2 set; the cells follow.
    Wire& Keys(int32_t k1 = 1, std::string_view k2 = "k") { return I32(k1).Str(k2); }
  };
  static constexpr uint16_t kKeys = 0b11;
  static constexpr uint16_t kInsertMinimum = 0b111;  // k1, k2, req.

  absl::Status Decode(const Wire& w, RowOperationsDecoderOptions options = {}) {
    RowOperationsDecoder decoder(&schema_, &arena_, options);
    return decoder.Decode(w.rows, w.indirect, &ops_);
  }

  // Expects INVALID_ARGUMENT whose message contains every one of `parts`.
  void ExpectInvalid(const Wire& w, std::vector<std::string> parts,
                     RowOperationsDecoderOptions options = {}) {
    absl::Status s = Decode(w, options);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    for (const std::string& part : parts) {
      EXPECT_NE(s.message().find(part), std::string_view::npos)
          << "'" << part << "' not in: " << s.message();
    }
    EXPECT_TRUE(ops_.empty());
  }

  void ExpectValid(const Wire& w) {
    absl::Status s = Decode(w);
    BASALT_EXPECT_OK(s);
  }

  Wire ValidInsert() { return Wire().Op(Type::kInsert, kInsertMinimum).Keys().I32(5); }

  Schema schema_;
  Arena arena_;
  std::vector<DecodedRowOperation> ops_;
};

TEST_F(RowOperationsValidationTest, HandCraftedInsertDecodes) {
  Wire w = ValidInsert();
  // A second op, to check error messages name the right index below.
  w.Op(Type::kUpdate, kKeys | 1 << 4 | 1 << 5 | 1 << 6 | 1 << 7 | 1 << 8, 1 << 4)
      .Keys(2, "")
      .Byte(1)
      .I32(-99999)
      .Str("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80")
      .Str(std::string(kMaxCellBytes, 'x'));
  ExpectValid(w);
  ASSERT_EQ(ops_.size(), 2u);
  EXPECT_EQ(ops_[0].Get(2).int_value(), 5);
  EXPECT_TRUE(ops_[1].IsNull(4));
  EXPECT_EQ(ops_[1].Get(6).int_value(), -99999);
  EXPECT_EQ(ops_[1].Get(8).string_value().size(), kMaxCellBytes);
}

TEST_F(RowOperationsValidationTest, TruncatedAnywhere) {
  Wire full = ValidInsert();
  ExpectValid(full);
  for (size_t len = 1; len < full.rows.size(); ++len) {
    SCOPED_TRACE(len);
    Wire w = full;
    w.rows.resize(len);
    ExpectInvalid(w, {"row operation 0", "truncated"});
  }
  // A valid op followed by a partial one.
  Wire two = full;
  two.rows.append(full.rows.substr(0, 7));
  ExpectInvalid(two, {"row operation 1", "truncated", "column 'k1'"});
}

TEST_F(RowOperationsValidationTest, UnknownOpType) {
  for (int t : {0, 13, 128, 255}) {
    Wire w = ValidInsert();
    w.rows[0] = static_cast<char>(t);
    ExpectInvalid(w, {"row operation 0", "unknown operation type " + std::to_string(t)});
  }
}

TEST_F(RowOperationsValidationTest, IndirectRangeOutOfBounds) {
  auto with_k2_ref = [&](uint32_t offset, uint32_t length) {
    Wire w;
    w.indirect = "abc";
    w.Op(Type::kInsert, kInsertMinimum).I32(1).Ref(offset, length).I32(5);
    return w;
  };
  ExpectValid(with_k2_ref(0, 3));
  ExpectValid(with_k2_ref(3, 0));  // Empty value at the very end.
  ExpectValid(with_k2_ref(1, 1));  // References may share or skip bytes.
  ExpectInvalid(with_k2_ref(0, 4), {"column 'k2'", "[0, 4)", "3 bytes"});
  ExpectInvalid(with_k2_ref(4, 0), {"column 'k2'", "[4, 4)"});
  ExpectInvalid(with_k2_ref(2, 2), {"column 'k2'", "[2, 4)"});
  // offset + length overflows 32 bits: wraps to 1 if computed in uint32.
  ExpectInvalid(with_k2_ref(0xFFFFFFFF, 2), {"column 'k2'", "outside indirect_data"});
  ExpectInvalid(with_k2_ref(0xFFFFFFFF, 0), {"column 'k2'", "outside indirect_data"});
}

TEST_F(RowOperationsValidationTest, OversizedCell) {
  std::string big(kMaxCellBytes + 1, 'x');
  ExpectInvalid(Wire().Op(Type::kInsert, kInsertMinimum).I32(1).Str(big).I32(5),
                {"column 'k2'", "exceeds the limit of 65536 bytes"});
  // The length is checked even when the indirect data is not there.
  ExpectInvalid(Wire().Op(Type::kInsert, kInsertMinimum).I32(1).Ref(0, 0xFFFFFFFF).I32(5),
                {"column 'k2'", "exceeds the limit"});
  ExpectValid(Wire().Op(Type::kInsert, kInsertMinimum).I32(1).Str(big.substr(1)).I32(5));
}

TEST_F(RowOperationsValidationTest, MissingKeyColumn) {
  ExpectInvalid(Wire().Op(Type::kInsert, 0b110).Str("k").I32(5),
                {"row operation 0 (INSERT)", "missing key column 'k1'"});
  for (Type t : {Type::kUpdate, Type::kUpdateIgnore}) {
    ExpectInvalid(Wire().Op(t, 0b1001).I32(1).I64(3), {"missing key column 'k2'"});
  }
  for (Type t : {Type::kDelete, Type::kDeleteIgnore}) {
    ExpectInvalid(Wire().Op(t, 0b01).I32(1), {"missing key column 'k2'"});
  }
}

TEST_F(RowOperationsValidationTest, NullInNotNullColumn) {
  ExpectInvalid(Wire().Op(Type::kInsert, kInsertMinimum, 0b100).Keys(),
                {"column 'req'", "NOT NULL but was set to NULL"});
  ExpectInvalid(Wire().Op(Type::kInsert, kInsertMinimum, 0b1).Str("k").I32(5),
                {"column 'k1'", "NOT NULL"});
  ExpectInvalid(Wire().Op(Type::kUpdate, kKeys | 0b1000, 0b1000).Keys(),
                {"column 'def'", "NOT NULL"});
}

TEST_F(RowOperationsValidationTest, NullBitOnUnsetColumn) {
  ExpectInvalid(Wire().Op(Type::kInsert, kInsertMinimum, 1 << 4).Keys().I32(5),
                {"column 'name'", "NULL bit set for a column that is not set"});
}

TEST_F(RowOperationsValidationTest, BitsBeyondTheLastColumn) {
  ExpectInvalid(Wire().Op(Type::kInsert, kInsertMinimum | 1 << 9).Keys().I32(5),
                {"beyond the last of the schema's 9 columns"});
  ExpectInvalid(Wire().Op(Type::kInsert, kInsertMinimum, 1 << 15).Keys().I32(5),
                {"beyond the last"});
}

TEST_F(RowOperationsValidationTest, BoolMustBeZeroOrOne) {
  auto with_flag = [&](uint8_t b) {
    return Wire().Op(Type::kInsert, kInsertMinimum | 1 << 5).Keys().I32(5).Byte(b);
  };
  ExpectValid(with_flag(0));
  ExpectValid(with_flag(1));
  ExpectInvalid(with_flag(2), {"column 'flag'", "BOOL"});
  ExpectInvalid(with_flag(0xFF), {"column 'flag'"});
}

TEST_F(RowOperationsValidationTest, DecimalPrecision) {
  auto with_price = [&](int32_t v) {
    return Wire().Op(Type::kInsert, kInsertMinimum | 1 << 6).Keys().I32(5).I32(v);
  };
  ExpectValid(with_price(99999));
  ExpectValid(with_price(-99999));
  ExpectInvalid(with_price(100000), {"column 'price' (DECIMAL(5, 2))", "does not fit"});
  ExpectInvalid(with_price(std::numeric_limits<int32_t>::min()), {"column 'price'"});
}

TEST_F(RowOperationsValidationTest, VarcharLengthAndUtf8) {
  auto with_vc = [&](std::string_view v) {
    return Wire().Op(Type::kInsert, kInsertMinimum | 1 << 7).Keys().I32(5).Str(v);
  };
  ExpectValid(with_vc(""));
  ExpectValid(with_vc("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // 3 characters, 9 bytes.
  ExpectInvalid(with_vc("abcd"), {"column 'vc' (VARCHAR(3))", "4 characters"});
  ExpectInvalid(with_vc("\xff"), {"column 'vc'", "UTF-8"});
  ExpectInvalid(with_vc("a\xe2\x82"), {"column 'vc'", "UTF-8"});  // Cut inside a character.
}

TEST_F(RowOperationsValidationTest, InsertNeedsNotNullColumnsWithoutDefault) {
  for (Type t : {Type::kInsert, Type::kUpsert, Type::kInsertIgnore}) {
    ExpectInvalid(Wire().Op(t, kKeys).Keys(), {"missing column 'req'", "no default"});
    // 'def' has a default and the nullable columns may be left out.
    ExpectValid(Wire().Op(t, kInsertMinimum).Keys().I32(5));
  }
}

TEST_F(RowOperationsValidationTest, UpdateNeedsANonKeyColumn) {
  for (Type t : {Type::kUpdate, Type::kUpdateIgnore}) {
    ExpectInvalid(Wire().Op(t, kKeys).Keys(), {"sets no non-key column"});
    ExpectValid(Wire().Op(t, kKeys | 1 << 4, 1 << 4).Keys());  // SET name = NULL.
    ExpectValid(Wire().Op(t, kKeys | 1 << 3).Keys().I64(1));
  }
}

TEST_F(RowOperationsValidationTest, DeleteTakesExactlyTheKey) {
  for (Type t : {Type::kDelete, Type::kDeleteIgnore}) {
    ExpectValid(Wire().Op(t, kKeys).Keys());
    ExpectInvalid(Wire().Op(t, kKeys | 1 << 2).Keys().I32(5),
                  {"non-key column 'req'", "may set only key columns"});
    ExpectInvalid(Wire().Op(t, kKeys | 1 << 4, 1 << 4).Keys(), {"non-key column 'name'"});
  }
}

TEST_F(RowOperationsValidationTest, PartitionBoundsTakeAnySubsetOfTheKey) {
  for (Type t : {Type::kSplitRow, Type::kRangeLowerBound, Type::kRangeUpperBound,
                 Type::kExclusiveRangeLowerBound, Type::kInclusiveRangeUpperBound}) {
    SCOPED_TRACE(RowOperationTypeName(t));
    ExpectValid(Wire().Op(t, 0));
    ExpectValid(Wire().Op(t, 0b01).I32(1));
    ExpectValid(Wire().Op(t, 0b10).Str("x"));
    ExpectValid(Wire().Op(t, kKeys).Keys());
    ExpectInvalid(Wire().Op(t, kKeys | 1 << 3).Keys().I64(1), {"non-key column 'def'"});
  }
}

TEST_F(RowOperationsValidationTest, Limits) {
  Wire three = ValidInsert();
  three.rows += three.rows + three.rows;
  ExpectValid(three);
  RowOperationsDecoderOptions options;
  options.max_operations = 2;
  ExpectInvalid(three, {"row operation 2", "too many operations"}, options);
  options = {};
  options.max_payload_bytes = three.rows.size() + three.indirect.size() - 1;
  ExpectInvalid(three, {"exceeds the limit of", "split the batch"}, options);
  options = {};
  options.max_decoded_bytes = 1;
  ExpectInvalid(three, {"row operation 0", "too many operations"}, options);
}

TEST_F(RowOperationsValidationTest, ErrorClearsOpsAndNamesTheFailingOp) {
  Wire w = ValidInsert();
  w.Op(Type::kInsert, kKeys).Keys();
  ExpectInvalid(w, {"row operation 1 (INSERT)", "'req'"});
}

// The decoder checks bitmaps a byte at a time and falls back to CheckRowOperationColumns only for
// the message; both must accept exactly the same bitmaps.
TEST_F(RowOperationsValidationTest, DecoderAgreesWithCheckRowOperationColumns) {
  Random rng(SeedFromEnvOrTime());
  constexpr size_t kWireSizes[] = {4, 8, 4, 8, 8, 1, 4, 8, 8};  // All-zero cells are valid.
  int accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    Type type = kAllTypes[rng.Uniform(std::size(kAllTypes))];
    // Mostly valid-looking bitmaps: a random choice of columns, NULLs drawn from them.
    uint16_t isset = rng.Next32() & (rng.OneIn(20) ? 0xFFFF : 0x1FF);
    if (!RowOperationIsPartitionBound(type) && !rng.OneIn(8)) isset |= kKeys;
    if (RowOperationIsDeleteLike(type) && !rng.OneIn(4)) isset &= kKeys;
    if (RowOperationIsPartitionBound(type) && !rng.OneIn(4)) isset &= kKeys;
    uint16_t isnull = rng.OneIn(2) ? 0 : (rng.Next32() & (rng.OneIn(4) ? 0xFFFF : isset));
    Wire w;
    w.Op(type, isset, isnull);
    for (int i = 0; i < 9; ++i) {
      if ((isset >> i & 1) && !(isnull >> i & 1)) w.rows.append(kWireSizes[i], '\0');
    }
    const uint8_t set_bytes[2] = {static_cast<uint8_t>(isset), static_cast<uint8_t>(isset >> 8)};
    const uint8_t null_bytes[2] = {static_cast<uint8_t>(isnull), static_cast<uint8_t>(isnull >> 8)};
    absl::Status exact = CheckRowOperationColumns(type, schema_, set_bytes, null_bytes);
    absl::Status decoded = Decode(w);
    ASSERT_EQ(decoded.ok(), exact.ok())
        << RowOperationTypeName(type) << " isset=" << isset << " isnull=" << isnull << ": "
        << decoded << " / " << exact;
    if (!decoded.ok()) {
      EXPECT_EQ(decoded.code(), absl::StatusCode::kInvalidArgument) << decoded;
    }
    accepted += decoded.ok();
  }
  EXPECT_GT(accepted, 2000);
  EXPECT_LT(accepted, 18000);
}

TEST_F(RowOperationsValidationTest, ClientSideColumnCheck) {
  PartialRow row(&schema_);
  BASALT_ASSERT_OK(row.SetInt32("k1", 1));
  EXPECT_EQ(CheckRowOperationColumns(Type::kDelete, row).code(),
            absl::StatusCode::kInvalidArgument);
  BASALT_EXPECT_OK(CheckRowOperationColumns(Type::kSplitRow, row));
  BASALT_ASSERT_OK(row.SetString("k2", "x"));
  BASALT_EXPECT_OK(CheckRowOperationColumns(Type::kDelete, row));
  EXPECT_FALSE(CheckRowOperationColumns(Type::kInsert, row).ok());
  EXPECT_FALSE(CheckRowOperationColumns(Type::kUpdate, row).ok());
  BASALT_ASSERT_OK(row.SetInt32("req", 1));
  BASALT_EXPECT_OK(CheckRowOperationColumns(Type::kInsert, row));
  BASALT_EXPECT_OK(CheckRowOperationColumns(Type::kUpdate, row));
}

// ---- Fuzz ---------------------------------------------------------------------------------------

// Applies one random mutation to rows or indirect_data: a bit flip, a byte set to an interesting
// value, a truncation, an insertion, an erasure, a little-endian uint32 overwrite, or a splice of
// bytes copied from either buffer.
void Mutate(Random* rng, std::string* rows, std::string* indirect) {
  std::string* target = rng->OneIn(4) ? indirect : rows;
  std::string* source = rng->OneIn(2) ? rows : indirect;
  const size_t size = target->size();
  const size_t pos = rng->Uniform(size + 1);
  static constexpr uint8_t kInteresting[] = {0, 1, 2, 0x7F, 0x80, 0xFE, 0xFF, 12, 13, 0x40};
  switch (rng->Uniform(7)) {
    case 0:
      if (pos < size) (*target)[pos] ^= static_cast<char>(1u << rng->Uniform(8));
      break;
    case 1:
      if (pos < size) {
        (*target)[pos] = static_cast<char>(
            rng->OneIn(2) ? kInteresting[rng->Uniform(std::size(kInteresting))] : rng->Next32());
      }
      break;
    case 2:
      target->resize(pos);
      break;
    case 3:
      target->insert(pos, rng->Bytes(1 + rng->Uniform(8)));
      break;
    case 4:
      target->erase(pos, 1 + rng->Uniform(16));
      break;
    case 5: {
      static constexpr uint32_t kWords[] = {0, 1, 0xFFFFFFFF, 0x80000000, 0x10000, 0x10001};
      char word[4];
      EncodeFixed32(word, rng->OneIn(3) ? static_cast<uint32_t>(indirect->size())
                                        : kWords[rng->Uniform(std::size(kWords))]);
      target->replace(pos, std::min<size_t>(4, size - pos), word, 4);
      break;
    }
    default: {
      if (source->empty()) break;
      const size_t from = rng->Uniform(source->size());
      std::string chunk = source->substr(from, 1 + rng->Uniform(24));
      if (rng->OneIn(2)) {
        target->insert(pos, chunk);
      } else {
        target->replace(pos, std::min(chunk.size(), size - pos), chunk);
      }
      break;
    }
  }
}

TEST(RowOperationsFuzzTest, MutatedPayloadsNeverCrash) {
  const uint64_t seed = SeedFromEnvOrTime();
  Random rng(seed);
  const Schema schemas[] = {AllTypesSchema(), NoNullablesSchema()};

  // A pool of valid payloads of 1..8 random ops each, small strings so mutations hit structure.
  struct Payload {
    const Schema* schema;
    std::string rows, indirect;
  };
  std::vector<Payload> pool;
  for (int i = 0; i < 64; ++i) {
    Payload p{&schemas[i % 2], "", ""};
    RowOperationsEncoder encoder(&p.rows, &p.indirect);
    for (uint64_t n = 1 + rng.Uniform(8); n > 0; --n) {
      Type type = kAllTypes[rng.Uniform(std::size(kAllTypes))];
      encoder.Add(type, RandomRow(&rng, *p.schema, type, 12));
    }
    pool.push_back(std::move(p));
  }

  constexpr int kIterations = 100000;
  int decoded = 0, rejected = 0;
  Arena arena;
  std::vector<DecodedRowOperation> ops, ops2;
  for (int iter = 0; iter < kIterations; ++iter) {
    const Payload& base = pool[rng.Uniform(pool.size())];
    std::string rows = base.rows, indirect = base.indirect;
    for (uint64_t m = 1 + rng.Uniform(3); m > 0; --m) Mutate(&rng, &rows, &indirect);

    arena.Reset();
    RowOperationsDecoder decoder(base.schema, &arena);
    absl::Status s = decoder.Decode(rows, indirect, &ops);
    if (!s.ok()) {
      ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument)
          << "seed=" << seed << " iter=" << iter << ": " << s;
      ASSERT_TRUE(ops.empty());
      ++rejected;
      continue;
    }
    ++decoded;
    // A payload that decodes re-encodes to a canonical payload that decodes to the same ops and
    // re-encodes to the same bytes.
    std::string rows1, indirect1, rows2, indirect2;
    RowOperationsEncoder enc1(&rows1, &indirect1);
    for (const DecodedRowOperation& op : ops) enc1.Add(op.type, op);
    s = decoder.Decode(rows1, indirect1, &ops2);
    BASALT_ASSERT_OK(s) << "seed=" << seed << " iter=" << iter << ": " << s;
    ASSERT_EQ(ops2.size(), ops.size()) << "seed=" << seed << " iter=" << iter;
    for (const DecodedRowOperation& op : ops) {
      absl::Status exact = CheckRowOperationColumns(op.type, *op.schema, op.isset, op.isnull);
      BASALT_ASSERT_OK(exact) << "seed=" << seed << " iter=" << iter << ": " << exact;
    }
    RowOperationsEncoder enc2(&rows2, &indirect2);
    for (const DecodedRowOperation& op : ops2) enc2.Add(op.type, op);
    ASSERT_EQ(rows2, rows1) << "seed=" << seed << " iter=" << iter;
    ASSERT_EQ(indirect2, indirect1) << "seed=" << seed << " iter=" << iter;
    // Only variable-length offsets may differ from the input, never the size of an op.
    ASSERT_EQ(rows1.size(), rows.size()) << "seed=" << seed << " iter=" << iter;
  }
  LOG(INFO) << "fuzz: " << decoded << " payloads decoded, " << rejected << " rejected";
  // Both outcomes must be common, or the mutations are not exercising the decoder.
  EXPECT_GT(decoded, kIterations / 50);
  EXPECT_GT(rejected, kIterations / 10);
}

}  // namespace row_operations_test_file
}  // namespace
}  // namespace basalt
