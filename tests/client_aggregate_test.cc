// Aggregate scans end to end (docs/aggregates.md): a real cluster computes partial aggregates on
// the tablet servers and the client merges them; every answer is checked against a model of the
// table kept by the test, over rows in MemRowSets and DiskRowSets, updates and deletes in delta
// stores, empty tablets, snapshot reads and a fault-tolerant scan that loses a server.

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/numeric/int128.h"
#include "client/client.h"
#include "common/random.h"
#include "common/status_macros.h"
#include "tests/client_test_util.h"

namespace basalt::client_test {
namespace {
namespace client_aggregate_test_file {

using client::Scanner;

struct ModelRow {
  std::string host;
  int64_t ts = 0;
  std::optional<int32_t> v;
  std::optional<int64_t> big;
  std::optional<double> d;
  std::optional<std::string> s;
  std::optional<int64_t> dec;  // DECIMAL(10, 2), unscaled.
};
using Model = std::map<int64_t, ModelRow>;

// A result cell: NULL, a number or a string (numbers compared with a relative tolerance).
struct Cell {
  bool null = true;
  bool is_num = false;
  double num = 0;
  std::string text;
  static Cell Num(double v) { return Cell{false, true, v, ""}; }
  static Cell Text(std::string v) { return Cell{false, false, 0, std::move(v)}; }
  bool operator==(const Cell& o) const {
    if (null || o.null) return null == o.null;
    if (is_num != o.is_num) return false;
    if (!is_num) return text == o.text;
    return num == o.num || std::fabs(num - o.num) <= 1e-9 * std::max(1.0, std::fabs(num));
  }
  std::string ToString() const { return null ? "NULL" : is_num ? std::to_string(num) : text; }
};

// What the test asks: one aggregate over one column of the model (or COUNT(*)).
struct Agg {
  Scanner::AggregateFunction f;
  std::string column;
};

// A query: groups (host, a time bucket of ts, s), aggregates, and a key range.
struct Query {
  bool by_host = false;
  int64_t bucket = 0;  // time_bucket(ts, bucket) when > 0.
  bool by_s = false;
  std::vector<Agg> aggs;
  int64_t lo = INT64_MIN, hi = INT64_MAX;  // key >= lo AND key < hi
};

std::optional<double> Number(const ModelRow& r, const std::string& c) {
  if (c == "v") return r.v ? std::optional<double>(*r.v) : std::nullopt;
  if (c == "big") return r.big ? std::optional<double>(static_cast<double>(*r.big)) : std::nullopt;
  if (c == "d") return r.d;
  if (c == "dec") return r.dec ? std::optional<double>(*r.dec / 100.0) : std::nullopt;
  if (c == "ts") return static_cast<double>(r.ts);
  return std::nullopt;
}
std::optional<std::string> Text(const ModelRow& r, const std::string& c) {
  if (c == "host") return r.host;
  if (c == "s") return r.s;
  return std::nullopt;
}
bool IsText(const std::string& c) { return c == "host" || c == "s"; }

int64_t Floor(int64_t v, int64_t w) { return (v / w - (v % w < 0 ? 1 : 0)) * w; }

std::vector<std::vector<Cell>> Evaluate(const Model& model, const Query& q) {
  // Group key -> (group cells, rows).
  std::map<std::vector<std::string>, std::pair<std::vector<Cell>, std::vector<const ModelRow*>>>
      groups;
  std::vector<std::pair<int64_t, const ModelRow*>> rows;
  for (const auto& [k, r] : model) {
    if (k < q.lo || k >= q.hi) continue;
    std::vector<std::string> key;
    std::vector<Cell> cells;
    if (q.by_host) {
      key.push_back("1" + r.host);
      cells.push_back(Cell::Text(r.host));
    }
    if (q.bucket > 0) {
      // Keys sort as numbers: offset them to be non-negative and pad.
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%020lld",
                    static_cast<long long>(Floor(r.ts, q.bucket) + (int64_t{1} << 62)));
      key.push_back(buf);
      cells.push_back(Cell::Num(static_cast<double>(Floor(r.ts, q.bucket))));
    }
    if (q.by_s) {
      key.push_back(r.s ? "1" + *r.s : "0");
      cells.push_back(r.s ? Cell::Text(*r.s) : Cell{});
    }
    auto& g = groups[key];
    g.first = cells;
    g.second.push_back(&r);
  }
  if (groups.empty() && !q.by_host && q.bucket == 0 && !q.by_s) groups[{}];
  std::map<const ModelRow*, int64_t> key_of;
  for (const auto& [k, r] : model) key_of[&r] = k;
  std::vector<std::vector<Cell>> out;
  for (auto& [key, g] : groups) {
    std::vector<Cell> row = g.first;
    for (const Agg& a : q.aggs) {
      int64_t count = 0;
      double sum = 0;
      std::optional<Cell> best;
      std::optional<double> best_num;
      int64_t best_key = 0;
      for (const ModelRow* r : g.second) {
        if (a.f == Scanner::COUNT_ALL) {
          count++;
          continue;
        }
        const bool text = IsText(a.column);
        const std::optional<double> n = text ? std::nullopt : Number(*r, a.column);
        const std::optional<std::string> t = text ? Text(*r, a.column) : std::nullopt;
        if (text ? !t.has_value() : !n.has_value()) continue;
        const Cell c = text ? Cell::Text(*t) : Cell::Num(*n);
        const int64_t k = key_of[r];
        const bool first = count == 0;
        count++;
        if (!text) sum += *n;
        bool take = false;
        switch (a.f) {
          case Scanner::MIN:
            take = first || (text ? *t < best->text : *n < *best_num);
            break;
          case Scanner::MAX:
            take = first || (text ? *t > best->text : *n > *best_num);
            break;
          case Scanner::FIRST:
            take = first || k < best_key;
            break;
          case Scanner::LAST:
            take = first || k > best_key;
            break;
          default:
            break;
        }
        if (take) {
          best = c;
          best_num = n;
          best_key = k;
        }
      }
      switch (a.f) {
        case Scanner::COUNT_ALL:
        case Scanner::COUNT:
          row.push_back(Cell::Num(static_cast<double>(count)));
          break;
        case Scanner::SUM:
          row.push_back(count == 0 ? Cell{} : Cell::Num(sum));
          break;
        case Scanner::AVG:
          row.push_back(count == 0 ? Cell{} : Cell::Num(sum / static_cast<double>(count)));
          break;
        default:
          row.push_back(best.has_value() ? *best : Cell{});
          break;
      }
    }
    out.push_back(std::move(row));
  }
  return out;
}

// The cell of column j of a result row, read with the getter of its type.
Cell Read(const client::ScanBatch::RowPtr& row, const client::Schema& schema, int j) {
  if (row.IsNull(j)) return Cell{};
  switch (schema.Column(j).type()) {
    case client::ColumnSchema::INT64: {
      int64_t v = 0;
      BASALT_EXPECT_OK(row.GetInt64(j, &v));
      return Cell::Num(static_cast<double>(v));
    }
    case client::ColumnSchema::INT32: {
      int32_t v = 0;
      BASALT_EXPECT_OK(row.GetInt32(j, &v));
      return Cell::Num(v);
    }
    case client::ColumnSchema::UNIXTIME_MICROS: {
      int64_t v = 0;
      BASALT_EXPECT_OK(row.GetUnixTimeMicros(j, &v));
      return Cell::Num(static_cast<double>(v));
    }
    case client::ColumnSchema::DOUBLE: {
      double v = 0;
      BASALT_EXPECT_OK(row.GetDouble(j, &v));
      return Cell::Num(v);
    }
    case client::ColumnSchema::DECIMAL: {
      int64_t v = 0;
      BASALT_EXPECT_OK(row.GetUnscaledDecimal(j, &v));
      return Cell::Num(static_cast<double>(v) / 100.0);
    }
    case client::ColumnSchema::STRING: {
      std::string_view v;
      BASALT_EXPECT_OK(row.GetString(j, &v));
      return Cell::Text(std::string(v));
    }
    default:
      ADD_FAILURE() << "unexpected result type in column " << j;
      return Cell{};
  }
}

class ClientAggregateTest : public ClientClusterTestBase {
 protected:
  ExternalMiniClusterOptions ClusterOptions() const override {
    ExternalMiniClusterOptions o = ClientClusterTestBase::ClusterOptions();
    // Rows reach DiskRowSets within a second, so later changes land in delta stores; each
    // aggregate answer covers one block, so scans merge many partial answers.
    o.extra_tserver_flags.push_back("--flush_threshold_secs=1");
    o.extra_tserver_flags.push_back("--scanner_aggregate_call_ms=0");
    return o;
  }

