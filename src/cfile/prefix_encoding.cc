#include "cfile/prefix_encoding.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "cfile/encoding_internal.h"
#include "common/coding.h"
#include "glog/logging.h"

namespace basalt {
namespace {

using encoding_internal::Corruption;
constexpr std::string_view kPrefix = "PREFIX";

class PrefixPageBuilder final : public PageBuilder {
 public:
  explicit PrefixPageBuilder(const PageBuilderOptions& options)
      : page_size_(options.page_size_bytes) {}

  size_t Add(const void* cells, size_t n) override {
    const auto* values = static_cast<const std::string_view*>(cells);
    size_t i = 0;
    for (; i < n && !IsFull(); i++) {
      const std::string_view v = values[i];
      size_t shared = 0;
      if (count_ % kPrefixRestartInterval == 0) {
        restarts_.push_back(static_cast<uint32_t>(entries_.size()));
      } else {
        const size_t max = std::min(last_.size(), v.size());
        while (shared < max && last_[shared] == v[shared]) shared++;
      }
      PutVarint32(&entries_, static_cast<uint32_t>(shared));
      PutVarint32(&entries_, static_cast<uint32_t>(v.size() - shared));
      entries_.append(v.data() + shared, v.size() - shared);
      if (count_ == 0) first_.assign(v.data(), v.size());
      last_.assign(v.data(), v.size());
      count_++;
    }
    return i;
  }
  bool IsFull() const override {
    return encoding_internal::IsPageFull(count_, EstimatedSize(), page_size_);
  }
  size_t count() const override { return count_; }
  std::string_view Finish() override {
    buf_.clear();
    buf_.reserve(EstimatedSize());
    PutFixed32(&buf_, static_cast<uint32_t>(count_));
    PutFixed32(&buf_, static_cast<uint32_t>(restarts_.size()));
    for (uint32_t r : restarts_) PutFixed32(&buf_, r);
    buf_.append(entries_);
    return buf_;
  }
  void Reset() override {
    entries_.clear();
    restarts_.clear();
    last_.clear();
    first_.clear();
    count_ = 0;
  }
  bool GetFirstValue(void* cell) const override {
    if (count_ == 0) return false;
    *static_cast<std::string_view*>(cell) = first_;
    return true;
  }
  bool GetLastValue(void* cell) const override {
    if (count_ == 0) return false;
    *static_cast<std::string_view*>(cell) = last_;
    return true;
  }

 private:
  size_t EstimatedSize() const { return 8 + 4 * restarts_.size() + entries_.size(); }

  const size_t page_size_;
  std::string entries_;
  std::vector<uint32_t> restarts_;
  std::string first_;
  std::string last_;
  std::string buf_;
  size_t count_ = 0;
};

// Decodes entries sequentially from a restart point; every entry is checked as it is read.
class PrefixPageDecoder final : public encoding_internal::PositionedPageDecoder {
 public:
  absl::Status Init(std::string_view page) override {
    uint32_t count, num_restarts;
    BASALT_RETURN_IF_ERROR(encoding_internal::ReadPageCount(kPrefix, &page, &count));
    if (!GetFixed32(&page, &num_restarts)) return Corruption(kPrefix, "truncated header");
    const size_t want = (size_t{count} + kPrefixRestartInterval - 1) / kPrefixRestartInterval;
    if (num_restarts != want) {
      return Corruption(kPrefix, num_restarts, " restart points for ", count, " values, want ",
                        want);
    }
    if (page.size() < 4 * size_t{num_restarts}) {
      return Corruption(kPrefix, "restart array truncated");
    }
    restarts_ = page.data();
    entries_ = page.substr(4 * size_t{num_restarts});
    // Only the ends of the restart array are checked here, so that Init costs the same for any
    // page size (a key lookup loads a page per seek). Every other offset is checked when used:
    // ReadEntry rejects an offset outside the entries, and sequential decoding checks that each
    // restart entry starts where the previous entry ended.
    if (num_restarts > 0 && (Restart(0) != 0 || Restart(num_restarts - 1) >= entries_.size())) {
      return Corruption(kPrefix, "restart offsets ", Restart(0), "..", Restart(num_restarts - 1),
                        " are invalid for ", entries_.size(), " bytes of entries");
    }
    count_ = count;
    num_restarts_ = num_restarts;
    SeekToRestart(0);
    return absl::OkStatus();
  }
  void SeekToPositionInPage(size_t pos) override {
    DCHECK_LE(pos, count_);
    if (pos < pos_ || pos / kPrefixRestartInterval != pos_ / kPrefixRestartInterval) {
      const size_t last = num_restarts_ == 0 ? 0 : num_restarts_ - 1;
      SeekToRestart(std::min(pos / kPrefixRestartInterval, last));
    }
    // Corruption met while skipping is reported again by the next DecodeNext.
    while (pos_ < pos && ReadEntry().ok()) {
    }
    if (pos_ < pos) {
      pos_ = pos;
      broken_ = true;
    }
  }
  absl::StatusOr<size_t> DecodeNext(size_t n, ColumnBlock* out, size_t dst_offset) override {
    if (broken_) return Corruption(kPrefix, "malformed entry before position ", pos_);
    const size_t k = std::min(n, count_ - pos_);
    DCHECK_LE(dst_offset + k, out->capacity);
    DCHECK(out->arena != nullptr) << "PREFIX decoding needs ColumnBlock::arena";
    std::string_view* dst = out->data<std::string_view>() + dst_offset;
    for (size_t j = 0; j < k; j++) {
      BASALT_RETURN_IF_ERROR(ReadEntry());
      dst[j] = out->arena->AddString(value_);
    }
    return k;
  }
  absl::Status SeekAtOrAfterValue(const void* value, bool* exact) override;

