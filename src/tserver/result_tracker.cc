#include "tserver/result_tracker.h"

#include <algorithm>
#include <utility>

#include <gflags/gflags.h>

#include "common/env.h"
#include "common/envelope.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/tablet_replica.pb.h"
#include "rpc/rpc_status.h"

DEFINE_int64(remember_clients_ttl_ms, 3600 * 1000,
             "How long a tablet server remembers the answers of a client it has not heard from "
             "(exactly-once writes): a retry after that is applied again.");
DEFINE_int64(remember_responses_ttl_ms, 600 * 1000,
             "How long a tablet server keeps the answer of a completed write request for a retry "
             "(exactly-once writes), unless the client's watermark releases it earlier.");

namespace basalt {

ResultTracker::Options ResultTracker::Options::FromFlags() {
  Options o;
  o.client_ttl = absl::Milliseconds(FLAGS_remember_clients_ttl_ms);
  o.answer_ttl = absl::Milliseconds(FLAGS_remember_responses_ttl_ms);
  return o;
}

ResultTracker::ResultTracker(Options options) : options_(options) {}

void ResultTracker::AdvanceWatermark(Client* client, uint64_t first_incomplete) {
  if (first_incomplete <= client->watermark) return;
  client->watermark = first_incomplete;
  // In progress below the watermark cannot be: the client counts such a request incomplete.
  client->entries.erase(client->entries.begin(), client->entries.lower_bound(first_incomplete));
}

ResultTracker::Admission ResultTracker::Admit(const pb::RequestIdPB& id, absl::Time now,
                                              Answer* answer) {
  absl::MutexLock l(&mu_);
  MaybeGarbageCollectLocked(now);
  Client& client = clients_[id.client_id()];
  client.last_heard = now;
  auto it = client.entries.find(id.seq_no());
  if (it != client.entries.end()) {
    if (it->second.in_progress) return Admission::kInProgress;
    *answer = it->second.answer;
    return Admission::kAnswered;
  }
  if (id.seq_no() < client.watermark) return Admission::kStale;
  const size_t before = client.entries.size();
  const uint64_t watermark = client.watermark;
  AdvanceWatermark(&client, id.first_incomplete_seq_no());
  if (client.watermark != watermark) ++changes_;
  Entry& e = client.entries[id.seq_no()];
  e.in_progress = true;
  e.at = now;
  num_entries_ = num_entries_ - before + client.entries.size();
  return Admission::kNew;
}

bool ResultTracker::InProgress(const pb::RequestIdPB& id) const {
  absl::MutexLock l(&mu_);
  auto c = clients_.find(id.client_id());
  if (c == clients_.end()) return false;
  auto it = c->second.entries.find(id.seq_no());
  return it != c->second.entries.end() && it->second.in_progress;
}

void ResultTracker::Abandon(const pb::RequestIdPB& id) {
  absl::MutexLock l(&mu_);
  auto c = clients_.find(id.client_id());
  if (c == clients_.end()) return;
  auto it = c->second.entries.find(id.seq_no());
  if (it == c->second.entries.end() || !it->second.in_progress) return;
  c->second.entries.erase(it);
  --num_entries_;
}

void ResultTracker::Record(const pb::RequestIdPB& id, uint64_t log_index, absl::Time now,
                           Answer answer) {
  if (id.client_id().empty()) return;
  absl::MutexLock l(&mu_);
  MaybeGarbageCollectLocked(now);
  Client& client = clients_[id.client_id()];
  client.last_heard = std::max(client.last_heard, now);
  const size_t before = client.entries.size();
  AdvanceWatermark(&client, id.first_incomplete_seq_no());
  ++changes_;
  max_recorded_index_ = std::max(max_recorded_index_, log_index);
  if (id.seq_no() >= client.watermark) {
    auto [it, inserted] = client.entries.try_emplace(id.seq_no());
    Entry& e = it->second;
    if (inserted || e.in_progress) {  // New to this replica, or in progress here.
      e.in_progress = false;
      e.at = now;
      e.log_index = log_index;
      e.answer = std::move(answer);
    }
  }
  num_entries_ = num_entries_ - before + client.entries.size();
}

void ResultTracker::MaybeGarbageCollectLocked(absl::Time now) {
  if (now - last_gc_ < absl::Seconds(1)) return;
  GarbageCollectLocked(now);
}

void ResultTracker::GarbageCollect(absl::Time now) {
  absl::MutexLock l(&mu_);
  GarbageCollectLocked(now);
}

void ResultTracker::GarbageCollectLocked(absl::Time now) {
  last_gc_ = now;
  for (auto c = clients_.begin(); c != clients_.end();) {
    Client& client = c->second;
    for (auto e = client.entries.begin(); e != client.entries.end();) {
      // An attempt in progress is kept: its entry may still be applied (its TTL runs from then).
      if (!e->second.in_progress && now - e->second.at > options_.answer_ttl) {
        e = client.entries.erase(e);
        --num_entries_;
        ++changes_;
      } else {
        ++e;
      }
    }
    if (now - client.last_heard > options_.client_ttl && client.entries.empty()) {
      clients_.erase(c++);
      ++changes_;
    } else {
      ++c;
    }
  }
}

namespace {

constexpr std::string_view kAnswersMagic("BSLTANS1", 8);

}  // namespace

absl::Status ResultTracker::Save(Env* env, const std::string& path, uint64_t max_log_index) {
  absl::MutexLock s(&save_mu_);
  uint64_t changes = 0;
  uint64_t max_recorded = 0;
  {
    absl::MutexLock l(&mu_);
    changes = changes_;
    max_recorded = max_recorded_index_;
  }
  if (saved_ && changes == saved_changes_ && max_recorded <= saved_max_index_ &&
      max_log_index >= saved_max_index_) {
    return absl::OkStatus();  // The file holds this already.
  }
  // A change between the read above and the image only makes the next Save write again.
  BASALT_RETURN_IF_ERROR(WriteFileAtomically(env, path, Image(max_log_index)));
  saved_ = true;
  saved_changes_ = changes;
  saved_max_index_ = max_log_index;
  return absl::OkStatus();
}

std::string ResultTracker::Image(uint64_t max_log_index) const {
  pb::RememberedAnswersPB pb;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [client_id, client] : clients_) {
      pb::RememberedAnswersPB::ClientPB* c = pb.add_clients();
      c->set_client_id(client_id);
      c->set_watermark(client.watermark);
      c->set_last_heard_unix_micros(absl::ToUnixMicros(client.last_heard));
      for (const auto& [seq, e] : client.entries) {
        if (e.in_progress || e.log_index > max_log_index) continue;
        pb::RememberedAnswersPB::AnswerPB* a = c->add_answers();
        a->set_seq_no(seq);
        a->set_log_index(e.log_index);
        a->set_at_unix_micros(absl::ToUnixMicros(e.at));
        if (!e.answer.status.ok()) {
          StatusToPB(e.answer.status, a->mutable_status());
          if (auto detail = GetErrorDetail(e.answer.status)) *a->mutable_status_detail() = *detail;
        }
        *a->mutable_response() = e.answer.response;
      }
    }
  }
  return SealEnvelope(kAnswersMagic, pb.SerializeAsString());
}

