#pragma once

// The on-disk format of write-ahead log segments (byte tables in docs/wal.md): the segment header,
// the CRC32C framing of entry batches, the serialization of entries inside a batch, and a scanner
// that validates a whole segment and tells a torn tail from corruption. Pure functions over bytes
// in memory; the Log (log.h) does the file I/O.
//
// A segment file "wal-<seq, 9 digits>" is:
//   header | frame | frame | ... [| zero bytes]
// The zero bytes, if any, are space the writer preallocated (WritableFile::PreallocateZeros) and
// never filled: the segment's data ends where only zero bytes are left.
// and each frame is
//   [payload length u32][masked crc32c(payload) u32][masked crc32c(first 8 bytes) u32][payload]
// where the payload is one batch of consecutive entries:
//   [varint64 first index][varint32 count] then per entry
//   [varint64 term][u8 type][varint64 timestamp][varint32 data length][data]

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "consensus/raft_types.h"

namespace basalt {

// "bsltwal" + a newline: catches text-mode mangling and tells a WAL segment from other files.
inline constexpr char kSegmentMagic[8] = {'b', 's', 'l', 't', 'w', 'a', 'l', '\n'};
inline constexpr uint32_t kSegmentFormatVersion = 1;
// Header bytes before the log id: magic 8, version 4, flags 4, seq 8, first index 8, prev term
// 8, log id length 2.
inline constexpr size_t kSegmentHeaderFixedSize = 42;
// Log ids (tablet ids) are uuids in practice; the bound keeps a corrupt length harmless.
inline constexpr size_t kMaxLogIdBytes = 255;
inline constexpr size_t kMaxSegmentHeaderSize = kSegmentHeaderFixedSize + kMaxLogIdBytes + 4;

// Header flag: this segment starts a new log after a snapshot (ResetToSnapshot); the segments
// before it are obsolete and recovery deletes them.
inline constexpr uint32_t kSegmentFlagStartsNewLog = 1;
// Header flag: a segment of a server log (server_log.h), whose frames are records of many groups
// (ServerRecord below) instead of batches of one.
inline constexpr uint32_t kSegmentFlagServerLog = 2;

// Frame header: length, payload crc, header crc.
inline constexpr size_t kFrameHeaderSize = 12;
// Largest payload a frame may carry. Batches are far smaller (the appender groups up to a few
// MiB); the bound makes a corrupt length detectable without reading gigabytes.
inline constexpr uint32_t kMaxFramePayloadBytes = 128u << 20;
// Largest data of one entry (a batch of one such entry must still fit a frame).
inline constexpr size_t kMaxEntryDataBytes = 64u << 20;

struct SegmentHeader {
  uint32_t flags = 0;
  uint64_t seq = 0;
  // Index of the first entry this segment holds (or would hold, if it is empty).
  uint64_t first_index = 1;
  // Term of the entry at first_index - 1 (0 at the start of the log).
  uint64_t prev_term = 0;
  // Identifies the Raft group (tablet id); empty if unused.
  std::string log_id;
};

// Returns "wal-000000042" for seq 42.
std::string SegmentFileName(uint64_t seq);
// Parses a segment file name; returns false for any other name (including "*.tmp").
bool ParseSegmentFileName(std::string_view name, uint64_t* seq);

// Returns the encoded header. REQUIRES: header.log_id.size() <= kMaxLogIdBytes.
std::string EncodeSegmentHeader(const SegmentHeader& header);
// Decodes the header at the start of `data` and sets *size to its length. DATA_LOSS (naming
// `filename`) if the bytes are short, the magic, version or crc is wrong.
absl::Status DecodeSegmentHeader(std::string_view data, std::string_view filename,
                                 SegmentHeader* header, size_t* size);

// ---- Entries ----

// A decoded entry whose data points into the payload it was decoded from.
struct EntryView {
  uint64_t term = 0;
  uint64_t index = 0;
  EntryType type = EntryType::kNormal;
  uint64_t timestamp = 0;
  std::string_view data;