 protected:
  absl::Status CompareAt(size_t pos, const void* value, int* result) override {
    SeekToPositionInPage(pos);
    if (broken_) return Corruption(kPrefix, "malformed entry before position ", pos);
    BASALT_RETURN_IF_ERROR(ReadEntry());
    *result = Compare(value_, *static_cast<const std::string_view*>(value));
    return absl::OkStatus();
  }

 private:
  static int Compare(std::string_view a, std::string_view b) {
    const int c = a.compare(b);
    return (c > 0) - (c < 0);
  }
  uint32_t Restart(size_t r) const { return DecodeFixed32(restarts_ + 4 * r); }
  void SeekToRestart(size_t r) {
    pos_ = r * kPrefixRestartInterval;
    offset_ = num_restarts_ == 0 ? 0 : Restart(r);
    value_.clear();
    broken_ = false;
  }
  // Reads the entry at pos_ into value_ and advances. DATA_LOSS if it is malformed.
  absl::Status ReadEntry();

  const char* restarts_ = nullptr;
  std::string_view entries_;
  size_t num_restarts_ = 0;
  size_t offset_ = 0;    // Offset in entries_ of the entry at pos_.
  std::string value_;    // The value at pos_ - 1 (empty at a restart).
  bool broken_ = false;  // A seek skipped over a malformed entry.
};

absl::Status PrefixPageDecoder::ReadEntry() {
  DCHECK_LT(pos_, count_);
  if (offset_ >= entries_.size()) {
    return Corruption(kPrefix, "entry ", pos_, " at offset ", offset_, " is past the entries");
  }
  if (pos_ % kPrefixRestartInterval == 0 && offset_ != Restart(pos_ / kPrefixRestartInterval)) {
    return Corruption(kPrefix, "entry ", pos_, " is not at its restart offset");
  }
  const char* p = entries_.data() + offset_;
  const char* limit = entries_.data() + entries_.size();
  uint32_t shared, non_shared;
  p = GetVarint32Ptr(p, limit, &shared);
  if (p != nullptr) p = GetVarint32Ptr(p, limit, &non_shared);
  if (p == nullptr || shared > value_.size() || non_shared > static_cast<size_t>(limit - p) ||
      (pos_ % kPrefixRestartInterval == 0 && shared != 0)) {
    return Corruption(kPrefix, "malformed entry ", pos_, " at offset ", offset_);
  }
  value_.resize(shared);
  value_.append(p, non_shared);
  p += non_shared;
  offset_ = p - entries_.data();
  pos_++;
  if (pos_ == count_ && offset_ != entries_.size()) {
    return Corruption(kPrefix, entries_.size() - offset_, " trailing bytes after the last entry");
  }
  return absl::OkStatus();
}

absl::Status PrefixPageDecoder::SeekAtOrAfterValue(const void* value, bool* exact) {
  const std::string_view target = *static_cast<const std::string_view*>(value);
  *exact = false;
  // The last restart whose key is < target: values before it are all smaller.
  size_t lo = 0, hi = num_restarts_;
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    SeekToRestart(mid);
    BASALT_RETURN_IF_ERROR(ReadEntry());
    if (Compare(value_, target) < 0) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  SeekToRestart(lo);
  while (pos_ < count_) {
    const size_t here = pos_;
    const size_t here_offset = offset_;
    std::string prev = value_;
    BASALT_RETURN_IF_ERROR(ReadEntry());
    const int c = Compare(value_, target);
    if (c >= 0) {
      // Step back so DecodeNext returns this value.
      pos_ = here;
      offset_ = here_offset;
      value_ = std::move(prev);
      *exact = c == 0;
      return absl::OkStatus();
    }
  }
  return absl::NotFoundError("every value in the page is smaller than the sought value");
}

}  // namespace

std::unique_ptr<PageBuilder> NewPrefixPageBuilder(const PageBuilderOptions& options) {
  return std::make_unique<PrefixPageBuilder>(options);
}

std::unique_ptr<PageDecoder> NewPrefixPageDecoder() {
  return std::make_unique<PrefixPageDecoder>();
}

}  // namespace basalt