  // Hash(key) into two buckets times three key ranges, or one tablet when `single`.
  void CreateAggTable(bool single = false) {
    client::SchemaBuilder b;
    b.AddColumn("key")->Type(client::ColumnSchema::INT64)->NotNull()->PrimaryKey();
    b.AddColumn("host")->Type(client::ColumnSchema::STRING)->NotNull();
    b.AddColumn("ts")->Type(client::ColumnSchema::UNIXTIME_MICROS)->NotNull();
    b.AddColumn("v")->Type(client::ColumnSchema::INT32)->Nullable();
    b.AddColumn("big")->Type(client::ColumnSchema::INT64)->Nullable();
    b.AddColumn("d")->Type(client::ColumnSchema::DOUBLE)->Nullable();
    b.AddColumn("s")->Type(client::ColumnSchema::STRING)->Nullable();
    b.AddColumn("dec")->Type(client::ColumnSchema::DECIMAL)->Precision(10)->Scale(2)->Nullable();
    client::Schema schema;
    ASSERT_OK(b.Build(&schema));
    auto creator = client_->NewTableCreator();
    creator->table_name("aggs").schema(&schema).num_replicas(3);
    if (!single) creator->add_hash_partitions({"key"}, 2);
    // Keys are in [0, 100000): the tablets of the two outer ranges stay empty.
    for (int64_t split : single ? std::vector<int64_t>{} : std::vector<int64_t>{0, 100000}) {
      auto row = schema.NewRow();
      ASSERT_OK(row->SetInt64("key", split));
      creator->add_range_partition_split(std::move(row));
    }
    ASSERT_OK(creator->Create());
    ASSERT_OK(client_->OpenTable("aggs", &table_));
  }

