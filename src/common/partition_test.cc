#include "common/partition.h"

#include <xxhash.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/escaping.h"
#include "common/key_encoder.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "proto/common.pb.h"

namespace basalt {
namespace {
namespace partition_test_file {

using Cells = std::vector<std::pair<std::string, Datum>>;

// Key (a INT32, b STRING, c INT64), value v INT32 NULL.
Schema TestSchema() {
  return Schema::Create({ColumnSchema("a", DataType::kInt32), ColumnSchema("b", DataType::kString),
                         ColumnSchema("c", DataType::kInt64),
                         ColumnSchema("v", DataType::kInt32, /*is_nullable=*/true)},
                        3)
      .value();
}

PartialRow MakeRow(const Schema& schema, const Cells& cells) {
  PartialRow row(&schema);
  for (const auto& [name, value] : cells) CHECK(row.Set(name, value).ok()) << name;
  return row;
}

PartialRow FullRow(const Schema& schema, int32_t a, std::string_view b, int64_t c) {
  return MakeRow(schema, {{"a", Datum::Int32(a)}, {"b", Datum::String(b)}, {"c", Datum::Int64(c)}});
}

std::string Hex(std::string_view s) { return absl::BytesToHexString(ToAbsl(s)); }
std::string Unhex(std::string_view s) { return absl::HexStringToBytes(ToAbsl(s)); }

class PartitionTest : public ::testing::Test {
 protected:
  PartitionTest() : schema_(TestSchema()) {}

  PartitionSchema MustCreate(const std::vector<PartitionSchema::HashLevelSpec>& hash,
                             const std::vector<std::string>& range) {
    auto ps = PartitionSchema::Create(schema_, hash, range);
    CHECK(ps.ok()) << ps.status();
    return *std::move(ps);
  }
  PartialRow A(int32_t a) { return MakeRow(schema_, {{"a", Datum::Int32(a)}}); }
  PartialRow Unset() { return PartialRow(&schema_); }
  RangeBounds Bounds(std::optional<int32_t> lower, std::optional<int32_t> upper) {
    return RangeBounds{lower ? A(*lower) : Unset(), upper ? A(*upper) : Unset()};
  }

