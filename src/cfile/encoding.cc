#include "cfile/encoding.h"

#include <initializer_list>
#include <string>

#include "cfile/bitpacked_encoding.h"
#include "cfile/bitshuffle_encoding.h"
#include "cfile/dict_encoding.h"
#include "cfile/plain_encoding.h"
#include "cfile/prefix_encoding.h"
#include "cfile/rle_encoding.h"
#include "common/status_macros.h"

namespace basalt {

absl::Status PageDecoder::SeekAtOrAfterValue(const void* value, bool* exact) {
  // Binary search for the first position whose value is >= *value.
  size_t lo = 0, hi = count();
  int last_cmp = 1;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    int cmp;
    BASALT_RETURN_IF_ERROR(CompareAt(mid, value, &cmp));
    if (cmp < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == count()) {
    SeekToPositionInPage(lo);
    *exact = false;
    return absl::NotFoundError("every value in the page is smaller than the sought value");
  }
  BASALT_RETURN_IF_ERROR(CompareAt(lo, value, &last_cmp));
  SeekToPositionInPage(lo);
  *exact = last_cmp == 0;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<EncodedPredicate>> PageDecoder::PreparePredicate(
    const ColumnPredicate& pred) const {
  return absl::UnimplementedError("this encoding cannot evaluate predicates on encoded data");
}

absl::StatusOr<size_t> PageDecoder::EvaluatePredicate(const EncodedPredicate& prepared, size_t n,
                                                      uint8_t* selection, size_t sel_offset) {
  return absl::FailedPreconditionError(
      "this page cannot evaluate predicates on encoded data (check CanEvaluateOnEncoded())");
}

EncodingType DefaultEncoding(DataType type) {
  switch (type) {
    case DataType::kBool:
      return EncodingType::kRle;
    case DataType::kFloat:
    case DataType::kDouble:
      return EncodingType::kBitShuffle;
    case DataType::kString:
    case DataType::kBinary:
    case DataType::kVarchar:
      return EncodingType::kDict;
    case DataType::kDecimal128:
    case DataType::kUnknown:
      return EncodingType::kPlain;
    default:
      return EncodingType::kBitPacked;
  }
}

bool IsEncodingAllowed(DataType type, EncodingType encoding) {
  if (!IsValidDataType(static_cast<int>(type))) return false;
  const TypeInfo& ti = GetTypeInfo(type);
  const bool varlen = ti.is_variable_length();
  const bool is_bool = type == DataType::kBool;
  switch (encoding) {
    case EncodingType::kPlain:
      return true;
    case EncodingType::kBitPacked:
      return !varlen && !is_bool && !ti.is_floating_point() && ti.size() <= 8;
    case EncodingType::kBitShuffle:
      return !varlen && !is_bool;
    case EncodingType::kRle:
      return is_bool;
    case EncodingType::kDict:
    case EncodingType::kPrefix:
      return varlen;
    case EncodingType::kAuto:
      return false;
  }
  return false;
}

namespace {

std::string AllowedEncodings(DataType type) {
  std::string out;
  for (EncodingType e : {EncodingType::kPlain, EncodingType::kBitPacked, EncodingType::kBitShuffle,
                         EncodingType::kRle, EncodingType::kDict, EncodingType::kPrefix}) {
    if (IsEncodingAllowed(type, e)) StrAppend(&out, out.empty() ? "" : ", ", EncodingTypeName(e));
  }
  return out;
}

absl::Status CheckAllowed(DataType type, EncodingType encoding) {
  if (!IsValidDataType(static_cast<int>(type)) || type == DataType::kUnknown) {
    return absl::InvalidArgumentError(StrCat("invalid data type ", static_cast<int>(type)));
  }
  if (!IsEncodingAllowed(type, encoding)) {
    return absl::InvalidArgumentError(StrCat("encoding ", EncodingTypeName(encoding),
                                             " cannot store ", DataTypeName(type),
                                             " columns; allowed: ", AllowedEncodings(type)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EncodingType> ResolveEncoding(DataType type, EncodingType requested) {
  const EncodingType e = requested == EncodingType::kAuto ? DefaultEncoding(type) : requested;
  BASALT_RETURN_IF_ERROR(CheckAllowed(type, e));
  return e;
}

absl::StatusOr<std::unique_ptr<PageBuilder>> CreatePageBuilder(DataType type, EncodingType encoding,
                                                               const PageBuilderOptions& options) {
  BASALT_RETURN_IF_ERROR(CheckAllowed(type, encoding));
  switch (encoding) {
    case EncodingType::kPlain:
      return NewPlainPageBuilder(type, options);
    case EncodingType::kBitPacked:
      return NewBitPackedPageBuilder(type, options);
    case EncodingType::kBitShuffle:
      return NewBitShufflePageBuilder(type, options);
    case EncodingType::kRle:
      return NewRlePageBuilder(options);
    case EncodingType::kDict:
      if (options.dictionary == nullptr) {
        return absl::InvalidArgumentError("DICT page builder needs the file's DictionaryBuilder");
      }
      return NewDictPageBuilder(options);
    case EncodingType::kPrefix:
      return NewPrefixPageBuilder(options);
    case EncodingType::kAuto:
      break;
  }
  return absl::InvalidArgumentError("unresolved encoding");
}

absl::StatusOr<std::unique_ptr<PageDecoder>> CreatePageDecoder(DataType type, EncodingType encoding,
                                                               const PageDecoderOptions& options) {
  BASALT_RETURN_IF_ERROR(CheckAllowed(type, encoding));
  switch (encoding) {
    case EncodingType::kPlain:
      return NewPlainPageDecoder(type);
    case EncodingType::kBitPacked:
      return NewBitPackedPageDecoder(type);
    case EncodingType::kBitShuffle:
      return NewBitShufflePageDecoder(type);
    case EncodingType::kRle:
      return NewRlePageDecoder();
    case EncodingType::kDict:
      if (options.dictionary == nullptr) {
        return absl::InvalidArgumentError("DICT page decoder needs the file's Dictionary");
      }
      return NewDictPageDecoder(options.dictionary);
    case EncodingType::kPrefix:
      return NewPrefixPageDecoder();
    case EncodingType::kAuto:
      break;
  }
  return absl::InvalidArgumentError("unresolved encoding");
}

}  // namespace basalt
