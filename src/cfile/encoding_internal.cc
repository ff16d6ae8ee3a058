#include "cfile/encoding_internal.h"

#include "absl/numeric/int128.h"
#include "common/coding.h"

namespace basalt::encoding_internal {

absl::Status ReadPageCount(std::string_view encoding, std::string_view* page, uint32_t* count) {
  if (!GetFixed32(page, count)) {
    return Corruption(encoding, "truncated header: ", page->size(), " bytes");
  }
  if (*count > kMaxValuesPerPage) {
    return Corruption(encoding, "value count ", *count, " exceeds the limit ", kMaxValuesPerPage);
  }
  return absl::OkStatus();
}

void PatchPageCount(std::string* buf, size_t offset, size_t count) {
  EncodeFixed32(buf->data() + offset, static_cast<uint32_t>(count));
}

int CompareUnalignedCell(const TypeInfo& type_info, const char* stored, const void* value) {
  alignas(absl::int128) char cell[16];
  std::memcpy(cell, stored, type_info.size());
  return type_info.Compare(cell, value);
}

void NormalizeBools(uint8_t* cells, size_t n) {
  for (size_t i = 0; i < n; i++) cells[i] = cells[i] != 0;
}

}  // namespace basalt::encoding_internal
