// kudu::Status and kudu::Slice.

#include "kudu/util/status.h"

#include <cstdio>
#include <string>

#include "kudu/util/slice.h"

namespace kudu {

struct Status::State {
  Code code;
  int16_t posix_code;
  std::string message;
};

Status::Status(Code code, const Slice& msg, const Slice& msg2, int16_t posix_code)
    : state_(new State{code, posix_code, msg.ToString()}) {
  if (!msg2.empty()) {
    state_->message.append(": ");
    state_->message.append(reinterpret_cast<const char*>(msg2.data()), msg2.size());
  }
}

Status::Status(const Status& s) : state_(s.state_ == nullptr ? nullptr : new State(*s.state_)) {}

Status& Status::operator=(const Status& s) {
  if (this != &s) {
    State* copy = s.state_ == nullptr ? nullptr : new State(*s.state_);
    if (state_ != nullptr) FreeState(state_);
    state_ = copy;
  }
  return *this;
}

Status& Status::operator=(Status&& s) noexcept {
  if (this != &s) {
    if (state_ != nullptr) FreeState(state_);
    state_ = s.state_;
    s.state_ = nullptr;
  }
  return *this;
}

void Status::FreeState(State* state) { delete state; }

Status::Code Status::code() const { return state_ == nullptr ? kOk : state_->code; }

std::string Status::CodeAsString() const {
  // The names Kudu prints (programs match on them).
  switch (code()) {
    case kOk:
      return "OK";
    case kNotFound:
      return "Not found";
    case kCorruption:
      return "Corruption";
    case kNotSupported:
      return "Not implemented";
    case kInvalidArgument:
      return "Invalid argument";
    case kIOError:
      return "IO error";
    case kAlreadyPresent:
      return "Already present";
    case kRuntimeError:
      return "Runtime error";
    case kNetworkError:
      return "Network error";
    case kIllegalState:
      return "Illegal state";
    case kNotAuthorized:
      return "Not authorized";
    case kAborted:
      return "Aborted";
    case kRemoteError:
      return "Remote error";
    case kServiceUnavailable:
      return "Service unavailable";
    case kTimedOut:
      return "Timed out";
    case kUninitialized:
      return "Uninitialized";
    case kConfigurationError:
      return "Configuration error";
    case kIncomplete:
      return "Incomplete";
    case kEndOfFile:
      return "End of file";
    case kImmutable:
      return "Immutable";
  }
  return "Unknown error";
}

std::string Status::ToString() const {
  std::string out = CodeAsString();
  if (state_ == nullptr) return out;
  out.append(": ");
  out.append(state_->message);
  if (state_->posix_code != -1) {
    out.append(" (error ").append(std::to_string(state_->posix_code)).append(")");
  }
  return out;
}

Slice Status::message() const {
  if (state_ == nullptr) return Slice();
  return Slice(state_->message);
}

int16_t Status::posix_code() const { return state_ == nullptr ? 0 : state_->posix_code; }

Status Status::CloneAndPrepend(const Slice& msg) const {
  if (ok()) return *this;
  return Status(state_->code, msg, Slice(state_->message), state_->posix_code);
}

Status Status::CloneAndAppend(const Slice& msg) const {
  if (ok()) return *this;
  return Status(state_->code, Slice(state_->message), msg, state_->posix_code);
}

size_t Status::memory_footprint_excluding_this() const {
  return state_ == nullptr ? 0 : sizeof(State) + state_->message.capacity();
}

size_t Status::memory_footprint_including_this() const {
  return sizeof(*this) + memory_footprint_excluding_this();
}

Status Slice::check_size(size_t expected_size) const {
  if (size_ == expected_size) return Status::OK();
  return Status::Corruption("unexpected Slice size", "expected " + std::to_string(expected_size) +
                                                         " bytes, got " + std::to_string(size_));
}

std::string Slice::ToString() const {
  return std::string(reinterpret_cast<const char*>(data_), size_);
}

std::string Slice::ToDebugString(size_t max_len) const {
  const size_t n = (max_len == 0 || max_len > size_) ? size_ : max_len;
  std::string out;
  out.reserve(n + 16);
  for (size_t i = 0; i < n; i++) {
    const unsigned char c = data_[i];
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[5];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out.append(buf);
    }
  }
  if (n < size_) out.append("...<").append(std::to_string(size_)).append(" bytes total>");
  return out;
}

bool IsAllZeros(const Slice& s) {
  for (size_t i = 0; i < s.size(); i++) {
    if (s.data()[i] != 0) return false;
  }
  return true;
}

}  // namespace kudu
