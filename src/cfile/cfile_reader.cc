#include "cfile/cfile_reader.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "cfile/compression.h"
#include "cfile/dict_encoding.h"
#include "cfile/encoding.h"
#include "common/bitmap.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/key_encoder.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "proto/cfile.pb.h"

DEFINE_bool(cfile_verify_checksums, true,
            "Whether column file readers verify the CRC32C of every page they read.");

namespace basalt {

using cfile_internal::CellValue;
using cfile_internal::kTrailerSize;
using cfile_internal::PageIndexEntry;

namespace {

bool ValidPointer(const pb::CFileBlockPointerPB& p, uint64_t begin, uint64_t end) {
  return p.size() > 0 && p.offset() >= begin && p.offset() <= end && p.size() <= end - p.offset();
}

}  // namespace

CFileReader::CFileReader(std::unique_ptr<ReadableBlock> block, CFileReaderOptions options)
    : block_(std::move(block)),
      options_(options),
      name_(StrCat("cfile ", block_->id().ToString())) {}

CFileReader::~CFileReader() = default;

absl::StatusOr<std::unique_ptr<CFileReader>> CFileReader::Open(std::unique_ptr<ReadableBlock> block,
                                                               CFileReaderOptions options) {
  std::unique_ptr<CFileReader> reader(new CFileReader(std::move(block), options));
  BASALT_RETURN_IF_ERROR(reader->Init());
  return reader;
}

absl::Status CFileReader::Corruption(std::string_view what) const {
  return absl::DataLossError(StrCat(name_, ": ", what));
}

absl::Status CFileReader::ReadFooter(std::string* footer) {
  const uint64_t size = block_->size();
  if (size < kTrailerSize) {
    return Corruption(StrCat("file too short for a column file (", size, " bytes)"));
  }
  std::string trailer;
  BASALT_RETURN_IF_ERROR(block_->ReadAt(size - kTrailerSize, kTrailerSize, &trailer));
  if (std::memcmp(trailer.data() + 12, cfile_internal::kMagic, sizeof(cfile_internal::kMagic))) {
    return Corruption("bad magic (not a column file, or a corrupt trailer)");
  }
  const uint32_t version = DecodeFixed32(trailer.data() + 8);
  if (version != cfile_internal::kFormatVersion) {
    return Corruption(StrCat("unsupported format version ", version));
  }
  const uint32_t footer_size = DecodeFixed32(trailer.data());
  if (footer_size > cfile_internal::kMaxFooterSize || footer_size > size - kTrailerSize) {
    return Corruption(StrCat("bad footer size ", footer_size));
  }
  BASALT_RETURN_IF_ERROR(block_->ReadAt(size - kTrailerSize - footer_size, footer_size, footer));
  if (crc32c::Unmask(DecodeFixed32(trailer.data() + 4)) != crc32c::Value(*footer)) {
    return Corruption("footer checksum mismatch");
  }
  return absl::OkStatus();
}

absl::Status CFileReader::ParseFooter(const std::string& bytes, pb::CFileFooterPB* footer) {
  pb::CFileFooterPB& f = *footer;
  if (!f.ParseFromString(bytes)) return Corruption("unparseable footer");
  const int type = f.data_type();
  const int enc = f.encoding();
  const int codec = f.compression();
  if (type == 0 || !IsValidDataType(type)) return Corruption(StrCat("bad data type ", type));
  type_ = static_cast<DataType>(type);
  type_attributes_ = {f.type_attributes().precision(), f.type_attributes().scale(),
                      f.type_attributes().length()};
  if (!ValidateTypeAttributes(type_, type_attributes_).ok()) {
    return Corruption("bad type attributes");
  }
  if (enc <= 0 || enc > static_cast<int>(EncodingType::kPrefix) ||
      !IsEncodingAllowed(type_, static_cast<EncodingType>(enc))) {
    return Corruption(StrCat("bad encoding ", enc, " for ", DataTypeName(type_)));
  }
  encoding_ = static_cast<EncodingType>(enc);
  auto c = codec <= 0 ? absl::StatusOr<const CompressionCodec*>(absl::InvalidArgumentError(""))
                      : GetCompressionCodec(static_cast<CompressionType>(codec));
  if (!c.ok()) return Corruption(StrCat("bad compression codec ", codec));
  codec_ = *c;
  compression_ = static_cast<CompressionType>(codec);
  nullable_ = f.nullable();
  is_sorted_ = f.is_sorted();
  dict_complete_ = encoding_ == EncodingType::kDict && f.dict_complete();
  num_rows_ = f.num_rows();
  null_count_ = f.null_count();
  const uint64_t footer_offset = block_->size() - kTrailerSize - bytes.size();
  const uint64_t data_size = f.data_size();
  if (null_count_ > num_rows_ || (!nullable_ && null_count_ > 0) || (is_sorted_ && nullable_) ||
      data_size > footer_offset || f.num_pages() > num_rows_ ||
      f.num_pages() > data_size / cfile_internal::kMinPageBytes ||
      !ValidPointer(f.positional_index(), data_size, footer_offset) ||
      (is_sorted_ != ValidPointer(f.value_index(), data_size, footer_offset)) ||
      (encoding_ == EncodingType::kDict) !=
          ValidPointer(f.dictionary(), data_size, footer_offset) ||
      (f.has_min() && !cfile_internal::IsValidCellBytes(type_, f.min_value())) ||
      (f.has_max() && !cfile_internal::IsValidCellBytes(type_, f.max_value()))) {
    return Corruption("inconsistent footer");
  }
  if (f.has_min()) min_.emplace(type_, f.min_value());
  if (f.has_max()) max_.emplace(type_, f.max_value());
  return absl::OkStatus();
}

absl::Status CFileReader::ReadIndexes(const pb::CFileFooterPB& f) {
  std::string block;
  BASALT_RETURN_IF_ERROR(ReadMetaBlock(f.positional_index().offset(), f.positional_index().size(),
                                       "positional index", &block));
  BASALT_ASSIGN_OR_RETURN(
      pages_, cfile_internal::DecodePositionalIndex(block, type_, nullable_, num_rows_,
                                                    f.data_size(), f.num_pages(), name_));
  if (is_sorted_) {
    BASALT_RETURN_IF_ERROR(
        ReadMetaBlock(f.value_index().offset(), f.value_index().size(), "value index", &block));
    BASALT_ASSIGN_OR_RETURN(first_values_,
                            cfile_internal::DecodeValueIndex(block, type_, f.num_pages(), name_));
  }
  if (encoding_ == EncodingType::kDict) {
    BASALT_RETURN_IF_ERROR(ReadDictionary(f.dictionary().offset(), f.dictionary().size()));
  }
  return absl::OkStatus();
}

absl::Status CFileReader::Init() {
  std::string footer;
  BASALT_RETURN_IF_ERROR(ReadFooter(&footer));
  pb::CFileFooterPB f;
  BASALT_RETURN_IF_ERROR(ParseFooter(footer, &f));
  return ReadIndexes(f);
}

absl::Status CFileReader::ReadMetaBlock(uint64_t offset, uint64_t size, std::string_view what,
                                        std::string* out) const {
  BASALT_RETURN_IF_ERROR_PREPEND(block_->ReadAt(offset, size, out),
                                 StrCat(name_, ": reading ", what));
  return absl::OkStatus();
}

absl::Status CFileReader::ReadDictionary(uint64_t offset, uint64_t size) {
  std::string block;
  BASALT_RETURN_IF_ERROR(ReadMetaBlock(offset, size, "dictionary", &block));
  std::string_view in = block;
  const std::string what = StrCat(name_, ": dictionary");
  BASALT_RETURN_IF_ERROR(cfile_internal::VerifyAndStripCrc(&in, what));
  uint32_t raw_size = 0;
  if (!GetVarint32(&in, &raw_size) || raw_size > cfile_internal::kMaxUncompressedPageBytes) {
    return Corruption("dictionary: bad size");
  }
  std::string raw;
  if (compression_ == CompressionType::kNone) {
    if (in.size() != raw_size) return Corruption("dictionary: bad size");
    raw.assign(in);
  } else {
    raw.resize(raw_size);
    BASALT_RETURN_IF_ERROR_PREPEND(codec_->Uncompress(in, raw.data(), raw_size), what);
  }
  auto dict = Dictionary::Parse(raw);
  if (!dict.ok()) return PrependToStatus(dict.status(), what);
  dictionary_ = std::move(*dict);
  return absl::OkStatus();
}

bool CFileReader::MayMatch(const ColumnPredicate& pred) const {
  if (!pred.MayMatchRange(min_ ? min_->cell() : nullptr, max_ ? max_->cell() : nullptr,
                          null_count_ > 0, null_count_ < num_rows_)) {
    return false;
  }
  const PredicateKind kind = pred.kind();
  if (dict_complete_ && kind != PredicateKind::kIsNull && kind != PredicateKind::kIsNotNull) {
    // Every value of the file is a dictionary entry: a value predicate none matches matches no
    // row. (A time-series query on one host skips the tablets without that host this way: the
    // host's name lies within the zone map of every tablet.)
    const std::vector<uint8_t> match = dictionary_->Evaluate(pred);
    return BitmapCountSet(match.data(), dictionary_->size()) > 0;
  }
  return true;
}

std::unique_ptr<CFileIterator> CFileReader::NewIterator() const {
  return std::unique_ptr<CFileIterator>(new CFileIterator(this));
}

absl::StatusOr<std::unique_ptr<CFileReader::Page>> CFileReader::LoadPage(size_t index) const {
  const PageIndexEntry& e = pages_[index];
  const std::string what = StrCat(name_, ": page ", index, " at offset ", e.offset);
  std::string bytes;
  BASALT_RETURN_IF_ERROR_PREPEND(block_->ReadAt(e.offset, e.size, &bytes), what);
  std::string_view in = bytes;
  if (FLAGS_cfile_verify_checksums) {
    BASALT_RETURN_IF_ERROR(cfile_internal::VerifyAndStripCrc(&in, what));
  } else {
    in.remove_suffix(4);  // e.size >= kMinPageBytes, checked at Open.
  }
  auto page = std::make_unique<Page>();
  uint32_t raw_size = 0;
  const size_t bitmap_size = nullable_ ? BitmapSize(e.num_rows) : 0;
  if (!GetVarint32(&in, &page->num_rows) || !GetVarint32(&in, &page->num_values) ||
      !GetVarint32(&in, &raw_size) || page->num_rows != e.num_rows ||
      page->num_values != e.num_rows - e.null_count || raw_size < bitmap_size ||
      raw_size > cfile_internal::kMaxUncompressedPageBytes) {
    return absl::DataLossError(StrCat(what, ": corrupt page header"));
  }
  if (compression_ == CompressionType::kNone) {
    if (in.size() != raw_size) return absl::DataLossError(StrCat(what, ": bad payload size"));
    page->payload.assign(in);
  } else {
    page->payload.resize(raw_size);
    BASALT_RETURN_IF_ERROR_PREPEND(codec_->Uncompress(in, page->payload.data(), raw_size), what);
  }
  if (nullable_ && cfile_internal::CountBits(reinterpret_cast<const uint8_t*>(page->payload.data()),
                                             0, e.num_rows) != e.null_count) {
    return absl::DataLossError(StrCat(what, ": null bitmap disagrees with the null count"));
  }
  return page;
}

absl::Status CFileReader::VerifyChecksums() const {
  std::string bytes;
  for (size_t i = 0; i < pages_.size(); ++i) {
    const PageIndexEntry& e = pages_[i];
    const std::string what = StrCat(name_, ": page ", i, " at offset ", e.offset);
    BASALT_RETURN_IF_ERROR_PREPEND(block_->ReadAt(e.offset, e.size, &bytes), what);
    std::string_view in = bytes;
    BASALT_RETURN_IF_ERROR(cfile_internal::VerifyAndStripCrc(&in, what));
  }
  return absl::OkStatus();
}

absl::Status CFileReader::ReadPage(size_t index, PageRef* ref, bool* from_disk) const {
  const BlockCache::Key key{block_->id().value(), pages_[index].offset};
  *ref = PageRef();
  *from_disk = false;
  if (options_.block_cache != nullptr) {
    ref->handle = options_.block_cache->Lookup(key);
    if (ref->handle) {
      ref->page = &ref->handle.value_as<Page>();
      return absl::OkStatus();
    }
  }
  *from_disk = true;
  BASALT_ASSIGN_OR_RETURN(std::unique_ptr<Page> page, LoadPage(index));
  if (options_.block_cache != nullptr) {
    // Once per cached page, so that the decoders opened on it (one per point lookup) do not walk
    // it again. A page read for one iterator alone is walked by that iterator's decoder.
    PageDecoderOptions opts;
    opts.dictionary = dictionary_.get();
    BASALT_ASSIGN_OR_RETURN(std::unique_ptr<PageDecoder> decoder,
                            CreatePageDecoder(type_, encoding_, opts));
    const size_t bitmap_size = nullable_ ? BitmapSize(pages_[index].num_rows) : 0;
    page->layout = decoder->ComputeLayout(std::string_view(page->payload).substr(bitmap_size));
    const size_t charge = page->payload.size() + sizeof(Page) +
                          (page->layout != nullptr ? page->layout->MemoryUsage() : 0);
    ref->handle = options_.block_cache->Insert(key, std::move(page), charge);
    ref->page = &ref->handle.value_as<Page>();
  } else {
    ref->owned = std::move(page);
    ref->page = ref->owned.get();
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// CFileIterator

CFileIterator::CFileIterator(const CFileReader* reader) : reader_(reader) {}

CFileIterator::~CFileIterator() = default;

absl::Status CFileIterator::PageCorruption(std::string_view what) const {
  return absl::DataLossError(StrCat(reader_->name_, ": page ", page_index_, ": ", what));
}

size_t CFileIterator::PageOf(uint64_t ordinal) const {
  const auto& pages = reader_->pages_;
  if (page_index_ != kNoPage && ordinal >= pages[page_index_].first_ordinal &&
      ordinal - pages[page_index_].first_ordinal < pages[page_index_].num_rows) {
    return page_index_;
  }
  auto it =
      std::upper_bound(pages.begin(), pages.end(), ordinal,
                       [](uint64_t o, const PageIndexEntry& e) { return o < e.first_ordinal; });
  DCHECK(it != pages.begin());
  return static_cast<size_t>(it - pages.begin()) - 1;
}

const uint8_t* CFileIterator::page_nulls() const {
  if (!reader_->nullable_) return nullptr;
  return reinterpret_cast<const uint8_t*>(page_.page->payload.data());
}

void CFileIterator::ReleaseRetainedPages() { retained_.clear(); }

absl::Status CFileIterator::LoadPage(size_t index) {
  if (index == page_index_) return absl::OkStatus();
  if (decoder_ == nullptr) {
    PageDecoderOptions opts;
    opts.dictionary = reader_->dictionary_.get();
    BASALT_ASSIGN_OR_RETURN(decoder_, CreatePageDecoder(reader_->type_, reader_->encoding_, opts));
  }
  if (page_.page != nullptr) retained_.push_back(std::move(page_));
  page_index_ = CFileIterator::kNoPage;
  bool from_disk = false;
  BASALT_RETURN_IF_ERROR(reader_->ReadPage(index, &page_, &from_disk));
  page_index_ = index;
  decoder_ordinal_ = reader_->pages_[index].first_ordinal;
  ++stats_.pages_read;
  stats_.pages_from_disk += from_disk;
  ++stats_.pages_decoded;
  const PageIndexEntry& e = reader_->pages_[index];
  std::string_view body = page_.page->payload;
  if (reader_->nullable_) body.remove_prefix(BitmapSize(e.num_rows));
  stats_.pages_with_layout += page_.page->layout != nullptr;
  absl::Status s = decoder_->InitWithLayout(body, page_.page->layout.get());
  if (!s.ok() || decoder_->count() != page_.page->num_values) {
    page_index_ = kNoPage;
    return s.ok() ? PageCorruption("value count disagrees with the page header")
                  : PrependToStatus(s, StrCat(reader_->name_, ": page ", index));
  }
  if (reader_->dict_complete_ && decoder_->count() > 0 && !decoder_->CanEvaluateOnEncoded()) {
    // MayMatch() trusted the footer to prune by the dictionary: a plain page would have been
    // pruned wrongly.
    page_index_ = kNoPage;
    return PageCorruption("plain values in a file whose footer says every page holds codes");
  }
  return absl::OkStatus();
}

absl::Status CFileIterator::SeekToOrdinal(uint64_t ordinal) {
  ReleaseRetainedPages();
  if (ordinal > reader_->num_rows_) {
    return absl::InvalidArgumentError(StrCat(reader_->name_, ": seek to ordinal ", ordinal,
                                             " past the end (", reader_->num_rows_, " rows)"));
  }
  ordinal_ = ordinal;
  return absl::OkStatus();
}

absl::Status CFileIterator::SeekAtOrAfter(const void* cell, bool* exact) {
  ReleaseRetainedPages();
  *exact = false;
  if (!reader_->is_sorted_) {
    return absl::FailedPreconditionError(StrCat(reader_->name_, ": no value index"));
  }
  const TypeInfo& ti = GetTypeInfo(reader_->type_);
  const auto& firsts = reader_->first_values_;
  // The first page whose first value is >= *cell; the answer lies in the page before or later.
  auto it = std::lower_bound(
      firsts.begin(), firsts.end(), cell,
      [&](const CellValue& v, const void* c) { return ti.Compare(v.cell(), c) < 0; });
  size_t index = it == firsts.begin() ? 0 : static_cast<size_t>(it - firsts.begin()) - 1;
  for (; index < reader_->pages_.size(); ++index) {
    BASALT_RETURN_IF_ERROR(LoadPage(index));
    absl::Status s = decoder_->SeekAtOrAfterValue(cell, exact);
    if (s.ok()) {
      ordinal_ = reader_->pages_[index].first_ordinal + decoder_->position();
      decoder_ordinal_ = ordinal_;
      return absl::OkStatus();
    }
    if (!absl::IsNotFound(s)) return PrependToStatus(s, StrCat(reader_->name_, ": page ", index));
  }
  ordinal_ = reader_->num_rows_;
  return absl::NotFoundError(StrCat(reader_->name_, ": every value is smaller than the key"));
}

absl::Status CFileIterator::SeekAtOrAfterEncoded(std::string_view encoded, bool* exact) {
  std::string_view in = encoded;
  auto value = DecodeKeyCell(reader_->type_, /*is_last=*/true, &in);
  if (!value.ok() || !in.empty()) {
    return absl::InvalidArgumentError(
        StrCat(reader_->name_, ": seek key is not one encoded ", DataTypeName(reader_->type_)));
  }
  return SeekAtOrAfter(value->cell(), exact);
}

absl::Status CFileIterator::DecodeRows(size_t k, ColumnBlock* out, size_t dst) {
  const PageIndexEntry& e = reader_->pages_[page_index_];
  const size_t row = ordinal_ - e.first_ordinal;
  const uint8_t* nulls = page_nulls();
  size_t nonnull = k;
  size_t value_pos = row;  // No NULLs.
  if (nulls != nullptr) {
    if (out->null_bitmap == nullptr) {
      return absl::InvalidArgumentError(StrCat(reader_->name_,
                                               ": nullable column scanned into a "
                                               "block without a null bitmap"));
    }
    cfile_internal::CopyBits(out->null_bitmap, dst, nulls, row, k);
    nonnull = k - cfile_internal::CountBits(out->null_bitmap, dst, k);
    value_pos = ValuePosition(row);
  } else if (out->null_bitmap != nullptr) {
    cfile_internal::ClearBits(out->null_bitmap, dst, k);
  }
  if (decoder_->position() != value_pos) decoder_->SeekToPositionInPage(value_pos);
  auto got = decoder_->DecodeNext(nonnull, out, dst);
  if (!got.ok())
    return PrependToStatus(got.status(), StrCat(reader_->name_, ": page ", page_index_));
  if (*got != nonnull) return PageCorruption("fewer values than rows");
  if (nulls != nullptr) ExpandNonNullCells(out, dst, k, nonnull);
  ordinal_ += k;
  decoder_ordinal_ = ordinal_;
  stats_.rows_scanned += k;
  return absl::OkStatus();
}

const void* CFileIterator::ZoneCell(const std::string& bytes, std::string_view* view) const {
  if (!GetTypeInfo(reader_->type_).is_variable_length()) return bytes.data();
  *view = bytes;
  return view;
}

size_t CFileIterator::ValuePosition(size_t row) const {
  if (decoder_ordinal_ == ordinal_) return decoder_->position();
  const uint8_t* nulls = page_nulls();
  return nulls == nullptr ? row : row - cfile_internal::CountBits(nulls, 0, row);
}

absl::Status CFileIterator::Scan(size_t n, ColumnBlock* out, size_t* rows_read) {
  ReleaseRetainedPages();
  *rows_read = 0;
  if (out->type != reader_->type_ || out->capacity < n) {
    return absl::InvalidArgumentError(StrCat(reader_->name_, ": bad output block"));
  }
  while (*rows_read < n && HasNext()) {
    const size_t index = PageOf(ordinal_);
    const PageIndexEntry& e = reader_->pages_[index];
    const size_t k = std::min<uint64_t>(n - *rows_read, e.first_ordinal + e.num_rows - ordinal_);
    BASALT_RETURN_IF_ERROR(LoadPage(index));
    BASALT_RETURN_IF_ERROR(DecodeRows(k, out, *rows_read));
    *rows_read += k;
  }
  return absl::OkStatus();
}

void CFileIterator::EvaluateDecoded(const ColumnPredicate& pred, const ColumnBlock& block,
                                    size_t off, size_t k, uint8_t* selection, size_t dst) {
  sel_scratch_.assign(BitmapSize(k) + 8, 0xff);
  const uint8_t* nulls = nullptr;
  if (block.null_bitmap != nullptr) {
    if (off % 8 == 0) {
      nulls = block.null_bitmap + off / 8;
    } else {
      null_scratch_.assign(BitmapSize(k) + 8, 0);
      cfile_internal::CopyBits(null_scratch_.data(), 0, block.null_bitmap, off, k);
      nulls = null_scratch_.data();
    }
  }
  pred.EvaluateVector(block.cell(off), nulls, k, sel_scratch_.data());
  cfile_internal::AndBits(selection, dst, sel_scratch_.data(), 0, k);
}

void CFileIterator::EvaluateNullness(bool want_null, size_t k, uint8_t* selection, size_t dst) {
  const size_t row = ordinal_ - reader_->pages_[page_index_].first_ordinal;
  null_scratch_.assign(BitmapSize(k) + 8, 0);
  cfile_internal::CopyBits(null_scratch_.data(), 0, page_nulls(), row, k);
  if (!want_null) {
    for (uint8_t& b : null_scratch_) b = static_cast<uint8_t>(~b);
  }
  cfile_internal::AndBits(selection, dst, null_scratch_.data(), 0, k);
  ordinal_ += k;
  stats_.rows_scanned += k;
}

absl::Status CFileIterator::EvaluateOnCodes(const ColumnPredicate& pred, size_t k,
                                            uint8_t* selection, size_t dst) {
  const size_t row = ordinal_ - reader_->pages_[page_index_].first_ordinal;
  const uint8_t* nulls = page_nulls();
  const size_t nonnull = nulls == nullptr ? k : k - cfile_internal::CountBits(nulls, row, k);
  if (prepared_ == nullptr || !prepared_for_.has_value() || !(*prepared_for_ == pred)) {
    BASALT_ASSIGN_OR_RETURN(prepared_, decoder_->PreparePredicate(pred));
    prepared_for_ = pred;
  }
  const size_t value_pos = ValuePosition(row);
  if (decoder_->position() != value_pos) decoder_->SeekToPositionInPage(value_pos);
  sel_scratch_.assign(BitmapSize(nonnull) + 8, 0xff);
  auto got = decoder_->EvaluatePredicate(*prepared_, nonnull, sel_scratch_.data(), 0);
  if (!got.ok())
    return PrependToStatus(got.status(), StrCat(reader_->name_, ": page ", page_index_));
  if (*got != nonnull) return PageCorruption("fewer values than rows");
  if (nulls == nullptr) {
    cfile_internal::AndBits(selection, dst, sel_scratch_.data(), 0, k);
  } else {
    // Spread the per-value bits over the rows; NULL rows never match a value predicate.
    size_t v = 0;
    for (size_t j = 0; j < k; ++j) {
      if (BitmapTest(nulls, row + j) || !BitmapTest(sel_scratch_.data(), v++)) {
        BitmapClear(selection, dst + j);
      }
    }
  }
  ordinal_ += k;
  decoder_ordinal_ = ordinal_;
  stats_.rows_scanned += k;
  ++stats_.ranges_evaluated_encoded;
  return absl::OkStatus();
}

absl::Status CFileIterator::EvaluateRows(const ColumnPredicate& pred, size_t k, uint8_t* selection,
                                         ColumnBlock* out, size_t dst) {
  if (out != nullptr) {
    BASALT_RETURN_IF_ERROR(DecodeRows(k, out, dst));
    EvaluateDecoded(pred, *out, dst, k, selection, dst);
    return absl::OkStatus();
  }
  const PredicateKind kind = pred.kind();
  if (kind == PredicateKind::kIsNull || kind == PredicateKind::kIsNotNull) {
    if (page_nulls() == nullptr) {
      if (kind == PredicateKind::kIsNull) cfile_internal::ClearBits(selection, dst, k);
      ordinal_ += k;
      stats_.rows_scanned += k;
    } else {
      EvaluateNullness(kind == PredicateKind::kIsNull, k, selection, dst);
    }
    return absl::OkStatus();
  }
  if (decoder_->CanEvaluateOnEncoded()) return EvaluateOnCodes(pred, k, selection, dst);
  if (scratch_ == nullptr || scratch_->block_ref().capacity < k) {
    scratch_ = std::make_unique<ColumnBlockBuffer>(reader_->type_, std::max<size_t>(k, 1024),
                                                   reader_->nullable_);
  }
  scratch_->arena()->Reset();
  BASALT_RETURN_IF_ERROR(DecodeRows(k, scratch_->block(), 0));
  EvaluateDecoded(pred, scratch_->block_ref(), 0, k, selection, dst);
  return absl::OkStatus();
}

absl::Status CFileIterator::ScanWithPredicate(const ColumnPredicate& pred, size_t n,
                                              uint8_t* selection, ColumnBlock* out,
                                              size_t* rows_read) {
  ReleaseRetainedPages();
  *rows_read = 0;
  if (pred.column().type() != reader_->type_ ||
      (out != nullptr && (out->type != reader_->type_ || out->capacity < n))) {
    return absl::InvalidArgumentError(
        StrCat(reader_->name_, ": predicate or output block of the wrong type"));
  }
  while (*rows_read < n && HasNext()) {
    const size_t index = PageOf(ordinal_);
    const PageIndexEntry& e = reader_->pages_[index];
    const size_t k = std::min<uint64_t>(n - *rows_read, e.first_ordinal + e.num_rows - ordinal_);
    std::string_view min_view, max_view;
    const void* min = e.has_min ? ZoneCell(e.min, &min_view) : nullptr;
    const void* max = e.has_max ? ZoneCell(e.max, &max_view) : nullptr;
    if (!pred.MayMatchRange(min, max, e.null_count > 0, e.null_count < e.num_rows)) {
      cfile_internal::ClearBits(selection, *rows_read, k);
      ordinal_ += k;
      ++stats_.pages_skipped;
    } else {
      BASALT_RETURN_IF_ERROR(LoadPage(index));
      BASALT_RETURN_IF_ERROR(EvaluateRows(pred, k, selection, out, *rows_read));
    }
    *rows_read += k;
  }
  return absl::OkStatus();
}

}  // namespace basalt
