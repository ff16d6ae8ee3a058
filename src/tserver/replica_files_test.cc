#include "tserver/replica_files.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "cfile/block_manager.h"
#include "common/clock.h"
#include "common/fault_injection_env.h"
#include "common/hybrid_clock.h"
#include "common/status_test_util.h"
#include "tablet/tablet.h"
#include "tserver/tserver_test_util.h"

namespace basalt {
namespace {
namespace replica_files_test_file {

class ReplicaFilesTest : public ::testing::Test {
 protected:
  ReplicaFilesTest() : dir_("replica_files_test"), clock_(Clock::Default()) {
    ctx_.env = Env::Default();
    ctx_.server_uuid = "ts-1";
    ctx_.data_dir = dir_.path();
    ctx_.wal_dir = dir_.path();
    block_manager_ = *BlockManager::Open(ctx_.env, dir_.path());
    ctx_.block_manager = block_manager_.get();
    ctx_.clock = &clock_;
    meta_.tablet_id = "tablet-1";
    meta_.table_id = "table-1";
    meta_.table_name = "t";
    meta_.partition_schema = *PartitionSchema::Create(schema_, {}, {"key"});
  }

  absl::StatusOr<std::unique_ptr<Tablet>> Create() {
    RaftConfig config;
    config.voters = {"ts-1"};
    return ReplicaFiles::Create(ctx_, meta_, schema_, config, {{"ts-1", "127.0.0.1:7050"}});
  }

  TestDir dir_;
  HybridClock clock_;
  std::unique_ptr<BlockManager> block_manager_;
  TabletReplicaContext ctx_;
  Schema schema_ = TestSchema();
  TabletReplicaMeta meta_;
};

TEST_F(ReplicaFilesTest, PathsFollowTheLayout) {
  ctx_.wal_dir = "/wal";
  EXPECT_EQ(ReplicaFiles::TabletDir(ctx_, "x"), dir_.path() + "/tablets/x");
  EXPECT_EQ(ReplicaFiles::WalDir(ctx_, "x"), "/wal/wals/x");
  EXPECT_EQ(ReplicaFiles::SuperBlockPath(ctx_, "x"), dir_.path() + "/tablets/x/superblock");
  EXPECT_EQ(ReplicaFiles::CmetaPath(ctx_, "x"), dir_.path() + "/tablets/x/cmeta");
  EXPECT_EQ(ReplicaFiles::ReplicaFilePath(ctx_, "x"), dir_.path() + "/tablets/x/replica");
}

TEST_F(ReplicaFilesTest, CreateThenOpen) {
  BASALT_ASSERT_OK(Create());
  for (const char* f : {"superblock", "cmeta", "replica"}) {
    EXPECT_TRUE(ctx_.env->FileExists(dir_.path() + "/tablets/tablet-1/" + f)) << f;
  }
  absl::StatusOr<std::unique_ptr<Tablet>> again = Create();
  EXPECT_TRUE(absl::IsAlreadyExists(again.status())) << again.status();
  absl::StatusOr<ReplicaFiles::Opened> opened = ReplicaFiles::Open(ctx_, "tablet-1");
  BASALT_ASSERT_OK(opened);
  EXPECT_EQ(opened->meta.table_name, "t");
  EXPECT_TRUE(opened->tablet->schema().Equals(schema_));
  // A rename rewrites the replica file.
  meta_.table_name = "renamed";
  BASALT_ASSERT_OK(ReplicaFiles::PersistMeta(ctx_, meta_));
  opened = ReplicaFiles::Open(ctx_, "tablet-1");
  BASALT_ASSERT_OK(opened);
  EXPECT_EQ(opened->meta.table_name, "renamed");
}

TEST_F(ReplicaFilesTest, OpenErrors) {
  absl::StatusOr<ReplicaFiles::Opened> none = ReplicaFiles::Open(ctx_, "tablet-1");
  EXPECT_TRUE(absl::IsNotFound(none.status())) << none.status();
  BASALT_ASSERT_OK(Create());
  // A replica file of another tablet (a directory renamed by hand).
  TabletReplicaMeta other = meta_;
  other.tablet_id = "tablet-2";
  BASALT_ASSERT_OK(WriteFileAtomically(ctx_.env, ReplicaFiles::ReplicaFilePath(ctx_, "tablet-1"),
                                       EncodeReplicaFile(other)));
  absl::StatusOr<ReplicaFiles::Opened> wrong = ReplicaFiles::Open(ctx_, "tablet-1");
  EXPECT_TRUE(absl::IsDataLoss(wrong.status())) << wrong.status();
  // A corrupt replica file.
  BASALT_ASSERT_OK(
      WriteFileAtomically(ctx_.env, ReplicaFiles::ReplicaFilePath(ctx_, "tablet-1"), "garbage"));
  absl::StatusOr<ReplicaFiles::Opened> bad = ReplicaFiles::Open(ctx_, "tablet-1");
  EXPECT_TRUE(absl::IsDataLoss(bad.status())) << bad.status();
}

// A creation that fails at any of its renames leaves no directory: the next attempt is not
// ALREADY_EXISTS, and no half-made replica is opened at the next start.
TEST_F(ReplicaFilesTest, FailedCreateLeavesNothing) {
  FaultInjectionEnv env(Env::Default());
  ctx_.env = &env;
  const std::string dir = ReplicaFiles::TabletDir(ctx_, "tablet-1");
  int failures = 0;
  for (int n = 0;; ++n) {
    ASSERT_LT(n, 20) << "creation never succeeded";
    env.FailAfter(n, FaultInjectionEnv::OpKind::kRename, /*one_shot=*/true);
    absl::StatusOr<std::unique_ptr<Tablet>> r = Create();
    env.ClearFailures();
    if (r.ok()) break;
    ++failures;
    EXPECT_FALSE(env.FileExists(dir)) << "after failing at rename " << n << ": " << r.status();
  }
  EXPECT_GE(failures, 2);  // At least the cmeta's and the replica file's.
}

}  // namespace replica_files_test_file
}  // namespace
}  // namespace basalt
