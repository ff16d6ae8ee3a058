#pragma once

// A checksummed envelope for small files replaced whole (WriteFileAtomically): 8 bytes of magic
// naming the kind of file, the masked CRC32C of the payload (4 bytes, little-endian), then the
// payload. Used by the replica file and the remembered answers (docs/tserver.md).

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace basalt {

// The envelope around `payload`. REQUIRES: magic.size() == 8.
std::string SealEnvelope(std::string_view magic, std::string_view payload);

// The payload of envelope `data` (a view into it). DATA_LOSS naming `path` for a short file, a
// wrong magic ("not a <kind> file") or a checksum mismatch.
absl::StatusOr<std::string_view> OpenEnvelope(std::string_view data, std::string_view magic,
                                              std::string_view path, std::string_view kind);

}  // namespace basalt
