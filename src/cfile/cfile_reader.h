#pragma once

// CFileReader and CFileIterator: read a column file written by CFileWriter (byte layout in
// docs/cfile.md).
//
// CFileReader::Open reads and validates the trailer, footer, indexes and (DICT) dictionary once;
// the reader then serves any number of iterators. Pages are read on demand, their CRC32C checked
// (--cfile_verify_checksums), decompressed and kept in a BlockCache keyed by (block id, page
// offset) when one is given. Everything read from the block is untrusted: malformed bytes yield
// DATA_LOSS (INVALID_ARGUMENT for a bad argument) with a message naming the file
// ("cfile <block id>") and, for pages, the page number; never a crash.
//
// Thread safety: CFileReader is immutable after Open and thread-safe (iterators of one reader may
// run on different threads). A CFileIterator is not thread-safe; the caller serializes.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cfile/block_cache.h"
#include "cfile/block_manager.h"
#include "cfile/cfile_format.h"
#include "cfile/encoding.h"
#include "common/column_block.h"
#include "common/column_predicate.h"
#include "common/schema.h"
#include "common/types.h"
#include "gflags/gflags_declare.h"

DECLARE_bool(cfile_verify_checksums);

namespace basalt {

namespace pb {
class CFileFooterPB;
}  // namespace pb

class CompressionCodec;
class Dictionary;
class EncodedPredicate;
class PageDecoder;

struct CFileReaderOptions {
  // Where decompressed pages are cached; nullptr: no caching. Borrowed; outlives the reader.
  BlockCache* block_cache = nullptr;
};

class CFileIterator;

class CFileReader {
 public:
  // Opens the column file in `block` (owned by the reader). DATA_LOSS naming the block when the
  // trailer, footer, an index block or the dictionary is missing, truncated or corrupt; an unknown
  // format version is DATA_LOSS too. I/O errors from the block.
  static absl::StatusOr<std::unique_ptr<CFileReader>> Open(std::unique_ptr<ReadableBlock> block,
                                                           CFileReaderOptions options = {});
  ~CFileReader();
  CFileReader(const CFileReader&) = delete;
  CFileReader& operator=(const CFileReader&) = delete;

  // "cfile <block id>", the prefix of every error message.
  const std::string& name() const { return name_; }
  DataType type() const { return type_; }
  const TypeAttributes& type_attributes() const { return type_attributes_; }
  EncodingType encoding() const { return encoding_; }
  CompressionType compression() const { return compression_; }
  bool nullable() const { return nullable_; }
  bool is_sorted() const { return is_sorted_; }
  bool has_value_index() const { return is_sorted_; }
  uint64_t num_rows() const { return num_rows_; }
  uint64_t null_count() const { return null_count_; }
  size_t num_pages() const { return pages_.size(); }
  uint64_t file_size() const { return block_->size(); }

  // Read-only views of what Open validated, for inspection tools (`basalt fs dump cfile`); the
  // layout is in docs/cfile.md. Valid for the reader's life.
  // The positional index: per page its first ordinal, byte offset and size (CRC included), rows,
  // NULL rows and zone map (cell bytes; cfile_internal::CellValue(type(), bytes).cell()).
  const std::vector<cfile_internal::PageIndexEntry>& page_index() const { return pages_; }
  // The value index of a key file (is_sorted()): each page's first value; empty otherwise.
  const std::vector<cfile_internal::CellValue>& value_index() const { return first_values_; }
  // The file's zone map: smallest and largest non-NULL value, when known.
  const std::optional<cfile_internal::CellValue>& min_value() const { return min_; }
  const std::optional<cfile_internal::CellValue>& max_value() const { return max_; }

  // Whether a row of this file may match `pred`, by the file-level zone map and null count.
  bool MayMatch(const ColumnPredicate& pred) const;

  // A new iterator positioned at ordinal 0. The reader must outlive it.
  std::unique_ptr<CFileIterator> NewIterator() const;

  // Reads every data page from the block (never from the cache) and checks its CRC32C, whatever
  // --cfile_verify_checksums says. With the checks Open made (trailer, footer, index blocks,
  // dictionary), every checksum of the file has then been verified. For the block scrubber: it
  // neither decompresses nor decodes. DATA_LOSS naming the file, the page and its offset on a
  // mismatch; the block's read errors.
  absl::Status VerifyChecksums() const;

 private:
  friend class CFileIterator;

