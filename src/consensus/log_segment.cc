#include "consensus/log_segment.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include <glog/logging.h>

#include "common/coding.h"
#include "common/crc32c.h"
#include "common/strings.h"

namespace basalt {

namespace {

constexpr std::string_view kSegmentPrefix = "wal-";
constexpr size_t kSeqDigits = 9;

absl::Status Corrupt(std::string_view filename, uint64_t offset, std::string_view what) {
  return SegmentCorruption(filename, offset, what);
}

uint32_t HeaderCrc(const char* frame) { return crc32c::Value(frame, 8); }

}  // namespace

std::string SegmentFileName(uint64_t seq) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "wal-%09llu", static_cast<unsigned long long>(seq));
  return buf;
}

bool ParseSegmentFileName(std::string_view name, uint64_t* seq) {
  if (!name.starts_with(kSegmentPrefix)) return false;
  std::string_view digits = name.substr(kSegmentPrefix.size());
  if (digits.size() < kSeqDigits || digits.size() > 19) return false;
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *seq = v;
  return true;
}

// ---- Header ----

std::string EncodeSegmentHeader(const SegmentHeader& header) {
  CHECK_LE(header.log_id.size(), kMaxLogIdBytes);
  std::string out(kSegmentHeaderFixedSize, '\0');
  char* p = out.data();
  std::memcpy(p, kSegmentMagic, 8);
  EncodeFixed32(p + 8, kSegmentFormatVersion);
  EncodeFixed32(p + 12, header.flags);
  EncodeFixed64(p + 16, header.seq);
  EncodeFixed64(p + 24, header.first_index);
  EncodeFixed64(p + 32, header.prev_term);
  EncodeFixed16(p + 40, static_cast<uint16_t>(header.log_id.size()));
  out.append(header.log_id);
  PutFixed32(&out, crc32c::Mask(crc32c::Value(out)));
  return out;
}

absl::Status DecodeSegmentHeader(std::string_view data, std::string_view filename,
                                 SegmentHeader* header, size_t* size) {
  if (data.size() < kSegmentHeaderFixedSize + 4) {
    return Corrupt(filename, 0,
                   StrCat("file of ", data.size(), " bytes is too short for a header"));
  }
  const char* p = data.data();
  if (std::memcmp(p, kSegmentMagic, 8) != 0) return Corrupt(filename, 0, "bad magic");
  const size_t id_len = DecodeFixed16(p + 40);
  if (id_len > kMaxLogIdBytes) return Corrupt(filename, 40, "log id length too large");
  const size_t crc_at = kSegmentHeaderFixedSize + id_len;
  if (data.size() < crc_at + 4) return Corrupt(filename, 0, "header truncated");
  if (crc32c::Unmask(DecodeFixed32(p + crc_at)) != crc32c::Value(p, crc_at)) {
    return Corrupt(filename, crc_at, "header checksum mismatch");
  }
  // The version is checked after the crc so that a damaged version reads as corruption.
  const uint32_t version = DecodeFixed32(p + 8);
  if (version != kSegmentFormatVersion) {
    return Corrupt(filename, 8, StrCat("unsupported format version ", version));
  }
  header->flags = DecodeFixed32(p + 12);
  header->seq = DecodeFixed64(p + 16);
  header->first_index = DecodeFixed64(p + 24);
  header->prev_term = DecodeFixed64(p + 32);
  header->log_id.assign(p + kSegmentHeaderFixedSize, id_len);
  if (header->first_index == 0) return Corrupt(filename, 24, "first index 0");
  *size = crc_at + 4;
  return absl::OkStatus();
}

// ---- Entries ----

LogEntry EntryView::ToLogEntry() const {
  LogEntry e;
  e.term = term;
  e.index = index;
  e.type = type;
  e.timestamp = timestamp;
  e.data.assign(data.data(), data.size());
  return e;
}

namespace {

void PutEntry(uint64_t term, EntryType type, uint64_t timestamp, std::string_view data,
              std::string* dst) {
  PutVarint64(dst, term);
  dst->push_back(static_cast<char>(type));
  PutVarint64(dst, timestamp);
  PutLengthPrefixed(dst, data);
}

}  // namespace

