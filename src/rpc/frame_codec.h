#pragma once

// The wire format of the frame transport (docs/frame_rpc.md): length-framed request and response
// headers, and the small conversions around them (status <-> header fields, deadline <->
// timeout). Pure functions: no I/O, no clock reads (the caller passes `now`).
//
// Request frame:  16-byte header | body (the serialized request message).
// Response frame: 20-byte header | status message | status detail | body (OK only).
//
// What must stay true: the decoders are the only gate between untrusted bytes and the
// allocations the server and the channel make from the lengths, so every length they return is
// <= kMaxRpcMessageBytes and consistent with the others (message_len + detail_len == payload_len
// for an error, message_len == detail_len == 0 for OK), and a decoded error code is never OK.
//
// Thread-safe (no state).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace basalt {

// "BFP1" as bytes ('B', 'F', 'P', '1'), read as a little-endian u32. It lets a server reject a
// client that speaks another protocol (HTTP, gRPC) on its first 4 bytes.
inline constexpr uint32_t kFrameMagic = 0x31504642;
inline constexpr size_t kFrameRequestHeaderSize = 16;
inline constexpr size_t kFrameResponseHeaderSize = 20;

struct FrameRequestHeader {
  uint32_t body_len = 0;    // <= kMaxRpcMessageBytes.
  uint8_t method = 0;       // Chosen by the server's Register() calls.
  uint32_t timeout_ms = 0;  // 0: no deadline.

  bool operator==(const FrameRequestHeader& other) const = default;
};

struct FrameResponseHeader {
  uint32_t payload_len = 0;  // message_len + detail_len + body length; <= kMaxRpcMessageBytes.
  absl::StatusCode code = absl::StatusCode::kOk;
  uint32_t message_len = 0;  // The status message; 0 for OK.
  uint32_t detail_len = 0;   // The status payload at kErrorDetailUrl; 0 for OK.

  // Length of the body that follows message and detail: payload_len for OK, else 0.
  uint32_t body_len() const { return payload_len - message_len - detail_len; }
  bool operator==(const FrameResponseHeader& other) const = default;
};

// Writes the kFrameRequestHeaderSize bytes of `h` at `dst`.
// REQUIRES: h.body_len <= kMaxRpcMessageBytes.
void EncodeFrameRequestHeader(const FrameRequestHeader& h, char* dst);

// Decodes the request header at the start of `bytes` (bytes after it are ignored). Errors, all
// DATA_LOSS with a message naming the field: fewer than kFrameRequestHeaderSize bytes, a magic
// other than kFrameMagic, nonzero reserved bytes, body_len > kMaxRpcMessageBytes.
absl::StatusOr<FrameRequestHeader> DecodeFrameRequestHeader(std::string_view bytes);

// Writes the kFrameResponseHeaderSize bytes of `h` at `dst`.
// REQUIRES: `h` is one the decoder accepts (see ValidateFrameResponseHeader).
void EncodeFrameResponseHeader(const FrameResponseHeader& h, char* dst);

// Decodes the response header at the start of `bytes` (bytes after it are ignored). A status
// code this build does not know (> 16) decodes as UNKNOWN. Errors, all DATA_LOSS with a message
// naming the field: fewer than kFrameResponseHeaderSize bytes, bad magic, nonzero reserved
// bytes, and every violation ValidateFrameResponseHeader reports.
absl::StatusOr<FrameResponseHeader> DecodeFrameResponseHeader(std::string_view bytes);

// OK if `h` is well formed: payload_len <= kMaxRpcMessageBytes, message_len + detail_len <=
// payload_len, an OK header has no message or detail, an error header has no body. Else
// DATA_LOSS saying which rule is broken.
absl::Status ValidateFrameResponseHeader(const FrameResponseHeader& h);

// The response header for a reply of status `s` whose body is `body_len` bytes (ignored unless
// `s` is OK). Sets `*message` and `*detail` to the bytes to send after the header (the status
// message and its payload at kErrorDetailUrl; empty for OK). A status whose message and detail
// together exceed kMaxRpcMessageBytes loses its detail and has its message cut, so the header is
// always valid. REQUIRES: body_len <= kMaxRpcMessageBytes.
FrameResponseHeader FrameResponseHeaderFor(const absl::Status& s, size_t body_len,
                                           std::string* message, std::string* detail);

// The status a decoded error response stands for: `code` with `message`, and `detail` (if not
// empty) reattached as the payload at kErrorDetailUrl. Never OK: an OK code gives UNKNOWN.
absl::Status FrameErrorStatus(absl::StatusCode code, std::string_view message,
                              std::string_view detail);

// The timeout_ms a client sends for `deadline` at `now`: 0 for absl::InfiniteFuture(), else the
// time left rounded up to a millisecond, at least 1 (a deadline in the past still has one; the
// caller checks for it first) and at most UINT32_MAX (~49 days).
uint32_t FrameTimeoutMs(absl::Time deadline, absl::Time now);

// The deadline a server derives from a request's timeout_ms received at `receipt`:
// absl::InfiniteFuture() for 0, else receipt + timeout_ms.
absl::Time FrameDeadline(uint32_t timeout_ms, absl::Time receipt);

}  // namespace basalt