  // A decompressed page: its row counts and payload (null bitmap, then the encoded body), and
  // for a cached page the body's layout if its encoding has one (computed once when cached,
  // not by every decoder opened on it; immutable from then on).
  class Page : public BlockCache::Value {
   public:
    uint32_t num_rows = 0;
    uint32_t num_values = 0;
    std::string payload;
    std::unique_ptr<const PageLayout> layout;
  };
  // A pinned page: either a cache handle or an owned page.
  struct PageRef {
    BlockCache::Handle handle;
    std::unique_ptr<Page> owned;
    const Page* page = nullptr;
  };

  CFileReader(std::unique_ptr<ReadableBlock> block, CFileReaderOptions options);
  absl::Status Init();
  absl::Status ReadFooter(std::string* footer);
  // Parses and validates the footer's fields into the members and `*footer`.
  absl::Status ParseFooter(const std::string& bytes, pb::CFileFooterPB* footer);
  // Reads and validates the blocks the footer points to: indexes and dictionary.
  absl::Status ReadIndexes(const pb::CFileFooterPB& footer);
  absl::Status ReadMetaBlock(uint64_t offset, uint64_t size, std::string_view what,
                             std::string* out) const;
  absl::Status ReadDictionary(uint64_t offset, uint64_t size);
  // Reads, verifies and decompresses page `index` (through the cache). Counts a cache miss in
  // *from_disk.
  absl::Status ReadPage(size_t index, PageRef* ref, bool* from_disk) const;
  absl::StatusOr<std::unique_ptr<Page>> LoadPage(size_t index) const;
  absl::Status Corruption(std::string_view what) const;

  // Constant after Open.
  const std::unique_ptr<ReadableBlock> block_;
  const CFileReaderOptions options_;
  const std::string name_;
  DataType type_ = DataType::kUnknown;
  TypeAttributes type_attributes_;
  EncodingType encoding_ = EncodingType::kAuto;
  CompressionType compression_ = CompressionType::kDefault;
  const CompressionCodec* codec_ = nullptr;
  bool nullable_ = false;
  bool is_sorted_ = false;
  bool dict_complete_ = false;  // Footer's dict_complete (DICT files only).
  uint64_t num_rows_ = 0;
  uint64_t null_count_ = 0;
  std::optional<cfile_internal::CellValue> min_;
  std::optional<cfile_internal::CellValue> max_;
  std::vector<cfile_internal::PageIndexEntry> pages_;
  std::vector<cfile_internal::CellValue> first_values_;
  std::unique_ptr<Dictionary> dictionary_;
};

// Counters of one iterator, for tests and scan metrics.
struct CFileIteratorStats {
  int64_t pages_read = 0;         // Pages fetched (from the cache or the block).
  int64_t pages_from_disk = 0;    // Of those, read from the block (cache misses).
  int64_t pages_decoded = 0;      // Pages whose body was handed to a decoder.
  int64_t pages_with_layout = 0;  // Of those, with the layout computed when it was cached.
  // Page ranges (the part of a page one call covers) ruled out by their zone map, never read.
  int64_t pages_skipped = 0;
  // Page ranges whose predicate was evaluated on encoded values (DICT codes).
  int64_t ranges_evaluated_encoded = 0;
  int64_t rows_scanned = 0;
};

// Reads rows of one column file in ordinal order from a movable position.
// Variable-length cells produced by Scan point into pinned pages, the reader's dictionary or the
// output block's arena; they stay valid until the next Seek/Scan call or the iterator's
// destruction. Not thread-safe; the caller serializes.
class CFileIterator {
 public:
  ~CFileIterator();

  // Positions at row `ordinal`. INVALID_ARGUMENT if ordinal > num_rows() (num_rows() is the end).
  absl::Status SeekToOrdinal(uint64_t ordinal);

  // Key files: positions at the first row whose value is >= *cell (cell format) and sets *exact
  // to whether it equals *cell. NOT_FOUND, positioned at the end, if every value is smaller.
  // FAILED_PRECONDITION if the file has no value index; DATA_LOSS on corrupt pages.
  absl::Status SeekAtOrAfter(const void* cell, bool* exact);

  // Like SeekAtOrAfter, with the value given as an encoded key (key_encoder.h, in the last-column
  // form: for STRING/BINARY the raw bytes). INVALID_ARGUMENT if `encoded` is not exactly one
  // value of the file's type.
  absl::Status SeekAtOrAfterEncoded(std::string_view encoded, bool* exact);

