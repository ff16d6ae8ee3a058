// Uses the installed client API without a cluster: builds a schema and a row, and checks that a
// client with a bad master address is refused.

#include <cstdio>
#include <memory>

#include "basalt/client/client.h"

using basalt::client::ClientBuilder;
using basalt::client::ColumnSchema;
using basalt::client::Schema;
using basalt::client::SchemaBuilder;

int main() {
  SchemaBuilder b;
  b.AddColumn("key")->Type(ColumnSchema::INT32)->NotNull()->PrimaryKey();
  b.AddColumn("v")->Type(ColumnSchema::STRING)->Nullable();
  Schema schema;
  absl::Status s = b.Build(&schema);
  if (!s.ok()) {
    std::fprintf(stderr, "Build: %s\n", s.ToString().c_str());
    return 1;
  }
  auto row = schema.NewRow();
  if (!row->SetInt32("key", 7).ok() || !row->SetString("v", "x").ok()) return 1;
  std::shared_ptr<basalt::client::Client> client;
  if (ClientBuilder().add_master_server_addr("host:notaport").Build(&client).ok()) return 1;
  if (!ClientBuilder().add_master_server_addr("127.0.0.1:1").Build(&client).ok()) return 1;
  std::printf("consumer ok: %s\n", row->ToString().c_str());
  return 0;
}
