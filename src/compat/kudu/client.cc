// KuduClientBuilder, KuduClient, KuduTabletServer: a Basalt Client behind Kudu's names.

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compat/kudu/internal.h"

namespace kudu {
namespace client {

namespace bc = basalt::client;
using internal::Access;

namespace {

MonoDelta FromMillis(std::chrono::milliseconds ms) {
  return MonoDelta::FromMilliseconds(ms.count());
}

Status NotInBasalt(const char* what) {
  return Status::NotSupported(what, "not available in Basalt");
}

}  // namespace

// ---- KuduClientBuilder ------------------------------------------------------------------------

class KuduClientBuilder::Data {
 public:
  std::vector<std::string> masters;
  MonoDelta admin_timeout;  // Uninitialized: Basalt's default.
  MonoDelta rpc_timeout;
  MonoDelta negotiation_timeout = MonoDelta::FromSeconds(3);
  // First setting that Basalt cannot honour; Build returns it.
  Status unsupported;
};

KuduClientBuilder::KuduClientBuilder() : data_(new Data) {}
KuduClientBuilder::~KuduClientBuilder() { delete data_; }

KuduClientBuilder& KuduClientBuilder::clear_master_server_addrs() {
  data_->masters.clear();
  return *this;
}
KuduClientBuilder& KuduClientBuilder::master_server_addrs(const std::vector<std::string>& addrs) {
  data_->masters = addrs;
  return *this;
}
KuduClientBuilder& KuduClientBuilder::add_master_server_addr(const std::string& addr) {
  data_->masters.push_back(addr);
  return *this;
}
KuduClientBuilder& KuduClientBuilder::default_admin_operation_timeout(const MonoDelta& timeout) {
  data_->admin_timeout = timeout;
  return *this;
}
KuduClientBuilder& KuduClientBuilder::default_rpc_timeout(const MonoDelta& timeout) {
  data_->rpc_timeout = timeout;
  return *this;
}
KuduClientBuilder& KuduClientBuilder::connection_negotiation_timeout(const MonoDelta& timeout) {
  data_->negotiation_timeout = timeout;
  return *this;
}
KuduClientBuilder& KuduClientBuilder::rpc_max_message_size(int64_t size) { return *this; }
KuduClientBuilder& KuduClientBuilder::jwt(const std::string& jwt) {
  if (data_->unsupported.ok()) data_->unsupported = NotInBasalt("JWT authentication");
  return *this;
}
KuduClientBuilder& KuduClientBuilder::import_authentication_credentials(std::string authn_creds) {
  if (data_->unsupported.ok()) data_->unsupported = NotInBasalt("authentication credentials");
  return *this;
}
KuduClientBuilder& KuduClientBuilder::trusted_certificate(const std::string& cert_pem) {
  if (data_->unsupported.ok()) data_->unsupported = NotInBasalt("TLS certificates");
  return *this;
}
KuduClientBuilder& KuduClientBuilder::num_reactors(int num_reactors) { return *this; }
KuduClientBuilder& KuduClientBuilder::sasl_protocol_name(const std::string& sasl_protocol_name) {
  return *this;
}
KuduClientBuilder& KuduClientBuilder::require_authentication(bool require_authentication) {
  if (require_authentication && data_->unsupported.ok()) {
    data_->unsupported = NotInBasalt("authentication");
  }
  return *this;
}
KuduClientBuilder& KuduClientBuilder::encryption_policy(EncryptionPolicy encryption_policy) {
  if (encryption_policy != OPTIONAL && data_->unsupported.ok()) {
    data_->unsupported = NotInBasalt("encrypted connections");
  }
  return *this;
}

Status KuduClientBuilder::Build(sp::shared_ptr<KuduClient>* client) {
  KUDU_RETURN_NOT_OK(data_->unsupported);
  bc::ClientBuilder b;
  b.master_server_addrs(data_->masters);
  if (data_->admin_timeout.Initialized()) {
    b.default_admin_operation_timeout(ToMillis(data_->admin_timeout));
  }
  if (data_->rpc_timeout.Initialized()) b.default_rpc_timeout(ToMillis(data_->rpc_timeout));
  std::shared_ptr<bc::Client> c;
  KUDU_RETURN_NOT_OK(FromAbsl(b.Build(&c)));
  KuduClient* kc =
      Access::MakeClient(std::move(c), data_->negotiation_timeout, data_->masters.size() > 1);
  client->reset(kc);
  return Status::OK();
}

// ---- KuduClient -------------------------------------------------------------------------------

class KuduClient::Data {
 public:
  std::shared_ptr<bc::Client> client;
  MonoDelta admin_timeout;
  MonoDelta rpc_timeout;
  MonoDelta negotiation_timeout;
  bool multi_master = false;
  // Runs FlushAsync callbacks of this client's sessions. Declared last: released first; drained
  // and joined then, or by the last FlushAsync completion holding it (Basalt may run one after
  // the session and the client are gone).
  std::shared_ptr<CallbackRunner> callbacks = std::make_shared<CallbackRunner>();
};

const uint64_t KuduClient::kNoTimestamp = 0;

KuduClient::KuduClient() : data_(new Data) {}
KuduClient::~KuduClient() { delete data_; }

KuduTableCreator* KuduClient::NewTableCreator() { return new KuduTableCreator(this); }

Status KuduClient::IsCreateTableInProgress(const std::string& table_name,
                                           bool* create_in_progress) {
  return FromAbsl(data_->client->IsCreateTableInProgress(table_name, create_in_progress));
}

Status KuduClient::DeleteTable(const std::string& table_name) {
  return FromAbsl(data_->client->DeleteTable(table_name));
}

Status KuduClient::SoftDeleteTable(const std::string& table_name, uint32_t reserve_seconds) {
  return NotInBasalt("soft deletion of tables");
}

Status KuduClient::RecallTable(const std::string& table_id, const std::string& new_table_name) {
  return NotInBasalt("recalling soft-deleted tables");
}

KuduTableAlterer* KuduClient::NewTableAlterer(const std::string& table_name) {
  return new KuduTableAlterer(this, table_name);
}

Status KuduClient::IsAlterTableInProgress(const std::string& table_name, bool* alter_in_progress) {
  return FromAbsl(data_->client->IsAlterTableInProgress(table_name, alter_in_progress));
}

Status KuduClient::GetTableSchema(const std::string& table_name, KuduSchema* schema) {
  bc::Schema s;
  KUDU_RETURN_NOT_OK(FromAbsl(data_->client->GetTableSchema(table_name, &s)));
  *schema = Access::MakeSchema(s);
  return Status::OK();
}

Status KuduClient::ListTabletServers(std::vector<KuduTabletServer*>* tablet_servers) {
  std::vector<bc::TabletServerInfo> servers;
  KUDU_RETURN_NOT_OK(FromAbsl(data_->client->ListTabletServers(&servers)));
  tablet_servers->clear();
  for (const bc::TabletServerInfo& ts : servers) {
    tablet_servers->push_back(Access::MakeTabletServer(ts));
  }
  return Status::OK();
}

Status KuduClient::ListTables(std::vector<std::string>* tables, const std::string& filter) {
  return FromAbsl(data_->client->ListTables(tables, filter));
}

Status KuduClient::ListSoftDeletedTables(std::vector<std::string>* tables,
                                         const std::string& filter) {
  return NotInBasalt("soft deletion of tables");
}

Status KuduClient::TableExists(const std::string& table_name, bool* exists) {
  return FromAbsl(data_->client->TableExists(table_name, exists));
}

Status KuduClient::OpenTable(const std::string& table_name, sp::shared_ptr<KuduTable>* table) {
  std::shared_ptr<bc::Table> t;
  KUDU_RETURN_NOT_OK(FromAbsl(data_->client->OpenTable(table_name, &t)));
  *table = Access::MakeTable(shared_from_this(), std::move(t));
  return Status::OK();
}

sp::shared_ptr<KuduSession> KuduClient::NewSession() {
  return sp::shared_ptr<KuduSession>(
      Access::MakeSession(shared_from_this(), data_->client->NewSession()));
}

bool KuduClient::IsMultiMaster() const { return data_->multi_master; }
const MonoDelta& KuduClient::default_admin_operation_timeout() const {
  return data_->admin_timeout;
}
const MonoDelta& KuduClient::default_rpc_timeout() const { return data_->rpc_timeout; }
MonoDelta KuduClient::connection_negotiation_timeout() const { return data_->negotiation_timeout; }
uint64_t KuduClient::GetLatestObservedTimestamp() const {
  return data_->client->GetLatestObservedTimestamp();
}
void KuduClient::SetLatestObservedTimestamp(uint64_t ht_timestamp) {
  data_->client->SetLatestObservedTimestamp(ht_timestamp);
}
Status KuduClient::ExportAuthenticationCredentials(std::string* authn_creds) const {
  return NotInBasalt("authentication credentials");
}

// ---- KuduTabletServer -------------------------------------------------------------------------

class KuduTabletServer::Data {
 public:
  bc::TabletServerInfo info;
};

KuduTabletServer::KuduTabletServer() : data_(new Data) {}
KuduTabletServer::~KuduTabletServer() { delete data_; }
const std::string& KuduTabletServer::uuid() const { return data_->info.uuid; }
const std::string& KuduTabletServer::hostname() const { return data_->info.hostname; }
uint16_t KuduTabletServer::port() const { return data_->info.port; }

namespace internal {

KuduClient* Access::MakeClient(std::shared_ptr<bc::Client> client,
                               const MonoDelta& negotiation_timeout, bool multi_master) {
  auto* kc = new KuduClient();
  kc->data_->admin_timeout = FromMillis(client->default_admin_operation_timeout());
  kc->data_->rpc_timeout = FromMillis(client->default_rpc_timeout());
  kc->data_->negotiation_timeout = negotiation_timeout;
  kc->data_->multi_master = multi_master;
  kc->data_->client = std::move(client);
  return kc;
}

bc::Client* Access::Basalt(const KuduClient* client) { return client->data_->client.get(); }

std::shared_ptr<CallbackRunner> Access::Callbacks(KuduClient* client) {
  return client->data_->callbacks;
}

KuduTabletServer* Access::MakeTabletServer(const bc::TabletServerInfo& info) {
  auto* ts = new KuduTabletServer();
  ts->data_->info = info;
  return ts;
}

}  // namespace internal
}  // namespace client
}  // namespace kudu
