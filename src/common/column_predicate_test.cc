#include "common/column_predicate.h"

#include <gtest/gtest.h>

#include "common/test_util.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/numeric/int128.h"
#include "common/bitmap.h"
#include "common/predicate_kernels.h"
#include "common/random.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "proto/common.pb.h"

namespace basalt {
namespace {
namespace column_predicate_test_file {

using Op = ColumnPredicate::Op;
using predicate_internal::KernelIsa;

constexpr int32_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();

using testing_util::DoubleBits;
using testing_util::FloatBits;

template <typename T>
T Unwrap(absl::StatusOr<T> v) {
  BASALT_EXPECT_OK(v);
  return *std::move(v);
}

class ColumnPredicateTest : public ::testing::Test {
 protected:
  ColumnPredicateTest()
      : schema_(Schema::Create({ColumnSchema("i32", DataType::kInt32),
                                ColumnSchema("i8", DataType::kInt8, true),
                                ColumnSchema("i16", DataType::kInt16, true),
                                ColumnSchema("i64", DataType::kInt64, true),
                                ColumnSchema("b", DataType::kBool, true),
                                ColumnSchema("f", DataType::kFloat, true),
                                ColumnSchema("d", DataType::kDouble, true),
                                ColumnSchema("s", DataType::kString, true),
                                ColumnSchema("bin", DataType::kBinary, true),
                                ColumnSchema("dec", DataType::kDecimal32, true, std::nullopt,
                                             TypeAttributes{5, 2, 0}),
                                ColumnSchema("dec128", DataType::kDecimal128, true, std::nullopt,
                                             TypeAttributes{30, 3, 0}),
                                ColumnSchema("date", DataType::kDate, true),
                                ColumnSchema("ts", DataType::kUnixtimeMicros, true),
                                ColumnSchema("vc", DataType::kVarchar, true, std::nullopt,
                                             TypeAttributes{0, 0, 10})},
                               1)
                    .value()) {}

  const ColumnSchema& col(std::string_view name) const {
    int idx = schema_.find_column(name);
    CHECK_GE(idx, 0) << name;
    return schema_.column(idx);
  }

  ColumnPredicate Range(std::string_view c, std::optional<Datum> lo, std::optional<Datum> hi) {
    return Unwrap(ColumnPredicate::Range(col(c), std::move(lo), std::move(hi)));
  }
  ColumnPredicate Cmp(std::string_view c, Op op, const Datum& v) {
    return Unwrap(ColumnPredicate::Comparison(col(c), op, v));
  }
  ColumnPredicate Eq(std::string_view c, const Datum& v) {
    return Unwrap(ColumnPredicate::Equality(col(c), v));
  }
  ColumnPredicate In(std::string_view c, std::vector<Datum> v) {
    return Unwrap(ColumnPredicate::InList(col(c), std::move(v)));
  }

