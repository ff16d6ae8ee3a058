#pragma once

// Helpers shared by the page encodings. Internal to src/cfile.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "cfile/encoding.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "common/types.h"
#include "glog/logging.h"

namespace basalt::encoding_internal {

// DATA_LOSS "<encoding> page: <message>".
template <typename... Args>
absl::Status Corruption(std::string_view encoding, const Args&... args) {
  return absl::DataLossError(StrCat(encoding, " page: ", args...));
}

// Every page starts with the number of values as a little-endian uint32. Consumes it from
// *page and checks it against kMaxValuesPerPage. DATA_LOSS otherwise.
absl::Status ReadPageCount(std::string_view encoding, std::string_view* page, uint32_t* count);

// Appends the 4-byte count placeholder that Finish() fills in with PatchPageCount().
inline void PutPageCountPlaceholder(std::string* buf) { buf->append(4, '\0'); }
void PatchPageCount(std::string* buf, size_t offset, size_t count);

// Three-way comparison of a cell stored at a possibly unaligned address (page memory) with a
// cell in row-buffer form, in TypeInfo::Compare order. Fixed-width types only.
int CompareUnalignedCell(const TypeInfo& type_info, const char* stored, const void* value);

// The usual page-full rule: a non-empty page is full at kMaxValuesPerPage values or once its
// estimated encoded size reaches the target. A page always takes at least one value, so a
// builder makes progress whatever the target.
inline bool IsPageFull(size_t count, size_t estimated_bytes, size_t page_size_bytes) {
  return count >= kMaxValuesPerPage || (count > 0 && estimated_bytes >= page_size_bytes);
}

// Normalizes decoded BOOL bytes to 0/1 so corrupt pages cannot produce other values.
void NormalizeBools(uint8_t* cells, size_t n);

// Appends to `buf` as many of the `n` fixed-width cells at `cells` as fit a page of `page_size`
// bytes of which `page_bytes` are used (always at least one; never more than kMaxValuesPerPage
// values in all), adds the number taken to *count and returns it. Shared by the builders that
// buffer raw cells (PLAIN fixed-width, BIT_SHUFFLE).
inline size_t AppendFixedCells(const void* cells, size_t n, size_t cell_size, size_t page_size,
                               size_t page_bytes, std::string* buf, size_t* count) {
  size_t room = std::max<size_t>(
      1, (page_size - std::min(page_size, page_bytes) + cell_size - 1) / cell_size);
  room = std::min(room, kMaxValuesPerPage - *count);
  const size_t take = std::min(n, room);
  buf->append(static_cast<const char*>(cells), take * cell_size);
  *count += take;
  return take;
}

// Base of decoders whose position is a plain index into the page's values: holds the count and
// the position, so each decoder implements only Init, DecodeNext and seeking by value. A
// decoder with per-position state (runs, restart points) overrides SeekToPositionInPage.
// Invariant: pos_ <= count_. Not thread-safe, like every PageDecoder.
class PositionedPageDecoder : public PageDecoder {
 public:
  size_t count() const override { return count_; }
  size_t position() const override { return pos_; }
  void SeekToPositionInPage(size_t pos) override {
    DCHECK_LE(pos, count_);
    pos_ = pos;
  }

 protected:
  // Called by Init() once the page parsed: `count` values, positioned at 0.
  void ResetPosition(size_t count) {
    count_ = count;
    pos_ = 0;
  }

  size_t count_ = 0;
  size_t pos_ = 0;
};

}  // namespace basalt::encoding_internal
