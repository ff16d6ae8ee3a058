#include "consensus/log_segment.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/random.h"
#include "common/status_test_util.h"

namespace basalt {
namespace {
namespace log_segment_test_file {

LogEntry Entry(uint64_t term, uint64_t index, EntryType type, uint64_t ts, std::string data) {
  LogEntry e;
  e.term = term;
  e.index = index;
  e.type = type;
  e.timestamp = ts;
  e.data = std::move(data);
  return e;
}

std::string Frame(const std::vector<LogEntry>& entries) {
  FrameBuilder b(entries.front().index, static_cast<uint32_t>(entries.size()));
  std::string encoded;
  for (const LogEntry& e : entries) AppendEncodedEntry(e, &encoded);
  b.AppendEncodedEntries(encoded);
  return std::move(b).Finish();
}

std::string Hex(std::string_view s) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

TEST(LogSegmentFormatTest, FileNames) {
  EXPECT_EQ(SegmentFileName(1), "wal-000000001");
  EXPECT_EQ(SegmentFileName(1234567890), "wal-1234567890");
  uint64_t seq = 0;
  EXPECT_TRUE(ParseSegmentFileName("wal-000000042", &seq));
  EXPECT_EQ(seq, 42u);
  EXPECT_FALSE(ParseSegmentFileName("wal-000000042.tmp", &seq));
  EXPECT_FALSE(ParseSegmentFileName("wal-42", &seq));
  EXPECT_FALSE(ParseSegmentFileName("cmeta", &seq));
}

TEST(LogSegmentFormatTest, HeaderGoldenBytesAndRoundTrip) {
  SegmentHeader h;
  h.seq = 3;
  h.first_index = 0x101;
  h.prev_term = 7;
  h.log_id = "t1";
  const std::string bytes = EncodeSegmentHeader(h);
  ASSERT_EQ(bytes.size(), kSegmentHeaderFixedSize + 2 + 4);
  // magic | version 1 | flags 0 | seq 3 | first index 0x101 | prev term 7 | id len 2 | "t1" | crc
  EXPECT_EQ(Hex(bytes.substr(0, bytes.size() - 4)),
            "62736c7477616c0a"
            "01000000"
            "00000000"
            "0300000000000000"
            "0101000000000000"
            "0700000000000000"
            "0200"
            "7431");
  SegmentHeader d;
  size_t size = 0;
  BASALT_ASSERT_OK(DecodeSegmentHeader(bytes + "trailing", "f", &d, &size));
  EXPECT_EQ(size, bytes.size());
  EXPECT_EQ(d.seq, 3u);
  EXPECT_EQ(d.first_index, 0x101u);
  EXPECT_EQ(d.prev_term, 7u);
  EXPECT_EQ(d.log_id, "t1");
  // Every truncation and every single-byte flip is DATA_LOSS.
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_TRUE(absl::IsDataLoss(DecodeSegmentHeader(bytes.substr(0, n), "f", &d, &size))) << n;
    std::string bad = bytes;
    bad[n] ^= 0x10;
    EXPECT_TRUE(absl::IsDataLoss(DecodeSegmentHeader(bad, "f", &d, &size))) << n;
  }
}

TEST(LogSegmentFormatTest, FrameGoldenBytes) {
  const std::string frame = Frame({Entry(2, 5, EntryType::kNormal, 300, "ab")});
  // payload: first index 5, count 1, term 2, type 1, timestamp 300 (varint ac 02), len 2, "ab"
  EXPECT_EQ(Hex(frame.substr(kFrameHeaderSize)),
            "050102"
            "01"
            "ac02"
            "02"
            "6162");
  EXPECT_EQ(Hex(frame.substr(0, 4)), "09000000");
  FrameResult r = ReadFrame(frame);
  ASSERT_EQ(r.state, FrameState::kOk);
  EXPECT_EQ(r.frame_size, frame.size());
  std::vector<EntryView> views;
  BASALT_ASSERT_OK(DecodeBatch(r.payload, &views));
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].index, 5u);
  EXPECT_EQ(views[0].term, 2u);
  EXPECT_EQ(views[0].timestamp, 300u);
  EXPECT_EQ(views[0].data, "ab");
}