absl::Status ResultTracker::Load(Env* env, const std::string& path) {
  if (!env->FileExists(path)) return absl::OkStatus();
  std::string data;
  BASALT_RETURN_IF_ERROR(ReadFileToString(env, path, &data));
  BASALT_ASSIGN_OR_RETURN(std::string_view payload,
                          OpenEnvelope(data, kAnswersMagic, path, "remembered answers"));
  pb::RememberedAnswersPB pb;
  if (!pb.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return absl::DataLossError(ToAbsl(StrCat(path, ": unparsable RememberedAnswersPB")));
  }
  absl::MutexLock l(&mu_);
  ++changes_;
  for (const pb::RememberedAnswersPB::ClientPB& c : pb.clients()) {
    Client& client = clients_[c.client_id()];
    client.last_heard =
        std::max(client.last_heard, absl::FromUnixMicros(c.last_heard_unix_micros()));
    client.watermark = std::max(client.watermark, c.watermark());
    for (const pb::RememberedAnswersPB::AnswerPB& a : c.answers()) {
      if (a.seq_no() < client.watermark) continue;
      auto [it, inserted] = client.entries.try_emplace(a.seq_no());
      if (!inserted) continue;
      Entry& e = it->second;
      e.at = absl::FromUnixMicros(a.at_unix_micros());
      e.log_index = a.log_index();
      max_recorded_index_ = std::max(max_recorded_index_, e.log_index);
      if (a.has_status()) {
        e.answer.status = StatusFromPB(a.status());
        if (a.has_status_detail()) {
          e.answer.status = WithErrorDetail(std::move(e.answer.status), a.status_detail());
        }
      }
      e.answer.response = a.response();
      ++num_entries_;
    }
  }
  return absl::OkStatus();
}

size_t ResultTracker::num_clients() const {
  absl::MutexLock l(&mu_);
  return clients_.size();
}

size_t ResultTracker::num_answers() const {
  absl::MutexLock l(&mu_);
  return num_entries_;
}

}  // namespace basalt
