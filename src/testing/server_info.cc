#include "testing/server_info.h"

#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <variant>

#include "common/env.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace basalt {
namespace {

using JsonValue = std::variant<std::string, int64_t>;

// A parser for one flat JSON object whose values are strings (without escapes other than \" and
// \\) or integers: all the info file ever holds. Not a general JSON parser.
class FlatJsonParser {
 public:
  explicit FlatJsonParser(std::string_view s) : s_(s) {}

  absl::StatusOr<std::map<std::string, JsonValue>> Parse() {
    std::map<std::string, JsonValue> out;
    BASALT_RETURN_IF_ERROR(Expect('{'));
    SkipSpace();
    if (Peek() == '}') {
      ++pos_;
    } else {
      while (true) {
        BASALT_ASSIGN_OR_RETURN(std::string key, ParseString());
        BASALT_RETURN_IF_ERROR(Expect(':'));
        BASALT_ASSIGN_OR_RETURN(JsonValue value, ParseValue());
        if (!out.emplace(key, std::move(value)).second) {
          return Error(StrCat("repeated key \"", key, "\""));
        }
        SkipSpace();
        if (Peek() == ',') {
          ++pos_;
          continue;
        }
        BASALT_RETURN_IF_ERROR(Expect('}'));
        break;
      }
    }
    SkipSpace();
    if (pos_ != s_.size()) return Error("trailing bytes after the object");
    return out;
  }

 private:
  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  absl::Status Error(std::string_view what) const {
    return absl::DataLossError(StrCat("malformed server info at byte ", pos_, ": ", what));
  }
  absl::Status Expect(char c) {
    SkipSpace();
    if (Peek() != c) return Error(StrCat("expected '", std::string(1, c), "'"));
    ++pos_;
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> ParseString() {
    BASALT_RETURN_IF_ERROR(Expect('"'));
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\') {
        if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\\')) {
          return Error("unsupported escape in string");
        }
        c = s_[pos_++];
      } else if (static_cast<unsigned char>(c) < 0x20) {
        return Error("control character in string");
      }
      out.push_back(c);
    }
    if (pos_ >= s_.size()) return Error("unterminated string");
    ++pos_;
    return out;
  }
  absl::StatusOr<JsonValue> ParseValue() {
    SkipSpace();
    if (Peek() == '"') {
      BASALT_ASSIGN_OR_RETURN(std::string s, ParseString());
      return JsonValue(std::move(s));
    }
    bool negative = Peek() == '-';
    if (negative) ++pos_;
    if (!std::isdigit(static_cast<unsigned char>(Peek()))) return Error("expected a value");
    uint64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(Peek()))) {
      v = v * 10 + (s_[pos_++] - '0');
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Error("integer out of range");
      }
    }
    if (Peek() == '.' || Peek() == 'e' || Peek() == 'E') return Error("expected an integer");
    return JsonValue(negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v));
  }

  std::string_view s_;
  size_t pos_ = 0;
};

template <typename T>
absl::StatusOr<T> GetField(const std::map<std::string, JsonValue>& fields, const char* key) {
  auto it = fields.find(key);
  if (it == fields.end()) {
    return absl::DataLossError(StrCat("malformed server info: missing \"", key, "\""));
  }
  if (!std::holds_alternative<T>(it->second)) {
    return absl::DataLossError(StrCat("malformed server info: \"", key, "\" has the wrong type"));
  }
  return std::get<T>(it->second);
}

absl::StatusOr<int> GetPort(const std::map<std::string, JsonValue>& fields, const char* key) {
  BASALT_ASSIGN_OR_RETURN(int64_t port, GetField<int64_t>(fields, key));
  if (port < 0 || port > 65535) {
    return absl::DataLossError(
        StrCat("malformed server info: \"", key, "\" = ", port, " is not a port"));
  }
  return static_cast<int>(port);
}

}  // namespace

absl::StatusOr<ServerInfo> ParseServerInfo(std::string_view json) {
  BASALT_ASSIGN_OR_RETURN(auto fields, FlatJsonParser(json).Parse());
  ServerInfo info;
  BASALT_ASSIGN_OR_RETURN(info.uuid, GetField<std::string>(fields, "uuid"));
  if (info.uuid.empty()) return absl::DataLossError("malformed server info: empty \"uuid\"");
  BASALT_ASSIGN_OR_RETURN(info.rpc_port, GetPort(fields, "rpc_port"));
  BASALT_ASSIGN_OR_RETURN(info.http_port, GetPort(fields, "http_port"));
  BASALT_ASSIGN_OR_RETURN(info.pid, GetField<int64_t>(fields, "pid"));
  if (info.pid <= 0) return absl::DataLossError("malformed server info: \"pid\" must be > 0");
  return info;
}

absl::StatusOr<ServerInfo> ReadServerInfo(Env* env, const std::string& path) {
  std::string data;
  BASALT_RETURN_IF_ERROR(ReadFileToString(env, path, &data));
  auto info = ParseServerInfo(data);
  if (!info.ok()) return PrependToStatus(info.status(), path);
  return info;
}

}  // namespace basalt
