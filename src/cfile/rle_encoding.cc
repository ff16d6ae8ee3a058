#include "cfile/rle_encoding.h"

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
constexpr std::string_view kRle = "RLE";
// Shortest run coded as a repeat: 16 values cost 2 literal bytes, a repeat header 1-2 bytes.
constexpr size_t kMinRepeat = 16;

class RlePageBuilder final : public PageBuilder {
 public:
  explicit RlePageBuilder(const PageBuilderOptions& options)
      : page_size_(options.page_size_bytes) {}

  size_t Add(const void* cells, size_t n) override {
    if (IsFull()) return 0;
    // Estimated size is one bit per value (literals); a page of long runs is smaller and then
    // ends at kMaxValuesPerPage.
    size_t room = std::max<size_t>(1, (page_size_ - std::min(page_size_, EstimatedSize())) * 8);
    room = std::min(room, kMaxValuesPerPage - values_.size());
    const size_t take = std::min(n, room);
    const uint8_t* v = static_cast<const uint8_t*>(cells);
    for (size_t i = 0; i < take; i++) values_.push_back(v[i] != 0);
    return take;
  }
  bool IsFull() const override {
    return encoding_internal::IsPageFull(values_.size(), EstimatedSize(), page_size_);
  }
  size_t count() const override { return values_.size(); }
  std::string_view Finish() override {
    buf_.clear();
    PutFixed32(&buf_, static_cast<uint32_t>(values_.size()));
    const size_t n = values_.size();
    size_t literal_start = 0;
    for (size_t i = 0; i < n;) {
      size_t j = i + 1;
      while (j < n && values_[j] == values_[i]) j++;
      if (j - i >= kMinRepeat) {
        AppendLiteral(literal_start, i);
        PutVarint32(&buf_, static_cast<uint32_t>(((j - i) << 2) | (values_[i] << 1)));
        literal_start = j;
      }
      i = j;
    }
    AppendLiteral(literal_start, n);
    return buf_;
  }
  void Reset() override { values_.clear(); }
  bool GetFirstValue(void* cell) const override { return CopyCell(0, cell); }
  bool GetLastValue(void* cell) const override { return CopyCell(values_.size() - 1, cell); }

 private:
  size_t EstimatedSize() const { return 4 + values_.size() / 8 + 1; }
  bool CopyCell(size_t i, void* cell) const {
    if (values_.empty()) return false;
    *static_cast<uint8_t*>(cell) = values_[i];
    return true;
  }
  void AppendLiteral(size_t begin, size_t end) {
    if (begin == end) return;
    PutVarint32(&buf_, static_cast<uint32_t>(((end - begin) << 1) | 1));
    const size_t at = buf_.size();
    buf_.resize(at + (end - begin + 7) / 8, '\0');
    for (size_t i = begin; i < end; i++) {
      buf_[at + (i - begin) / 8] |= static_cast<char>(values_[i] << ((i - begin) % 8));
    }
  }

  const size_t page_size_;
  std::vector<uint8_t> values_;
  std::string buf_;
};

class RlePageDecoder final : public encoding_internal::PositionedPageDecoder {
 public:
  absl::Status Init(std::string_view page) override {
    uint32_t count;
    BASALT_RETURN_IF_ERROR(encoding_internal::ReadPageCount(kRle, &page, &count));
    runs_.clear();
    const char* const begin = page.data();
    const char* p = begin;
    const char* const limit = begin + page.size();
    size_t total = 0;
    while (p < limit) {
      uint32_t h;
      const char* q = GetVarint32Ptr(p, limit, &h);
      if (q == nullptr) return Corruption(kRle, "bad run header at offset ", 4 + (p - begin));
      Run run{total, static_cast<uint32_t>(q - begin), (h & 1) ? h >> 1 : h >> 2, h};
      if (run.length == 0 || run.length > count - total) {
        return Corruption(kRle, "run of ", run.length, " values at offset ", 4 + (p - begin),
                          " is empty or passes the count ", count);
      }
      size_t payload = (h & 1) ? (size_t{run.length} + 7) / 8 : 0;
      if (payload > static_cast<size_t>(limit - q)) {
        return Corruption(kRle, "literal run at offset ", 4 + (p - begin), " is truncated");
      }
      runs_.push_back(run);
      total += run.length;
      p = q + payload;
    }
    if (total != count) {
      return Corruption(kRle, "runs hold ", total, " values, the header says ", count);
    }
    data_ = begin;
    count_ = count;
    SeekToPositionInPage(0);
    return absl::OkStatus();
  }
  void SeekToPositionInPage(size_t pos) override {
    DCHECK_LE(pos, count_);
    pos_ = pos;
    // The last run starting at or before pos.
    auto it = std::upper_bound(runs_.begin(), runs_.end(), pos,
                               [](size_t p, const Run& r) { return p < r.start; });
    run_ = it == runs_.begin() ? 0 : static_cast<size_t>(it - runs_.begin()) - 1;
  }
  absl::StatusOr<size_t> DecodeNext(size_t n, ColumnBlock* out, size_t dst_offset) override {
    const size_t k = std::min(n, count_ - pos_);
    DCHECK_LE(dst_offset + k, out->capacity);
    uint8_t* dst = out->cell(dst_offset);
    size_t done = 0;
    while (done < k) {
      const Run& r = runs_[run_];
      const size_t in_run = pos_ - r.start;
      const size_t take = std::min(k - done, r.length - in_run);
      if (r.header & 1) {
        const uint8_t* bits = reinterpret_cast<const uint8_t*>(data_ + r.payload);
        for (size_t j = 0; j < take; j++) dst[done + j] = BitmapTest(bits, in_run + j);
      } else {
        std::memset(dst + done, (r.header >> 1) & 1, take);
      }
      done += take;
      pos_ += take;
      if (in_run + take == r.length && run_ + 1 < runs_.size()) run_++;
    }
    return k;
  }

 protected:
  absl::Status CompareAt(size_t pos, const void* value, int* result) override {
    const size_t saved = pos_;
    SeekToPositionInPage(pos);
    const Run& r = runs_[run_];
    const uint8_t v =
        (r.header & 1)
            ? BitmapTest(reinterpret_cast<const uint8_t*>(data_ + r.payload), pos - r.start)
            : (r.header >> 1) & 1;
    SeekToPositionInPage(saved);
    const uint8_t target = *static_cast<const uint8_t*>(value);
    *result = (v > target) - (v < target);
    return absl::OkStatus();
  }

 private:
  struct Run {
    size_t start;      // Position of the run's first value.
    uint32_t payload;  // Offset of the literal bits in data_ (literal runs).
    uint32_t length;
    uint32_t header;
  };

  const char* data_ = nullptr;
  std::vector<Run> runs_;
  size_t run_ = 0;  // Index in runs_ of the run holding pos_ (or the last run at the end).
};

}  // namespace

std::unique_ptr<PageBuilder> NewRlePageBuilder(const PageBuilderOptions& options) {
  return std::make_unique<RlePageBuilder>(options);
}

std::unique_ptr<PageDecoder> NewRlePageDecoder() { return std::make_unique<RlePageDecoder>(); }

}  // namespace basalt