  Schema schema_;
};

// ---- Construction and normalization ----------------------------------------------------------

TEST_F(ColumnPredicateTest, IntegerRangesNormalize) {
  EXPECT_EQ(Range("i32", Datum::Int32(5), Datum::Int32(10)).ToString(), "i32 >= 5 AND i32 < 10");
  EXPECT_EQ(Range("i32", Datum::Int32(5), Datum::Int32(6)), Eq("i32", Datum::Int32(5)));
  EXPECT_EQ(Range("i32", Datum::Int32(5), Datum::Int32(5)).kind(), PredicateKind::kNone);
  EXPECT_EQ(Range("i32", Datum::Int32(10), Datum::Int32(5)).kind(), PredicateKind::kNone);
  EXPECT_EQ(Range("i32", std::nullopt, std::nullopt).kind(), PredicateKind::kIsNotNull);
  // A lower bound at the minimum excludes nothing.
  EXPECT_EQ(Range("i32", Datum::Int32(kInt32Min), std::nullopt).kind(), PredicateKind::kIsNotNull);
  EXPECT_EQ(Range("i32", Datum::Int32(kInt32Min), Datum::Int32(7)),
            Range("i32", std::nullopt, Datum::Int32(7)));
  EXPECT_EQ(Range("i32", std::nullopt, Datum::Int32(kInt32Min)).kind(), PredicateKind::kNone);
  EXPECT_EQ(Range("i32", std::nullopt, Datum::Int32(kInt32Min + 1)),
            Eq("i32", Datum::Int32(kInt32Min)));
  EXPECT_EQ(Range("i32", Datum::Int32(kInt32Max), std::nullopt),
            Eq("i32", Datum::Int32(kInt32Max)));
  EXPECT_EQ(Range("i8", Datum::Int8(126), std::nullopt).ToString(), "i8 >= 126");
}

TEST_F(ColumnPredicateTest, ComparisonsUseSuccessor) {
  EXPECT_EQ(Cmp("i32", Op::kLessEqual, Datum::Int32(5)),
            Range("i32", std::nullopt, Datum::Int32(6)));
  EXPECT_EQ(Cmp("i32", Op::kGreater, Datum::Int32(5)), Range("i32", Datum::Int32(6), std::nullopt));
  EXPECT_EQ(Cmp("i32", Op::kLess, Datum::Int32(5)).ToString(), "i32 < 5");
  EXPECT_EQ(Cmp("i32", Op::kGreaterEqual, Datum::Int32(5)).ToString(), "i32 >= 5");
  EXPECT_EQ(Cmp("i32", Op::kEqual, Datum::Int32(5)).ToString(), "i32 = 5");
  // The successor of the maximum is "no upper bound".
  EXPECT_EQ(Cmp("i32", Op::kLessEqual, Datum::Int32(kInt32Max)).kind(), PredicateKind::kIsNotNull);
  EXPECT_EQ(Cmp("i32", Op::kGreater, Datum::Int32(kInt32Max)).kind(), PredicateKind::kNone);
  EXPECT_EQ(Cmp("i32", Op::kGreaterEqual, Datum::Int32(kInt32Max)),
            Eq("i32", Datum::Int32(kInt32Max)));
  EXPECT_EQ(Cmp("i32", Op::kLess, Datum::Int32(kInt32Min)).kind(), PredicateKind::kNone);
  EXPECT_EQ(Cmp("i32", Op::kLessEqual, Datum::Int32(kInt32Min)),
            Eq("i32", Datum::Int32(kInt32Min)));
  EXPECT_EQ(Cmp("i64", Op::kLessEqual, Datum::Int64(std::numeric_limits<int64_t>::max())).kind(),
            PredicateKind::kIsNotNull);
  EXPECT_EQ(Cmp("i8", Op::kGreater, Datum::Int8(126)), Eq("i8", Datum::Int8(127)));
}

TEST_F(ColumnPredicateTest, StringBoolFloatAndDecimalNormalize) {
  std::string a0("a\0", 2);
  EXPECT_EQ(Range("s", Datum::String("a"), Datum::String(a0)), Eq("s", Datum::String("a")));
  EXPECT_EQ(Cmp("s", Op::kLessEqual, Datum::String("a")),
            Range("s", std::nullopt, Datum::String(a0)));
  EXPECT_EQ(Range("s", Datum::String(""), Datum::String("b")).ToString(), "s < 'b'");
  EXPECT_EQ(Range("s", std::nullopt, Datum::String("")).kind(), PredicateKind::kNone);
  EXPECT_EQ(Range("s", std::nullopt, Datum::String(std::string(1, '\0'))),
            Eq("s", Datum::String("")));
  EXPECT_EQ(Cmp("s", Op::kGreater, Datum::String("a")),
            Range("s", Datum::String(a0), std::nullopt));

  EXPECT_EQ(Cmp("b", Op::kGreater, Datum::Bool(false)), Eq("b", Datum::Bool(true)));
  EXPECT_EQ(Cmp("b", Op::kLess, Datum::Bool(true)), Eq("b", Datum::Bool(false)));
  EXPECT_EQ(Cmp("b", Op::kGreater, Datum::Bool(true)).kind(), PredicateKind::kNone);
  EXPECT_EQ(In("b", {Datum::Bool(true), Datum::Bool(false)}).kind(), PredicateKind::kIsNotNull);

  EXPECT_EQ(Cmp("f", Op::kLessEqual, Datum::Float(1.0f)),
            Range("f", std::nullopt, Datum::Float(std::nextafter(1.0f, 2.0f))));
  // In the total order -0.0 < +0.0 are neighbours, and +inf is followed by the NaNs.
  EXPECT_EQ(Cmp("f", Op::kGreater, Datum::Float(-0.0f)),
            Range("f", Datum::Float(0.0f), std::nullopt));
  EXPECT_EQ(Range("f", Datum::Float(INFINITY), FloatBits(0x7f800001)),
            Eq("f", Datum::Float(INFINITY)));
  EXPECT_EQ(Cmp("f", Op::kLessEqual, FloatBits(0x7fffffff)).kind(), PredicateKind::kIsNotNull);
  EXPECT_EQ(Cmp("d", Op::kGreaterEqual, DoubleBits(~uint64_t{0})).kind(),
            PredicateKind::kIsNotNull);
  EXPECT_EQ(Cmp("d", Op::kGreater, DoubleBits(0x7fffffffffffffff)).kind(), PredicateKind::kNone);

  // DECIMAL(5, 2) holds -999.99 .. 999.99.
  EXPECT_EQ(Cmp("dec", Op::kLessEqual, Datum::Decimal32(99999)).kind(), PredicateKind::kIsNotNull);
  EXPECT_EQ(Cmp("dec", Op::kGreater, Datum::Decimal32(99999)).kind(), PredicateKind::kNone);
  EXPECT_EQ(Cmp("dec", Op::kGreaterEqual, Datum::Decimal32(-99999)).kind(),
            PredicateKind::kIsNotNull);
  EXPECT_EQ(Cmp("dec", Op::kLess, Datum::Decimal32(200000)).kind(), PredicateKind::kIsNotNull);
  EXPECT_EQ(Eq("dec", Datum::Decimal32(100000)).kind(), PredicateKind::kNone);
  EXPECT_EQ(In("dec", {Datum::Decimal32(1), Datum::Decimal32(100000), Datum::Decimal32(1)}),
            Eq("dec", Datum::Decimal32(1)));
  EXPECT_EQ(Cmp("dec", Op::kGreaterEqual, Datum::Decimal32(-1234)).ToString(), "dec >= -12.34");
}

TEST_F(ColumnPredicateTest, InListsAreSortedDedupedAndFiltered) {
  ColumnPredicate p = In(
      "i32", {Datum::Int32(3), Datum::Int32(1), Datum::Int64(2), Datum::Int32(3), Datum::Int32(1)});
  EXPECT_EQ(p.kind(), PredicateKind::kInList);
  EXPECT_EQ(p.ToString(), "i32 IN (1, 2, 3)");
  EXPECT_EQ(In("i32", {Datum::Int32(4), Datum::Int32(4)}), Eq("i32", Datum::Int32(4)));
  EXPECT_EQ(In("i32", {}).kind(), PredicateKind::kNone);
  EXPECT_EQ(In("s", {Datum::String("b"), Datum::String("a"), Datum::String("b")}).ToString(),
            "s IN ('a', 'b')");
  EXPECT_EQ(ColumnPredicate::InList(col("i32"), {Datum::Int32(1), Datum::Null(DataType::kInt32)})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ColumnPredicateTest, ValuesAreConvertedOrRejected) {
  EXPECT_EQ(Eq("i8", Datum::Int64(-5)), Eq("i8", Datum::Int8(-5)));
  EXPECT_EQ(Eq("vc", Datum::String("x")).lower()->type(), DataType::kVarchar);
  EXPECT_EQ(Eq("date", Datum::Int32(3)).ToString(), "date = 1970-01-04");
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(ColumnPredicate::Equality(col("i8"), Datum::Int32(300)).status().code(), kInvalid);
  EXPECT_EQ(ColumnPredicate::Equality(col("i32"), Datum::String("1")).status().code(), kInvalid);
  EXPECT_EQ(ColumnPredicate::Equality(col("f"), Datum::Double(1)).status().code(), kInvalid);
  EXPECT_EQ(ColumnPredicate::Equality(col("i32"), Datum::Null(DataType::kInt32)).status().code(),
            kInvalid);
  EXPECT_EQ(ColumnPredicate::Range(col("i32"), std::nullopt, Datum::Bool(true)).status().code(),
            kInvalid);
  EXPECT_EQ(ColumnPredicate::Comparison(col("s"), Op::kLess, Datum()).status().code(), kInvalid);
}

TEST_F(ColumnPredicateTest, ToStringForms) {
  EXPECT_EQ(ColumnPredicate::IsNull(col("s")).ToString(), "s IS NULL");
  EXPECT_EQ(ColumnPredicate::IsNotNull(col("s")).ToString(), "s IS NOT NULL");
  EXPECT_EQ(ColumnPredicate::None(col("s")).ToString(), "s NONE");
  EXPECT_EQ(Eq("s", Datum::String(std::string("a'\0", 3))).ToString(), "s = 'a\\'\\x00'");
  EXPECT_EQ(Eq("bin", Datum::Binary("\x01\xff")).ToString(), "bin = 0x01ff");
  EXPECT_EQ(Range("dec128", Datum::Decimal128(-5), Datum::Decimal128(12345)).ToString(),
            "dec128 >= -0.005 AND dec128 < 12.345");
}

// ---- Evaluate and Merge ----------------------------------------------------------------------

TEST_F(ColumnPredicateTest, EvaluateEachKind) {
  Datum five = Datum::Int32(5), seven = Datum::Int32(7), nine = Datum::Int32(9);
  ColumnPredicate range = Range("i32", Datum::Int32(5), Datum::Int32(9));
  EXPECT_TRUE(range.Evaluate(five.cell()));
  EXPECT_TRUE(range.Evaluate(seven.cell()));
  EXPECT_FALSE(range.Evaluate(nine.cell()));
  EXPECT_FALSE(range.Evaluate(nullptr));
  ColumnPredicate in = In("i32", {five, nine});
  EXPECT_TRUE(in.Evaluate(nine.cell()));
  EXPECT_FALSE(in.Evaluate(seven.cell()));
  EXPECT_FALSE(in.Evaluate(nullptr));
  EXPECT_TRUE(Eq("i32", seven).Evaluate(seven.cell()));
  EXPECT_FALSE(Eq("i32", seven).Evaluate(five.cell()));
  EXPECT_TRUE(ColumnPredicate::IsNull(col("i32")).Evaluate(nullptr));
  EXPECT_FALSE(ColumnPredicate::IsNull(col("i32")).Evaluate(five.cell()));
  EXPECT_TRUE(ColumnPredicate::IsNotNull(col("i32")).Evaluate(five.cell()));
  EXPECT_FALSE(ColumnPredicate::IsNotNull(col("i32")).Evaluate(nullptr));
  EXPECT_FALSE(ColumnPredicate::None(col("i32")).Evaluate(five.cell()));
  EXPECT_FALSE(ColumnPredicate::None(col("i32")).Evaluate(nullptr));
  Datum s = Datum::String(std::string("b\0", 2));
  EXPECT_TRUE(Range("s", Datum::String("b"), Datum::String("c")).Evaluate(s.cell()));
  EXPECT_FALSE(Eq("s", Datum::String("b")).Evaluate(s.cell()));
  Datum nan = Datum::Double(NAN);
  EXPECT_TRUE(Cmp("d", Op::kGreater, Datum::Double(INFINITY)).Evaluate(nan.cell()));
  EXPECT_FALSE(Cmp("d", Op::kLess, Datum::Double(INFINITY)).Evaluate(nan.cell()));
}

TEST_F(ColumnPredicateTest, MergeCombinations) {
  auto r = [&](std::optional<int32_t> lo, std::optional<int32_t> hi) {
    return Range("i32", lo ? std::optional<Datum>(Datum::Int32(*lo)) : std::nullopt,
                 hi ? std::optional<Datum>(Datum::Int32(*hi)) : std::nullopt);
  };
  auto eq = [&](int32_t v) { return Eq("i32", Datum::Int32(v)); };
  auto in = [&](std::vector<int32_t> v) {
    std::vector<Datum> d;
    for (int32_t x : v) d.push_back(Datum::Int32(x));
    return In("i32", d);
  };
  ColumnPredicate is_null = ColumnPredicate::IsNull(col("i32"));
  ColumnPredicate not_null = ColumnPredicate::IsNotNull(col("i32"));
  ColumnPredicate none = ColumnPredicate::None(col("i32"));
  struct Case {
    ColumnPredicate a, b, expected;
  };
  std::vector<Case> cases = {
      {r(5, 10), r(7, 20), r(7, 10)},
      {r(5, 10), r(10, 20), none},
      {r(5, 10), r(9, 20), eq(9)},
      {r(std::nullopt, 10), r(5, std::nullopt), r(5, 10)},
      {r(5, std::nullopt), r(8, std::nullopt), r(8, std::nullopt)},
      {r(5, 10), eq(7), eq(7)},
      {r(5, 10), eq(12), none},
      {eq(3), eq(3), eq(3)},
      {eq(3), eq(4), none},
      {eq(kInt32Max), r(0, std::nullopt), eq(kInt32Max)},
      {in({1, 3, 5, 7}), r(3, 6), in({3, 5})},
      {in({1, 3, 5, 7}), r(4, 6), eq(5)},
      {in({1, 3, 5, 7}), r(8, 9), none},
      {in({1, 3, 5}), eq(3), eq(3)},
      {in({1, 2, 3}), in({2, 3, 4}), in({2, 3})},
      {in({1, 2, 3}), in({4, 5}), none},
      {is_null, r(1, 5), none},
      {is_null, eq(1), none},
      {is_null, in({1, 2}), none},
      {is_null, is_null, is_null},
      {is_null, not_null, none},
      {not_null, r(1, 5), r(1, 5)},
      {not_null, in({1, 2}), in({1, 2})},
      {not_null, not_null, not_null},
      {none, r(1, 5), none},
      {none, is_null, none},
      {none, not_null, none},
      {none, none, none},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.a.Merge(c.b), c.expected)
        << c.a.ToString() << " AND " << c.b.ToString() << " = " << c.a.Merge(c.b).ToString();
    EXPECT_EQ(c.b.Merge(c.a), c.expected) << c.b.ToString() << " AND " << c.a.ToString();
  }
}

// ---- Randomized checks over every type -------------------------------------------------------

// Random values from a small per-type pool with the type's extremes, so that bounds, matches
// and edge cases are frequent.
class RandomValues {
 public:
  explicit RandomValues(Random* rng) : rng_(rng) {}

