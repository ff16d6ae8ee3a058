#pragma once

// BIT_SHUFFLE encoding: the page's values bit-transposed, then LZ4-compressed; the default for
// FLOAT and DOUBLE (docs/cfile_encodings.md has the byte table).
//
// Page: u32 count | u8 cell_bytes | LZ4 block (raw LZ4 format, <lz4.h>) of the transposed values.
// The values, padded with zero cells to a multiple of 8, form a matrix of n8 rows by
// 8 * cell_bytes bit columns; the transposed form stores bit-plane (8 * k + b) — bit b of byte k
// of every value — as n8 / 8 bytes, value 8 * m + t at bit t of plane byte m. Similar values
// (a random walk, timestamps) share their high bits, so the high planes become long runs LZ4
// compresses well.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "cfile/encoding.h"

namespace basalt {

// REQUIRES: IsEncodingAllowed(type, kBitShuffle).
std::unique_ptr<PageBuilder> NewBitShufflePageBuilder(DataType type,
                                                      const PageBuilderOptions& options);
std::unique_ptr<PageDecoder> NewBitShufflePageDecoder(DataType type);

namespace bitshuffle {
// Transposes `n8` cells of `cell_bytes` each (REQUIRES: n8 % 8 == 0) from `in` into bit-planes at
// `out` (n8 * cell_bytes bytes), and back. Exposed for tests.
void Transpose(const uint8_t* in, size_t n8, size_t cell_bytes, uint8_t* out);
void Untranspose(const uint8_t* in, size_t n8, size_t cell_bytes, uint8_t* out);
// Untransposes only the cells [8 * first_group, 8 * (first_group + num_groups)) of the `n8`
// cells whose bit-planes are at `in`, into `out` (num_groups * 8 * cell_bytes bytes): a reader
// of a few values of a page pays for those values, not for the page.
// REQUIRES: 8 * (first_group + num_groups) <= n8.
void UntransposeGroups(const uint8_t* in, size_t n8, size_t cell_bytes, size_t first_group,
                       size_t num_groups, uint8_t* out);
}  // namespace bitshuffle

}  // namespace basalt
