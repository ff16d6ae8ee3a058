#include "common/partition_pruner.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "common/key_encoder.h"
#include "common/random.h"
#include "glog/logging.h"

namespace basalt {
namespace {
namespace partition_pruner_test_file {

// Key (a INT32, b STRING, c INT64), value v INT32 NULL.
Schema TestSchema() {
  return Schema::Create({ColumnSchema("a", DataType::kInt32), ColumnSchema("b", DataType::kString),
                         ColumnSchema("c", DataType::kInt64),
                         ColumnSchema("v", DataType::kInt32, /*is_nullable=*/true)},
                        3)
      .value();
}

class PartitionPrunerTest : public ::testing::Test {
 protected:
  PartitionPrunerTest() : schema_(TestSchema()) {}

  PartitionSchema MustCreate(const std::vector<PartitionSchema::HashLevelSpec>& hash,
                             const std::vector<std::string>& range) {
    auto ps = PartitionSchema::Create(schema_, hash, range);
    CHECK(ps.ok()) << ps.status();
    return *std::move(ps);
  }
  const ColumnSchema& Col(std::string_view name) {
    return schema_.column(schema_.find_column(name));
  }
  ColumnPredicate Cmp(std::string_view name, ColumnPredicate::Op op, const Datum& value) {
    return ColumnPredicate::Comparison(Col(name), op, value).value();
  }
  ColumnPredicate Eq(std::string_view name, const Datum& value) {
    return Cmp(name, ColumnPredicate::Op::kEqual, value);
  }
  PartialRow Row(int32_t a, std::string_view b, int64_t c) {
    PartialRow row(&schema_);
    CHECK(row.SetInt32("a", a).ok());
    CHECK(row.SetString("b", b).ok());
    CHECK(row.SetInt64("c", c).ok());
    return row;
  }
  // Partitions split on `column` (an INT32 or INT64 range column) at `splits`.
  std::vector<Partition> Partitions(const PartitionSchema& ps, const std::string& column,
                                    const std::vector<int64_t>& splits) {
    std::vector<PartialRow> rows;
    for (int64_t s : splits) {
      PartialRow row(&schema_);
      CHECK(row.Set(column, Datum::Int64(s)).ok());
      rows.push_back(std::move(row));
    }
    auto parts = ps.CreatePartitions(rows, {});
    CHECK(parts.ok()) << parts.status();
    return *std::move(parts);
  }
  // Indexes of the partitions the pruner keeps.
  static std::vector<int> Kept(const PartitionPruner& pruner, const std::vector<Partition>& parts) {
    std::vector<int> kept;
    for (size_t i = 0; i < parts.size(); i++) {
      if (!pruner.ShouldPrune(parts[i])) kept.push_back(static_cast<int>(i));
    }
    return kept;
  }

