#pragma once

// Helpers for the cluster tests that go through the client library: the test table
// (key INT32 PRIMARY KEY, int_val INT32 NOT NULL, string_val STRING NULL), writes of each kind,
// scans into rows, and a fixture with a running cluster and a connected client.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "common/status_test_util.h"
#include "testing/external_mini_cluster.h"

namespace basalt::client_test {

// The shared assertion (common/status_test_util.h) under the short name these tests use.
#define ASSERT_OK(expr) BASALT_ASSERT_OK(expr)

// A row of the test table.
struct Row {
  int32_t key = 0;
  int32_t int_val = 0;
  std::optional<std::string> string_val;
  bool operator==(const Row& other) const = default;
};

// The contents tests write for `key`: int_val = 2 * key, string_val "v<key>", NULL for every
// seventh key.
Row Expected(int32_t key);
std::string ToString(const Row& r);
std::vector<Row> SortedByKey(std::vector<Row> rows);
// "got N rows, want M; first difference at i: (...) vs (...)".
std::string Diff(const std::vector<Row>& got, const std::vector<Row>& want);

// Applies one operation of `type` for `row` to `session` (delete-like: key only; the others:
// every column). Returns what Session::Apply returns.
absl::Status ApplyOp(client::Session* session, client::Table* table,
                     client::WriteOperation::Type type, const Row& row);

// Scans `table` (every column unless `configure` sets a projection; an empty projection gives
// rows with only the count meaningful) after `configure`, appending the rows in the order the
// scanner returned them. Columns outside the projection are left at their defaults (0, NULL).
// *snapshot (if given) gets the scanner's snapshot.
absl::Status ScanRows(client::Table* table,
                      const std::function<absl::Status(client::Scanner*)>& configure,
                      std::vector<Row>* rows, uint64_t* snapshot = nullptr);

// The value of counter `series` (name and labels, as /metrics prints them) on daemon `d`; 0 when
// it does not exist yet (no event so far).
absl::StatusOr<int64_t> CounterValue(ExternalDaemon* d, const std::string& series);

// A running cluster (1 master, 3 tablet servers, 200 ms Raft ticks) and a client connected to it;
// checks in TearDown that no daemon died, keeps the cluster directory when the test failed, and
// logs how long the test took.
class ClientClusterTestBase : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // The cluster SetUp starts; fixtures override it for other shapes.
  virtual ExternalMiniClusterOptions ClusterOptions() const;

  // Creates and opens table `name`: hash(key) x `hash_buckets` (none for 0), range(key) split at
  // `splits`, 3 replicas. Fails the test on error (use ASSERT_NO_FATAL_FAILURE).
  void CreateTable(const std::string& name, int hash_buckets, const std::vector<int32_t>& splits,
                   std::shared_ptr<client::Table>* table);
  // The ids of the tablets of table `name`, as the running tablet servers list them.
  std::vector<std::string> TabletIds(const std::string& name);

  absl::Time start_;
  std::unique_ptr<ExternalMiniCluster> cluster_;
  std::shared_ptr<client::Client> client_;
};

}  // namespace basalt::client_test
