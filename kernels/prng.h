// prng.h -- seeded, reproducible, NON-cryptographic random numbers for
// synthetic circuits, test inputs and benchmarks: splitmix64 and
// xoshiro256**. Anything secret (blinding factors, batch-verification
// weights) comes from random.h's getrandom(2) instead.
#pragma once

#include <array>
#include <cstdint>

#include "kernels/bigint.h"

namespace zkfarm {

// splitmix64: turns any 64-bit seed into well-mixed state for xoshiro.
inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// xoshiro256**: a fast, statistically strong, NON-cryptographic PRNG.
class Xoshiro256 {
 public:
  explicit Xoshiro256(std::uint64_t seed) {
    for (auto& word : s_) word = splitmix64(seed);
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, bound), bound > 0 (multiply-shift; bias < bound / 2^64).
  std::uint64_t below(std::uint64_t bound) { return std::uint64_t((u128(next()) * bound) >> 64); }
  // A uniformly random element of F (rejection sampling on the top limb).
  template <class F>
  F field_element() {
    for (;;) {
      typename F::Int v;
      for (auto& limb : v.limbs) limb = next();
      std::size_t top_bits = F::kBits - 64 * (F::N - 1);
      if (top_bits < 64) v.limbs[F::N - 1] &= (std::uint64_t(1) << top_bits) - 1;
      if (auto f = F::from_canonical_checked(v)) return *f;
    }
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<std::uint64_t, 4> s_;
};

}  // namespace zkfarm
