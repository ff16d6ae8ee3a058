#pragma once

// PREFIX encoding: front coding for sorted strings such as key columns
// (docs/cfile_encodings.md has the byte table).
//
// Page: u32 count | u32 num_restarts | u32 restart_offset[num_restarts] | entries.
// Entry: varint32 shared | varint32 non_shared | non_shared bytes; the value is the first
// `shared` bytes of the previous value followed by the given bytes. Every 16th value is a restart
// point (shared == 0), whose offset relative to the first entry is in restart_offset, so
// SeekAtOrAfterValue binary-searches restarts and then scans at most 16 entries.
// num_restarts == ceil(count / 16).

#include <memory>

#include "cfile/encoding.h"

namespace basalt {

inline constexpr size_t kPrefixRestartInterval = 16;

std::unique_ptr<PageBuilder> NewPrefixPageBuilder(const PageBuilderOptions& options);
std::unique_ptr<PageDecoder> NewPrefixPageDecoder();

}  // namespace basalt
