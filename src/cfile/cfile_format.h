#pragma once

// Internals shared by the column file writer and reader: on-disk constants, the positional and
// value index blocks, cell serialization for zone maps, and bit-range helpers. The byte layout is
// tabled in docs/cfile.md. Not part of the public cfile API.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "cfile/encoding.h"
#include "common/types.h"

namespace basalt::cfile_internal {

// The last 8 bytes of every column file.
inline constexpr char kMagic[8] = {'B', 'S', 'L', 'T', 'C', 'F', 'I', 'L'};
inline constexpr uint32_t kFormatVersion = 1;
// fixed32 footer size | fixed32 masked CRC32C of the footer | fixed32 version | magic.
inline constexpr size_t kTrailerSize = 4 + 4 + 4 + sizeof(kMagic);
// The footer holds a few scalars and two zone-map values of at most kMaxZoneMapValueBytes, so a
// larger declared size is corruption; the bound also caps what a reader allocates for it.
inline constexpr size_t kMaxFooterSize = 64 * 1024;
// Zone-map values of variable-length types longer than this are truncated (min) or dropped (max),
// bounding the index entry of a page (and so the index block) whatever the data.
inline constexpr size_t kMaxZoneMapValueBytes = 64;
// A page holds at most this many rows (NULLs included), bounding its null bitmap.
inline constexpr size_t kMaxRowsPerPage = kMaxValuesPerPage;
// Pages of key files end at this many rows too: a seek decodes within one page, so the page's
// row count bounds its cost (decoder Init, BIT_PACKED's walk over its variable-size blocks up to
// the position, and the binary search), and dense encodings of sequential keys (BIT_PACKED: under
// 1 bit per key) would otherwise make 2^20-row pages. 64 Ki rows made the walk 6% of a tablet
// server's CPU in point lookups (W4 of docs/performance.md); 8 Ki rows cost ~1% more bytes.
// Readers accept any row count up to kMaxRowsPerPage (files written with 64 Ki-row pages).
inline constexpr size_t kMaxRowsPerKeyPage = 8 * 1024;
// Bounds on a page's target size (--cfile_default_block_size or the column's block_size_bytes)
// and on the uncompressed bytes a page may declare: a page ends at its target size plus at most
// one value (kMaxCellBytes), plus its null bitmap. A larger declared size is corruption.
inline constexpr size_t kMinPageSizeBytes = 256;
inline constexpr size_t kMaxPageSizeBytes = 64 << 20;
inline constexpr size_t kMaxUncompressedPageBytes = kMaxPageSizeBytes + (4 << 20);
// Smallest possible page: three one-byte varints and the CRC.
inline constexpr size_t kMinPageBytes = 3 + 4;

// One page's entry in the positional index.
struct PageIndexEntry {
  uint64_t first_ordinal = 0;  // Derived: rows of the pages before.
  uint64_t offset = 0;         // Derived: pages are back to back from offset 0.
  uint32_t size = 0;           // Bytes of the page, CRC included.
  uint32_t num_rows = 0;       // >= 1.
  uint32_t null_count = 0;     // <= num_rows.
  bool has_min = false;
  bool has_max = false;
  std::string min;  // Cell bytes (see CellValue).
  std::string max;
};

// A cell held as its serialized bytes: fixed-width types as their cell bytes (little-endian),
// variable-length types as the raw value. cell() hands out the cell format of types.h.
// Copyable; cell() pointers are valid until the next call or mutation.
class CellValue {
 public:
  CellValue() = default;
  CellValue(DataType type, std::string bytes)
      : var_(GetTypeInfo(type).is_variable_length()), bytes_(std::move(bytes)) {}

  // Copies `cell` (cell format of `type`).
  void Assign(DataType type, const void* cell);
  const void* cell() const;
  const std::string& bytes() const { return bytes_; }

 private:
  bool var_ = false;
  std::string bytes_;
  mutable std::string_view view_;
};

// Serializes `cell` of `type` (see CellValue). For variable-length types at most `max_len` bytes
// are written; returns whether the value was cut.
bool SerializeCell(const TypeInfo& type, const void* cell, size_t max_len, std::string* out);
// Whether `bytes` can be the serialization of a `type` cell (fixed width: exact size; BOOL: 0/1).
bool IsValidCellBytes(DataType type, std::string_view bytes);

// Index blocks: the body followed by fixed32 masked CRC32C of the body.
std::string EncodePositionalIndex(const std::vector<PageIndexEntry>& entries);
// Parses and validates a positional index block (CRC, every field; rows summing to `num_rows`,
// page sizes to `data_size`, at most `num_pages` entries). DATA_LOSS naming `context` otherwise.
absl::StatusOr<std::vector<PageIndexEntry>> DecodePositionalIndex(
    std::string_view block, DataType type, bool nullable, uint64_t num_rows, uint64_t data_size,
    uint32_t num_pages, std::string_view context);
std::string EncodeValueIndex(const std::vector<std::string>& first_values);
absl::StatusOr<std::vector<CellValue>> DecodeValueIndex(std::string_view block, DataType type,
                                                        uint32_t num_pages,
                                                        std::string_view context);

// Appends fixed32 masked CRC32C of `*buf` to it.
void AppendCrc(std::string* buf);
// Checks and strips the trailing CRC of `*block`. DATA_LOSS naming `what` on mismatch.
absl::Status VerifyAndStripCrc(std::string_view* block, std::string_view what);

// Bit ranges of LSB-first bitmaps: dst[dst_off, +n) = src[src_off, +n) (kAnd: &=).
void CopyBits(uint8_t* dst, size_t dst_off, const uint8_t* src, size_t src_off, size_t n);
void AndBits(uint8_t* dst, size_t dst_off, const uint8_t* src, size_t src_off, size_t n);
// Number of set bits in [off, off + n).
size_t CountBits(const uint8_t* bitmap, size_t off, size_t n);
// Clears bits [off, off + n).
void ClearBits(uint8_t* dst, size_t off, size_t n);

}  // namespace basalt::cfile_internal
