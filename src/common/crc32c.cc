#include "common/crc32c.h"

#include <array>
#include <cstring>

#include <glog/logging.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace basalt::crc32c {
namespace internal {
namespace {

constexpr uint32_t kReflectedPoly = 0x82f63b78u;

// kTables[0] is the classic byte-at-a-time table; kTables[k][b] is the CRC contribution of byte b
// followed by k zero bytes, which lets the slice-by-8 loop fold 8 input bytes per step.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? kReflectedPoly : 0);
    t[0][i] = crc;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (int k = 1; k < 8; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  }
  return t;
}

constexpr Tables kTables = MakeTables();
static_assert(kTables[0][1] == 0xf26b8303u, "CRC32C table generation is broken");

inline uint32_t Load32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

}  // namespace

uint32_t ExtendSoftware(uint32_t init_crc, const char* data, size_t n) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  const unsigned char* end = p + n;
  uint32_t crc = init_crc ^ 0xffffffffu;
  // Byte-wise until p is 4-aligned so the 8-byte loads below do not straddle as often.
  while (p != end && (reinterpret_cast<uintptr_t>(p) & 3) != 0) {
    crc = kTables[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  }
  while (end - p >= 8) {
    uint32_t lo = Load32(p) ^ crc;
    uint32_t hi = Load32(p + 4);
    crc = kTables[7][lo & 0xff] ^ kTables[6][(lo >> 8) & 0xff] ^ kTables[5][(lo >> 16) & 0xff] ^
          kTables[4][lo >> 24] ^ kTables[3][hi & 0xff] ^ kTables[2][(hi >> 8) & 0xff] ^
          kTables[1][(hi >> 16) & 0xff] ^ kTables[0][hi >> 24];
    p += 8;
  }
  while (p != end) crc = kTables[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

#if defined(__x86_64__)

__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t init_crc, const char* data,
                                                          size_t n) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  const unsigned char* end = p + n;
  uint64_t crc = init_crc ^ 0xffffffffu;
  while (p != end && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    crc = _mm_crc32_u8(static_cast<uint32_t>(crc), *p++);
  }
  while (end - p >= 8) {
    uint64_t v;
    std::memcpy(&v, p, sizeof(v));
    crc = _mm_crc32_u64(crc, v);
    p += 8;
  }
  while (p != end) crc = _mm_crc32_u8(static_cast<uint32_t>(crc), *p++);
  return static_cast<uint32_t>(crc) ^ 0xffffffffu;
}

bool HardwareAvailable() {
  static const bool available = __builtin_cpu_supports("sse4.2");
  return available;
}

#else  // !defined(__x86_64__)

uint32_t ExtendHardware(uint32_t init_crc, const char* data, size_t n) {
  LOG(FATAL) << "crc32c::internal::ExtendHardware called on a build without SSE4.2 support";
  return 0;
}

bool HardwareAvailable() { return false; }

#endif

}  // namespace internal

namespace {

using ExtendFn = uint32_t (*)(uint32_t, const char*, size_t);

ExtendFn ChooseExtend() {
  return internal::HardwareAvailable() ? internal::ExtendHardware : internal::ExtendSoftware;
}

}  // namespace

uint32_t Extend(uint32_t init_crc, const char* data, size_t n) {
  // Chosen once; a function-local static is initialized thread-safely.
  static const ExtendFn fn = ChooseExtend();
  return fn(init_crc, data, n);
}

}  // namespace basalt::crc32c
