// Page-encoding benchmark for column files (issue 3): for each encoding on realistic data, encode
// and decode throughput (values per second, one core) and encoded size (bits per value, before
// any compression codec); then predicate evaluation over a decoded column and DICT predicates on
// codes. Prints one JSON object per line.
//
// Usage: cfile_bench [--values=N] [--repeats=R] [--filter=SUBSTRING] [--portable_unpack]
// Each figure is the best of R runs (the machine is shared; best-of filters out interference).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "cfile/bitpacked_encoding.h"
#include "cfile/dict_encoding.h"
#include "cfile/encoding.h"
#include "common/column_block.h"
#include "common/column_predicate.h"
#include "common/random.h"
#include "common/strings.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

DEFINE_int64(values, 4 << 20, "Values per data set.");
DEFINE_int32(repeats, 7, "Runs per measurement; the best is reported.");
DEFINE_bool(portable_unpack, false, "Uses the portable bit-unpack routines instead of AVX2.");
DEFINE_string(filter, "", "Runs only cases whose name contains this substring.");

namespace basalt {
namespace {

double BestSeconds(const std::function<void()>& fn) {
  double best = 1e30;
  for (int r = 0; r < FLAGS_repeats; r++) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    const std::chrono::duration<double> d = std::chrono::steady_clock::now() - start;
    best = std::min(best, d.count());
  }
  return best;
}

// A data set: n cells in a ColumnBlockBuffer (strings point into `strings`).
struct DataSet {
  std::string name;
  DataType type;
  std::unique_ptr<ColumnBlockBuffer> cells;
  std::vector<std::string> strings;
};

DataSet MakeDataSet(const std::string& name, DataType type, size_t n, Random* rng) {
  DataSet ds{name, type, std::make_unique<ColumnBlockBuffer>(type, n, false), {}};
  ColumnBlock* b = ds.cells->block();
  if (name == "seq_int32_keys") {
    for (size_t i = 0; i < n; i++) b->data<int32_t>()[i] = static_cast<int32_t>(i);
  } else if (name == "random_int32_12bit") {
    for (size_t i = 0; i < n; i++) b->data<int32_t>()[i] = static_cast<int32_t>(rng->Uniform(4096));
  } else if (name == "random_int64") {
    for (size_t i = 0; i < n; i++) b->data<int64_t>()[i] = static_cast<int64_t>(rng->Next64());
  } else if (name == "timestamps_10s") {
    const int64_t start = 1'700'000'000'000'000;  // Microseconds, late 2023.
    for (size_t i = 0; i < n; i++) b->data<int64_t>()[i] = start + int64_t(i) * 10'000'000;
  } else if (name == "random_walk_double") {
    double v = 100.0;
    for (size_t i = 0; i < n; i++) {
      v += (rng->NextDouble() - 0.5) * 0.01;
      b->data<double>()[i] = std::round(v * 100) / 100;  // Prices in cents.
    }
  } else if (name == "low_card_strings") {
    for (int i = 0; i < 100; i++) ds.strings.push_back("country-" + std::to_string(i * 7919));
    for (size_t i = 0; i < n; i++) {
      b->data<std::string_view>()[i] = ds.strings[rng->Skewed(6) % ds.strings.size()];
    }
  } else if (name == "bool_runs") {
    uint8_t v = 0;
    for (size_t i = 0; i < n; i++) {
      if (rng->OneIn(40)) v ^= 1;
      b->data<uint8_t>()[i] = v;
    }
  } else {
    LOG(FATAL) << name;
  }
  return ds;
}

struct Encoded {
  std::vector<std::string> pages;
  size_t bytes = 0;
};

void Emit(const std::string& json) { std::printf("{%s}\n", json.c_str()); }

void BenchEncoding(DataSet& ds, EncodingType enc) {
  const std::string name = ds.name + "/" + std::string(EncodingTypeName(enc));
  if (!FLAGS_filter.empty() && name.find(FLAGS_filter) == std::string::npos) return;
  const size_t n = ds.cells->block()->capacity;
  const ColumnBlock& in = *ds.cells->block();
  DictionaryBuilder dict_builder;
  PageBuilderOptions opts;
  opts.dictionary = &dict_builder;
  Encoded enc_out;
  std::string dictionary;
  const double enc_s = BestSeconds([&] {
    DictionaryBuilder fresh;  // DICT: a new file each run.
    PageBuilderOptions o = opts;
    o.dictionary = &fresh;
    auto builder = CreatePageBuilder(ds.type, enc, o).value();
    enc_out = Encoded();
    for (size_t i = 0; i < n;) {
      i += builder->Add(in.cell(i), n - i);
      if (builder->IsFull() || i == n) {
        std::string_view page = builder->Finish();
        enc_out.bytes += page.size();
        enc_out.pages.emplace_back(page);
        builder->Reset();
      }
    }
    if (enc == EncodingType::kDict) dictionary = fresh.FinishDictionary();
  });
  std::unique_ptr<Dictionary> dict;
  PageDecoderOptions dopts;
  if (enc == EncodingType::kDict) {
    dict = Dictionary::Parse(dictionary).value();
    dopts.dictionary = dict.get();
  }
  ColumnBlockBuffer out(ds.type, n, false);
  auto decoder = CreatePageDecoder(ds.type, enc, dopts).value();
  const double dec_s = BestSeconds([&] {
    out.arena()->Reset();
    size_t at = 0;
    for (const std::string& page : enc_out.pages) {
      CHECK(decoder->Init(page).ok());
      at += decoder->DecodeNext(decoder->count(), out.block(), at).value();
    }
    CHECK_EQ(at, n);
  });
  CHECK_EQ(0, std::memcmp(out.block()->cells, in.cells,
                          ds.type == DataType::kString ? 0 : n * in.cell_size));
  const size_t total_bytes = enc_out.bytes + dictionary.size();
  Emit(StrCat("\"bench\":\"encoding\",\"data\":\"", ds.name, "\",\"encoding\":\"",
              EncodingTypeName(enc), "\",\"values\":", n, ",\"pages\":", enc_out.pages.size(),
              ",\"bits_per_value\":", absl::StrFormat("%.4f", 8.0 * total_bytes / n),
              ",\"encode_mvalues_per_sec\":", absl::StrFormat("%.1f", n / enc_s / 1e6),
              ",\"decode_mvalues_per_sec\":", absl::StrFormat("%.1f", n / dec_s / 1e6)));
}

void BenchPredicates(DataSet& ints, DataSet& strings) {
  if (!FLAGS_filter.empty() && std::string("predicate").find(FLAGS_filter) == std::string::npos) {
    return;
  }
  // Range predicate over a decoded int32 column, about 10% selective.
  const size_t n = ints.cells->block()->capacity;
  const ColumnSchema col("k", DataType::kInt32);
  const ColumnPredicate range =
      ColumnPredicate::Range(col, Datum::Int32(1000), Datum::Int32(1000 + int32_t(n / 10))).value();
  std::vector<uint8_t> sel(BitmapSize(n) + 8);
  const double s = BestSeconds([&] {
    std::memset(sel.data(), 0xff, sel.size());
    range.EvaluateVector(ints.cells->block()->cells, nullptr, n, sel.data());
  });
  Emit(StrCat("\"bench\":\"predicate\",\"kind\":\"decoded_int32_range\",\"values\":", n,
              ",\"selected\":", BitmapCountSet(sel.data(), n),
              ",\"mvalues_per_sec\":", absl::StrFormat("%.1f", n / s / 1e6)));

  // DICT: the same equality predicate on codes and on decoded values.
  const size_t m = strings.cells->block()->capacity;
  DictionaryBuilder db;
  PageBuilderOptions opts;
  opts.dictionary = &db;
  auto builder = CreatePageBuilder(DataType::kString, EncodingType::kDict, opts).value();
  std::vector<std::string> pages;
  for (size_t i = 0; i < m;) {
    i += builder->Add(strings.cells->block()->cell(i), m - i);
    if (builder->IsFull() || i == m) {
      pages.emplace_back(builder->Finish());
      builder->Reset();
    }
  }
  auto dict = Dictionary::Parse(db.FinishDictionary()).value();
  PageDecoderOptions dopts{dict.get()};
  auto decoder = CreatePageDecoder(DataType::kString, EncodingType::kDict, dopts).value();
  const ColumnSchema scol("s", DataType::kString);
  const ColumnPredicate eq =
      ColumnPredicate::Equality(scol, Datum::String(strings.strings[3])).value();
  std::unique_ptr<EncodedPredicate> prepared = decoder->PreparePredicate(eq).value();
  std::vector<uint8_t> dsel(BitmapSize(m) + 8);
  const double codes_s = BestSeconds([&] {
    std::memset(dsel.data(), 0xff, dsel.size());
    size_t at = 0;
    for (const std::string& page : pages) {
      CHECK(decoder->Init(page).ok());
      at += decoder->EvaluatePredicate(*prepared, decoder->count(), dsel.data(), at).value();
    }
  });
  Emit(StrCat("\"bench\":\"predicate\",\"kind\":\"dict_equality_on_codes\",\"values\":", m,
              ",\"selected\":", BitmapCountSet(dsel.data(), m),
              ",\"mvalues_per_sec\":", absl::StrFormat("%.1f", m / codes_s / 1e6)));
  ColumnBlockBuffer out(DataType::kString, m, false);
  const double values_s = BestSeconds([&] {
    size_t at = 0;
    for (const std::string& page : pages) {
      CHECK(decoder->Init(page).ok());
      at += decoder->DecodeNext(decoder->count(), out.block(), at).value();
    }
    std::memset(dsel.data(), 0xff, dsel.size());
    eq.EvaluateVector(out.block()->cells, nullptr, m, dsel.data());
  });
  Emit(StrCat("\"bench\":\"predicate\",\"kind\":\"dict_decode_then_equality\",\"values\":", m,
              ",\"selected\":", BitmapCountSet(dsel.data(), m),
              ",\"mvalues_per_sec\":", absl::StrFormat("%.1f", m / values_s / 1e6)));
}

int Main() {
  if (FLAGS_portable_unpack) bitpacking::SetUnpackIsaForTesting(bitpacking::UnpackIsa::kPortable);
  Random rng(42);
  const size_t n = static_cast<size_t>(FLAGS_values);
  DataSet seq = MakeDataSet("seq_int32_keys", DataType::kInt32, n, &rng);
  DataSet rnd = MakeDataSet("random_int64", DataType::kInt64, n, &rng);
  DataSet small = MakeDataSet("random_int32_12bit", DataType::kInt32, n, &rng);
  DataSet ts = MakeDataSet("timestamps_10s", DataType::kUnixtimeMicros, n, &rng);
  DataSet walk = MakeDataSet("random_walk_double", DataType::kDouble, n, &rng);
  DataSet str = MakeDataSet("low_card_strings", DataType::kString, n, &rng);
  DataSet bools = MakeDataSet("bool_runs", DataType::kBool, n, &rng);
  for (EncodingType e :
       {EncodingType::kBitPacked, EncodingType::kBitShuffle, EncodingType::kPlain}) {
    BenchEncoding(seq, e);
    BenchEncoding(small, e);
    BenchEncoding(rnd, e);
    BenchEncoding(ts, e);
  }
  for (EncodingType e : {EncodingType::kBitShuffle, EncodingType::kPlain}) BenchEncoding(walk, e);
  for (EncodingType e : {EncodingType::kDict, EncodingType::kPrefix, EncodingType::kPlain}) {
    BenchEncoding(str, e);
  }
  for (EncodingType e : {EncodingType::kRle, EncodingType::kPlain}) BenchEncoding(bools, e);
  BenchPredicates(seq, str);
  return 0;
}

}  // namespace
}  // namespace basalt

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  return basalt::Main();
}
