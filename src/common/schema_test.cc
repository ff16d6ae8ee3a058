#include "common/schema.h"

#include <gtest/gtest.h>

#include "common/status_test_util.h"
#include "common/strings.h"
#include "proto/common.pb.h"

namespace basalt {
namespace {
namespace schema_test_file {

Schema TestSchema() {
  return Schema::Create(
             {
                 ColumnSchema("host", DataType::kString),
                 ColumnSchema("ts", DataType::kUnixtimeMicros),
                 ColumnSchema("value", DataType::kDouble, /*is_nullable=*/true),
                 ColumnSchema("price", DataType::kDecimal64, true, Datum::Decimal64(1050),
                              TypeAttributes{12, 2, 0}),
                 ColumnSchema(
                     "tag", DataType::kVarchar, false, Datum::Varchar("none"),
                     TypeAttributes{0, 0, 8},
                     ColumnStorageAttributes{EncodingType::kDict, CompressionType::kLz4, 4096}),
             },
             2)
      .value();
}

TEST(SchemaTest, BasicAccessorsAndLayout) {
  Schema s = TestSchema();
  EXPECT_EQ(s.num_columns(), 5);
  EXPECT_EQ(s.num_key_columns(), 2);
  EXPECT_TRUE(s.is_key_column(1));
  EXPECT_FALSE(s.is_key_column(2));
  EXPECT_EQ(s.find_column("value"), 2);
  EXPECT_EQ(s.find_column("nope"), -1);
  EXPECT_EQ(s.find_column_by_id(4), 4);
  EXPECT_EQ(s.next_column_id(), 5u);
  EXPECT_TRUE(s.has_nullables());
  EXPECT_EQ(s.column_offset(0), 0u);
  EXPECT_EQ(s.column_offset(1), sizeof(std::string_view));
  EXPECT_EQ(s.column_offset(2), sizeof(std::string_view) + 8);
  EXPECT_EQ(s.key_byte_size(), sizeof(std::string_view) + 8);
  EXPECT_EQ(s.fixed_row_size(), 2 * sizeof(std::string_view) + 8 + 8 + 8);
}

// SameType agrees with comparing TypeToString(): types and the attributes they show.
TEST(SchemaTest, SameTypeComparesTypesAndTheirShownAttributes) {
  const std::vector<ColumnSchema> cols = {
      ColumnSchema("a", DataType::kInt32),
      ColumnSchema("b", DataType::kInt64),
      ColumnSchema("c", DataType::kInt32, true, std::nullopt, TypeAttributes{9, 2, 7}),
      ColumnSchema("d", DataType::kDecimal64, false, std::nullopt, TypeAttributes{10, 2, 0}),
      ColumnSchema("e", DataType::kDecimal64, false, std::nullopt, TypeAttributes{10, 3, 0}),
      ColumnSchema("f", DataType::kDecimal64, false, std::nullopt, TypeAttributes{12, 2, 0}),
      ColumnSchema("g", DataType::kVarchar, false, std::nullopt, TypeAttributes{0, 0, 20}),
      ColumnSchema("h", DataType::kVarchar, false, std::nullopt, TypeAttributes{0, 0, 21}),
      ColumnSchema("i", DataType::kString)};
  for (const ColumnSchema& x : cols) {
    for (const ColumnSchema& y : cols) {
      EXPECT_EQ(x.SameType(y), x.TypeToString() == y.TypeToString())
          << x.ToString() << " / " << y.ToString();
    }
  }
  EXPECT_TRUE(cols[0].SameType(cols[2]));  // Attributes an INT32 does not show are ignored.
  EXPECT_FALSE(cols[3].SameType(cols[4]));
}

TEST(SchemaTest, CellsAreNaturallyAligned) {
  Schema s =
      Schema::Create(
          {ColumnSchema("a", DataType::kInt8), ColumnSchema("b", DataType::kInt64),
           ColumnSchema("c", DataType::kInt16), ColumnSchema("d", DataType::kBinary),
           ColumnSchema("e", DataType::kBool),
           ColumnSchema("f", DataType::kDecimal128, false, std::nullopt, TypeAttributes{20, 0, 0})},
          1)
          .value();
  EXPECT_EQ(s.column_offset(0), 0u);
  EXPECT_EQ(s.column_offset(1), 8u);
  EXPECT_EQ(s.column_offset(2), 16u);
  EXPECT_EQ(s.column_offset(3), 24u);
  EXPECT_EQ(s.column_offset(4), 40u);
  EXPECT_EQ(s.column_offset(5), 48u);
  EXPECT_EQ(s.fixed_row_size(), 64u);
  EXPECT_EQ(s.key_byte_size(), 8u);
}

TEST(SchemaTest, ValidationErrorsNameTheProblem) {
  auto expect_error = [](std::vector<ColumnSchema> cols, int num_key, std::string_view needle) {
    auto s = Schema::Create(std::move(cols), num_key);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find(ToAbsl(needle)), absl::string_view::npos) << s.status();
  };
  expect_error({}, 0, "at least one column");
  expect_error({ColumnSchema("a", DataType::kInt32)}, 0, "primary key");
  expect_error({ColumnSchema("a", DataType::kInt32), ColumnSchema("a", DataType::kInt64)}, 1,
               "duplicate column name 'a'");
  expect_error({ColumnSchema("k", DataType::kInt32, /*is_nullable=*/true)}, 1,
               "column 'k': primary key columns must be NOT NULL");
  expect_error({ColumnSchema("", DataType::kInt32)}, 1, "must not be empty");
  expect_error({ColumnSchema("k", DataType::kInt32, false, Datum::String("x"))}, 1,
               "default value");
  expect_error({ColumnSchema("k", DataType::kInt32),
                ColumnSchema("v", DataType::kInt32, false, Datum::Null(DataType::kInt32))},
               1, "NULL default");
  expect_error({ColumnSchema("k", DataType::kInt32),
                ColumnSchema("d", DataType::kDecimal32, false, Datum::Decimal32(100000),
                             TypeAttributes{5, 0, 0})},
               1, "does not fit DECIMAL(5, 0)");
  expect_error({ColumnSchema("k", DataType::kVarchar)}, 1, "VARCHAR length");
  std::vector<ColumnSchema> many;
  for (int i = 0; i <= kMaxColumns; i++)
    many.emplace_back("c" + std::to_string(i), DataType::kInt8);
  expect_error(many, 1, "too many columns");
}

TEST(SchemaTest, ProtobufRoundTrip) {
  Schema s = TestSchema();
  pb::SchemaPB pb;
  s.ToPB(&pb);
  auto back = Schema::FromPB(pb);
  BASALT_ASSERT_OK(back);
  EXPECT_TRUE(back->Equals(s)) << back->ToString() << "\nvs\n" << s.ToString();
  EXPECT_EQ(back->column(4).storage().compression, CompressionType::kLz4);
  EXPECT_EQ(back->column(3).default_value()->int_value(), 1050);
}

TEST(SchemaTest, FromPBRejectsMalformedInput) {
  pb::SchemaPB pb;
  TestSchema().ToPB(&pb);
  {
    pb::SchemaPB bad = pb;
    bad.mutable_columns(1)->set_type(static_cast<pb::DataType>(77));
    EXPECT_EQ(Schema::FromPB(bad).status().code(), absl::StatusCode::kInvalidArgument);
  }
  {
    pb::SchemaPB bad = pb;
    bad.mutable_columns(2)->set_default_value("abc");  // A DOUBLE needs 8 bytes.
    EXPECT_EQ(Schema::FromPB(bad).status().code(), absl::StatusCode::kInvalidArgument);
  }
  {
    pb::SchemaPB bad = pb;
    bad.mutable_columns(3)->set_is_key(true);  // Key column after a non-key column.
    EXPECT_FALSE(Schema::FromPB(bad).ok());
  }
  {
    pb::SchemaPB bad = pb;
    bad.mutable_columns(1)->set_id(0);  // Duplicate id.
    EXPECT_FALSE(Schema::FromPB(bad).ok());
  }
  {
    pb::SchemaPB bad = pb;
    bad.set_next_column_id(2);
    EXPECT_FALSE(Schema::FromPB(bad).ok());
  }
}

TEST(SchemaTest, UnkeyedSchemasHoldResultColumns) {
  auto s = Schema::CreateUnkeyed(
      {ColumnSchema("count(*)", DataType::kInt64), ColumnSchema("sum(v)", DataType::kInt64, true)});
  BASALT_ASSERT_OK(s);
  EXPECT_EQ(s->num_key_columns(), 0);
  EXPECT_EQ(s->find_column("sum(v)"), 1);
  auto dup = Schema::CreateUnkeyed(
      {ColumnSchema("a", DataType::kInt64), ColumnSchema("a", DataType::kDouble)});
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kInvalidArgument) << dup.status();
  EXPECT_FALSE(Schema::CreateUnkeyed({}).ok());
  // Create still wants a key.
  EXPECT_FALSE(Schema::Create({ColumnSchema("a", DataType::kInt64)}, 0).ok());
}

TEST(SchemaTest, ProjectionKeepsIds) {
  Schema s = TestSchema();
  auto p = s.Project({"tag", "host"});
  BASALT_ASSERT_OK(p);
  EXPECT_EQ(p->num_columns(), 2);
  EXPECT_EQ(p->num_key_columns(), 0);
  EXPECT_EQ(p->column_id(0), 4u);
  EXPECT_EQ(p->column_id(1), 0u);
  auto with_key = s.Project({"host", "ts", "value"});
  BASALT_ASSERT_OK(with_key);
  EXPECT_EQ(with_key->num_key_columns(), 2);
  EXPECT_EQ(s.Project({"nope"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.Project({"host", "host"}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.KeyProjection().num_columns(), 2);
}

// Schemas of up to 16 columns are searched linearly, larger ones through hash maps: both find
// every column by name and id, miss unknown ones, reject duplicates, and project into each other.
TEST(SchemaTest, LookupsOnSmallAndLargeSchemas) {
  for (int n : {1, 3, 16, 17, 40}) {
    SCOPED_TRACE(StrCat(n, " columns"));
    std::vector<ColumnSchema> cols;
    std::vector<ColumnId> ids;
    for (int i = 0; i < n; i++) {
      cols.emplace_back(StrCat("c", i), DataType::kInt32, /*is_nullable=*/i > 0);
      ids.push_back(static_cast<ColumnId>(100 + 3 * i));
    }
    absl::StatusOr<Schema> s = Schema::Create(cols, 1, ids);
    BASALT_ASSERT_OK(s);
    for (int i = 0; i < n; i++) {
      EXPECT_EQ(s->find_column(StrCat("c", i)), i);
      EXPECT_EQ(s->find_column_by_id(static_cast<ColumnId>(100 + 3 * i)), i);
    }
    EXPECT_EQ(s->find_column("c"), -1);
    EXPECT_EQ(s->find_column(StrCat("c", n)), -1);
    EXPECT_EQ(s->find_column_by_id(101), -1);
    EXPECT_EQ(s->find_column_by_id(100 + 3 * n), -1);

    // A copy keeps its lookups.
    const Schema copy = *s;
    EXPECT_EQ(copy.find_column(StrCat("c", n - 1)), n - 1);

    // Projections of every size, in reverse order.
    std::vector<std::string> names;
    for (int i = n - 1; i >= 0; i--) names.push_back(StrCat("c", i));
    absl::StatusOr<Schema> p = s->Project(names);
    BASALT_ASSERT_OK(p);
    for (int i = 0; i < n; i++) {
      EXPECT_EQ(p->find_column(StrCat("c", i)), n - 1 - i);
      EXPECT_EQ(p->find_column_by_id(static_cast<ColumnId>(100 + 3 * i)), n - 1 - i);
    }

    std::vector<ColumnSchema> dup_name = cols;
    dup_name.push_back(ColumnSchema("c0", DataType::kInt32, true));
    std::vector<ColumnId> more_ids = ids;
    more_ids.push_back(1);
    EXPECT_EQ(Schema::Create(dup_name, 1, more_ids).status().code(),
              absl::StatusCode::kInvalidArgument);
    std::vector<ColumnSchema> extra = cols;
    extra.push_back(ColumnSchema("x", DataType::kInt32, true));
    std::vector<ColumnId> dup_ids = ids;
    dup_ids.push_back(ids.back());
    absl::StatusOr<Schema> bad = Schema::Create(extra, 1, dup_ids);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
    EXPECT_NE(bad.status().message().find("duplicate column id"), std::string_view::npos)
        << bad.status();
  }
}

TEST(SchemaTest, SchemaChangesNeverReuseIds) {
  Schema s = TestSchema();
  auto dropped = s.DropColumn("tag");
  BASALT_ASSERT_OK(dropped);
  EXPECT_EQ(dropped->version(), 1u);
  EXPECT_EQ(dropped->next_column_id(), 5u);
  auto added = dropped->AddColumn(ColumnSchema("tag", DataType::kInt32, true));
  BASALT_ASSERT_OK(added);
  EXPECT_EQ(added->column_id(added->find_column("tag")), 5u);
  EXPECT_EQ(added->next_column_id(), 6u);
  auto renamed = added->RenameColumn("value", "v2");
  BASALT_ASSERT_OK(renamed);
  EXPECT_EQ(renamed->column_id(renamed->find_column("v2")), 2u);
  EXPECT_EQ(renamed->version(), 3u);

  EXPECT_EQ(s.DropColumn("host").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.DropColumn("zzz").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.AddColumn(ColumnSchema("ts", DataType::kInt8, true)).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(s.AddColumn(ColumnSchema("nn", DataType::kInt8)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.RenameColumn("value", "ts").status().code(), absl::StatusCode::kAlreadyExists);
}

TEST(SchemaTest, ToString) {
  Schema s = TestSchema();
  EXPECT_EQ(s.ToString(),
            "(\n  host STRING NOT NULL,\n  ts UNIXTIME_MICROS NOT NULL,\n"
            "  value DOUBLE NULLABLE,\n  price DECIMAL(12, 2) NULLABLE DEFAULT 10.50,\n"
            "  tag VARCHAR(8) NOT NULL DEFAULT \"none\",\n  PRIMARY KEY (host, ts)\n)");
}

}  // namespace schema_test_file
}  // namespace
}  // namespace basalt
