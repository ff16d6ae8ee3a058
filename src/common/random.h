#pragma once

// A small, fast, seedable pseudo-random generator for tests, simulations and jitter.
//
// Random is xoshiro256** (Blackman and Vigna) with its 256-bit state expanded from a 64-bit seed
// by splitmix64, so any seed (including 0) gives a well-mixed state and the same seed gives the
// same sequence on every platform. It is not cryptographically secure: never use it for keys,
// tokens or anything an adversary may predict.
//
// Randomized tests obtain their seed from SeedFromEnvOrTime(), which logs it, and can be replayed
// by exporting BASALT_TEST_SEED=<seed>.

#include <cstddef>
#include <cstdint>
#include <string>

namespace basalt {

// Deterministic PRNG. Not thread-safe; give each thread its own instance (seeded differently).
class Random {
 public:
  explicit Random(uint64_t seed);

  // Returns the seed this generator was constructed (or last Reseed()ed) with.
  uint64_t seed() const { return seed_; }
  void Reseed(uint64_t seed);

  // Returns 64 uniformly distributed bits.
  uint64_t Next64();
  // Returns 32 uniformly distributed bits.
  uint32_t Next32() { return static_cast<uint32_t>(Next64() >> 32); }

  // Returns a value uniformly distributed in [0, n), without modulo bias.
  // REQUIRES: n > 0.
  uint64_t Uniform(uint64_t n);
  // Returns a value uniformly distributed in the closed range [lo, hi].
  // REQUIRES: lo <= hi.
  int64_t UniformRange(int64_t lo, int64_t hi);
  // Returns true with probability 1/n.
  // REQUIRES: n > 0.
  bool OneIn(uint64_t n) { return Uniform(n) == 0; }
  // Returns a double uniformly distributed in [0, 1), with 53 bits of randomness.
  double NextDouble();
  // Picks a "skewed" value: a base-2 exponent uniform in [0, max_log], then a value uniform in
  // [0, 2^exponent). Small values are much more likely, which suits sizes in tests.
  // REQUIRES: max_log <= 63.
  uint64_t Skewed(int max_log);

  // Fills dst[0, n) with random bytes.
  void Fill(char* dst, size_t n);
  // Returns n random bytes (any byte value, including NUL).
  std::string Bytes(size_t n);
  // Returns a random string of n printable ASCII characters ('a'..'z', 'A'..'Z', '0'..'9').
  std::string RandomString(size_t n);

 private:
  uint64_t seed_;
  uint64_t s_[4];
};

// Returns a seed for a randomized test: the value of environment variable `env_var` if it is set
// and parses as an unsigned 64-bit decimal, otherwise one derived from the current time and the
// process id. Logs "seed=<value>" (and how to replay it) with LOG(INFO), which goes to stderr in
// tests. A set but unparsable variable is a test setup error and aborts with CHECK.
uint64_t SeedFromEnvOrTime(const char* env_var = "BASALT_TEST_SEED");

}  // namespace basalt
