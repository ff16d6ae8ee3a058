#include "master/ddl_answers.h"

#include <algorithm>

namespace basalt {

void DdlAnswers::Clear() {
  clients_.clear();
  size_ = 0;
}

void DdlAnswers::Apply(const pb::SysCatalogWriteBatchPB& batch) {
  for (const pb::SysDdlAnswerEntryPB& a : batch.upsert_ddl_answers()) Upsert(a);
  for (const pb::RequestIdPB& id : batch.delete_ddl_answers()) Delete(id);
}

void DdlAnswers::Upsert(const pb::SysDdlAnswerEntryPB& entry) {
  auto [it, inserted] =
      clients_[entry.request_id().client_id()].insert_or_assign(entry.request_id().seq_no(), entry);
  if (inserted) ++size_;
}

void DdlAnswers::Delete(const pb::RequestIdPB& id) {
  auto client = clients_.find(id.client_id());
  if (client == clients_.end()) return;
  size_ -= client->second.erase(id.seq_no());
  if (client->second.empty()) clients_.erase(client);
}

uint64_t DdlAnswers::Watermark(const ClientAnswers& answers) {
  uint64_t watermark = 0;
  for (const auto& [seq, a] : answers) {
    watermark = std::max(watermark, a.request_id().first_incomplete_seq_no());
  }
  return watermark;
}

DdlAnswers::Lookup DdlAnswers::Find(const pb::RequestIdPB& id,
                                    const pb::SysDdlAnswerEntryPB** entry) const {
  auto client = clients_.find(id.client_id());
  if (client == clients_.end()) return Lookup::kNew;
  auto it = client->second.find(id.seq_no());
  if (it != client->second.end()) {
    *entry = &it->second;
    return Lookup::kAnswered;
  }
  // Answers below the watermark were deleted when it was raised: a request there is not new.
  return id.seq_no() < Watermark(client->second) ? Lookup::kStale : Lookup::kNew;
}

void DdlAnswers::AddReleased(const pb::RequestIdPB& id, pb::SysCatalogWriteBatchPB* batch) const {
  auto client = clients_.find(id.client_id());
  if (client == clients_.end()) return;
  const ClientAnswers& answers = client->second;
  for (auto it = answers.begin(); it != answers.lower_bound(id.first_incomplete_seq_no()); ++it) {
    pb::RequestIdPB* del = batch->add_delete_ddl_answers();
    del->set_client_id(id.client_id());
    del->set_seq_no(it->first);
  }
}

int DdlAnswers::AddExpired(int64_t cutoff_micros, int max,
                           pb::SysCatalogWriteBatchPB* batch) const {
  int added = 0;
  for (const auto& [client_id, answers] : clients_) {
    for (const auto& [seq, a] : answers) {
      if (added >= max) return added;
      if (a.write_time_micros() >= cutoff_micros) continue;
      pb::RequestIdPB* del = batch->add_delete_ddl_answers();
      del->set_client_id(client_id);
      del->set_seq_no(seq);
      ++added;
    }
  }
  return added;
}

}  // namespace basalt