  ModelRow RandomRow(Random* rnd) {
    ModelRow r;
    r.host = "h" + std::to_string(rnd->Uniform(5));
    r.ts = rnd->UniformRange(-5000000, 50000000);
    if (!rnd->OneIn(6)) r.v = static_cast<int32_t>(rnd->UniformRange(-2000000000, 2000000000));
    if (!rnd->OneIn(6)) r.big = rnd->UniformRange(-(int64_t{1} << 40), int64_t{1} << 40);
    if (!rnd->OneIn(6)) r.d = static_cast<double>(rnd->UniformRange(-100000, 100000)) / 4;
    if (!rnd->OneIn(4))
      r.s = std::string(1 + rnd->Uniform(3), static_cast<char>('a' + rnd->Uniform(4)));
    if (!rnd->OneIn(6)) r.dec = rnd->UniformRange(-9999999999, 9999999999);
    return r;
  }

  // Writes `row` for `key` with `op` (an insert or a full update), or deletes it when null.
  void Write(client::Session* session, int64_t key, const ModelRow* row, bool insert) {
    std::unique_ptr<client::WriteOperation> op;
    if (row == nullptr) {
      op = table_->NewDelete();
    } else if (insert) {
      op = table_->NewInsert();
    } else {
      op = table_->NewUpdate();
    }
    client::PartialRow* p = op->mutable_row();
    ASSERT_OK(p->SetInt64("key", key));
    if (row != nullptr) {
      ASSERT_OK(p->SetString("host", row->host));
      ASSERT_OK(p->SetUnixTimeMicros("ts", row->ts));
      ASSERT_OK(row->v ? p->SetInt32("v", *row->v) : p->SetNull("v"));
      ASSERT_OK(row->big ? p->SetInt64("big", *row->big) : p->SetNull("big"));
      ASSERT_OK(row->d ? p->SetDouble("d", *row->d) : p->SetNull("d"));
      ASSERT_OK(row->s ? p->SetString("s", *row->s) : p->SetNull("s"));
      ASSERT_OK(row->dec ? p->SetUnscaledDecimal("dec", *row->dec) : p->SetNull("dec"));
    }
    ASSERT_OK(session->Apply(std::move(op)));
  }