  Datum Value(const ColumnSchema& c) {
    DataType t = c.type();
    switch (c.type_info().physical_type()) {
      case PhysicalType::kBool:
        return Datum::Bool(rng_->OneIn(2));
      case PhysicalType::kFloat: {
        static const uint32_t kBits[] = {0xffffffff, 0xff800000, 0xbfc00000, 0x80000000,
                                         0x00000000, 0x3fc00000, 0x40200000, 0x7f800000,
                                         0x7fc00000, 0x7fffffff, 0x00000001};
        return FloatBits(kBits[rng_->Uniform(std::size(kBits))]);
      }
      case PhysicalType::kDouble: {
        static const double kValues[] = {-INFINITY, -1.5, -0.0, 0.0, 1.5, 2.5, INFINITY, NAN};
        if (rng_->OneIn(10)) return DoubleBits(rng_->OneIn(2) ? ~uint64_t{0} : 0x7fffffffffffffff);
        return Datum::Double(kValues[rng_->Uniform(std::size(kValues))]);
      }
      case PhysicalType::kBinary: {
        static const char kAlphabet[] = {'\0', 'a', 'b', '\xff'};
        std::string s(rng_->Uniform(4), '\0');
        for (char& ch : s) ch = kAlphabet[rng_->Uniform(4)];
        std::string_view v(s);
        return Datum::FromCell(t, &v);
      }
      default:
        return IntValue(c);
    }
  }

