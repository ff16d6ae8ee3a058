#include "tablet/row_changelist.h"

#include <string>

#include <glog/logging.h>
#include <gtest/gtest.h>

#include "common/random.h"
#include "common/status_test_util.h"

namespace basalt {
namespace {
namespace row_changelist_test_file {

Schema TestSchema() {
  auto s = Schema::Create({ColumnSchema("key", DataType::kInt32),
                           ColumnSchema("i", DataType::kInt32, /*is_nullable=*/true),
                           ColumnSchema("s", DataType::kString, /*is_nullable=*/true),
                           ColumnSchema("b", DataType::kBool)},
                          1);
  CHECK(s.ok());
  return *s;
}

TEST(RowChangeListTest, UpdateRoundTripAndGoldenBytes) {
  std::string buf;
  RowChangeListEncoder enc(&buf);
  enc.SetToUpdate();
  int32_t v = 0x01020304;
  enc.AddColumnUpdate(1, DataType::kInt32, &v);
  std::string_view s = "hi";
  enc.AddColumnUpdate(2, DataType::kString, &s);
  enc.AddColumnUpdate(1, DataType::kInt32, nullptr);
  const std::string golden(
      "\x01"                      // UPDATE
      "\x02\x04\x04\x03\x02\x01"  // col 1 := 4 bytes LE
      "\x04\x02hi"                // col 2 := "hi"
      "\x03",                     // col 1 := NULL
      12);
  EXPECT_EQ(buf, golden);

  RowChangeListDecoder dec(buf);
  BASALT_ASSERT_OK(dec.Init());
  EXPECT_TRUE(dec.is_update());
  ColumnUpdate u;
  BASALT_ASSERT_OK(dec.ReadNext(&u));
  EXPECT_EQ(u.column_id, 1u);
  EXPECT_FALSE(u.is_null);
  EXPECT_EQ(u.value, std::string_view("\x04\x03\x02\x01", 4));
  BASALT_ASSERT_OK(dec.ReadNext(&u));
  EXPECT_EQ(u.column_id, 2u);
  EXPECT_EQ(u.value, "hi");
  BASALT_ASSERT_OK(dec.ReadNext(&u));
  EXPECT_EQ(u.column_id, 1u);
  EXPECT_TRUE(u.is_null);
  EXPECT_FALSE(dec.HasNext());
  EXPECT_EQ(RowChangeListToString(buf), "UPDATE(col 1=<4 bytes>, col 2=<2 bytes>, col 1=NULL)");
  // Column 1 appears twice: framing is fine, full validation is not.
  EXPECT_EQ(ValidateRowChangeList(TestSchema(), buf).code(), absl::StatusCode::kDataLoss);
}

TEST(RowChangeListTest, DeleteAndReinsert) {
  std::string buf;
  RowChangeListEncoder(&buf).SetToDelete();
  EXPECT_EQ(buf, "\x02");
  BASALT_EXPECT_OK(ValidateRowChangeList(TestSchema(), buf));
  EXPECT_EQ(RowChangeListToString(buf), "DELETE");

  Schema schema = TestSchema();
  alignas(16) uint8_t row[64] = {};
  int32_t key = 7, i = 9;
  std::string_view str = "abc";
  std::memcpy(row + schema.column_offset(0), &key, 4);
  std::memcpy(row + schema.column_offset(1), &i, 4);
  std::memcpy(row + schema.column_offset(2), &str, sizeof(str));
  row[schema.column_offset(3)] = 1;
  uint8_t nulls[1] = {0};
  RowChangeListEncoder enc(&buf);
  enc.EncodeReinsert(schema, row, nulls);
  BASALT_ASSERT_OK(ValidateRowChangeList(schema, buf)) << RowChangeListToString(buf);
  RowChangeListDecoder dec(buf);
  BASALT_ASSERT_OK(dec.Init());
  EXPECT_TRUE(dec.is_reinsert());
  int n = 0;
  while (dec.HasNext()) {
    ColumnUpdate u;
    BASALT_ASSERT_OK(dec.ReadNext(&u));
    ++n;
    if (u.column_id == 2) {
      EXPECT_EQ(u.value, "abc");
    }
  }
  EXPECT_EQ(n, 3);
  // A REINSERT missing a column fails validation.
  std::string partial;
  RowChangeListEncoder enc2(&partial);
  enc2.SetToReinsert();
  enc2.AddColumnUpdate(1, DataType::kInt32, &i);
  EXPECT_EQ(ValidateRowChangeList(schema, partial).code(), absl::StatusCode::kDataLoss);
}

TEST(RowChangeListTest, ValidationAgainstSchema) {
  Schema schema = TestSchema();
  auto check = [&](auto fill) {
    std::string buf;
    RowChangeListEncoder enc(&buf);
    enc.SetToUpdate();
    fill(&enc);
    return ValidateRowChangeList(schema, buf).code();
  };
  int32_t v = 1;
  int64_t v64 = 1;
  uint8_t bad_bool = 2, good_bool = 1;
  EXPECT_EQ(check([&](auto* e) { e->AddColumnUpdate(1, DataType::kInt32, &v); }),
            absl::StatusCode::kOk);
  EXPECT_EQ(check([&](auto* e) { e->AddColumnUpdate(3, DataType::kBool, &good_bool); }),
            absl::StatusCode::kOk);
  // Key column, unknown column, NULL in NOT NULL, bad BOOL, wrong width.
  EXPECT_EQ(check([&](auto* e) { e->AddColumnUpdate(0, DataType::kInt32, &v); }),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(check([&](auto* e) { e->AddColumnUpdate(9, DataType::kInt32, &v); }),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(check([&](auto* e) { e->AddColumnUpdate(3, DataType::kBool, nullptr); }),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(check([&](auto* e) { e->AddColumnUpdate(3, DataType::kBool, &bad_bool); }),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(check([&](auto* e) { e->AddColumnUpdate(1, DataType::kInt64, &v64); }),
            absl::StatusCode::kDataLoss);
}

TEST(RowChangeListTest, MalformedBytes) {
  Schema schema = TestSchema();
  for (std::string bad :
       {std::string(), std::string("\x00", 1), std::string("\x04"), std::string("\x01"),
        std::string("\x02\x00", 2), std::string("\x01\x02"), std::string("\x01\x02\x05\x01\x02"),
        std::string("\x01\x82"), std::string("\x01\x02\xff\xff\xff\xff\x0f")}) {
    EXPECT_EQ(ValidateRowChangeList(schema, bad).code(), absl::StatusCode::kDataLoss)
        << RowChangeListToString(bad);
  }
}

// Every truncation, and random byte flips, of valid lists give a clean status, never a crash.
TEST(RowChangeListTest, CorruptionNeverCrashes) {
  Random rnd(SeedFromEnvOrTime());
  Schema schema = TestSchema();
  std::string buf;
  RowChangeListEncoder enc(&buf);
  enc.SetToUpdate();
  int32_t v = 42;
  std::string_view s = "some string value";
  enc.AddColumnUpdate(1, DataType::kInt32, &v);
  enc.AddColumnUpdate(2, DataType::kString, &s);
  BASALT_ASSERT_OK(ValidateRowChangeList(schema, buf));
  for (size_t len = 0; len < buf.size(); ++len) {
    absl::Status st = ValidateRowChangeList(schema, buf.substr(0, len));
    // A cut exactly between entries is still a valid (shorter) list.
    if (len != 1 + 2 + 4) {
      EXPECT_FALSE(st.ok()) << "len=" << len;
    }
    if (!st.ok()) {
      EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
    }
  }
  for (int i = 0; i < 2000; ++i) {
    std::string c = buf;
    c[rnd.Uniform(c.size())] ^= static_cast<char>(1 + rnd.Uniform(255));
    absl::Status st = ValidateRowChangeList(schema, c);
    if (!st.ok()) {
      EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
    }
    RowChangeListToString(c);
  }
}

}  // namespace row_changelist_test_file
}  // namespace
}  // namespace basalt
