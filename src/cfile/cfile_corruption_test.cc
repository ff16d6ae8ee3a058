// Corruption of column files: flipped, zeroed and truncated bytes anywhere in a file yield
// DATA_LOSS or INVALID_ARGUMENT naming the file, never a crash (run under the sanitizer build
// too). With checksums off the decoders must be robust on their own.

#include <memory>
#include <string>
#include <vector>

#include "cfile/cfile_reader.h"
#include "cfile/cfile_test_util.h"
#include "cfile/cfile_writer.h"
#include "common/column_predicate.h"
#include "common/datum.h"
#include "common/status_test_util.h"
#include "common/strings.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"

namespace basalt::cfile_test {
namespace {
namespace cfile_corruption_test_file {

using encoding_test::RandomValues;
using encoding_test::SortedCopy;

struct FileSpec {
  DataType type;
  EncodingType encoding;
  CompressionType codec;
  bool nullable;
  bool is_key;
};

class CFileCorruptionTest : public CFileTestBase {
 protected:
  // Every read path over the whole file: full scan, predicate scans, seeks. Returns the first
  // error (OK if everything read).
  absl::Status ReadEverything(BlockId id, const FileSpec& spec, const Column& col) {
    auto reader_or = OpenFile(id);
    if (!reader_or.ok()) return reader_or.status();
    CFileReader* reader = reader_or->get();
    const size_t n = reader->num_rows();
    if (n > 100000) return absl::DataLossError("implausible");
    auto it = reader->NewIterator();
    ColumnBlockBuffer buf(reader->type(), std::max<size_t>(n, 1), true);
    size_t got = 0;
    absl::Status s = it->Scan(n, buf.block(), &got);
    if (!s.ok()) return s;
    if (got != n) return absl::InternalError("short scan");
    ColumnSchema cs("c", spec.type, spec.nullable);
    std::vector<uint8_t> sel(BitmapSize(n) + 1, 0xff);
    const Datum v = Datum::FromCell(spec.type, col.cell(col.size() / 2));
    for (const ColumnPredicate& pred :
         {ColumnPredicate::Equality(cs, v).value(), ColumnPredicate::IsNull(cs),
          ColumnPredicate::Range(cs, v, std::nullopt).value()}) {
      for (ColumnBlock* out : {static_cast<ColumnBlock*>(nullptr), buf.block()}) {
        it = reader->NewIterator();
        s = it->ScanWithPredicate(pred, n, sel.data(), out, &got);
        if (!s.ok()) return s;
      }
    }
    for (size_t r = 0; r < n; r += 1 + n / 8) {
      s = it->SeekToOrdinal(r);
      if (s.ok()) s = it->Scan(std::min<size_t>(3, n - r), buf.block(), &got);
      if (!s.ok()) return s;
    }
    if (spec.is_key) {
      bool exact;
      for (size_t r = 0; r < col.size(); r += 1 + col.size() / 8) {
        s = it->SeekAtOrAfter(col.cell(r), &exact);
        if (!s.ok() && !absl::IsNotFound(s)) return s;
      }
    }
    // Compare with the model: a file that read cleanly must hold the written data when
    // checksums are verified.
    if (FLAGS_cfile_verify_checksums) {
      if (n != col.size()) return absl::InternalError("row count changed undetected");
      it = reader->NewIterator();
      s = it->Scan(n, buf.block(), &got);
      if (!s.ok()) return s;
      for (size_t i = 0; i < n; ++i) {
        if (col.is_null(i) != buf.block_ref().is_null(i) ||
            (!col.is_null(i) && !CellsEqual(col.values.block(), i, buf.block_ref(), i))) {
          return absl::InternalError(StrCat("row ", i, " changed undetected"));
        }
      }
    }
    return absl::OkStatus();
  }

  void ExpectCleanError(const absl::Status& s, BlockId id, const std::string& what,
                        bool must_fail) {
    if (s.ok()) {
      EXPECT_FALSE(must_fail) << what << ": corruption not detected";
      return;
    }
    EXPECT_TRUE(s.code() == absl::StatusCode::kDataLoss ||
                s.code() == absl::StatusCode::kInvalidArgument)
        << what << ": " << s;
    EXPECT_NE(s.message().find(id.ToString()), std::string::npos)
        << what << ": message does not name the file: " << s;
  }

  // 300 random values for `spec` (sorted for key files), a fifth of them NULL if nullable.
  static Column RandomColumn(const FileSpec& spec, Random* rng) {
    Values raw = RandomValues(spec.type, 300, rng, false);
    Column col(spec.is_key ? SortedCopy(raw) : std::move(raw), spec.nullable);
    if (spec.nullable) {
      for (size_t i = 0; i < col.size(); ++i) BitmapChange(col.nulls.data(), i, rng->OneIn(5));
    }
    return col;
  }

  // Writes `col` as a file per `spec` with 256-byte pages.
  BlockId WriteSpec(const FileSpec& spec, const Column& col, Random* rng) {
    CFileWriterOptions o;
    o.type = spec.type;
    o.nullable = spec.nullable;
    o.is_key = spec.is_key;
    o.storage = {spec.encoding, spec.codec, 256};
    return WriteColumn(o, col, rng);
  }

