#pragma once

// ReplicatedTabletTest: a test fixture of tablet servers in one process over real gRPC on loopback,
// some of which host a replicated tablet of the test schema (tserver_test_util.h), with helpers to
// find the leader, write, and compare replicas. Test-only; included by *_test.cc.

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <glog/logging.h>
#include <gtest/gtest.h>

#include "common/status_test_util.h"
#include "tserver/tablet_replica.h"
#include "tserver/tablet_server.h"
#include "tserver/ts_tablet_manager.h"
#include "tserver/tserver_test_util.h"

namespace basalt {

inline constexpr char kTablet[] = "tablet-r3";

// `num_servers` tablet servers in this process; the first `num_replicas` of them host kTablet.
class ReplicatedTabletTest : public ::testing::Test {
 protected:
  ReplicatedTabletTest(int num_servers, int num_replicas)
      : num_servers_(num_servers), num_replicas_(num_replicas), schema_(TestSchema()) {
    for (int i = 0; i < num_servers_; ++i) {
      dirs_.push_back(std::make_unique<TestDir>(StrCat("replicated_tablet_test_", i)));
    }
    servers_.resize(num_servers_);
    clients_.resize(num_servers_);
  }

  void SetUp() override {
    for (int i = 0; i < num_servers_; ++i) StartServer(i);
    pb::CreateTabletRequestPB req = CreateTabletRequest(kTablet, Peers());
    // The first-listed replica (server 0) campaigns one 20 ms tick after it starts: it is
    // created last, so that the others are there to vote and to take its first appends.
    for (int i = num_replicas_ - 1; i >= 0; --i) {
      req.set_dest_uuid(servers_[i]->uuid());
      absl::Status s = clients_[i]->CreateTablet(req);
      BASALT_ASSERT_OK(s);
    }
  }

  void StartServer(int i) {
    TabletServerOptions o = TestServerOptions(dirs_[i]->path());
    // Elections after 300-600 ms of silence: rare spurious ones on a loaded 2-core machine.
    o.raft_election_ticks = 15;
    servers_[i] = std::make_unique<TabletServer>(o);
    BASALT_ASSERT_OK(servers_[i]->Start());
    // A restarted server has a new port: tell the others, and tell it theirs (as the master's
    // heartbeat responses would).
    for (int j = 0; j < num_servers_; ++j) {
      if (j != i && servers_[j] != nullptr) {
        servers_[j]->address_book()->Set(servers_[i]->uuid(), servers_[i]->advertised_address());
        servers_[i]->address_book()->Set(servers_[j]->uuid(), servers_[j]->advertised_address());
      }
    }
    clients_[i] = std::make_unique<TsClient>(servers_[i]->advertised_address().ToString());
  }

  void StopServer(int i) {
    clients_[i].reset();
    servers_[i].reset();
  }

  // The initial replicas.
  std::vector<std::pair<std::string, HostPort>> Peers() const {
    std::vector<std::pair<std::string, HostPort>> peers;
    for (int i = 0; i < num_replicas_; ++i) {
      peers.push_back({servers_[i]->uuid(), servers_[i]->advertised_address()});
    }
    return peers;
  }

  // The replica on server i, which must have one (the test fails with the status otherwise).
  std::shared_ptr<TabletReplica> Replica(int i) {
    absl::StatusOr<std::shared_ptr<TabletReplica>> r =
        servers_[i]->tablet_manager()->Lookup(kTablet);
    CHECK(r.ok()) << "server " << i << " has no replica of " << kTablet << ": " << r.status();
    return *r;
  }

  // The replica on server i, or null while it has none (stopped, or its replica is being
  // replaced by a tablet copy): what loops that wait for a state use.
  std::shared_ptr<TabletReplica> MaybeReplica(int i) {
    if (servers_[i] == nullptr) return nullptr;
    absl::StatusOr<std::shared_ptr<TabletReplica>> r =
        servers_[i]->tablet_manager()->Lookup(kTablet);
    return r.ok() ? *r : nullptr;
  }

  // The index of the server whose replica leads (and is ready), or -1.
  int WaitForLeader(const std::set<int>& alive = {0, 1, 2}) {
    int leader = -1;
    WaitFor([&] {
      for (int i : alive) {
        auto r = MaybeReplica(i);
        if (r == nullptr) continue;
        if (r->raft()->role() == RaftCore::Role::kLeader && r->GetStatus().last_applied_index > 0 &&
            r->raft()->commit_index() == r->raft()->applied_index()) {
          leader = i;
          return true;
        }
      }
      return false;
    });
    return leader;
  }

  // Runs fn(leader index) against the current leader among `alive`, again on a new leader while
  // the answer is UNAVAILABLE (not the leader, or not ready yet); returns its last status.
  template <typename Fn>
  absl::Status OnLeader(Fn fn, const std::set<int>& alive = {0, 1, 2}) {
    absl::Status s = absl::UnavailableError("no leader");
    WaitFor([&] {
      const int leader = WaitForLeader(alive);
      if (leader < 0) return false;
      s = fn(leader);
      return !absl::IsUnavailable(s);
    });
    return s;
  }

  // Inserts keys [from, to) through the leader; the write's timestamp in *ts.
  absl::Status Insert(int32_t from, int32_t to, uint64_t* ts = nullptr,
                      const std::set<int>& alive = {0, 1, 2}) {
    WriteBuilder w(&schema_);
    for (int32_t k = from; k < to; ++k) w.Insert(k);
    pb::WriteResponsePB resp;
    BASALT_RETURN_IF_ERROR(OnLeader(
        [&](int leader) {
          resp.Clear();
          return clients_[leader]->Write(w.Build(kTablet), &resp);
        },
        alive));
    if (resp.per_row_errors_size() > 0) {
      return absl::InternalError(resp.per_row_errors(0).error().message());
    }
    if (ts != nullptr) *ts = resp.timestamp();
    return absl::OkStatus();
  }

  // The index every live replica must reach to hold everything written so far.
  uint64_t LeaderAppliedIndex(const std::set<int>& alive = {0, 1, 2}) {
    const int leader = WaitForLeader(alive);
    return leader < 0 ? 0 : Replica(leader)->GetStatus().last_applied_index;
  }

  bool WaitForApplied(int i, uint64_t index) {
    return WaitFor([&] {
      auto r = MaybeReplica(i);
      return r != nullptr && r->GetStatus().last_applied_index >= index;
    });
  }

  absl::StatusOr<pb::ChecksumResponsePB> Checksum(int i, uint64_t snap) {
    pb::ChecksumRequestPB req;
    req.set_tablet_id(kTablet);
    req.set_snap_timestamp(snap);
    pb::ChecksumResponsePB resp;
    BASALT_RETURN_IF_ERROR(clients_[i]->Checksum(req, &resp));
    return resp;
  }

  absl::StatusOr<int64_t> CountRows(int i) {
    pb::ScanRequestPB req;
    req.mutable_new_scan_request()->set_tablet_id(kTablet);
    pb::ScanResponsePB resp;
    BASALT_RETURN_IF_ERROR(clients_[i]->Scan(req, &resp));
    if (resp.has_more_results()) return absl::InternalError("more than one batch");
    return resp.data().num_rows();
  }

  const int num_servers_;
  const int num_replicas_;
  Schema schema_;
  std::vector<std::unique_ptr<TestDir>> dirs_;
  std::vector<std::unique_ptr<TabletServer>> servers_;
  std::vector<std::unique_ptr<TsClient>> clients_;
};

}  // namespace basalt
