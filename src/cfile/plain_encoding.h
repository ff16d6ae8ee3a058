#pragma once

// PLAIN encoding: values stored as they are, for every type (docs/cfile_encodings.md).
//
// Fixed-width page:    u32 count | count cells of size(type) bytes, little-endian.
// Variable-length page: u32 count | u32 end_offset[count] | value bytes, concatenated.
// PLAIN is also the dictionary page format of DICT and the body of DICT's fallback pages.

#include <memory>
#include <string_view>

#include "cfile/encoding.h"

namespace basalt {

// REQUIRES: IsEncodingAllowed(type, kPlain) (every valid type).
std::unique_ptr<PageBuilder> NewPlainPageBuilder(DataType type, const PageBuilderOptions& options);
std::unique_ptr<PageDecoder> NewPlainPageDecoder(DataType type);

}  // namespace basalt
