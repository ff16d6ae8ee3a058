// Seed 001's C++ insert loop (MANUAL_FLUSH, one insert per row setting three INT32 columns,
// Flush every 1,000 rows) run twice against a running cluster: once on the Kudu C++ API
// (libbasalt_kudu_compat) and once on Basalt's own client API, each into a fresh table of the
// same layout. Prints rows/s for both and their ratio.
//
//   kudu_compat_insert_bench --master=127.0.0.1:7051 --rows=1000000

#include <gflags/gflags.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "client/client.h"
#include "kudu/client/client.h"

DEFINE_string(master, "127.0.0.1:7051", "Master address of the cluster to write to");
DEFINE_int32(rows, 1000000, "Rows each API inserts");
DEFINE_int32(tablets, 10, "Range partitions of each table (even splits over the keys)");
DEFINE_int32(rounds, 1, "Times each API runs (alternating, Kudu API first)");

namespace {

namespace bc = basalt::client;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "kudu_compat_insert_bench: %s\n", what.c_str());
  std::exit(1);
}

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) Die(std::string(what) + ": " + s.ToString());
}

void Check(const kudu::Status& s, const char* what) {
  if (!s.ok()) Die(std::string(what) + ": " + s.ToString());
}

// The seed's schema, created (and later dropped) through Basalt's API for both runs.
void CreateTable(bc::Client* client, const std::string& name) {
  bc::SchemaBuilder b;
  b.AddColumn("key")->Type(bc::ColumnSchema::INT32)->NotNull()->PrimaryKey();
  b.AddColumn("integer_val")->Type(bc::ColumnSchema::INT32)->NotNull();
  b.AddColumn("non_null_with_default")
      ->Type(bc::ColumnSchema::INT32)
      ->NotNull()
      ->Default(bc::Value::FromInt(12345));
  bc::Schema schema;
  Check(b.Build(&schema), "schema");
  auto creator = client->NewTableCreator();
  creator->table_name(name).schema(&schema).set_range_partition_columns({"key"});
  for (int i = 1; i < FLAGS_tablets; i++) {
    auto split = schema.NewRow();
    Check(split->SetInt32("key", static_cast<int32_t>(int64_t{FLAGS_rows} * i / FLAGS_tablets)),
          "split");
    creator->add_range_partition_split(std::move(split));
  }
  Check(creator->Create(), "create table");
}

// CPU seconds (user + system) of this process so far: the client's own cost, which the cluster's
// load does not blur as much as wall time.
double CpuSeconds() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The seed's loop on the Kudu API.
double RunKudu(const std::string& name) {
  kudu::client::sp::shared_ptr<kudu::client::KuduClient> client;
  Check(kudu::client::KuduClientBuilder().add_master_server_addr(FLAGS_master).Build(&client),
        "kudu client");
  kudu::client::sp::shared_ptr<kudu::client::KuduTable> table;
  Check(client->OpenTable(name, &table), "open table");
  auto session = table->client()->NewSession();
  Check(session->SetFlushMode(kudu::client::KuduSession::MANUAL_FLUSH), "flush mode");
  session->SetTimeoutMillis(60000);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < FLAGS_rows; i++) {
    kudu::client::KuduInsert* insert = table->NewInsert();
    kudu::KuduPartialRow* row = insert->mutable_row();
    KUDU_CHECK_OK(row->SetInt32("key", i));
    KUDU_CHECK_OK(row->SetInt32("integer_val", i * 2));
    KUDU_CHECK_OK(row->SetInt32("non_null_with_default", i * 5));
    KUDU_CHECK_OK(session->Apply(insert));
    if (i % 1000 == 0) Check(session->Flush(), "flush");
  }
  Check(session->Flush(), "final flush");
  const double s = Seconds(start);
  if (session->CountPendingErrors() != 0) Die("rows failed on the Kudu API");
  return s;
}

// The same loop on Basalt's own API.
double RunBasalt(const std::string& name) {
  std::shared_ptr<bc::Client> client;
  Check(bc::ClientBuilder().add_master_server_addr(FLAGS_master).Build(&client), "client");
  std::shared_ptr<bc::Table> table;
  Check(client->OpenTable(name, &table), "open table");
  auto session = client->NewSession();
  Check(session->SetFlushMode(bc::Session::MANUAL_FLUSH), "flush mode");
  session->SetTimeoutMillis(60000);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < FLAGS_rows; i++) {
    auto insert = table->NewInsert();
    bc::PartialRow* row = insert->mutable_row();
    Check(row->SetInt32("key", i), "key");
    Check(row->SetInt32("integer_val", i * 2), "integer_val");
    Check(row->SetInt32("non_null_with_default", i * 5), "non_null_with_default");
    Check(session->Apply(std::move(insert)), "apply");
    if (i % 1000 == 0) Check(session->Flush(), "flush");
  }
  Check(session->Flush(), "final flush");
  const double s = Seconds(start);
  if (session->CountPendingErrors() != 0) Die("rows failed on Basalt's API");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  std::shared_ptr<bc::Client> admin;
  Check(bc::ClientBuilder().add_master_server_addr(FLAGS_master).Build(&admin), "client");
  double kudu_best = 0, basalt_best = 0;
  for (int round = 0; round < FLAGS_rounds; round++) {
    for (const bool kudu_api : {true, false}) {
      const std::string name =
          std::string("bench.insert_") + (kudu_api ? "kudu_" : "basalt_") + std::to_string(round);
      CreateTable(admin.get(), name);
      const double cpu_start = CpuSeconds();
      const double secs = kudu_api ? RunKudu(name) : RunBasalt(name);
      const double cpu_us_per_row = (CpuSeconds() - cpu_start) * 1e6 / FLAGS_rows;
      const double rate = FLAGS_rows / secs;
      std::printf("round %d %-12s %d rows in %.2f s: %.0f rows/s, client CPU %.2f us/row\n", round,
                  kudu_api ? "kudu-api" : "basalt-api", FLAGS_rows, secs, rate, cpu_us_per_row);
      std::fflush(stdout);
      double& best = kudu_api ? kudu_best : basalt_best;
      if (rate > best) best = rate;
      Check(admin->DeleteTable(name), "delete table");
    }
  }
  std::printf("best: kudu-api %.0f rows/s, basalt-api %.0f rows/s, ratio %.3f\n", kudu_best,
              basalt_best, kudu_best / basalt_best);
  return 0;
}