  // Values from -4..4 mostly, sometimes the extremes of the column's domain.
  Datum IntValue(const ColumnSchema& c) {
    absl::int128 max;
    switch (c.type_info().physical_type()) {
      case PhysicalType::kInt8:
        max = 127;
        break;
      case PhysicalType::kInt16:
        max = 32767;
        break;
      case PhysicalType::kInt32:
        max = kInt32Max;
        break;
      case PhysicalType::kInt64:
        max = std::numeric_limits<int64_t>::max();
        break;
      default:
        max = std::numeric_limits<absl::int128>::max();
    }
    if (c.type_info().is_decimal()) {
      max = 1;
      for (int i = 0; i < c.attributes().precision; i++) max *= 10;
      max -= 1;
    }
    absl::int128 v = rng_->UniformRange(-4, 4);
    if (rng_->OneIn(8)) v = rng_->OneIn(2) ? max : (c.type_info().is_decimal() ? -max : -max - 1);
    alignas(16) char cell[16];
    std::memcpy(cell, &v, sizeof(v));
    return Datum::FromCell(c.type(), cell);
  }

  ColumnPredicate Predicate(const ColumnSchema& c) {
    auto maybe = [&]() { return rng_->OneIn(4) ? std::nullopt : std::optional<Datum>(Value(c)); };
    switch (rng_->Uniform(7)) {
      case 0:
        return ColumnPredicate::Range(c, maybe(), maybe()).value();
      case 1:
        return ColumnPredicate::Equality(c, Value(c)).value();
      case 2: {
        std::vector<Datum> values(1 + rng_->Skewed(6));  // Up to 64, both kernel paths.
        for (Datum& v : values) v = Value(c);
        return ColumnPredicate::InList(c, values).value();
      }
      case 3:
        return ColumnPredicate::IsNull(c);
      case 4:
        return ColumnPredicate::IsNotNull(c);
      case 5:
        return ColumnPredicate::None(c);
      default:
        return ColumnPredicate::Comparison(c, static_cast<Op>(rng_->Uniform(5)), Value(c)).value();
    }
  }