void AppendEncodedEntry(const LogEntry& entry, std::string* dst) {
  PutEntry(entry.term, entry.type, entry.timestamp, entry.data, dst);
}

void AppendEncodedEntry(const EntryView& entry, std::string* dst) {
  PutEntry(entry.term, entry.type, entry.timestamp, entry.data, dst);
}

FrameBuilder::FrameBuilder(uint64_t first_index, uint32_t count, size_t entry_bytes) {
  buf_.reserve(kFrameHeaderSize + kMaxVarint64Length + kMaxVarint32Length + entry_bytes);
  buf_.assign(kFrameHeaderSize, '\0');
  PutVarint64(&buf_, first_index);
  PutVarint32(&buf_, count);
}

std::string FrameBuilder::Finish() && {
  SealFrameAt(0, &buf_);
  return std::move(buf_);
}

void SealFrameAt(size_t at, std::string* buf) {
  const size_t payload_size = buf->size() - at - kFrameHeaderSize;
  CHECK_LE(payload_size, kMaxFramePayloadBytes);
  char* p = buf->data() + at;
  EncodeFixed32(p, static_cast<uint32_t>(payload_size));
  EncodeFixed32(p + 4, crc32c::Mask(crc32c::Value(p + kFrameHeaderSize, payload_size)));
  EncodeFixed32(p + 8, crc32c::Mask(HeaderCrc(p)));
}

std::string FrameBuilder::FrameOf(std::string_view payload) {
  FrameBuilder b;
  b.buf_.reserve(kFrameHeaderSize + payload.size());
  b.buf_.assign(kFrameHeaderSize, '\0');
  b.buf_.append(payload);
  return std::move(b).Finish();
}

absl::Status DecodeBatch(std::string_view payload, std::vector<EntryView>* out) {
  out->clear();
  uint64_t index;
  uint32_t count;
  if (!GetVarint64(&payload, &index) || !GetVarint32(&payload, &count)) {
    return absl::DataLossError("batch header truncated");
  }
  if (index == 0) return absl::DataLossError("batch first index 0");
  // Each entry takes at least 4 bytes, so a huge count is caught before reserving memory.
  if (count == 0 || count > payload.size() / 4) {
    return absl::DataLossError(StrCat("bad entry count ", count));
  }
  out->reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    EntryView e;
    e.index = index + i;
    if (e.index < index) return absl::DataLossError("entry index overflows");
    if (!GetVarint64(&payload, &e.term) || payload.empty()) {
      return absl::DataLossError(StrCat("entry ", e.index, " truncated"));
    }
    const uint8_t type = static_cast<uint8_t>(payload[0]);
    payload.remove_prefix(1);
    if (type > static_cast<uint8_t>(EntryType::kConfigChange)) {
      return absl::DataLossError(StrCat("entry ", e.index, " has unknown type ", type));
    }
    e.type = static_cast<EntryType>(type);
    if (!GetVarint64(&payload, &e.timestamp) || !GetLengthPrefixed(&payload, &e.data)) {
      return absl::DataLossError(StrCat("entry ", e.index, " truncated"));
    }
    out->push_back(e);
  }
  if (!payload.empty()) {
    return absl::DataLossError(StrCat(payload.size(), " bytes after the last entry"));
  }
  return absl::OkStatus();
}

// ---- Server log records ----

namespace {

void PutRecordHeader(RecordKind kind, std::string_view group, std::string* dst) {
  CHECK(!group.empty() && group.size() <= kMaxLogIdBytes) << group;
  dst->push_back(static_cast<char>(kind));
  PutLengthPrefixed(dst, group);
}

}  // namespace

void AppendAppendRecordFrame(std::string_view group, uint64_t prev_term, uint64_t first_index,
                             uint32_t count, std::string_view encoded_entries, std::string* dst) {
  const size_t at = dst->size();
  dst->append(kFrameHeaderSize, '\0');
  PutRecordHeader(RecordKind::kAppend, group, dst);
  PutVarint64(dst, prev_term);
  PutVarint64(dst, first_index);
  PutVarint32(dst, count);
  dst->append(encoded_entries);
  SealFrameAt(at, dst);
}

