#include "tserver/block_verifier.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cfile/bloom_filter.h"
#include "cfile/cfile_reader.h"
#include "common/arena.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "tablet/delta_file.h"

namespace basalt {
namespace {

// Rows of a delta file collected per CollectEntries call: bounds the entries held in memory.
constexpr uint64_t kDeltaRowsPerRange = 1 << 16;

absl::Status VerifyColumnFile(std::unique_ptr<ReadableBlock> block) {
  // No cache: the bytes must come from the disk, and scrubbing must not evict hot pages.
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<CFileReader> reader, CFileReader::Open(std::move(block)));
  return reader->VerifyChecksums();
}

absl::Status VerifyBloomFilter(const ReadableBlock& block) {
  const std::string context = StrCat("bloom filter ", block.id().ToString());
  const uint64_t size = block.size();
  if (size < kBloomTrailerSize) {
    return absl::DataLossError(ToAbsl(StrCat(context, ": truncated to ", size, " bytes")));
  }
  std::string bytes;
  BASALT_RETURN_IF_ERROR(block.ReadAt(size - kBloomTrailerSize, kBloomTrailerSize, &bytes));
  BASALT_ASSIGN_OR_RETURN(const uint32_t pages,
                          BloomFilterLayout::ParseNumPages(bytes, size, context));
  const uint64_t tail_size = BloomFilterLayout::TailSize(pages);
  BASALT_RETURN_IF_ERROR(block.ReadAt(size - tail_size, tail_size, &bytes));
  BASALT_ASSIGN_OR_RETURN(const BloomFilterLayout layout,
                          BloomFilterLayout::Parse(bytes, size, context));
  for (uint32_t page = 0; page < pages; ++page) {
    BASALT_RETURN_IF_ERROR(
        block.ReadAt(BloomFilterLayout::PageOffset(page), kBloomPageSize, &bytes));
    BASALT_RETURN_IF_ERROR(layout.VerifyPage(page, bytes));
  }
  return absl::OkStatus();
}

absl::Status VerifyDeltaFile(std::unique_ptr<ReadableBlock> block, DeltaType expected) {
  const BlockId id = block->id();
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<DeltaFileReader> reader,
                          DeltaFileReader::Open(std::move(block), /*cache=*/nullptr));
  if (reader->type() != expected) {
    return absl::DataLossError(
        ToAbsl(StrCat("delta file ", id.ToString(), " is a ", DeltaTypeName(reader->type()),
                      " file, not a ", DeltaTypeName(expected), " file")));
  }
  if (reader->num_entries() == 0) return absl::OkStatus();
  // CollectEntries reads (and checks) every page covering the range; a range at a time keeps
  // the collected entries small whatever the file's size.
  Arena arena;
  std::vector<DeltaEntry> entries;
  for (uint64_t start = reader->min_row(); start <= reader->max_row();
       start += kDeltaRowsPerRange) {
    const size_t n = static_cast<size_t>(
        std::min<uint64_t>(kDeltaRowsPerRange, uint64_t{reader->max_row()} + 1 - start));
    entries.clear();
    arena.Reset();
    BASALT_RETURN_IF_ERROR(
        reader->CollectEntries(static_cast<rowid_t>(start), n, &arena, &entries));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status VerifyRowSetBlock(std::unique_ptr<ReadableBlock> block, RowSetBlockKind kind) {
  switch (kind) {
    case RowSetBlockKind::kColumn:
    case RowSetBlockKind::kKeyIndex:
      return VerifyColumnFile(std::move(block));
    case RowSetBlockKind::kBloom:
      return VerifyBloomFilter(*block);
    case RowSetBlockKind::kRedo:
      return VerifyDeltaFile(std::move(block), DeltaType::kRedo);
    case RowSetBlockKind::kUndo:
      return VerifyDeltaFile(std::move(block), DeltaType::kUndo);
  }
  return absl::InvalidArgumentError("unknown block kind");
}

}  // namespace basalt