  // Random changes: inserts of new keys, updates and deletes of existing ones.
  void Mutate(Random* rnd, int inserts, int updates, int deletes) {
    auto session = client_->NewSession();
    ASSERT_OK(session->SetFlushMode(client::Session::AUTO_FLUSH_BACKGROUND));
    for (int i = 0; i < inserts; i++) {
      const int64_t key = next_key_;
      next_key_ += 1 + static_cast<int64_t>(rnd->Uniform(3));
      model_[key] = RandomRow(rnd);
      ASSERT_NO_FATAL_FAILURE(Write(session.get(), key, &model_[key], true));
    }
    std::vector<int64_t> keys;
    for (const auto& [k, r] : model_) keys.push_back(k);
    for (int i = 0; i < updates && !keys.empty(); i++) {
      const int64_t key = keys[rnd->Uniform(keys.size())];
      model_[key] = RandomRow(rnd);
      ASSERT_NO_FATAL_FAILURE(Write(session.get(), key, &model_[key], false));
    }
    for (int i = 0; i < deletes && !keys.empty(); i++) {
      const int64_t key = keys[rnd->Uniform(keys.size())];
      if (model_.erase(key) == 0) continue;
      ASSERT_NO_FATAL_FAILURE(Write(session.get(), key, nullptr, false));
    }
    ASSERT_OK(session->Flush());
    EXPECT_EQ(session->CountPendingErrors(), 0);
  }

  Query RandomQuery(Random* rnd) {
    static const std::vector<Agg> kAggs = {
        {Scanner::COUNT_ALL, ""}, {Scanner::COUNT, "v"},  {Scanner::SUM, "v"},
        {Scanner::SUM, "big"},    {Scanner::SUM, "d"},    {Scanner::SUM, "dec"},
        {Scanner::MIN, "s"},      {Scanner::MAX, "d"},    {Scanner::AVG, "v"},
        {Scanner::AVG, "dec"},    {Scanner::FIRST, "v"},  {Scanner::LAST, "s"},
        {Scanner::MIN, "ts"},     {Scanner::MAX, "host"}, {Scanner::FIRST, "d"},
    };
    Query q;
    q.by_host = rnd->OneIn(2);
    if (rnd->OneIn(3)) q.bucket = 1000000 * (1 + static_cast<int64_t>(rnd->Uniform(20)));
    q.by_s = rnd->OneIn(4);
    std::vector<size_t> picked;
    const size_t n = 1 + rnd->Uniform(4);
    while (picked.size() < n) {
      const size_t i = rnd->Uniform(kAggs.size());
      if (std::find(picked.begin(), picked.end(), i) == picked.end()) picked.push_back(i);
    }
    for (size_t i : picked) q.aggs.push_back(kAggs[i]);
    if (rnd->OneIn(3)) {
      q.lo = rnd->UniformRange(-10, next_key_);
      q.hi = q.lo + rnd->UniformRange(0, next_key_ / 2);
    }
    return q;
  }

  // Runs `q` with `configure` and checks it against `model`.
  void Check(const Query& q, const Model& model,
             const std::function<absl::Status(Scanner*)>& configure) {
    Scanner scanner(table_.get());
    if (q.by_host) {
      ASSERT_OK(scanner.AddGroupBy("host"));
    }
    if (q.bucket > 0) {
      ASSERT_OK(scanner.AddGroupByTimeBucket("ts", q.bucket, 0, "bucket"));
    }
    if (q.by_s) {
      ASSERT_OK(scanner.AddGroupBy("s"));
    }
    for (const Agg& a : q.aggs) ASSERT_OK(scanner.AddAggregate(a.f, a.column));
    if (q.lo != INT64_MIN) {
      ASSERT_OK(scanner.AddConjunctPredicate(table_->NewComparisonPredicate(
          "key", client::Predicate::GREATER_EQUAL, client::Value::FromInt(q.lo))));
      ASSERT_OK(scanner.AddConjunctPredicate(table_->NewComparisonPredicate(
          "key", client::Predicate::LESS, client::Value::FromInt(q.hi))));
    }
    ASSERT_OK(configure(&scanner));
    ASSERT_OK(scanner.Open());
    const client::Schema& schema = scanner.GetProjectionSchema();
    std::vector<std::vector<Cell>> got;
    while (scanner.HasMoreRows()) {
      client::ScanBatch batch;
      ASSERT_OK(scanner.NextBatch(&batch));
      for (int64_t i = 0; i < batch.NumRows(); i++) {
        std::vector<Cell> row;
        for (int j = 0; j < schema.num_columns(); j++) row.push_back(Read(batch.Row(i), schema, j));
        got.push_back(std::move(row));
      }
    }
    const std::vector<std::vector<Cell>> want = Evaluate(model, q);
    ASSERT_EQ(got.size(), want.size()) << scanner.ToString();
    for (size_t i = 0; i < want.size(); i++) {
      for (size_t j = 0; j < want[i].size(); j++) {
        ASSERT_TRUE(got[i][j] == want[i][j])
            << scanner.ToString() << ": row " << i << " column " << schema.Column(j).name()
            << ": got " << got[i][j].ToString() << ", want " << want[i][j].ToString();
      }
    }
  }