  Schema schema_;
};

TEST_F(PartitionPrunerTest, NoPredicatesKeepsEverything) {
  PartitionSchema ps = MustCreate({{{"a"}, 4, 0}}, {"c"});
  PartitionPruner pruner(ps, schema_, {});
  ASSERT_EQ(pruner.ranges().size(), 1u);
  EXPECT_EQ(pruner.ranges()[0], (PartitionKeyRange{"", ""}));
  EXPECT_EQ(Kept(pruner, Partitions(ps, "c", {0, 10})).size(), 12u);
  // Predicates on non-key columns do not prune.
  PartitionPruner on_value(ps, schema_, {Eq("v", Datum::Int32(3))});
  EXPECT_EQ(on_value.ranges().size(), 1u);
}

TEST_F(PartitionPrunerTest, EqualityOnAllHashColumnsVisitsOneBucket) {
  PartitionSchema ps = MustCreate({{{"a"}, 4, 0}, {{"b"}, 3, 9}}, {"c"});
  std::vector<Partition> parts = Partitions(ps, "c", {0});
  ASSERT_EQ(parts.size(), 24u);
  PartialRow row = Row(17, "x", 0);
  PartitionPruner pruner(ps, schema_, {Eq("a", Datum::Int32(17)), Eq("b", Datum::String("x"))});
  ASSERT_EQ(pruner.ranges().size(), 1u);
  std::string prefix;
  AppendHashBucket(ps.HashBucket(row, 0), &prefix);
  AppendHashBucket(ps.HashBucket(row, 1), &prefix);
  EXPECT_EQ(pruner.ranges()[0], (PartitionKeyRange{prefix, PrefixSuccessor(prefix)}));
  std::vector<int> kept = Kept(pruner, parts);
  ASSERT_EQ(kept.size(), 2u);  // Both range partitions of the one bucket pair.
  for (int i : kept) {
    EXPECT_EQ(parts[i].hash_buckets(),
              (std::vector<int32_t>{ps.HashBucket(row, 0), ps.HashBucket(row, 1)}));
  }
  // Adding a range predicate narrows to one tablet.
  PartitionPruner narrower(ps, schema_,
                           {Eq("a", Datum::Int32(17)), Eq("b", Datum::String("x")),
                            Cmp("c", ColumnPredicate::Op::kLess, Datum::Int64(-5))});
  EXPECT_EQ(Kept(narrower, parts).size(), 1u);
}

TEST_F(PartitionPrunerTest, PartiallyConstrainedHashLevels) {
  PartitionSchema ps = MustCreate({{{"a"}, 4, 0}, {{"b"}, 3, 0}}, {});
  std::vector<Partition> parts = ps.CreatePartitions({}, {}).value();
  // Only the first level: one prefix covering its 3 buckets of the second level.
  PartitionPruner first(ps, schema_, {Eq("a", Datum::Int32(5))});
  EXPECT_EQ(first.ranges().size(), 1u);
  EXPECT_EQ(Kept(first, parts).size(), 3u);
  // Only the second level: one range per bucket of the first level.
  PartitionPruner second(ps, schema_, {Eq("b", Datum::String("q"))});
  EXPECT_EQ(second.ranges().size(), 4u);
  EXPECT_EQ(Kept(second, parts).size(), 4u);
  // An IN list hashes each value.
  PartitionPruner in_list(
      ps, schema_, {ColumnPredicate::InList(Col("a"), {Datum::Int32(1), Datum::Int32(2)}).value()});
  std::set<int32_t> buckets = {ps.HashBucket(Row(1, "", 0), 0), ps.HashBucket(Row(2, "", 0), 0)};
  EXPECT_EQ(Kept(in_list, parts).size(), 3 * buckets.size());
  // Too many IN values to enumerate: no pruning, but still correct.
  std::vector<Datum> many;
  for (int i = 0; i < 2000; i++) many.push_back(Datum::Int32(i));
  PartitionPruner huge(ps, schema_, {ColumnPredicate::InList(Col("a"), many).value()});
  EXPECT_EQ(Kept(huge, parts).size(), 12u);
}

TEST_F(PartitionPrunerTest, ExpansionIsCapped) {
  // An unconstrained level of 2^30 buckets ahead of a bounded range key is not expanded (that
  // would be 2^30 ranges); the pruner falls back to whole hash prefixes.
  PartitionSchema huge = MustCreate({{{"a"}, 1 << 30, 0}, {{"b"}, 3, 0}}, {"c"});
  PartitionPruner pruner(huge, schema_, {Eq("b", Datum::String("x")), Eq("c", Datum::Int64(4))});
  ASSERT_EQ(pruner.ranges().size(), 1u);
  EXPECT_EQ(pruner.ranges()[0], (PartitionKeyRange{"", ""}));
  // Within the cap, every level is expanded: 64 x 1 prefixes, each narrowed by the range key.
  PartitionSchema small = MustCreate({{{"a"}, 64, 0}, {{"b"}, 3, 0}}, {"c"});
  PartitionPruner narrow(small, schema_, {Eq("b", Datum::String("x")), Eq("c", Datum::Int64(4))});
  EXPECT_EQ(narrow.ranges().size(), 64u);
  const std::string key = small.PartitionKey(Row(12345, "x", 4));
  EXPECT_EQ(
      std::count_if(narrow.ranges().begin(), narrow.ranges().end(),
                    [&](const PartitionKeyRange& r) { return key >= r.start && key < r.end; }),
      1);
}

TEST_F(PartitionPrunerTest, RangePredicatesVisitOverlappingRanges) {
  PartitionSchema ps = MustCreate({}, {"a"});
  std::vector<Partition> parts = Partitions(ps, "a", {0, 10, 20, 30});
  using Op = ColumnPredicate::Op;
  auto kept = [&](std::vector<ColumnPredicate> preds) {
    return Kept(PartitionPruner(ps, schema_, preds), parts);
  };
  EXPECT_EQ(
      kept({Cmp("a", Op::kGreaterEqual, Datum::Int32(12)), Cmp("a", Op::kLess, Datum::Int32(25))}),
      (std::vector<int>{2, 3}));
  EXPECT_EQ(kept({Cmp("a", Op::kLess, Datum::Int32(20))}), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(kept({Cmp("a", Op::kLessEqual, Datum::Int32(19))}), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(kept({Cmp("a", Op::kLessEqual, Datum::Int32(20))}), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(kept({Cmp("a", Op::kGreater, Datum::Int32(29))}), (std::vector<int>{4}));
  EXPECT_EQ(kept({Eq("a", Datum::Int32(10))}), (std::vector<int>{2}));
  EXPECT_EQ(kept({ColumnPredicate::InList(Col("a"), {Datum::Int32(-5), Datum::Int32(15)}).value()}),
            (std::vector<int>{0, 1, 2}));
}

TEST_F(PartitionPrunerTest, MultiColumnRangeKey) {
  // RANGE (b, c): equality on b then a range on c.
  PartitionSchema ps = MustCreate({}, {"b", "c"});
  std::vector<PartialRow> splits;
  for (auto [b, c] : std::vector<std::pair<std::string, int64_t>>{{"m", 0}, {"m", 10}, {"n", 0}}) {
    PartialRow row(&schema_);
    CHECK(row.SetString("b", b).ok());
    CHECK(row.SetInt64("c", c).ok());
    splits.push_back(std::move(row));
  }
  std::vector<Partition> parts = ps.CreatePartitions(splits, {}).value();
  ASSERT_EQ(parts.size(), 4u);
  using Op = ColumnPredicate::Op;
  auto kept = [&](std::vector<ColumnPredicate> preds) {
    return Kept(PartitionPruner(ps, schema_, preds), parts);
  };
  EXPECT_EQ(kept({Eq("b", Datum::String("m")), Cmp("c", Op::kGreaterEqual, Datum::Int64(3)),
                  Cmp("c", Op::kLess, Datum::Int64(8))}),
            (std::vector<int>{1}));
  EXPECT_EQ(kept({Eq("b", Datum::String("m"))}), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(kept({Eq("b", Datum::String("m")), Eq("c", Datum::Int64(10))}), (std::vector<int>{2}));
  EXPECT_EQ(kept({Cmp("b", Op::kGreater, Datum::String("m"))}), (std::vector<int>{2, 3}));
  // A range on c alone says nothing about the range key.
  EXPECT_EQ(kept({Eq("c", Datum::Int64(5))}).size(), 4u);
}

TEST_F(PartitionPrunerTest, ContradictionsVisitNothing) {
  PartitionSchema ps = MustCreate({{{"a"}, 3, 0}}, {"c"});
  std::vector<Partition> parts = Partitions(ps, "c", {0});
  using Op = ColumnPredicate::Op;
  const std::vector<std::vector<ColumnPredicate>> cases = {
      {ColumnPredicate::None(Col("v"))},
      {ColumnPredicate::IsNull(Col("a"))},
      {Eq("c", Datum::Int64(1)), Eq("c", Datum::Int64(2))},
      {Cmp("c", Op::kGreater, Datum::Int64(5)), Cmp("c", Op::kLess, Datum::Int64(3))},
  };
  for (const auto& preds : cases) {
    PartitionPruner pruner(ps, schema_, preds);
    EXPECT_FALSE(pruner.HasMorePartitionKeyRanges()) << preds[0].ToString();
    EXPECT_TRUE(Kept(pruner, parts).empty());
    EXPECT_EQ(pruner.ToString(), "<none>");
  }
  // IS NULL on a nullable column may match.
  EXPECT_TRUE(PartitionPruner(ps, schema_, {ColumnPredicate::IsNull(Col("v"))})
                  .HasMorePartitionKeyRanges());
}

TEST_F(PartitionPrunerTest, PrimaryKeyBounds) {
  PartitionSchema ps = PartitionSchema::CreateDefault(schema_);
  std::vector<Partition> parts = Partitions(ps, "a", {0, 5, 6, 7, 10});
  auto kept = [&](std::string lower, std::string upper) {
    return Kept(PartitionPruner(ps, schema_, {}, lower, upper), parts);
  };
  const std::string k5 = EncodeKey(schema_, Row(5, "", 0));
  const std::string k7 = EncodeKey(schema_, Row(7, "", 0));
  EXPECT_EQ(kept(k5, k7), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(kept(k5, ""), (std::vector<int>{2, 3, 4, 5}));
  EXPECT_EQ(kept("", k5), (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(kept(k7, k5).empty());
  // Undecodable bounds are ignored.
  EXPECT_EQ(kept("\x01", "").size(), parts.size());
  // With a range on a key prefix the bounds still apply; the upper bound's prefix is kept.
  PartitionSchema prefix = MustCreate({}, {"a"});
  std::vector<Partition> prefix_parts = Partitions(prefix, "a", {0, 5, 6, 7, 10});
  EXPECT_EQ(Kept(PartitionPruner(prefix, schema_, {}, k5, k7), prefix_parts),
            (std::vector<int>{2, 3, 4}));
  // A range not on a key prefix ignores them.
  PartitionSchema on_c = MustCreate({}, {"c"});
  EXPECT_EQ(PartitionPruner(on_c, schema_, {}, k5, k7).ranges().size(), 1u);
}

TEST_F(PartitionPrunerTest, RemovePartitionKeyRange) {
  PartitionSchema ps = MustCreate({{{"b"}, 4, 0}}, {"a"});
  PartitionPruner pruner(ps, schema_,
                         {Cmp("a", ColumnPredicate::Op::kGreaterEqual, Datum::Int32(0))});
  ASSERT_EQ(pruner.ranges().size(), 4u);
  std::vector<Partition> parts = Partitions(ps, "a", {100});
  ASSERT_EQ(parts.size(), 8u);
  // Walk the tablets the way a scanner does.
  std::vector<int> visited;
  while (pruner.HasMorePartitionKeyRanges()) {
    const std::string next = pruner.NextPartitionKey();
    auto it = std::find_if(parts.begin(), parts.end(),
                           [&](const Partition& p) { return p.Contains(next); });
    ASSERT_NE(it, parts.end());
    visited.push_back(static_cast<int>(it - parts.begin()));
    pruner.RemovePartitionKeyRange(it->partition_key_end());
    ASSERT_LE(visited.size(), parts.size());
  }
  EXPECT_EQ(visited, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  PartitionPruner all(ps, schema_, {});
  all.RemovePartitionKeyRange("");
  EXPECT_FALSE(all.HasMorePartitionKeyRanges());
}

// ---------------------------------------------------------------------------------------------
// Randomized: every row a scan can return lies in a kept range and a kept partition.

// Model evaluation of a predicate, independent of ColumnPredicate::Evaluate.
bool ModelMatches(const ColumnPredicate& p, const Datum& v) {
  switch (p.kind()) {
    case PredicateKind::kNone:
      return false;
    case PredicateKind::kIsNull:
      return v.is_null();
    case PredicateKind::kIsNotNull:
      return !v.is_null();
    default:
      break;
  }
  if (v.is_null()) return false;
  switch (p.kind()) {
    case PredicateKind::kEquality:
      return v.Compare(*p.lower()) == 0;
    case PredicateKind::kRange:
      return (!p.lower() || v.Compare(*p.lower()) >= 0) &&
             (!p.upper() || v.Compare(*p.upper()) < 0);
    case PredicateKind::kInList:
      return std::any_of(p.values().begin(), p.values().end(),
                         [&](const Datum& x) { return v.Compare(x) == 0; });
    default:
      return false;
  }
}

class RandomPruning {
 public:
  RandomPruning(const Schema& schema, Random* rnd) : schema_(schema), rnd_(*rnd) {}

  // A random value for column `col`; NULL only for the nullable column and only if `allow_null`.
  Datum Value(int col, bool allow_null = false) {
    switch (col) {
      case 0:
        return Datum::Int32(rnd_.OneIn(10) ? (rnd_.OneIn(2) ? std::numeric_limits<int32_t>::min()
                                                            : std::numeric_limits<int32_t>::max())
                                           : rnd_.UniformRange(-4, 4));
      case 1: {
        static const char kAlphabet[] = {'\0', '\1', 'a', '\xff'};
        std::string s;
        for (uint64_t n = rnd_.Uniform(3); n > 0; n--) s.push_back(kAlphabet[rnd_.Uniform(4)]);
        return Datum::String(s);
      }
      case 2:
        return Datum::Int64(rnd_.OneIn(10) ? (rnd_.OneIn(2) ? std::numeric_limits<int64_t>::min()
                                                            : std::numeric_limits<int64_t>::max())
                                           : rnd_.UniformRange(-3, 3));
      default:
        return allow_null && rnd_.OneIn(3) ? Datum::Null(DataType::kInt32)
                                           : Datum::Int32(rnd_.UniformRange(0, 3));
    }
  }

  PartitionSchema RandomPartitionSchema() {
    std::vector<std::string> keys = {"a", "b", "c"};
    std::vector<PartitionSchema::HashLevelSpec> hash;
    std::vector<std::string> unhashed = keys;
    for (int l = static_cast<int>(rnd_.Uniform(3)); l > 0 && !unhashed.empty(); l--) {
      PartitionSchema::HashLevelSpec spec;
      spec.num_buckets = static_cast<int32_t>(rnd_.UniformRange(2, 5));
      spec.seed = rnd_.Next32();
      for (uint64_t n = 1 + rnd_.Uniform(unhashed.size()); n > 0; n--) {
        size_t i = rnd_.Uniform(unhashed.size());
        spec.columns.push_back(unhashed[i]);
        unhashed.erase(unhashed.begin() + i);
      }
      hash.push_back(std::move(spec));
    }
    std::vector<std::string> range;
    std::vector<std::string> pool = keys;
    for (uint64_t n = rnd_.Uniform(4); n > 0; n--) {
      size_t i = rnd_.Uniform(pool.size());
      range.push_back(pool[i]);
      pool.erase(pool.begin() + i);
    }
    return PartitionSchema::Create(schema_, hash, range).value();
  }

  ColumnPredicate RandomPredicate(int col) {
    const ColumnSchema& column = schema_.column(col);
    switch (rnd_.Uniform(12)) {
      case 0:
      case 1:
      case 2:
        return ColumnPredicate::Equality(column, Value(col)).value();
      case 3:
      case 4: {
        std::vector<Datum> values;
        for (uint64_t n = 1 + rnd_.Uniform(4); n > 0; n--) values.push_back(Value(col));
        return ColumnPredicate::InList(column, values).value();
      }
      case 5:
        return ColumnPredicate::IsNotNull(column);
      case 6:
        return rnd_.OneIn(4) ? ColumnPredicate::None(column) : ColumnPredicate::IsNull(column);
      default: {
        const auto op = static_cast<ColumnPredicate::Op>(rnd_.Uniform(5));
        return ColumnPredicate::Comparison(column, op, Value(col)).value();
      }
    }
  }

  PartialRow RandomRow() {
    PartialRow row(&schema_);
    for (int i = 0; i < schema_.num_columns(); i++)
      CHECK(row.Set(i, Value(i, /*allow_null=*/true)).ok());
    return row;
  }

  // Split rows over the range columns: random values for a random prefix.
  std::vector<PartialRow> RandomSplits(const PartitionSchema& ps) {
    std::vector<PartialRow> splits;
    std::set<std::string> keys;
    const auto& range = ps.range_column_indexes();
    if (range.empty()) return splits;
    for (uint64_t n = rnd_.Uniform(6); n > 0; n--) {
      PartialRow row(&schema_);
      for (uint64_t i = 0, len = 1 + rnd_.Uniform(range.size()); i < len; i++) {
        CHECK(row.Set(range[i], Value(range[i])).ok());
      }
      if (keys.insert(row.ToString()).second) splits.push_back(std::move(row));
    }
    return splits;
  }

 private:
  const Schema& schema_;
  Random& rnd_;
};

TEST_F(PartitionPrunerTest, RandomizedNeverPrunesAMatchingRow) {
  const uint64_t seed = SeedFromEnvOrTime();
  Random rnd(seed);
  RandomPruning gen(schema_, &rnd);
  int rounds_with_matches = 0;
  int pruned_partitions = 0;
  for (int round = 0; round < 300; round++) {
    SCOPED_TRACE(testing::Message() << "seed " << seed << " round " << round);
    PartitionSchema ps = gen.RandomPartitionSchema();
    auto parts = ps.CreatePartitions(gen.RandomSplits(ps), {});
    if (!parts.ok()) continue;  // E.g. a split row equal to the minimum key.
    std::vector<ColumnPredicate> preds;
    for (int col = 0; col < schema_.num_columns(); col++) {
      for (uint64_t n = rnd.OneIn(2) ? 1 + rnd.Uniform(2) : 0; n > 0; n--) {
        preds.push_back(gen.RandomPredicate(col));
      }
    }
    std::string lower = rnd.OneIn(4) ? EncodeKey(schema_, gen.RandomRow()) : "";
    std::string upper = rnd.OneIn(4) ? EncodeKey(schema_, gen.RandomRow()) : "";
    PartitionPruner pruner(ps, schema_, preds, lower, upper);
    SCOPED_TRACE(ps.ToString(schema_) + " ranges " + pruner.ToString());
    for (size_t i = 1; i < pruner.ranges().size(); i++) {
      ASSERT_FALSE(pruner.ranges()[i - 1].end.empty());
      ASSERT_LT(pruner.ranges()[i - 1].end, pruner.ranges()[i].start);
    }
    bool any_match = false;
    for (int r = 0; r < 200; r++) {
      PartialRow row = gen.RandomRow();
      bool match = true;
      for (const ColumnPredicate& p : preds) {
        match &= ModelMatches(p, row.Get(schema_.find_column(p.column().name())));
      }
      const std::string pk = EncodeKey(schema_, row);
      match &= pk >= lower && (upper.empty() || pk < upper);
      if (!match) continue;
      any_match = true;
      const std::string key = ps.PartitionKey(row);
      const bool in_range = std::any_of(
          pruner.ranges().begin(), pruner.ranges().end(), [&](const PartitionKeyRange& kr) {
            return key >= kr.start && (kr.end.empty() || key < kr.end);
          });
      ASSERT_TRUE(in_range) << row.ToString();
      for (const Partition& p : *parts) {
        if (p.Contains(key)) {
          ASSERT_FALSE(pruner.ShouldPrune(p)) << row.ToString();
        }
      }
    }
    rounds_with_matches += any_match;
    pruned_partitions += static_cast<int>(parts->size() - Kept(pruner, *parts).size());
  }
  // The generator is not degenerate: matches happen and pruning happens.
  EXPECT_GT(rounds_with_matches, 30);
  EXPECT_GT(pruned_partitions, 30);
}

}  // namespace partition_pruner_test_file
}  // namespace
}  // namespace basalt
