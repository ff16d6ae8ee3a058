#include "tablet/delta_file.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "cfile/block_cache.h"
#include "cfile/compression.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/status_macros.h"
#include "common/strings.h"

DEFINE_int32(deltafile_page_size_bytes, 64 * 1024,
             "Target size in bytes of the uncompressed pages of delta files. A page is read "
             "whole when any of its rows is scanned.");

namespace basalt {

namespace dfi = delta_file_internal;

namespace {

void PutMaskedCrc(std::string* buf, std::string_view covered) {
  PutFixed32(buf, crc32c::Mask(crc32c::Value(covered)));
}

bool CrcMatches(std::string_view covered, const char* stored) {
  return crc32c::Unmask(DecodeFixed32(stored)) == crc32c::Value(covered);
}

}  // namespace

// ---- DeltaFileWriter ----------------------------------------------------------------------------

DeltaFileWriter::DeltaFileWriter(DeltaType type, std::unique_ptr<WritableBlock> block,
                                 DeltaFileWriterOptions options)
    : type_(type), block_(std::move(block)), block_id_(block_->id()), options_(options) {}

DeltaFileWriter::~DeltaFileWriter() {
  if (block_ != nullptr) (void)block_->Abort();
}

absl::Status DeltaFileWriter::Fail(absl::Status s) {
  state_ = State::kFailed;
  return s;
}

absl::Status DeltaFileWriter::Start() {
  if (state_ != State::kNew) return absl::FailedPreconditionError("DeltaFileWriter: Start twice");
  if (options_.page_size_bytes == 0) {
    options_.page_size_bytes = static_cast<size_t>(std::max(0, FLAGS_deltafile_page_size_bytes));
  }
  if (options_.page_size_bytes < dfi::kMinPageSizeBytes ||
      options_.page_size_bytes > dfi::kMaxPageSizeBytes) {
    return absl::InvalidArgumentError(StrCat("delta file page size ", options_.page_size_bytes,
                                             " outside [", dfi::kMinPageSizeBytes, ", ",
                                             dfi::kMaxPageSizeBytes, "]"));
  }
  if (options_.compression == CompressionType::kDefault) {
    return absl::InvalidArgumentError("delta file codec must be NONE or a concrete codec");
  }
  BASALT_ASSIGN_OR_RETURN(codec_, GetCompressionCodec(options_.compression));
  state_ = State::kWriting;
  return absl::OkStatus();
}

absl::Status DeltaFileWriter::Append(DeltaKey key, std::string_view changes) {
  if (state_ != State::kWriting) {
    return absl::FailedPreconditionError("DeltaFileWriter: Append outside Start()..Finish()");
  }
  if (!key.ts.is_valid()) return absl::InvalidArgumentError("delta with an invalid timestamp");
  if (has_last_ && key <= last_key_) {
    return absl::InvalidArgumentError(StrCat("delta key (row ", key.row, ", ", key.ts.ToString(),
                                             ") not after (row ", last_key_.row, ", ",
                                             last_key_.ts.ToString(), ")"));
  }
  if (changes.size() > dfi::kMaxChangeListBytes) {
    return absl::InvalidArgumentError(StrCat("change list of ", changes.size(), " bytes"));
  }
  absl::Status s = CheckRowChangeListFraming(changes);
  if (!s.ok()) return absl::InvalidArgumentError(s.message());
  if (!has_last_) min_key_ = key;
  has_last_ = true;
  last_key_ = key;
  min_ts_ = std::min(min_ts_, key.ts);
  max_ts_ = std::max(max_ts_, key.ts);
  if (page_entries_ == 0) page_first_row_ = key.row;
  PutVarint32(&page_raw_, key.row);
  PutFixed64(&page_raw_, key.ts.value());
  PutVarint32(&page_raw_, static_cast<uint32_t>(changes.size()));
  page_raw_.append(changes);
  ++page_entries_;
  ++num_entries_;
  if (page_raw_.size() >= options_.page_size_bytes) return FlushPage();
  return absl::OkStatus();
}

absl::Status DeltaFileWriter::Write(std::string_view bytes) {
  absl::Status s = block_->Append(bytes);
  if (!s.ok()) return Fail(PrependToStatus(s, StrCat("delta file ", block_id_.ToString())));
  offset_ += bytes.size();
  return absl::OkStatus();
}

// Page: u8 codec | varint32 entries | varint32 raw size | payload | fixed32 masked CRC32C.
absl::Status DeltaFileWriter::FlushPage() {
  if (page_entries_ == 0) return absl::OkStatus();
  CompressionType codec = CompressionType::kNone;
  std::string_view payload = page_raw_;
  if (options_.compression != CompressionType::kNone) {
    absl::Status s = codec_->Compress(page_raw_, &scratch_);
    if (!s.ok()) return Fail(s);
    if (scratch_.size() < page_raw_.size()) {
      codec = options_.compression;
      payload = scratch_;
    }
  }
  std::string page;
  page.reserve(payload.size() + 16);
  page.push_back(static_cast<char>(codec));
  PutVarint32(&page, page_entries_);
  PutVarint32(&page, static_cast<uint32_t>(page_raw_.size()));
  page.append(payload);
  PutMaskedCrc(&page, page);
  pages_.push_back(
      PageInfo{page_first_row_, last_key_.row, static_cast<uint32_t>(page.size()), page_entries_});
  page_raw_.clear();
  page_entries_ = 0;
  return Write(page);
}

// Footer: u8 type | 3 zero bytes | fixed32 pages | fixed64 entries | fixed32 index size |
// fixed32 min row | fixed32 max row | fixed64 min ts | fixed64 max ts.
std::string DeltaFileWriter::EncodeFooter(uint32_t index_size) const {
  std::string f;
  f.push_back(static_cast<char>(type_));
  f.append(3, '\0');
  PutFixed32(&f, static_cast<uint32_t>(pages_.size()));
  PutFixed64(&f, static_cast<uint64_t>(num_entries_));
  PutFixed32(&f, index_size);
  PutFixed32(&f, has_last_ ? min_key_.row : 0);
  PutFixed32(&f, has_last_ ? last_key_.row : 0);
  PutFixed64(&f, (has_last_ ? min_ts_ : HybridTime::kInvalid).value());
  PutFixed64(&f, (has_last_ ? max_ts_ : HybridTime::kInvalid).value());
  return f;
}

absl::StatusOr<std::unique_ptr<WritableBlock>> DeltaFileWriter::FinishWithoutFinalize() {
  if (state_ != State::kWriting) {
    return absl::FailedPreconditionError("DeltaFileWriter: Finish without a successful Start()");
  }
  BASALT_RETURN_IF_ERROR(FlushPage());
  // Index: per page varint32 first row | varint32 last - first | varint32 size | varint32
  // entries; then fixed32 masked CRC32C.
  std::string index;
  for (const PageInfo& p : pages_) {
    PutVarint32(&index, p.first_row);
    PutVarint32(&index, p.last_row - p.first_row);
    PutVarint32(&index, p.size);
    PutVarint32(&index, p.num_entries);
  }
  PutMaskedCrc(&index, index);
  std::string tail = EncodeFooter(static_cast<uint32_t>(index.size()));
  PutMaskedCrc(&tail, tail);
  PutFixed32(&tail, dfi::kFormatVersion);
  tail.append(dfi::kMagic, sizeof(dfi::kMagic));
  BASALT_RETURN_IF_ERROR(Write(index));
  BASALT_RETURN_IF_ERROR(Write(tail));
  state_ = State::kDone;
  return std::move(block_);
}

absl::Status DeltaFileWriter::Finish() {
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableBlock> block, FinishWithoutFinalize());
  BASALT_RETURN_IF_ERROR_PREPEND(block->Finalize(), StrCat("delta file ", block_id_.ToString()));
  return absl::OkStatus();
}

