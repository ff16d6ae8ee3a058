#include "cfile/plain_encoding.h"

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
constexpr std::string_view kPlain = "PLAIN";

// Fixed-width cells: u32 count, then the cells.
class PlainFixedPageBuilder final : public PageBuilder {
 public:
  PlainFixedPageBuilder(DataType type, const PageBuilderOptions& options)
      : cell_size_(GetTypeInfo(type).size()), page_size_(options.page_size_bytes) {
    Reset();
  }

  size_t Add(const void* cells, size_t n) override {
    if (IsFull()) return 0;
    return encoding_internal::AppendFixedCells(cells, n, cell_size_, page_size_, buf_.size(), &buf_,
                                               &count_);
  }
  bool IsFull() const override {
    return encoding_internal::IsPageFull(count_, buf_.size(), page_size_);
  }
  size_t count() const override { return count_; }
  std::string_view Finish() override {
    encoding_internal::PatchPageCount(&buf_, 0, count_);
    return buf_;
  }
  void Reset() override {
    buf_.clear();
    encoding_internal::PutPageCountPlaceholder(&buf_);
    count_ = 0;
  }
  bool GetFirstValue(void* cell) const override { return CopyCell(0, cell); }
  bool GetLastValue(void* cell) const override { return CopyCell(count_ - 1, cell); }

 private:
  bool CopyCell(size_t i, void* cell) const {
    if (count_ == 0) return false;
    std::memcpy(cell, buf_.data() + 4 + i * cell_size_, cell_size_);
    return true;
  }

  const size_t cell_size_;
  const size_t page_size_;
  std::string buf_;
  size_t count_ = 0;
};

class PlainFixedPageDecoder final : public encoding_internal::PositionedPageDecoder {
 public:
  explicit PlainFixedPageDecoder(DataType type)
      : type_info_(GetTypeInfo(type)), cell_size_(type_info_.size()) {}

  absl::Status Init(std::string_view page) override {
    uint32_t count;
    BASALT_RETURN_IF_ERROR(encoding_internal::ReadPageCount(kPlain, &page, &count));
    if (page.size() != size_t{count} * cell_size_) {
      return Corruption(kPlain, count, " values of ", cell_size_, " bytes need ",
                        size_t{count} * cell_size_, " bytes but the page holds ", page.size());
    }
    data_ = page.data();
    ResetPosition(count);
    return absl::OkStatus();
  }
  absl::StatusOr<size_t> DecodeNext(size_t n, ColumnBlock* out, size_t dst_offset) override {
    const size_t k = std::min(n, count_ - pos_);
    if (k == 0) return 0;  // Empty pages have no buffers to copy from.
    DCHECK_LE(dst_offset + k, out->capacity);
    std::memcpy(out->cell(dst_offset), data_ + pos_ * cell_size_, k * cell_size_);
    if (type_info_.type() == DataType::kBool) {
      encoding_internal::NormalizeBools(out->cell(dst_offset), k);
    }
    pos_ += k;
    return k;
  }

 protected:
  absl::Status CompareAt(size_t pos, const void* value, int* result) override {
    *result = encoding_internal::CompareUnalignedCell(type_info_, data_ + pos * cell_size_, value);
    return absl::OkStatus();
  }

 private:
  const TypeInfo& type_info_;
  const size_t cell_size_;
  const char* data_ = nullptr;
};

// Variable-length cells: u32 count, u32 end offsets (relative to the value bytes), value bytes.
class PlainBinaryPageBuilder final : public PageBuilder {
 public:
  explicit PlainBinaryPageBuilder(const PageBuilderOptions& options)
      : page_size_(options.page_size_bytes) {}