  Schema schema_;
};

// ---------------------------------------------------------------------------------------------
// PartitionSchema construction, validation and serialization

TEST_F(PartitionTest, DefaultIsRangeOnAllKeyColumns) {
  PartitionSchema ps = PartitionSchema::CreateDefault(schema_);
  EXPECT_TRUE(ps.hash_levels().empty());
  EXPECT_EQ(ps.range_column_indexes(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(ps.ToString(schema_), "RANGE (a, b, c)");
  // A PB without range_schema means the same; an empty range_schema means no range level.
  pb::PartitionSchemaPB pb;
  EXPECT_EQ(PartitionSchema::FromPB(pb, schema_).value(), ps);
  pb.mutable_range_schema();
  auto none = PartitionSchema::FromPB(pb, schema_).value();
  EXPECT_TRUE(none.range_column_indexes().empty());
  EXPECT_EQ(none.ToString(schema_), "RANGE ()");
  EXPECT_EQ(none.PartitionKey(FullRow(schema_, 1, "x", 2)), "");
}

TEST_F(PartitionTest, ToStringAndPBRoundTrip) {
  PartitionSchema ps = MustCreate({{{"a"}, 4, 0}, {{"c", "b"}, 3, 7}}, {"b"});
  EXPECT_EQ(ps.ToString(schema_),
            "HASH (a) PARTITIONS 4, HASH (c, b) PARTITIONS 3 SEED 7, RANGE (b)");
  EXPECT_EQ(MustCreate({{{"a"}, 2, 0}}, {}).ToString(schema_), "HASH (a) PARTITIONS 2");

  pb::PartitionSchemaPB pb;
  ps.ToPB(&pb);
  ASSERT_EQ(pb.hash_schema_size(), 2);
  EXPECT_EQ(pb.hash_schema(1).columns(0).id(), schema_.column_id(2));  // Written by id.
  EXPECT_EQ(pb.hash_schema(1).seed(), 7u);
  EXPECT_EQ(PartitionSchema::FromPB(pb, schema_).value(), ps);

  // Columns may also be named, and ids survive renames.
  pb::PartitionSchemaPB by_name;
  auto* h = by_name.add_hash_schema();
  h->add_columns()->set_name("a");
  h->set_num_buckets(4);
  auto* h2 = by_name.add_hash_schema();
  h2->add_columns()->set_name("c");
  h2->add_columns()->set_id(schema_.column_id(1));
  h2->set_num_buckets(3);
  h2->set_seed(7);
  by_name.mutable_range_schema()->add_columns()->set_name("b");
  EXPECT_EQ(PartitionSchema::FromPB(by_name, schema_).value(), ps);
  Schema renamed = schema_.RenameColumn("b", "bee").value();
  auto after_rename = PartitionSchema::FromPB(pb, renamed);
  BASALT_ASSERT_OK(after_rename);
  EXPECT_EQ(after_rename->ToString(renamed),
            "HASH (a) PARTITIONS 4, HASH (c, bee) PARTITIONS 3 SEED 7, RANGE (bee)");
}

TEST_F(PartitionTest, ValidationErrorsNameTheProblem) {
  struct Case {
    std::vector<PartitionSchema::HashLevelSpec> hash;
    std::vector<std::string> range;
    std::string message;
  };
  const Case cases[] = {
      {{{{"v"}, 2, 0}}, {}, "column 'v' is not a primary key column"},
      {{}, {"a", "v"}, "range partition column 'v' is not a primary key column"},
      {{{{"a"}, 2, 0}, {{"b", "a"}, 2, 0}}, {}, "column 'a' appears in more than one hash level"},
      {{{{"a", "a"}, 2, 0}}, {}, "hash level 0 lists column 'a' twice"},
      {{{{"a"}, 1, 0}}, {}, "hash level 0 has 1 buckets; at least 2 are required"},
      {{{{"a"}, -3, 0}}, {}, "at least 2 are required"},
      {{{{"a"}, 2, 0}, {{}, 2, 0}}, {}, "hash level 1 has no columns"},
      {{}, {"b", "b"}, "range partition lists column 'b' twice"},
      {{}, {"nope"}, "partition column 'nope' does not exist"},
  };
  for (const Case& c : cases) {
    auto ps = PartitionSchema::Create(schema_, c.hash, c.range);
    ASSERT_FALSE(ps.ok()) << c.message;
    EXPECT_EQ(ps.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(ps.status().message().find(c.message), std::string::npos) << ps.status();
  }
  // A column may be both hashed and in the range.
  BASALT_EXPECT_OK(PartitionSchema::Create(schema_, {{{"a"}, 2, 0}}, {"a"}));
}

TEST_F(PartitionTest, FromPBRejectsBadIdentifiers) {
  pb::PartitionSchemaPB pb;
  pb.mutable_range_schema()->add_columns()->set_id(99);
  EXPECT_NE(PartitionSchema::FromPB(pb, schema_).status().message().find("id 99 does not exist"),
            std::string::npos);
  pb.Clear();
  pb.mutable_range_schema()->add_columns();  // Neither id nor name.
  EXPECT_EQ(PartitionSchema::FromPB(pb, schema_).status().code(),
            absl::StatusCode::kInvalidArgument);
  pb.Clear();
  auto* h = pb.add_hash_schema();
  h->add_columns()->set_name("a");
  h->set_num_buckets(0);
  EXPECT_EQ(PartitionSchema::FromPB(pb, schema_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Partition keys: the hash and encoding are a wire and on-disk contract.

TEST_F(PartitionTest, XxHash64LibraryMatchesReferenceVectors) {
  EXPECT_EQ(XXH64("", 0, 0), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(XXH64("abc", 3, 0), 0x44BC2CF5AD770999ull);
}

TEST_F(PartitionTest, GoldenPartitionKeys) {
  // HASH (a) PARTITIONS 4, HASH (b, c) PARTITIONS 8 SEED 7, RANGE (b, c). The expected bytes were
  // computed by an independent Python transcription of XXH64 and the key encoding
  // (docs/partitioning.md). If this test fails, existing tables would route rows to the wrong
  // tablets: fix the code, never the vectors.
  PartitionSchema ps = MustCreate({{{"a"}, 4, 0}, {{"b", "c"}, 8, 7}}, {"b", "c"});
  struct Golden {
    int32_t a;
    std::string b;
    int64_t c;
    int32_t bucket0;
    int32_t bucket1;
    std::string key_hex;
  };
  const Golden goldens[] = {
      {1, "x", 10, 1, 5, "0000000100000005780000800000000000000a"},
      {-1, "", -5, 3, 2, "000000030000000200007ffffffffffffffb"},
      {std::numeric_limits<int32_t>::max(), std::string("a\0b", 3),
       std::numeric_limits<int64_t>::min(), 3, 7, "00000003000000076100016200000000000000000000"},
      {std::numeric_limits<int32_t>::min(), "zz\xff", std::numeric_limits<int64_t>::max(), 0, 2,
       "00000000000000027a7aff0000ffffffffffffffff"},
  };
  for (const Golden& g : goldens) {
    PartialRow row = FullRow(schema_, g.a, g.b, g.c);
    SCOPED_TRACE(row.ToString());
    EXPECT_EQ(ps.HashBucket(row, 0), g.bucket0);
    EXPECT_EQ(ps.HashBucket(row, 1), g.bucket1);
    EXPECT_EQ(Hex(ps.PartitionKey(row)), g.key_hex);
    EXPECT_EQ(Hex(ps.PartitionKey(schema_, row.row_data())), g.key_hex);
  }
  // A hash input longer than 32 bytes (XXH64's bulk loop) with a large seed.
  Schema s = Schema::Create({ColumnSchema("s", DataType::kString)}, 1).value();
  PartitionSchema ps2 = PartitionSchema::Create(s, {{{"s"}, 1000, 0xDEADBEEF}}, {}).value();
  PartialRow row(&s);
  BASALT_ASSERT_OK(row.SetString("s", "0123456789abcdefghijklmnopqrstuvwxyzABCDEF"));
  EXPECT_EQ(ps2.HashBucket(row, 0), 985);
  EXPECT_EQ(Hex(ps2.PartitionKey(row)), "000003d9");
}

TEST_F(PartitionTest, RangeKeyOrderMatchesRowOrder) {
  const uint64_t seed = SeedFromEnvOrTime();
  Random rnd(seed);
  PartitionSchema ps = MustCreate({}, {"b", "a"});
  const std::string alphabet("\0\1a\xff", 4);
  for (int i = 0; i < 2000; i++) {
    auto random_row = [&] {
      std::string b;
      for (uint64_t n = rnd.Uniform(4); n > 0; n--) b.push_back(alphabet[rnd.Uniform(4)]);
      return std::make_pair(b, static_cast<int32_t>(rnd.UniformRange(-3, 3)));
    };
    auto x = random_row(), y = random_row();
    std::string kx = ps.PartitionKey(FullRow(schema_, x.second, x.first, 0));
    std::string ky = ps.PartitionKey(FullRow(schema_, y.second, y.first, 0));
    ASSERT_EQ(x < y, kx < ky) << "seed " << seed;
    ASSERT_EQ(x == y, kx == ky) << "seed " << seed;
  }
}

// ---------------------------------------------------------------------------------------------
// Partition

TEST_F(PartitionTest, ContainsAndRangeKeys) {
  std::string prefix;
  AppendHashBucket(2, &prefix);
  AppendHashBucket(0x01020304, &prefix);
  EXPECT_EQ(Hex(prefix), "0000000201020304");
  Partition bounded({2, 0x01020304}, prefix + "b", prefix + "d");
  EXPECT_FALSE(bounded.Contains(prefix + "a"));
  EXPECT_TRUE(bounded.Contains(prefix + "b"));
  EXPECT_TRUE(bounded.Contains(prefix + "c\xff\xff"));
  EXPECT_FALSE(bounded.Contains(prefix + "d"));
  EXPECT_FALSE(bounded.Contains(prefix));
  EXPECT_EQ(bounded.range_key_start(), "b");
  EXPECT_EQ(bounded.range_key_end(), "d");

  Partition open_end({2, 0x01020304}, prefix, PartitionKeyEnd(prefix, ""));
  EXPECT_EQ(Hex(open_end.partition_key_end()), "0000000201020305");
  EXPECT_TRUE(open_end.Contains(prefix + std::string(100, '\xff')));
  EXPECT_FALSE(open_end.Contains(open_end.partition_key_end()));
  EXPECT_EQ(open_end.range_key_start(), "");
  EXPECT_EQ(open_end.range_key_end(), "");

  Partition whole({}, "", "");
  EXPECT_TRUE(whole.Contains(""));
  EXPECT_TRUE(whole.Contains("\xff\xff"));
}

TEST_F(PartitionTest, PartitionPBRoundTripAndValidation) {
  std::string prefix;
  AppendHashBucket(3, &prefix);
  const Partition partitions[] = {
      Partition({3}, prefix + "a", prefix + "b"),
      Partition({3}, prefix, PrefixSuccessor(prefix)),
      Partition({}, "", ""),
      Partition({}, "k", ""),
  };
  for (const Partition& p : partitions) {
    pb::PartitionPB pb;
    p.ToPB(&pb);
    auto back = Partition::FromPB(pb);
    BASALT_ASSERT_OK(back) << back.status() << " " << p.ToString();
    EXPECT_EQ(*back, p);
  }
  auto bad = [&](std::vector<int32_t> buckets, std::string start, std::string end) {
    pb::PartitionPB pb;
    for (int32_t b : buckets) pb.add_hash_buckets(b);
    pb.set_partition_key_start(start);
    pb.set_partition_key_end(end);
    return Partition::FromPB(pb).status();
  };
  EXPECT_FALSE(bad({-1}, Unhex("ffffffff"), "").ok());
  EXPECT_FALSE(bad({3}, "ab", "").ok());                    // Start misses the buckets.
  EXPECT_FALSE(bad({3}, prefix + "a", "").ok());            // End leaves the hash prefix.
  EXPECT_FALSE(bad({3}, prefix + "b", prefix + "a").ok());  // Start >= end.
  EXPECT_FALSE(bad({3}, prefix + "a", Unhex("00000005")).ok());
  EXPECT_FALSE(bad({}, "b", "b").ok());
  EXPECT_EQ(bad({3}, prefix, prefix + "a").code(), absl::StatusCode::kOk);
}

// ---------------------------------------------------------------------------------------------
// CreatePartitions

TEST_F(PartitionTest, HashOnlyPartitionsCoverEveryBucketInKeyOrder) {
  PartitionSchema ps = MustCreate({{{"a"}, 2, 0}, {{"b", "c"}, 3, 0}}, {});
  auto parts = ps.CreatePartitions({}, {});
  BASALT_ASSERT_OK(parts);
  ASSERT_EQ(parts->size(), 6u);
  for (size_t i = 0; i < parts->size(); i++) {
    const Partition& p = (*parts)[i];
    EXPECT_EQ(p.hash_buckets(), (std::vector<int32_t>{int32_t(i / 3), int32_t(i % 3)}));
    std::string prefix;
    AppendHashBucket(i / 3, &prefix);
    AppendHashBucket(i % 3, &prefix);
    EXPECT_EQ(p.partition_key_start(), prefix);
    EXPECT_EQ(p.partition_key_end(), PrefixSuccessor(prefix));
  }
  EXPECT_EQ(ps.PartitionDebugString((*parts)[4], schema_), "HASH BUCKETS (1, 1)");
}

TEST_F(PartitionTest, BoundsAndSplitsMakeSortedRanges) {
  PartitionSchema ps = MustCreate({{{"b"}, 2, 0}}, {"a"});
  // Unsorted input on purpose.
  std::vector<RangeBounds> bounds;
  bounds.push_back(Bounds(200, 300));
  bounds.push_back(Bounds(0, 100));
  std::vector<PartialRow> splits = {A(250), A(50)};
  auto parts = ps.CreatePartitions(splits, bounds);
  BASALT_ASSERT_OK(parts);
  ASSERT_EQ(parts->size(), 8u);
  const std::pair<int, int> ranges[] = {{0, 50}, {50, 100}, {200, 250}, {250, 300}};
  for (size_t i = 0; i < parts->size(); i++) {
    const Partition& p = (*parts)[i];
    const auto [lo, hi] = ranges[i % 4];
    EXPECT_EQ(p.hash_buckets(), std::vector<int32_t>{int32_t(i / 4)});
    std::string expect_lo, expect_hi;
    EncodeKeyCell(DataType::kInt32, Datum::Int32(lo).cell(), true, &expect_lo);
    EncodeKeyCell(DataType::kInt32, Datum::Int32(hi).cell(), true, &expect_hi);
    EXPECT_EQ(p.range_key_start(), expect_lo);
    EXPECT_EQ(p.range_key_end(), expect_hi);
    if (i > 0) {
      EXPECT_LT((*parts)[i - 1].partition_key_start(), p.partition_key_start());
    }
  }
  EXPECT_EQ(ps.PartitionDebugString((*parts)[6], schema_),
            "HASH BUCKETS (1), RANGE [(a=200), (a=250))");
}

TEST_F(PartitionTest, UnboundedRangesAndPrefixBounds) {
  PartitionSchema ps = MustCreate({}, {"a", "b"});
  std::vector<RangeBounds> bounds;
  bounds.push_back(Bounds(std::nullopt, 0));
  bounds.push_back(Bounds(10, std::nullopt));
  auto parts = ps.CreatePartitions(
      {MakeRow(schema_, {{"a", Datum::Int32(20)}, {"b", Datum::String("m")}})}, bounds);
  BASALT_ASSERT_OK(parts);
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_EQ((*parts)[0].partition_key_start(), "");
  EXPECT_EQ(ps.PartitionDebugString((*parts)[0], schema_), "RANGE [<start>, (a=0))");
  EXPECT_EQ(ps.PartitionDebugString((*parts)[1], schema_), "RANGE [(a=10), (a=20, b=\"m\"))");
  EXPECT_EQ(ps.PartitionDebugString((*parts)[2], schema_), "RANGE [(a=20, b=\"m\"), <end>)");
  EXPECT_EQ((*parts)[2].partition_key_end(), "");
  // Rows: a < 0 in the first, 10 <= a < (20, "m") in the second, gaps in none.
  auto owner = [&](int32_t a, std::string_view b) {
    std::string key = ps.PartitionKey(FullRow(schema_, a, b, 0));
    int found = -1;
    for (size_t i = 0; i < parts->size(); i++) {
      if ((*parts)[i].Contains(key)) {
        EXPECT_EQ(found, -1) << "two partitions contain a key";
        found = static_cast<int>(i);
      }
    }
    return found;
  };
  EXPECT_EQ(owner(std::numeric_limits<int32_t>::min(), ""), 0);
  EXPECT_EQ(owner(-1, "zzz"), 0);
  EXPECT_EQ(owner(0, ""), -1);
  EXPECT_EQ(owner(9, "\xff"), -1);
  EXPECT_EQ(owner(10, ""), 1);
  EXPECT_EQ(owner(20, "l\xff"), 1);
  EXPECT_EQ(owner(20, "m"), 2);
  EXPECT_EQ(owner(std::numeric_limits<int32_t>::max(), "q"), 2);
}

TEST_F(PartitionTest, InclusiveAndExclusiveBounds) {
  PartitionSchema ps = MustCreate({}, {"a", "b"});
  auto key = [&](int32_t a, std::string_view b) {
    return ps.PartitionKey(FullRow(schema_, a, b, 0));
  };
  // [(a=5), (a=7)] covers every b for a in 5..7; (a=5) excluded means a > 5.
  RangeBounds closed = Bounds(5, 7);
  closed.upper_inclusive = true;
  RangeKeyInterval r = ps.EncodeRangeBounds(closed).value();
  EXPECT_LE(r.lower, key(5, ""));
  EXPECT_GT(r.upper, key(7, std::string(50, '\xff')));
  EXPECT_LE(r.upper, key(8, ""));
  RangeBounds open = Bounds(5, 7);
  open.lower_inclusive = false;
  r = ps.EncodeRangeBounds(open).value();
  EXPECT_GT(r.lower, key(5, std::string(50, '\xff')));
  EXPECT_LE(r.lower, key(6, ""));
  // Complete rows: exclusive lower (a=5, b="x") starts right after that row.
  RangeBounds full{MakeRow(schema_, {{"a", Datum::Int32(5)}, {"b", Datum::String("x")}}),
                   MakeRow(schema_, {{"a", Datum::Int32(5)}, {"b", Datum::String("y")}}), false,
                   true};
  r = ps.EncodeRangeBounds(full).value();
  EXPECT_EQ(r.lower, key(5, std::string("x\0", 2)));
  EXPECT_EQ(r.upper, key(5, std::string("y\0", 2)));
  // An exclusive lower bound at the maximum leaves nothing.
  RangeBounds at_max = Bounds(std::numeric_limits<int32_t>::max(), std::nullopt);
  at_max.lower_inclusive = false;
  EXPECT_EQ(PartitionSchema::Create(schema_, {}, {"a"})->EncodeRangeBounds(at_max).status().code(),
            absl::StatusCode::kInvalidArgument);
  // An inclusive upper bound at the maximum is unbounded.
  PartitionSchema only_a = MustCreate({}, {"a"});
  RangeBounds to_max = Bounds(0, std::numeric_limits<int32_t>::max());
  to_max.upper_inclusive = true;
  EXPECT_EQ(only_a.EncodeRangeBounds(to_max)->upper, "");
  RangeBounds below_max = Bounds(0, 41);
  below_max.upper_inclusive = true;
  RangeKeyInterval r42 = only_a.EncodeRangeBounds(below_max).value();
  EXPECT_EQ(r42.upper, only_a.PartitionKey(FullRow(schema_, 42, "", 0)));
}

TEST_F(PartitionTest, EmptyStringBoundsAreNotUnbounded) {
  // On a last STRING range column "" encodes to the empty key, which must not be mistaken for
  // an unbounded side.
  PartitionSchema ps = MustCreate({}, {"b"});
  auto b = [&](std::string_view v) { return MakeRow(schema_, {{"b", Datum::String(v)}}); };
  RangeBounds below_empty{Unset(), b("")};
  EXPECT_NE(ps.EncodeRangeBounds(below_empty).status().message().find("is empty"),
            std::string::npos);
  RangeBounds above_empty{b(""), Unset(), /*lower_inclusive=*/false};
  EXPECT_EQ(ps.EncodeRangeBounds(above_empty)->lower, std::string(1, '\0'));
  RangeBounds up_to_empty{Unset(), b(""), true, /*upper_inclusive=*/true};
  EXPECT_EQ(ps.EncodeRangeBounds(up_to_empty)->upper, std::string(1, '\0'));
  auto split_at_empty = ps.CreatePartitions({b("")}, {});
  EXPECT_NE(split_at_empty.status().message().find("equals the lower bound"), std::string::npos)
      << split_at_empty.status();
  auto parts = ps.CreatePartitions({b(std::string(1, '\0'))}, {});
  BASALT_ASSERT_OK(parts);
  EXPECT_TRUE((*parts)[0].Contains(ps.PartitionKey(FullRow(schema_, 0, "", 0))));
  EXPECT_TRUE((*parts)[1].Contains(ps.PartitionKey(FullRow(schema_, 0, std::string(1, '\0'), 0))));
}

struct ErrorCase {
  std::string what;
  std::vector<PartialRow> splits;
  std::vector<RangeBounds> bounds;
  std::string message;
};

TEST_F(PartitionTest, CreatePartitionsValidation) {
  PartitionSchema ps = MustCreate({{{"c"}, 2, 0}}, {"a", "b"});
  PartialRow only_b = MakeRow(schema_, {{"b", Datum::String("x")}});
  PartialRow with_c = MakeRow(schema_, {{"a", Datum::Int32(1)}, {"c", Datum::Int64(1)}});
  std::vector<ErrorCase> cases;
  cases.push_back({"overlap", {}, {}, "overlap"});
  cases.back().bounds.push_back(Bounds(0, 100));
  cases.back().bounds.push_back(Bounds(50, 150));
  cases.push_back({"overlap with unbounded", {}, {}, "overlap"});
  cases.back().bounds.push_back(Bounds(200, std::nullopt));
  cases.back().bounds.push_back(Bounds(0, 300));
  cases.push_back({"same lower", {}, {}, "overlap"});
  cases.back().bounds.push_back(Bounds(std::nullopt, 5));
  cases.back().bounds.push_back(Bounds(std::nullopt, 10));
  cases.push_back({"empty range", {}, {}, "is empty"});
  cases.back().bounds.push_back(Bounds(5, 5));
  cases.push_back({"reversed range", {}, {}, "is empty"});
  cases.back().bounds.push_back(Bounds(6, 5));
  cases.push_back({"split outside", {A(150)}, {}, "lies outside every range partition"});
  cases.back().bounds.push_back(Bounds(0, 100));
  cases.back().bounds.push_back(Bounds(200, 300));
  cases.push_back({"split below all", {A(-1)}, {}, "lies outside every range partition"});
  cases.back().bounds.push_back(Bounds(0, 100));
  cases.push_back({"split at upper", {A(100)}, {}, "lies outside every range partition"});
  cases.back().bounds.push_back(Bounds(0, 100));
  cases.push_back({"split at lower", {A(0)}, {}, "equals the lower bound"});
  cases.back().bounds.push_back(Bounds(0, 100));
  cases.push_back({"duplicate splits", {A(7), A(3), A(7)}, {}, "are equal"});
  cases.push_back({"non-range column", {with_c}, {}, "sets column 'c', which is not a range"});
  cases.push_back({"non-prefix", {only_b}, {}, "sets 'b' but not 'a'"});
  cases.push_back({"empty split", {Unset()}, {}, "sets no range partition column"});
  cases.push_back({"bad bound column", {}, {}, "range lower bound"});
  cases.back().bounds.push_back(RangeBounds{with_c, Unset()});
  for (const ErrorCase& c : cases) {
    auto parts = ps.CreatePartitions(c.splits, c.bounds);
    ASSERT_FALSE(parts.ok()) << c.what;
    EXPECT_EQ(parts.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_NE(parts.status().message().find(c.message), std::string::npos)
        << c.what << ": " << parts.status();
  }
  // The same split rows inside the bounds are fine.
  std::vector<RangeBounds> bounds;
  bounds.push_back(Bounds(0, 100));
  bounds.push_back(Bounds(100, 200));  // Adjacent, not overlapping.
  auto ok = ps.CreatePartitions({A(99), A(100 + 50)}, bounds);
  BASALT_ASSERT_OK(ok);
  EXPECT_EQ(ok->size(), 8u);
}

TEST_F(PartitionTest, TooManyPartitions) {
  PartitionSchema ps = MustCreate({{{"a"}, 1000, 0}, {{"b"}, 1000, 0}}, {});
  EXPECT_NE(ps.CreatePartitions({}, {}).status().message().find("more than"), std::string::npos);
  PartitionSchema wide =
      MustCreate({{{"a"}, 1 << 30, 0}, {{"b"}, 1 << 30, 0}, {{"c"}, 1 << 30, 0}}, {});
  EXPECT_FALSE(wide.CreatePartitions({}, {}).ok());
}

TEST_F(PartitionTest, NoRangeColumnsRejectsSplitsButAllowsOneUnboundedRange) {
  PartitionSchema ps = MustCreate({{{"a"}, 2, 0}}, {});
  EXPECT_FALSE(ps.CreatePartitions({A(1)}, {}).ok());
  std::vector<RangeBounds> one;
  one.push_back(Bounds(std::nullopt, std::nullopt));
  EXPECT_EQ(ps.CreatePartitions({}, one)->size(), 2u);
  one.push_back(Bounds(std::nullopt, std::nullopt));
  EXPECT_FALSE(ps.CreatePartitions({}, one).ok());
}

TEST_F(PartitionTest, EveryRowLandsInExactlyOnePartition) {
  const uint64_t seed = SeedFromEnvOrTime();
  Random rnd(seed);
  for (int round = 0; round < 20; round++) {
    PartitionSchema ps = MustCreate({{{"b"}, 3, static_cast<uint32_t>(round)}}, {"a", "c"});
    // Random distinct split rows over (a, c) or just (a), inside one unbounded range.
    std::vector<PartialRow> splits;
    std::set<std::string> seen;
    for (int i = 0; i < 10; i++) {
      PartialRow row = rnd.OneIn(2)
                           ? A(rnd.UniformRange(-20, 20))
                           : MakeRow(schema_, {{"a", Datum::Int32(rnd.UniformRange(-20, 20))},
                                               {"c", Datum::Int64(rnd.UniformRange(-2, 2))}});
      if (seen.insert(row.ToString()).second) splits.push_back(std::move(row));
    }
    auto parts = ps.CreatePartitions(splits, {});
    BASALT_ASSERT_OK(parts) << parts.status() << " seed " << seed;
    ASSERT_EQ(parts->size(), 3 * (splits.size() + 1));
    for (size_t i = 1; i < parts->size(); i++) {
      ASSERT_LE((*parts)[i - 1].partition_key_end(), (*parts)[i].partition_key_start());
    }
    for (int i = 0; i < 200; i++) {
      PartialRow row = FullRow(schema_, rnd.UniformRange(-25, 25), rnd.RandomString(rnd.Uniform(3)),
                               rnd.UniformRange(-3, 3));
      const std::string key = ps.PartitionKey(row);
      int owners = 0;
      for (const Partition& p : *parts) {
        if (!p.Contains(key)) continue;
        owners++;
        EXPECT_EQ(p.hash_buckets()[0], ps.HashBucket(row, 0));
      }
      ASSERT_EQ(owners, 1) << row.ToString() << " seed " << seed;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Adding and dropping range partitions

TEST_F(PartitionTest, AddAndDropRangePartitions) {
  PartitionSchema ps = MustCreate({{{"b"}, 2, 0}}, {"a"});
  std::vector<RangeBounds> bounds;
  bounds.push_back(Bounds(0, 100));
  std::vector<Partition> existing = ps.CreatePartitions({A(50)}, bounds).value();
  ASSERT_EQ(existing.size(), 4u);

  auto added = ps.PartitionsForNewRange(existing, Bounds(100, 200));
  BASALT_ASSERT_OK(added);
  ASSERT_EQ(added->size(), 2u);
  EXPECT_EQ(ps.PartitionDebugString((*added)[1], schema_),
            "HASH BUCKETS (1), RANGE [(a=100), (a=200))");
  auto overlap = ps.PartitionsForNewRange(existing, Bounds(90, 200));
  EXPECT_EQ(overlap.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(overlap.status().message().find("overlaps existing range partition [(a=50), (a=100))"),
            std::string::npos)
      << overlap.status();
  EXPECT_FALSE(ps.PartitionsForNewRange(existing, Bounds(std::nullopt, 1)).ok());
  EXPECT_FALSE(ps.PartitionsForNewRange(existing, Bounds(300, 200)).ok());
  BASALT_EXPECT_OK(ps.PartitionsForNewRange(existing, Bounds(std::nullopt, 0)));

  existing.insert(existing.end(), added->begin(), added->end());
  auto dropped = ps.PartitionsForDroppedRange(existing, Bounds(0, 50));
  BASALT_ASSERT_OK(dropped);
  ASSERT_EQ(dropped->size(), 2u);
  EXPECT_EQ((*dropped)[0], existing[0]);
  EXPECT_EQ((*dropped)[1], existing[2]);
  EXPECT_EQ(ps.PartitionsForDroppedRange(existing, Bounds(100, 200))->size(), 2u);
  // Inexact matches are not dropped.
  EXPECT_EQ(ps.PartitionsForDroppedRange(existing, Bounds(0, 100)).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ps.PartitionsForDroppedRange(existing, Bounds(0, 49)).status().code(),
            absl::StatusCode::kNotFound);
  // [0, 49] inclusive is [0, 50) for integers.
  RangeBounds inclusive = Bounds(0, 49);
  inclusive.upper_inclusive = true;
  EXPECT_EQ(ps.PartitionsForDroppedRange(existing, inclusive)->size(), 2u);
}

}  // namespace partition_test_file
}  // namespace
}  // namespace basalt