// ---- DeltaFileReader ----------------------------------------------------------------------------

// A decoded page: the raw entries and, per entry, its key and where its change bytes are.
class DeltaFileReader::Page final : public BlockCache::Value {
 public:
  struct Entry {
    DeltaKey key;
    uint32_t offset;
    uint32_t size;
  };
  std::string raw;
  std::vector<Entry> entries;
  std::string_view changes(const Entry& e) const { return {raw.data() + e.offset, e.size}; }
};

DeltaFileReader::DeltaFileReader(std::unique_ptr<ReadableBlock> block, BlockCache* cache)
    : block_(std::move(block)),
      cache_(cache),
      name_(StrCat("delta file ", block_->id().ToString())) {}

DeltaFileReader::~DeltaFileReader() = default;

BlockId DeltaFileReader::block_id() const { return block_->id(); }
uint64_t DeltaFileReader::size_bytes() const { return block_->size(); }

absl::Status DeltaFileReader::Corrupt(std::string_view what) const {
  return absl::DataLossError(StrCat(name_, ": ", what));
}

absl::StatusOr<std::unique_ptr<DeltaFileReader>> DeltaFileReader::Open(
    std::unique_ptr<ReadableBlock> block, BlockCache* cache) {
  std::unique_ptr<DeltaFileReader> r(new DeltaFileReader(std::move(block), cache));
  uint32_t index_size = 0;
  uint32_t num_pages = 0;
  BASALT_RETURN_IF_ERROR(r->ReadFooter(&index_size, &num_pages));
  BASALT_RETURN_IF_ERROR(r->ReadIndex(index_size, num_pages));
  return r;
}

