#pragma once

// CFileWriter: writes one column of values as a column file (DESIGN.md section 4, byte layout in
// docs/cfile.md).
//
// A column file is a sequence of pages (encoded by cfile/encoding.h, with a null bitmap, optional
// compression by cfile/compression.h and a CRC32C each), then for DICT the file's dictionary, a
// positional index (per page: rows, size, null count and zone map), for key files a value index
// (the first value of each page), and a footer protobuf with a trailer (footer length, checksum,
// format version, magic). The file is one block of the block manager.
//
// Lifecycle: construct, Start(), AppendValues()* , then Finish() (or FinishWithoutFinalize() to
// finalize several blocks together with BlockManager::FinalizeBlocks). After an error the writer
// is unusable; destroying it aborts the block.
// Not thread-safe; the caller serializes.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cfile/block_manager.h"
#include "cfile/cfile_format.h"
#include "common/column_block.h"
#include "common/schema.h"
#include "common/types.h"
#include "gflags/gflags_declare.h"

DECLARE_int32(cfile_default_block_size);

namespace basalt {

class CompressionCodec;
class DictionaryBuilder;
class PageBuilder;

struct CFileWriterOptions {
  DataType type = DataType::kUnknown;
  TypeAttributes type_attributes;
  bool nullable = false;
  // Encoding (kAuto: the type's default), codec (kDefault: ResolveCompression) and page size
  // (0: --cfile_default_block_size).
  ColumnStorageAttributes storage;
  // A key file: values must be non-NULL and sorted ascending (TypeInfo::Compare); a value index
  // is written so readers can seek by value.
  bool is_key = false;

  static CFileWriterOptions ForColumn(const ColumnSchema& column, bool is_key = false);
};

class CFileWriter {
 public:
  // `block` is owned by the writer until Finish(); nothing is written before Start().
  CFileWriter(CFileWriterOptions options, std::unique_ptr<WritableBlock> block);
  ~CFileWriter();
  CFileWriter(const CFileWriter&) = delete;
  CFileWriter& operator=(const CFileWriter&) = delete;

  // Resolves encoding and codec and prepares the page builder. INVALID_ARGUMENT for an invalid
  // type or attributes, a disallowed encoding, a nullable key file, or a page size outside
  // [kMinPageSizeBytes, kMaxPageSizeBytes].
  absl::Status Start();

  // Appends `n` rows: `cells` holds n cells in the cell format (types.h; cells of NULL rows are
  // ignored), `null_bitmap` (bit set = NULL) covers them or is nullptr for "no NULLs". Cells are
  // copied. INVALID_ARGUMENT for NULLs in a NOT NULL column or, in a key file, a value smaller
  // than the one before it; I/O errors from the block.
  absl::Status AppendValues(const void* cells, const uint8_t* null_bitmap, size_t n);
  // The same for rows [0, n) of a column block. REQUIRES: n <= block.capacity.
  absl::Status AppendBlock(const ColumnBlock& block, size_t n) {
    return AppendValues(block.cells, block.null_bitmap, n);
  }

  // Writes the last page, the dictionary, the indexes, the footer and the trailer, then
  // finalizes the block (durable under its final name). The writer is done afterwards.
  absl::Status Finish();
  // Like Finish() but returns the written, unfinalized block for BlockManager::FinalizeBlocks.
  absl::StatusOr<std::unique_ptr<WritableBlock>> FinishWithoutFinalize();

  BlockId block_id() const { return block_id_; }
  uint64_t num_rows() const { return num_rows_; }
  size_t num_pages() const { return index_.size(); }
  // Resolved by Start().
  EncodingType encoding() const { return encoding_; }
  CompressionType compression() const { return compression_; }
  // Bytes written so far (the file size after Finish()).
  uint64_t bytes_written() const { return offset_; }

 private:
  // Rows of the page being built.
  struct PageState {
    uint32_t num_rows = 0;
    uint32_t null_count = 0;
    std::vector<uint8_t> nulls;  // BitmapSize(kMaxRowsPerPage) bytes; bit set = NULL.
    bool has_value = false;
    cfile_internal::CellValue min;
    cfile_internal::CellValue max;
  };

  // Adds non-NULL cells [0, n) to the page builder, records them, and returns how many it took.
  absl::StatusOr<size_t> AddValues(const uint8_t* cells, size_t n);
  // Updates zone maps and checks key order for `n` cells just added.
  absl::Status TrackValues(const uint8_t* cells, size_t n);
  absl::Status FlushPage();
  absl::Status WriteRaw(std::string_view bytes);
  // Appends `raw` compressed with the file's codec (as is for NONE) to `*out`.
  absl::Status AppendCompressed(std::string_view raw, std::string* out);
  absl::Status WriteFooter();
  absl::Status Fail(absl::Status s);

  const CFileWriterOptions options_;
  std::unique_ptr<WritableBlock> block_;
  const BlockId block_id_;
  const TypeInfo* type_info_ = nullptr;
  EncodingType encoding_ = EncodingType::kAuto;
  CompressionType compression_ = CompressionType::kDefault;
  const CompressionCodec* codec_ = nullptr;
  std::unique_ptr<DictionaryBuilder> dictionary_;
  std::unique_ptr<PageBuilder> builder_;

  size_t max_rows_per_page_ = 0;  // Set by Start().
  enum class State { kNew, kWriting, kDone, kFailed };
  State state_ = State::kNew;
  uint64_t offset_ = 0;
  uint64_t num_rows_ = 0;
  uint64_t null_count_ = 0;
  PageState page_;
  std::vector<cfile_internal::PageIndexEntry> index_;
  std::vector<std::string> first_values_;  // Key files: cell bytes of each page's first value.
  // File-level zone map.
  bool has_value_ = false;
  cfile_internal::CellValue file_min_;
  cfile_internal::CellValue file_max_;
  cfile_internal::CellValue last_key_;  // Key files: the last value appended.
  std::string scratch_;
  std::string compressed_;
};

}  // namespace basalt