std::string EncodeRecordFrame(const ServerRecord& record) {
  CHECK(record.kind != RecordKind::kAppend);
  std::string payload;
  PutRecordHeader(record.kind, record.group, &payload);
  if (record.kind == RecordKind::kTruncate || record.kind == RecordKind::kReset) {
    PutVarint64(&payload, record.index);
  }
  if (record.kind == RecordKind::kReset) PutVarint64(&payload, record.term);
  return FrameBuilder::FrameOf(payload);
}

absl::Status DecodeServerRecord(std::string_view payload, ServerRecord* out) {
  *out = ServerRecord();
  if (payload.empty()) return absl::DataLossError("empty record");
  const uint8_t kind = static_cast<uint8_t>(payload[0]);
  payload.remove_prefix(1);
  if (kind < static_cast<uint8_t>(RecordKind::kAppend) ||
      kind > static_cast<uint8_t>(RecordKind::kDrop)) {
    return absl::DataLossError(StrCat("unknown record kind ", kind));
  }
  out->kind = static_cast<RecordKind>(kind);
  if (!GetLengthPrefixed(&payload, &out->group)) {
    return absl::DataLossError("record group id truncated");
  }
  if (out->group.empty() || out->group.size() > kMaxLogIdBytes) {
    return absl::DataLossError(StrCat("record group id of ", out->group.size(), " bytes"));
  }
  bool ok = true;
  switch (out->kind) {
    case RecordKind::kAppend:
      ok = GetVarint64(&payload, &out->prev_term);
      out->batch = payload;
      payload = {};
      break;
    case RecordKind::kTruncate:
      ok = GetVarint64(&payload, &out->index) && out->index > 0;
      break;
    case RecordKind::kReset:
      // The log's first index becomes index + 1.
      ok = GetVarint64(&payload, &out->index) && GetVarint64(&payload, &out->term) &&
           out->index < UINT64_MAX;
      break;
    case RecordKind::kDrop:
      break;
  }
  if (!ok) return absl::DataLossError("record truncated or with index 0");
  if (!payload.empty()) {
    return absl::DataLossError(StrCat(payload.size(), " bytes after the record"));
  }
  return absl::OkStatus();
}

// ---- Frames ----

FrameResult ReadFrame(std::string_view data) {
  FrameResult r;
  if (data.empty()) return r;
  if (data.size() < kFrameHeaderSize) {
    r.state = FrameState::kIncomplete;
    r.reason = "frame header truncated";
    return r;
  }
  const char* p = data.data();
  if (crc32c::Unmask(DecodeFixed32(p + 8)) != HeaderCrc(p)) {
    r.state = FrameState::kCorrupt;
    r.reason = "frame header checksum mismatch";
    return r;
  }
  const uint32_t len = DecodeFixed32(p);
  if (len > kMaxFramePayloadBytes) {
    r.state = FrameState::kCorrupt;
    r.reason = "frame length too large";
    return r;
  }
  if (data.size() - kFrameHeaderSize < len) {
    r.state = FrameState::kIncomplete;
    r.reason = "frame payload truncated";
    return r;
  }
  if (crc32c::Unmask(DecodeFixed32(p + 4)) != crc32c::Value(p + kFrameHeaderSize, len)) {
    r.state = FrameState::kCorrupt;
    r.reason = "frame payload checksum mismatch";
    return r;
  }
  r.state = FrameState::kOk;
  r.payload = data.substr(kFrameHeaderSize, len);
  r.frame_size = kFrameHeaderSize + len;
  return r;
}

size_t FindValidFrame(std::string_view data, size_t from,
                      const std::function<bool(std::string_view payload)>& accept) {
  for (size_t off = from; off + kFrameHeaderSize <= data.size(); ++off) {
    // Cheap pre-check on the 8-byte header crc before looking at the payload.
    const char* p = data.data() + off;
    if (crc32c::Unmask(DecodeFixed32(p + 8)) != HeaderCrc(p)) continue;
    const FrameResult r = ReadFrame(data.substr(off));
    if (r.state == FrameState::kOk && (accept == nullptr || accept(r.payload))) return off;
  }
  return std::string_view::npos;
}

