#include "cfile/cfile_format.h"

#include <cstring>

#include "absl/status/status.h"
#include "common/bitmap.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt::cfile_internal {

namespace {

constexpr uint8_t kHasMin = 1;
constexpr uint8_t kHasMax = 2;

absl::Status Corrupt(std::string_view context, std::string_view what) {
  return absl::DataLossError(StrCat(context, ": corrupt ", what));
}

template <bool kAnd>
void TransferBits(uint8_t* dst, size_t dst_off, const uint8_t* src, size_t src_off, size_t n) {
  auto put = [&](size_t d, bool v) {
    if constexpr (kAnd) {
      if (!v) BitmapClear(dst, d);
    } else {
      BitmapChange(dst, d, v);
    }
  };
  // Bit by bit until dst is byte aligned, then whole destination bytes.
  while (n > 0 && (dst_off & 7) != 0) {
    put(dst_off++, BitmapTest(src, src_off++));
    --n;
  }
  uint8_t* d = dst + dst_off / 8;
  const uint8_t* s = src + src_off / 8;
  const unsigned shift = src_off & 7;
  const size_t full = n / 8;
  for (size_t i = 0; i < full; ++i) {
    // With shift > 0 the byte's high bits come from s[i + 1], which lies inside the source range.
    uint8_t b =
        shift == 0 ? s[i] : static_cast<uint8_t>((s[i] >> shift) | (s[i + 1] << (8 - shift)));
    if constexpr (kAnd) {
      d[i] &= b;
    } else {
      d[i] = b;
    }
  }
  dst_off += full * 8;
  src_off += full * 8;
  for (size_t i = full * 8; i < n; ++i) put(dst_off++, BitmapTest(src, src_off++));
}

}  // namespace

void CellValue::Assign(DataType type, const void* cell) {
  const TypeInfo& ti = GetTypeInfo(type);
  var_ = ti.is_variable_length();
  bytes_.clear();
  SerializeCell(ti, cell, SIZE_MAX, &bytes_);
}

const void* CellValue::cell() const {
  if (!var_) return bytes_.data();
  view_ = bytes_;
  return &view_;
}

bool SerializeCell(const TypeInfo& type, const void* cell, size_t max_len, std::string* out) {
  if (!type.is_variable_length()) {
    out->append(static_cast<const char*>(cell), type.size());
    return false;
  }
  std::string_view v;
  std::memcpy(&v, cell, sizeof(v));
  const bool cut = v.size() > max_len;
  out->append(v.data(), cut ? max_len : v.size());
  return cut;
}

bool IsValidCellBytes(DataType type, std::string_view bytes) {
  const TypeInfo& ti = GetTypeInfo(type);
  if (ti.is_variable_length()) return bytes.size() <= kMaxCellBytes;
  if (bytes.size() != ti.size()) return false;
  return type != DataType::kBool || static_cast<uint8_t>(bytes[0]) <= 1;
}

void AppendCrc(std::string* buf) { PutFixed32(buf, crc32c::Mask(crc32c::Value(*buf))); }

absl::Status VerifyAndStripCrc(std::string_view* block, std::string_view what) {
  if (block->size() < 4) return Corrupt(what, "block: shorter than its checksum");
  const size_t body = block->size() - 4;
  const uint32_t stored = crc32c::Unmask(DecodeFixed32(block->data() + body));
  const uint32_t actual = crc32c::Value(block->data(), body);
  if (stored != actual) {
    return absl::DataLossError(StrCat(what, ": checksum mismatch (stored ", absl::Hex(stored),
                                      ", computed ", absl::Hex(actual), ")"));
  }
  block->remove_suffix(4);
  return absl::OkStatus();
}

std::string EncodePositionalIndex(const std::vector<PageIndexEntry>& entries) {
  std::string out;
  PutVarint32(&out, static_cast<uint32_t>(entries.size()));
  for (const PageIndexEntry& e : entries) {
    PutVarint32(&out, e.num_rows);
    PutVarint32(&out, e.null_count);
    PutVarint32(&out, e.size);
    out.push_back(static_cast<char>((e.has_min ? kHasMin : 0) | (e.has_max ? kHasMax : 0)));
    if (e.has_min) PutLengthPrefixed(&out, e.min);
    if (e.has_max) PutLengthPrefixed(&out, e.max);
  }
  AppendCrc(&out);
  return out;
}

