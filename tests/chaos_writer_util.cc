#include "tests/chaos_writer_util.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/time/clock.h"
#include "common/random.h"
#include "common/strings.h"
#include "glog/logging.h"
#include "testing/wait.h"

namespace basalt::chaos {

namespace {

constexpr int kMaxInsertsPerBatch = 20;
constexpr int kMaxUpdatesPerBatch = 10;

}  // namespace

ChaosWriter::ChaosWriter(std::string masters, std::string table_name, int writer, int num_writers,
                         uint64_t seed)
    : masters_(std::move(masters)), table_name_(std::move(table_name)), seed_(seed) {
  log_.writer = writer;
  log_.num_writers = num_writers;
}

ChaosWriter::~ChaosWriter() { Stop().IgnoreError(); }

absl::Status ChaosWriter::Start() {
  absl::Status s = client::ClientBuilder()
                       .add_master_server_addr(masters_)
                       .default_admin_operation_timeout(std::chrono::seconds(60))
                       .default_rpc_timeout(std::chrono::milliseconds(kSessionTimeoutMs))
                       .Build(&client_);
  // The master may be down at this moment (the nemesis does not wait for writers).
  if (s.ok()) {
    s = WaitFor(absl::Seconds(60), "opening the table",
                [&] { return client_->OpenTable(table_name_, &table_); });
  }
  if (!s.ok()) return s;
  last_ack_ = absl::Now();
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

absl::Status ChaosWriter::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  return status_;
}

absl::Status ChaosWriter::WaitForMoreAcks(int64_t n, absl::Duration timeout) const {
  const int64_t target = acked() + n;
  return WaitFor(timeout, StrCat("writer ", log_.writer, ": ", target, " acknowledged ops"), [&] {
    const int64_t now = acked();
    return now >= target ? absl::OkStatus() : absl::UnavailableError(StrCat(now, " so far"));
  });
}

void ChaosWriter::Run() {
  Random rnd(seed_);
  auto session = client_->NewSession();
  absl::Status s = session->SetFlushMode(client::Session::MANUAL_FLUSH);
  session->SetTimeoutMillis(kSessionTimeoutMs);
  while (s.ok() && !stop_) {
    const bool update = !updatable_.empty() && rnd.OneIn(3);
    s = WriteBatch(session.get(), update, &rnd);
  }
  status_ = s;
}

absl::Status ChaosWriter::WriteBatch(client::Session* session, bool update, Random* rnd) {
  // The keys of this batch, each once (a batch's operations on one key could be reordered
  // between tablets' batches only if they were on different tablets, which one key is not; the
  // verifier's "newest acknowledged value" needs one operation per key per batch anyway).
  std::vector<int32_t> keys;
  std::vector<int32_t> values;
  if (update) {
    absl::flat_hash_set<int32_t> chosen;
    const int n = static_cast<int>(rnd->UniformRange(1, kMaxUpdatesPerBatch));
    for (int i = 0; i < n; ++i) {
      const int32_t key = updatable_[rnd->Uniform(updatable_.size())];
      if (!chosen.insert(key).second) continue;
      keys.push_back(key);
      values.push_back(next_value_++);
    }
  } else {
    const int n = static_cast<int>(rnd->UniformRange(1, kMaxInsertsPerBatch));
    for (int i = 0; i < n; ++i) {
      keys.push_back(
          static_cast<int32_t>(log_.attempted_inserts++ * log_.num_writers + log_.writer));
      values.push_back(0);
    }
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    std::unique_ptr<client::WriteOperation> op;
    if (update) {
      op = table_->NewUpdate();
    } else {
      op = table_->NewInsert();
    }
    client::PartialRow* row = op->mutable_row();
    absl::Status s = row->SetInt32("key", keys[i]);
    if (s.ok()) s = row->SetInt32("int_val", values[i]);
    if (s.ok()) s = row->SetString("string_val", StrCat("w", log_.writer, "-", values[i]));
    if (s.ok()) s = session->Apply(std::move(op));
    if (!s.ok()) return s;
    if (update) {
      int32_t& max = log_.max_sent_value[keys[i]];
      max = std::max(max, values[i]);
    }
  }
  const absl::Time flush_start = absl::Now();
  session->Flush().IgnoreError();  // Which operations failed: below.
  log_.longest_flush = std::max(log_.longest_flush, absl::Now() - flush_start);
  bool overflowed = false;
  std::vector<std::unique_ptr<client::Error>> errors = session->GetPendingErrors(&overflowed);
  if (overflowed) return absl::InternalError("the session's error collector overflowed");
  absl::flat_hash_map<int32_t, const client::Error*> failed;
  for (const auto& e : errors) {
    int32_t key = 0;
    absl::Status s = e->failed_op().row().GetInt32("key", &key);
    if (!s.ok()) return s;
    failed[key] = e.get();
    ++log_.errors[std::string(absl::StatusCodeToString(e->status().code()))];
  }
  int64_t acked = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = failed.find(keys[i]);
    if (it == failed.end()) {
      ++acked;
      if (update) {
        int32_t& v = log_.acked_value[keys[i]];
        v = std::max(v, values[i]);
        ++log_.acked_updates;
      } else {
        log_.acked_inserts.push_back(keys[i]);
        updatable_.push_back(keys[i]);
      }
      continue;
    }
    const client::Error& e = *it->second;
    if (update) continue;  // The key's value is then anything up to max_sent_value.
    if (absl::IsAlreadyExists(e.status())) {
      // A bug (counted), and the key is there: from the first apply of a retried insert.
      LOG(ERROR) << "writer " << log_.writer << ": the insert of fresh key " << keys[i]
                 << " answered " << e.status();
      ++log_.own_already_exists;
      log_.uncertain_inserts.push_back(keys[i]);
    } else if (e.was_possibly_successful()) {
      log_.uncertain_inserts.push_back(keys[i]);
    } else {
      log_.failed_inserts.push_back(keys[i]);
    }
  }
  const absl::Time now = absl::Now();
  if (acked > 0) {
    log_.longest_gap = std::max(log_.longest_gap, now - last_ack_);
    last_ack_ = now;
    acked_ += acked;
  }
  return absl::OkStatus();
}

}  // namespace basalt::chaos
