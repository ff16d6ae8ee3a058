// basic_example: a tour of the Basalt client API against a running cluster (issue 6, item 5).
//
//   build/bin/basic_example --master_addresses=127.0.0.1:7051
//
// Connects, creates a table range-partitioned by split rows, alters it (renames a column, adds a
// nullable column, drops a column), inserts 1,000 rows in MANUAL_FLUSH mode, runs a
// fault-tolerant (ordered, snapshot) scan for 5 <= key <= 600 and checks that it returns the 596
// rows in key order, then deletes the table. Exits non-zero on the first failure.

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gflags/gflags.h>

#include "client/client.h"

DEFINE_string(master_addresses, "127.0.0.1:7051", "Comma-separated addresses of the masters.");
DEFINE_string(table_name, "basic_example", "Name of the table the example creates and deletes.");
DEFINE_int32(num_replicas, 0, "Replication factor of the table (0: the master's default).");

namespace {

using basalt::client::Client;
using basalt::client::ClientBuilder;
using basalt::client::ColumnSchema;
using basalt::client::Predicate;
using basalt::client::ScanBatch;
using basalt::client::Scanner;
using basalt::client::Schema;
using basalt::client::SchemaBuilder;
using basalt::client::Session;
using basalt::client::Table;
using basalt::client::Value;

constexpr int kNumRows = 1000;

void Check(const absl::Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "FAILED: %s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

void Expect(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  std::exit(1);
}

void CreateTable(Client* client) {
  SchemaBuilder b;
  b.AddColumn("key")->Type(ColumnSchema::INT32)->NotNull()->PrimaryKey();
  b.AddColumn("int_val")->Type(ColumnSchema::INT32)->NotNull();
  b.AddColumn("string_val")->Type(ColumnSchema::STRING)->Nullable();
  b.AddColumn("obsolete")->Type(ColumnSchema::INT64)->Nullable();
  Schema schema;
  Check(b.Build(&schema), "building the schema");

  auto creator = client->NewTableCreator();
  creator->table_name(FLAGS_table_name).schema(&schema).set_range_partition_columns({"key"});
  for (int split : {250, 500, 750}) {
    auto row = schema.NewRow();
    Check(row->SetInt32("key", split), "setting a split row");
    creator->add_range_partition_split(std::move(row));
  }
  creator->num_replicas(FLAGS_num_replicas);
  Check(creator->Create(), "creating the table");
  std::printf("created table %s with 4 range partitions\n", FLAGS_table_name.c_str());
}

void AlterTable(Client* client) {
  auto alterer = client->NewTableAlterer(FLAGS_table_name);
  alterer->AlterColumn("int_val")->RenameTo("int_value");
  alterer->AddColumn("note")->Type(ColumnSchema::STRING)->Nullable();
  alterer->DropColumn("obsolete");
  Check(alterer->Alter(), "altering the table");
  std::printf("altered: renamed int_val to int_value, added note, dropped obsolete\n");
}

void InsertRows(const std::shared_ptr<Table>& table) {
  std::shared_ptr<Session> session = table->client()->NewSession();
  Check(session->SetFlushMode(Session::MANUAL_FLUSH), "setting MANUAL_FLUSH");
  session->SetTimeoutMillis(60000);
  for (int i = 0; i < kNumRows; i++) {
    auto insert = table->NewInsert();
    auto* row = insert->mutable_row();
    Check(row->SetInt32("key", i), "setting key");
    Check(row->SetInt32("int_value", i * 2), "setting int_value");
    Check(row->SetString("string_val", "row " + std::to_string(i)), "setting string_val");
    if (i % 3 == 0) Check(row->SetNull("note"), "setting note");
    Check(session->Apply(std::move(insert)), "applying an insert");
  }
  Expect(session->CountBufferedOperations() == kNumRows, "all rows buffered before Flush");
  absl::Status s = session->Flush();
  for (const auto& e : session->GetPendingErrors()) {
    std::fprintf(stderr, "row error: %s: %s\n", e->failed_op().ToString().c_str(),
                 e->status().ToString().c_str());
  }
  Check(s, "flushing");
  Check(session->Close(), "closing the session");
  std::printf("inserted %d rows in MANUAL_FLUSH mode\n", kNumRows);
}

void ScanRange(const std::shared_ptr<Table>& table) {
  Scanner scanner(table.get());
  Check(scanner.SetFaultTolerant(), "SetFaultTolerant");
  Check(scanner.SetProjectedColumnNames({"key", "int_value", "string_val"}), "projection");
  Check(scanner.AddConjunctPredicate(
            table->NewComparisonPredicate("key", Predicate::GREATER_EQUAL, Value::FromInt(5))),
        "key >= 5");
  Check(scanner.AddConjunctPredicate(
            table->NewComparisonPredicate("key", Predicate::LESS_EQUAL, Value::FromInt(600))),
        "key <= 600");
  Check(scanner.Open(), "opening the scanner");
  int count = 0;
  int32_t prev = -1;
  ScanBatch batch;
  while (scanner.HasMoreRows()) {
    Check(scanner.NextBatch(&batch), "reading a batch");
    for (int64_t i = 0; i < batch.NumRows(); i++) {
      int32_t key = 0;
      int32_t value = 0;
      Check(batch.Row(i).GetInt32("key", &key), "reading key");
      Check(batch.Row(i).GetInt32("int_value", &value), "reading int_value");
      Expect(key > prev,
             "rows in key order (" + std::to_string(key) + " after " + std::to_string(prev) + ")");
      Expect(value == key * 2, "int_value of key " + std::to_string(key));
      prev = key;
      count++;
    }
  }
  scanner.Close();
  Expect(count == 596, "596 rows with 5 <= key <= 600, got " + std::to_string(count));
  std::printf("fault-tolerant scan returned %d rows in key order\n", count);
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("A tour of the Basalt client API against a running cluster.");
  gflags::ParseCommandLineFlags(&argc, &argv, true);

  std::shared_ptr<Client> client;
  Check(ClientBuilder().add_master_server_addr(FLAGS_master_addresses).Build(&client),
        "building the client");
  bool exists = false;
  Check(client->TableExists(FLAGS_table_name, &exists), "listing tables");
  if (exists) Check(client->DeleteTable(FLAGS_table_name), "deleting a leftover table");

  CreateTable(client.get());
  AlterTable(client.get());
  std::shared_ptr<Table> table;
  Check(client->OpenTable(FLAGS_table_name, &table), "opening the table");
  InsertRows(table);
  ScanRange(table);
  table.reset();
  Check(client->DeleteTable(FLAGS_table_name), "deleting the table");
  std::printf("deleted table %s\nOK\n", FLAGS_table_name.c_str());
  return 0;
}