 private:
  Random* rng_;
};

TEST_F(ColumnPredicateTest, RandomComparisonsMatchTheirDefinition) {
  Random rng(SeedFromEnvOrTime());
  RandomValues gen(&rng);
  for (const ColumnSchema& c : schema_.columns()) {
    for (int n = 0; n < 300; n++) {
      Datum x = gen.Value(c);
      Op op = static_cast<Op>(rng.Uniform(5));
      ColumnPredicate p = ColumnPredicate::Comparison(c, op, x).value();
      for (int k = 0; k < 10; k++) {
        Datum v = gen.Value(c);
        int cmp = c.type_info().Compare(v.cell(), x.cell());
        bool expected = op == Op::kLess           ? cmp < 0
                        : op == Op::kLessEqual    ? cmp <= 0
                        : op == Op::kEqual        ? cmp == 0
                        : op == Op::kGreaterEqual ? cmp >= 0
                                                  : cmp > 0;
        ASSERT_EQ(p.Evaluate(v.cell()), expected)
            << p.ToString() << " (op " << int(op) << " " << x.ToString() << ") on " << v.ToString();
      }
    }
  }
}

TEST_F(ColumnPredicateTest, RandomMergesAreConjunctions) {
  Random rng(SeedFromEnvOrTime());
  RandomValues gen(&rng);
  for (const ColumnSchema& c : schema_.columns()) {
    for (int n = 0; n < 200; n++) {
      ColumnPredicate a = gen.Predicate(c), b = gen.Predicate(c);
      ColumnPredicate ab = a.Merge(b);
      ASSERT_EQ(ab, b.Merge(a)) << a.ToString() << " / " << b.ToString();
      ASSERT_EQ(ab.Evaluate(nullptr), a.Evaluate(nullptr) && b.Evaluate(nullptr));
      for (int k = 0; k < 20; k++) {
        Datum v = gen.Value(c);
        ASSERT_EQ(ab.Evaluate(v.cell()), a.Evaluate(v.cell()) && b.Evaluate(v.cell()))
            << a.ToString() << " AND " << b.ToString() << " = " << ab.ToString() << " on "
            << v.ToString();
      }
    }
  }
}

// A column vector built from Datums: cells in row-buffer form, garbage in NULL slots (for
// variable-length types a string_view that must never be dereferenced).
struct ColumnVector {
  std::vector<Datum> values;          // Owns the strings the cells point to.
  std::vector<absl::int128> storage;  // 16-byte aligned cell storage.
  std::vector<uint8_t> nulls;
  bool has_nulls = false;

