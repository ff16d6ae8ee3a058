#pragma once

// ResultTracker: the answers to completed client write requests, by (client id, sequence number),
// so that a retried request is answered with its first answer instead of being applied again
// (docs/tserver.md "Exactly-once writes").
//
// One per tablet replica. Answers are recorded where entries are applied: on every replica, and
// again by WAL replay after a restart, from the request id each write entry carries. So a new
// leader (which applies every earlier entry before it serves a write) answers the retries of
// requests its predecessor proposed, and a restarted server those whose entries its log replays.
//
// While an attempt is processed here (admitted, not yet applied or known never to be), another
// attempt of the same request is told to retry later, never applied beside it.
//
// Durable: a restart replays only the entries above the superblock's durable index, so before
// each superblock write the answers of entries at or below it are saved (Save, to
// tablets/<id>/answers) and loaded at open (Load); the replay records the others.
//
// Bounded: a client's answers below its watermark (RequestIdPB.first_incomplete_seq_no: it will
// never retry them) are dropped at once; answers older than --remember_responses_ttl_ms and
// clients not heard from for --remember_clients_ttl_ms are forgotten (a retry after that is
// applied again, as if new).
//
// Thread-safe.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/common.pb.h"
#include "proto/tserver.pb.h"

namespace basalt {

class Env;

class ResultTracker {
 public:
  struct Options {
    absl::Duration client_ttl = absl::Hours(1);
    absl::Duration answer_ttl = absl::Minutes(10);
    // From --remember_clients_ttl_ms and --remember_responses_ttl_ms.
    static Options FromFlags();
  };

  // What a write request got: an error for the whole request, or OK and its response.
  struct Answer {
    absl::Status status;
    pb::WriteResponsePB response;
  };

  enum class Admission {
    kNew,         // Not seen: the caller processes it; it is in progress until Record or Abandon.
    kInProgress,  // Another attempt is processed here now: the caller tells the client to retry.
    kAnswered,    // Completed: *answer holds the first answer.
    kStale,       // Below the client's watermark and forgotten: no client waits for it.
  };

  ResultTracker() : ResultTracker(Options()) {}
  explicit ResultTracker(Options options);

  // The admission of an attempt of request `id` (client_id not empty) arriving at `now`.
  Admission Admit(const pb::RequestIdPB& id, absl::Time now, Answer* answer)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Whether request `id` is in progress here (admitted, not yet recorded or abandoned). False once
  // an entry of it was applied here, even one another leader proposed for another attempt.
  bool InProgress(const pb::RequestIdPB& id) const ABSL_LOCKS_EXCLUDED(mu_);
  // The attempt admitted as kNew ends without its entry applied here, and the entry never will be
  // (never proposed, or its proposal failed): a retry may apply it. No-op if not in progress.
  void Abandon(const pb::RequestIdPB& id) ABSL_LOCKS_EXCLUDED(mu_);
  // Records the answer of request `id`, from the entry at `log_index` applied at `now`, and ends
  // its being in progress. A request already answered keeps its first answer.
  void Record(const pb::RequestIdPB& id, uint64_t log_index, absl::Time now, Answer answer)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The answers of entries at or below `max_log_index` (and the clients' watermarks), as the
  // answers file holds them (a checksummed envelope around a RememberedAnswersPB).
  std::string Image(uint64_t max_log_index) const ABSL_LOCKS_EXCLUDED(mu_);
  // Writes Image(max_log_index) to `path`, atomically (WriteFileAtomically), unless the last
  // Save wrote the same (nothing recorded or dropped since, and every answer was at or below
  // the index then): superblocks are written far more often than answers change. I/O errors.
  absl::Status Save(Env* env, const std::string& path, uint64_t max_log_index)
      ABSL_LOCKS_EXCLUDED(mu_, save_mu_);
  // Adds what Save wrote to `path`. OK if there is no such file; DATA_LOSS (naming the file) if
  // it is corrupt (nothing is added); I/O errors.
  absl::Status Load(Env* env, const std::string& path) ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets what the TTLs let go. Admit and Record call it at most once a second.
  void GarbageCollect(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  size_t num_clients() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t num_answers() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    bool in_progress = false;  // Admitted, not yet recorded or abandoned.
    absl::Time at;             // Admitted or recorded.
    uint64_t log_index = 0;    // Of the entry that produced the answer (when !in_progress).
    Answer answer;             // When !in_progress.
  };
  struct Client {
    absl::Time last_heard;
    uint64_t watermark = 0;  // The highest first_incomplete_seq_no heard.
    std::map<uint64_t, Entry> entries;
  };

  // Raises the client's watermark to `first_incomplete` and drops what is below it.
  static void AdvanceWatermark(Client* client, uint64_t first_incomplete);
  void MaybeGarbageCollectLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void GarbageCollectLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Client> clients_ ABSL_GUARDED_BY(mu_);
  size_t num_entries_ ABSL_GUARDED_BY(mu_) = 0;
  // Counts changes of what Image holds (answers recorded or dropped, watermarks, clients).
  uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t max_recorded_index_ ABSL_GUARDED_BY(mu_) = 0;
  // What the last Save wrote: changes_ then, and its max_log_index. Saves are serialized.
  absl::Mutex save_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  bool saved_ ABSL_GUARDED_BY(save_mu_) = false;
  uint64_t saved_changes_ ABSL_GUARDED_BY(save_mu_) = 0;
  uint64_t saved_max_index_ ABSL_GUARDED_BY(save_mu_) = 0;
  absl::Time last_gc_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace basalt