TEST(LogSegmentFormatTest, FrameDamageIsDetected) {
  const std::string frame = Frame({Entry(1, 1, EntryType::kNoOp, 0, ""),
                                   Entry(1, 2, EntryType::kConfigChange, 0, "config"),
                                   Entry(3, 3, EntryType::kNormal, 9, std::string(100, 'x'))});
  for (size_t n = 0; n < frame.size(); ++n) {
    EXPECT_EQ(ReadFrame(frame.substr(0, n)).state,
              n == 0 ? FrameState::kEnd : FrameState::kIncomplete)
        << n;
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = frame;
      bad[n] ^= static_cast<char>(1 << bit);
      FrameResult r = ReadFrame(bad);
      // A flipped length may also make the frame look incomplete; it is never accepted.
      EXPECT_NE(r.state, FrameState::kOk) << n << " bit " << bit;
    }
  }
}

TEST(LogSegmentFormatTest, DecodeBatchRejectsMalformedPayloads) {
  const std::string frame = Frame(
      {Entry(4, 10, EntryType::kNormal, 1, "hello"), Entry(4, 11, EntryType::kNormal, 2, "world")});
  const std::string payload = frame.substr(kFrameHeaderSize);
  std::vector<EntryView> views;
  BASALT_ASSERT_OK(DecodeBatch(payload, &views));
  for (size_t n = 0; n < payload.size(); ++n) {
    EXPECT_TRUE(absl::IsDataLoss(DecodeBatch(payload.substr(0, n), &views))) << n;
  }
  EXPECT_TRUE(absl::IsDataLoss(DecodeBatch(payload + "x", &views)));
  std::string bad_type = payload;
  bad_type[3] = 7;  // first entry's type byte
  EXPECT_TRUE(absl::IsDataLoss(DecodeBatch(bad_type, &views)));
  // Random garbage never crashes.
  Random rng(SeedFromEnvOrTime());
  for (int i = 0; i < 2000; ++i) {
    std::string junk = rng.Bytes(rng.Uniform(40));
    (void)DecodeBatch(junk, &views);
  }
}

// A segment of three frames, as bytes.
struct TestSegment {
  std::string bytes;
  std::vector<size_t> frame_offsets;
};

TestSegment MakeSegment() {
  TestSegment s;
  SegmentHeader h;
  h.seq = 1;
  h.first_index = 1;
  s.bytes = EncodeSegmentHeader(h);
  uint64_t index = 1;
  for (int f = 0; f < 3; ++f) {
    s.frame_offsets.push_back(s.bytes.size());
    std::vector<LogEntry> entries;
    for (int i = 0; i < 3; ++i, ++index) {
      entries.push_back(Entry(1 + f, index, EntryType::kNormal, index, std::string(20, 'a' + f)));
    }
    s.bytes += Frame(entries);
  }
  return s;
}

TEST(LogSegmentScanTest, CompleteSegment) {
  TestSegment seg = MakeSegment();
  absl::StatusOr<SegmentScan> scan = ScanSegment(seg.bytes, "wal-000000001", false);
  BASALT_ASSERT_OK(scan);
  EXPECT_EQ(scan->batches.size(), 3u);
  EXPECT_EQ(scan->next_index, 10u);
  EXPECT_EQ(scan->last_term, 3u);
  EXPECT_EQ(scan->valid_size, seg.bytes.size());
  EXPECT_FALSE(scan->torn_tail);
}

TEST(LogSegmentScanTest, TornTailOnlyInLastSegmentAndOnlyAtTheEnd) {
  TestSegment seg = MakeSegment();
  const size_t last = seg.frame_offsets.back();
  for (size_t cut = last + 1; cut < seg.bytes.size(); ++cut) {
    const std::string torn = seg.bytes.substr(0, cut);
    absl::StatusOr<SegmentScan> scan = ScanSegment(torn, "f", true);
    BASALT_ASSERT_OK(scan) << cut << ": " << scan.status();
    EXPECT_TRUE(scan->torn_tail);
    EXPECT_EQ(scan->valid_size, last);
    EXPECT_EQ(scan->batches.size(), 2u);
    EXPECT_TRUE(absl::IsDataLoss(ScanSegment(torn, "f", false).status())) << cut;
  }
  // A damaged middle frame is corruption even in the last segment: valid data follows.
  for (size_t pos = seg.frame_offsets[1]; pos < seg.frame_offsets[2]; ++pos) {
    std::string bad = seg.bytes;
    bad[pos] ^= 0x01;
    EXPECT_TRUE(absl::IsDataLoss(ScanSegment(bad, "f", true).status())) << pos;
  }
}

