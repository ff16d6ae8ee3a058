#pragma once

// Helpers shared by the page encodings. Internal to src/cfile.

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

}  // namespace basalt::encoding_internal
