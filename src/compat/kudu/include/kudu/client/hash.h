#pragma once

// Hash algorithms named by Kudu's bloom filter predicates. Basalt has no bloom filter predicates;
// the enum exists so that code naming it compiles.

namespace kudu {
namespace client {

enum HashAlgorithm { UNKNOWN_HASH = 0, MURMUR_HASH_2 = 1, CITY_HASH = 2, FAST_HASH = 3 };

}  // namespace client
}  // namespace kudu
