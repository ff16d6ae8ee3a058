// Writes and scans over the tablet servers' frame RPC ports (docs/frame_rpc.md): a client uses
// them by default, and gRPC when it is built without frame RPC or a server offers no frame port.
// Which transport carried the calls is read from the servers' RPC metrics.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "client/client.h"
#include "common/status_macros.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "testing/external_mini_cluster.h"
#include "tests/client_test_util.h"

namespace basalt::client_test {
namespace {
namespace client_frame_rpc_test_file {

using client::Client;
using client::ClientBuilder;
using client::Predicate;
using client::Scanner;
using client::Session;
using client::Table;
using client::Value;
using client::WriteOperation;

constexpr int32_t kRows = 3000;

// basalt_rpc_requests_total of `method` ("Write", "Scan", ... of TabletServerService, or a full
// "Service/Method") over gRPC, or over frame RPC when `frame`.
std::string Series(const std::string& method, bool frame) {
  const std::string path = absl::StrContains(method, "/")
                               ? StrCat("/basalt.pb.", method)
                               : StrCat("/basalt.pb.TabletServerService/", method);
  return StrCat("basalt_rpc_requests_total{method=\"", frame ? "frame:" : "", path, "\"}");
}

// Calls of `method` over one transport, summed over the tablet servers.
int64_t Calls(ExternalMiniCluster* cluster, const std::string& method, bool frame) {
  int64_t sum = 0;
  for (int i = 0; i < cluster->num_tablet_servers(); ++i) {
    absl::StatusOr<int64_t> v = CounterValue(cluster->tablet_server(i), Series(method, frame));
    EXPECT_TRUE(v.ok()) << v.status();
    sum += v.value_or(0);
  }
  return sum;
}

struct CallCounts {
  int64_t frame_writes, frame_scans, grpc_writes, grpc_scans;
};

CallCounts Count(ExternalMiniCluster* cluster) {
  return {Calls(cluster, "Write", true), Calls(cluster, "Scan", true),
          Calls(cluster, "Write", false), Calls(cluster, "Scan", false)};
}

// Inserts keys [first, first + kRows) in batches of 500 and reads them back: a full scan in small
// batches (server-side scanner continued and kept alive), and a point lookup.
void WriteAndRead(Client* client, const std::string& table_name, int32_t first) {
  std::shared_ptr<Table> table;
  ASSERT_OK(client->OpenTable(table_name, &table));
  auto session = client->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::MANUAL_FLUSH));
  for (int32_t k = first; k < first + kRows; ++k) {
    ASSERT_OK(ApplyOp(session.get(), table.get(), WriteOperation::INSERT, Expected(k)));
    if ((k + 1) % 500 == 0) {
      ASSERT_OK(session->Flush());
    }
  }
  ASSERT_OK(session->Flush());
  ASSERT_EQ(session->CountPendingErrors(), 0);

  std::vector<Row> rows;
  ASSERT_OK(ScanRows(
      table.get(),
      [&](Scanner* sc) {
        BASALT_RETURN_IF_ERROR(sc->SetReadMode(Scanner::READ_YOUR_WRITES));
        BASALT_RETURN_IF_ERROR(sc->SetBatchSizeBytes(4096));
        BASALT_RETURN_IF_ERROR(sc->AddConjunctPredicate(
            table->NewComparisonPredicate("key", Predicate::GREATER_EQUAL, Value::FromInt(first))));
        return sc->AddConjunctPredicate(
            table->NewComparisonPredicate("key", Predicate::LESS, Value::FromInt(first + kRows)));
      },
      &rows));
  rows = SortedByKey(std::move(rows));
  std::vector<Row> want;
  for (int32_t k = first; k < first + kRows; ++k) want.push_back(Expected(k));
  EXPECT_EQ(rows, want) << Diff(rows, want);