  size_t Add(const void* cells, size_t n) override {
    const auto* values = static_cast<const std::string_view*>(cells);
    size_t i = 0;
    for (; i < n && !IsFull(); i++) {
      // Offsets are 32-bit: a page stays far below 4 GiB because it ends at the target size.
      CHECK_LT(data_.size() + values[i].size(), size_t{1} << 32) << "page too large";
      if (offsets_.empty()) first_.assign(values[i].data(), values[i].size());
      data_.append(values[i].data(), values[i].size());
      offsets_.push_back(static_cast<uint32_t>(data_.size()));
    }
    return i;
  }
  bool IsFull() const override {
    return encoding_internal::IsPageFull(offsets_.size(), EstimatedSize(), page_size_);
  }
  size_t count() const override { return offsets_.size(); }
  std::string_view Finish() override {
    buf_.clear();
    buf_.reserve(EstimatedSize());
    PutFixed32(&buf_, static_cast<uint32_t>(offsets_.size()));
    for (uint32_t off : offsets_) PutFixed32(&buf_, off);
    buf_.append(data_);
    return buf_;
  }
  void Reset() override {
    offsets_.clear();
    data_.clear();
    buf_.clear();
    first_.clear();
  }
  bool GetFirstValue(void* cell) const override {
    if (offsets_.empty()) return false;
    *static_cast<std::string_view*>(cell) = first_;
    return true;
  }
  bool GetLastValue(void* cell) const override {
    if (offsets_.empty()) return false;
    const size_t n = offsets_.size();
    const size_t start = n == 1 ? 0 : offsets_[n - 2];
    *static_cast<std::string_view*>(cell) =
        std::string_view(data_).substr(start, offsets_[n - 1] - start);
    return true;
  }

 private:
  size_t EstimatedSize() const { return 4 + 4 * offsets_.size() + data_.size(); }

  const size_t page_size_;
  std::vector<uint32_t> offsets_;
  std::string data_;
  std::string buf_;
  std::string first_;  // Kept apart: data_ may reallocate.
};

class PlainBinaryPageDecoder final : public encoding_internal::PositionedPageDecoder {
 public:
  absl::Status Init(std::string_view page) override {
    uint32_t count;
    BASALT_RETURN_IF_ERROR(encoding_internal::ReadPageCount(kPlain, &page, &count));
    if (page.size() < size_t{count} * 4) {
      return Corruption(kPlain, "offset array of ", count, " entries truncated to ", page.size(),
                        " bytes");
    }
    offsets_ = page.data();
    data_ = page.substr(size_t{count} * 4);
    // Offsets must be non-decreasing and the last must end the page exactly, so every value
    // decoded later lies inside the page.
    uint32_t prev = 0;
    for (uint32_t i = 0; i < count; i++) {
      const uint32_t off = DecodeFixed32(offsets_ + 4 * i);
      if (off < prev || off > data_.size()) {
        return Corruption(kPlain, "end offset ", off, " of value ", i, " is out of order or past ",
                          "the ", data_.size(), " value bytes");
      }
      prev = off;
    }
    if (prev != data_.size()) {
      return Corruption(kPlain, "values end at ", prev, " but the page has ", data_.size(),
                        " value bytes");
    }
    ResetPosition(count);
    return absl::OkStatus();
  }
  absl::StatusOr<size_t> DecodeNext(size_t n, ColumnBlock* out, size_t dst_offset) override {
    const size_t k = std::min(n, count_ - pos_);
    DCHECK_LE(dst_offset + k, out->capacity);
    std::string_view* dst = out->data<std::string_view>() + dst_offset;
    uint32_t start = StartOf(pos_);
    for (size_t j = 0; j < k; j++) {
      const uint32_t end = DecodeFixed32(offsets_ + 4 * (pos_ + j));
      dst[j] = std::string_view(data_.data() + start, end - start);
      start = end;
    }
    pos_ += k;
    return k;
  }

 protected:
  absl::Status CompareAt(size_t pos, const void* value, int* result) override {
    const uint32_t start = StartOf(pos);
    const std::string_view v(data_.data() + start, DecodeFixed32(offsets_ + 4 * pos) - start);
    const int c = v.compare(*static_cast<const std::string_view*>(value));
    *result = (c > 0) - (c < 0);
    return absl::OkStatus();
  }

 private:
  uint32_t StartOf(size_t i) const { return i == 0 ? 0 : DecodeFixed32(offsets_ + 4 * (i - 1)); }

  const char* offsets_ = nullptr;
  std::string_view data_;
};

}  // namespace

std::unique_ptr<PageBuilder> NewPlainPageBuilder(DataType type, const PageBuilderOptions& options) {
  if (GetTypeInfo(type).is_variable_length()) {
    return std::make_unique<PlainBinaryPageBuilder>(options);
  }
  return std::make_unique<PlainFixedPageBuilder>(type, options);
}

std::unique_ptr<PageDecoder> NewPlainPageDecoder(DataType type) {
  if (GetTypeInfo(type).is_variable_length()) return std::make_unique<PlainBinaryPageDecoder>();
  return std::make_unique<PlainFixedPageDecoder>(type);
}

}  // namespace basalt
