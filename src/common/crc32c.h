#pragma once

// CRC32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78), the checksum used by every
// Basalt on-disk and wire format that carries one (column file blocks, WAL entries, metadata).
//
// Values are the standard CRC-32C of iSCSI (RFC 3720) and ext4: Value("123456789") ==
// 0xE3069283. The implementation uses the SSE4.2 CRC32 instruction when the CPU running the
// binary supports it (checked once at runtime with CPUID) and a portable slice-by-8 table
// otherwise; both give identical results.
//
// All functions are pure and thread-safe.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace basalt::crc32c {

// Returns the CRC32C of the concatenation of A and data[0, n), where `init_crc` is the CRC32C of
// some string A. Extend(0, data, n) == Value(data, n).
uint32_t Extend(uint32_t init_crc, const char* data, size_t n);

// Returns the CRC32C of data[0, n).
inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view data) { return Extend(0, data.data(), data.size()); }

// A CRC stored next to the data it covers is masked: the CRC of a string that contains embedded
// CRCs is otherwise prone to degenerate cases (LevelDB's argument). Mask is a bijection; Unmask
// inverts it. Every format stores Mask(crc) and compares Unmask(stored) with the computed CRC.
inline constexpr uint32_t kMaskDelta = 0xa282ead8u;

inline uint32_t Mask(uint32_t crc) {
  // Rotate right by 15 bits and add a constant.
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}

inline uint32_t Unmask(uint32_t masked_crc) {
  uint32_t rot = masked_crc - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

namespace internal {

// The two implementations behind Extend, exposed so tests can compare them.
uint32_t ExtendSoftware(uint32_t init_crc, const char* data, size_t n);
// REQUIRES: HardwareAvailable().
uint32_t ExtendHardware(uint32_t init_crc, const char* data, size_t n);
// Returns true if this CPU supports SSE4.2 (and the build targets x86-64).
bool HardwareAvailable();

}  // namespace internal

}  // namespace basalt::crc32c
