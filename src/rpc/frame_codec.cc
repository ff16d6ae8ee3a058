#include "rpc/frame_codec.h"

#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/str_format.h"
#include "common/coding.h"
#include "common/strings.h"
#include "rpc/net_util.h"
#include "rpc/rpc_status.h"

namespace basalt {

namespace {

// Byte offsets inside the headers (docs/frame_rpc.md has the tables).
constexpr size_t kMagicOffset = 0;
constexpr size_t kLengthOffset = 4;
constexpr size_t kCodeOrMethodOffset = 8;
constexpr size_t kReservedOffset = 9;
constexpr size_t kReservedSize = 3;
constexpr size_t kTimeoutOffset = 12;                                                // Request.
constexpr size_t kMessageLenOffset = 12;                                             // Response.
constexpr size_t kDetailLenOffset = 16;                                              // Response.
constexpr int kMaxKnownCode = static_cast<int>(absl::StatusCode::kUnauthenticated);  // 16.

// The checks both headers share: enough bytes, the magic, zero reserved bytes.
absl::Status CheckCommon(std::string_view bytes, size_t header_size, const char* what) {
  if (bytes.size() < header_size) {
    return absl::DataLossError(absl::StrFormat("frame %s header truncated: %d of %d bytes", what,
                                               bytes.size(), header_size));
  }
  const uint32_t magic = DecodeFixed32(bytes.data() + kMagicOffset);
  if (magic != kFrameMagic) {
    return absl::DataLossError(absl::StrFormat(
        "frame %s header: bad magic 0x%08x (expected 0x%08x, \"BFP1\"): not a frame-protocol peer",
        what, magic, kFrameMagic));
  }
  for (size_t i = 0; i < kReservedSize; ++i) {
    if (bytes[kReservedOffset + i] != 0) {
      return absl::DataLossError(
          absl::StrFormat("frame %s header: reserved byte %d is 0x%02x, must be 0", what, i,
                          static_cast<uint8_t>(bytes[kReservedOffset + i])));
    }
  }
  return absl::OkStatus();
}

void EncodeCommon(char* dst, uint32_t length, uint8_t code_or_method) {
  EncodeFixed32(dst + kMagicOffset, kFrameMagic);
  EncodeFixed32(dst + kLengthOffset, length);
  dst[kCodeOrMethodOffset] = static_cast<char>(code_or_method);
  std::memset(dst + kReservedOffset, 0, kReservedSize);
}

}  // namespace

void EncodeFrameRequestHeader(const FrameRequestHeader& h, char* dst) {
  EncodeCommon(dst, h.body_len, h.method);
  EncodeFixed32(dst + kTimeoutOffset, h.timeout_ms);
}

absl::StatusOr<FrameRequestHeader> DecodeFrameRequestHeader(std::string_view bytes) {
  if (absl::Status s = CheckCommon(bytes, kFrameRequestHeaderSize, "request"); !s.ok()) return s;
  FrameRequestHeader h;
  h.body_len = DecodeFixed32(bytes.data() + kLengthOffset);
  h.method = static_cast<uint8_t>(bytes[kCodeOrMethodOffset]);
  h.timeout_ms = DecodeFixed32(bytes.data() + kTimeoutOffset);
  if (h.body_len > static_cast<uint32_t>(kMaxRpcMessageBytes)) {
    return absl::DataLossError(
        absl::StrFormat("frame request header: body_len %d exceeds the limit of %d bytes",
                        h.body_len, kMaxRpcMessageBytes));
  }
  return h;
}

void EncodeFrameResponseHeader(const FrameResponseHeader& h, char* dst) {
  EncodeCommon(dst, h.payload_len, static_cast<uint8_t>(h.code));
  EncodeFixed32(dst + kMessageLenOffset, h.message_len);
  EncodeFixed32(dst + kDetailLenOffset, h.detail_len);
}

absl::StatusOr<FrameResponseHeader> DecodeFrameResponseHeader(std::string_view bytes) {
  if (absl::Status s = CheckCommon(bytes, kFrameResponseHeaderSize, "response"); !s.ok()) {
    return s;
  }
  FrameResponseHeader h;
  h.payload_len = DecodeFixed32(bytes.data() + kLengthOffset);
  // An unknown code (a newer peer's) is still an error: UNKNOWN keeps the message and detail.
  const int code = static_cast<uint8_t>(bytes[kCodeOrMethodOffset]);
  h.code = code > kMaxKnownCode ? absl::StatusCode::kUnknown : static_cast<absl::StatusCode>(code);
  h.message_len = DecodeFixed32(bytes.data() + kMessageLenOffset);
  h.detail_len = DecodeFixed32(bytes.data() + kDetailLenOffset);
  if (absl::Status s = ValidateFrameResponseHeader(h); !s.ok()) return s;
  return h;
}

absl::Status ValidateFrameResponseHeader(const FrameResponseHeader& h) {
  if (h.payload_len > static_cast<uint32_t>(kMaxRpcMessageBytes)) {
    return absl::DataLossError(
        absl::StrFormat("frame response header: payload_len %d exceeds the limit of %d bytes",
                        h.payload_len, kMaxRpcMessageBytes));
  }
  // In 64 bits: two u32 lengths may overflow 32.
  const uint64_t status_len = uint64_t{h.message_len} + h.detail_len;
  if (status_len > h.payload_len) {
    return absl::DataLossError(absl::StrFormat(
        "frame response header: message_len %d + detail_len %d exceed payload_len %d",
        h.message_len, h.detail_len, h.payload_len));
  }
  if (h.code == absl::StatusCode::kOk && status_len != 0) {
    return absl::DataLossError(absl::StrFormat(
        "frame response header: an OK response with message_len %d and detail_len %d (must be 0)",
        h.message_len, h.detail_len));
  }
  if (h.code != absl::StatusCode::kOk && status_len != h.payload_len) {
    return absl::DataLossError(absl::StrFormat(
        "frame response header: an error response (code %d) with a body of %d bytes (must be 0)",
        static_cast<int>(h.code), h.payload_len - status_len));
  }
  return absl::OkStatus();
}

FrameResponseHeader FrameResponseHeaderFor(const absl::Status& s, size_t body_len,
                                           std::string* message, std::string* detail) {
  FrameResponseHeader h;
  message->clear();
  detail->clear();
  if (s.ok()) {
    h.payload_len = static_cast<uint32_t>(body_len);
    return h;
  }
  // Copies: errors are not the fast path, and a Cord payload need not be flat.
  h.code = s.code();
  message->assign(s.message().data(), s.message().size());
  if (auto payload = s.GetPayload(kErrorDetailUrl); payload.has_value()) {
    *detail = std::string(*payload);
  }
  constexpr size_t kMax = kMaxRpcMessageBytes;
  if (message->size() + detail->size() > kMax) {
    detail->clear();
    if (message->size() > kMax) message->resize(kMax);
  }
  h.message_len = static_cast<uint32_t>(message->size());
  h.detail_len = static_cast<uint32_t>(detail->size());
  h.payload_len = h.message_len + h.detail_len;
  return h;
}

absl::Status FrameErrorStatus(absl::StatusCode code, std::string_view message,
                              std::string_view detail) {
  if (code == absl::StatusCode::kOk) code = absl::StatusCode::kUnknown;
  absl::Status s(code, ToAbsl(message));
  if (!detail.empty()) s.SetPayload(kErrorDetailUrl, absl::Cord(ToAbsl(detail)));
  return s;
}

uint32_t FrameTimeoutMs(absl::Time deadline, absl::Time now) {
  if (deadline == absl::InfiniteFuture()) return 0;
  const absl::Duration left = deadline - now;
  if (left <= absl::Milliseconds(1)) return 1;
  constexpr int64_t kMaxMs = std::numeric_limits<uint32_t>::max();
  if (left >= absl::Milliseconds(kMaxMs)) return static_cast<uint32_t>(kMaxMs);
  return static_cast<uint32_t>(absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))));
}

absl::Time FrameDeadline(uint32_t timeout_ms, absl::Time receipt) {
  if (timeout_ms == 0) return absl::InfiniteFuture();
  return receipt + absl::Milliseconds(timeout_ms);
}

}  // namespace basalt
