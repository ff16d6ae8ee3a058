#pragma once

// Helpers for the encoding tests: typed random values and encode/decode drivers.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/numeric/int128.h"
#include "cfile/dict_encoding.h"
#include "cfile/encoding.h"
#include "common/column_block.h"
#include "common/random.h"
#include "gtest/gtest.h"

namespace basalt::encoding_test {

// A column of values owned by the test: cells in a ColumnBlockBuffer, string bytes in `strings`.
struct Values {
  Values(DataType type, size_t n);
  DataType type;
  std::unique_ptr<ColumnBlockBuffer> buf;
  std::vector<std::string> strings;  // Backing store of string cells.
  size_t size() const { return buf->block_ref().capacity; }
  const ColumnBlock& block() const { return buf->block_ref(); }
};

// An encoded file's pages (and DICT's dictionary page).
struct EncodedPages {
  std::vector<std::string> pages;
  std::vector<size_t> counts;
  std::string dictionary;
  std::unique_ptr<Dictionary> parsed_dictionary;
};

inline Values::Values(DataType t, size_t n)
    : type(t), buf(std::make_unique<ColumnBlockBuffer>(t, n, false)) {}

namespace internal {

// Extreme cells of fixed-width types as raw bytes.
inline std::vector<std::string> FixedExtremes(DataType type) {
  std::vector<std::string> out;
  auto add = [&](auto v) { out.emplace_back(reinterpret_cast<const char*>(&v), sizeof(v)); };
  switch (GetTypeInfo(type).physical_type()) {
    case PhysicalType::kBool:
      add(uint8_t{0});
      add(uint8_t{1});
      break;
    case PhysicalType::kInt8:
      add(INT8_MIN);
      add(INT8_MAX);
      add(int8_t{0});
      add(int8_t{-1});
      break;
    case PhysicalType::kInt16:
      add(int16_t{INT16_MIN});
      add(int16_t{INT16_MAX});
      add(int16_t{-1});
      break;
    case PhysicalType::kInt32:
      add(INT32_MIN);
      add(INT32_MAX);
      add(int32_t{0});
      add(int32_t{-1});
      break;
    case PhysicalType::kInt64:
      add(INT64_MIN);
      add(INT64_MAX);
      add(int64_t{0});
      add(int64_t{-1});
      break;
    case PhysicalType::kInt128:
      add(std::numeric_limits<absl::int128>::min());
      add(std::numeric_limits<absl::int128>::max());
      add(absl::int128(-1));
      break;
    case PhysicalType::kFloat:
      add(std::numeric_limits<float>::quiet_NaN());
      add(-std::numeric_limits<float>::quiet_NaN());
      add(std::numeric_limits<float>::infinity());
      add(-std::numeric_limits<float>::infinity());
      add(-0.0f);
      add(0.0f);
      add(std::numeric_limits<float>::denorm_min());
      add(std::numeric_limits<float>::max());
      add(std::numeric_limits<float>::lowest());
      add(std::bit_cast<float>(0x7f800001u));  // Signalling NaN payload.
      break;
    case PhysicalType::kDouble:
      add(std::numeric_limits<double>::quiet_NaN());
      add(-std::numeric_limits<double>::quiet_NaN());
      add(std::numeric_limits<double>::infinity());
      add(-std::numeric_limits<double>::infinity());
      add(-0.0);
      add(0.0);
      add(std::numeric_limits<double>::denorm_min());
      add(std::numeric_limits<double>::max());
      add(std::numeric_limits<double>::lowest());
      add(std::bit_cast<double>(0x7ff0000000000001ull));
      break;
    case PhysicalType::kBinary:
      break;
  }
  return out;
}

inline void RandomFixedCell(DataType type, Random* rng, uint8_t* cell) {
  const size_t size = GetTypeInfo(type).size();
  if (type == DataType::kBool) {
    *cell = rng->OneIn(2);
    return;
  }
  // Mix full-range values with small ranges so bit-packing chooses many widths.
  uint64_t hi = rng->Next64(), lo = rng->Next64();
  const int bits = static_cast<int>(rng->Uniform(8 * size + 1));
  if (bits < 64) lo &= (bits == 0 ? 0 : (~uint64_t{0} >> (64 - bits)));
  std::memcpy(cell, &lo, std::min<size_t>(size, 8));
  if (size > 8) std::memcpy(cell + 8, &hi, size - 8);
}

}  // namespace internal
using internal::FixedExtremes;
using internal::RandomFixedCell;

inline Values RandomValues(DataType type, size_t n, Random* rng, bool extremes) {
  Values v(type, n);
  ColumnBlock* b = v.buf->block();
  if (GetTypeInfo(type).is_variable_length()) {
    v.strings.reserve(n);
    for (size_t i = 0; i < n; i++) {
      if (extremes && rng->OneIn(4)) {
        v.strings.push_back(rng->OneIn(2) ? std::string() : rng->Bytes(kMaxCellBytes));
      } else if (rng->OneIn(3)) {
        v.strings.push_back("common-prefix/" + std::to_string(rng->Uniform(50)));
      } else {
        v.strings.push_back(rng->Bytes(rng->Skewed(6)));
      }
    }
    for (size_t i = 0; i < n; i++) b->data<std::string_view>()[i] = v.strings[i];
    return v;
  }
  const std::vector<std::string> ext = FixedExtremes(type);
  for (size_t i = 0; i < n; i++) {
    if (extremes && !ext.empty() && rng->OneIn(2)) {
      std::memcpy(b->cell(i), ext[rng->Uniform(ext.size())].data(), b->cell_size);
    } else {
      RandomFixedCell(type, rng, b->cell(i));
    }
  }
  return v;
}

inline Values SortedCopy(const Values& v) {
  const TypeInfo& ti = GetTypeInfo(v.type);
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return ti.Compare(v.block().cell(a), v.block().cell(b)) < 0;
  });
  Values out(v.type, v.size());
  out.strings.reserve(v.size());
  for (size_t i = 0; i < idx.size(); i++) {
    if (ti.is_variable_length()) {
      out.strings.emplace_back(v.block().data<std::string_view>()[idx[i]]);
    } else {
      std::memcpy(out.buf->block()->cell(i), v.block().cell(idx[i]), ti.size());
    }
  }
  if (ti.is_variable_length()) {
    for (size_t i = 0; i < idx.size(); i++) {
      out.buf->block()->data<std::string_view>()[i] = out.strings[i];
    }
  }
  return out;
}

