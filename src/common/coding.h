#pragma once

// Fixed-width and varint encodings used by every on-disk and wire format.
//
// Fixed-width little-endian values are the default for our formats (the machines we run on are
// little-endian, so these compile to plain loads and stores). Big-endian helpers exist for
// memcmp-ordered keys. Varint decoding is bounds-checked: it never reads past the input and
// reports truncation or overlong encodings to the caller, because its input may be corrupt.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace basalt {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "Basalt assumes a little-endian host");

// Maximum encoded lengths of varints.
inline constexpr int kMaxVarint32Length = 5;
inline constexpr int kMaxVarint64Length = 10;

// The T stored at `p`, which need not be aligned for T (a cell in a row or a page).
template <typename T>
inline T UnalignedLoad(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

inline void EncodeFixed16(char* dst, uint16_t v) { std::memcpy(dst, &v, sizeof(v)); }
inline void EncodeFixed32(char* dst, uint32_t v) { std::memcpy(dst, &v, sizeof(v)); }
inline void EncodeFixed64(char* dst, uint64_t v) { std::memcpy(dst, &v, sizeof(v)); }

inline uint16_t DecodeFixed16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Big-endian stores, for memcmp-ordered encodings.
inline void EncodeBigEndian16(char* dst, uint16_t v) { EncodeFixed16(dst, __builtin_bswap16(v)); }
inline void EncodeBigEndian32(char* dst, uint32_t v) { EncodeFixed32(dst, __builtin_bswap32(v)); }
inline void EncodeBigEndian64(char* dst, uint64_t v) { EncodeFixed64(dst, __builtin_bswap64(v)); }
inline uint16_t DecodeBigEndian16(const char* p) { return __builtin_bswap16(DecodeFixed16(p)); }
inline uint32_t DecodeBigEndian32(const char* p) { return __builtin_bswap32(DecodeFixed32(p)); }
inline uint64_t DecodeBigEndian64(const char* p) { return __builtin_bswap64(DecodeFixed64(p)); }

void PutFixed32(std::string* dst, uint32_t v);
void PutFixed64(std::string* dst, uint64_t v);
void PutVarint32(std::string* dst, uint32_t v);
void PutVarint64(std::string* dst, uint64_t v);
// Appends varint32(value.size()) followed by the bytes of `value`.
void PutLengthPrefixed(std::string* dst, std::string_view value);

// Writes the varint encoding of `v` at `dst` and returns a pointer just past it.
// REQUIRES: dst has room for kMaxVarint32Length / kMaxVarint64Length bytes.
char* EncodeVarint32(char* dst, uint32_t v);
char* EncodeVarint64(char* dst, uint64_t v);
int VarintLength(uint64_t v);

// Decoders that consume from the front of `*input`. Each returns false, leaving `*input`
// unspecified, when the input is truncated or the varint is longer than its type allows.
bool GetFixed32(std::string_view* input, uint32_t* value);
bool GetFixed64(std::string_view* input, uint64_t* value);
bool GetVarint32(std::string_view* input, uint32_t* value);
bool GetVarint64(std::string_view* input, uint64_t* value);
bool GetLengthPrefixed(std::string_view* input, std::string_view* result);

// Pointer-range forms: decode from [p, limit); return the position after the value, or nullptr
// when the input is truncated or malformed.
const char* GetVarint32Ptr(const char* p, const char* limit, uint32_t* value);
const char* GetVarint64Ptr(const char* p, const char* limit, uint64_t* value);

}  // namespace basalt