  const void* cells() const { return storage.data(); }
  const void* cell(size_t i, size_t size) const {
    return reinterpret_cast<const char*>(storage.data()) + i * size;
  }
};

ColumnVector MakeVector(const ColumnSchema& c, size_t n, RandomValues* gen, Random* rng) {
  ColumnVector v;
  size_t size = c.type_info().size();
  v.storage.resize((n * size + 15) / 16 + 1);
  v.nulls.assign(BitmapSize(n), 0);
  v.has_nulls = !rng->OneIn(4);
  char* base = reinterpret_cast<char*>(v.storage.data());
  for (size_t i = 0; i < n; i++) {
    bool null = v.has_nulls && rng->OneIn(4);
    v.values.push_back(null ? Datum::Null(c.type()) : gen->Value(c));
    if (null) {
      BitmapSet(v.nulls.data(), i);
      if (c.type_info().is_variable_length()) {
        std::string_view bogus(reinterpret_cast<const char*>(16), 1 << 20);
        std::memcpy(base + i * size, &bogus, size);
      } else {
        rng->Fill(base + i * size, size);
      }
    } else {
      std::memcpy(base + i * size, v.values.back().cell(), size);
    }
  }
  // Strings: re-point cells at the Datums, whose storage no longer moves.
  for (size_t i = 0; i < n; i++) {
    if (!v.values[i].is_null()) std::memcpy(base + i * size, v.values[i].cell(), size);
  }
  return v;
}

std::vector<KernelIsa> SupportedIsas() {
  std::vector<KernelIsa> isas;
  for (int i = 0; i <= static_cast<int>(predicate_internal::BestSupportedKernelIsa()); i++) {
    isas.push_back(static_cast<KernelIsa>(i));
  }
  return isas;
}

TEST_F(ColumnPredicateTest, RandomVectorEvaluationMatchesEvaluate) {
  Random rng(SeedFromEnvOrTime());
  RandomValues gen(&rng);
  for (KernelIsa isa : SupportedIsas()) {
    predicate_internal::SetKernelIsaForTesting(isa);
    for (const ColumnSchema& c : schema_.columns()) {
      for (int iter = 0; iter < 40; iter++) {
        size_t n = rng.OneIn(3) ? rng.Uniform(70) : rng.Uniform(600);
        ColumnVector v = MakeVector(c, n, &gen, &rng);
        ColumnPredicate p = gen.Predicate(c);
        // One spare byte checks that nothing past BitmapSize(n) is written; bits >= n in the
        // last byte must also survive.
        std::vector<uint8_t> sel(BitmapSize(n) + 1);
        rng.Fill(reinterpret_cast<char*>(sel.data()), sel.size());
        if (rng.OneIn(2)) std::fill(sel.begin(), sel.end(), 0xff);
        std::vector<uint8_t> before = sel;
        p.EvaluateVector(v.cells(), v.has_nulls ? v.nulls.data() : nullptr, n, sel.data());
        for (size_t i = 0; i < sel.size() * 8; i++) {
          bool expected = BitmapTest(before.data(), i);
          if (i < n) {
            expected =
                expected &&
                p.Evaluate(v.values[i].is_null() ? nullptr : v.cell(i, c.type_info().size()));
          }
          ASSERT_EQ(BitmapTest(sel.data(), i), expected)
              << "isa " << int(isa) << " row " << i << " of " << n << ": " << p.ToString() << " on "
              << (i < n ? v.values[i].ToString() : "(past the end)");
        }
      }
    }
  }
  predicate_internal::SetKernelIsaForTesting(predicate_internal::BestSupportedKernelIsa());
}

TEST_F(ColumnPredicateTest, LargeInListsMatchEvaluate) {
  // Lists longer than the kernels' linear-scan limit take the binary search path.
  Random rng(SeedFromEnvOrTime());
  for (KernelIsa isa : SupportedIsas()) {
    predicate_internal::SetKernelIsaForTesting(isa);
    for (const char* name : {"i8", "i32", "i64", "d", "dec128", "s"}) {
      const ColumnSchema& c = col(name);
      auto value_of = [&](int64_t x) {
        switch (c.type()) {
          case DataType::kDouble:
            return Datum::Double(static_cast<double>(x) / 4);
          case DataType::kString:
            return Datum::String(StrCat(x));
          default:
            return Datum::Int64(x).CastTo(c.type()).value();
        }
      };
      for (int iter = 0; iter < 10; iter++) {
        std::set<int64_t> distinct;
        for (size_t size = 33 + rng.Uniform(150); distinct.size() < size;) {
          distinct.insert(rng.UniformRange(-120, 120));
        }
        std::vector<Datum> list;
        for (int64_t x : distinct) list.push_back(value_of(x));
        ColumnPredicate p = In(name, list);
        ASSERT_GT(p.values().size(), 32u);
        std::vector<Datum> data(64 * 3 + rng.Uniform(64));
        for (Datum& d : data) d = value_of(rng.UniformRange(-120, 120));
        size_t size = c.type_info().size();
        std::vector<absl::int128> cells((data.size() * size + 15) / 16);
        for (size_t i = 0; i < data.size(); i++) {
          std::memcpy(reinterpret_cast<char*>(cells.data()) + i * size, data[i].cell(), size);
        }
        std::vector<uint8_t> sel(BitmapSize(data.size()), 0xff);
        p.EvaluateVector(cells.data(), nullptr, data.size(), sel.data());
        for (size_t i = 0; i < data.size(); i++) {
          ASSERT_EQ(BitmapTest(sel.data(), i), p.Evaluate(data[i].cell()))
              << "isa " << int(isa) << " " << p.ToString() << " on " << data[i].ToString();
        }
      }
    }
  }
  predicate_internal::SetKernelIsaForTesting(predicate_internal::BestSupportedKernelIsa());
}

TEST_F(ColumnPredicateTest, VectorEvaluationOfLargeBlocks) {
  // Whole 64-row blocks, fully selected and not, with a selective predicate.
  const size_t n = 64 * 40 + 5;
  std::vector<int32_t> cells(n);
  for (size_t i = 0; i < n; i++) cells[i] = static_cast<int32_t>(i);
  for (KernelIsa isa : SupportedIsas()) {
    predicate_internal::SetKernelIsaForTesting(isa);
    std::vector<uint8_t> sel(BitmapSize(n), 0xff);
    std::fill(sel.begin() + 8, sel.begin() + 16, 0);  // Block 1 already unselected.
    Range("i32", Datum::Int32(60), Datum::Int32(2000))
        .EvaluateVector(cells.data(), nullptr, n, sel.data());
    size_t count = BitmapCountSet(sel.data(), n);
    EXPECT_EQ(count, 2000u - 60 - 64) << int(isa);
    EXPECT_FALSE(BitmapTest(sel.data(), 59));
    EXPECT_TRUE(BitmapTest(sel.data(), 60));
    EXPECT_FALSE(BitmapTest(sel.data(), 64));
    EXPECT_TRUE(BitmapTest(sel.data(), 1999));
    EXPECT_FALSE(BitmapTest(sel.data(), 2000));
  }
  predicate_internal::SetKernelIsaForTesting(predicate_internal::BestSupportedKernelIsa());
}

// ---- Zone maps -------------------------------------------------------------------------------

TEST_F(ColumnPredicateTest, MayMatchRange) {
  auto may = [&](const ColumnPredicate& p, std::optional<int32_t> lo, std::optional<int32_t> hi) {
    int32_t l = lo.value_or(0), h = hi.value_or(0);
    return p.MayMatchRange(lo ? &l : nullptr, hi ? &h : nullptr, false, true);
  };
  ColumnPredicate range = Range("i32", Datum::Int32(5), Datum::Int32(10));
  EXPECT_FALSE(may(range, 0, 4));
  EXPECT_TRUE(may(range, 0, 5));
  EXPECT_TRUE(may(range, 9, 20));
  EXPECT_FALSE(may(range, 10, 20));
  EXPECT_FALSE(may(range, std::nullopt, 4));
  EXPECT_FALSE(may(range, 10, std::nullopt));
  EXPECT_TRUE(may(range, std::nullopt, std::nullopt));
  ColumnPredicate eq = Eq("i32", Datum::Int32(7));
  EXPECT_FALSE(may(eq, 8, 9));
  EXPECT_TRUE(may(eq, 0, 7));
  EXPECT_TRUE(may(eq, 7, 7));
  ColumnPredicate in = In("i32", {Datum::Int32(1), Datum::Int32(5), Datum::Int32(9)});
  EXPECT_FALSE(may(in, 2, 4));
  EXPECT_TRUE(may(in, 2, 5));
  EXPECT_FALSE(may(in, 10, 12));
  EXPECT_TRUE(may(in, std::nullopt, 1));
  int32_t one = 1;
  EXPECT_FALSE(range.MayMatchRange(&one, &one, true, false));  // All NULL.
  ColumnPredicate is_null = ColumnPredicate::IsNull(col("i32"));
  EXPECT_TRUE(is_null.MayMatchRange(&one, &one, true, true));
  EXPECT_FALSE(is_null.MayMatchRange(&one, &one, false, true));
  ColumnPredicate not_null = ColumnPredicate::IsNotNull(col("i32"));
  EXPECT_FALSE(not_null.MayMatchRange(nullptr, nullptr, true, false));
  EXPECT_TRUE(not_null.MayMatchRange(nullptr, nullptr, true, true));
  EXPECT_FALSE(ColumnPredicate::None(col("i32")).MayMatchRange(nullptr, nullptr, true, true));
}

TEST_F(ColumnPredicateTest, RandomMayMatchRangeNeverSkipsAMatch) {
  Random rng(SeedFromEnvOrTime());
  RandomValues gen(&rng);
  for (const ColumnSchema& c : schema_.columns()) {
    for (int iter = 0; iter < 300; iter++) {
      ColumnPredicate p = gen.Predicate(c);
      std::vector<Datum> page(1 + rng.Uniform(4));
      bool any_null = false, any_value = false, any_match = false;
      std::optional<Datum> min, max;
      for (Datum& v : page) {
        v = rng.OneIn(4) ? Datum::Null(c.type()) : gen.Value(c);
        any_match |= p.Evaluate(v.is_null() ? nullptr : v.cell());
        if (v.is_null()) {
          any_null = true;
          continue;
        }
        any_value = true;
        if (!min || v.Compare(*min) < 0) min = v;
        if (!max || v.Compare(*max) > 0) max = v;
      }
      bool drop_min = rng.OneIn(5), drop_max = rng.OneIn(5);
      bool may = p.MayMatchRange(min && !drop_min ? min->cell() : nullptr,
                                 max && !drop_max ? max->cell() : nullptr, any_null, any_value);
      if (any_match) {
        ASSERT_TRUE(may) << p.ToString();
      }
      if (page.size() == 1 && !drop_min && !drop_max) {  // Exact for a single value.
        ASSERT_EQ(may, any_match) << p.ToString();
      }
    }
  }
}

// ---- Protobuf --------------------------------------------------------------------------------

TEST_F(ColumnPredicateTest, RandomPBRoundTrip) {
  Random rng(SeedFromEnvOrTime());
  RandomValues gen(&rng);
  for (const ColumnSchema& c : schema_.columns()) {
    for (int iter = 0; iter < 50; iter++) {
      ColumnPredicate p = gen.Predicate(c);
      pb::ColumnPredicatePB pb;
      p.ToPB(&pb);
      absl::StatusOr<ColumnPredicate> back = ColumnPredicate::FromPB(schema_, pb);
      BASALT_ASSERT_OK(back) << back.status() << " for " << p.ToString();
      ASSERT_EQ(*back, p) << p.ToString() << " came back as " << back->ToString();
      pb::ColumnPredicatePB reparsed;
      ASSERT_TRUE(reparsed.ParseFromString(pb.SerializeAsString()));
      ASSERT_EQ(ColumnPredicate::FromPB(schema_, reparsed).value(), p);
    }
  }
}

TEST_F(ColumnPredicateTest, PBLayoutAndErrors) {
  pb::ColumnPredicatePB pb;
  Cmp("i32", Op::kGreaterEqual, Datum::Int32(1)).ToPB(&pb);
  EXPECT_EQ(pb.column(), "i32");
  ASSERT_TRUE(pb.has_range());
  EXPECT_EQ(pb.range().lower(), std::string("\x01\0\0\0", 4));
  EXPECT_FALSE(pb.range().has_upper());
  ColumnPredicate::None(col("s")).ToPB(&pb);
  EXPECT_TRUE(pb.has_in_list());
  EXPECT_EQ(pb.in_list().values_size(), 0);

  pb.Clear();
  pb.set_column("nope");
  pb.mutable_is_null();
  EXPECT_EQ(ColumnPredicate::FromPB(schema_, pb).status().code(), absl::StatusCode::kNotFound);
  pb.set_column("i32");
  pb.clear_is_null();
  EXPECT_EQ(ColumnPredicate::FromPB(schema_, pb).status().code(),
            absl::StatusCode::kInvalidArgument);  // No condition.
  pb.mutable_equality()->set_value("abc");        // 3 bytes for INT32.
  absl::Status s = ColumnPredicate::FromPB(schema_, pb).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("i32"), std::string_view::npos) << s;
  pb.mutable_range()->set_upper(std::string(8, '\0'));
  EXPECT_EQ(ColumnPredicate::FromPB(schema_, pb).status().code(),
            absl::StatusCode::kInvalidArgument);
  pb.set_column("b");
  pb.mutable_in_list()->add_values(std::string(1, '\x01'));
  pb.mutable_in_list()->add_values(std::string(1, '\x02'));  // Not a BOOL.
  EXPECT_EQ(ColumnPredicate::FromPB(schema_, pb).status().code(),
            absl::StatusCode::kInvalidArgument);
  pb.set_column("s");
  pb.mutable_equality()->set_value(std::string(kMaxCellBytes + 1, 'x'));
  EXPECT_EQ(ColumnPredicate::FromPB(schema_, pb).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace column_predicate_test_file
}  // namespace
}  // namespace basalt
