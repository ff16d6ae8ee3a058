#include "tserver/result_tracker.h"

#include <gtest/gtest.h>

#include <string>

#include "common/env_memory.h"
#include "common/status_test_util.h"
#include "common/strings.h"

namespace basalt {
namespace {
namespace result_tracker_test_file {

pb::RequestIdPB Id(const std::string& client, uint64_t seq, uint64_t first_incomplete) {
  pb::RequestIdPB id;
  id.set_client_id(client);
  id.set_seq_no(seq);
  id.set_first_incomplete_seq_no(first_incomplete);
  return id;
}

ResultTracker::Answer WithErrorAt(int row) {
  ResultTracker::Answer a;
  auto* e = a.response.add_per_row_errors();
  e->set_row_index(row);
  a.response.set_timestamp(1000 + row);
  return a;
}

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

TEST(ResultTrackerTest, ARetryGetsTheFirstAnswer) {
  ResultTracker t;
  ResultTracker::Answer got;
  EXPECT_EQ(t.Admit(Id("c", 1, 1), kT0, &got), ResultTracker::Admission::kNew);
  // A second attempt while the first is processed waits for it.
  EXPECT_EQ(t.Admit(Id("c", 1, 1), kT0, &got), ResultTracker::Admission::kInProgress);
  t.Record(Id("c", 1, 1), 1, kT0, WithErrorAt(3));
  ASSERT_EQ(t.Admit(Id("c", 1, 1), kT0, &got), ResultTracker::Admission::kAnswered);
  ASSERT_EQ(got.response.per_row_errors_size(), 1);
  EXPECT_EQ(got.response.per_row_errors(0).row_index(), 3);
  EXPECT_EQ(got.response.timestamp(), 1003u);
  // A second record (the same entry replayed) keeps the first answer.
  t.Record(Id("c", 1, 1), 1, kT0, WithErrorAt(5));
  ASSERT_EQ(t.Admit(Id("c", 1, 1), kT0, &got), ResultTracker::Admission::kAnswered);
  EXPECT_EQ(got.response.per_row_errors(0).row_index(), 3);
  // Another client's same sequence number is its own request.
  EXPECT_EQ(t.Admit(Id("d", 1, 1), kT0, &got), ResultTracker::Admission::kNew);
}

TEST(ResultTrackerTest, AnAbandonedAttemptMayBeAppliedByARetry) {
  ResultTracker t;
  ResultTracker::Answer got;
  EXPECT_EQ(t.Admit(Id("c", 7, 7), kT0, &got), ResultTracker::Admission::kNew);
  t.Abandon(Id("c", 7, 7));
  EXPECT_EQ(t.Admit(Id("c", 7, 7), kT0, &got), ResultTracker::Admission::kNew);
  // Abandoning an answered request changes nothing.
  t.Record(Id("c", 7, 7), 1, kT0, WithErrorAt(1));
  t.Abandon(Id("c", 7, 7));
  EXPECT_EQ(t.Admit(Id("c", 7, 7), kT0, &got), ResultTracker::Admission::kAnswered);
}

// A replica that applied another's proposal (a follower, a WAL replay) answers its retries.
TEST(ResultTrackerTest, ARecordWithoutAdmissionAnswers) {
  ResultTracker t;
  t.Record(Id("c", 4, 2), 1, kT0, WithErrorAt(0));
  ResultTracker::Answer got;
  EXPECT_EQ(t.Admit(Id("c", 4, 2), kT0, &got), ResultTracker::Admission::kAnswered);
}

TEST(ResultTrackerTest, TheWatermarkReleasesAnswers) {
  ResultTracker t;
  for (uint64_t seq = 1; seq <= 5; ++seq) t.Record(Id("c", seq, 1), 1, kT0, WithErrorAt(0));
  EXPECT_EQ(t.num_answers(), 5u);
  ResultTracker::Answer got;
  // The client completed 1..3: they go.
  EXPECT_EQ(t.Admit(Id("c", 6, 4), kT0, &got), ResultTracker::Admission::kNew);
  EXPECT_EQ(t.num_answers(), 3u);  // 4, 5 and 6 (in progress).
  EXPECT_EQ(t.Admit(Id("c", 2, 2), kT0, &got), ResultTracker::Admission::kStale);
  EXPECT_EQ(t.Admit(Id("c", 4, 4), kT0, &got), ResultTracker::Admission::kAnswered);
}

TEST(ResultTrackerTest, TtlsForgetAnswersAndClients) {
  ResultTracker::Options o;
  o.answer_ttl = absl::Minutes(10);
  o.client_ttl = absl::Hours(1);
  ResultTracker t(o);
  ResultTracker::Answer got;
  t.Record(Id("old", 1, 1), 1, kT0, WithErrorAt(0));
  EXPECT_EQ(t.Admit(Id("busy", 1, 1), kT0, &got), ResultTracker::Admission::kNew);
  t.GarbageCollect(kT0 + absl::Minutes(11));
  EXPECT_EQ(t.Admit(Id("old", 1, 1), kT0 + absl::Minutes(11), &got),
            ResultTracker::Admission::kNew);  // Forgotten: applied again, as if new.
  t.Abandon(Id("old", 1, 1));
  // An attempt in progress is kept whatever its age (its entry may still be applied).
  EXPECT_EQ(t.Admit(Id("busy", 1, 1), kT0 + absl::Minutes(11), &got),
            ResultTracker::Admission::kInProgress);
  t.Abandon(Id("busy", 1, 1));
  t.GarbageCollect(kT0 + absl::Hours(2));
  EXPECT_EQ(t.num_clients(), 0u);
  EXPECT_EQ(t.num_answers(), 0u);
}

// 10,000 clients with a few requests each: what is kept is bounded by the watermarks while they
// are active, and everything goes once they are gone for the client TTL.
TEST(ResultTrackerTest, MemoryStaysBoundedUnderManyClients) {
  ResultTracker t;
  ResultTracker::Answer got;
  for (int round = 0; round < 5; ++round) {
    for (int c = 0; c < 10000; ++c) {
      const uint64_t seq = round + 1;
      const pb::RequestIdPB id = Id(StrCat("client-", c), seq, seq);  // One in flight at a time.
      ASSERT_EQ(t.Admit(id, kT0 + absl::Seconds(round), &got), ResultTracker::Admission::kNew);
      t.Record(id, 1, kT0 + absl::Seconds(round), WithErrorAt(0));
    }
    EXPECT_EQ(t.num_answers(), 10000u) << "round " << round;  // Only the newest per client.
  }
  EXPECT_EQ(t.num_clients(), 10000u);
  t.GarbageCollect(kT0 + absl::Hours(2));
  EXPECT_EQ(t.num_clients(), 0u);
  EXPECT_EQ(t.num_answers(), 0u);
}

// What a restart does not replay survives in the answers file; a damaged file is a clean
// DATA_LOSS that adds nothing.
TEST(ResultTrackerTest, SavedAnswersAtOrBelowTheIndexLoadBack) {
  MemoryEnv env;
  ResultTracker t;
  const absl::Time now = absl::Now();
  ResultTracker::Answer failed;
  failed.status = absl::FailedPreconditionError("schema mismatch");
  t.Record(Id("c", 1, 1), 5, now, WithErrorAt(2));
  t.Record(Id("c", 2, 1), 6, now, failed);
  t.Record(Id("c", 3, 1), 10, now, WithErrorAt(0));  // Replayed after a restart: not saved.
  ResultTracker::Answer got;
  EXPECT_EQ(t.Admit(Id("d", 1, 1), now, &got), ResultTracker::Admission::kNew);  // In progress.
  BASALT_ASSERT_OK(t.Save(&env, "/answers", 7));
  ResultTracker loaded;
  BASALT_ASSERT_OK(loaded.Load(&env, "/answers"));
  ASSERT_EQ(loaded.Admit(Id("c", 1, 1), now, &got), ResultTracker::Admission::kAnswered);
  EXPECT_EQ(got.response.per_row_errors(0).row_index(), 2);
  EXPECT_EQ(got.response.timestamp(), 1002u);
  ASSERT_EQ(loaded.Admit(Id("c", 2, 1), now, &got), ResultTracker::Admission::kAnswered);
  EXPECT_TRUE(absl::IsFailedPrecondition(got.status)) << got.status;
  EXPECT_EQ(loaded.Admit(Id("c", 3, 1), now, &got), ResultTracker::Admission::kNew);
  EXPECT_EQ(loaded.Admit(Id("d", 1, 1), now, &got), ResultTracker::Admission::kNew);
  // No file: nothing to add.
  BASALT_EXPECT_OK(loaded.Load(&env, "/none"));
  std::string data;
  BASALT_ASSERT_OK(ReadFileToString(&env, "/answers", &data));
  for (size_t i = 0; i < data.size(); i += 7) {
    std::string bad = data;
    bad[i] ^= 0x20;
    BASALT_ASSERT_OK(WriteFileAtomically(&env, "/bad", bad));
    ResultTracker fresh;
    absl::Status s = fresh.Load(&env, "/bad");
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << i << ": " << s;
    EXPECT_EQ(fresh.num_answers(), 0u);
  }
  BASALT_ASSERT_OK(WriteFileAtomically(&env, "/short", data.substr(0, 5)));
  EXPECT_EQ(ResultTracker().Load(&env, "/short").code(), absl::StatusCode::kDataLoss);
}

// Superblocks are written far more often than answers change: a Save that would write what the
// file holds already writes nothing.
TEST(ResultTrackerTest, ASaveWithNothingNewWritesNothing) {
  MemoryEnv env;
  ResultTracker t;
  const absl::Time now = absl::Now();
  t.Record(Id("c", 1, 1), 5, now, WithErrorAt(0));
  t.Record(Id("c", 2, 1), 9, now, WithErrorAt(0));
  BASALT_ASSERT_OK(t.Save(&env, "/answers", 6));  // Answer 2 is above: not in the file yet.
  BASALT_ASSERT_OK(env.DeleteFile("/answers"));
  BASALT_ASSERT_OK(t.Save(&env, "/answers", 10));  // Now it is: written.
  EXPECT_TRUE(env.FileExists("/answers"));
  BASALT_ASSERT_OK(env.DeleteFile("/answers"));
  BASALT_ASSERT_OK(t.Save(&env, "/answers", 12));  // Nothing new: skipped.
  EXPECT_FALSE(env.FileExists("/answers"));
  t.Record(Id("c", 3, 1), 11, now, WithErrorAt(0));
  BASALT_ASSERT_OK(t.Save(&env, "/answers", 12));  // A new answer: written.
  ResultTracker loaded;
  BASALT_ASSERT_OK(loaded.Load(&env, "/answers"));
  EXPECT_EQ(loaded.num_answers(), 3u);
}

}  // namespace result_tracker_test_file
}  // namespace
}  // namespace basalt