absl::Status DeltaFileReader::ReadFooter(uint32_t* index_size, uint32_t* num_pages) {
  const uint64_t size = block_->size();
  if (size < dfi::kTailSize) {
    return Corrupt(
        StrCat("file of ", size, " bytes is shorter than its ", dfi::kTailSize, "-byte footer"));
  }
  std::string tail;
  BASALT_RETURN_IF_ERROR(block_->ReadAt(size - dfi::kTailSize, dfi::kTailSize, &tail));
  if (std::memcmp(tail.data() + dfi::kTailSize - sizeof(dfi::kMagic), dfi::kMagic,
                  sizeof(dfi::kMagic)) != 0) {
    return Corrupt("bad magic (not a delta file)");
  }
  const uint32_t version = DecodeFixed32(tail.data() + dfi::kFooterSize + 4);
  if (version != dfi::kFormatVersion)
    return Corrupt(StrCat("unsupported format version ", version));
  const std::string_view footer(tail.data(), dfi::kFooterSize);
  if (!CrcMatches(footer, tail.data() + dfi::kFooterSize))
    return Corrupt("footer checksum mismatch");
  const char* p = footer.data();
  if (static_cast<uint8_t>(p[0]) > 1 || p[1] != 0 || p[2] != 0 || p[3] != 0) {
    return Corrupt("bad delta type in the footer");
  }
  type_ = static_cast<DeltaType>(p[0]);
  name_ = StrCat(DeltaTypeName(type_), " file ", block_->id().ToString());
  *num_pages = DecodeFixed32(p + 4);
  const uint64_t num_entries = DecodeFixed64(p + 8);
  *index_size = DecodeFixed32(p + 16);
  min_row_ = DecodeFixed32(p + 20);
  max_row_ = DecodeFixed32(p + 24);
  min_ts_ = HybridTime(DecodeFixed64(p + 28));
  max_ts_ = HybridTime(DecodeFixed64(p + 36));
  if (*index_size < 4 || *index_size > size - dfi::kTailSize ||
      *index_size > uint64_t{*num_pages} * 4 * kMaxVarint32Length + 4) {
    return Corrupt(StrCat("bad index size ", *index_size));
  }
  const uint64_t data_size = size - dfi::kTailSize - *index_size;
  const bool empty = num_entries == 0;
  const bool bad_counts =
      empty ? (*num_pages != 0 || data_size != 0 || min_row_ != 0 || max_row_ != 0 ||
               min_ts_.is_valid() || max_ts_.is_valid())
            : (*num_pages == 0 || *num_pages > num_entries ||
               *num_pages > data_size / dfi::kMinPageBytes || num_entries > INT64_MAX ||
               min_row_ > max_row_ || !max_ts_.is_valid() || min_ts_ > max_ts_);
  if (bad_counts) return Corrupt("inconsistent counts or bounds in the footer");
  num_entries_ = static_cast<int64_t>(num_entries);
  return absl::OkStatus();
}