  uint64_t ordinal() const { return ordinal_; }
  bool HasNext() const { return ordinal_ < reader_->num_rows_; }

  // Decodes up to `n` rows from the position into out's rows [0, k), advances, and sets
  // *rows_read = k (0 at the end). Fills out->null_bitmap (all clear for NOT NULL files).
  // REQUIRES: out->type == the file's type; out->capacity >= n; out->null_bitmap != nullptr if
  // the file is nullable; out->arena != nullptr for PREFIX files. DATA_LOSS on corrupt pages.
  absl::Status Scan(size_t n, ColumnBlock* out, size_t* rows_read);

  // Evaluates `pred` (on this file's column type) over up to `n` rows from the position and
  // advances like Scan. Clears bit i of `selection` (BitmapSize(n) bytes) for each row i that
  // does not match; bits already clear stay clear. Pages whose zone map rules out a match are
  // neither read nor decoded. If `out` is non-null the rows of the other pages are decoded into
  // it as by Scan (rows of skipped pages are left unspecified); with `out` null, DICT pages are
  // evaluated on their codes without materializing values.
  absl::Status ScanWithPredicate(const ColumnPredicate& pred, size_t n, uint8_t* selection,
                                 ColumnBlock* out, size_t* rows_read);

  const CFileIteratorStats& stats() const { return stats_; }

 private:
  friend class CFileReader;
  explicit CFileIterator(const CFileReader* reader);

  // Index of the page holding ordinal_ (REQUIRES: HasNext()).
  size_t PageOf(uint64_t ordinal) const;
  // Makes page `index` the current page: reads it and initializes the decoder.
  absl::Status LoadPage(size_t index);
  // Decodes rows [ordinal_, ordinal_ + k) of the current page into out's rows [dst, dst + k).
  absl::Status DecodeRows(size_t k, ColumnBlock* out, size_t dst);
  // Evaluates `pred` on k rows of the current page into selection bits [dst, dst + k).
  absl::Status EvaluateRows(const ColumnPredicate& pred, size_t k, uint8_t* selection,
                            ColumnBlock* out, size_t dst);
  absl::Status EvaluateOnCodes(const ColumnPredicate& pred, size_t k, uint8_t* selection,
                               size_t dst);
  // ANDs pred's result on k decoded rows of `block` from row `off` into selection [dst, dst + k).
  void EvaluateDecoded(const ColumnPredicate& pred, const ColumnBlock& block, size_t off, size_t k,
                       uint8_t* selection, size_t dst);
  // Evaluates IS NULL / IS NOT NULL on k rows of the current page from its null bitmap.
  void EvaluateNullness(bool want_null, size_t k, uint8_t* selection, size_t dst);
  // The decoder position (index among the page's values) of row `row` of the current page, which
  // holds ordinal_.
  size_t ValuePosition(size_t row) const;
  // The cell of zone-map bytes (cfile_format.h): the bytes themselves for fixed-width types, or
  // `*view` set to them for variable-length types.
  const void* ZoneCell(const std::string& bytes, std::string_view* view) const;
  // The null bitmap of the current page, or nullptr.
  const uint8_t* page_nulls() const;
  void ReleaseRetainedPages();
  absl::Status PageCorruption(std::string_view what) const;

  const CFileReader* const reader_;
  std::unique_ptr<PageDecoder> decoder_;
  uint64_t ordinal_ = 0;
  // The loaded page, if any: index, pin, and the decoder position of its row ordinal_.
  static constexpr size_t kNoPage = SIZE_MAX;
  size_t page_index_ = kNoPage;
  CFileReader::PageRef page_;
  // The ordinal whose value the decoder's position() points at (UINT64_MAX: unknown).
  uint64_t decoder_ordinal_ = UINT64_MAX;
  // Pages left during the current call, pinned until the next one (see the class comment).
  std::vector<CFileReader::PageRef> retained_;
  // Scratch for predicate evaluation.
  std::unique_ptr<ColumnBlockBuffer> scratch_;
  std::vector<uint8_t> sel_scratch_;
  std::vector<uint8_t> null_scratch_;
  // The predicate prepared for encoded evaluation (DICT), rebuilt when the predicate changes.
  std::optional<ColumnPredicate> prepared_for_;
  std::unique_ptr<EncodedPredicate> prepared_;
  CFileIteratorStats stats_;
};

}  // namespace basalt
