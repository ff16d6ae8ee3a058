#include "tests/client_writer_util.h"

#include <string>

namespace basalt::client_test {

void BackgroundWriter::Verify() const {
  std::vector<Row> rows;
  ASSERT_OK(ScanRows(table_.get(), nullptr, &rows));
  absl::MutexLock l(&mu_);
  std::set<int32_t> present;
  for (const Row& r : rows) {
    EXPECT_TRUE(present.insert(r.key).second) << "row returned twice: " << ToString(r);
    EXPECT_EQ(r, Expected(r.key));
    EXPECT_LT(r.key, attempted_end_) << "a row that was never written";
  }
  size_t lost = 0;
  for (int32_t k : acked_) {
    if (present.count(k) == 0 && ++lost <= 10) ADD_FAILURE() << "acknowledged row lost: " << k;
  }
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(already_exists_, 0) << "inserts of fresh keys answered ALREADY_EXISTS";
  LOG(INFO) << acked_.size() << " rows acknowledged, " << rows.size() << " present";
}

void BackgroundWriter::Run() {
  auto session = client_->NewSession();
  absl::Status s = session->SetFlushMode(client::Session::MANUAL_FLUSH);
  session->SetTimeoutMillis(60000);
  for (int32_t first = 0; s.ok() && !stop_.load(); first += kBatch) {
    {
      absl::MutexLock l(&mu_);
      attempted_end_ = first + kBatch;
    }
    for (int32_t k = first; k < first + kBatch && s.ok(); ++k) {
      s = ApplyOp(session.get(), table_.get(), client::WriteOperation::INSERT, Expected(k));
    }
    if (!s.ok()) break;
    session->Flush().IgnoreError();  // Failures are in the error collector.
    std::set<int32_t> failed;
    for (const auto& e : session->GetPendingErrors()) {
      int32_t key = -1;
      e->failed_op().row().GetInt32("key", &key).IgnoreError();
      failed.insert(key);
      // Each key is inserted once: ALREADY_EXISTS means a retry of the client's was applied
      // twice (retries are exactly-once).
      if (absl::IsAlreadyExists(e->status())) {
        absl::MutexLock l(&mu_);
        ++already_exists_;
      }
      LOG_EVERY_N(INFO, 20) << "not acknowledged: key " << key << ": " << e->status()
                            << (e->was_possibly_successful() ? " (possibly applied)" : "");
    }
    {
      absl::MutexLock l(&mu_);
      for (int32_t k = first; k < first + kBatch; ++k) {
        if (failed.count(k) == 0) acked_.push_back(k);
      }
    }
    if (pause_ > absl::ZeroDuration() && !stop_.load()) absl::SleepFor(pause_);
  }
  absl::MutexLock l(&mu_);
  status_ = s;
}

}  // namespace basalt::client_test
