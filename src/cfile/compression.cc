#include "cfile/compression.h"

#include <lz4.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <limits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

namespace {

bool ValidateCodecName(const char* flagname, const std::string& value) {
  if (value.empty()) return true;
  auto type = basalt::ParseCompressionType(value);
  if (type.ok() && *type != basalt::CompressionType::kDefault) return true;
  LOG(ERROR) << "--" << flagname << " must be empty or one of none, snappy, lz4, zlib, zstd; got '"
             << value << "'";
  return false;
}

}  // namespace

DEFINE_string(cfile_default_compression_codec, "",
              "Names the codec (none, snappy, lz4, zlib, zstd) used for columns whose compression "
              "is DEFAULT. Empty selects each type's default: LZ4 for strings and binary, none for "
              "other types.");
DEFINE_validator(cfile_default_compression_codec, &ValidateCodecName);

namespace basalt {
namespace {

// Zstd level 3 is the library's default: about 2x the ratio of LZ4 at a third of its encode speed.
constexpr int kZstdLevel = 3;

absl::Status CorruptInput(CompressionType type, std::string_view what) {
  return absl::DataLossError(
      StrCat("corrupt ", CompressionTypeName(type), " compressed data: ", what));
}

absl::Status CheckLength(CompressionType type, size_t actual, size_t expected) {
  if (actual == expected) return absl::OkStatus();
  return CorruptInput(type,
                      absl::StrFormat("decompressed to %d bytes, expected %d", actual, expected));
}

class NoneCodec final : public CompressionCodec {
 public:
  CompressionType type() const override { return CompressionType::kNone; }
  absl::Status Compress(std::string_view in, std::string* out) const override {
    out->assign(in.data(), in.size());
    return absl::OkStatus();
  }
  absl::Status Uncompress(std::string_view in, char* out, size_t len) const override {
    BASALT_RETURN_IF_ERROR(CheckLength(type(), in.size(), len));
    if (len > 0) std::memcpy(out, in.data(), len);
    return absl::OkStatus();
  }
  size_t MaxCompressedLength(size_t in_len) const override { return in_len; }
};

class SnappyCodec final : public CompressionCodec {
 public:
  CompressionType type() const override { return CompressionType::kSnappy; }
  absl::Status Compress(std::string_view in, std::string* out) const override {
    out->resize(MaxCompressedLength(in.size()));
    size_t n = 0;
    snappy::RawCompress(in.data(), in.size(), out->data(), &n);
    out->resize(n);
    return absl::OkStatus();
  }
  absl::Status Uncompress(std::string_view in, char* out, size_t len) const override {
    size_t declared = 0;
    if (!snappy::GetUncompressedLength(in.data(), in.size(), &declared)) {
      return CorruptInput(type(), "bad length header");
    }
    BASALT_RETURN_IF_ERROR(CheckLength(type(), declared, len));
    // RawUncompress validates the input against the declared length and never writes past it.
    if (!snappy::RawUncompress(in.data(), in.size(), out)) {
      return CorruptInput(type(), "invalid compressed stream");
    }
    return absl::OkStatus();
  }
  size_t MaxCompressedLength(size_t in_len) const override {
    return snappy::MaxCompressedLength(in_len);
  }
};

class Lz4Codec final : public CompressionCodec {
 public:
  CompressionType type() const override { return CompressionType::kLz4; }
  absl::Status Compress(std::string_view in, std::string* out) const override {
    if (in.size() > LZ4_MAX_INPUT_SIZE) {
      return absl::InvalidArgumentError(StrCat("LZ4 input of ", in.size(), " bytes is too large"));
    }
    out->resize(MaxCompressedLength(in.size()));
    const int n = LZ4_compress_default(in.data(), out->data(), static_cast<int>(in.size()),
                                       static_cast<int>(out->size()));
    if (n <= 0) return absl::InternalError("LZ4_compress_default failed");
    out->resize(n);
    return absl::OkStatus();
  }
  absl::Status Uncompress(std::string_view in, char* out, size_t len) const override {
    constexpr size_t kMaxInt = std::numeric_limits<int>::max();
    if (in.size() > kMaxInt || len > kMaxInt) return CorruptInput(type(), "sizes exceed 2 GiB");
    const int n =
        LZ4_decompress_safe(in.data(), out, static_cast<int>(in.size()), static_cast<int>(len));
    if (n < 0) return CorruptInput(type(), "invalid compressed stream");
    return CheckLength(type(), static_cast<size_t>(n), len);
  }
  size_t MaxCompressedLength(size_t in_len) const override {
    return in_len > LZ4_MAX_INPUT_SIZE ? 0 : LZ4_compressBound(static_cast<int>(in_len));
  }
};

class ZlibCodec final : public CompressionCodec {
 public:
  CompressionType type() const override { return CompressionType::kZlib; }
  absl::Status Compress(std::string_view in, std::string* out) const override {
    if (in.size() > std::numeric_limits<uLong>::max() / 2) {
      return absl::InvalidArgumentError("zlib input too large");
    }
    uLongf n = MaxCompressedLength(in.size());
    out->resize(n);
    const int rc =
        compress2(reinterpret_cast<Bytef*>(out->data()), &n,
                  reinterpret_cast<const Bytef*>(in.data()), in.size(), Z_DEFAULT_COMPRESSION);
    if (rc != Z_OK) return absl::InternalError(StrCat("zlib compress2 failed: ", rc));
    out->resize(n);
    return absl::OkStatus();
  }
  absl::Status Uncompress(std::string_view in, char* out, size_t len) const override;
  size_t MaxCompressedLength(size_t in_len) const override { return compressBound(in_len); }
};

absl::Status ZlibCodec::Uncompress(std::string_view in, char* out, size_t len) const {
  if (in.size() > std::numeric_limits<uInt>::max() || len > std::numeric_limits<uInt>::max()) {
    return CorruptInput(type(), "sizes exceed 4 GiB");
  }
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (inflateInit(&zs) != Z_OK) return absl::InternalError("zlib inflateInit failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  // zlib does not accept a null output pointer even for zero bytes.
  char dummy;
  zs.next_out = reinterpret_cast<Bytef*>(len > 0 ? out : &dummy);
  zs.avail_out = static_cast<uInt>(len);
  const int rc = inflate(&zs, Z_FINISH);
  const size_t produced = zs.total_out;
  const uInt left_in = zs.avail_in;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    // Z_BUF_ERROR with no output space left means the stream is longer than `len`.
    if (rc == Z_BUF_ERROR && produced == len) {
      return CorruptInput(type(), absl::StrFormat("decompresses to more than %d bytes", len));
    }
    return CorruptInput(type(), absl::StrFormat("inflate returned %d (%s)", rc,
                                                zs.msg != nullptr ? zs.msg : "truncated"));
  }
  if (left_in != 0) return CorruptInput(type(), "trailing bytes after the stream");
  return CheckLength(type(), produced, len);
}

class ZstdCodec final : public CompressionCodec {
 public:
  CompressionType type() const override { return CompressionType::kZstd; }
  absl::Status Compress(std::string_view in, std::string* out) const override {
    out->resize(MaxCompressedLength(in.size()));
    const size_t n = ZSTD_compress(out->data(), out->size(), in.data(), in.size(), kZstdLevel);
    if (ZSTD_isError(n)) {
      return absl::InternalError(StrCat("ZSTD_compress failed: ", ZSTD_getErrorName(n)));
    }
    out->resize(n);
    return absl::OkStatus();
  }
  absl::Status Uncompress(std::string_view in, char* out, size_t len) const override {
    const unsigned long long declared = ZSTD_getFrameContentSize(in.data(), in.size());
    if (declared == ZSTD_CONTENTSIZE_ERROR || declared == ZSTD_CONTENTSIZE_UNKNOWN) {
      return CorruptInput(type(), "bad frame header");
    }
    BASALT_RETURN_IF_ERROR(CheckLength(type(), declared, len));
    char dummy;
    // ZSTD_decompress fails (rather than ignoring them) if bytes follow the frame.
    const size_t n = ZSTD_decompress(len > 0 ? out : &dummy, len, in.data(), in.size());
    if (ZSTD_isError(n)) return CorruptInput(type(), ZSTD_getErrorName(n));
    return CheckLength(type(), n, len);
  }
  size_t MaxCompressedLength(size_t in_len) const override { return ZSTD_compressBound(in_len); }
};

}  // namespace

absl::StatusOr<const CompressionCodec*> GetCompressionCodec(CompressionType type) {
  static const NoneCodec kNone;
  static const SnappyCodec kSnappy;
  static const Lz4Codec kLz4;
  static const ZlibCodec kZlib;
  static const ZstdCodec kZstd;
  switch (type) {
    case CompressionType::kNone:
      return &kNone;
    case CompressionType::kSnappy:
      return &kSnappy;
    case CompressionType::kLz4:
      return &kLz4;
    case CompressionType::kZlib:
      return &kZlib;
    case CompressionType::kZstd:
      return &kZstd;
    case CompressionType::kDefault:
      break;
  }
  return absl::InvalidArgumentError(StrCat("no codec for compression type ", static_cast<int>(type),
                                           " (", CompressionTypeName(type), ")"));
}

CompressionType ResolveCompression(DataType type, CompressionType requested) {
  if (requested != CompressionType::kDefault) return requested;
  const std::string flag = FLAGS_cfile_default_compression_codec;
  if (!flag.empty()) {
    auto parsed = ParseCompressionType(flag);
    if (parsed.ok() && *parsed != CompressionType::kDefault) return *parsed;
    LOG_FIRST_N(WARNING, 1) << "ignoring invalid --cfile_default_compression_codec=" << flag;
  }
  switch (type) {
    case DataType::kString:
    case DataType::kBinary:
    case DataType::kVarchar:
      return CompressionType::kLz4;
    default:
      return CompressionType::kNone;
  }
}

absl::StatusOr<CompressionType> ParseCompressionType(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(ToAbsl(name));
  for (int i = 0; i <= static_cast<int>(CompressionType::kZstd); ++i) {
    const auto type = static_cast<CompressionType>(i);
    if (lower == absl::AsciiStrToLower(ToAbsl(CompressionTypeName(type)))) return type;
  }
  return absl::InvalidArgumentError(StrCat("unknown compression codec '", name, "'"));
}

}  // namespace basalt
