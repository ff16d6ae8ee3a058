#pragma once

// Helpers shared by the common tests (header-only: every .cc here goes into basalt_common).

#include <cstdint>
#include <cstring>

#include "common/datum.h"

namespace basalt::testing_util {

// A FLOAT / DOUBLE Datum with exactly these IEEE bits (NaN payloads, -0.0, ...).
inline Datum FloatBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return Datum::Float(f);
}

inline Datum DoubleBits(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return Datum::Double(d);
}

}  // namespace basalt::testing_util
