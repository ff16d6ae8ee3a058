#pragma once

// Helpers for the client's unit tests: tables that exist without a cluster.

#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/client_internal.h"
#include "client/meta_cache.h"
#include "glog/logging.h"
#include "proto/common.pb.h"

namespace basalt::client::internal {

// A Table handle over `schema`, partitioned by `hash` levels and `range` columns, that belongs to
// `client` (may be null when the test never sends anything) and routes through `locations`
// (a fresh empty one when null).
inline std::shared_ptr<Table> MakeTestTable(const Schema& schema,
                                            const std::vector<PartitionSchema::HashLevelSpec>& hash,
                                            const std::vector<std::string>& range,
                                            std::shared_ptr<Client> client = nullptr,
                                            std::shared_ptr<TableLocations> locations = nullptr,
                                            const std::string& id = "table-id") {
  auto d = Access::NewTableData();
  d->client = std::move(client);
  d->id = id;
  d->name = "test_table";
  d->schema = schema;
  const basalt::Schema& s = Access::Internal(schema);
  auto ps = PartitionSchema::Create(s, hash, range);
  CHECK(ps.ok()) << ps.status();
  d->partition_schema = *std::move(ps);
  auto pb = std::make_shared<pb::SchemaPB>();
  s.ToPB(pb.get());
  d->schema_pb = std::move(pb);
  d->locations = locations ? std::move(locations) : std::make_shared<TableLocations>(id);
  d->num_replicas = 3;
  return Access::MakeTable(std::move(d));
}

}  // namespace basalt::client::internal