inline std::vector<DataType> AllTypes() {
  std::vector<DataType> out;
  for (int t = 1; t <= kMaxDataType; t++) out.push_back(static_cast<DataType>(t));
  return out;
}

inline std::vector<EncodingType> AllEncodings() {
  return {EncodingType::kPlain, EncodingType::kBitPacked, EncodingType::kBitShuffle,
          EncodingType::kRle,   EncodingType::kDict,      EncodingType::kPrefix};
}

inline EncodedPages Encode(const Values& values, EncodingType enc, size_t page_size, Random* rng,
                           size_t dict_max_bytes = 1 << 20) {
  EncodedPages out;
  DictionaryBuilder dict(dict_max_bytes);
  PageBuilderOptions opts;
  opts.page_size_bytes = page_size;
  opts.dictionary = &dict;
  auto builder = CreatePageBuilder(values.type, enc, opts).value();
  const ColumnBlock& in = values.block();
  const size_t n = values.size();
  size_t page_start = 0;
  alignas(16) uint8_t cell[16];
  auto finish = [&](size_t end) {
    EXPECT_EQ(builder->count(), end - page_start);
    if (end > page_start) {
      EXPECT_TRUE(builder->GetFirstValue(cell));
      EXPECT_EQ(0, GetTypeInfo(values.type).Compare(cell, in.cell(page_start)));
      EXPECT_TRUE(builder->GetLastValue(cell));
      EXPECT_EQ(0, GetTypeInfo(values.type).Compare(cell, in.cell(end - 1)));
    } else {
      EXPECT_FALSE(builder->GetFirstValue(cell));
    }
    out.pages.emplace_back(builder->Finish());
    out.counts.push_back(end - page_start);
    builder->Reset();
    page_start = end;
  };
  for (size_t i = 0; i < n;) {
    const size_t chunk = std::min<size_t>(n - i, 1 + rng->Skewed(10));
    const size_t took = builder->Add(in.cell(i), chunk);
    EXPECT_TRUE(took == chunk || builder->IsFull());
    i += took;
    if (builder->IsFull()) finish(i);
  }
  if (n == 0 || builder->count() > 0) finish(n);
  if (enc == EncodingType::kDict) {
    out.dictionary = dict.FinishDictionary();
    out.parsed_dictionary = Dictionary::Parse(out.dictionary).value();
  }
  return out;
}

inline std::unique_ptr<PageDecoder> MakeDecoder(DataType type, EncodingType enc,
                                                const EncodedPages& pages) {
  PageDecoderOptions opts;
  opts.dictionary = pages.parsed_dictionary.get();
  return CreatePageDecoder(type, enc, opts).value();
}

inline bool CellsEqual(const ColumnBlock& a, size_t i, const ColumnBlock& b, size_t j) {
  if (GetTypeInfo(a.type).is_variable_length()) {
    return a.data<std::string_view>()[i] == b.data<std::string_view>()[j];
  }
  return std::memcmp(a.cell(i), b.cell(j), a.cell_size) == 0;
}

inline std::string CellString(const ColumnBlock& b, size_t i) {
  std::string out;
  GetTypeInfo(b.type).AppendDebugString(b.cell(i), &out);
  return out;
}

}  // namespace basalt::encoding_test
