#pragma once

// DdlAnswers: the master's in-memory copy of the remembered DDL answers, and the choice of which
// to forget (exactly-once DDL, docs/master.md "Exactly-once DDL"). Private to src/master.
//
// The answers are catalog entries (SysDdlAnswerEntryPB under SysDdlAnswerKey) and, like tables,
// change only through the catalog: Clear and Apply of the whole catalog when it is loaded (open,
// image install), then Apply of every applied batch. So every master holds the same answers once it
// applied the same entries, and a ready leader (which applied every committed entry) holds every
// answer an earlier leader wrote. Forgetting is a catalog change too: the leader adds the deletions
// chosen here to a batch (AddReleased to the DDL's own batch, AddExpired to the reconciliation
// loop's), and every master applies them.
//
// A client's watermark here is the highest first_incomplete_seq_no among its stored answers: a
// function of the stored entries, hence the same on every master and after a restart. It is
// forgotten with the client's last answer (then a late duplicate of a completed request would
// execute again, as for any forgotten answer).
//
// Not thread-safe; the catalog manager serializes (under its mu_).

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "proto/common.pb.h"
#include "proto/master_catalog.pb.h"

namespace basalt {

class DdlAnswers {
 public:
  enum class Lookup {
    kNew,       // Neither stored nor below the client's watermark: execute the request.
    kAnswered,  // Stored: the entry holds the first answer.
    kStale,     // Below the client's watermark and not stored: the client completed it before.
  };

  // Forgets everything (before a whole catalog is loaded with Apply).
  void Clear();
  // Installs a batch's answer upserts, then its answer deletions (the order of the RocksDB write).
  void Apply(const pb::SysCatalogWriteBatchPB& batch);

  // What is known of request `id`. With kAnswered, `*entry` points at the stored answer, valid
  // until the next Clear or Apply. REQUIRES: id.client_id() is not empty.
  Lookup Find(const pb::RequestIdPB& id, const pb::SysDdlAnswerEntryPB** entry) const;

  // Adds to `batch` the deletion of the stored answers of `id`'s client below
  // id.first_incomplete_seq_no: the client will never retry those requests.
  void AddReleased(const pb::RequestIdPB& id, pb::SysCatalogWriteBatchPB* batch) const;
  // Adds to `batch` the deletion of at most `max` answers written before `cutoff_micros` (wall
  // clock), in no particular order; returns how many it added.
  int AddExpired(int64_t cutoff_micros, int max, pb::SysCatalogWriteBatchPB* batch) const;

  size_t size() const { return size_; }

 private:
  using ClientAnswers = std::map<uint64_t, pb::SysDdlAnswerEntryPB>;  // By seq_no.

  static uint64_t Watermark(const ClientAnswers& answers);
  void Upsert(const pb::SysDdlAnswerEntryPB& entry);
  void Delete(const pb::RequestIdPB& id);

  // Client id -> its answers; a client without answers has no element.
  absl::flat_hash_map<std::string, ClientAnswers> clients_;
  size_t size_ = 0;  // Answers over all clients.
};

}  // namespace basalt