  std::shared_ptr<client::Table> table_;
  Model model_;
  int64_t next_key_ = 0;
};

TEST_F(ClientAggregateTest, AggregatesMatchTheModelAtSnapshotsAndLatest) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  Random rnd(seed);
  ASSERT_NO_FATAL_FAILURE(CreateAggTable());
  ASSERT_NO_FATAL_FAILURE(Mutate(&rnd, 3000, 0, 0));
  // Let the MemRowSets flush (--flush_threshold_secs=1): the changes below go to delta stores.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  ASSERT_NO_FATAL_FAILURE(Mutate(&rnd, 300, 600, 300));

  // A snapshot the servers pick, then more changes after it.
  uint64_t snapshot = 0;
  {
    Scanner count(table_.get());
    ASSERT_OK(count.AddAggregate(Scanner::COUNT_ALL, ""));
    ASSERT_OK(count.SetReadMode(Scanner::READ_AT_SNAPSHOT));
    ASSERT_OK(count.Open());
    client::ScanBatch batch;
    while (count.HasMoreRows()) ASSERT_OK(count.NextBatch(&batch));
    snapshot = count.GetSnapshotRaw();
    ASSERT_NE(snapshot, 0u);
  }
  const Model at_snapshot = model_;
  ASSERT_NO_FATAL_FAILURE(Mutate(&rnd, 200, 400, 200));

  for (int i = 0; i < 12; i++) {
    const Query q = RandomQuery(&rnd);
    ASSERT_NO_FATAL_FAILURE(Check(q, at_snapshot, [&](Scanner* s) {
      BASALT_RETURN_IF_ERROR(s->SetReadMode(Scanner::READ_AT_SNAPSHOT));
      return s->SetSnapshotRaw(snapshot);
    }));
    ASSERT_NO_FATAL_FAILURE(Check(q, model_, [&](Scanner* s) {
      BASALT_RETURN_IF_ERROR(s->SetReadMode(Scanner::READ_YOUR_WRITES));
      // Half of them one tablet at a time.
      return rnd.OneIn(2) ? s->SetMaxConcurrentTablets(1) : absl::OkStatus();
    }));
  }
  // A limit counts groups.
  Query q;
  q.by_host = true;
  q.aggs = {{Scanner::COUNT_ALL, ""}};
  Scanner limited(table_.get());
  ASSERT_OK(limited.AddGroupBy("host"));
  ASSERT_OK(limited.AddAggregate(Scanner::COUNT_ALL, ""));
  ASSERT_OK(limited.SetLimit(2));
  ASSERT_OK(limited.SetReadMode(Scanner::READ_YOUR_WRITES));
  ASSERT_OK(limited.Open());
  int64_t rows = 0;
  while (limited.HasMoreRows()) {
    client::ScanBatch batch;
    ASSERT_OK(limited.NextBatch(&batch));
    rows += batch.NumRows();
  }
  EXPECT_EQ(rows, 2);
}

// A fault-tolerant aggregate scan resumes on another replica after the last key whose rows an
// answer covered: its server killed in the middle, no row is lost or counted twice.
TEST_F(ClientAggregateTest, FaultTolerantAggregateScanSurvivesTheKillOfItsServer) {
  const uint64_t seed = SeedFromEnvOrTime();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  Random rnd(seed);
  ASSERT_NO_FATAL_FAILURE(CreateAggTable(/*single=*/true));
  ASSERT_NO_FATAL_FAILURE(Mutate(&rnd, 20000, 0, 0));
  Query q;
  q.by_host = true;
  q.aggs = {{Scanner::COUNT_ALL, ""}, {Scanner::SUM, "big"}, {Scanner::FIRST, "v"}};
  Scanner scanner(table_.get());
  ASSERT_OK(scanner.AddGroupBy("host"));
  for (const Agg& a : q.aggs) ASSERT_OK(scanner.AddAggregate(a.f, a.column));
  ASSERT_OK(scanner.SetFaultTolerant());
  ASSERT_OK(scanner.SetBatchSizeBytes(1));
  ASSERT_OK(scanner.Open());
  // The first answer (one block of rows: --scanner_aggregate_call_ms=0) is in; snapshot scans
  // are served by the leader (docs/cluster.md): take it away.
  client::ScanBatch batch;
  auto leader = cluster_->FindTabletLeader(TabletIds("aggs").at(0));
  ASSERT_TRUE(leader.ok()) << leader.status();
  cluster_->tablet_server(leader->ts_index)->Kill();
  const client::Schema& schema = scanner.GetProjectionSchema();
  std::vector<std::vector<Cell>> got;
  while (scanner.HasMoreRows()) {
    ASSERT_OK(scanner.NextBatch(&batch));
    for (int64_t i = 0; i < batch.NumRows(); i++) {
      std::vector<Cell> row;
      for (int j = 0; j < schema.num_columns(); j++) row.push_back(Read(batch.Row(i), schema, j));
      got.push_back(std::move(row));
    }
  }
  const auto want = Evaluate(model_, q);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); i++) {
    for (size_t j = 0; j < want[i].size(); j++) {
      EXPECT_TRUE(got[i][j] == want[i][j])
          << "row " << i << " column " << j << ": got " << got[i][j].ToString() << ", want "
          << want[i][j].ToString();
    }
  }
}

