#include "cfile/dict_encoding.h"

#include <algorithm>
#include <cstring>

#include "cfile/bitpacked_encoding.h"
#include "cfile/cfile_format.h"
#include "cfile/encoding_internal.h"
#include "cfile/plain_encoding.h"
#include "common/bitmap.h"
#include "common/coding.h"
#include "common/column_predicate.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

DEFINE_int64(cfile_dict_max_bytes, 1024 * 1024,
             "Size in bytes of a column file's string dictionary past which the file's later "
             "pages are written PLAIN instead of dictionary-coded.");

namespace basalt {
namespace {

using encoding_internal::Corruption;
constexpr std::string_view kDict = "DICT";
constexpr uint8_t kModeCodes = 0;
constexpr uint8_t kModePlain = 1;
// Codes are decoded this many at a time into a scratch array.
constexpr size_t kCodeChunk = 1024;

}  // namespace

DictionaryBuilder::DictionaryBuilder(size_t max_bytes) : max_bytes_(max_bytes) {}

uint32_t DictionaryBuilder::Add(std::string_view value) {
  auto it = codes_.find(ToAbsl(value));
  if (it != codes_.end()) return it->second;
  const std::string_view stored = arena_.AddString(value);
  const uint32_t code = static_cast<uint32_t>(entries_.size());
  entries_.push_back(stored);
  codes_.emplace(ToAbsl(stored), code);
  value_bytes_ += value.size();
  return code;
}

bool DictionaryBuilder::IsFull() const {
  return size_bytes() > max_bytes_ || entries_.size() >= kMaxValuesPerPage;
}

std::string DictionaryBuilder::FinishDictionary() const {
  std::string out;
  out.reserve(size_bytes());
  PutFixed32(&out, static_cast<uint32_t>(entries_.size()));
  uint32_t end = 0;
  for (std::string_view e : entries_) {
    end += static_cast<uint32_t>(e.size());
    PutFixed32(&out, end);
  }
  for (std::string_view e : entries_) out.append(e.data(), e.size());
  return out;
}

absl::StatusOr<std::unique_ptr<Dictionary>> Dictionary::Parse(std::string_view page) {
  std::unique_ptr<Dictionary> dict(new Dictionary());
  dict->page_.assign(page.data(), page.size());
  auto decoder = NewPlainPageDecoder(DataType::kBinary);
  BASALT_RETURN_IF_ERROR_PREPEND(decoder->Init(dict->page_), "DICT dictionary");
  ColumnBlock block;
  dict->entries_.resize(decoder->count());
  block.type = DataType::kBinary;
  block.cell_size = sizeof(std::string_view);
  block.cells = reinterpret_cast<uint8_t*>(dict->entries_.data());
  block.capacity = dict->entries_.size();
  BASALT_ASSIGN_OR_RETURN(size_t n, decoder->DecodeNext(block.capacity, &block, 0));
  DCHECK_EQ(n, block.capacity);
  return dict;
}

std::vector<uint8_t> Dictionary::Evaluate(const ColumnPredicate& pred) const {
  std::vector<uint8_t> match(BitmapSize(entries_.size()) + 8, 0xff);
  pred.EvaluateVector(entries_.data(), nullptr, entries_.size(), match.data());
  return match;
}

namespace {

class DictPageBuilder final : public PageBuilder {
 public:
  explicit DictPageBuilder(const PageBuilderOptions& options)
      : dict_(options.dictionary),
        codes_(options),
        plain_(NewPlainPageBuilder(DataType::kBinary, options)) {}

