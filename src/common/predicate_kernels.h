#pragma once

// Typed kernels behind ColumnPredicate::EvaluateVector. Internal to src/common: callers use
// ColumnPredicate.
//
// Every kernel takes a column vector of `n` cells, an optional null bitmap (bit set = NULL;
// nullptr = no NULLs) and a selection bitmap of BitmapSize(n) bytes, and clears the selection
// bit of each row that is NULL or does not match. Bits already clear stay clear and bits at
// positions >= n are never touched. NULL cells may hold garbage; the fixed-width kernels read
// them (harmlessly) and the string kernels never dereference them.
//
// Fixed-width kernels compare *ordered keys*: a signed integer per cell whose natural order is
// TypeInfo::Compare's order (the identity for integers, the IEEE total order mapped onto int32 /
// int64 for FLOAT / DOUBLE, uint8_t for BOOL). They are templates compiled for several
// instruction sets and picked at run time by CPU (portable, AVX2, AVX-512), so the project never
// needs -march=native.
//
// Thread-safe (no state apart from the testing override of the instruction set).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace basalt::predicate_internal {

// Maps a cell value to its ordered key (see the file comment). T is the cell's C++ type:
// uint8_t for BOOL, int8_t..int64_t, absl::int128, float, double.
template <typename T>
struct OrderedKey {
  using Type = T;
  static Type Of(T v) { return v; }
  static T FromKey(Type k) { return k; }
};
template <>
struct OrderedKey<float> {
  using Type = int32_t;
  // Negative floats (sign bit set) get their magnitude bits inverted, so larger magnitudes sort
  // lower; the mapping is its own inverse.
  static Type Of(float f) {
    int32_t b = std::bit_cast<int32_t>(f);
    return b ^ ((b >> 31) & 0x7fffffff);
  }
  static float FromKey(Type k) { return std::bit_cast<float>(k ^ ((k >> 31) & 0x7fffffff)); }
};
template <>
struct OrderedKey<double> {
  using Type = int64_t;
  static Type Of(double d) {
    int64_t b = std::bit_cast<int64_t>(d);
    return b ^ ((b >> 63) & 0x7fffffffffffffffLL);
  }
  static double FromKey(Type k) {
    return std::bit_cast<double>(k ^ ((k >> 63) & 0x7fffffffffffffffLL));
  }
};
template <typename T>
using OrderedKeyType = typename OrderedKey<T>::Type;

// Keeps rows whose key is in [lo, hi] (both inclusive). REQUIRES: lo <= hi.
template <typename T>
void RangeVector(const T* cells, const uint8_t* null_bitmap, size_t n, OrderedKeyType<T> lo,
                 OrderedKeyType<T> hi, uint8_t* selection);
// Keeps rows whose key is one of `sorted_keys` (ascending, unique; num_keys >= 1).
template <typename T>
void InListVector(const T* cells, const uint8_t* null_bitmap, size_t n,
                  const OrderedKeyType<T>* sorted_keys, size_t num_keys, uint8_t* selection);

// Keeps rows with *lower <= value < *upper_exclusive (bytewise); a nullptr bound is unbounded.
void StringRangeVector(const std::string_view* cells, const uint8_t* null_bitmap, size_t n,
                       const std::string_view* lower, const std::string_view* upper_exclusive,
                       uint8_t* selection);
// Keeps rows whose value is one of `sorted` (ascending bytewise, unique; num >= 1).
void StringInListVector(const std::string_view* cells, const uint8_t* null_bitmap, size_t n,
                        const std::string_view* sorted, size_t num, uint8_t* selection);

// Keeps only NULL rows / only non-NULL rows / no rows.
void IsNullVector(const uint8_t* null_bitmap, size_t n, uint8_t* selection);
void IsNotNullVector(const uint8_t* null_bitmap, size_t n, uint8_t* selection);
void ClearVector(size_t n, uint8_t* selection);

// Instruction sets the fixed-width kernels are compiled for.
enum class KernelIsa : uint8_t { kPortable = 0, kAvx2 = 1, kAvx512 = 2 };
// The best set this CPU supports.
KernelIsa BestSupportedKernelIsa();
// Makes the kernels use `isa` (REQUIRES: isa <= BestSupportedKernelIsa()) so tests cover every
// variant; pass BestSupportedKernelIsa() to restore the default.
void SetKernelIsaForTesting(KernelIsa isa);

}  // namespace basalt::predicate_internal