// Bad aggregates fail when added; a failing aggregate scan (a SUM past INT64) ends for good.
TEST_F(ClientAggregateTest, BadAggregatesAreRefusedWhenAddedAndFailuresAreFinal) {
  ASSERT_NO_FATAL_FAILURE(CreateAggTable());
  Scanner scanner(table_.get());
  absl::Status s = scanner.AddAggregate(Scanner::SUM, "s");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("sum(s)"), std::string::npos) << s;
  s = scanner.AddGroupByTimeBucket("host", 60000000);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = scanner.AddAggregate(Scanner::MAX, "nope");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  ASSERT_OK(scanner.AddGroupBy("host"));
  // GROUP BY alone is not a scan.
  EXPECT_EQ(scanner.Open().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_OK(scanner.AddAggregate(Scanner::COUNT_ALL, "", "n"));
  EXPECT_EQ(scanner.GetProjectionSchema().num_columns(), 2);
  EXPECT_EQ(scanner.GetProjectionSchema().Column(1).name(), "n");
  ASSERT_OK(scanner.Open());
  client::ScanBatch batch;
  while (scanner.HasMoreRows()) ASSERT_OK(scanner.NextBatch(&batch));

  // A SUM past INT64 fails the scan, naming the aggregate, and the failure is final.
  auto session = client_->NewSession();
  ModelRow big;
  big.host = "h";
  big.big = INT64_MAX / 2 + 1;
  for (int64_t key : {1, 2, 3}) {
    ASSERT_NO_FATAL_FAILURE(Write(session.get(), key, &big, true));
  }
  ASSERT_OK(session->Flush());
  Scanner sum(table_.get());
  ASSERT_OK(sum.AddAggregate(Scanner::SUM, "big"));
  ASSERT_OK(sum.Open());
  absl::Status s2;
  while (s2.ok() && sum.HasMoreRows()) s2 = sum.NextBatch(&batch);
  EXPECT_EQ(s2.code(), absl::StatusCode::kOutOfRange) << s2;
  EXPECT_NE(s2.message().find("sum(big) overflows INT64"), std::string::npos) << s2;
  EXPECT_FALSE(sum.HasMoreRows());
  EXPECT_EQ(sum.NextBatch(&batch).code(), absl::StatusCode::kOutOfRange);
}

}  // namespace client_aggregate_test_file
}  // namespace
}  // namespace basalt::client_test