  size_t Add(const void* cells, size_t n) override {
    if (mode_ < 0) mode_ = dict_->IsFull() ? kModePlain : kModeCodes;
    if (mode_ == kModePlain) return plain_->Add(cells, n);
    const auto* values = static_cast<const std::string_view*>(cells);
    int32_t codes[bitpacking::kBlockValues];
    size_t taken = 0;
    while (taken < n && !IsFull()) {
      // Up to the end of the codes builder's current block: it takes all of them.
      const size_t room = bitpacking::kBlockValues - codes_.count() % bitpacking::kBlockValues;
      const size_t k = std::min(n - taken, room);
      size_t i = 0;
      while (i < k && !dict_filled_) {
        codes[i] = static_cast<int32_t>(dict_->Add(values[taken + i]));
        i++;
        dict_filled_ = dict_->IsFull();
      }
      const size_t added = codes_.Add(codes, i);
      DCHECK_EQ(added, i);
      if (codes_.count() == added) first_code_ = codes[0];
      if (added > 0) last_code_ = codes[added - 1];
      taken += added;
    }
    return taken;
  }
  bool IsFull() const override {
    if (mode_ == kModePlain) return plain_->IsFull();
    return codes_.count() > 0 && (dict_filled_ || codes_.IsFull());
  }
  size_t count() const override { return mode_ == kModePlain ? plain_->count() : codes_.count(); }
  std::string_view Finish() override {
    if (mode_ < 0) mode_ = dict_->IsFull() ? kModePlain : kModeCodes;
    buf_.assign(1, static_cast<char>(mode_));
    const std::string_view body = mode_ == kModePlain ? plain_->Finish() : codes_.Finish();
    buf_.append(body.data(), body.size());
    return buf_;
  }
  void Reset() override {
    codes_.Reset();
    plain_->Reset();
    mode_ = -1;
    dict_filled_ = false;
  }
  bool GetFirstValue(void* cell) const override {
    if (mode_ == kModePlain) return plain_->GetFirstValue(cell);
    if (codes_.count() == 0) return false;
    *static_cast<std::string_view*>(cell) = dict_->entry(first_code_);
    return true;
  }
  bool GetLastValue(void* cell) const override {
    if (mode_ == kModePlain) return plain_->GetLastValue(cell);
    if (codes_.count() == 0) return false;
    *static_cast<std::string_view*>(cell) = dict_->entry(last_code_);
    return true;
  }

 private:
  DictionaryBuilder* const dict_;
  BitPackedPageBuilder<int32_t> codes_;
  std::unique_ptr<PageBuilder> plain_;
  int mode_ = -1;             // kModeCodes, kModePlain, or -1 until the page's first value.
  bool dict_filled_ = false;  // The dictionary filled up during this page: it ends here.
  int32_t first_code_ = 0;
  int32_t last_code_ = 0;
  std::string buf_;
};

struct DictEncodedPredicate final : EncodedPredicate {
  std::vector<uint8_t> matching_codes;  // Bit `code` set when the entry matches.
};

class DictPageDecoder final : public PageDecoder {
 public:
  explicit DictPageDecoder(const Dictionary* dict)
      : dict_(dict), plain_(NewPlainPageDecoder(DataType::kBinary)) {}

  absl::Status Init(std::string_view page) override { return InitWithLayout(page, nullptr); }

  // A codes page's layout is its BIT_PACKED codes' (a plain page has none).
  absl::Status InitWithLayout(std::string_view page, const PageLayout* layout) override {
    if (page.empty()) return Corruption(kDict, "empty page");
    mode_ = static_cast<uint8_t>(page[0]);
    page.remove_prefix(1);
    if (mode_ == kModeCodes) {
      BASALT_RETURN_IF_ERROR_PREPEND(codes_.InitWithLayout(page, layout), "DICT codes");
      if (codes_.count() > 0 && dict_->size() == 0) {
        return Corruption(kDict, "codes page but the dictionary is empty");
      }
      return absl::OkStatus();
    }
    if (mode_ == kModePlain) return plain_->Init(page);
    return Corruption(kDict, "unknown page mode ", int{mode_});
  }
  std::unique_ptr<const PageLayout> ComputeLayout(std::string_view page) override {
    if (page.empty() || static_cast<uint8_t>(page[0]) != kModeCodes) return nullptr;
    return codes_.ComputeLayout(page.substr(1));
  }
  size_t count() const override { return active()->count(); }
  size_t position() const override { return active()->position(); }
  void SeekToPositionInPage(size_t pos) override { active()->SeekToPositionInPage(pos); }

  absl::StatusOr<size_t> DecodeNext(size_t n, ColumnBlock* out, size_t dst_offset) override {
    if (mode_ == kModePlain) return plain_->DecodeNext(n, out, dst_offset);
    std::string_view* dst = out->data<std::string_view>() + dst_offset;
    const std::string_view* entries = dict_->entries();
    size_t done = 0;
    while (done < n) {
      BASALT_ASSIGN_OR_RETURN(size_t k, NextCodes(n - done));
      if (k == 0) break;
      for (size_t j = 0; j < k; j++) dst[done + j] = entries[codes_buf_[j]];
      done += k;
    }
    return done;
  }

  absl::Status SeekAtOrAfterValue(const void* value, bool* exact) override {
    if (mode_ == kModePlain) return plain_->SeekAtOrAfterValue(value, exact);
    return PageDecoder::SeekAtOrAfterValue(value, exact);
  }

  bool CanEvaluateOnEncoded() const override { return mode_ == kModeCodes; }

  absl::StatusOr<std::unique_ptr<EncodedPredicate>> PreparePredicate(
      const ColumnPredicate& pred) const override {
    auto prepared = std::make_unique<DictEncodedPredicate>();
    prepared->matching_codes = dict_->Evaluate(pred);
    return prepared;
  }