  rows.clear();
  const int32_t key = first + kRows / 2;
  ASSERT_OK(ScanRows(
      table.get(),
      [&](Scanner* sc) {
        BASALT_RETURN_IF_ERROR(sc->SetReadMode(Scanner::READ_YOUR_WRITES));
        return sc->AddConjunctPredicate(
            table->NewComparisonPredicate("key", Predicate::EQUAL, Value::FromInt(key)));
      },
      &rows));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], Expected(key));
}

using ClientFrameRpcTest = ClientClusterTestBase;

TEST_F(ClientFrameRpcTest, WritesAndScansGoOverFramePortsUnlessTheClientSaysNo) {
  std::shared_ptr<Table> table;
  ASSERT_NO_FATAL_FAILURE(CreateTable("framed", 3, {}, &table));

  const CallCounts before = Count(cluster_.get());
  ASSERT_NO_FATAL_FAILURE(WriteAndRead(client_.get(), "framed", 0));
  const CallCounts framed = Count(cluster_.get());
  // 6 flushes of up to 3 tablets; a scan of 3 tablets in several batches; a lookup.
  EXPECT_GE(framed.frame_writes - before.frame_writes, 6);
  EXPECT_GE(framed.frame_scans - before.frame_scans, 6);
  EXPECT_EQ(framed.grpc_writes, before.grpc_writes) << "a write went over gRPC";
  EXPECT_EQ(framed.grpc_scans, before.grpc_scans) << "a scan went over gRPC";
  // Replication between the tablet servers goes over their frame ports too.
  EXPECT_GT(Calls(cluster_.get(), "ConsensusService/UpdateConsensus", true), 0);

  // A client built without frame RPC: the same calls, over gRPC only.
  std::shared_ptr<Client> grpc_client;
  ASSERT_OK(ClientBuilder()
                .add_master_server_addr(cluster_->master_addresses())
                .use_frame_rpc(false)
                .Build(&grpc_client));
  ASSERT_NO_FATAL_FAILURE(WriteAndRead(grpc_client.get(), "framed", kRows));
  const CallCounts grpc = Count(cluster_.get());
  EXPECT_EQ(grpc.frame_writes, framed.frame_writes) << "a write went over frame RPC";
  EXPECT_EQ(grpc.frame_scans, framed.frame_scans) << "a scan went over frame RPC";
  EXPECT_GE(grpc.grpc_writes - framed.grpc_writes, 6);
  EXPECT_GE(grpc.grpc_scans - framed.grpc_scans, 6);
}

// Tablet servers started with --frame_rpc_port=-1 advertise no frame port: clients use gRPC.
class ClientWithoutFramePortsTest : public ClientClusterTestBase {
 protected:
  ExternalMiniClusterOptions ClusterOptions() const override {
    ExternalMiniClusterOptions o = ClientClusterTestBase::ClusterOptions();
    o.extra_tserver_flags.push_back("--frame_rpc_port=-1");
    return o;
  }
};

TEST_F(ClientWithoutFramePortsTest, ServersWithoutFramePortsAreCalledOverGrpc) {
  std::shared_ptr<Table> table;
  ASSERT_NO_FATAL_FAILURE(CreateTable("plain", 3, {}, &table));
  ASSERT_NO_FATAL_FAILURE(WriteAndRead(client_.get(), "plain", 0));
  const CallCounts c = Count(cluster_.get());
  EXPECT_EQ(c.frame_writes, 0);
  EXPECT_EQ(c.frame_scans, 0);
  EXPECT_EQ(Calls(cluster_.get(), "ConsensusService/UpdateConsensus", true), 0);
  EXPECT_GT(Calls(cluster_.get(), "ConsensusService/UpdateConsensus", false), 0);
  EXPECT_GE(c.grpc_writes, 6);
  EXPECT_GE(c.grpc_scans, 6);
}

}  // namespace client_frame_rpc_test_file
}  // namespace
}  // namespace basalt::client_test
