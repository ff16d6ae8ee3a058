#include "common/envelope.h"

#include <glog/logging.h>

#include "common/coding.h"
#include "common/crc32c.h"
#include "common/strings.h"

namespace basalt {

std::string SealEnvelope(std::string_view magic, std::string_view payload) {
  CHECK_EQ(magic.size(), 8u);
  std::string out(magic);
  PutFixed32(&out, crc32c::Mask(crc32c::Value(payload.data(), payload.size())));
  out.append(payload);
  return out;
}

absl::StatusOr<std::string_view> OpenEnvelope(std::string_view data, std::string_view magic,
                                              std::string_view path, std::string_view kind) {
  const size_t header = magic.size() + 4;
  if (data.size() < header || data.substr(0, magic.size()) != magic) {
    return absl::DataLossError(ToAbsl(StrCat(path, ": not a ", kind, " file (bad magic or size)")));
  }
  const std::string_view payload = data.substr(header);
  const uint32_t stored = crc32c::Unmask(DecodeFixed32(data.data() + magic.size()));
  if (stored != crc32c::Value(payload.data(), payload.size())) {
    return absl::DataLossError(ToAbsl(StrCat(path, ": checksum mismatch")));
  }
  return payload;
}

}  // namespace basalt
