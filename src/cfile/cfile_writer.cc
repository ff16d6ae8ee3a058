#include "cfile/cfile_writer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "cfile/compression.h"
#include "cfile/dict_encoding.h"
#include "cfile/encoding.h"
#include "common/bitmap.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "proto/cfile.pb.h"

DEFINE_int32(cfile_default_block_size, 256 * 1024,
             "Target size in bytes of an encoded column file page, for columns whose "
             "block_size_bytes is unset.");

namespace basalt {

using cfile_internal::CellValue;
using cfile_internal::kMaxRowsPerPage;
using cfile_internal::kMaxZoneMapValueBytes;
using cfile_internal::PageIndexEntry;

namespace {

// Sets `*has`/`*bytes` to the zone-map form of `v`: a variable-length min is cut to
// kMaxZoneMapValueBytes (a prefix is still a lower bound); a max that long is dropped.
void ZoneValue(const TypeInfo& type, const CellValue& v, bool is_max, bool* has,
               std::string* bytes) {
  bytes->clear();
  const bool cut = cfile_internal::SerializeCell(type, v.cell(), kMaxZoneMapValueBytes, bytes);
  *has = !(cut && is_max);
  if (!*has) bytes->clear();
}

// Positions of the smallest and largest of n cells and, for chunks that must be sorted, whether
// they are in ascending order.
struct ChunkStats {
  size_t min = 0;
  size_t max = 0;
  bool sorted = true;
};

// Sorted chunks (key files) need no search: min is the first cell, max the last.
template <typename Less>
ChunkStats ScanChunkWith(size_t n, bool sorted, Less less) {
  ChunkStats st;
  if (sorted) {
    for (size_t k = 1; k < n; ++k) st.sorted &= !less(k, k - 1);
    st.max = n - 1;
    return st;
  }
  for (size_t k = 1; k < n; ++k) {
    if (less(k, st.min)) st.min = k;
    if (less(st.max, k)) st.max = k;
  }
  return st;
}

// Typed loops for the common integer-backed cells (signed order, the order of TypeInfo::Compare
// for them); TypeInfo::Compare for the rest (floating point total order, strings, int128).
template <typename T>
ChunkStats ScanTyped(const uint8_t* cells, size_t n, bool sorted) {
  auto load = [cells](size_t i) {
    T v;
    std::memcpy(&v, cells + i * sizeof(T), sizeof(T));
    return v;
  };
  return ScanChunkWith(n, sorted, [&](size_t a, size_t b) { return load(a) < load(b); });
}

// `sorted`: the cells should be ascending (checked into ChunkStats::sorted).
ChunkStats ScanChunk(const TypeInfo& type, const uint8_t* cells, size_t n, bool sorted) {
  switch (type.physical_type()) {
    case PhysicalType::kInt8:
      return ScanTyped<int8_t>(cells, n, sorted);
    case PhysicalType::kInt16:
      return ScanTyped<int16_t>(cells, n, sorted);
    case PhysicalType::kInt32:
      return ScanTyped<int32_t>(cells, n, sorted);
    case PhysicalType::kInt64:
      return ScanTyped<int64_t>(cells, n, sorted);
    default: {
      const size_t size = type.size();
      return ScanChunkWith(n, sorted, [&](size_t a, size_t b) {
        return type.Compare(cells + a * size, cells + b * size) < 0;
      });
    }
  }
}

}  // namespace

CFileWriterOptions CFileWriterOptions::ForColumn(const ColumnSchema& column, bool is_key) {
  CFileWriterOptions o;
  o.type = column.type();
  o.type_attributes = column.attributes();
  o.nullable = column.is_nullable();
  o.storage = column.storage();
  o.is_key = is_key;
  return o;
}

CFileWriter::CFileWriter(CFileWriterOptions options, std::unique_ptr<WritableBlock> block)
    : options_(std::move(options)), block_(std::move(block)), block_id_(block_->id()) {}

CFileWriter::~CFileWriter() = default;

absl::Status CFileWriter::Fail(absl::Status s) {
  state_ = State::kFailed;
  return PrependToStatus(s, StrCat("cfile ", block_id_.ToString()));
}

absl::Status CFileWriter::Start() {
  if (state_ != State::kNew) return absl::FailedPreconditionError("CFileWriter: Start() twice");
  const int t = static_cast<int>(options_.type);
  if (t == 0 || !IsValidDataType(t)) {
    return Fail(absl::InvalidArgumentError(StrCat("invalid data type ", t)));
  }
  BASALT_RETURN_IF_ERROR(ValidateTypeAttributes(options_.type, options_.type_attributes));
  if (options_.is_key && options_.nullable) {
    return Fail(absl::InvalidArgumentError("a key file cannot be nullable"));
  }
  type_info_ = &GetTypeInfo(options_.type);
  auto enc = ResolveEncoding(options_.type, options_.storage.encoding);
  if (!enc.ok()) return Fail(enc.status());
  encoding_ = *enc;
  compression_ = ResolveCompression(options_.type, options_.storage.compression);
  auto codec = GetCompressionCodec(compression_);
  if (!codec.ok()) return Fail(codec.status());
  codec_ = *codec;
  const int64_t page_size = options_.storage.block_size_bytes > 0
                                ? options_.storage.block_size_bytes
                                : FLAGS_cfile_default_block_size;
  if (page_size < static_cast<int64_t>(cfile_internal::kMinPageSizeBytes) ||
      page_size > static_cast<int64_t>(cfile_internal::kMaxPageSizeBytes)) {
    return Fail(absl::InvalidArgumentError(StrCat("page size ", page_size, " out of range")));
  }
  PageBuilderOptions bo;
  bo.page_size_bytes = static_cast<size_t>(page_size);
  if (encoding_ == EncodingType::kDict) {
    dictionary_ = std::make_unique<DictionaryBuilder>();
    bo.dictionary = dictionary_.get();
  }
  auto builder = CreatePageBuilder(options_.type, encoding_, bo);
  if (!builder.ok()) return Fail(builder.status());
  builder_ = std::move(*builder);
  max_rows_per_page_ = options_.is_key ? cfile_internal::kMaxRowsPerKeyPage : kMaxRowsPerPage;
  page_.nulls.assign(BitmapSize(kMaxRowsPerPage), 0);
  state_ = State::kWriting;
  return absl::OkStatus();
}

absl::Status CFileWriter::AppendValues(const void* cells, const uint8_t* null_bitmap, size_t n) {
  if (state_ != State::kWriting) {
    return absl::FailedPreconditionError("CFileWriter: AppendValues outside Start()..Finish()");
  }
  const auto* base = static_cast<const uint8_t*>(cells);
  const size_t cell_size = type_info_->size();
  size_t i = 0;
  while (i < n) {
    if (null_bitmap != nullptr && BitmapTest(null_bitmap, i)) {
      if (!options_.nullable) {
        return Fail(absl::InvalidArgumentError(StrCat("NULL in NOT NULL column at row ", i)));
      }
      BitmapSet(page_.nulls.data(), page_.num_rows);
      ++page_.num_rows;
      ++page_.null_count;
      ++i;
    } else {
      // A run of non-NULL cells, bounded by the page's row limit.
      size_t j = i + 1;
      const size_t limit = std::min(n, i + (max_rows_per_page_ - page_.num_rows));
      while (j < limit && (null_bitmap == nullptr || !BitmapTest(null_bitmap, j))) ++j;
      BASALT_ASSIGN_OR_RETURN(size_t taken, AddValues(base + i * cell_size, j - i));
      i += taken;
    }
    if (builder_->IsFull() || page_.num_rows == max_rows_per_page_) {
      BASALT_RETURN_IF_ERROR(FlushPage());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> CFileWriter::AddValues(const uint8_t* cells, size_t n) {
  const size_t taken = builder_->Add(cells, n);
  BASALT_RETURN_IF_ERROR(TrackValues(cells, taken));
  // Non-NULL rows: their null bits are already clear (FlushPage clears the bitmap).
  page_.num_rows += static_cast<uint32_t>(taken);
  return taken;
}

absl::Status CFileWriter::TrackValues(const uint8_t* cells, size_t n) {
  if (n == 0) return absl::OkStatus();
  const size_t cell_size = type_info_->size();
  if (!page_.has_value) {
    page_.min.Assign(options_.type, cells);
    page_.max.Assign(options_.type, cells);
    page_.has_value = true;
  }
  // Key files have no NULLs: any row before is a value.
  if (options_.is_key && num_rows_ + page_.num_rows > 0 &&
      type_info_->Compare(cells, last_key_.cell()) < 0) {
    return Fail(absl::InvalidArgumentError("key file values are not sorted"));
  }
  const ChunkStats st = ScanChunk(*type_info_, cells, n, options_.is_key);
  if (options_.is_key && !st.sorted) {
    return Fail(absl::InvalidArgumentError("key file values are not sorted"));
  }
  const uint8_t* lo = cells + st.min * cell_size;
  const uint8_t* hi = cells + st.max * cell_size;
  if (type_info_->Compare(lo, page_.min.cell()) < 0) page_.min.Assign(options_.type, lo);
  if (type_info_->Compare(hi, page_.max.cell()) > 0) page_.max.Assign(options_.type, hi);
  if (options_.is_key) last_key_.Assign(options_.type, cells + (n - 1) * cell_size);
  return absl::OkStatus();
}

absl::Status CFileWriter::AppendCompressed(std::string_view raw, std::string* out) {
  if (compression_ == CompressionType::kNone) {
    out->append(raw);
    return absl::OkStatus();
  }
  absl::Status s = codec_->Compress(raw, &compressed_);
  if (!s.ok()) return Fail(s);
  out->append(compressed_);
  return absl::OkStatus();
}

absl::Status CFileWriter::WriteRaw(std::string_view bytes) {
  absl::Status s = block_->Append(bytes);
  if (!s.ok()) return Fail(s);
  offset_ += bytes.size();
  return absl::OkStatus();
}

absl::Status CFileWriter::FlushPage() {
  if (page_.num_rows == 0) return absl::OkStatus();
  const uint32_t num_values = static_cast<uint32_t>(builder_->count());
  DCHECK_EQ(num_values + page_.null_count, page_.num_rows);
  PageIndexEntry e;
  e.num_rows = page_.num_rows;
  e.null_count = page_.null_count;
  if (page_.has_value) {
    ZoneValue(*type_info_, page_.min, false, &e.has_min, &e.min);
    ZoneValue(*type_info_, page_.max, true, &e.has_max, &e.max);
    const auto& ti = *type_info_;
    if (!has_value_ || ti.Compare(page_.min.cell(), file_min_.cell()) < 0) file_min_ = page_.min;
    if (!has_value_ || ti.Compare(page_.max.cell(), file_max_.cell()) > 0) file_max_ = page_.max;
    has_value_ = true;
  }
  if (options_.is_key) first_values_.push_back(page_.min.bytes());
  // Payload: null bitmap (nullable files) then the encoded body, compressed together.
  scratch_.clear();
  if (options_.nullable) {
    scratch_.append(reinterpret_cast<const char*>(page_.nulls.data()), BitmapSize(e.num_rows));
  }
  std::string_view body = builder_->Finish();
  scratch_.append(body.data(), body.size());
  std::string page;
  PutVarint32(&page, e.num_rows);
  PutVarint32(&page, num_values);
  PutVarint32(&page, static_cast<uint32_t>(scratch_.size()));
  BASALT_RETURN_IF_ERROR(AppendCompressed(scratch_, &page));
  cfile_internal::AppendCrc(&page);
  e.size = static_cast<uint32_t>(page.size());
  e.offset = offset_;
  e.first_ordinal = num_rows_;
  BASALT_RETURN_IF_ERROR(WriteRaw(page));
  num_rows_ += e.num_rows;
  null_count_ += e.null_count;
  index_.push_back(std::move(e));
  builder_->Reset();
  std::memset(page_.nulls.data(), 0, BitmapSize(page_.num_rows));
  page_.num_rows = 0;
  page_.null_count = 0;
  page_.has_value = false;
  return absl::OkStatus();
}

absl::Status CFileWriter::WriteFooter() {
  pb::CFileFooterPB footer;
  footer.set_data_type(static_cast<pb::DataType>(options_.type));
  footer.mutable_type_attributes()->set_precision(options_.type_attributes.precision);
  footer.mutable_type_attributes()->set_scale(options_.type_attributes.scale);
  footer.mutable_type_attributes()->set_length(options_.type_attributes.length);
  footer.set_encoding(static_cast<pb::EncodingType>(encoding_));
  footer.set_compression(static_cast<pb::CompressionType>(compression_));
  footer.set_nullable(options_.nullable);
  footer.set_num_rows(num_rows_);
  footer.set_null_count(null_count_);
  footer.set_num_pages(static_cast<uint32_t>(index_.size()));
  footer.set_data_size(offset_);
  footer.set_is_sorted(options_.is_key);
  auto write_block = [&](const std::string& bytes, pb::CFileBlockPointerPB* ptr) {
    ptr->set_offset(offset_);
    ptr->set_size(bytes.size());
    return WriteRaw(bytes);
  };
  if (dictionary_ != nullptr) {
    // A page is written plain only when the dictionary was full as it started (DictPageBuilder),
    // and a full dictionary stays full.
    footer.set_dict_complete(!dictionary_->IsFull());
    // varint32 uncompressed size | compressed dictionary page | CRC, like a page payload.
    const std::string dict = dictionary_->FinishDictionary();
    std::string framed;
    PutVarint32(&framed, static_cast<uint32_t>(dict.size()));
    BASALT_RETURN_IF_ERROR(AppendCompressed(dict, &framed));
    cfile_internal::AppendCrc(&framed);
    BASALT_RETURN_IF_ERROR(write_block(framed, footer.mutable_dictionary()));
  }
  BASALT_RETURN_IF_ERROR(write_block(cfile_internal::EncodePositionalIndex(index_),
                                     footer.mutable_positional_index()));
  if (options_.is_key) {
    BASALT_RETURN_IF_ERROR(
        write_block(cfile_internal::EncodeValueIndex(first_values_), footer.mutable_value_index()));
  }
  if (has_value_) {
    bool has = false;
    ZoneValue(*type_info_, file_min_, false, &has, footer.mutable_min_value());
    footer.set_has_min(has);
    ZoneValue(*type_info_, file_max_, true, &has, footer.mutable_max_value());
    footer.set_has_max(has);
  }
  std::string tail;
  if (!footer.SerializeToString(&tail)) return Fail(absl::InternalError("footer serialization"));
  const uint32_t footer_size = static_cast<uint32_t>(tail.size());
  const uint32_t footer_crc = crc32c::Mask(crc32c::Value(tail));
  PutFixed32(&tail, footer_size);
  PutFixed32(&tail, footer_crc);
  PutFixed32(&tail, cfile_internal::kFormatVersion);
  tail.append(cfile_internal::kMagic, sizeof(cfile_internal::kMagic));
  return WriteRaw(tail);
}

absl::StatusOr<std::unique_ptr<WritableBlock>> CFileWriter::FinishWithoutFinalize() {
  if (state_ != State::kWriting) {
    return absl::FailedPreconditionError("CFileWriter: Finish without a successful Start()");
  }
  BASALT_RETURN_IF_ERROR(FlushPage());
  BASALT_RETURN_IF_ERROR(WriteFooter());
  state_ = State::kDone;
  return std::move(block_);
}

absl::Status CFileWriter::Finish() {
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<WritableBlock> block, FinishWithoutFinalize());
  BASALT_RETURN_IF_ERROR_PREPEND(block->Finalize(), StrCat("cfile ", block_id_.ToString()));
  return absl::OkStatus();
}

}  // namespace basalt