TEST(LogSegmentScanTest, ZeroBytesAfterTheLastFrameArePreallocatedSpaceInAnySegment) {
  TestSegment seg = MakeSegment();
  const std::string header = seg.bytes.substr(0, seg.frame_offsets[0]);
  for (size_t zeros : {size_t{1}, kFrameHeaderSize - 1, kFrameHeaderSize, size_t{4096}}) {
    for (bool last : {false, true}) {
      SCOPED_TRACE(testing::Message() << zeros << " zero bytes, last segment " << last);
      absl::StatusOr<SegmentScan> scan =
          ScanSegment(seg.bytes + std::string(zeros, '\0'), "f", last);
      BASALT_ASSERT_OK(scan);
      EXPECT_EQ(scan->batches.size(), 3u);
      EXPECT_EQ(scan->valid_size, seg.bytes.size());
      EXPECT_EQ(scan->preallocated_bytes, zeros);
      EXPECT_FALSE(scan->torn_tail);
      // A segment with no batch yet: its header, then zeros.
      scan = ScanSegment(header + std::string(zeros, '\0'), "f", last);
      BASALT_ASSERT_OK(scan);
      EXPECT_TRUE(scan->batches.empty());
      EXPECT_EQ(scan->valid_size, header.size());
      EXPECT_EQ(scan->next_index, 1u);
    }
  }
}

TEST(LogSegmentScanTest, ATornFrameInPreallocatedSpaceIsATornTailOnlyInTheLastSegment) {
  TestSegment seg = MakeSegment();
  const size_t last = seg.frame_offsets.back();
  const std::string zeros(1024, '\0');
  // The last frame reached the disk in part: a prefix of it, or a single sector in its middle,
  // with the preallocated zeros around (a write's sectors persist in any order).
  std::vector<std::string> torn;
  for (size_t cut = last + 1; cut < seg.bytes.size(); cut += 7) {
    torn.push_back(seg.bytes.substr(0, cut) + zeros);
  }
  std::string middle = seg.bytes.substr(0, last) + zeros;
  middle.replace(last + 20, 10, seg.bytes.substr(last + 20, 10));
  torn.push_back(middle);
  for (const std::string& bytes : torn) {
    absl::StatusOr<SegmentScan> scan = ScanSegment(bytes, "f", true);
    BASALT_ASSERT_OK(scan) << scan.status();
    EXPECT_TRUE(scan->torn_tail);
    EXPECT_EQ(scan->valid_size, last);
    EXPECT_EQ(scan->batches.size(), 2u);
    EXPECT_TRUE(absl::IsDataLoss(ScanSegment(bytes, "f", false).status()));
  }
  // A non-zero byte far into the zeros after complete frames is damage, not free space.
  std::string stray = seg.bytes + zeros;
  stray[seg.bytes.size() + 500] = 'x';
  EXPECT_TRUE(absl::IsDataLoss(ScanSegment(stray, "f", false).status()));
  absl::StatusOr<SegmentScan> scan = ScanSegment(stray, "f", true);
  BASALT_ASSERT_OK(scan) << scan.status();
  EXPECT_TRUE(scan->torn_tail);
  EXPECT_EQ(scan->batches.size(), 3u);
}

TEST(LogSegmentScanTest, ValidFramesOutOfOrderAreCorruption) {
  TestSegment seg = MakeSegment();
  // Drop the middle frame: the third one then starts at the wrong index.
  std::string gap =
      seg.bytes.substr(0, seg.frame_offsets[1]) + seg.bytes.substr(seg.frame_offsets[2]);
  EXPECT_TRUE(absl::IsDataLoss(ScanSegment(gap, "f", true).status()));
}

}  // namespace log_segment_test_file
}  // namespace
}  // namespace basalt
