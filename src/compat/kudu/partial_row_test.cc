// KuduSchemaBuilder/KuduSchema, KuduPartialRow and KuduValue without a cluster.

#include "kudu/common/partial_row.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kudu/client/schema.h"
#include "kudu/client/value.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // KuduSchema::Reset.

// Asserts that a kudu::Status is OK, printing it otherwise.
#define ASSERT_KUDU_OK(expr)                 \
  do {                                       \
    const ::kudu::Status _st = (expr);       \
    ASSERT_TRUE(_st.ok()) << _st.ToString(); \
  } while (0)

namespace kudu {
namespace client {
namespace {

KuduSchema TestSchema() {
  KuduSchemaBuilder b;
  b.AddColumn("key")->Type(KuduColumnSchema::INT32)->NotNull()->PrimaryKey();
  b.AddColumn("name")->Type(KuduColumnSchema::STRING)->Nullable();
  b.AddColumn("v")->Type(KuduColumnSchema::VARCHAR)->Length(3)->Nullable();
  b.AddColumn("d")
      ->Type(KuduColumnSchema::DECIMAL)
      ->Precision(10)
      ->Scale(2)
      ->NotNull()
      ->Default(KuduValue::FromDecimal(120, 1));
  b.AddColumn("n")->Type(KuduColumnSchema::INT64)->NotNull()->Default(KuduValue::FromInt(7));
  KuduSchema schema;
  Status s = b.Build(&schema);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return schema;
}

TEST(KuduSchemaTest, BuildAndInspect) {
  KuduSchema schema = TestSchema();
  ASSERT_EQ(5u, schema.num_columns());
  EXPECT_EQ("key", schema.Column(0).name());
  EXPECT_EQ(KuduColumnSchema::INT32, schema.Column(0).type());
  EXPECT_FALSE(schema.Column(0).is_nullable());
  EXPECT_TRUE(schema.Column(1).is_nullable());
  EXPECT_EQ(3, schema.Column(2).type_attributes().length());
  EXPECT_EQ(10, schema.Column(3).type_attributes().precision());
  EXPECT_EQ(2, schema.Column(3).type_attributes().scale());
  std::vector<int> keys;
  schema.GetPrimaryKeyColumnIndexes(&keys);
  EXPECT_EQ(std::vector<int>{0}, keys);
  KuduColumnSchema col = schema.Column(0);
  EXPECT_TRUE(schema.HasColumn("name", &col));
  EXPECT_EQ("name", col.name());
  EXPECT_FALSE(schema.HasColumn("nope", nullptr));
  EXPECT_EQ(-1, schema.GetAutoIncrementingColumnIndex());
  EXPECT_NE(std::string::npos, schema.ToString().find("name"));
  KuduSchema copy = schema;
  EXPECT_TRUE(copy == schema);
  EXPECT_TRUE(schema.Column(1) != schema.Column(2));

  // Reset rebuilds an equal schema from its columns.
  std::vector<KuduColumnSchema> cols;
  for (size_t i = 0; i < schema.num_columns(); i++) cols.push_back(schema.Column(i));
  KuduSchema rebuilt;
  Status s = rebuilt.Reset(cols, 1);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(rebuilt == schema) << rebuilt.ToString();
}

TEST(KuduSchemaTest, BuildErrors) {
  {
    KuduSchemaBuilder b;
    b.AddColumn("key")->Type(KuduColumnSchema::INT32)->NotNull();
    KuduSchema s;
    Status st = b.Build(&s);
    EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();  // No primary key.
  }
  {
    KuduSchemaBuilder b;
    b.AddColumn("key")
        ->Type(KuduColumnSchema::INT32)
        ->NotNull()
        ->PrimaryKey()
        ->Default(KuduValue::CopyString("x"));
    KuduSchema s;
    Status st = b.Build(&s);
    EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  }
  {
    KuduSchemaBuilder b;
    b.AddColumn("key")->Type(KuduColumnSchema::INT32)->NotNull()->NonUniquePrimaryKey();
    KuduSchema s;
    Status st = b.Build(&s);
    EXPECT_TRUE(st.IsNotSupported()) << st.ToString();
  }
  {
    KuduSchemaBuilder b;
    b.AddColumn("key")->Type(KuduColumnSchema::INT32)->NotNull()->PrimaryKey();
    b.AddColumn("i")->Type(KuduColumnSchema::INT32)->Immutable();
    KuduSchema s;
    Status st = b.Build(&s);
    EXPECT_TRUE(st.IsNotSupported()) << st.ToString();
  }
  {
    // 1.234 cannot be stored exactly at scale 2.
    KuduSchemaBuilder b;
    b.AddColumn("key")->Type(KuduColumnSchema::INT32)->NotNull()->PrimaryKey();
    b.AddColumn("d")
        ->Type(KuduColumnSchema::DECIMAL)
        ->Precision(10)
        ->Scale(2)
        ->Default(KuduValue::FromDecimal(1234, 3));
    KuduSchema s;
    Status st = b.Build(&s);
    EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  }
}

TEST(KuduSchemaTest, NamesOfTypesAndAttributes) {
  EXPECT_EQ("UNIXTIME_MICROS", KuduColumnSchema::DataTypeToString(KuduColumnSchema::TIMESTAMP));
  KuduColumnSchema::DataType t;
  ASSERT_KUDU_OK(KuduColumnSchema::StringToDataType("int64", &t));
  EXPECT_EQ(KuduColumnSchema::INT64, t);
  EXPECT_TRUE(KuduColumnSchema::StringToDataType("int65", &t).IsInvalidArgument());
  KuduColumnStorageAttributes::EncodingType e;
  ASSERT_KUDU_OK(KuduColumnStorageAttributes::StringToEncodingType("bit_shuffle", &e));
  EXPECT_EQ(KuduColumnStorageAttributes::BIT_SHUFFLE, e);
  KuduColumnStorageAttributes::CompressionType c;
  ASSERT_KUDU_OK(KuduColumnStorageAttributes::StringToCompressionType("LZ4", &c));
  EXPECT_EQ(KuduColumnStorageAttributes::LZ4, c);
  EXPECT_TRUE(KuduColumnStorageAttributes::StringToCompressionType("zip", &c).IsInvalidArgument());
}

TEST(KuduPartialRowTest, SettersGettersAndErrors) {
  KuduSchema schema = TestSchema();
  std::unique_ptr<KuduPartialRow> row(schema.NewRow());
  EXPECT_FALSE(row->IsKeySet());
  ASSERT_KUDU_OK(row->SetInt32("key", 42));
  EXPECT_TRUE(row->IsKeySet());
  int32_t k = 0;
  ASSERT_KUDU_OK(row->GetInt32("key", &k));
  EXPECT_EQ(42, k);
  ASSERT_KUDU_OK(row->GetInt32(0, &k));

  ASSERT_KUDU_OK(row->SetString("name", "alice"));
  Slice name;
  ASSERT_KUDU_OK(row->GetString("name", &name));
  EXPECT_EQ("alice", name.ToString());
  ASSERT_KUDU_OK(row->SetNull("name"));
  EXPECT_TRUE(row->IsNull("name"));
  EXPECT_TRUE(row->GetString("name", &name).IsNotFound());

  // VARCHAR(3) values are cut to three characters (UTF-8 aware), as Kudu does.
  ASSERT_KUDU_OK(row->SetVarchar("v", "h\xc3\xa9llo"));
  Slice v;
  ASSERT_KUDU_OK(row->GetVarchar("v", &v));
  EXPECT_EQ("h\xc3\xa9l", v.ToString());

  ASSERT_KUDU_OK(row->SetUnscaledDecimal("d", 12345));
  int128_t d = 0;
  ASSERT_KUDU_OK(row->GetUnscaledDecimal("d", &d));
  EXPECT_TRUE(d == 12345);
  Status s = row->SetUnscaledDecimal("d", static_cast<int128_t>(INT64_MAX) * 4);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();

  s = row->SetInt32("nope", 1);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  s = row->SetInt64("key", 1);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  s = row->SetInt32(17, 1);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  s = row->SetNull("key");
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  s = row->SetSerial("key", 1);
  EXPECT_TRUE(s.IsNotSupported()) << s.ToString();
  s = row->SetVarchar("name", "x");
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  std::string encoded;
  EXPECT_TRUE(row->EncodeRowKey(&encoded).IsNotSupported());

  EXPECT_FALSE(row->AllColumnsSet());
  ASSERT_KUDU_OK(row->SetInt64("n", 9));
  EXPECT_TRUE(row->AllColumnsSet());
  EXPECT_EQ(0u, row->ToString().find("int32 key=42"));

  // Copies own their cells.
  KuduPartialRow copy(*row);
  ASSERT_KUDU_OK(row->SetInt32("key", 1));
  ASSERT_KUDU_OK(copy.GetInt32("key", &k));
  EXPECT_EQ(42, k);
  copy = *row;
  ASSERT_KUDU_OK(copy.GetInt32("key", &k));
  EXPECT_EQ(1, k);

  ASSERT_KUDU_OK(row->Unset("key"));
  EXPECT_FALSE(row->IsColumnSet("key"));
  EXPECT_FALSE(row->IsKeySet());
}

TEST(KuduValueTest, CloneAndOwnership) {
  std::unique_ptr<KuduValue> v(KuduValue::FromDouble(2.5));
  std::unique_ptr<KuduValue> c(v->Clone());
  EXPECT_NE(v.get(), c.get());
  // A column default of a cloned value builds like the original.
  KuduSchemaBuilder b;
  b.AddColumn("key")->Type(KuduColumnSchema::INT32)->NotNull()->PrimaryKey();
  b.AddColumn("x")->Type(KuduColumnSchema::DOUBLE)->NotNull()->Default(c.release());
  b.AddColumn("s")
      ->Type(KuduColumnSchema::STRING)
      ->NotNull()
      ->Default(KuduValue::CopyString(Slice("dflt")));
  b.AddColumn("f")->Type(KuduColumnSchema::BOOL)->NotNull()->Default(KuduValue::FromBool(true));
  KuduSchema schema;
  Status s = b.Build(&schema);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(4u, schema.num_columns());
}

}  // namespace
}  // namespace client
}  // namespace kudu
