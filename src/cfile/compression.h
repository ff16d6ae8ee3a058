#pragma once

// Compression codecs for column file pages: NONE, SNAPPY, LZ4, ZLIB and ZSTD.
//
// A codec turns a byte string into its raw compressed form and back. There is no framing: the
// compressed bytes are exactly what the library produces (snappy raw format, LZ4 block format,
// zlib stream (RFC 1950), zstd frame), and the caller stores the uncompressed length next to them
// (the cfile page header does) because Uncompress needs it. docs/cfile_blocks.md, "Codecs".
//
// Compressed bytes come from disk, so Uncompress treats them as untrusted: corrupt input, input
// that decodes to a different length, or trailing garbage returns DATA_LOSS, never crashes and
// never writes past `out + uncompressed_len`.

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/schema.h"
#include "common/types.h"

namespace basalt {

// One compression algorithm. Instances are stateless singletons returned by GetCompressionCodec.
// Thread-safe.
class CompressionCodec {
 public:
  virtual ~CompressionCodec() = default;

  virtual CompressionType type() const = 0;

  // Replaces `*out` with the compressed form of `in`. Never fails for valid input; returns
  // INVALID_ARGUMENT if `in` exceeds the codec's limit (about 2 GiB for LZ4 and snappy-sized
  // inputs; column pages are far smaller) or INTERNAL if the library reports an error.
  virtual absl::Status Compress(std::string_view in, std::string* out) const = 0;

  // Decompresses `in` into exactly `uncompressed_len` bytes at `out`.
  // REQUIRES: `out` has room for `uncompressed_len` bytes.
  // Returns DATA_LOSS if `in` is corrupt, decodes to a length other than `uncompressed_len`, or
  // has bytes after the end of the compressed data. On error the contents of out[0,
  // uncompressed_len) are unspecified; nothing outside that range is written.
  virtual absl::Status Uncompress(std::string_view in, char* out,
                                  size_t uncompressed_len) const = 0;

  // Returns an upper bound of the compressed size of any input of `in_len` bytes.
  virtual size_t MaxCompressedLength(size_t in_len) const = 0;
};

// Returns the codec for `type`, a process-lifetime singleton (never null, never to be deleted).
// INVALID_ARGUMENT for kDefault (resolve it first with ResolveCompression) or an unknown value
// (e.g. read from a corrupt file: the caller turns it into DATA_LOSS).
absl::StatusOr<const CompressionCodec*> GetCompressionCodec(CompressionType type);

// Returns the codec a column uses: `requested` unless it is kDefault. For kDefault:
//  - if --cfile_default_compression_codec is set (none, snappy, lz4, zlib, zstd), that codec;
//  - otherwise the type's default: LZ4 for STRING, BINARY and VARCHAR (dictionary pages and the
//    PLAIN fallback of DICT are text that LZ4 shrinks 2-4x and decodes at GB/s), NONE for every
//    other type (BIT_PACKED and RLE are already dense, BIT_SHUFFLE pages carry LZ4 inside, so a
//    second codec costs decode time for little gain).
// Never returns kDefault.
CompressionType ResolveCompression(DataType type, CompressionType requested);

// Parses a codec name, case-insensitively: "default", "none", "snappy", "lz4", "zlib", "zstd".
// INVALID_ARGUMENT for anything else.
absl::StatusOr<CompressionType> ParseCompressionType(std::string_view name);

}  // namespace basalt
