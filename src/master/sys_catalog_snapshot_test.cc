// Catalog images (docs/master.md "Catalog snapshots"): a group of three catalogs in one process;
// a master that was down while the leader garbage-collected its log is repaired by an image, a
// joining catalog installs one, bad images are refused, an interrupted install is cleaned up.

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/env.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "consensus/in_memory_transport.h"
#include "master/master_test_util.h"
#include "master/sys_catalog.h"
#include "proto/master_catalog.pb.h"

DECLARE_int32(log_segment_size_mb);
DECLARE_int32(log_max_segments_to_retain);

namespace basalt {
namespace {
namespace sys_catalog_snapshot_test_file {

using master_test::RecordingListener;

// Polls `fn` every 10 ms until OK; DEADLINE_EXCEEDED with its last error after `timeout`.
absl::Status WaitFor(absl::Duration timeout, std::string_view what,
                     const std::function<absl::Status()>& fn) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    absl::Status s = fn();
    if (s.ok()) return s;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(StrCat("waiting for ", what, ": ", s.message()));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
}

class SysCatalogSnapshotTest : public ::testing::Test {
 protected:
  static constexpr int kMasters = 3;

  void SetUp() override {
    FLAGS_log_segment_size_mb = 1;
    FLAGS_log_max_segments_to_retain = 1;
    for (int i = 0; i < kMasters; ++i) uuids_.push_back(StrCat("m", i));
  }
  void TearDown() override {
    for (auto& c : catalogs_) {
      if (c != nullptr) c->Shutdown();
    }
    FLAGS_log_segment_size_mb = 8;
    FLAGS_log_max_segments_to_retain = 80;
  }

  std::string Dir(int i) const { return JoinPath(tmp_.path(), StrCat("m", i)); }

  SysCatalogOptions Options(int i, bool joining) {
    SysCatalogOptions o;
    o.data_dir = Dir(i);
    o.wal_dir = Dir(i);
    o.uuid = StrCat("m", i);
    if (!joining) o.voters = uuids_;
    o.joining = joining;
    o.tick_interval_ms = 10;
    o.sync = false;  // Fast; crash behaviour is not what this tests.
    o.send_snapshot = [this](const std::string& peer, const pb::CatalogSnapshotPB& image) {
      absl::MutexLock l(&mu_);
      ++images_sent_;
      for (size_t j = 0; j < catalogs_.size(); ++j) {
        if (uuids_[j] == peer && catalogs_[j] != nullptr) {
          return catalogs_[j]->InstallSnapshot(image);
        }
      }
      return absl::UnavailableError(StrCat(peer, " is down"));
    };
    return o;
  }

  void Open(int i, bool joining = false) {
    if (catalogs_.size() <= static_cast<size_t>(i)) catalogs_.resize(i + 1);
    if (listeners_.size() <= static_cast<size_t>(i)) listeners_.resize(i + 1);
    listeners_[i] = std::make_unique<RecordingListener>();
    BASALT_ASSERT_OK(Env::Default()->CreateDirs(Dir(i)));
    auto c =
        SysCatalog::Open(Env::Default(), Options(i, joining), &transport_, listeners_[i].get());
    BASALT_ASSERT_OK(c.status());
    BASALT_ASSERT_OK((*c)->Start());
    absl::MutexLock l(&mu_);
    catalogs_[i] = *std::move(c);
  }

  void Close(int i) {
    std::unique_ptr<SysCatalog> c;
    {
      absl::MutexLock l(&mu_);
      c = std::move(catalogs_[i]);
    }
    c->Shutdown();
  }