bool IsRound(std::string_view payload) {
  if (payload.empty()) return false;
  while (!payload.empty()) {
    const FrameResult r = ReadFrame(payload);
    if (r.state != FrameState::kOk) return false;
    payload.remove_prefix(r.frame_size);
  }
  return true;
}

// ---- Whole segments ----

namespace {

bool AllZero(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}

// Checks a valid frame's batch against the entries before it and records it in *scan.
absl::Status AddBatch(std::string_view payload, uint64_t offset, size_t frame_size,
                      std::string_view filename, SegmentScan* scan) {
  std::vector<EntryView> entries;
  absl::Status s = DecodeBatch(payload, &entries);
  if (!s.ok()) return Corrupt(filename, offset, std::string(s.message()));
  if (entries.front().index != scan->next_index) {
    return Corrupt(
        filename, offset,
        StrCat("batch starts at index ", entries.front().index, ", expected ", scan->next_index));
  }
  ScannedBatch batch;
  batch.offset = offset;
  batch.frame_size = static_cast<uint32_t>(frame_size);
  batch.first_index = entries.front().index;
  batch.terms.reserve(entries.size());
  for (const EntryView& e : entries) {
    if (e.term < scan->last_term) {
      return Corrupt(filename, offset,
                     StrCat("entry ", e.index, " has term ", e.term, " below the previous term ",
                            scan->last_term));
    }
    scan->last_term = e.term;
    batch.terms.push_back(e.term);
  }
  scan->next_index += entries.size();
  scan->batches.push_back(std::move(batch));
  return absl::OkStatus();
}

}  // namespace

absl::Status SegmentCorruption(std::string_view filename, uint64_t offset, std::string_view what) {
  return absl::DataLossError(
      StrCat("WAL segment ", filename, " corrupt at offset ", offset, ": ", what));
}

absl::StatusOr<FrameWalk> WalkFrames(
    std::string_view contents, uint64_t from, std::string_view filename, bool allow_torn_tail,
    const std::function<absl::Status(std::string_view payload, uint64_t offset,
                                     uint32_t frame_size)>& visit,
    const std::function<bool(std::string_view payload)>& accept) {
  FrameWalk walk;
  uint64_t offset = from;
  while (true) {
    FrameResult frame = ReadFrame(contents.substr(offset));
    if (frame.state == FrameState::kEnd) break;
    if (frame.state == FrameState::kOk) {
      absl::Status s = visit(frame.payload, offset, static_cast<uint32_t>(frame.frame_size));
      if (!s.ok()) return s;
      offset += frame.frame_size;
      continue;
    }
    if (AllZero(contents.substr(offset))) {
      walk.preallocated_bytes = contents.size() - offset;
      break;
    }
    if (!allow_torn_tail) return Corrupt(filename, offset, frame.reason);
    const size_t next_valid = FindValidFrame(contents, offset + 1, accept);
    if (next_valid != std::string_view::npos) {
      return Corrupt(filename, offset,
                     StrCat(frame.reason, ", and a valid frame follows at offset ", next_valid));
    }
    walk.torn_tail = true;
    break;
  }
  walk.valid_size = offset;
  return walk;
}

absl::StatusOr<SegmentScan> ScanSegment(std::string_view contents, std::string_view filename,
                                        bool allow_torn_tail) {
  SegmentScan scan;
  absl::Status s = DecodeSegmentHeader(contents, filename, &scan.header, &scan.header_size);
  if (!s.ok()) return s;
  scan.next_index = scan.header.first_index;
  scan.last_term = scan.header.prev_term;
  absl::StatusOr<FrameWalk> walk =
      WalkFrames(contents, scan.header_size, filename, allow_torn_tail,
                 [&](std::string_view payload, uint64_t offset, uint32_t frame_size) {
                   return AddBatch(payload, offset, frame_size, filename, &scan);
                 });
  if (!walk.ok()) return walk.status();
  scan.valid_size = walk->valid_size;
  scan.torn_tail = walk->torn_tail;
  scan.preallocated_bytes = walk->preallocated_bytes;
  return scan;
}

}  // namespace basalt