  // For each of `positions` and each of flipping a bit, zeroing and truncating there, writes the
  // corrupted copy of `bytes` as a block, calls check(block id, description) and deletes the
  // block. Stops at the first test failure.
  template <typename Check>
  void ForEachCorruption(const std::string& bytes, const std::vector<size_t>& positions,
                         Random* rng, Check check) {
    for (size_t p : positions) {
      for (int mode = 0; mode < 3; ++mode) {
        std::string bad = bytes;
        if (mode == 0) bad[p] ^= static_cast<char>(1 << rng->Uniform(8));
        if (mode == 1) bad[p] = 0;
        if (mode == 2) bad.resize(p);
        if (bad == bytes) continue;
        const BlockId id = WriteBytes(bad);
        check(id, StrCat("mode ", mode, " at ", p));
        BASALT_ASSERT_OK(bm_->DeleteBlock(id));
        if (HasFailure()) return;
      }
    }
  }

  // Writes a file per `spec`, then corrupts it at many positions.
  void Run(const FileSpec& spec, bool checksums) {
    Random rng(SeedFromEnvOrTime());
    const Column col = RandomColumn(spec, &rng);
    const BlockId good = WriteSpec(spec, col, &rng);
    BASALT_ASSERT_OK(ReadEverything(good, spec, col));
    const std::string bytes = ReadAll(good);
    SCOPED_TRACE(StrCat(DataTypeName(spec.type), " ", EncodingTypeName(spec.encoding), " ",
                        CompressionTypeName(spec.codec), " size ", bytes.size()));
    // Every position near the end (trailer, footer, indexes), a stride through the pages.
    std::vector<size_t> positions;
    const size_t tail = std::min<size_t>(bytes.size(), 400);
    for (size_t p = 0; p < bytes.size() - tail; p += 1 + rng.Uniform(7)) positions.push_back(p);
    for (size_t p = bytes.size() - tail; p < bytes.size(); ++p) positions.push_back(p);
    ForEachCorruption(bytes, positions, &rng, [&](BlockId id, const std::string& what) {
      ExpectCleanError(ReadEverything(id, spec, col), id, what, checksums);
    });
  }
};

const FileSpec kSpecs[] = {
    {DataType::kInt64, EncodingType::kBitPacked, CompressionType::kNone, true, false},
    {DataType::kInt32, EncodingType::kBitPacked, CompressionType::kLz4, false, true},
    {DataType::kString, EncodingType::kDict, CompressionType::kLz4, true, false},
    {DataType::kString, EncodingType::kPrefix, CompressionType::kZstd, false, true},
    {DataType::kDouble, EncodingType::kBitShuffle, CompressionType::kSnappy, true, false},
    {DataType::kBool, EncodingType::kRle, CompressionType::kZlib, true, false},
    {DataType::kBinary, EncodingType::kPlain, CompressionType::kNone, true, false},
};

TEST_F(CFileCorruptionTest, EveryCorruptionIsACleanError) {
  for (const FileSpec& spec : kSpecs) {
    ASSERT_NO_FATAL_FAILURE(Run(spec, true));
    if (HasFailure()) return;
  }
}

TEST_F(CFileCorruptionTest, DecodersAreRobustWithoutChecksums) {
  gflags::FlagSaver saver;
  FLAGS_cfile_verify_checksums = false;
  for (const FileSpec& spec : kSpecs) {
    ASSERT_NO_FATAL_FAILURE(Run(spec, false));
    if (HasFailure()) break;
  }
}

// The scrubber's check: Open plus VerifyChecksums, without reading a value, catches every
// flipped, zeroed or truncated byte of every kind of file, with or without
// --cfile_verify_checksums (a flipped literal byte that decodes fine is caught too).
TEST_F(CFileCorruptionTest, VerifyChecksumsCatchesEveryCorruptedByte) {
  gflags::FlagSaver saver;
  FLAGS_cfile_verify_checksums = false;
  Random rng(SeedFromEnvOrTime());
  for (const FileSpec& spec : kSpecs) {
    const BlockId good = WriteSpec(spec, RandomColumn(spec, &rng), &rng);
    BASALT_ASSERT_OK((*OpenFile(good))->VerifyChecksums());
    const std::string bytes = ReadAll(good);
    SCOPED_TRACE(StrCat(DataTypeName(spec.type), " size ", bytes.size()));
    std::vector<size_t> positions;
    for (size_t p = 0; p < bytes.size(); p += 1 + rng.Uniform(3)) positions.push_back(p);
    ForEachCorruption(bytes, positions, &rng, [&](BlockId id, const std::string& what) {
      auto r = OpenFile(id);
      const absl::Status s = r.ok() ? (*r)->VerifyChecksums() : r.status();
      ExpectCleanError(s, id, what, /*must_fail=*/true);
    });
    if (HasFailure()) return;
  }
}

TEST_F(CFileCorruptionTest, EmptyAndTinyBlocks) {
  for (std::string bytes :
       {std::string(), std::string("x"), std::string(20, '\0'), std::string("BSLTCFIL")}) {
    const BlockId id = WriteBytes(bytes);
    auto r = OpenFile(id);
    ASSERT_FALSE(r.ok());
    ExpectCleanError(r.status(), id, "tiny", true);
  }
}

}  // namespace cfile_corruption_test_file
}  // namespace
}  // namespace basalt::cfile_test
