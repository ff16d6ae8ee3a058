// Changing the set of masters of a running cluster (docs/master.md "Adding and removing
// masters"): `basalt master add` a fourth master (it joins, gets the catalog image, becomes a
// voter), `basalt master remove` the leader, kill the new leader: DDL and clients keep working.

#include <gtest/gtest.h>

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "client/client.h"
#include "common/status_macros.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "proto/master.grpc.pb.h"
#include "rpc/rpc_status.h"
#include "testing/external_mini_cluster.h"
#include "testing/wait.h"
#include "tests/cli_test_util.h"
#include "tests/client_test_util.h"

namespace basalt::client_test {
namespace {
namespace client_master_membership_test_file {

using client::Client;
using client::ClientBuilder;
using client::Table;

class MasterMembershipTest : public ClientClusterTestBase {
 protected:
  ExternalMiniClusterOptions ClusterOptions() const override {
    ExternalMiniClusterOptions o = ClientClusterTestBase::ClusterOptions();
    o.num_masters = 3;
    return o;
  }

  absl::StatusOr<pb::ListMastersResponsePB> ListMasters(int idx) {
    auto stub = pb::MasterService::NewStub(cluster_->master_channel(idx));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    pb::ListMastersResponsePB resp;
    BASALT_RETURN_IF_ERROR(
        FromGrpcStatus(stub->ListMasters(&ctx, pb::ListMastersRequestPB(), &resp)));
    return resp;
  }

  // Roles by uuid as master `idx` lists them.
  std::map<std::string, pb::RaftRolePB> Roles(int idx) {
    std::map<std::string, pb::RaftRolePB> out;
    auto resp = ListMasters(idx);
    BASALT_EXPECT_OK(resp);
    if (!resp.ok()) return out;
    for (const auto& m : resp->masters()) out[m.uuid()] = m.role();
    return out;
  }

  // Writes keys [begin, end) and checks that the table holds exactly [0, end).
  void WriteAndCheck(Client* client, const std::string& name, int32_t begin, int32_t end) {
    std::shared_ptr<Table> table;
    ASSERT_OK(client->OpenTable(name, &table));
    auto session = client->NewSession();
    ASSERT_OK(session->SetFlushMode(client::Session::AUTO_FLUSH_BACKGROUND));
    for (int32_t k = begin; k < end; ++k) {
      ASSERT_OK(ApplyOp(session.get(), table.get(), client::WriteOperation::INSERT, Expected(k)));
    }
    ASSERT_OK(session->Flush());
    std::vector<Row> rows;
    ASSERT_OK(ScanRows(table.get(), nullptr, &rows));
    std::vector<Row> want;
    for (int32_t k = 0; k < end; ++k) want.push_back(Expected(k));
    EXPECT_EQ(SortedByKey(rows), want) << Diff(SortedByKey(rows), want);
  }
};

TEST_F(MasterMembershipTest, AddRemoveThenKillTheLeader) {
  std::shared_ptr<Table> table;
  ASSERT_NO_FATAL_FAILURE(CreateTable("before", 2, {}, &table));
  ASSERT_NO_FATAL_FAILURE(WriteAndCheck(client_.get(), "before", 0, 100));
  const std::string old_addresses = cluster_->master_addresses();
  const std::string scratch = cluster_->root_dir();

  // A fourth master, started with every address: it waits to join.
  auto added = cluster_->AddMaster();
  ASSERT_OK(added.status());
  const std::string new_uuid = cluster_->master(*added)->uuid();
  {
    auto resp = ListMasters(*added);
    ASSERT_OK(resp.status());
  }

  // Bad inputs change nothing: a master nobody runs, one already in the group.
  CliResult r =
      RunBasalt({"master", "add", old_addresses, "127.0.0.1:1", "--timeout_ms=5000"}, scratch);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("rpc_address"), std::string::npos) << r.err;
  r = RunBasalt({"master", "add", old_addresses, cluster_->master(0)->rpc_address()}, scratch);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("already in the catalog group"), std::string::npos) << r.err;
  r = RunBasalt({"master", "remove", old_addresses, "0123456789abcdef0123456789abcdef"}, scratch);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("no master"), std::string::npos) << r.err;
  EXPECT_EQ(Roles(0).size(), 3u);

