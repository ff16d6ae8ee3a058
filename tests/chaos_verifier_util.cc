#include "tests/chaos_verifier_util.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/strings.h"

namespace basalt::chaos {

namespace {

constexpr size_t kMaxExamples = 10;

void Example(Verdict* v, std::string what) {
  if (v->examples.size() < kMaxExamples) v->examples.push_back(std::move(what));
}

}  // namespace

std::string Verdict::ToJson(uint64_t seed) const {
  return StrCat(
      "{\"seed\":", seed, ",\"acknowledged\":", acknowledged, ",\"rows\":", rows,
      ",\"lost\":", lost, ",\"phantom\":", phantom, ",\"duplicated\":", duplicated,
      ",\"lost_updates\":", lost_updates, ",\"corrupt\":", corrupt,
      ",\"own_already_exists\":", own_already_exists,
      ",\"longest_write_unavailability_s\":", absl::StrFormat("%.1f", longest_unavailability_s),
      ",\"longest_flush_s\":", absl::StrFormat("%.1f", longest_flush_s), "}");
}

Verdict Verify(const std::vector<WriterLog>& logs, const std::vector<ScannedRow>& rows) {
  Verdict v;
  v.rows = static_cast<int64_t>(rows.size());
  const int num_writers = logs.empty() ? 1 : logs[0].num_writers;
  absl::flat_hash_map<int32_t, int32_t> found;  // key → int_val
  for (const ScannedRow& r : rows) {
    if (!found.emplace(r.key, r.value).second) {
      ++v.duplicated;
      Example(&v, StrCat("key ", r.key, " returned twice"));
    }
    const std::string want = StrCat("w", r.key % num_writers, "-", r.value);
    if (r.key >= 0 && r.label != want) {
      ++v.corrupt;
      Example(&v, StrCat("key ", r.key, " has string_val ", r.label.value_or("NULL"), ", want ",
                         want, " (written with int_val ", r.value, ")"));
    }
  }
  absl::flat_hash_set<int32_t> refused;  // Inserts answered "not applied".
  for (const WriterLog& log : logs) {
    v.acknowledged += static_cast<int64_t>(log.acked_inserts.size()) + log.acked_updates;
    v.own_already_exists += log.own_already_exists;
    v.longest_unavailability_s =
        std::max(v.longest_unavailability_s, absl::ToDoubleSeconds(log.longest_gap));
    v.longest_flush_s = std::max(v.longest_flush_s, absl::ToDoubleSeconds(log.longest_flush));
    for (int32_t key : log.acked_inserts) {
      if (!found.contains(key)) {
        ++v.lost;
        Example(&v, StrCat("acknowledged insert of key ", key, " (writer ", log.writer,
                           ") is missing"));
      }
    }
    refused.insert(log.failed_inserts.begin(), log.failed_inserts.end());
  }
  for (const auto& [key, value] : found) {
    // Which writer sent it, and was it among the inserts it attempted and not refused?
    const int writer = key >= 0 ? key % num_writers : -1;
    const WriterLog* log = nullptr;
    for (const WriterLog& l : logs) {
      if (l.writer == writer) log = &l;
    }
    if (log == nullptr || key / num_writers >= log->attempted_inserts || refused.contains(key)) {
      ++v.phantom;
      Example(&v, StrCat("key ", key, " was never written (or its insert was refused)"));
      continue;
    }
    // Values: 0 from the insert, then the writer's update values, growing.
    auto acked = log->acked_value.find(key);
    auto sent = log->max_sent_value.find(key);
    const int32_t min_ok = acked == log->acked_value.end() ? 0 : acked->second;
    const int32_t max_ok = sent == log->max_sent_value.end() ? 0 : sent->second;
    if (value < min_ok || value > max_ok) {
      ++v.lost_updates;
      Example(&v, StrCat("key ", key, " has value ", value, ", want ", min_ok, "..", max_ok));
    }
  }
  return v;
}

}  // namespace basalt::chaos
