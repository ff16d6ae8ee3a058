#pragma once

// Verifies every checksum of one block of a DiskRowSet, knowing only what kind of block it is
// (tserver/block_references.h), not the tablet's schema: column files and the key index carry
// their type in their footer, bloom filters and delta files are self-describing. What is checked:
//
//   column file, key index: trailer (magic, version), footer CRC, positional and value index
//       CRCs, dictionary CRC (CFileReader::Open), then every page's CRC (VerifyChecksums).
//   bloom filter: trailer fields, the CRC of the page-CRC table and trailer, then every 4 KiB
//       page against its CRC.
//   REDO / UNDO file: magic, version, footer and index CRCs (DeltaFileReader::Open), then every
//       page's CRC and entry framing, read a row range at a time; and that the footer's delta
//       type is the one the superblock says.
//
// Every byte is read from the block, around the block cache, once (a delta page that covers
// rows of two ranges twice); memory stays bounded by a page plus the entries of one row range.
// For the block scrubber (tserver/block_scrubber.h), which paces the reads with a read hook.

#include <memory>

#include "absl/status/status.h"
#include "cfile/block_manager.h"
#include "tserver/block_references.h"

namespace basalt {

// Verifies `block` (owned) as a block of `kind`. DATA_LOSS naming the block (and the page where
// one applies) when a checksum does not match or the block is malformed or truncated; the
// block's read errors otherwise (the read hook's included). Thread-compatible: the caller owns
// the block.
absl::Status VerifyRowSetBlock(std::unique_ptr<ReadableBlock> block, RowSetBlockKind kind);

}  // namespace basalt