  LogEntry ToLogEntry() const;
};

// Appends the serialization of one entry (without its index) to *dst.
void AppendEncodedEntry(const LogEntry& entry, std::string* dst);
// The same for a decoded entry (re-encoding read entries without copying their data first).
void AppendEncodedEntry(const EntryView& entry, std::string* dst);

// Builds frames of batches: reserve the frame header, append entries, finish.
// Not thread-safe; the caller serializes.
class FrameBuilder {
 public:
  // Starts a frame for a batch whose first entry has index `first_index` and that will hold
  // `count` entries, of `entry_bytes` encoded bytes if known (the buffer is sized once).
  FrameBuilder(uint64_t first_index, uint32_t count, size_t entry_bytes = 0);
  // Returns the frame of an arbitrary payload. REQUIRES: payload <= kMaxFramePayloadBytes.
  static std::string FrameOf(std::string_view payload);
  // Appends already-encoded entries (AppendEncodedEntry output).
  void AppendEncodedEntries(std::string_view encoded) { buf_.append(encoded); }
  // Fills in the frame header and returns the frame. REQUIRES: payload <= kMaxFramePayloadBytes.
  std::string Finish() &&;

 private:
  FrameBuilder() = default;

  std::string buf_;
};

// Fills in the header of the frame at `at` of *buf, whose payload runs from at +
// kFrameHeaderSize to the end (the header's bytes were reserved). REQUIRES: payload <=
// kMaxFramePayloadBytes.
void SealFrameAt(size_t at, std::string* buf);

// Decodes a batch payload into `out` (cleared first). DATA_LOSS for malformed bytes: truncated
// values, an unknown entry type, an index overflow, or bytes left over.
absl::Status DecodeBatch(std::string_view payload, std::vector<EntryView>* out);

// ---- Frames ----

enum class FrameState {
  kOk,          // A complete frame with valid checksums.
  kEnd,         // No bytes left.
  kIncomplete,  // The bytes end inside the frame header or payload.
  kCorrupt,     // A checksum mismatch or an impossible length.
};

struct FrameResult {
  FrameState state = FrameState::kEnd;
  std::string_view payload;  // kOk only.
  size_t frame_size = 0;     // kOk only: header + payload.
  const char* reason = "";   // kIncomplete / kCorrupt: what is wrong.
};

// Reads the frame at the start of `data` (which runs to the end of the file).
FrameResult ReadFrame(std::string_view data);

// Returns the smallest offset in [from, data.size()) at which a complete, valid frame starts (and,
// if `accept` is set, whose payload it accepts), or std::string_view::npos. Used to tell a torn
// tail (nothing valid follows) from corruption.
size_t FindValidFrame(std::string_view data, size_t from,
                      const std::function<bool(std::string_view payload)>& accept = nullptr);

// Whether `payload` is a server log round: one or more whole, valid frames back to back.
bool IsRound(std::string_view payload);

// ---- Server log records ----
//
// A server log frame holds one round of its writer (one write and one sync): its payload is
// the frames of that round's records, back to back. (So a crash can damage only the last frame
// of a segment, as in a group's own log; each record's own frame lets a reader check one record
// without reading the round.) A record frame's payload is one record:
//   [u8 kind][varint32 group id length][group id] then, by kind,
//   kAppend:   [varint64 prev term][batch payload as above]
//   kTruncate: [varint64 index]
//   kReset:    [varint64 index][varint64 term]
//   kDrop:     nothing

enum class RecordKind : uint8_t {
  kAppend = 1,    // Entries of one group; replaces that group's entries from the first one on.
  kTruncate = 2,  // Removes the group's entries with index >= `index`.
  kReset = 3,     // Empties the group's log; the previous entry is (index, term) (a snapshot).
  kDrop = 4,      // Forgets the group (its replica was deleted).
};

// A decoded record whose views point into the payload it was decoded from.
struct ServerRecord {
  RecordKind kind = RecordKind::kAppend;
  std::string_view group;
  uint64_t prev_term = 0;  // kAppend: the term of the entry before the batch's first one.
  uint64_t index = 0;      // kTruncate, kReset.
  uint64_t term = 0;       // kReset.
  std::string_view batch;  // kAppend: a batch payload (DecodeBatch).
};

// Appends the frame of an append record of `count` entries from `first_index` (encoded by
// AppendEncodedEntry) to *dst, without building it elsewhere first.
void AppendAppendRecordFrame(std::string_view group, uint64_t prev_term, uint64_t first_index,
                             uint32_t count, std::string_view encoded_entries, std::string* dst);
// The largest bytes a record adds to its batch payload: kind, group id and its length, prev term.
inline constexpr size_t kMaxRecordOverhead = 1 + 2 + kMaxLogIdBytes + 10;
// The frame of a record of another kind than kAppend (whose batch FrameBuilder writes).
std::string EncodeRecordFrame(const ServerRecord& record);
// Decodes a record payload. DATA_LOSS for malformed bytes: an unknown kind, a group id that is
// empty or longer than kMaxLogIdBytes, truncated values, or bytes left over (the batch of an
// append record is checked by DecodeBatch).
absl::Status DecodeServerRecord(std::string_view payload, ServerRecord* out);

// ---- Whole segments ----

// DATA_LOSS: "WAL segment <filename> corrupt at offset <offset>: <what>".
absl::Status SegmentCorruption(std::string_view filename, uint64_t offset, std::string_view what);

// Where WalkFrames stopped.
struct FrameWalk {
  uint64_t valid_size = 0;  // Offset after the last valid frame.
  bool torn_tail = false;
  uint64_t preallocated_bytes = 0;  // Zero bytes after valid_size (not a torn tail).
};

// Calls `visit(payload, offset, frame_size)` for each valid frame of `contents` from offset
// `from` on, stopping at its first error. Where the frames end, ScanSegment's rules (below) tell
// preallocated zero bytes and a torn tail (only if `allow_torn_tail`) from DATA_LOSS; a valid
// frame found after damage counts only if `accept` (when set) accepts its payload (a server
// log's rounds: the record frames inside a torn round do not count).
absl::StatusOr<FrameWalk> WalkFrames(
    std::string_view contents, uint64_t from, std::string_view filename, bool allow_torn_tail,
    const std::function<absl::Status(std::string_view payload, uint64_t offset,
                                     uint32_t frame_size)>& visit,
    const std::function<bool(std::string_view payload)>& accept = nullptr);

// One batch found by ScanSegment.
struct ScannedBatch {
  uint64_t offset = 0;      // Of the frame in the file.
  uint32_t frame_size = 0;  // Header + payload.
  uint64_t first_index = 0;
  std::vector<uint64_t> terms;  // One per entry, in index order.
};

struct SegmentScan {
  SegmentHeader header;
  size_t header_size = 0;
  std::vector<ScannedBatch> batches;
  // Bytes that hold the header and the valid batches; the rest (if any) is a torn tail or
  // preallocated zero bytes.
  uint64_t valid_size = 0;
  bool torn_tail = false;
  uint64_t preallocated_bytes = 0;  // Zero bytes after valid_size (not a torn tail).
  // Index after the last entry (first_index if there are none) and the last entry's term.
  uint64_t next_index = 0;
  uint64_t last_term = 0;
};

// Validates the segment `contents` (a whole file named `filename`): the header, every frame's
// checksums, the batch encoding, and that entries are consecutive from the header's first index
// with non-decreasing terms no lower than its prev_term.
//
// Where only zero bytes are left, in any segment, the data ends (preallocated_bytes). If
// `allow_torn_tail` (the last segment of the log), an invalid or incomplete frame after which
// no valid frame starts anywhere in the file is a torn tail: scanning stops there and the result
// says so. Every other damage is DATA_LOSS with the file name and offset: a bad frame followed by
// a valid one (data after the damage would be lost), any damage in a segment that is not the last,
// and a frame whose checksums are valid but whose contents are malformed or out of order.
absl::StatusOr<SegmentScan> ScanSegment(std::string_view contents, std::string_view filename,
                                        bool allow_torn_tail);

}  // namespace basalt
