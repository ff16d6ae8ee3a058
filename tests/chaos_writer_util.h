#pragma once

// The chaos suite's writers (tests/chaos_test.cc): threads that insert unique keys and update
// rows they inserted, in small MANUAL_FLUSH batches, each through its own Client, and log what the
// cluster acknowledged, so that a verifier (chaos_verifier_util.h) can count what was lost.
//
// Keys: writer w of W writes keys w, w + W, w + 2W, ... (its n-th insert is n * W + w), each
// inserted once, never retried by the writer (the client's own retries are exactly-once). Values:
// an insert sets int_val 0; the writer's updates set int_val to 1, 2, 3, ... (one counter per
// writer), so a key's value only grows and the newest acknowledged update is the largest. Every
// operation sets string_val to "w<writer>-<int_val>" with it, so the two always agree.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "common/random.h"

namespace basalt::chaos {

// What one writer knows about its writes. Built by ChaosWriter; read after it stopped.
struct WriterLog {
  int writer = 0;
  int num_writers = 1;
  // Inserts attempted: keys of n = 0 .. attempted_inserts - 1.
  int64_t attempted_inserts = 0;
  std::vector<int32_t> acked_inserts;
  // Failed, but possibly applied (the session timed out while the batch was in flight).
  std::vector<int32_t> uncertain_inserts;
  // Failed with an answer saying they were not applied.
  std::vector<int32_t> failed_inserts;
  int64_t acked_updates = 0;
  // Per updated key: the newest acknowledged value, and the largest value ever sent.
  absl::flat_hash_map<int32_t, int32_t> acked_value;
  absl::flat_hash_map<int32_t, int32_t> max_sent_value;
  // Inserts of a fresh key answered ALREADY_EXISTS: a retry applied twice.
  int64_t own_already_exists = 0;
  // Errors by status code name, for the report.
  std::map<std::string, int64_t> errors;
  // The longest time without an acknowledged operation while writing.
  absl::Duration longest_gap;
  // The longest Flush() (a MANUAL_FLUSH batch must finish within the session timeout).
  absl::Duration longest_flush;
};

// One writer thread. Start() → (WaitForAcks) → Stop() → log().
class ChaosWriter {
 public:
  // Long enough to ride out an election, short enough that a batch stuck behind a lost quorum
  // gives up (uncertain) and the writer goes on with the others.
  static constexpr int kSessionTimeoutMs = 10000;

  // `masters`: the cluster's master addresses; `table_name`: the table (its id is kept, so a
  // later rename does not matter). `seed` drives its choices.
  ChaosWriter(std::string masters, std::string table_name, int writer, int num_writers,
              uint64_t seed);
  ~ChaosWriter();

  // Connects and opens the table, then starts the thread.
  absl::Status Start();
  // Stops and joins; returns the first error that is not a failed write (a bug of the test or of
  // the client: the writer stopped early).
  absl::Status Stop();
  // Operations acknowledged so far.
  int64_t acked() const { return acked_.load(); }
  // Waits until `n` more operations than now are acknowledged.
  absl::Status WaitForMoreAcks(int64_t n, absl::Duration timeout) const;
  // REQUIRES: Stop() returned.
  const WriterLog& log() const { return log_; }

 private:
  void Run();
  // One batch of inserts or updates; updates log_.
  absl::Status WriteBatch(client::Session* session, bool update, Random* rnd);

  const std::string masters_;
  const std::string table_name_;
  const uint64_t seed_;
  std::shared_ptr<client::Client> client_;
  std::shared_ptr<client::Table> table_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> acked_{0};
  absl::Time last_ack_;
  WriterLog log_;                   // Written by the thread only, until Stop() joined it.
  std::vector<int32_t> updatable_;  // Acknowledged inserts, by the thread.
  int32_t next_value_ = 1;
  absl::Status status_;
};

}  // namespace basalt::chaos
