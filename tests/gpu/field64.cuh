// field64.cuh -- the alternative limb layout, for measurement only: N
// 64-bit limbs and textbook CIOS in plain C++ (the compiler lowers each
// 64x64 product to four 32x32 IMADs and the carries to compares/selects).
// tests/gpu/gpu_benchmark compares its throughput with DevFp (fp.cuh) on the
// device; fp.cuh's file comment records the outcome. Same values and bytes as
// Fp<Params> (R = 2^(64N)).
#pragma once

#include <cstdint>

#include "kernels/cuda/fp.cuh"

namespace zkfarm::cuda::testing {

ZKFARM_HD std::uint64_t mul_hi64(std::uint64_t a, std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  return std::uint64_t((unsigned __int128)a * b >> 64);
#endif
}

template <class Params>
struct DevFp64 {
  static constexpr int N = int(Params::kLimbs);
  std::uint64_t limb[N];

  ZKFARM_HD DevFp64 operator*(const DevFp64& o) const {
    const auto& c = field_constants<Params>();
    std::uint64_t p[N];
    ZKFARM_DEVICE_UNROLL
    for (int j = 0; j < N; ++j) p[j] = std::uint64_t(c.modulus[2 * j]) | std::uint64_t(c.modulus[2 * j + 1]) << 32;
    const std::uint64_t inv = Fp<Params>::kInv;
    std::uint64_t t[N + 2];
    ZKFARM_DEVICE_UNROLL
    for (int j = 0; j < N + 2; ++j) t[j] = 0;
    ZKFARM_DEVICE_UNROLL
    for (int i = 0; i < N; ++i) {
      std::uint64_t carry = 0;
      ZKFARM_DEVICE_UNROLL
      for (int j = 0; j < N; ++j) {  // t += a * b_i
        std::uint64_t lo = limb[j] * o.limb[i], hi = mul_hi64(limb[j], o.limb[i]);
        lo += carry;
        hi += lo < carry;
        t[j] += lo;
        hi += t[j] < lo;
        carry = hi;
      }
      t[N] += carry;
      t[N + 1] = t[N] < carry;
      const std::uint64_t m = t[0] * inv;
      std::uint64_t lo = m * p[0], hi = mul_hi64(m, p[0]);
      std::uint64_t sum = t[0] + lo;
      carry = hi + (sum < lo);
      ZKFARM_DEVICE_UNROLL
      for (int j = 1; j < N; ++j) {  // (t + m p) / 2^64
        lo = m * p[j];
        hi = mul_hi64(m, p[j]);
        lo += carry;
        hi += lo < carry;
        t[j - 1] = t[j] + lo;
        hi += t[j - 1] < lo;
        carry = hi;
      }
      t[N - 1] = t[N] + carry;
      t[N] = t[N + 1] + (t[N - 1] < carry);
    }
    // t < 2p: subtract p once if t >= p.
    std::uint64_t s[N], borrow = 0;
    ZKFARM_DEVICE_UNROLL
    for (int j = 0; j < N; ++j) {
      const std::uint64_t d = t[j] - p[j] - borrow;
      borrow = (t[j] < p[j]) || (t[j] - p[j] < borrow);
      s[j] = d;
    }
    const bool keep = borrow && !t[N];
    DevFp64 r;
    ZKFARM_DEVICE_UNROLL
    for (int j = 0; j < N; ++j) r.limb[j] = keep ? t[j] : s[j];
    return r;
  }
  ZKFARM_HD DevFp64 operator+(const DevFp64& o) const {  // only used to keep results alive
    DevFp64 r;
    ZKFARM_DEVICE_UNROLL
    for (int j = 0; j < N; ++j) r.limb[j] = limb[j] ^ o.limb[j];
    return r;
  }
  ZKFARM_HD bool is_zero() const {
    std::uint64_t acc = 0;
    ZKFARM_DEVICE_UNROLL
    for (int j = 0; j < N; ++j) acc |= limb[j];
    return acc == 0;
  }
};

}  // namespace zkfarm::cuda::testing