  // Added: it gets the catalog and becomes a voter.
  r = RunBasalt({"master", "add", old_addresses, cluster_->master(*added)->rpc_address(),
                 "--timeout_ms=60000"},
                scratch);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("is a voter"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(cluster_->master(*added)->rpc_address()), std::string::npos) << r.out;
  for (int i = 0; i <= *added; ++i) {
    std::map<std::string, pb::RaftRolePB> roles = Roles(i);
    EXPECT_EQ(roles.size(), 4u) << "master " << i;
  }
  // It got the catalog as an image from the leader (not by replaying the leader's whole log).
  EXPECT_NE(ReadAll(cluster_->master(*added)->log_path()).find("installing the catalog image"),
            std::string::npos)
      << cluster_->master(*added)->LogTail();

  // Running tablet servers heartbeat the new master without a restart (it may lead later).
  for (int i = 0; i < cluster_->num_tablet_servers(); ++i) {
    ASSERT_OK(WaitFor(absl::Seconds(10), "the tablet server to heartbeat the new master", [&] {
      return ReadAll(cluster_->tablet_server(i)->log_path())
                         .find("heartbeating master " + new_uuid) != std::string::npos
                 ? absl::OkStatus()
                 : absl::UnavailableError(cluster_->tablet_server(i)->LogTail(5));
    }));
  }

  // Remove the current leader: it hands over first.
  auto leader = cluster_->WaitForLeaderMaster(absl::Seconds(30));
  ASSERT_OK(leader.status());
  const std::string removed_uuid = cluster_->master(*leader)->uuid();
  r = RunBasalt(
      {"master", "remove", cluster_->master_addresses(), removed_uuid, "--timeout_ms=60000"},
      scratch);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(StrCat("removed master ", removed_uuid)), std::string::npos) << r.out;
  EXPECT_NE(ReadAll(cluster_->master(*leader)->log_path()).find("handing the leadership to"),
            std::string::npos)
      << cluster_->master(*leader)->LogTail();
  ASSERT_OK(cluster_->master(*leader)->Shutdown());
  const int removed = *leader;

  // Three voters left; kill the leader among them: two of three still elect one.
  leader = cluster_->WaitForLeaderMaster(absl::Seconds(30));
  ASSERT_OK(leader.status());
  ASSERT_NE(*leader, removed);
  std::map<std::string, pb::RaftRolePB> roles = Roles(*leader);
  EXPECT_EQ(roles.size(), 3u);
  EXPECT_EQ(roles.count(removed_uuid), 0u);
  EXPECT_EQ(roles.count(new_uuid), 1u);
  cluster_->master(*leader)->Kill();
  const int killed = *leader;

  // A client that knows every address: DDL and writes work, and the old table is intact.
  std::shared_ptr<Client> client;
  ASSERT_OK(ClientBuilder().add_master_server_addr(cluster_->master_addresses()).Build(&client));
  ASSERT_NO_FATAL_FAILURE(WriteAndCheck(client.get(), "before", 100, 150));
  auto creator = client->NewTableCreator();
  client::Schema schema;
  ASSERT_OK(client->GetTableSchema("before", &schema));
  ASSERT_OK(creator->table_name("after")
                .schema(&schema)
                .add_hash_partitions({"key"}, 2)
                .num_replicas(3)
                .Create());
  ASSERT_NO_FATAL_FAILURE(WriteAndCheck(client.get(), "after", 0, 50));

  // The killed master restarts with the group's new list and catches up.
  std::vector<std::string> group;
  for (int i = 0; i < cluster_->num_masters(); ++i) {
    if (i != removed) group.push_back(cluster_->master(i)->rpc_address());
  }
  // A later flag overrides an earlier one.
  ASSERT_OK(cluster_->master(killed)->Restart({"--master_addresses=" + absl::StrJoin(group, ",")}));
  ASSERT_OK(WaitFor(absl::Seconds(30), "the restarted master to see the table", [&] {
    auto resp = ListMasters(killed);
    if (!resp.ok()) return resp.status();
    for (const auto& m : resp->masters()) {
      if (m.uuid() == cluster_->master(killed)->uuid() &&
          (m.role() == pb::FOLLOWER || m.role() == pb::LEADER)) {
        return absl::OkStatus();
      }
    }
    return absl::UnavailableError("not a voter yet");
  }));
}

}  // namespace client_master_membership_test_file
}  // namespace
}  // namespace basalt::client_test
