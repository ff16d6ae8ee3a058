#pragma once

// 128-bit integers for DECIMAL values (the compilers Basalt supports all have __int128).

#define KUDU_INT128_SUPPORTED 1

namespace kudu {

typedef signed __int128 int128_t;
typedef unsigned __int128 uint128_t;

static const uint128_t UINT128_MIN = static_cast<uint128_t>(0);
static const uint128_t UINT128_MAX = ~static_cast<uint128_t>(0);
static const int128_t INT128_MAX = static_cast<int128_t>(UINT128_MAX >> 1);
static const int128_t INT128_MIN = -INT128_MAX - 1;

}  // namespace kudu