  int Leader() {
    for (int attempt = 0; attempt < 1000; ++attempt) {
      for (size_t i = 0; i < catalogs_.size(); ++i) {
        if (catalogs_[i] != nullptr && catalogs_[i]->LeaderReadyTerm() != 0) return i;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    ADD_FAILURE() << "no leader";
    return 0;
  }

  // A batch of about 64 KiB, so that a few dozen fill the 1 MiB log segments.
  static pb::SysCatalogWriteBatchPB BigBatch(int n) {
    pb::SysCatalogWriteBatchPB b;
    auto* t = b.add_upsert_tables();
    t->set_table_id(StrCat("t", n));
    t->set_name(StrCat("table-", n, "-", std::string(64 << 10, 'x')));
    t->set_num_replicas(1);
    return b;
  }

  master_test::TempDir tmp_{"sys_catalog_snapshot_test"};
  std::vector<std::string> uuids_;
  InMemoryTransport transport_;
  absl::Mutex mu_;  // Guards the catalogs_ slots against send_snapshot.
  std::vector<std::unique_ptr<SysCatalog>> catalogs_;
  std::vector<std::unique_ptr<RecordingListener>> listeners_;
  int images_sent_ = 0;
};

TEST_F(SysCatalogSnapshotTest, MasterBehindTheCollectedLogGetsAnImage) {
  for (int i = 0; i < kMasters; ++i) ASSERT_NO_FATAL_FAILURE(Open(i));
  const int leader = Leader();
  const int down = (leader + 1) % kMasters;
  BASALT_ASSERT_OK(catalogs_[leader]->Write(BigBatch(0), absl::Seconds(10)));
  Close(down);
  // Past the time a leader waits for a silent peer before collecting the log under it.
  absl::SleepFor(absl::Seconds(4));
  for (int n = 1; n <= 40; ++n)
    BASALT_ASSERT_OK(catalogs_[leader]->Write(BigBatch(n), absl::Seconds(10)));
  BASALT_ASSERT_OK(WaitFor(absl::Seconds(10), "the leader to collect its log", [&] {
    const uint64_t first = catalogs_[leader]->node()->log().FirstIndex();
    return first > 3 ? absl::OkStatus() : absl::UnavailableError(StrCat("first index ", first));
  }));

  ASSERT_NO_FATAL_FAILURE(Open(down));
  BASALT_ASSERT_OK(WaitFor(absl::Seconds(20), "the restarted master to catch up", [&] {
    const uint64_t want = catalogs_[leader]->DurableIndex();
    const uint64_t have = catalogs_[down]->DurableIndex();
    return have >= want ? absl::OkStatus()
                        : absl::UnavailableError(StrCat("at ", have, " of ", want));
  }));
  {
    absl::MutexLock l(&mu_);
    EXPECT_GE(images_sent_, 1);
  }
  // Its memory was replaced by the image: every table is there.
  EXPECT_EQ(listeners_[down]->loaded().upsert_tables_size(), 41);
  // It follows the leader from there on, and a restart keeps it all.
  BASALT_ASSERT_OK(catalogs_[leader]->Write(BigBatch(41), absl::Seconds(10)));
  const uint64_t last = catalogs_[leader]->DurableIndex();
  BASALT_ASSERT_OK(WaitFor(absl::Seconds(10), "the entry after the image", [&] {
    return catalogs_[down]->DurableIndex() >= last ? absl::OkStatus()
                                                   : absl::UnavailableError("not applied");
  }));
  EXPECT_GE(listeners_[down]->num_applied(), 1u);
  Close(down);
  ASSERT_NO_FATAL_FAILURE(Open(down));
  EXPECT_EQ(listeners_[down]->loaded().upsert_tables_size(), 42);
}

TEST_F(SysCatalogSnapshotTest, JoiningCatalogInstallsAnImage) {
  for (int i = 0; i < kMasters; ++i) ASSERT_NO_FATAL_FAILURE(Open(i));
  const int leader = Leader();
  BASALT_ASSERT_OK(catalogs_[leader]->Write(BigBatch(1), absl::Seconds(10)));
  uuids_.push_back("m3");
  ASSERT_NO_FATAL_FAILURE(Open(3, /*joining=*/true));
  EXPECT_TRUE(catalogs_[3]->joining());
  EXPECT_EQ(catalogs_[3]->role(), RaftCore::Role::kFollower);
  EXPECT_FALSE(catalogs_[3]->Write(BigBatch(2), absl::Seconds(1)).ok());
  EXPECT_FALSE(Env::Default()->FileExists(JoinPath(Dir(3), "cmeta")));  // It votes nowhere.

  absl::StatusOr<pb::CatalogSnapshotPB> image = catalogs_[leader]->BuildSnapshot();
  BASALT_ASSERT_OK(image.status());
  EXPECT_EQ(image->entries().upsert_tables_size(), 1);
  EXPECT_GE(image->applied_index(), 2u);
  BASALT_ASSERT_OK(catalogs_[3]->InstallSnapshot(*image));
  EXPECT_FALSE(catalogs_[3]->joining());
  EXPECT_EQ(catalogs_[3]->DurableIndex(), image->applied_index());
  EXPECT_EQ(listeners_[3]->loaded().upsert_tables_size(), 1);
  EXPECT_TRUE(Env::Default()->FileExists(JoinPath(Dir(3), "cmeta")));
  EXPECT_FALSE(Env::Default()->FileExists(JoinPath(Dir(3), "catalog_install")));
  // The leader refuses images; so does a catalog for an image older than itself.
  EXPECT_EQ(catalogs_[leader]->InstallSnapshot(*image).code(),
            absl::StatusCode::kFailedPrecondition);
  BASALT_ASSERT_OK(catalogs_[leader]->Write(BigBatch(3), absl::Seconds(10)));
  const int follower = (leader + 1) % kMasters;
  BASALT_ASSERT_OK(WaitFor(absl::Seconds(10), "the follower to apply", [&] {
    return catalogs_[follower]->DurableIndex() > image->applied_index()
               ? absl::OkStatus()
               : absl::UnavailableError("behind");
  }));
  absl::Status s = catalogs_[follower]->InstallSnapshot(*image);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(std::string(s.message()).find("older"), std::string::npos) << s;
}

// Raft's InstallSnapshot rule: a follower whose log holds the image's last entry keeps the
// entries after it (it may have acknowledged them), and a restarted node continues from there.
TEST_F(SysCatalogSnapshotTest, FollowerHoldingTheImagesLastEntryKeepsItsLog) {
  for (int i = 0; i < kMasters; ++i) ASSERT_NO_FATAL_FAILURE(Open(i));
  const int leader = Leader();
  const int follower = (leader + 1) % kMasters;
  BASALT_ASSERT_OK(catalogs_[leader]->Write(BigBatch(1), absl::Seconds(10)));
  const uint64_t last = catalogs_[leader]->DurableIndex();
  BASALT_ASSERT_OK(WaitFor(absl::Seconds(10), "the follower to apply", [&] {
    return catalogs_[follower]->DurableIndex() >= last ? absl::OkStatus()
                                                       : absl::UnavailableError("behind");
  }));
  absl::StatusOr<pb::CatalogSnapshotPB> image = catalogs_[leader]->BuildSnapshot();
  BASALT_ASSERT_OK(image.status());
  ASSERT_EQ(image->applied_index(), last);
  const uint64_t follower_last = catalogs_[follower]->node()->last_index();
  ASSERT_GE(follower_last, last);
  BASALT_ASSERT_OK(catalogs_[follower]->InstallSnapshot(*image));
  EXPECT_EQ(catalogs_[follower]->node()->log().LastIndex(), follower_last);
  EXPECT_EQ(catalogs_[follower]->node()->log().FirstIndex(), 1u);  // Not reset.
  // It goes on replicating.
  BASALT_ASSERT_OK(catalogs_[leader]->Write(BigBatch(2), absl::Seconds(10)));
  const uint64_t later = catalogs_[leader]->DurableIndex();
  BASALT_ASSERT_OK(WaitFor(absl::Seconds(10), "the follower to apply after the image", [&] {
    return catalogs_[follower]->DurableIndex() >= later ? absl::OkStatus()
                                                        : absl::UnavailableError("behind");
  }));
  // An image of an older term than the follower's is refused and changes nothing (a new election
  // first, so that there is an older term).
  BASALT_ASSERT_OK(catalogs_[Leader()]->node()->LeaderStepDown());
  BASALT_ASSERT_OK(WaitFor(absl::Seconds(10), "a new term", [&] {
    return catalogs_[follower]->node()->term() >= 2 ? absl::OkStatus()
                                                    : absl::UnavailableError("term 1");
  }));
  Leader();
  const uint64_t term = catalogs_[follower]->node()->term();
  pb::CatalogSnapshotPB stale = *image;
  stale.set_applied_index(catalogs_[follower]->DurableIndex() + 1);
  stale.set_term(term - 1);
  stale.set_applied_term(std::min(image->applied_term(), term - 1));
  absl::Status s = catalogs_[follower]->InstallSnapshot(stale);
  if (catalogs_[follower]->node() != nullptr &&
      catalogs_[follower]->node()->role() == RaftCore::Role::kLeader) {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;  // Leads now: refused too.
  } else {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_NE(std::string(s.message()).find("from term"), std::string::npos) << s;
  }
  EXPECT_FALSE(catalogs_[follower]->joining());
}

TEST_F(SysCatalogSnapshotTest, BadImagesAreRefusedAndChangeNothing) {
  uuids_ = {"m0"};
  ASSERT_NO_FATAL_FAILURE(Open(0));
  BASALT_ASSERT_OK(catalogs_[0]->WaitUntilLeader(absl::Seconds(10)));
  BASALT_ASSERT_OK(catalogs_[0]->Write(BigBatch(1), absl::Seconds(10)));
  absl::StatusOr<pb::CatalogSnapshotPB> good = catalogs_[0]->BuildSnapshot();
  BASALT_ASSERT_OK(good.status());
  ASSERT_NO_FATAL_FAILURE(Open(1, /*joining=*/true));

  std::map<std::string, pb::CatalogSnapshotPB> bad;
  bad["applied_index"] = *good;
  bad["applied_index"].set_applied_index(0);
  bad["applied_term"] = *good;
  bad["applied_term"].set_applied_term(0);
  bad["term"] = *good;
  bad["term"].set_term(good->applied_term() - 1);
  bad["config"] = *good;
  bad["config"].set_config("garbage");
  bad["config_index"] = *good;
  bad["config_index"].set_config_index(good->applied_index() + 1);
  for (const auto& [field, image] : bad) {
    absl::Status s = catalogs_[1]->InstallSnapshot(image);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << field << ": " << s;
    EXPECT_NE(std::string(s.message()).find(field), std::string::npos) << field << ": " << s;
    EXPECT_TRUE(catalogs_[1]->joining()) << field;
    EXPECT_FALSE(Env::Default()->FileExists(JoinPath(Dir(1), "cmeta"))) << field;
  }
}

TEST_F(SysCatalogSnapshotTest, InterruptedInstallIsWipedAtOpen) {
  uuids_ = {"m0"};
  ASSERT_NO_FATAL_FAILURE(Open(0));
  BASALT_ASSERT_OK(catalogs_[0]->WaitUntilLeader(absl::Seconds(10)));
  BASALT_ASSERT_OK(catalogs_[0]->Write(BigBatch(1), absl::Seconds(10)));
  Close(0);
  // A crash between the marker and the end of an install.
  BASALT_ASSERT_OK(WriteFileAtomically(Env::Default(), JoinPath(Dir(0), "catalog_install"), ""));
  ASSERT_NO_FATAL_FAILURE(Open(0));
  EXPECT_FALSE(Env::Default()->FileExists(JoinPath(Dir(0), "catalog_install")));
  EXPECT_EQ(listeners_[0]->loaded().upsert_tables_size(), 0);
  // The consensus metadata (term, vote, configuration) stayed.
  EXPECT_TRUE(Env::Default()->FileExists(JoinPath(Dir(0), "cmeta")));
}

}  // namespace sys_catalog_snapshot_test_file
}  // namespace
}  // namespace basalt
