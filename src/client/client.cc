#include "client/client.h"

#include <algorithm>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/client_internal.h"
#include "client/elastic_thread_pool.h"
#include "client/frame_targets.h"
#include "client/master_proxy.h"
#include "client/meta_cache.h"
#include "client/thread_pool.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/master.pb.h"
#include "rpc/net_util.h"

namespace basalt::client {

using internal::Access;
using internal::ClientData;
using internal::MasterProxy;

namespace {
constexpr uint16_t kDefaultMasterPort = 7051;

absl::Time AdminDeadline(const ClientData* d) { return absl::Now() + d->admin_timeout; }
}  // namespace

// ---- ClientBuilder
// -------------------------------------------------------------------------------

ClientBuilder::ClientBuilder() = default;
ClientBuilder::~ClientBuilder() = default;

ClientBuilder& ClientBuilder::add_master_server_addr(std::string address) {
  masters_.push_back(std::move(address));
  return *this;
}
ClientBuilder& ClientBuilder::master_server_addrs(std::vector<std::string> addresses) {
  masters_ = std::move(addresses);
  return *this;
}
ClientBuilder& ClientBuilder::default_admin_operation_timeout(std::chrono::milliseconds t) {
  admin_timeout_ = t;
  return *this;
}
ClientBuilder& ClientBuilder::default_rpc_timeout(std::chrono::milliseconds t) {
  rpc_timeout_ = t;
  return *this;
}
ClientBuilder& ClientBuilder::disable_mutex_deadlock_detection(bool disable) {
  disable_deadlock_detection_ = disable;
  return *this;
}
ClientBuilder& ClientBuilder::use_frame_rpc(bool use) {
  use_frame_rpc_ = use;
  return *this;
}
ClientBuilder& ClientBuilder::reply_spin(std::chrono::microseconds spin) {
  reply_spin_ = spin;
  return *this;
}
ClientBuilder& ClientBuilder::num_rpc_threads(int n) {
  num_rpc_threads_ = n;
  return *this;
}

absl::Status ClientBuilder::Build(std::shared_ptr<Client>* client) {
  std::vector<std::string> addresses;
  for (const std::string& m : masters_) {
    // Each entry may itself be a comma-separated list (as in --master_addresses).
    BASALT_ASSIGN_OR_RETURN(auto hps, ParseHostPortList(m, kDefaultMasterPort));
    for (const HostPort& hp : hps) addresses.push_back(hp.ToString());
  }
  if (addresses.empty()) return absl::InvalidArgumentError("no master address given");
  if (admin_timeout_.count() <= 0 || rpc_timeout_.count() <= 0) {
    return absl::InvalidArgumentError("timeouts must be positive");
  }
  if (reply_spin_.count() < 0) return absl::InvalidArgumentError("reply_spin must not be negative");
  if (disable_deadlock_detection_) {
    // The packaged Abseil is built without NDEBUG, so every absl::Mutex operation feeds a
    // deadlock-detection graph by default, which costs the write path about 40% of its CPU.
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
  auto data = std::make_unique<ClientData>();
  data->master_addresses = addresses;
  data->admin_timeout = absl::FromChrono(admin_timeout_);
  data->rpc_timeout = absl::FromChrono(rpc_timeout_);
  data->master = std::make_unique<MasterProxy>(std::move(addresses));
  data->frames =
      std::make_unique<internal::FrameTargets>(use_frame_rpc_, absl::FromChrono(reply_spin_));
  data->meta_cache = std::make_unique<internal::MetaCache>(data->master.get(), data->frames.get());
  data->pool = std::make_unique<ThreadPool>(std::max(1, num_rpc_threads_));
  data->pool->Start();
  data->scan_workers = std::make_unique<internal::ElasticThreadPool>();
  client->reset(new Client(std::move(data)));
  return absl::OkStatus();
}

// ---- Client
// --------------------------------------------------------------------------------------

Client::Client(std::unique_ptr<ClientData> data) : data_(std::move(data)) {}
Client::~Client() = default;

std::unique_ptr<TableCreator> Client::NewTableCreator() {
  return std::unique_ptr<TableCreator>(new TableCreator(this));
}

std::unique_ptr<TableAlterer> Client::NewTableAlterer(const std::string& table_name) {
  return std::unique_ptr<TableAlterer>(new TableAlterer(this, table_name));
}

absl::Status Client::DeleteTable(const std::string& table_name) {
  pb::DeleteTableRequestPB req;
  req.mutable_table()->set_table_name(table_name);
  pb::DeleteTableResponsePB resp;
  // A retry of a delete that took effect answers OK, not TABLE_NOT_FOUND.
  return data_->master->CallExactlyOnce("DeleteTable", &MasterProxy::Stub::DeleteTable, &req, &resp,
                                        AdminDeadline(data_.get()), &data_->requests);
}

absl::Status Client::IsCreateTableInProgress(const std::string& table_name, bool* in_progress) {
  pb::IsCreateTableDoneRequestPB req;
  req.mutable_table()->set_table_name(table_name);
  pb::IsCreateTableDoneResponsePB resp;
  BASALT_RETURN_IF_ERROR(data_->master->Call("IsCreateTableDone",
                                             &MasterProxy::Stub::IsCreateTableDone, req, &resp,
                                             AdminDeadline(data_.get())));
  *in_progress = !resp.done();
  return absl::OkStatus();
}

absl::Status Client::IsAlterTableInProgress(const std::string& table_name, bool* in_progress) {
  pb::IsAlterTableDoneRequestPB req;
  req.mutable_table()->set_table_name(table_name);
  pb::IsAlterTableDoneResponsePB resp;
  BASALT_RETURN_IF_ERROR(data_->master->Call("IsAlterTableDone",
                                             &MasterProxy::Stub::IsAlterTableDone, req, &resp,
                                             AdminDeadline(data_.get())));
  *in_progress = !resp.done();
  return absl::OkStatus();
}

absl::Status Client::GetTableSchema(const std::string& table_name, Schema* schema) {
  std::shared_ptr<Table> table;
  BASALT_RETURN_IF_ERROR(OpenTable(table_name, &table));
  *schema = table->schema();
  return absl::OkStatus();
}

absl::Status Client::ListTables(std::vector<std::string>* tables, const std::string& filter) {
  pb::ListTablesRequestPB req;
  req.set_name_filter(filter);
  pb::ListTablesResponsePB resp;
  BASALT_RETURN_IF_ERROR(data_->master->Call("ListTables", &MasterProxy::Stub::ListTables, req,
                                             &resp, AdminDeadline(data_.get())));
  tables->clear();
  for (const auto& t : resp.tables()) tables->push_back(t.name());
  std::sort(tables->begin(), tables->end());
  return absl::OkStatus();
}

absl::Status Client::TableExists(const std::string& table_name, bool* exists) {
  std::vector<std::string> tables;
  BASALT_RETURN_IF_ERROR(ListTables(&tables, table_name));
  *exists = std::find(tables.begin(), tables.end(), table_name) != tables.end();
  return absl::OkStatus();
}

absl::Status Client::ListTabletServers(std::vector<TabletServerInfo>* servers) {
  pb::ListTabletServersRequestPB req;
  pb::ListTabletServersResponsePB resp;
  BASALT_RETURN_IF_ERROR(data_->master->Call("ListTabletServers",
                                             &MasterProxy::Stub::ListTabletServers, req, &resp,
                                             AdminDeadline(data_.get())));
  servers->clear();
  for (const auto& s : resp.servers()) {
    TabletServerInfo info;
    info.uuid = s.uuid();
    info.hostname = s.rpc_address().host();
    info.port = static_cast<uint16_t>(s.rpc_address().port());
    info.live = s.live();
    info.millis_since_heartbeat = s.millis_since_heartbeat();
    info.num_replicas = s.num_replicas();
    servers->push_back(std::move(info));
  }
  return absl::OkStatus();
}

absl::Status Client::OpenTable(const std::string& table_name, std::shared_ptr<Table>* table) {
  pb::GetTableSchemaRequestPB req;
  req.mutable_table()->set_table_name(table_name);
  pb::GetTableSchemaResponsePB resp;
  BASALT_RETURN_IF_ERROR(data_->master->Call("GetTableSchema", &MasterProxy::Stub::GetTableSchema,
                                             req, &resp, AdminDeadline(data_.get())));
  auto schema = basalt::Schema::FromPB(resp.schema());
  if (!schema.ok()) {
    return absl::DataLossError(StrCat("master returned a malformed schema for table '", table_name,
                                      "': ", schema.status().message()));
  }
  auto ps = PartitionSchema::FromPB(resp.partition_schema(), *schema);
  if (!ps.ok()) {
    return absl::DataLossError(StrCat("master returned a malformed partition schema for table '",
                                      table_name, "': ", ps.status().message()));
  }
  auto d = std::make_unique<Table::Data>();
  d->client = shared_from_this();
  d->id = resp.table_id();
  d->name = resp.table_name().empty() ? table_name : resp.table_name();
  d->schema = Access::MakeSchema(*std::move(schema));
  d->partition_schema = *std::move(ps);
  d->num_replicas = resp.num_replicas();
  d->schema_pb = std::make_shared<pb::SchemaPB>(resp.schema());
  d->locations = data_->meta_cache->GetTable(d->id);
  *table = Access::MakeTable(std::move(d));
  return absl::OkStatus();
}

std::shared_ptr<Session> Client::NewSession() { return Access::MakeSession(shared_from_this()); }

uint64_t Client::GetLatestObservedTimestamp() const {
  return data_->latest_observed_timestamp.load();
}
void Client::SetLatestObservedTimestamp(uint64_t hybrid_time) {
  data_->ObserveTimestamp(hybrid_time);
}

std::chrono::milliseconds Client::default_admin_operation_timeout() const {
  return absl::ToChronoMilliseconds(data_->admin_timeout);
}
std::chrono::milliseconds Client::default_rpc_timeout() const {
  return absl::ToChronoMilliseconds(data_->rpc_timeout);
}

}  // namespace basalt::client
