#pragma once

// RLE encoding for BOOL: runs of repeated values and literal runs, the default for BOOL
// (docs/cfile_encodings.md has the byte table).
//
// Page: u32 count | runs, each starting with a varint32 header h:
//   h & 1 == 0: a repeat run of h >> 2 copies of the value (h >> 1) & 1;
//   h & 1 == 1: a literal run of h >> 1 values, followed by ceil(len / 8) bytes of bits, LSB first.
// Runs are never empty and add up to count. The builder emits a repeat run for 16 or more equal
// values (where it beats the 2 literal bytes it replaces) and literals otherwise.

#include <memory>

#include "cfile/encoding.h"

namespace basalt {

std::unique_ptr<PageBuilder> NewRlePageBuilder(const PageBuilderOptions& options);
std::unique_ptr<PageDecoder> NewRlePageDecoder();

}  // namespace basalt
