#include "tablet/scan_key_range.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "common/column_predicate.h"
#include "common/datum.h"
#include "common/key_encoder.h"
#include "common/random.h"
#include "common/schema.h"

namespace basalt {
namespace {
namespace scan_key_range_test_file {

// Key (a INT32, b STRING), then a non-key column c.
Schema TestSchema() {
  auto s =
      Schema::Create({ColumnSchema("a", DataType::kInt32), ColumnSchema("b", DataType::kString),
                      ColumnSchema("c", DataType::kInt64, true)},
                     2);
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

ColumnPredicate Cmp(const Schema& s, const std::string& col, ColumnPredicate::Op op,
                    const Datum& v) {
  auto p = ColumnPredicate::Comparison(s.column(s.find_column(col)), op, v);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

std::string Prefix(const Schema& s, std::vector<Datum> values) {
  return EncodeKeyPrefix(s, values);
}

ScanSpec NarrowedSpec(const Schema& s, std::vector<ColumnPredicate> preds,
                      EncodedKeyRange range = {}) {
  ScanSpec spec;
  spec.range = std::move(range);
  spec.predicates = std::move(preds);
  NarrowKeyRange(s, &spec);
  return spec;
}

EncodedKeyRange Narrowed(const Schema& s, std::vector<ColumnPredicate> preds,
                         EncodedKeyRange range = {}) {
  return NarrowedSpec(s, std::move(preds), std::move(range)).range;
}

std::vector<std::string> Names(const std::vector<ColumnPredicate>& preds) {
  std::vector<std::string> out;
  for (const ColumnPredicate& p : preds) out.push_back(p.ToString());
  return out;
}

using Op = ColumnPredicate::Op;

TEST(ScanKeyRangeTest, FullKeyEqualityIsOneKey) {
  const Schema s = TestSchema();
  const EncodedKeyRange r = Narrowed(
      s, {Cmp(s, "b", Op::kEqual, Datum::String("x")), Cmp(s, "a", Op::kEqual, Datum::Int32(5))});
  const std::string key = EncodeKey(s, std::vector<Datum>{Datum::Int32(5), Datum::String("x")});
  EXPECT_EQ(r.lower, key);
  EXPECT_EQ(r.upper, KeySuccessor(key));
  EXPECT_TRUE(IsSingleKeyRange(r));
}

// A lookup by the whole key keeps only the predicates the one-key range does not imply.
TEST(ScanKeyRangeTest, FullKeyEqualitiesLeaveTheSpec) {
  const Schema s = TestSchema();
  const ColumnPredicate c_pred = Cmp(s, "c", Op::kEqual, Datum::Int64(1));
  const ColumnPredicate b_range = Cmp(s, "b", Op::kGreaterEqual, Datum::String("a"));
  ScanSpec spec = NarrowedSpec(s, {Cmp(s, "a", Op::kEqual, Datum::Int32(5)), c_pred,
                                   Cmp(s, "b", Op::kEqual, Datum::String("x")), b_range});
  EXPECT_TRUE(IsSingleKeyRange(spec.range));
  EXPECT_EQ(Names(spec.predicates), Names({c_pred, b_range}));
  // Two different equalities on one column: the range takes one, the other stays (and matches
  // nothing there).
  const ColumnPredicate a5 = Cmp(s, "a", Op::kEqual, Datum::Int32(5));
  spec = NarrowedSpec(s, {a5, Cmp(s, "a", Op::kEqual, Datum::Int32(6)),
                          Cmp(s, "b", Op::kEqual, Datum::String("x"))});
  EXPECT_EQ(spec.range.lower,
            EncodeKey(s, std::vector<Datum>{Datum::Int32(6), Datum::String("x")}));
  EXPECT_EQ(Names(spec.predicates), Names({a5}));
  // Part of the key: every predicate stays.
  spec = NarrowedSpec(s, {a5});
  EXPECT_EQ(Names(spec.predicates), Names({a5}));
  // A floating point key: predicates compare in IEEE total order, as keys encode, so 0.0 and
  // -0.0 are two keys and the equalities leave the spec as for any other type.
  auto fs = Schema::Create(
      {ColumnSchema("f", DataType::kDouble), ColumnSchema("g", DataType::kInt32)}, 2);
  ASSERT_TRUE(fs.ok()) << fs.status();
  spec = NarrowedSpec(*fs, {Cmp(*fs, "f", Op::kEqual, Datum::Double(0.0)),
                            Cmp(*fs, "g", Op::kEqual, Datum::Int32(1))});
  EXPECT_TRUE(spec.predicates.empty());
  const ScanSpec negative_zero = NarrowedSpec(*fs, {Cmp(*fs, "f", Op::kEqual, Datum::Double(-0.0)),
                                                    Cmp(*fs, "g", Op::kEqual, Datum::Int32(1))});
  EXPECT_NE(negative_zero.range.lower, spec.range.lower);
}

TEST(ScanKeyRangeTest, PrefixAndNextColumnBounds) {
  const Schema s = TestSchema();
  // a = 5: every key starting with 5.
  EncodedKeyRange r = Narrowed(s, {Cmp(s, "a", Op::kEqual, Datum::Int32(5))});
  EXPECT_EQ(r.lower, Prefix(s, {Datum::Int32(5)}));
  EXPECT_EQ(r.upper, PrefixSuccessor(Prefix(s, {Datum::Int32(5)})));
  EXPECT_FALSE(IsSingleKeyRange(r));
  // a = 5 AND b >= 'm' AND b < 'q'.
  r = Narrowed(s, {Cmp(s, "a", Op::kEqual, Datum::Int32(5)),
                   Cmp(s, "b", Op::kGreaterEqual, Datum::String("m")),
                   Cmp(s, "b", Op::kLess, Datum::String("q"))});
  EXPECT_EQ(r.lower, Prefix(s, {Datum::Int32(5), Datum::String("m")}));
  EXPECT_EQ(r.upper, Prefix(s, {Datum::Int32(5), Datum::String("q")}));
  // a IN (7, 3): from 3 to past every key starting with 7.
  auto in = ColumnPredicate::InList(s.column(0), {Datum::Int32(7), Datum::Int32(3)});
  ASSERT_TRUE(in.ok()) << in.status();
  r = Narrowed(s, {*in});
  EXPECT_EQ(r.lower, Prefix(s, {Datum::Int32(3)}));
  EXPECT_EQ(r.upper, PrefixSuccessor(Prefix(s, {Datum::Int32(7)})));
}

TEST(ScanKeyRangeTest, WhatDoesNotNarrow) {
  const Schema s = TestSchema();
  // Non-key columns, and key columns after a gap.
  EXPECT_EQ(Narrowed(s, {Cmp(s, "c", Op::kEqual, Datum::Int64(1))}).lower, "");
  const EncodedKeyRange r = Narrowed(s, {Cmp(s, "b", Op::kEqual, Datum::String("x"))});
  EXPECT_EQ(r.lower, "");
  EXPECT_EQ(r.upper, "");
  // The spec's own range stays when it is tighter.
  const std::string lo = Prefix(s, {Datum::Int32(6)});
  const EncodedKeyRange kept =
      Narrowed(s, {Cmp(s, "a", Op::kGreaterEqual, Datum::Int32(2))}, {lo, ""});
  EXPECT_EQ(kept.lower, lo);
  EXPECT_EQ(kept.upper, "");
}

// The property the scan relies on: a row matches the predicates exactly when its key is in the
// narrowed range and it matches the predicates left in the spec, for random rows and random
// conjunctions over both key columns.
TEST(ScanKeyRangeTest, MatchingRowsAreAlwaysInTheRange) {
  const uint64_t seed = SeedFromEnvOrTime();
  Random rng(seed);
  const Schema s = TestSchema();
  const std::vector<std::string> strings = {"", "a", "ab", "b", std::string("a\0b", 3), "zz"};
  auto random_value = [&](int col) {
    return col == 0 ? Datum::Int32(static_cast<int32_t>(rng.UniformRange(-3, 3)))
                    : Datum::String(strings[rng.Uniform(strings.size())]);
  };
  const std::vector<Op> ops = {Op::kLess, Op::kLessEqual, Op::kEqual, Op::kGreaterEqual,
                               Op::kGreater};
  for (int round = 0; round < 2000; ++round) {
    std::vector<ColumnPredicate> preds;
    const int n = static_cast<int>(rng.Uniform(4));
    for (int i = 0; i < n; ++i) {
      const int col = static_cast<int>(rng.Uniform(2));
      if (rng.OneIn(4)) {
        auto in = ColumnPredicate::InList(s.column(col), {random_value(col), random_value(col)});
        ASSERT_TRUE(in.ok()) << in.status();
        preds.push_back(*in);
      } else {
        preds.push_back(
            Cmp(s, s.column(col).name(), ops[rng.Uniform(ops.size())], random_value(col)));
      }
    }
    const ScanSpec spec = NarrowedSpec(s, preds);
    const EncodedKeyRange& r = spec.range;
    for (int a = -3; a <= 3; ++a) {
      for (const std::string& b : strings) {
        const std::vector<Datum> row = {Datum::Int32(a), Datum::String(b)};
        auto matches = [&](const std::vector<ColumnPredicate>& conj) {
          for (const ColumnPredicate& p : conj) {
            if (!p.Evaluate(row[s.find_column(p.column().name())].cell())) return false;
          }
          return true;
        };
        const std::string key = EncodeKey(s, row);
        const bool in_range = key >= r.lower && (r.upper.empty() || key < r.upper);
        ASSERT_EQ(matches(preds), in_range && matches(spec.predicates))
            << "seed " << seed << " round " << round << " row " << a << ",'" << b << "'";
      }
    }
  }
}

// The same property over a (DOUBLE, INT32) key with the values where float equality is subtle:
// both zeros, infinities, a NaN (all compared in IEEE total order, as keys are encoded).
TEST(ScanKeyRangeTest, FloatKeysMatchExactlyTheirRange) {
  const uint64_t seed = SeedFromEnvOrTime();
  Random rng(seed);
  auto fs = Schema::Create(
      {ColumnSchema("f", DataType::kDouble), ColumnSchema("g", DataType::kInt32)}, 2);
  ASSERT_TRUE(fs.ok()) << fs.status();
  const Schema& s = *fs;
  const std::vector<double> doubles = {-std::numeric_limits<double>::infinity(),
                                       -1.5,
                                       -0.0,
                                       0.0,
                                       2.0,
                                       std::numeric_limits<double>::infinity(),
                                       std::numeric_limits<double>::quiet_NaN()};
  const std::vector<Op> ops = {Op::kLess, Op::kLessEqual, Op::kEqual, Op::kGreaterEqual,
                               Op::kGreater};
  auto random_value = [&](int col) {
    return col == 0 ? Datum::Double(doubles[rng.Uniform(doubles.size())])
                    : Datum::Int32(static_cast<int32_t>(rng.UniformRange(-1, 1)));
  };
  for (int round = 0; round < 2000; ++round) {
    std::vector<ColumnPredicate> preds;
    const int n = static_cast<int>(rng.Uniform(4));
    for (int i = 0; i < n; ++i) {
      const int col = static_cast<int>(rng.Uniform(2));
      // Equalities half the time, so that whole keys are often fixed.
      const Op op = rng.OneIn(2) ? Op::kEqual : ops[rng.Uniform(ops.size())];
      preds.push_back(Cmp(s, s.column(col).name(), op, random_value(col)));
    }
    const ScanSpec spec = NarrowedSpec(s, preds);
    for (double f : doubles) {
      for (int g = -1; g <= 1; ++g) {
        const std::vector<Datum> row = {Datum::Double(f), Datum::Int32(g)};
        auto matches = [&](const std::vector<ColumnPredicate>& conj) {
          for (const ColumnPredicate& p : conj) {
            if (!p.Evaluate(row[s.find_column(p.column().name())].cell())) return false;
          }
          return true;
        };
        const std::string key = EncodeKey(s, row);
        const bool in_range =
            key >= spec.range.lower && (spec.range.upper.empty() || key < spec.range.upper);
        ASSERT_EQ(matches(preds), in_range && matches(spec.predicates))
            << "seed " << seed << " round " << round << " row " << f << "," << g;
      }
    }
  }
}

}  // namespace scan_key_range_test_file
}  // namespace
}  // namespace basalt
