// Unit tests of the client that need no server: schemas, rows, values, predicates, operation
// encoding, routing by partition key, and scan batch decoding.

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/client.h"
#include "client/client_internal.h"
#include "client/client_test_util.h"
#include "client/meta_cache.h"
#include "client/scan_batch_internal.h"
#include "client/tablet_writer.h"
#include "client/write_schema.h"
#include "common/arena.h"
#include "common/random.h"
#include "common/row_operations.h"
#include "common/status_macros.h"
#include "common/status_test_util.h"
#include "proto/common.pb.h"
#include "proto/master.pb.h"
#include "rpc/net_util.h"

namespace basalt::client {
namespace {
namespace client_test_file {

using internal::Access;
using internal::MakeTestTable;

Schema MustBuild(SchemaBuilder* b) {
  Schema s;
  absl::Status st = b->Build(&s);
  CHECK(st.ok()) << st;
  return s;
}

// key INT32, name STRING NULL, v INT64 NOT NULL DEFAULT 7, d DOUBLE NULL, flag BOOL NULL,
// price DECIMAL(10, 2) NULL, code VARCHAR(4) NULL, blob BINARY NULL, day DATE NULL,
// ts UNIXTIME_MICROS NULL, small INT8 NULL, mid INT16 NULL, f FLOAT NULL.
Schema WideSchema() {
  SchemaBuilder b;
  b.AddColumn("key")->Type(ColumnSchema::INT32)->NotNull()->PrimaryKey();
  b.AddColumn("name")->Type(ColumnSchema::STRING)->Nullable();
  b.AddColumn("v")->Type(ColumnSchema::INT64)->NotNull()->Default(Value::FromInt(7));
  b.AddColumn("d")->Type(ColumnSchema::DOUBLE);
  b.AddColumn("flag")->Type(ColumnSchema::BOOL);
  b.AddColumn("price")->Type(ColumnSchema::DECIMAL)->Precision(10)->Scale(2);
  b.AddColumn("code")->Type(ColumnSchema::VARCHAR)->Length(4);
  b.AddColumn("blob")->Type(ColumnSchema::BINARY);
  b.AddColumn("day")->Type(ColumnSchema::DATE);
  b.AddColumn("ts")->Type(ColumnSchema::UNIXTIME_MICROS);
  b.AddColumn("small")->Type(ColumnSchema::INT8);
  b.AddColumn("mid")->Type(ColumnSchema::INT16);
  b.AddColumn("f")->Type(ColumnSchema::FLOAT);
  return MustBuild(&b);
}

// (a INT32, b STRING) key, v INT32 NULL.
Schema CompoundSchema() {
  SchemaBuilder b;
  b.AddColumn("a")->Type(ColumnSchema::INT32)->NotNull();
  b.AddColumn("b")->Type(ColumnSchema::STRING)->NotNull();
  b.AddColumn("v")->Type(ColumnSchema::INT32)->Nullable();
  b.SetPrimaryKey({"a", "b"});
  return MustBuild(&b);
}

// ---- SchemaBuilder
// -------------------------------------------------------------------------------

TEST(SchemaBuilderTest, BuildsColumnsWithAttributes) {
  Schema s = WideSchema();
  ASSERT_EQ(s.num_columns(), 13);
  EXPECT_EQ(s.num_key_columns(), 1);
  EXPECT_EQ(s.FindColumn("price"), 5);
  EXPECT_EQ(s.FindColumn("nope"), -1);
  ColumnSchema key = s.Column(0);
  EXPECT_EQ(key.name(), "key");
  EXPECT_FALSE(key.is_nullable());
  ColumnSchema v = s.Column(2);
  ASSERT_TRUE(v.default_value().has_value());
  EXPECT_EQ(v.default_value()->ToString(), "7");
  ColumnSchema price = s.Column(5);
  EXPECT_EQ(price.type(), ColumnSchema::DECIMAL);
  EXPECT_EQ(price.precision(), 10);
  EXPECT_EQ(price.scale(), 2);
  EXPECT_TRUE(price.is_nullable());  // Columns are nullable unless NotNull().
  EXPECT_EQ(s.Column(6).type(), ColumnSchema::VARCHAR);
  EXPECT_EQ(s.Column(6).length(), 4);
  EXPECT_EQ(s.Column(6).ToString(), "code VARCHAR(4) NULLABLE");
  Schema copy = s;
  EXPECT_TRUE(copy.Equals(s));
  EXPECT_FALSE(copy.Equals(CompoundSchema()));
  EXPECT_EQ(CompoundSchema().num_key_columns(), 2);
}

TEST(SchemaBuilderTest, RejectsBadSchemasNamingTheColumn) {
  struct Case {
    std::function<void(SchemaBuilder*)> build;
    std::string message;
  };
  std::vector<Case> cases = {
      {[](SchemaBuilder* b) { b->AddColumn("a")->Type(ColumnSchema::INT32); }, "no primary key"},
      {[](SchemaBuilder* b) {
         b->AddColumn("a")->Type(ColumnSchema::INT32);
         b->AddColumn("k")->Type(ColumnSchema::INT32)->PrimaryKey();
       },
       "'k'"},
      {[](SchemaBuilder* b) { b->AddColumn("k")->PrimaryKey(); }, "column 'k': no type"},
      {[](SchemaBuilder* b) {
         b->AddColumn("k")->Type(ColumnSchema::INT32)->PrimaryKey();
         b->AddColumn("k")->Type(ColumnSchema::INT32);
       },
       "k"},
      {[](SchemaBuilder* b) {
         b->AddColumn("k")->Type(ColumnSchema::INT32)->PrimaryKey();
         b->AddColumn("s")->Type(ColumnSchema::STRING)->Default(Value::FromInt(3));
       },
       "column 's'"},
      {[](SchemaBuilder* b) {
         b->AddColumn("k")->Type(ColumnSchema::INT32)->PrimaryKey();
         b->AddColumn("p")->Type(ColumnSchema::DECIMAL)->Precision(0);
       },
       "column 'p'"},
      {[](SchemaBuilder* b) {
         b->AddColumn("k")->Type(ColumnSchema::INT32)->PrimaryKey();
         b->AddColumn("x")->Type(ColumnSchema::INT32)->RenameTo("y");
       },
       "RenameTo"},
      {[](SchemaBuilder* b) {
         b->AddColumn("a")->Type(ColumnSchema::INT32);
         b->AddColumn("b")->Type(ColumnSchema::INT32);
         b->SetPrimaryKey({"b", "a"});
       },
       "key columns come first"},
      {[](SchemaBuilder* b) {
         b->AddColumn("a")->Type(ColumnSchema::INT32)->Nullable();
         b->SetPrimaryKey({"a"});
       },
       "cannot be nullable"},
      {[](SchemaBuilder* b) {
         b->AddColumn("k")->Type(ColumnSchema::INT8)->PrimaryKey();
         b->AddColumn("v")->Type(ColumnSchema::INT8)->Default(Value::FromInt(300));
       },
       "column 'v'"},
  };
  for (size_t i = 0; i < cases.size(); i++) {
    SchemaBuilder b;
    cases[i].build(&b);
    Schema s;
    absl::Status st = b.Build(&s);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << i << ": " << st;
    EXPECT_NE(st.message().find(cases[i].message), absl::string_view::npos) << i << ": " << st;
  }
}

// ---- PartialRow
// ----------------------------------------------------------------------------------

TEST(PartialRowTest, TypedSettersAndGettersRoundTrip) {
  Schema s = WideSchema();
  PartialRow row(&s);
  BASALT_ASSERT_OK(row.SetInt32("key", -5));
  std::string name = "alice";
  BASALT_ASSERT_OK(row.SetString("name", name));
  name[0] = 'X';  // The row holds its own copy.
  BASALT_ASSERT_OK(row.SetInt64("v", int64_t{1} << 40));
  BASALT_ASSERT_OK(row.SetDouble("d", 2.5));
  BASALT_ASSERT_OK(row.SetBool("flag", true));
  BASALT_ASSERT_OK(row.SetUnscaledDecimal("price", 12345));
  BASALT_ASSERT_OK(row.SetString("code", "abcd"));
  BASALT_ASSERT_OK(row.SetBinary("blob", std::string("\0\1", 2)));
  BASALT_ASSERT_OK(row.SetDate("day", 19000));
  BASALT_ASSERT_OK(row.SetUnixTimeMicros("ts", 123456789));
  BASALT_ASSERT_OK(row.SetInt8(10, -8));
  BASALT_ASSERT_OK(row.SetInt16("mid", 300));
  BASALT_ASSERT_OK(row.Set("f", Value::FromFloat(1.5f)));

  int32_t i32;
  BASALT_ASSERT_OK(row.GetInt32("key", &i32));
  EXPECT_EQ(i32, -5);
  std::string_view sv;
  BASALT_ASSERT_OK(row.GetString("name", &sv));
  EXPECT_EQ(sv, "alice");
  int64_t i64;
  BASALT_ASSERT_OK(row.GetInt64("v", &i64));
  EXPECT_EQ(i64, int64_t{1} << 40);
  double d;
  BASALT_ASSERT_OK(row.GetDouble("d", &d));
  EXPECT_EQ(d, 2.5);
  bool flag;
  BASALT_ASSERT_OK(row.GetBool("flag", &flag));
  EXPECT_TRUE(flag);
  BASALT_ASSERT_OK(row.GetUnscaledDecimal("price", &i64));
  EXPECT_EQ(i64, 12345);
  BASALT_ASSERT_OK(row.GetBinary("blob", &sv));
  EXPECT_EQ(sv, std::string_view("\0\1", 2));
  BASALT_ASSERT_OK(row.GetDate("day", &i32));
  EXPECT_EQ(i32, 19000);
  BASALT_ASSERT_OK(row.GetUnixTimeMicros("ts", &i64));
  EXPECT_EQ(i64, 123456789);
  int8_t i8;
  BASALT_ASSERT_OK(row.GetInt8("small", &i8));
  EXPECT_EQ(i8, -8);
  int16_t i16;
  BASALT_ASSERT_OK(row.GetInt16(11, &i16));
  EXPECT_EQ(i16, 300);
  float f;
  BASALT_ASSERT_OK(row.GetFloat("f", &f));
  EXPECT_EQ(f, 1.5f);
  EXPECT_TRUE(row.IsKeySet());
  EXPECT_NE(row.ToString().find("string name=\"alice\""), std::string::npos) << row.ToString();
  EXPECT_NE(row.ToString().find("price=123.45"), std::string::npos) << row.ToString();

  // A copy owns its strings too.
  auto copy = std::make_unique<PartialRow>(row);
  PartialRow assigned(&s);
  assigned = *copy;
  copy.reset();
  BASALT_ASSERT_OK(assigned.GetString("name", &sv));
  EXPECT_EQ(sv, "alice");
  EXPECT_EQ(assigned.ToString(), row.ToString());
}

TEST(PartialRowTest, ErrorsLeaveTheRowUnchanged) {
  Schema s = WideSchema();
  PartialRow row(&s);
  EXPECT_EQ(row.SetInt32("nope", 1).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(row.SetInt32(99, 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(row.SetInt32(-1, 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(row.SetInt64("key", 1).code(), absl::StatusCode::kInvalidArgument);  // INT32 column.
  EXPECT_EQ(row.SetString("blob", "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(row.SetNull("key").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(row.SetString("code", "toolong").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(row.SetUnscaledDecimal("price", int64_t{1} << 62).code(),
            absl::StatusCode::kInvalidArgument);  // More than 10 digits.
  EXPECT_EQ(row.Set("small", Value::FromInt(1000)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(row.SetString("name", std::string(kMaxCellBytes + 1, 'x')).code(),
            absl::StatusCode::kInvalidArgument);
  for (int i = 0; i < s.num_columns(); i++) EXPECT_FALSE(row.IsColumnSet(i)) << i;

  int32_t v;
  EXPECT_EQ(row.GetInt32("key", &v).code(), absl::StatusCode::kNotFound);  // Unset.
  BASALT_ASSERT_OK(row.SetNull("name"));
  EXPECT_TRUE(row.IsColumnSet("name"));
  EXPECT_TRUE(row.IsNull("name"));
  std::string_view sv;
  EXPECT_EQ(row.GetString("name", &sv).code(), absl::StatusCode::kNotFound);  // NULL.
  EXPECT_EQ(row.GetInt64("name", nullptr).code(), absl::StatusCode::kInvalidArgument);
  BASALT_ASSERT_OK(row.Unset("name"));
  EXPECT_FALSE(row.IsColumnSet("name"));
  EXPECT_FALSE(row.IsKeySet());
  EXPECT_EQ(row.ToString(), "()");
}

TEST(PartialRowTest, WideRowsLiveOnTheHeap) {
  SchemaBuilder b;
  b.AddColumn("k")->Type(ColumnSchema::INT64)->PrimaryKey();
  for (int i = 0; i < 40; i++) b.AddColumn("c" + std::to_string(i))->Type(ColumnSchema::INT64);
  Schema s = MustBuild(&b);
  PartialRow row(&s);
  for (int i = 0; i <= 40; i++) BASALT_ASSERT_OK(row.SetInt64(i, i * 3));
  PartialRow copy(row);
  for (int i = 0; i <= 40; i++) {
    int64_t v;
    BASALT_ASSERT_OK(copy.GetInt64(i, &v));
    EXPECT_EQ(v, i * 3);
  }
}

// ---- Operations
// ----------------------------------------------------------------------------------

TEST(WriteOperationTest, EncodeThenDecodeGivesTheSameOperations) {
  Schema s = WideSchema();
  auto table = MakeTestTable(s, {}, {"key"});
  std::vector<std::unique_ptr<WriteOperation>> ops;
  ops.push_back(table->NewInsert());
  ops.push_back(table->NewUpsert());
  ops.push_back(table->NewUpdate());
  ops.push_back(table->NewDelete());
  ops.push_back(table->NewInsertIgnore());
  ops.push_back(table->NewUpdateIgnore());
  ops.push_back(table->NewDeleteIgnore());
  std::string rows, indirect;
  std::vector<int> indexes;
  for (size_t i = 0; i < ops.size(); i++) {
    PartialRow* row = ops[i]->mutable_row();
    BASALT_ASSERT_OK(row->SetInt32("key", static_cast<int32_t>(i)));
    const auto type = ops[i]->type();
    if (type != WriteOperation::DELETE && type != WriteOperation::DELETE_IGNORE) {
      BASALT_ASSERT_OK(row->SetString("name", "n" + std::to_string(i)));
      BASALT_ASSERT_OK(row->SetNull("d"));
    }
    BASALT_ASSERT_OK(internal::EncodeOperation(*ops[i], &rows, &indirect)) << ops[i]->ToString();
    indexes.push_back(static_cast<int>(ops.size() - 1 - i));
  }
  indexes.push_back(100);  // Out of range: skipped.
  auto decoded = internal::DecodeOperations(table, rows, indirect, indexes);
  BASALT_ASSERT_OK(decoded);
  ASSERT_EQ(decoded->size(), ops.size());
  for (size_t i = 0; i < ops.size(); i++) {
    EXPECT_EQ((*decoded)[i]->ToString(), ops[ops.size() - 1 - i]->ToString());
    EXPECT_EQ((*decoded)[i]->table(), table.get());
  }
  EXPECT_EQ(ops[0]->ToString(), "INSERT (int32 key=0, string name=\"n0\", double d=NULL)");
}

TEST(WriteOperationTest, RowsMissingRequiredColumnsAreRejected) {
  Schema s = WideSchema();
  auto table = MakeTestTable(s, {}, {"key"});
  std::string rows, indirect;
  auto insert = table->NewInsert();  // No key.
  EXPECT_EQ(internal::EncodeOperation(*insert, &rows, &indirect).code(),
            absl::StatusCode::kInvalidArgument);
  auto update = table->NewUpdate();  // Key only.
  BASALT_ASSERT_OK(update->mutable_row()->SetInt32("key", 1));
  EXPECT_EQ(internal::EncodeOperation(*update, &rows, &indirect).code(),
            absl::StatusCode::kInvalidArgument);
  auto del = table->NewDelete();  // A non-key column.
  BASALT_ASSERT_OK(del->mutable_row()->SetInt32("key", 1));
  BASALT_ASSERT_OK(del->mutable_row()->SetDouble("d", 1));
  absl::Status st = internal::EncodeOperation(*del, &rows, &indirect);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("DELETE"), absl::string_view::npos) << st;
  EXPECT_TRUE(rows.empty());
}

// Rows buffered against a table handle opened before an ALTER are re-encoded for the new schema:
// columns by id (a renamed one keeps its value), dropped columns they do not set (or set to
// NULL) vanish, added ones stay unset; a row that sets a dropped column fails alone.
TEST(WriteOperationTest, RowsAreReencodedForAnAlteredSchemaByColumnId) {
  auto table = MakeTestTable(WideSchema(), {}, {"key"});
  const basalt::Schema& v0 = internal::Access::Internal(table->schema());
  auto v1 = v0.DropColumn("d");
  BASALT_ASSERT_OK(v1);
  v1 = v1->RenameColumn("name", "label");
  BASALT_ASSERT_OK(v1);
  v1 = v1->AddColumn(basalt::ColumnSchema("extra", DataType::kInt32, /*is_nullable=*/true));
  BASALT_ASSERT_OK(v1);

  std::string rows, indirect;
  auto add = [&](std::unique_ptr<WriteOperation> op,
                 const std::function<absl::Status(PartialRow*)>& fill) {
    BASALT_ASSERT_OK(fill(op->mutable_row()));
    BASALT_ASSERT_OK(internal::EncodeOperation(*op, &rows, &indirect)) << op->ToString();
  };
  add(table->NewInsert(), [](PartialRow* r) {  // 0: kept, name → label.
    BASALT_RETURN_IF_ERROR(r->SetInt32("key", 0));
    BASALT_RETURN_IF_ERROR(r->SetString("name", "n0"));
    return r->SetNull("d");
  });
  add(table->NewInsert(), [](PartialRow* r) {  // 1: sets the dropped column.
    BASALT_RETURN_IF_ERROR(r->SetInt32("key", 1));
    return r->SetDouble("d", 1.5);
  });
  add(table->NewUpdate(), [](PartialRow* r) {  // 2: kept.
    BASALT_RETURN_IF_ERROR(r->SetInt32("key", 2));
    BASALT_RETURN_IF_ERROR(r->SetNull("name"));
    return r->SetString("code", "ab");
  });
  add(table->NewDelete(), [](PartialRow* r) { return r->SetInt32("key", 3); });  // 3: kept.
  add(table->NewUpdate(), [](PartialRow* r) {  // 4: nothing left to update.
    BASALT_RETURN_IF_ERROR(r->SetInt32("key", 4));
    return r->SetNull("d");
  });

  auto out = internal::ReencodeRows(v0, *v1, rows, indirect);
  BASALT_ASSERT_OK(out);
  EXPECT_EQ(out->kept, (std::vector<int>{0, 2, 3}));
  ASSERT_EQ(out->failed.size(), 2u);
  EXPECT_EQ(out->failed[0].index, 1);
  EXPECT_EQ(out->failed[0].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out->failed[0].status.message().find("column 'd' was dropped"), std::string::npos)
      << out->failed[0].status;
  EXPECT_EQ(out->failed[1].index, 4);
  EXPECT_NE(out->failed[1].status.message().find("schema changed to version 3"), std::string::npos)
      << out->failed[1].status;

  Arena arena(4096);
  basalt::RowOperationsDecoder decoder(&*v1, &arena);
  std::vector<basalt::DecodedRowOperation> ops;
  BASALT_ASSERT_OK(decoder.Decode(out->rows, out->indirect, &ops));
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].ToString(), "INSERT (INT32 key=0, STRING label=\"n0\")");
  EXPECT_EQ(ops[1].ToString(), "UPDATE (INT32 key=2, STRING label=NULL, VARCHAR(4) code=\"ab\")");
  EXPECT_EQ(ops[2].ToString(), "DELETE (INT32 key=3)");

  // A malformed input is an error, not a crash.
  EXPECT_EQ(
      internal::ReencodeRows(v0, *v1, rows.substr(0, rows.size() - 3), indirect).status().code(),
      absl::StatusCode::kInvalidArgument);
}

// ---- Predicates
// ----------------------------------------------------------------------------------

TEST(PredicateTest, ErrorsSurfaceWhenAdded) {
  auto table = MakeTestTable(WideSchema(), {}, {"key"});
  auto p = table->NewComparisonPredicate("key", Predicate::GREATER_EQUAL, Value::FromInt(5));
  BASALT_EXPECT_OK(p->status());
  EXPECT_EQ(p->ToString(), "key >= 5");
  EXPECT_EQ(p->Clone()->ToString(), "key >= 5");
  EXPECT_EQ(
      table->NewComparisonPredicate("nope", Predicate::EQUAL, Value::FromInt(1))->status().code(),
      absl::StatusCode::kNotFound);
  EXPECT_EQ(table->NewComparisonPredicate("key", Predicate::EQUAL, Value::FromString("x"))
                ->status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table->NewComparisonPredicate("small", Predicate::EQUAL, Value::FromInt(999))
                ->status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  auto in = table->NewInListPredicate("name", {Value::FromString("b"), Value::FromString("a")});
  BASALT_EXPECT_OK(in->status()) << in->status();
  EXPECT_NE(in->ToString().find("IN"), std::string::npos);
  BASALT_EXPECT_OK(table->NewIsNullPredicate("name")->status());
  EXPECT_EQ(table->NewIsNotNullPredicate("zzz")->status().code(), absl::StatusCode::kNotFound);
  BASALT_EXPECT_OK(
      table->NewComparisonPredicate("d", Predicate::LESS, Value::FromFloat(1.5f))->status());
}

// ---- Routing
// -------------------------------------------------------------------------------------

// Locations for every partition of `ps` over `schema` with `splits` on column a.
pb::GetTableLocationsResponsePB LocationsFor(const PartitionSchema& ps,
                                             const basalt::Schema& schema,
                                             const std::vector<int32_t>& splits) {
  std::vector<basalt::PartialRow> split_rows;
  for (int32_t v : splits) {
    basalt::PartialRow r(&schema);
    CHECK(r.Set("a", Datum::Int32(v)).ok());
    split_rows.push_back(r);
  }
  auto parts = ps.CreatePartitions(split_rows, {});
  CHECK(parts.ok()) << parts.status();
  pb::GetTableLocationsResponsePB resp;
  resp.set_ttl_millis(60000);
  for (size_t i = 0; i < parts->size(); i++) {
    auto* loc = resp.add_tablet_locations();
    loc->set_tablet_id("tablet-" + std::to_string(i));
    (*parts)[i].ToPB(loc->mutable_partition());
    for (int r = 0; r < 3; r++) {
      auto* rep = loc->add_replicas();
      rep->set_ts_uuid("ts" + std::to_string(r));
      rep->mutable_rpc_address()->set_host("127.0.0.1");
      rep->mutable_rpc_address()->set_port(7000 + r);
      rep->set_role(r == 1 ? pb::LEADER : pb::FOLLOWER);
    }
  }
  return resp;
}

TEST(MetaCacheTest, RoutesRowsToTheTabletOfTheirPartitionKey) {
  Schema s = CompoundSchema();
  const basalt::Schema& is = Access::Internal(s);
  auto ps = PartitionSchema::Create(is, {{{"b"}, 4, 7}}, {"a"});
  BASALT_ASSERT_OK(ps);
  auto resp = LocationsFor(*ps, is, {-100, 0, 100});
  ASSERT_EQ(resp.tablet_locations_size(), 16);
  internal::TableLocations locations("t");
  const uint64_t v0 = locations.version();
  auto first = internal::MetaCache::InsertLocations(&locations, resp, 0);
  BASALT_ASSERT_OK(first);
  EXPECT_EQ((*first)->tablet_id(), "tablet-0");
  EXPECT_GT(locations.version(), v0);
  uint64_t version;
  EXPECT_EQ(locations.Snapshot(&version).size(), 16u);

  Random rng(SeedFromEnvOrTime());
  for (int i = 0; i < 500; i++) {
    PartialRow row(&s);
    const int32_t a = static_cast<int32_t>(rng.UniformRange(-300, 300));
    BASALT_ASSERT_OK(row.SetInt32("a", a));
    BASALT_ASSERT_OK(row.SetString("b", "k" + std::to_string(rng.Uniform(1000))));
    const std::string pkey = ps->PartitionKey(is, Access::RowData(row));
    auto t = locations.Find(pkey, 1);
    ASSERT_NE(t, nullptr);
    EXPECT_TRUE(t->partition().Contains(pkey));
    basalt::PartialRow irow(&is);
    BASALT_ASSERT_OK(irow.Set("a", Datum::Int32(a)));
    std::string_view b;
    BASALT_ASSERT_OK(row.GetString("b", &b));
    BASALT_ASSERT_OK(irow.Set("b", Datum::String(b)));
    EXPECT_EQ(t->partition().hash_buckets()[0], ps->HashBucket(irow, 0));
    const int range = a < -100 ? 0 : a < 0 ? 1 : a < 100 ? 2 : 3;
    EXPECT_EQ(t->tablet_id(),
              "tablet-" + std::to_string(t->partition().hash_buckets()[0] * 4 + range));
    // Expired entries are not used.
    EXPECT_EQ(locations.Find(pkey, int64_t{60000} * 1000000 + 1), nullptr);
  }
  // Leader first, a failed replica last.
  auto t = locations.Find(resp.tablet_locations(5).partition().partition_key_start(), 1);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->ReplicasInOrder()[0].address, "127.0.0.1:7001");
  t->MarkFailed("127.0.0.1:7001");
  EXPECT_EQ(t->ReplicasInOrder()[0].address, "127.0.0.1:7000");
  EXPECT_EQ(t->ReplicasInOrder()[2].address, "127.0.0.1:7001");
  t->MarkSucceeded("127.0.0.1:7001");
  t->MarkLeader("ts2");
  EXPECT_EQ(t->ReplicasInOrder()[0].address, "127.0.0.1:7002");
  t->MarkFollower("127.0.0.1:7002");
  EXPECT_EQ(t->ReplicasInOrder()[0].address, "127.0.0.1:7000");
  // An invalidated tablet is no longer found.
  t->MarkStale();
  EXPECT_EQ(locations.Find(resp.tablet_locations(5).partition().partition_key_start(), 1), nullptr);
}

TEST(MetaCacheTest, GapsBetweenRangesAndReplacement) {
  Schema s = CompoundSchema();
  const basalt::Schema& is = Access::Internal(s);
  auto ps = PartitionSchema::Create(is, {}, {"a"});
  BASALT_ASSERT_OK(ps);
  // Two ranges [0, 10) and [20, 30): keys in [10, 20) have no tablet.
  auto bound = [&](int32_t v) {
    basalt::PartialRow r(&is);
    CHECK(r.Set("a", Datum::Int32(v)).ok());
    return r;
  };
  auto parts = ps->CreatePartitions(
      {}, {RangeBounds{bound(0), bound(10)}, RangeBounds{bound(20), bound(30)}});
  BASALT_ASSERT_OK(parts);
  pb::GetTableLocationsResponsePB resp;
  resp.set_ttl_millis(1000);
  for (size_t i = 0; i < parts->size(); i++) {
    auto* loc = resp.add_tablet_locations();
    loc->set_tablet_id("t" + std::to_string(i));
    (*parts)[i].ToPB(loc->mutable_partition());
  }
  internal::TableLocations locations("t");
  BASALT_ASSERT_OK(internal::MetaCache::InsertLocations(&locations, resp, 0));
  auto key = [&](int32_t a) {
    std::string k;
    ps->AppendRangeKeyPrefix({&a}, &k);
    return k;
  };
  EXPECT_EQ(locations.Find(key(5), 0)->tablet_id(), "t0");
  EXPECT_EQ(locations.Find(key(15), 0), nullptr);
  bool known;
  // After t0 comes a gap the cache cannot vouch for: unknown.
  EXPECT_EQ(locations.FindOrNext(key(15), 0, &known), nullptr);
  EXPECT_FALSE(known);
  EXPECT_EQ(locations.FindOrNext(key(25), 0, &known)->tablet_id(), "t1");
  EXPECT_TRUE(known);

  // A new location for an overlapping partition replaces the old entry.
  pb::GetTableLocationsResponsePB moved;
  moved.set_ttl_millis(1000);
  auto* loc = moved.add_tablet_locations();
  loc->set_tablet_id("t0-new");
  (*parts)[0].ToPB(loc->mutable_partition());
  BASALT_ASSERT_OK(internal::MetaCache::InsertLocations(&locations, moved, 0));
  EXPECT_EQ(locations.Find(key(5), 0)->tablet_id(), "t0-new");
  uint64_t version;
  EXPECT_EQ(locations.Snapshot(&version).size(), 2u);

  // Malformed locations from the master are DATA_LOSS.
  pb::GetTableLocationsResponsePB bad;
  auto* b = bad.add_tablet_locations();
  b->set_tablet_id("x");
  b->mutable_partition()->set_partition_key_start("b");
  b->mutable_partition()->set_partition_key_end("a");
  EXPECT_EQ(internal::MetaCache::InsertLocations(&locations, bad, 0).status().code(),
            absl::StatusCode::kDataLoss);
}

// ---- ScanBatch
// -----------------------------------------------------------------------------------

class ScanBatchTest : public ::testing::Test {
 protected:
  ScanBatchTest() {
    SchemaBuilder b;
    b.AddColumn("key")->Type(ColumnSchema::INT32)->NotNull()->PrimaryKey();
    b.AddColumn("name")->Type(ColumnSchema::STRING)->Nullable();
    b.AddColumn("d")->Type(ColumnSchema::DOUBLE)->NotNull();
    b.AddColumn("flag")->Type(ColumnSchema::BOOL)->Nullable();
    schema_ = MustBuild(&b);
  }

  // 5 rows: key i, name "n<i>" (NULL for i == 2), d i / 2, flag i odd (NULL for i == 4).
  std::unique_ptr<pb::ColumnarRowBlockPB> Block() {
    auto block = std::make_unique<pb::ColumnarRowBlockPB>();
    block->set_num_rows(5);
    auto* key = block->add_columns();
    auto* name = block->add_columns();
    auto* d = block->add_columns();
    auto* flag = block->add_columns();
    uint32_t offset = 0;
    name->mutable_offsets()->append(reinterpret_cast<char*>(&offset), 4);
    for (int32_t i = 0; i < 5; i++) {
      key->mutable_data()->append(reinterpret_cast<const char*>(&i), 4);
      if (i != 2) name->mutable_data()->append("n" + std::to_string(i));
      offset = static_cast<uint32_t>(name->data().size());
      name->mutable_offsets()->append(reinterpret_cast<char*>(&offset), 4);
      double dv = i / 2.0;
      d->mutable_data()->append(reinterpret_cast<const char*>(&dv), 8);
      flag->mutable_data()->push_back(static_cast<char>(i % 2));
    }
    name->set_null_bitmap(std::string(1, static_cast<char>(1 << 2)));
    flag->set_null_bitmap(std::string(1, static_cast<char>(1 << 4)));
    return block;
  }

  absl::Status Load(std::unique_ptr<pb::ColumnarRowBlockPB> block, int64_t max_rows = 100) {
    return Access::Data(&batch_)->Reset(schema_, std::move(block), max_rows);
  }

  Schema schema_;
  ScanBatch batch_;
};

TEST_F(ScanBatchTest, TypedRowsAndColumnarViewsReadTheBlock) {
  BASALT_ASSERT_OK(Load(Block()));
  ASSERT_EQ(batch_.NumRows(), 5);
  for (int i = 0; i < 5; i++) {
    ScanBatch::RowPtr row = batch_.Row(i);
    int32_t key;
    BASALT_ASSERT_OK(row.GetInt32("key", &key));
    EXPECT_EQ(key, i);
    std::string_view name;
    if (i == 2) {
      EXPECT_TRUE(row.IsNull("name"));
      EXPECT_EQ(row.GetString("name", &name).code(), absl::StatusCode::kNotFound);
    } else {
      BASALT_ASSERT_OK(row.GetString(1, &name));
      EXPECT_EQ(name, "n" + std::to_string(i));
    }
    double d;
    BASALT_ASSERT_OK(row.GetDouble("d", &d));
    EXPECT_EQ(d, i / 2.0);
    bool flag;
    if (i != 4) {
      BASALT_ASSERT_OK(row.GetBool("flag", &flag));
      EXPECT_EQ(flag, i % 2 == 1);
    }
    EXPECT_EQ(row.GetInt64("key", nullptr).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(row.GetInt32("nope", &key).code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(row.GetInt32(7, &key).code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(batch_.Row(2).ToString(),
            "(int32 key=2, string name=NULL, double d=1, bool flag=false)");
  ScanBatch::ColumnView key = batch_.Column(0);
  EXPECT_EQ(key.type, ColumnSchema::INT32);
  EXPECT_EQ(key.cell_size, 4u);
  EXPECT_EQ(key.null_bitmap, nullptr);
  EXPECT_EQ(static_cast<const int32_t*>(key.data)[3], 3);
  ScanBatch::ColumnView name = batch_.Column(1);
  EXPECT_TRUE(name.IsNull(2));
  EXPECT_FALSE(name.IsNull(3));
  EXPECT_EQ(name.GetString(4), "n4");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(batch_.Column(2).data) % 8, 0u);
  EXPECT_EQ(batch_.projection_schema().num_columns(), 4);

  BASALT_ASSERT_OK(Load(Block(), 2));  // A scan limit cuts the batch.
  EXPECT_EQ(batch_.NumRows(), 2);
}

TEST_F(ScanBatchTest, MalformedBlocksAreDataLoss) {
  std::vector<std::function<void(pb::ColumnarRowBlockPB*)>> corruptions = {
      [](pb::ColumnarRowBlockPB* b) { b->mutable_columns()->RemoveLast(); },
      [](pb::ColumnarRowBlockPB* b) { b->set_num_rows(6); },
      [](pb::ColumnarRowBlockPB* b) { b->set_num_rows(-1); },
      [](pb::ColumnarRowBlockPB* b) { b->mutable_columns(0)->mutable_data()->pop_back(); },
      [](pb::ColumnarRowBlockPB* b) { b->mutable_columns(1)->mutable_offsets()->resize(8); },
      [](pb::ColumnarRowBlockPB* b) {  // Offsets past the data.
        (*b->mutable_columns(1)->mutable_offsets())[20] = 100;
      },
      [](pb::ColumnarRowBlockPB* b) {  // Decreasing offsets.
        (*b->mutable_columns(1)->mutable_offsets())[8] = 9;
      },
      [](pb::ColumnarRowBlockPB* b) {
        b->mutable_columns(1)->set_null_bitmap("");
        b->mutable_columns(3)->set_null_bitmap(std::string());
        b->mutable_columns(0)->set_null_bitmap("\x01");
      },
      [](pb::ColumnarRowBlockPB* b) { b->mutable_columns(2)->mutable_data()->append("x"); },
  };
  for (size_t i = 0; i < corruptions.size(); i++) {
    auto block = Block();
    corruptions[i](block.get());
    absl::Status s = Load(std::move(block));
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << i << ": " << s;
    EXPECT_EQ(batch_.NumRows(), 0) << i;
  }
  // A null bitmap shorter than the rows.
  auto block = Block();
  block->set_num_rows(5);
  block->mutable_columns(3)->set_null_bitmap("");
  BASALT_ASSERT_OK(Load(std::move(block)));
  Random rng(SeedFromEnvOrTime());
  // Random byte flips and truncations never crash; they load or fail cleanly.
  for (int i = 0; i < 300; i++) {
    auto b = Block();
    std::string bytes = b->SerializeAsString();
    if (rng.OneIn(2)) {
      bytes[rng.Uniform(bytes.size())] ^= static_cast<char>(1 + rng.Uniform(255));
    } else {
      bytes.resize(rng.Uniform(bytes.size()));
    }
    auto parsed = std::make_unique<pb::ColumnarRowBlockPB>();
    if (!parsed->ParseFromString(bytes)) continue;
    absl::Status s = Load(std::move(parsed));
    if (!s.ok()) {
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    }
    for (int64_t r = 0; r < batch_.NumRows(); r++) (void)batch_.Row(r).ToString();
  }
}

TEST(ClientBuilderTest, ValidatesMasterAddresses) {
  std::shared_ptr<Client> client;
  EXPECT_EQ(ClientBuilder().Build(&client).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ClientBuilder().add_master_server_addr("h:99999").Build(&client).code(),
            absl::StatusCode::kInvalidArgument);
  BASALT_ASSERT_OK(ClientBuilder()
                       .add_master_server_addr("127.0.0.1:1,127.0.0.1:2")
                       .default_admin_operation_timeout(std::chrono::milliseconds(200))
                       .Build(&client));
  EXPECT_EQ(client->default_admin_operation_timeout(), std::chrono::milliseconds(200));
  // No master listens there: DDL times out with the last error named.
  std::vector<std::string> tables;
  absl::Status s = client->ListTables(&tables);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_NE(s.message().find("ListTables"), absl::string_view::npos) << s;
  client->SetLatestObservedTimestamp(42);
  client->SetLatestObservedTimestamp(7);
  EXPECT_EQ(client->GetLatestObservedTimestamp(), 42u);
}

}  // namespace client_test_file
}  // namespace
}  // namespace basalt::client
