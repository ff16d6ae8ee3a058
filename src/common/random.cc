#include "common/random.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include <glog/logging.h>

#include "absl/strings/numbers.h"

namespace basalt {
namespace {

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

constexpr char kAlphanumeric[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

}  // namespace

Random::Random(uint64_t seed) { Reseed(seed); }

void Random::Reseed(uint64_t seed) {
  seed_ = seed;
  uint64_t sm = seed;
  for (uint64_t& word : s_) word = SplitMix64(&sm);
}

uint64_t Random::Next64() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

uint64_t Random::Uniform(uint64_t n) {
  CHECK_GT(n, 0u);
  // Lemire's multiply-shift with rejection: unbiased, one multiplication in the common case.
  unsigned __int128 m = static_cast<unsigned __int128>(Next64()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(Next64()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

int64_t Random::UniformRange(int64_t lo, int64_t hi) {
  CHECK_LE(lo, hi);
  // Width in unsigned arithmetic so [INT64_MIN, INT64_MAX] does not overflow.
  const uint64_t width = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  const uint64_t offset = width == UINT64_MAX ? Next64() : Uniform(width + 1);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + offset);
}

double Random::NextDouble() { return static_cast<double>(Next64() >> 11) * 0x1.0p-53; }

uint64_t Random::Skewed(int max_log) {
  CHECK_GE(max_log, 0);
  CHECK_LE(max_log, 63);
  const int exponent = static_cast<int>(Uniform(max_log + 1));
  return Uniform(uint64_t{1} << exponent);
}

void Random::Fill(char* dst, size_t n) {
  while (n >= 8) {
    const uint64_t v = Next64();
    std::memcpy(dst, &v, 8);
    dst += 8;
    n -= 8;
  }
  if (n > 0) {
    const uint64_t v = Next64();
    std::memcpy(dst, &v, n);
  }
}

std::string Random::Bytes(size_t n) {
  std::string s(n, '\0');
  Fill(s.data(), n);
  return s;
}

std::string Random::RandomString(size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = kAlphanumeric[Uniform(sizeof(kAlphanumeric) - 1)];
  return s;
}

uint64_t SeedFromEnvOrTime(const char* env_var) {
  const char* value = env_var != nullptr ? std::getenv(env_var) : nullptr;
  uint64_t seed;
  if (value != nullptr && value[0] != '\0') {
    CHECK(absl::SimpleAtoi(value, &seed)) << "environment variable " << env_var << "='" << value
                                          << "' is not an unsigned 64-bit decimal seed";
    LOG(INFO) << "seed=" << seed << " (from " << env_var << ")";
    return seed;
  }
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  uint64_t mix =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()) ^
      (static_cast<uint64_t>(getpid()) << 32);
  seed = SplitMix64(&mix);
  LOG(INFO) << "seed=" << seed << " (replay with " << (env_var ? env_var : "BASALT_TEST_SEED")
            << "=" << seed << ")";
  return seed;
}

}  // namespace basalt
