// fixed_base_kernels.cuh -- the per-thread bodies of the GPU fixed-base
// multiplication (fixed_base.h; driver: fixed_base.cuh).
//
// Three steps, each a kernel over 128-thread blocks:
//  1. table (thread per entry): (j + 1) * window_base[w] by double-and-add
//     in XYZZ (W * 2^(c-1) entries, ~45 curve operations each; ~1 ms);
//  2. accumulate (thread per scalar): canonical scalar (one Montgomery
//     multiplication by 1), signed c-bit digits d_w in [-2^(c-1), 2^(c-1)]
//     (the top window has a free high bit, so no carry leaves it), and
//     acc += sign(d_w) * table[w][|d_w| - 1] with mixed XYZZ additions
//     (8M + 2S each) -- no doublings;
//  3. to affine (thread per run of points strided by the thread count, so
//     every access is coalesced): a prefix product of the ZZZ's, one
//     inversion by Fermat (p - 2 exponent), then backwards 1/ZZZ_i, 1/Z_i =
//     ZZ_i / ZZZ_i, x = X / Z^2, y = Y / Z^3: ~7 multiplications per point
//     plus the shared inversion. Identities come out as (0, 0).
// Per BLS12-381 G1 point at c = 16: 16 * 10 + 7 + 570 / 64 ~ 176
// multiplications, ~5e4 32x32 products; at the H200's ~6.8e12 products/s
// that is ~7 ns per point (a PoRep-scale key, ~4.3e8 G1 points, ~3 s).
//
// Bodies are __host__ __device__ with explicit indices like msm_kernels.cuh,
// so fixed_base_emulation_test.cc runs them on the CPU (this header needs no
// CUDA toolkit).
#pragma once

#include <cstdint>

#include "kernels/cuda/curve.cuh"

namespace zkfarm::cuda {

namespace fixed_base_kernels {

constexpr unsigned kThreads = 128;

// inverse(): fp.cuh.
using ::zkfarm::cuda::inverse;

// Entry `index` of the XYZZ table: (j + 1) * window_bases[w] with w = index
// >> entries_log, j = index & (2^entries_log - 1).
template <class Pts>
ZKFARM_HD typename Pts::Xyzz table_entry(std::uint64_t index, unsigned entries_log,
                                         const typename Pts::Affine* window_bases) {
  using Xyzz = typename Pts::Xyzz;
  const std::uint64_t w = index >> entries_log;
  const std::uint32_t j = std::uint32_t(index & ((std::uint64_t(1) << entries_log) - 1));
  return Xyzz::from_affine(window_bases[w]).mul_small(j + 1);
}

// [scalar] G from the table (see the file comment, step 2).
template <class Pts, class FrDev>
ZKFARM_HD typename Pts::Xyzz fixed_base_point(const FrDev& scalar, const typename Pts::Affine* table,
                                              unsigned windows, unsigned window_bits) {
  using Xyzz = typename Pts::Xyzz;
  using Affine = typename Pts::Affine;
  const FrDev k = scalar.from_montgomery();
  const std::uint32_t half = 1u << (window_bits - 1);
  const std::uint32_t mask = (1u << window_bits) - 1;
  Xyzz acc = Xyzz::identity();
  std::uint32_t carry = 0;
  for (unsigned w = 0; w < windows; ++w) {
    const unsigned pos = w * window_bits, limb = pos / 32, shift = pos % 32;
    // Select limbs with constant indices (a dynamic index would put k in
    // local memory); limbs past the top read as 0.
    std::uint32_t lo = 0, hi = 0;
ZKFARM_DEVICE_UNROLL
    for (int l = 0; l < FrDev::kLimbs; ++l) {
      if (unsigned(l) == limb) lo = k.limb[l];
      if (unsigned(l) == limb + 1) hi = k.limb[l];
    }
    std::uint32_t bits = lo >> shift;
    if (shift + window_bits > 32) bits |= hi << (32 - shift);  // shift > 12 here, so no shift by 32
    bits = (bits & mask) + carry;
    const bool negative = bits > half;
    const std::uint32_t magnitude = negative ? (mask + 1) - bits : bits;
    carry = negative ? 1u : 0u;
    if (magnitude != 0) {
      const Affine& entry = table[std::uint64_t(w) * half + magnitude - 1];
      if (!entry.is_identity()) acc.add_affine(entry.x, entry.y.cneg(negative));
    }
  }
  return acc;
}

// Step 3 for thread t of `threads`: points t, t + threads, ... of in[0..n).
template <class Pts>
ZKFARM_HD void to_affine_run(std::uint64_t t, std::uint64_t threads, std::uint64_t n, const typename Pts::Xyzz* in,
                             typename Pts::Field* prefix, typename Pts::Affine* out) {
  using Field = typename Pts::Field;
  if (t >= n) return;
  Field product = Field::one();
  for (std::uint64_t i = t; i < n; i += threads) {
    if (in[i].is_identity()) continue;
    prefix[i] = product;
    product *= in[i].ZZZ;
  }
  Field inv = inverse(product);  // (prod of all ZZZ)^-1
  const std::uint64_t last = t + (n - 1 - t) / threads * threads;
  for (std::uint64_t i = last + threads; i > t;) {
    i -= threads;
    const auto& p = in[i];
    if (p.is_identity()) {
      out[i].x = Field::zero();
      out[i].y = Field::zero();
      continue;
    }
    const Field zzz_inv = inv * prefix[i];
    inv *= p.ZZZ;
    const Field z_inv = p.ZZ * zzz_inv;  // ZZ / ZZZ = 1 / Z
    out[i].x = p.X * z_inv.sqr();
    out[i].y = p.Y * zzz_inv;
  }
}

}  // namespace fixed_base_kernels

}  // namespace zkfarm::cuda
