// The block scrubber with real processes (docs/tserver.md "Block scrubber"): a byte that rots in
// a data block of one replica of a three-replica tablet is found by that server's scrubber, the
// replica goes FAILED, and the master replaces it on the fourth server from a healthy peer.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "common/env.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "rpc/rpc_status.h"
#include "testing/external_mini_cluster.h"
#include "testing/wait.h"
#include "tests/block_files_util.h"
#include "tests/cluster_test_util.h"

namespace basalt::cluster_test {
namespace {
namespace block_scrub_cluster_test_file {

constexpr absl::Duration kTimeout = absl::Seconds(90);

// The tablet servers reporting a replica of `tablet_id` in state `state`.
std::set<int> ServersWith(ExternalMiniCluster* cluster, const std::string& tablet_id,
                          pb::TabletStatePB state) {
  std::set<int> out;
  for (int ts = 0; ts < cluster->num_tablet_servers(); ++ts) {
    pb::ListTabletsResponsePB listing;
    if (!cluster->ListTablets(ts, &listing).ok()) continue;
    for (const auto& t : listing.tablets()) {
      if (t.tablet_id() == tablet_id && t.state() == state) out.insert(ts);
    }
  }
  return out;
}

TEST(BlockScrubClusterTest, AFlippedByteFailsTheReplicaAndTheMasterReplacesIt) {
  ExternalMiniClusterOptions o;
  o.num_tablet_servers = 4;
  // Flushes a second after a write; the scrubber passes over every block every second.
  o.extra_tserver_flags = {"--raft_heartbeat_interval_ms=200", "--flush_threshold_secs=1",
                           "--scrub_bytes_per_sec=1073741824", "--scrub_interval_sec=1"};
  ExternalMiniCluster cluster(o);
  BASALT_ASSERT_OK(cluster.Start());
  TestTableSpec spec;
  spec.name = "scrub";
  spec.hash_buckets = 0;
  auto table = TestTable::Create(&cluster, spec, kTimeout);
  BASALT_ASSERT_OK(table);
  const TabletInfo tablet = (*table)->tablets()[0];
  std::vector<TestRow> rows = MakeRows(0, 2000);
  BASALT_ASSERT_OK((*table)->Write(RowOperationType::kInsert, rows, kTimeout));

  // A follower's replica, once flushed, gets a flipped byte in its int_val column file.
  auto leader = cluster.WaitForTabletLeader(tablet.tablet_id, kTimeout);
  BASALT_ASSERT_OK(leader);
  int victim = -1;
  std::set<int> holders;
  for (const std::string& uuid : tablet.replica_uuids) {
    const int ts = cluster.TabletServerIndexByUuid(uuid);
    holders.insert(ts);
    if (ts != leader->ts_index) victim = ts;
  }
  ASSERT_GE(victim, 0);
  ASSERT_EQ(holders.size(), 3u);
  int spare = -1;
  for (int ts = 0; ts < 4; ++ts) {
    if (!holders.contains(ts)) spare = ts;
  }
  const std::string dir = cluster.tablet_server(victim)->data_dir();
  uint64_t block = 0;
  BASALT_ASSERT_OK(WaitFor(kTimeout, "the victim's flush", [&]() -> absl::Status {
    auto sb = ReadTabletSuperBlock(dir, tablet.tablet_id);
    if (!sb.ok()) return sb.status();
    if (sb->rowsets.empty()) return absl::UnavailableError("no rowset yet");
    block = sb->rowsets[0].column_blocks[1].second.value();  // int_val.
    return absl::OkStatus();
  }));
  const std::string path = BlockFilePath(dir, block);
  std::string bytes;
  BASALT_ASSERT_OK(ReadFileToString(Env::Default(), path, &bytes));
  bytes[bytes.size() / 3] ^= 0x10;
  // In place (same inode, as rot on disk would be), not synced: the page cache serves reads.
  BASALT_ASSERT_OK(WriteStringToFile(Env::Default(), path, bytes, /*sync=*/false));
  LOG(INFO) << "flipped a byte of block " << path << " on ts " << victim;

  // The victim's scrubber fails the replica...
  BASALT_ASSERT_OK(WaitFor(kTimeout, "the victim's replica to fail", [&] {
    return ServersWith(&cluster, tablet.tablet_id, pb::TABLET_FAILED).contains(victim)
               ? absl::OkStatus()
               : absl::UnavailableError("not failed");
  }));
  auto found = ScrapeCounter(*cluster.tablet_server(victim), "basalt_scrub_corruptions_total");
  BASALT_ASSERT_OK(found);
  EXPECT_EQ(*found, 1);
  // ... and the master replaces it on the spare server: three running replicas, the victim's gone.
  std::set<int> running;
  BASALT_ASSERT_OK(WaitFor(kTimeout, "a replacement on the spare server", [&] {
    running = ServersWith(&cluster, tablet.tablet_id, pb::TABLET_RUNNING);
    return running.size() == 3 && running.contains(spare) && !running.contains(victim)
               ? absl::OkStatus()
               : absl::UnavailableError(StrCat(running.size(), " running replicas"));
  }));
  BASALT_ASSERT_OK(WaitFor(kTimeout, "the failed replica to be deleted", [&] {
    return ServersWith(&cluster, tablet.tablet_id, pb::TABLET_FAILED).empty()
               ? absl::OkStatus()
               : absl::UnavailableError("still failed");
  }));
  // The new replica holds every row, the same as its peers.
  auto new_leader = cluster.WaitForTabletLeader(tablet.tablet_id, kTimeout, 0, victim);
  BASALT_ASSERT_OK(new_leader);
  auto ref = ChecksumReplica(&cluster, new_leader->ts_index, tablet.tablet_id, 0);
  BASALT_ASSERT_OK(ref);
  EXPECT_EQ(ref->num_rows(), rows.size());
  for (int ts : running) {
    absl::StatusOr<pb::ChecksumResponsePB> c;
    BASALT_ASSERT_OK(WaitFor(kTimeout, StrCat("the checksum of ts ", ts), [&] {
      c = ChecksumReplica(&cluster, ts, tablet.tablet_id, ref->snap_timestamp());
      return c.status();
    }));
    EXPECT_EQ(c->checksum(), ref->checksum()) << "ts " << ts;
  }
  if (HasFailure()) cluster.set_keep_root_dir(true);
}

}  // namespace block_scrub_cluster_test_file
}  // namespace
}  // namespace basalt::cluster_test
