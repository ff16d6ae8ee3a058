#pragma once

// Delta files: the immutable on-disk form of REDO and UNDO deltas of one DiskRowSet
// (docs/tablet.md "Deltas", "Delta file format").
//
// A delta file is one block of the block manager:
//
//   [page 0] ... [page k-1] [index] [footer (44 bytes)] [footer CRC] [version] [magic]
//
// Pages hold entries (row, timestamp, RowChangeList) in strictly increasing DeltaKey order,
// about --deltafile_page_size_bytes of them each, optionally LZ4-compressed, each with a CRC32C.
// The index lists, per page, its first and last row, size and entry count, so a reader of rows
// [start, start + n) binary-searches the pages that cover them and reads nothing else. The
// footer holds the delta type, counts and the min/max timestamp and row.
//
// Every byte read is treated as untrusted: a corrupt or truncated file is DATA_LOSS naming the
// block, never a crash or an unbounded allocation.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cfile/block_cache.h"
#include "cfile/block_manager.h"
#include "common/schema.h"
#include "gflags/gflags_declare.h"
#include "tablet/delta_store.h"

DECLARE_int32(deltafile_page_size_bytes);

namespace basalt {

class CompressionCodec;

namespace delta_file_internal {
// The last 8 bytes of every delta file.
inline constexpr char kMagic[8] = {'B', 'S', 'L', 'T', 'D', 'L', 'T', 'A'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kFooterSize = 44;
// Footer, fixed32 masked CRC32C of the footer, fixed32 version, magic.
inline constexpr size_t kTailSize = kFooterSize + 4 + 4 + sizeof(kMagic);
// Largest change list a file accepts (a REINSERT of kMaxColumns columns of kMaxCellBytes fits).
inline constexpr size_t kMaxChangeListBytes = 32 << 20;
// Bounds on the page target size, and on the uncompressed bytes a page may declare (a page ends
// at its target size plus one entry), so a corrupt size never makes a reader allocate more.
inline constexpr size_t kMinPageSizeBytes = 256;
inline constexpr size_t kMaxPageSizeBytes = 16 << 20;
inline constexpr size_t kMaxEntryOverhead = 5 + 8 + 5;  // varint row, fixed64 ts, varint length.
inline constexpr size_t kMaxRawPageBytes =
    kMaxPageSizeBytes + kMaxChangeListBytes + kMaxEntryOverhead;
// Smallest page: codec, two one-byte varints, one byte of payload, CRC.
inline constexpr size_t kMinPageBytes = 1 + 1 + 1 + 1 + 4;
// Smallest raw entry: varint row, fixed64 ts, varint length, the 1-byte DELETE.
inline constexpr size_t kMinRawEntryBytes = 1 + 8 + 1 + 1;
}  // namespace delta_file_internal

struct DeltaFileWriterOptions {
  // Target uncompressed bytes per page; 0 means --deltafile_page_size_bytes.
  size_t page_size_bytes = 0;
  // kNone or any concrete codec (compression.h). A page whose compressed form is not smaller is
  // stored uncompressed.
  CompressionType compression = CompressionType::kLz4;
};

// Writes one delta file. Lifecycle: construct, Start(), Append()*, then Finish() (or
// FinishWithoutFinalize() to finalize several blocks together with
// BlockManager::FinalizeBlocks). After an error the writer is unusable; destroying an unfinished
// writer aborts the block. Not thread-safe; the caller serializes.
class DeltaFileWriter {
 public:
  // `block` is owned by the writer until Finish(); nothing is written before Start().
  DeltaFileWriter(DeltaType type, std::unique_ptr<WritableBlock> block,
                  DeltaFileWriterOptions options = {});
  ~DeltaFileWriter();
  DeltaFileWriter(const DeltaFileWriter&) = delete;
  DeltaFileWriter& operator=(const DeltaFileWriter&) = delete;

  // INVALID_ARGUMENT for a page size outside [kMinPageSizeBytes, kMaxPageSizeBytes] or an
  // unknown codec; FAILED_PRECONDITION if called twice.
  absl::Status Start();

  // Appends one entry; `changes` is copied. INVALID_ARGUMENT if `key` is not greater than the
  // previous key, its timestamp is invalid, or `changes` is not a well-framed RowChangeList of
  // at most kMaxChangeListBytes; FAILED_PRECONDITION outside Start()..Finish(); I/O errors from
  // the block (the writer is failed then).
  absl::Status Append(DeltaKey key, std::string_view changes);

  // Writes the last page, the index and the footer, then finalizes the block.
  absl::Status Finish();
  // Like Finish() but returns the written, unfinalized block.
  absl::StatusOr<std::unique_ptr<WritableBlock>> FinishWithoutFinalize();

