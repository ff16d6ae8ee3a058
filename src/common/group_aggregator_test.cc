#include "common/group_aggregator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/datum.h"
#include "common/key_encoder.h"
#include "common/random.h"
#include "common/status_macros.h"
#include "common/status_test_util.h"
#include "proto/common.pb.h"
#include "proto/tserver.pb.h"

namespace basalt {
namespace {
namespace group_aggregator_test_file {

// A table with one column of every kind an aggregate treats differently.
Schema TestSchema() {
  std::vector<ColumnSchema> cols = {
      ColumnSchema("key", DataType::kInt64),
      ColumnSchema("i8", DataType::kInt8),
      ColumnSchema("i32", DataType::kInt32, true),
      ColumnSchema("i64", DataType::kInt64, true),
      ColumnSchema("f", DataType::kFloat, true),
      ColumnSchema("d", DataType::kDouble),
      ColumnSchema("s", DataType::kString, true),
      ColumnSchema("b", DataType::kBool, true),
      ColumnSchema("dec", DataType::kDecimal64, true, std::nullopt, TypeAttributes{12, 2, 0}),
      ColumnSchema("ts", DataType::kUnixtimeMicros, true),
  };
  return Schema::Create(cols, 1).value();
}

// Column blocks holding rows of Datums (the scan side of a test).
struct Blocks {
  std::vector<std::unique_ptr<ColumnBlockBuffer>> buffers;
  std::vector<const ColumnBlock*> ptrs;
  std::vector<std::vector<std::string>> strings;
};

Blocks MakeBlocks(const std::vector<DataType>& types, const std::vector<bool>& nullable,
                  const std::vector<std::vector<Datum>>& rows, size_t begin, size_t end,
                  const std::vector<int>& columns) {
  Blocks b;
  b.strings.resize(columns.size());
  for (size_t j = 0; j < columns.size(); j++) {
    const DataType t = types[columns[j]];
    b.buffers.push_back(
        std::make_unique<ColumnBlockBuffer>(t, std::max<size_t>(end - begin, 1), true));
    ColumnBlock* blk = b.buffers.back()->block();
    if (!nullable[columns[j]]) blk->null_bitmap = nullptr;
    b.strings[j].reserve(end - begin);
    for (size_t r = begin; r < end; r++) {
      const Datum& d = rows[r][columns[j]];
      if (d.is_null()) {
        blk->SetNull(r - begin, true);
        continue;
      }
      if (GetTypeInfo(t).is_variable_length()) {
        b.strings[j].emplace_back(d.string_value());
        blk->data<std::string_view>()[r - begin] = b.strings[j].back();
      } else {
        std::memcpy(blk->cell(r - begin), d.cell(), blk->cell_size);
      }
    }
    b.ptrs.push_back(blk);
  }
  return b;
}

// The rows of a wire block as Datums.
std::vector<std::vector<Datum>> Decode(const Schema& schema, const pb::ColumnarRowBlockPB& pb) {
  std::vector<std::vector<Datum>> rows(pb.num_rows());
  for (int j = 0; j < schema.num_columns(); j++) {
    const DataType t = schema.column(j).type();
    const auto& c = pb.columns(j);
    const size_t size = GetTypeInfo(t).size();
    for (int64_t r = 0; r < pb.num_rows(); r++) {
      const bool null = !c.null_bitmap().empty() && ((c.null_bitmap()[r >> 3] >> (r & 7)) & 1) != 0;
      if (null) {
        rows[r].push_back(Datum::Null(t));
      } else if (GetTypeInfo(t).is_variable_length()) {
        uint32_t a, e;
        std::memcpy(&a, c.offsets().data() + 4 * r, 4);
        std::memcpy(&e, c.offsets().data() + 4 * (r + 1), 4);
        rows[r].push_back(Datum::FromSerializedCell(t, c.data().substr(a, e - a)).value());
      } else {
        rows[r].push_back(Datum::FromSerializedCell(t, c.data().substr(r * size, size)).value());
      }
    }
  }
  return rows;
}

// Feeds wire partial rows to `agg`.
absl::Status AddWire(GroupAggregator* agg, const Schema& schema, const pb::ColumnarRowBlockPB& pb) {
  std::vector<bool> nullable;
  std::vector<DataType> types;
  std::vector<int> all;
  for (int j = 0; j < schema.num_columns(); j++) {
    nullable.push_back(schema.column(j).is_nullable());
    types.push_back(schema.column(j).type());
    all.push_back(j);
  }
  const std::vector<std::vector<Datum>> rows = Decode(schema, pb);
  Blocks b = MakeBlocks(types, nullable, rows, 0, rows.size(), all);
  return agg->AddPartials(b.ptrs, rows.size());
}

int64_t Bucket(int64_t v, int64_t w, int64_t off) {
  int64_t d = v - off;
  int64_t q = d / w;
  if (d % w < 0) q--;
  return q * w + off;
}

// The model: aggregates of plain Datums, row by row.
struct ModelAgg {
  int64_t count = 0;
  absl::int128 isum = 0;
  double dsum = 0;
  std::optional<Datum> best;
  int64_t best_key = 0;
};

std::vector<std::vector<Datum>> Model(const Schema& table, const AggregatePlan& plan,
                                      const std::vector<std::vector<Datum>>& rows) {
  std::map<std::string, std::pair<std::vector<Datum>, std::vector<ModelAgg>>> groups;
  for (const auto& row : rows) {
    std::vector<Datum> g;
    std::string key;
    for (const auto& grp : plan.groups()) {
      Datum d = row[table.find_column(grp.spec.column)];
      if (!d.is_null() && grp.spec.bucket_width_micros > 0) {
        d = Datum::UnixtimeMicros(
            Bucket(d.int_value(), grp.spec.bucket_width_micros, grp.spec.bucket_offset_micros));
      }
      if (d.is_null()) {
        key.push_back('\0');
      } else {
        key.push_back('\1');
        EncodeKeyCell(d.type(), d.cell(), false, &key);
      }
      g.push_back(d);
    }
    auto& entry = groups[key];
    entry.first = g;
    entry.second.resize(plan.aggregates().size());
    for (size_t a = 0; a < plan.aggregates().size(); a++) {
      const auto& agg = plan.aggregates()[a];
      ModelAgg& m = entry.second[a];
      if (agg.spec.function == AggregateFunction::kCountAll) {
        m.count++;
        continue;
      }
      const Datum& v = row[table.find_column(agg.spec.column)];
      if (v.is_null()) continue;
      const int64_t k = row[0].int_value();
      const bool first = m.count == 0;
      m.count++;
      if (GetTypeInfo(v.type()).is_floating_point()) {
        m.dsum += v.type() == DataType::kFloat ? v.float_value() : v.double_value();
      } else if (agg.sum_type != DataType::kUnknown) {
        m.isum += v.type() == DataType::kDecimal128 ? v.int128_value() : v.int_value();
      }
      switch (agg.spec.function) {
        case AggregateFunction::kMin:
          if (first || v.Compare(*m.best) < 0) m.best = v;
          break;
        case AggregateFunction::kMax:
          if (first || v.Compare(*m.best) > 0) m.best = v;
          break;
        case AggregateFunction::kFirst:
          if (first || k < m.best_key) m.best = v, m.best_key = k;
          break;
        case AggregateFunction::kLast:
          if (first || k > m.best_key) m.best = v, m.best_key = k;
          break;
        default:
          break;
      }
    }
  }
  if (groups.empty() && plan.groups().empty()) {
    groups[""].second.resize(plan.aggregates().size());
  }
  std::vector<std::vector<Datum>> out;
  for (auto& [key, entry] : groups) {
    std::vector<Datum> r = entry.first;
    for (size_t a = 0; a < plan.aggregates().size(); a++) {
      const auto& agg = plan.aggregates()[a];
      const ModelAgg& m = entry.second[a];
      const DataType rt = plan.result_schema().column(plan.groups().size() + a).type();
      switch (agg.spec.function) {
        case AggregateFunction::kCountAll:
        case AggregateFunction::kCount:
          r.push_back(Datum::Int64(m.count));
          break;
        case AggregateFunction::kSum:
          if (m.count == 0) {
            r.push_back(Datum::Null(rt));
          } else if (rt == DataType::kDouble) {
            r.push_back(Datum::Double(m.dsum));
          } else if (rt == DataType::kDecimal128) {
            r.push_back(Datum::Decimal128(m.isum));
          } else {
            r.push_back(Datum::Int64(static_cast<int64_t>(m.isum)));
          }
          break;
        case AggregateFunction::kAvg: {
          if (m.count == 0) {
            r.push_back(Datum::Null(rt));
            break;
          }
          double unit = 1;
          for (int i = 0; i < table.column(table.find_column(agg.spec.column)).attributes().scale;
               i++) {
            unit *= 10;
          }
          const double sum = GetTypeInfo(agg.input_type).is_floating_point()
                                 ? m.dsum
                                 : static_cast<double>(m.isum) / unit;
          r.push_back(Datum::Double(sum / m.count));
          break;
        }
        default:
          r.push_back(m.best.has_value() ? *m.best : Datum::Null(rt));
          break;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

bool Near(const Datum& a, const Datum& b) {
  if (a.is_null() || b.is_null()) return a.is_null() == b.is_null();
  if (a.type() == DataType::kDouble && b.type() == DataType::kDouble) {
    const double x = a.double_value(), y = b.double_value();
    if (x == y) return true;
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
    return std::fabs(x - y) <= 1e-9 * std::max({1.0, std::fabs(x), std::fabs(y)});
  }
  return a == b;
}

Datum RandomValue(Random* rnd, const ColumnSchema& c) {
  if (c.is_nullable() && rnd->OneIn(5)) return Datum::Null(c.type());
  switch (c.type()) {
    case DataType::kInt8:
      return Datum::Int8(static_cast<int8_t>(rnd->UniformRange(-128, 127)));
    case DataType::kInt32:
      return Datum::Int32(static_cast<int32_t>(rnd->UniformRange(-5, 5) * 400000000));
    case DataType::kInt64:
      return Datum::Int64(rnd->UniformRange(-(int64_t{1} << 50), int64_t{1} << 50));
    case DataType::kFloat: {
      static const float kSpecial[] = {
          0.0f, -0.0f, 1.5f, -2.25f, std::numeric_limits<float>::infinity(), 1e30f};
      return Datum::Float(rnd->OneIn(3) ? kSpecial[rnd->Uniform(6)]
                                        : static_cast<float>(rnd->UniformRange(-1000, 1000)));
    }
    case DataType::kDouble:
      return Datum::Double(static_cast<double>(rnd->UniformRange(-1000000, 1000000)) / 8);
    case DataType::kString:
      return Datum::String(std::string(rnd->Uniform(4), static_cast<char>('a' + rnd->Uniform(3))));
    case DataType::kBool:
      return Datum::Bool(rnd->OneIn(2));
    case DataType::kDecimal64:
      return Datum::Decimal64(rnd->UniformRange(-99999999999, 99999999999));
    case DataType::kUnixtimeMicros:
      return Datum::UnixtimeMicros(rnd->UniformRange(-3000000, 3000000));
    default:
      return Datum::Int64(0);
  }
}

AggregatePlan RandomPlan(Random* rnd, const Schema& table) {
  for (;;) {
    std::vector<GroupBySpec> groups;
    const int ng = static_cast<int>(rnd->Uniform(3));
    static const char* kGroupable[] = {"i8", "s", "b", "ts", "d", "f"};
    for (int i = 0; i < ng; i++) {
      GroupBySpec g;
      g.column = kGroupable[rnd->Uniform(6)];
      if (g.column == "ts" && rnd->OneIn(2)) {
        g.bucket_width_micros = rnd->UniformRange(1, 2000000);
        g.bucket_offset_micros = rnd->UniformRange(-1000000, 1000000);
      }
      g.alias = "g" + std::to_string(i);
      groups.push_back(g);
    }
    std::vector<AggregateSpec> aggs;
    const int na = 1 + static_cast<int>(rnd->Uniform(4));
    for (int i = 0; i < na; i++) {
      AggregateSpec a;
      a.function = static_cast<AggregateFunction>(1 + rnd->Uniform(8));
      if (a.function != AggregateFunction::kCountAll) {
        a.column = table.column(1 + static_cast<int>(rnd->Uniform(table.num_columns() - 1))).name();
      }
      a.alias = "a" + std::to_string(i);
      aggs.push_back(a);
    }
    absl::StatusOr<AggregatePlan> p = AggregatePlan::Create(table, groups, aggs);
    if (p.ok()) return std::move(*p);  // Retry plans the types refuse (SUM of a string).
  }
}

// Rows split over "tablets", each aggregated in random blocks and shipped as partials at random
// points, merged by a client-side aggregator: equal to the model for every seed.
TEST(GroupAggregatorTest, PartialsMergeToTheModel) {
  const uint64_t seed = SeedFromEnvOrTime();
  Random rnd(seed);
  const Schema table = TestSchema();
  std::vector<DataType> types;
  std::vector<bool> nullable;
  for (const ColumnSchema& c : table.columns()) {
    types.push_back(c.type());
    nullable.push_back(c.is_nullable());
  }
  for (int iter = 0; iter < 200; iter++) {
    SCOPED_TRACE(testing::Message() << "seed " << seed << " iteration " << iter);
    const AggregatePlan plan = RandomPlan(&rnd, table);
    SCOPED_TRACE(plan.ToString());
    const size_t num_rows = rnd.OneIn(10) ? 0 : rnd.Uniform(300);
    std::vector<std::vector<Datum>> rows;
    for (size_t r = 0; r < num_rows; r++) {
      std::vector<Datum> row = {Datum::Int64(static_cast<int64_t>(r * 7 % 1009))};
      for (int j = 1; j < table.num_columns(); j++)
        row.push_back(RandomValue(&rnd, table.column(j)));
      rows.push_back(std::move(row));
    }
    std::vector<int> inputs;
    for (const std::string& n : plan.input_columns()) inputs.push_back(table.find_column(n));
    GroupAggregator merged(&plan);
    size_t r = 0;
    while (r < num_rows) {
      GroupAggregator tablet(&plan);
      const size_t tablet_end = std::min(num_rows, r + 1 + rnd.Uniform(120));
      while (r < tablet_end) {
        const size_t end = std::min(tablet_end, r + 1 + rnd.Uniform(40));
        Blocks b = MakeBlocks(types, nullable, rows, r, end, inputs);
        std::vector<std::string> keys;
        std::vector<std::string_view> views;
        for (size_t i = r; i < end; i++) {
          keys.push_back(EncodeKey(table.KeyProjection(), std::vector<Datum>{rows[i][0]}));
        }
        for (const std::string& k : keys) views.push_back(k);
        BASALT_ASSERT_OK(tablet.AddRows(b.ptrs, views.data(), end - r));
        r = end;
        if (rnd.OneIn(3) || r == tablet_end) {
          pb::ColumnarRowBlockPB wire;
          BASALT_ASSERT_OK(tablet.EmitPartials(&wire));
          EXPECT_EQ(tablet.num_groups(), 0u);
          BASALT_ASSERT_OK(AddWire(&merged, plan.partial_schema(), wire));
        }
      }
    }
    const size_t n = merged.FinishResults();
    pb::ColumnarRowBlockPB out;
    // In two pieces, as a client hands them out in batches.
    const size_t half = n / 2;
    BASALT_ASSERT_OK(merged.EmitResults(0, half, &out));
    std::vector<std::vector<Datum>> got = Decode(plan.result_schema(), out);
    BASALT_ASSERT_OK(merged.EmitResults(half, n, &out));
    for (auto& row : Decode(plan.result_schema(), out)) got.push_back(std::move(row));
    const std::vector<std::vector<Datum>> want = Model(table, plan, rows);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); i++) {
      ASSERT_EQ(got[i].size(), want[i].size());
      for (size_t j = 0; j < want[i].size(); j++) {
        EXPECT_TRUE(Near(got[i][j], want[i][j]))
            << "row " << i << " column " << plan.result_schema().column(j).name() << ": got "
            << got[i][j].ToString() << ", want " << want[i][j].ToString();
      }
    }
  }
}

AggregatePlan Plan(const Schema& table, std::vector<GroupBySpec> groups,
                   std::vector<AggregateSpec> aggs) {
  absl::StatusOr<AggregatePlan> p = AggregatePlan::Create(table, groups, aggs);
  EXPECT_TRUE(p.ok()) << p.status();
  return std::move(*p);
}

// Emits one partial of SUM(i64) over `values` into *wire.
void PartialSum(const AggregatePlan& plan, const std::vector<int64_t>& values,
                pb::ColumnarRowBlockPB* wire) {
  std::vector<std::vector<Datum>> rows;
  for (int64_t v : values) rows.push_back({Datum::Int64(0), Datum::Int64(v)});
  Blocks b =
      MakeBlocks({DataType::kInt64, DataType::kInt64}, {false, true}, rows, 0, rows.size(), {1});
  GroupAggregator t(&plan);
  BASALT_ASSERT_OK(t.AddRows(b.ptrs, nullptr, rows.size()));
  BASALT_ASSERT_OK(t.EmitPartials(wire));
}

// The merged result of the partials in `order`: its status and, when OK, the sum.
absl::StatusOr<Datum> MergedSum(const AggregatePlan& plan,
                                const std::vector<pb::ColumnarRowBlockPB>& partials) {
  GroupAggregator merged(&plan);
  for (const auto& w : partials) BASALT_RETURN_IF_ERROR(AddWire(&merged, plan.partial_schema(), w));
  merged.FinishResults();
  pb::ColumnarRowBlockPB out;
  BASALT_RETURN_IF_ERROR(merged.EmitResults(0, 1, &out));
  return Decode(plan.result_schema(), out)[0][0];
}

// Integer sums are exact in 128 bits whatever the order partials merge in; only a result
// outside INT64 fails, naming the aggregate.
TEST(GroupAggregatorTest, SumOverflowIsAnErrorOfTheResultNamingTheColumn) {
  const Schema table = TestSchema();
  const AggregatePlan plan = Plan(table, {}, {{AggregateFunction::kSum, "i64", ""}});
  // One tablet's rows past INT64 that come back in range.
  pb::ColumnarRowBlockPB a, b, c;
  PartialSum(plan, {INT64_MAX, 10, -20}, &a);
  absl::StatusOr<Datum> one = MergedSum(plan, {a});
  BASALT_ASSERT_OK(one);
  EXPECT_EQ(*one, Datum::Int64(INT64_MAX - 10));
  // Partials {MAX}, {1}, {-1} in every order: MAX.
  PartialSum(plan, {INT64_MAX}, &a);
  PartialSum(plan, {1}, &b);
  PartialSum(plan, {-1}, &c);
  for (const auto& order : std::vector<std::vector<pb::ColumnarRowBlockPB>>{
           {a, b, c}, {a, c, b}, {b, a, c}, {c, b, a}}) {
    absl::StatusOr<Datum> sum = MergedSum(plan, order);
    BASALT_ASSERT_OK(sum);
    EXPECT_EQ(*sum, Datum::Int64(INT64_MAX));
  }
  // A result past INT64: OUT_OF_RANGE naming the aggregate.
  absl::StatusOr<Datum> over = MergedSum(plan, {a, b});
  EXPECT_EQ(over.status().code(), absl::StatusCode::kOutOfRange) << over.status();
  EXPECT_NE(over.status().message().find("sum(i64)"), std::string::npos) << over.status();
}

// DECIMAL sums are exact within 38 digits and never overflow int128 silently.
TEST(GroupAggregatorTest, DecimalSumsStopAt38DigitsAndInt128) {
  Schema table =
      Schema::Create(
          {ColumnSchema("key", DataType::kInt64),
           ColumnSchema("x", DataType::kDecimal128, false, std::nullopt, TypeAttributes{38, 0, 0})},
          1)
          .value();
  const AggregatePlan plan = Plan(table, {}, {{AggregateFunction::kSum, "x", ""}});
  absl::int128 big = 1;
  for (int i = 0; i < 38; i++) big *= 10;
  big -= 1;  // 38 nines.
  auto run = [&](std::vector<absl::int128> values) -> absl::StatusOr<Datum> {
    std::vector<std::vector<Datum>> rows;
    for (absl::int128 v : values) rows.push_back({Datum::Int64(0), Datum::Decimal128(v)});
    Blocks b = MakeBlocks({DataType::kInt64, DataType::kDecimal128}, {false, false}, rows, 0,
                          rows.size(), {1});
    GroupAggregator agg(&plan);
    BASALT_RETURN_IF_ERROR(agg.AddRows(b.ptrs, nullptr, rows.size()));
    agg.FinishResults();
    pb::ColumnarRowBlockPB out;
    BASALT_RETURN_IF_ERROR(agg.EmitResults(0, 1, &out));
    return Decode(plan.result_schema(), out)[0][0];
  };
  absl::StatusOr<Datum> fits = run({big, -big, big});
  BASALT_ASSERT_OK(fits);
  EXPECT_EQ(*fits, Datum::Decimal128(big));
  absl::StatusOr<Datum> over = run({big, 1});
  EXPECT_EQ(over.status().code(), absl::StatusCode::kOutOfRange) << over.status();
  EXPECT_NE(over.status().message().find("DECIMAL(38)"), std::string::npos) << over.status();
  // Past int128 itself (2 * 10^38 > 2^127): an error, not a wrapped sum.
  absl::StatusOr<Datum> wrap = run({big, big});
  EXPECT_EQ(wrap.status().code(), absl::StatusCode::kOutOfRange) << wrap.status();
}

TEST(GroupAggregatorTest, NoRowsGiveOneRowWithoutGroupByAndNoneWithIt) {
  const Schema table = TestSchema();
  const AggregatePlan plain = Plan(table, {},
                                   {{AggregateFunction::kCountAll, "", ""},
                                    {AggregateFunction::kSum, "i32", ""},
                                    {AggregateFunction::kMax, "s", ""}});
  GroupAggregator a(&plain);
  ASSERT_EQ(a.FinishResults(), 1u);
  pb::ColumnarRowBlockPB out;
  BASALT_ASSERT_OK(a.EmitResults(0, 1, &out));
  const auto rows = Decode(plain.result_schema(), out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], Datum::Int64(0));
  EXPECT_TRUE(rows[0][1].is_null());
  EXPECT_TRUE(rows[0][2].is_null());

  const AggregatePlan grouped =
      Plan(table, {{"s", 0, 0, ""}}, {{AggregateFunction::kCountAll, "", ""}});
  GroupAggregator g(&grouped);
  EXPECT_EQ(g.FinishResults(), 0u);
}

TEST(GroupAggregatorTest, TimeBucketsFloorNegativeTimesAndHonourTheOffset) {
  const Schema table = TestSchema();
  const AggregatePlan plan =
      Plan(table, {{"ts", 10, 3, ""}}, {{AggregateFunction::kCountAll, "", ""}});
  std::vector<std::vector<Datum>> rows;
  for (int64_t t : {-8, -7, -6, 2, 3, 12, 13}) {
    rows.push_back({Datum::UnixtimeMicros(t)});
  }
  Blocks b = MakeBlocks({DataType::kUnixtimeMicros}, {true}, rows, 0, rows.size(), {0});
  GroupAggregator agg(&plan);
  BASALT_ASSERT_OK(agg.AddRows(b.ptrs, nullptr, rows.size()));
  ASSERT_EQ(agg.FinishResults(), 4u);
  pb::ColumnarRowBlockPB out;
  BASALT_ASSERT_OK(agg.EmitResults(0, 4, &out));
  const auto got = Decode(plan.result_schema(), out);
  // Buckets [-17, -7), [-7, 3), [3, 13), [13, 23).
  const int64_t starts[] = {-17, -7, 3, 13};
  const int64_t counts[] = {1, 3, 2, 1};
  for (int i = 0; i < 4; i++) {
    EXPECT_EQ(got[i][0], Datum::UnixtimeMicros(starts[i])) << i;
    EXPECT_EQ(got[i][1], Datum::Int64(counts[i])) << i;
  }
}

TEST(AggregatePlanTest, RefusesWhatItCannotCompute) {
  const Schema table = TestSchema();
  struct Case {
    std::vector<GroupBySpec> groups;
    std::vector<AggregateSpec> aggs;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{}, {}, "needs an aggregate"},
      {{}, {{AggregateFunction::kSum, "s", ""}}, "sum(s): sum needs a numeric column"},
      {{}, {{AggregateFunction::kAvg, "b", ""}}, "avg needs a numeric column"},
      {{}, {{AggregateFunction::kMin, "nope", ""}}, "no column named 'nope'"},
      {{{"i8", 10, 0, ""}}, {{AggregateFunction::kCountAll, "", ""}}, "needs a UNIXTIME_MICROS"},
      {{{"ts", -1, 0, ""}}, {{AggregateFunction::kCountAll, "", ""}}, "must be positive"},
      {{{"ts", 0, 5, ""}}, {{AggregateFunction::kCountAll, "", ""}}, "must be positive"},
      {{{"nope", 0, 0, ""}}, {{AggregateFunction::kCountAll, "", ""}}, "no column named"},
      {{},
       {{AggregateFunction::kSum, "i8", ""}, {AggregateFunction::kSum, "i8", ""}},
       "distinct aliases"},
      {{}, {{AggregateFunction::kCountAll, "i8", ""}}, "takes no column"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<AggregatePlan> p = AggregatePlan::Create(table, c.groups, c.aggs);
    ASSERT_FALSE(p.ok()) << c.message;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
    EXPECT_NE(p.status().message().find(c.message), std::string::npos)
        << p.status() << " lacks " << c.message;
  }
}

TEST(AggregatePlanTest, RoundTripsThroughTheRequestAndSharesThePartialLayout) {
  const Schema table = TestSchema();
  const AggregatePlan plan = Plan(table, {{"ts", 60, 7, "minute"}, {"s", 0, 0, ""}},
                                  {{AggregateFunction::kAvg, "dec", "mean"},
                                   {AggregateFunction::kLast, "i32", ""},
                                   {AggregateFunction::kCount, "", ""}});
  pb::NewScanRequestPB req;
  plan.ToPB(&req);
  absl::StatusOr<AggregatePlan> back = AggregatePlan::FromPB(table, req);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->partial_schema().Equals(plan.partial_schema()))
      << back->partial_schema().ToString() << " vs " << plan.partial_schema().ToString();
  EXPECT_EQ(plan.result_schema().column(0).name(), "minute");
  EXPECT_EQ(plan.result_schema().column(2).name(), "mean");
  EXPECT_EQ(plan.result_schema().column(2).type(), DataType::kDouble);
  EXPECT_EQ(plan.result_schema().column(3).name(), "last(i32)");
  EXPECT_EQ(plan.result_schema().column(4).name(), "count(*)");
  EXPECT_TRUE(plan.needs_key());

  req.mutable_aggregates(1)->set_column("missing");
  absl::StatusOr<AggregatePlan> bad = AggregatePlan::FromPB(table, req);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("aggregates[1]"), std::string::npos) << bad.status();
  req.mutable_aggregates(1)->set_function(static_cast<pb::AggregatePB::Function>(42));
  bad = AggregatePlan::FromPB(table, req);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown function 42"), std::string::npos) << bad.status();
}

}  // namespace group_aggregator_test_file
}  // namespace
}  // namespace basalt