  absl::StatusOr<size_t> EvaluatePredicate(const EncodedPredicate& prepared, size_t n,
                                           uint8_t* selection, size_t sel_offset) override;

 protected:
  absl::Status CompareAt(size_t pos, const void* value, int* result) override {
    const size_t saved = codes_.position();
    codes_.SeekToPositionInPage(pos);
    absl::StatusOr<size_t> k = NextCodes(1);
    codes_.SeekToPositionInPage(saved);
    if (!k.ok()) return k.status();
    const std::string_view target = *static_cast<const std::string_view*>(value);
    const int c = dict_->entries()[codes_buf_[0]].compare(target);
    *result = (c > 0) - (c < 0);
    return absl::OkStatus();
  }

 private:
  PageDecoder* active() const {
    return mode_ == kModePlain ? plain_.get() : const_cast<BitPackedPageDecoder<int32_t>*>(&codes_);
  }
  // Decodes up to min(n, kCodeChunk) codes into codes_buf_ and checks them against the
  // dictionary. Returns how many.
  absl::StatusOr<size_t> NextCodes(size_t n) {
    const size_t start = codes_.position();
    const size_t k = codes_.DecodeRaw(std::min(n, kCodeChunk), codes_buf_);
    uint32_t max = 0;
    for (size_t j = 0; j < k; j++) max = std::max(max, static_cast<uint32_t>(codes_buf_[j]));
    if (k > 0) BASALT_RETURN_IF_ERROR(CheckCode(max, start));
    return k;
  }
  // DATA_LOSS unless `code` (the largest of codes read near position `pos`) is a dictionary
  // entry.
  absl::Status CheckCode(uint32_t code, size_t pos) const {
    if (code < dict_->size()) return absl::OkStatus();
    return Corruption(kDict, "code ", code, " near position ", pos, " is past the ", dict_->size(),
                      "-entry dictionary");
  }

  const Dictionary* const dict_;
  BitPackedPageDecoder<int32_t> codes_;
  std::unique_ptr<PageDecoder> plain_;
  uint8_t mode_ = kModeCodes;
  int32_t codes_buf_[kCodeChunk];
};

absl::StatusOr<size_t> DictPageDecoder::EvaluatePredicate(const EncodedPredicate& prepared,
                                                          size_t n, uint8_t* selection,
                                                          size_t sel_offset) {
  DCHECK(CanEvaluateOnEncoded());
  const uint8_t* match = static_cast<const DictEncodedPredicate&>(prepared).matching_codes.data();
  size_t done = 0;
  while (done < n) {
    int32_t code;
    size_t run;
    if (codes_.ConstantRun(n - done, &code, &run)) {
      // A run of one code (a key column's value over many rows): one test for the whole run.
      BASALT_RETURN_IF_ERROR(CheckCode(static_cast<uint32_t>(code), codes_.position()));
      if (!BitmapTest(match, static_cast<size_t>(code))) {
        cfile_internal::ClearBits(selection, sel_offset + done, run);
      }
      codes_.SeekToPositionInPage(codes_.position() + run);
      done += run;
      continue;
    }
    // Up to the end of the current block, so that a constant block after it takes the path above.
    const size_t to_block_end =
        bitpacking::kBlockValues - codes_.position() % bitpacking::kBlockValues;
    BASALT_ASSIGN_OR_RETURN(size_t k, NextCodes(std::min(n - done, to_block_end)));
    if (k == 0) break;
    const size_t bit0 = sel_offset + done;
    size_t j = 0;
    if (bit0 % 8 == 0) {
      // Whole selection bytes at a time (kCodeChunk is a multiple of 8).
      for (; j + 8 <= k; j += 8) {
        uint8_t keep = 0;
        for (size_t t = 0; t < 8; t++) {
          keep |= static_cast<uint8_t>(BitmapTest(match, codes_buf_[j + t]) << t);
        }
        selection[(bit0 + j) / 8] &= keep;
      }
    }
    for (; j < k; j++) {
      if (!BitmapTest(match, codes_buf_[j])) BitmapClear(selection, bit0 + j);
    }
    done += k;
  }
  return done;
}

}  // namespace

std::unique_ptr<PageBuilder> NewDictPageBuilder(const PageBuilderOptions& options) {
  CHECK(options.dictionary != nullptr);
  return std::make_unique<DictPageBuilder>(options);
}

std::unique_ptr<PageDecoder> NewDictPageDecoder(const Dictionary* dictionary) {
  CHECK(dictionary != nullptr);
  return std::make_unique<DictPageDecoder>(dictionary);
}

}  // namespace basalt