absl::StatusOr<std::vector<PageIndexEntry>> DecodePositionalIndex(
    std::string_view block, DataType type, bool nullable, uint64_t num_rows, uint64_t data_size,
    uint32_t num_pages, std::string_view context) {
  const std::string what = StrCat(context, ": positional index");
  BASALT_RETURN_IF_ERROR(VerifyAndStripCrc(&block, what));
  uint32_t n = 0;
  if (!GetVarint32(&block, &n) || n != num_pages) return Corrupt(what, "entry count");
  std::vector<PageIndexEntry> entries(n);
  uint64_t ordinal = 0;
  uint64_t offset = 0;
  for (uint32_t i = 0; i < n; ++i) {
    PageIndexEntry& e = entries[i];
    if (!GetVarint32(&block, &e.num_rows) || !GetVarint32(&block, &e.null_count) ||
        !GetVarint32(&block, &e.size) || block.empty()) {
      return Corrupt(what, StrCat("entry ", i, ": truncated"));
    }
    const uint8_t flags = static_cast<uint8_t>(block[0]);
    block.remove_prefix(1);
    e.has_min = flags & kHasMin;
    e.has_max = flags & kHasMax;
    std::string_view min, max;
    if ((flags & ~(kHasMin | kHasMax)) != 0 || e.num_rows == 0 || e.num_rows > kMaxRowsPerPage ||
        e.null_count > e.num_rows || (!nullable && e.null_count != 0) || e.size < kMinPageBytes ||
        (e.has_min && (!GetLengthPrefixed(&block, &min) || !IsValidCellBytes(type, min))) ||
        (e.has_max && (!GetLengthPrefixed(&block, &max) || !IsValidCellBytes(type, max)))) {
      return Corrupt(what, StrCat("entry ", i));
    }
    e.min.assign(min);
    e.max.assign(max);
    e.first_ordinal = ordinal;
    e.offset = offset;
    ordinal += e.num_rows;
    offset += e.size;
  }
  if (!block.empty()) return Corrupt(what, "block: trailing bytes");
  if (ordinal != num_rows) return Corrupt(what, "row counts (do not sum to the footer's)");
  if (offset != data_size) return Corrupt(what, "page sizes (do not sum to the data size)");
  return entries;
}

std::string EncodeValueIndex(const std::vector<std::string>& first_values) {
  std::string out;
  PutVarint32(&out, static_cast<uint32_t>(first_values.size()));
  for (const std::string& v : first_values) PutLengthPrefixed(&out, v);
  AppendCrc(&out);
  return out;
}

absl::StatusOr<std::vector<CellValue>> DecodeValueIndex(std::string_view block, DataType type,
                                                        uint32_t num_pages,
                                                        std::string_view context) {
  const std::string what = StrCat(context, ": value index");
  BASALT_RETURN_IF_ERROR(VerifyAndStripCrc(&block, what));
  uint32_t n = 0;
  if (!GetVarint32(&block, &n) || n != num_pages) return Corrupt(what, "entry count");
  std::vector<CellValue> values;
  values.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view v;
    if (!GetLengthPrefixed(&block, &v) || !IsValidCellBytes(type, v)) {
      return Corrupt(what, StrCat("entry ", i));
    }
    values.emplace_back(type, std::string(v));
  }
  if (!block.empty()) return Corrupt(what, "block: trailing bytes");
  return values;
}

void CopyBits(uint8_t* dst, size_t dst_off, const uint8_t* src, size_t src_off, size_t n) {
  TransferBits<false>(dst, dst_off, src, src_off, n);
}

void AndBits(uint8_t* dst, size_t dst_off, const uint8_t* src, size_t src_off, size_t n) {
  TransferBits<true>(dst, dst_off, src, src_off, n);
}

size_t CountBits(const uint8_t* bitmap, size_t off, size_t n) {
  size_t count = 0;
  while (n > 0 && (off & 7) != 0) {
    count += BitmapTest(bitmap, off++);
    --n;
  }
  count += BitmapCountSet(bitmap + off / 8, n / 8 * 8);
  off += n / 8 * 8;
  for (size_t i = 0; i < n % 8; ++i) count += BitmapTest(bitmap, off++);
  return count;
}

void ClearBits(uint8_t* dst, size_t off, size_t n) {
  while (n > 0 && (off & 7) != 0) {
    BitmapClear(dst, off++);
    --n;
  }
  std::memset(dst + off / 8, 0, n / 8);
  off += n / 8 * 8;
  for (size_t i = 0; i < n % 8; ++i) BitmapClear(dst, off++);
}

}  // namespace basalt::cfile_internal