  int64_t num_entries() const { return num_entries_; }
  BlockId block_id() const { return block_id_; }
  // Bytes written to the block so far (the file size after Finish()).
  uint64_t bytes_written() const { return offset_; }

 private:
  struct PageInfo {
    rowid_t first_row;
    rowid_t last_row;
    uint32_t size;
    uint32_t num_entries;
  };
  absl::Status FlushPage();
  absl::Status Write(std::string_view bytes);
  std::string EncodeFooter(uint32_t index_size) const;
  absl::Status Fail(absl::Status s);

  const DeltaType type_;
  std::unique_ptr<WritableBlock> block_;
  const BlockId block_id_;
  DeltaFileWriterOptions options_;
  const CompressionCodec* codec_ = nullptr;
  enum class State { kNew, kWriting, kDone, kFailed };
  State state_ = State::kNew;

  uint64_t offset_ = 0;
  int64_t num_entries_ = 0;
  bool has_last_ = false;
  DeltaKey last_key_;
  DeltaKey min_key_;  // First key appended.
  HybridTime min_ts_ = HybridTime::kMax;
  HybridTime max_ts_ = HybridTime::kMin;
  // The page being built: raw entries, its first row and count.
  std::string page_raw_;
  rowid_t page_first_row_ = 0;
  uint32_t page_entries_ = 0;
  std::vector<PageInfo> pages_;
  std::string scratch_;
};

// Reads one delta file; implements DeltaStore. Open() reads and checks the footer and the index
// and keeps the index in memory; pages are read (through `cache` when given) by CollectEntries.
// Thread-safe (const methods; the block and the cache are thread-safe).
class DeltaFileReader final : public DeltaStore {
 public:
  // Takes ownership of `block`; `cache` (may be nullptr) is borrowed and outlives the reader.
  // DATA_LOSS naming the block for a corrupt or truncated footer or index; I/O errors from the
  // block.
  static absl::StatusOr<std::unique_ptr<DeltaFileReader>> Open(std::unique_ptr<ReadableBlock> block,
                                                               BlockCache* cache);
  ~DeltaFileReader() override;

  // ---- DeltaStore ----
  DeltaType type() const override { return type_; }
  // Reads only the pages covering the rows; copies the change bytes into `arena`. DATA_LOSS
  // naming the block and page for a corrupt page; I/O errors from the block.
  absl::Status CollectEntries(rowid_t start, size_t n, Arena* arena,
                              std::vector<DeltaEntry>* out) const override;
  int64_t num_entries() const override { return num_entries_; }
  uint64_t size_bytes() const override;
  HybridTime min_timestamp() const override { return min_ts_; }
  HybridTime max_timestamp() const override { return max_ts_; }
  std::string ToString() const override { return name_; }

  BlockId block_id() const;
  size_t num_pages() const { return pages_.size(); }
  // Smallest and largest row with an entry (0 when empty).
  rowid_t min_row() const { return min_row_; }
  rowid_t max_row() const { return max_row_; }

 private:
  struct PageInfo {
    rowid_t first_row;
    rowid_t last_row;
    uint64_t offset;
    uint32_t size;
    uint32_t num_entries;
  };
  class Page;

  explicit DeltaFileReader(std::unique_ptr<ReadableBlock> block, BlockCache* cache);
  absl::Status ReadFooter(uint32_t* index_size, uint32_t* num_pages);
  absl::Status ReadIndex(uint32_t index_size, uint32_t num_pages);
  absl::StatusOr<std::unique_ptr<Page>> LoadPage(size_t index) const;
  // Decodes and checks the entries of `page->raw` against the index and footer. DATA_LOSS
  // without the file name (the caller prepends it).
  absl::Status ParseEntries(const PageInfo& info, Page* page) const;
  // The page, from the cache or the block: pinned by *handle, or owned by *owned.
  absl::Status GetPage(size_t index, BlockCache::Handle* handle, std::unique_ptr<Page>* owned,
                       const Page** page) const;
  absl::Status Corrupt(std::string_view what) const;

  // Constant after Open().
  const std::unique_ptr<ReadableBlock> block_;
  BlockCache* const cache_;
  std::string name_;  // "REDO file <id>" once the footer is read.
  DeltaType type_ = DeltaType::kRedo;
  int64_t num_entries_ = 0;
  HybridTime min_ts_ = HybridTime::kInvalid;
  HybridTime max_ts_ = HybridTime::kInvalid;
  rowid_t min_row_ = 0;
  rowid_t max_row_ = 0;
  std::vector<PageInfo> pages_;
};

}  // namespace basalt