absl::Status DeltaFileReader::ReadIndex(uint32_t index_size, uint32_t num_pages) {
  const uint64_t data_size = block_->size() - dfi::kTailSize - index_size;
  std::string index;
  BASALT_RETURN_IF_ERROR(block_->ReadAt(data_size, index_size, &index));
  std::string_view in(index.data(), index.size() - 4);
  if (!CrcMatches(in, index.data() + in.size())) return Corrupt("index checksum mismatch");
  pages_.reserve(num_pages);
  uint64_t offset = 0;
  uint64_t entries = 0;
  for (uint32_t i = 0; i < num_pages; ++i) {
    uint32_t first, span, page_size, page_entries;
    if (!GetVarint32(&in, &first) || !GetVarint32(&in, &span) || !GetVarint32(&in, &page_size) ||
        !GetVarint32(&in, &page_entries)) {
      return Corrupt(StrCat("index truncated at page ", i));
    }
    const uint64_t last = uint64_t{first} + span;
    const bool bad = last > max_row_ || first < (i == 0 ? min_row_ : pages_.back().last_row) ||
                     (i == 0 && first != min_row_) || page_size < dfi::kMinPageBytes ||
                     page_size > data_size - offset || page_entries == 0;
    if (bad) return Corrupt(StrCat("bad index entry for page ", i));
    pages_.push_back(PageInfo{first, static_cast<rowid_t>(last), offset, page_size, page_entries});
    offset += page_size;
    entries += page_entries;
  }
  if (!in.empty() || offset != data_size || entries != uint64_t(num_entries_) ||
      (num_pages > 0 && pages_.back().last_row != max_row_)) {
    return Corrupt("index disagrees with the footer");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DeltaFileReader::Page>> DeltaFileReader::LoadPage(
    size_t index) const {
  const PageInfo& info = pages_[index];
  const std::string what = StrCat("page ", index, " at offset ", info.offset);
  auto bad = [&](std::string_view why) { return Corrupt(StrCat(what, ": ", why)); };
  std::string bytes;
  BASALT_RETURN_IF_ERROR(block_->ReadAt(info.offset, info.size, &bytes));
  std::string_view in(bytes.data(), bytes.size() - 4);
  if (!CrcMatches(in, bytes.data() + in.size())) return bad("checksum mismatch");
  const auto codec_type = static_cast<CompressionType>(in[0]);
  in.remove_prefix(1);
  uint32_t num_entries, raw_size;
  if (!GetVarint32(&in, &num_entries) || !GetVarint32(&in, &raw_size) ||
      num_entries != info.num_entries || raw_size > dfi::kMaxRawPageBytes ||
      raw_size / dfi::kMinRawEntryBytes < num_entries) {
    return bad("corrupt page header");
  }
  auto page = std::make_unique<Page>();
  if (codec_type == CompressionType::kNone) {
    if (in.size() != raw_size) return bad("payload size disagrees with the header");
    page->raw.assign(in);
  } else {
    absl::StatusOr<const CompressionCodec*> codec = GetCompressionCodec(codec_type);
    if (!codec.ok() || codec_type == CompressionType::kDefault) return bad("unknown codec");
    page->raw.resize(raw_size);
    absl::Status s = (*codec)->Uncompress(in, page->raw.data(), raw_size);
    if (!s.ok()) return bad(std::string_view(s.message().data(), s.message().size()));
  }
  BASALT_RETURN_IF_ERROR_PREPEND(ParseEntries(info, page.get()), StrCat(name_, ": ", what));
  return page;
}

// Entry: varint32 row | fixed64 ts | varint32 length | change bytes.
absl::Status DeltaFileReader::ParseEntries(const PageInfo& info, Page* page) const {
  std::string_view in = page->raw;
  page->entries.reserve(info.num_entries);
  for (uint32_t i = 0; i < info.num_entries; ++i) {
    uint32_t row, len;
    uint64_t ts;
    if (!GetVarint32(&in, &row) || !GetFixed64(&in, &ts) || !GetVarint32(&in, &len) ||
        len > in.size()) {
      return absl::DataLossError(StrCat("entry ", i, " truncated"));
    }
    const DeltaKey key{row, HybridTime(ts)};
    const bool bad_key = row < info.first_row || row > info.last_row ||
                         (i == 0 && row != info.first_row) || key.ts < min_ts_ ||
                         key.ts > max_ts_ || (i > 0 && key <= page->entries.back().key);
    if (bad_key) return absl::DataLossError(StrCat("entry ", i, " has a bad key"));
    const std::string_view changes = in.substr(0, len);
    absl::Status s = CheckRowChangeListFraming(changes);
    if (!s.ok()) return absl::DataLossError(StrCat("entry ", i, ": ", s.message()));
    const auto offset = static_cast<uint32_t>(changes.data() - page->raw.data());
    page->entries.push_back(Page::Entry{key, offset, len});
    in.remove_prefix(len);
  }
  if (!in.empty() || page->entries.back().key.row != info.last_row) {
    return absl::DataLossError("entries disagree with the index");
  }
  return absl::OkStatus();
}

absl::Status DeltaFileReader::GetPage(size_t index, BlockCache::Handle* handle,
                                      std::unique_ptr<Page>* owned, const Page** page) const {
  const BlockCache::Key key{block_->id().value(), pages_[index].offset};
  if (cache_ != nullptr) {
    *handle = cache_->Lookup(key);
    if (*handle) {
      *page = &handle->value_as<Page>();
      return absl::OkStatus();
    }
  }
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<Page> loaded, LoadPage(index));
  if (cache_ != nullptr) {
    const size_t charge =
        sizeof(Page) + loaded->raw.size() + loaded->entries.size() * sizeof(Page::Entry);
    *handle = cache_->Insert(key, std::move(loaded), charge);
    *page = &handle->value_as<Page>();
  } else {
    *owned = std::move(loaded);
    *page = owned->get();
  }
  return absl::OkStatus();
}

absl::Status DeltaFileReader::CollectEntries(rowid_t start, size_t n, Arena* arena,
                                             std::vector<DeltaEntry>* out) const {
  if (n == 0 || pages_.empty()) return absl::OkStatus();
  const uint64_t end = RowRangeEnd(start, n);
  if (start > max_row_ || end <= min_row_) return absl::OkStatus();
  DCHECK(arena != nullptr);
  size_t i = std::partition_point(pages_.begin(), pages_.end(),
                                  [&](const PageInfo& p) { return p.last_row < start; }) -
             pages_.begin();
  bool have_prev = false;
  DeltaKey prev;
  for (; i < pages_.size() && pages_[i].first_row < end; ++i) {
    BlockCache::Handle handle;
    std::unique_ptr<Page> owned;
    const Page* page = nullptr;
    BASALT_RETURN_IF_ERROR(GetPage(i, &handle, &owned, &page));
    auto it = std::partition_point(page->entries.begin(), page->entries.end(),
                                   [&](const Page::Entry& e) { return e.key.row < start; });
    for (; it != page->entries.end() && it->key.row < end; ++it) {
      if (have_prev && it->key <= prev) {
        return Corrupt(StrCat("page ", i, ": keys out of order across pages"));
      }
      have_prev = true;
      prev = it->key;
      out->push_back(DeltaEntry{it->key, arena->AddString(page->changes(*it))});
    }
  }
  return absl::OkStatus();
}

}  // namespace basalt
