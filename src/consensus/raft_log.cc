#include "consensus/raft_log.h"

#include <algorithm>
#include <utility>

#include <glog/logging.h>

#include "absl/status/status.h"
#include "common/strings.h"

namespace basalt {

RaftLog::RaftLog(const LogReader* durable, uint64_t committed, uint64_t applied)
    : durable_(durable), unstable_offset_(durable->LastIndex() + 1), persisting_(unstable_offset_) {
  // The commit index is volatile state in Raft: lowering it to what the log holds is safe.
  // Compacted entries are contained in the state the replica was copied from: applied.
  applied = std::max(applied, durable->FirstIndex() - 1);
  committed_ = std::min(std::max(committed, applied), durable->LastIndex());
  applied_ = std::min(applied, committed_);
  applying_ = applied_;
}

uint64_t RaftLog::FirstIndex() const { return durable_->FirstIndex(); }

uint64_t RaftLog::LastIndex() const {
  if (!unstable_.empty()) return unstable_offset_ + unstable_.size() - 1;
  return durable_->LastIndex();
}

uint64_t RaftLog::LastTerm() const {
  absl::StatusOr<uint64_t> t = Term(LastIndex());
  CHECK(t.ok()) << "cannot read the term of the last log entry: " << t.status();
  return *t;
}

const LogEntry* RaftLog::Unstable(uint64_t index) const {
  if (index < unstable_offset_ || index >= unstable_offset_ + unstable_.size()) return nullptr;
  return &unstable_[index - unstable_offset_];
}

absl::StatusOr<uint64_t> RaftLog::Term(uint64_t index) const {
  if (const LogEntry* e = Unstable(index)) return e->term;
  if (index >= unstable_offset_) {
    return absl::NotFoundError(StrCat("index ", index, " beyond the last index ", LastIndex()));
  }
  if (index == 0) return 0;
  return durable_->Term(index);
}

bool RaftLog::MatchTerm(uint64_t index, uint64_t term) const {
  absl::StatusOr<uint64_t> t = Term(index);
  return t.ok() && *t == term;
}

bool RaftLog::IsUpToDate(uint64_t last_index, uint64_t last_term) const {
  const uint64_t my_term = LastTerm();
  return last_term > my_term || (last_term == my_term && last_index >= LastIndex());
}

absl::StatusOr<std::vector<LogEntry>> RaftLog::Entries(uint64_t lo, uint64_t hi,
                                                       uint64_t max_bytes) const {
  CHECK_LT(lo, hi);
  if (hi > LastIndex() + 1) {
    return absl::NotFoundError(StrCat("entries up to ", hi - 1, " beyond the last index"));
  }
  std::vector<LogEntry> out;
  if (lo < unstable_offset_) {
    auto durable = durable_->Entries(lo, std::min(hi, unstable_offset_), max_bytes);
    if (!durable.ok()) return durable.status();
    out = std::move(*durable);
    if (out.empty() || out.back().index + 1 < std::min(hi, unstable_offset_)) return out;
  }
  uint64_t bytes = 0;
  for (const LogEntry& e : out) bytes += LogEntrySize(e);
  for (uint64_t i = std::max(lo, unstable_offset_); i < hi; ++i) {
    const LogEntry& e = *Unstable(i);
    bytes += LogEntrySize(e);
    if (!out.empty() && bytes > max_bytes) break;
    out.push_back(e);
  }
  return out;
}

void RaftLog::Append(std::vector<LogEntry> entries) {
  if (entries.empty()) return;
  const uint64_t first = entries.front().index;
  CHECK_GT(first, committed_) << "cannot overwrite committed entries";
  CHECK_LE(first, LastIndex() + 1);
  if (first <= unstable_offset_) {
    // Replaces every unstable entry and masks durable entries from `first` on.
    unstable_offset_ = first;
    unstable_ = std::move(entries);
  } else {
    unstable_.resize(first - unstable_offset_);
    for (LogEntry& e : entries) unstable_.push_back(std::move(e));
  }
  persisting_ = std::min(persisting_, first);
}

void RaftLog::AppendFrom(std::vector<LogEntry> entries, size_t i) {
  if (i > 0) entries.erase(entries.begin(), entries.begin() + static_cast<ptrdiff_t>(i));
  Append(std::move(entries));
}

std::optional<uint64_t> RaftLog::MaybeAppend(uint64_t prev_index, uint64_t prev_term,
                                             std::vector<LogEntry> entries) {
  if (!MatchTerm(prev_index, prev_term)) return std::nullopt;
  const uint64_t last_new = prev_index + entries.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    const LogEntry& e = entries[i];
    CHECK_EQ(e.index, prev_index + 1 + i) << "non-contiguous entries in an append";
    if (e.index > LastIndex()) {
      AppendFrom(std::move(entries), i);
      return last_new;
    }
    absl::StatusOr<uint64_t> t = Term(e.index);
    if (!t.ok()) return std::nullopt;  // Cannot verify the log here: reject, the leader retries.
    if (*t != e.term) {
      CHECK_GT(e.index, committed_) << "conflict at committed index " << e.index;
      AppendFrom(std::move(entries), i);
      return last_new;
    }
  }
  return last_new;
}

OpId RaftLog::FindConflictByTerm(uint64_t index, uint64_t term) const {
  index = std::min(index, LastIndex());
  for (;; --index) {
    absl::StatusOr<uint64_t> t = Term(index);
    if (!t.ok()) return OpId{0, index};
    if (*t <= term || index == 0) return OpId{*t, index};
  }
}

bool RaftLog::CommitTo(uint64_t index) {
  index = std::min(index, LastIndex());
  if (index <= committed_) return false;
  committed_ = index;
  apply_read_failed_ = false;
  return true;
}

bool RaftLog::HasEntriesToPersist() const {
  return persisting_ < unstable_offset_ + unstable_.size();
}

std::vector<LogEntry> RaftLog::TakeEntriesToPersist() {
  if (!HasEntriesToPersist()) return {};
  std::vector<LogEntry> out(unstable_.begin() + (persisting_ - unstable_offset_), unstable_.end());
  persisting_ = unstable_offset_ + unstable_.size();
  return out;
}

void RaftLog::StableTo(uint64_t index, uint64_t term) {
  const LogEntry* e = Unstable(index);
  if (e == nullptr || e->term != term || index >= persisting_) return;  // Replaced meanwhile.
  unstable_.erase(unstable_.begin(), unstable_.begin() + (index - unstable_offset_ + 1));
  unstable_offset_ = index + 1;
}

std::vector<LogEntry> RaftLog::TakeEntriesToApply(uint64_t max_bytes) {
  if (!HasEntriesToApply()) return {};
  absl::StatusOr<std::vector<LogEntry>> entries = Entries(applying_ + 1, committed_ + 1, max_bytes);
  if (!entries.ok()) {
    LOG(ERROR) << "cannot read committed entries from " << applying_ + 1 << ": "
               << entries.status();
    apply_read_failed_ = true;
    return {};
  }
  if (!entries->empty()) applying_ = entries->back().index;
  return std::move(*entries);
}

void RaftLog::AppliedTo(uint64_t index) {
  applied_ = std::max(applied_, std::min(index, applying_));
}

}  // namespace basalt
