#include "tablet/diskrowset_writer.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "cfile/bloom_filter.h"
#include "cfile/cfile_writer.h"
#include "common/key_encoder.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "glog/logging.h"

namespace basalt {

namespace {

// Key index pages are smaller than data pages: a lookup decodes one page of PREFIX-encoded keys,
// so the page size bounds a seek's cost, and 32 KiB pages still keep the value index (one first
// key per page, held in memory) small. (4 and 16 KiB measured no faster: decoder setup and the
// value-index search dominate then.)
constexpr int32_t kKeyIndexPageSizeBytes = 32 * 1024;

// Key hashes are buffered (8 bytes per row) until this many rows, so the bloom filter of a rowset
// of up to 1M rows is sized for its real row count whatever the caller expected; past it the
// filter is sized from the expectation (at least twice the rows so far) and fed directly.
constexpr size_t kMaxBufferedBloomHashes = size_t{1} << 20;

// The key bitmap is kept while it spans at most this many bits per row written plus the slack;
// beyond, it would lose to a bloom filter at any rate down to about 1e-5 (17 bits per key at
// 0.001, 26 at 0.0001) and is dropped. This also bounds its memory to 4 bytes per row.
constexpr uint64_t kMaxKeyBitmapBitsPerRow = 32;
constexpr uint64_t kKeyBitmapSlackBits = uint64_t{1} << 20;

CFileWriterOptions KeyIndexOptions() {
  CFileWriterOptions o;
  o.type = DataType::kBinary;
  o.nullable = false;
  o.is_key = true;
  o.storage.encoding = EncodingType::kPrefix;
  o.storage.block_size_bytes = kKeyIndexPageSizeBytes;
  return o;
}

}  // namespace

DiskRowSetWriter::DiskRowSetWriter(BlockManager* bm, const Schema* schema, int64_t rowset_id,
                                   uint64_t expected_rows)
    : bm_(bm), schema_(schema), rowset_id_(rowset_id), expected_rows_(expected_rows) {}

DiskRowSetWriter::~DiskRowSetWriter() = default;

absl::Status DiskRowSetWriter::Fail(absl::Status s) {
  state_ = State::kFailed;
  return PrependToStatus(s, StrCat("rowset ", rowset_id_));
}

absl::Status DiskRowSetWriter::Open() {
  if (state_ != State::kNew) {
    return absl::FailedPreconditionError("DiskRowSetWriter: Open() called twice");
  }
  if (schema_->num_key_columns() == 0) {
    return Fail(absl::InvalidArgumentError("schema has no key columns"));
  }
  // A single integer key column is written as a key file (sorted, with a value index) and serves
  // as the key index itself.
  const bool key_column_is_index = SingleIntegerKeyWidth(*schema_) > 0;
  key_bitmap_live_ = key_column_is_index;
  for (int i = 0; i < schema_->num_columns(); ++i) {
    auto block = bm_->CreateBlock();
    if (!block.ok()) return Fail(block.status());
    auto writer = std::make_unique<CFileWriter>(
        CFileWriterOptions::ForColumn(schema_->column(i), /*is_key=*/key_column_is_index && i == 0),
        std::move(*block));
    absl::Status s = writer->Start();
    if (!s.ok()) return Fail(PrependToStatus(s, StrCat("column ", schema_->column(i).name())));
    column_writers_.push_back(std::move(writer));
  }
  if (!key_column_is_index) {
    auto block = bm_->CreateBlock();
    if (!block.ok()) return Fail(block.status());
    key_writer_ = std::make_unique<CFileWriter>(KeyIndexOptions(), std::move(*block));
    absl::Status s = key_writer_->Start();
    if (!s.ok()) return Fail(PrependToStatus(s, "key index"));
  }
  state_ = State::kWriting;
  return absl::OkStatus();
}

absl::Status DiskRowSetWriter::CheckAppend(absl::Span<const ColumnBlock* const> columns,
                                           absl::Span<const std::string_view> keys,
                                           size_t n) const {
  if (columns.size() != static_cast<size_t>(schema_->num_columns()) || keys.size() < n) {
    return absl::InvalidArgumentError(StrCat(columns.size(), " column blocks and ", keys.size(),
                                             " keys for ", schema_->num_columns(), " columns and ",
                                             n, " rows"));
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    const ColumnSchema& col = schema_->column(static_cast<int>(i));
    if (columns[i]->type != col.type() || columns[i]->capacity < n) {
      return absl::InvalidArgumentError(
          StrCat("column block ", i, " does not fit column ", col.ToString(), " and ", n, " rows"));
    }
  }
  std::string_view prev = last_key_;
  for (size_t j = 0; j < n; ++j) {
    if ((rows_written_ > 0 || j > 0) && keys[j] <= prev) {
      return absl::InvalidArgumentError(
          StrCat("key of row ", rows_written_ + j, " is not greater than the key before it"));
    }
    prev = keys[j];
  }
  return absl::OkStatus();
}

absl::Status DiskRowSetWriter::AppendBlock(absl::Span<const ColumnBlock* const> columns,
                                           absl::Span<const std::string_view> keys, size_t n) {
  if (state_ != State::kWriting) {
    return absl::FailedPreconditionError("DiskRowSetWriter: not open for writing");
  }
  if (n == 0) return absl::OkStatus();
  BASALT_RETURN_IF_ERROR(CheckAppend(columns, keys, n));
  for (size_t i = 0; i < columns.size(); ++i) {
    absl::Status s = column_writers_[i]->AppendBlock(*columns[i], n);
    if (!s.ok()) {
      return Fail(
          PrependToStatus(s, StrCat("column ", schema_->column(static_cast<int>(i)).name())));
    }
  }
  if (key_writer_ != nullptr) {
    // BINARY cells are std::string_view, so the keys are already in cell format.
    absl::Status s = key_writer_->AppendValues(keys.data(), nullptr, n);
    if (!s.ok()) return Fail(PrependToStatus(s, "key index"));
  }
  if (rows_written_ == 0) min_key_.assign(keys[0]);
  // Keys are hashed for the bloom filter only once the key bitmap is out of the running.
  if (key_bitmap_live_) AddToKeyBitmap(keys.first(n));
  if (!key_bitmap_live_) AddToBloom(keys.first(n));
  last_key_.assign(keys[n - 1]);
  rows_written_ += n;
  return absl::OkStatus();
}

void DiskRowSetWriter::AddToKeyBitmap(absl::Span<const std::string_view> keys) {
  // Keys ascend, so the last one has the largest offset; every key has the key column's width.
  const uint64_t base = EncodedIntegerKeyValue(min_key_);
  const uint64_t last = EncodedIntegerKeyValue(keys.back()) - base;
  if (last >= kMaxKeyBitmapBitsPerRow * (rows_written_ + keys.size()) + kKeyBitmapSlackBits) {
    KeyBitmapToBloom(/*finishing=*/false);  // The caller adds `keys`.
    return;
  }
  if (key_bits_.size() <= last / 64) key_bits_.resize(last / 64 + 1);  // Grows geometrically.
  for (std::string_view k : keys) {
    const uint64_t offset = EncodedIntegerKeyValue(k) - base;
    key_bits_[offset / 64] |= uint64_t{1} << (offset % 64);
  }
}

std::string DiskRowSetWriter::FinishFilter() {
  if (key_bitmap_live_) {
    // Against the bloom filter this rowset would get, sized for the rows written.
    const uint32_t bloom_pages = BloomFilterBuilder::NumPagesFor(rows_written_);
    const uint64_t num_bits =
        EncodedIntegerKeyValue(last_key_) - EncodedIntegerKeyValue(min_key_) + 1;
    if (KeyBitmapBuilder::NumPagesFor(num_bits) <= bloom_pages) {
      KeyBitmapBuilder bitmap(num_bits);
      ForEachKeyBitmapOffset([&](uint64_t offset) { bitmap.Add(offset); });
      DCHECK_EQ(bitmap.num_keys(), rows_written_);
      return bitmap.Finish();
    }
    KeyBitmapToBloom(/*finishing=*/true);
  }
  if (bloom_ == nullptr) {
    // Every hash is still buffered: size the filter for the rows actually written.
    bloom_ = std::make_unique<BloomFilterBuilder>(rows_written_);
    for (uint64_t h : bloom_hashes_) bloom_->AddHash(h);
  }
  return bloom_->Finish();
}

void DiskRowSetWriter::KeyBitmapToBloom(bool finishing) {
  key_bitmap_live_ = false;
  // At the finish the row count is known: size the filter for it.
  if (finishing) bloom_ = std::make_unique<BloomFilterBuilder>(rows_written_);
  const uint64_t base = EncodedIntegerKeyValue(min_key_);
  const int width = static_cast<int>(min_key_.size());
  std::string key;
  ForEachKeyBitmapOffset([&](uint64_t offset) {
    key.clear();
    AppendEncodedIntegerKey(base + offset, width, &key);
    const std::string_view view = key;
    AddToBloom(absl::MakeConstSpan(&view, 1));
  });
  key_bits_ = {};
}

void DiskRowSetWriter::ForEachKeyBitmapOffset(absl::FunctionRef<void(uint64_t)> fn) const {
  for (size_t w = 0; w < key_bits_.size(); ++w) {
    for (uint64_t bits = key_bits_[w]; bits != 0; bits &= bits - 1) {
      fn(w * 64 + static_cast<uint64_t>(std::countr_zero(bits)));
    }
  }
}

void DiskRowSetWriter::AddToBloom(absl::Span<const std::string_view> keys) {
  if (bloom_ != nullptr) {
    for (std::string_view k : keys) bloom_->AddKey(k);
    return;
  }
  for (std::string_view k : keys) bloom_hashes_.push_back(BloomKeyHash(k));
  if (bloom_hashes_.size() <= kMaxBufferedBloomHashes) return;
  // Too many to buffer: the filter is sized now, for at least twice the rows seen so far.
  bloom_ = std::make_unique<BloomFilterBuilder>(
      std::max<uint64_t>(expected_rows_, 2 * bloom_hashes_.size()));
  for (uint64_t h : bloom_hashes_) bloom_->AddHash(h);
  bloom_hashes_.clear();
  bloom_hashes_.shrink_to_fit();
}

uint64_t DiskRowSetWriter::bytes_written() const {
  uint64_t total = bloom_bytes_;
  for (const auto& w : column_writers_) total += w->bytes_written();
  if (key_writer_ != nullptr) total += key_writer_->bytes_written();
  return total;
}

absl::Status DiskRowSetWriter::FinishFiles(RowSetMetadata* meta,
                                           std::vector<std::unique_ptr<WritableBlock>>* blocks) {
  for (size_t i = 0; i < column_writers_.size(); ++i) {
    const int idx = static_cast<int>(i);
    meta->column_blocks.emplace_back(schema_->column_id(idx), column_writers_[i]->block_id());
    auto block = column_writers_[i]->FinishWithoutFinalize();
    if (!block.ok()) {
      return PrependToStatus(block.status(), StrCat("column ", schema_->column(idx).name()));
    }
    blocks->push_back(std::move(*block));
  }
  if (key_writer_ == nullptr) return absl::OkStatus();  // Column 0 is the key index.
  meta->key_index_block = key_writer_->block_id();
  auto block = key_writer_->FinishWithoutFinalize();
  if (!block.ok()) return PrependToStatus(block.status(), "key index");
  blocks->push_back(std::move(*block));
  return absl::OkStatus();
}

absl::StatusOr<RowSetMetadata> DiskRowSetWriter::FinishWithoutFinalize(
    std::vector<std::unique_ptr<WritableBlock>>* blocks) {
  if (state_ != State::kWriting) {
    return absl::FailedPreconditionError("DiskRowSetWriter: not open for writing");
  }
  if (rows_written_ == 0) {
    state_ = State::kDone;
    return absl::FailedPreconditionError(
        StrCat("rowset ", rowset_id_, ": no rows written, nothing to finish"));
  }
  RowSetMetadata meta;
  meta.id = rowset_id_;
  meta.min_key = min_key_;
  meta.max_key = last_key_;
  meta.num_rows = rows_written_;
  // Collected locally so that on error every block is destroyed (aborted) here.
  std::vector<std::unique_ptr<WritableBlock>> written;
  absl::Status s = FinishFiles(&meta, &written);
  if (!s.ok()) return Fail(s);
  auto bloom_block = bm_->CreateBlock();
  if (!bloom_block.ok()) return Fail(bloom_block.status());
  const std::string bloom = FinishFilter();
  s = (*bloom_block)->Append(bloom);
  if (!s.ok()) return Fail(PrependToStatus(s, "bloom filter"));
  bloom_bytes_ = bloom.size();
  meta.bloom_block = (*bloom_block)->id();
  written.push_back(std::move(*bloom_block));
  for (auto& b : written) blocks->push_back(std::move(b));
  state_ = State::kDone;
  return meta;
}

}  // namespace basalt
