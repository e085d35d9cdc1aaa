// glv.h -- a scalar split in two halves by the curve's endomorphism (GLV:
// Gallant, Lambert and Vanstone, CRYPTO 2001).
//
// BN254 and BLS12-381 have j-invariant 0: with beta a cube root of unity in
// Fq, phi(x, y) = (beta x, y) maps the curve (and its twist) to itself, and
// on the order-r subgroup it is multiplication by lambda, a cube root of
// unity mod r. So k P = k1 P + k2 phi(P) whenever k = k1 + lambda k2 (mod
// r), and a k below r has such a split with |k1|, |k2| < 2^128: twice the
// points at half the bits. Pippenger's bucket filling costs the same either
// way (points x windows), but the bucket sums, 2^c additions a window, are
// paid for half as many windows, which is what a small MSM spends most of
// its time on (msm.h chooses by its cost model).
//
// The split (Babai's rounding): (a1, b1) and (a2, b2) are short vectors of
// the lattice {(a, b) : a + b lambda = 0 mod r} with a1 b2 - a2 b1 = r; for
// c1 = round(b2 k / r) and c2 = round(-b1 k / r),
//   k1 = k - c1 a1 - c2 a2,   k2 = -c1 b1 - c2 b2.
// The divisions by r are multiplications by g1 = round(2^256 b2 / r) and
// g2 = round(-2^256 b1 / r) and a shift by 256 bits (off by at most one,
// which adds at most |a1| + |a2| to |k1| and |b1| + |b2| to |k2|). The
// constants of each curve are in bn254.h and bls12_381.h; glv_test checks
// them against the curves' generators and the bound on random scalars.
//
// Thread safety: pure functions. Not constant-time (as msm.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "kernels/bigint.h"

namespace zkfarm {

// A signed 256-bit constant: magnitude and sign.
struct GlvSigned {
  BigInt<4> magnitude;
  bool negative = false;
};

// One curve's lattice basis and rounding constants (see the top of this
// file); every magnitude below 2^130.
struct GlvBasis {
  BigInt<4> lambda;  // the eigenvalue of phi on the order-r subgroup
  GlvSigned a1, b1, a2, b2;
  GlvSigned g1, g2;
  // Upper bound on the bits of |k1| and |k2| for any k < r.
  std::size_t half_bits = 0;
};

// k = k1 + lambda k2 (mod r), |k1| and |k2| below 2^half_bits; the
// magnitudes, and whether each is negative.
struct GlvSplit {
  BigInt<4> k1, k2;
  bool k1_negative = false, k2_negative = false;
};

namespace glv_detail {

using W = BigInt<4>;  // an integer mod 2^256, read as two's complement

// Low 256 bits of a * b.
inline W mul_low(const W& a, const W& b) {
  W out;
  for (std::size_t i = 0; i < 4; ++i) {
    std::uint64_t carry = 0;
    for (std::size_t j = 0; i + j < 4; ++j) {
      const u128 t = u128(a.limbs[i]) * b.limbs[j] + out.limbs[i + j] + carry;
      out.limbs[i + j] = std::uint64_t(t);
      carry = std::uint64_t(t >> 64);
    }
  }
  return out;
}

// round(a * b / 2^256) for a, b < 2^256 (the product's bits 256.. after
// adding 2^255).
inline W mul_round_high(const W& a, const W& b) {
  std::array<std::uint64_t, 8> wide{};
  for (std::size_t i = 0; i < 4; ++i) {
    std::uint64_t carry = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      const u128 t = u128(a.limbs[i]) * b.limbs[j] + wide[i + j] + carry;
      wide[i + j] = std::uint64_t(t);
      carry = std::uint64_t(t >> 64);
    }
    wide[i + 4] = carry;
  }
  std::uint64_t carry = 0;
  wide[3] = bigint_detail::addc(wide[3], std::uint64_t(1) << 63, carry);
  for (std::size_t i = 4; i < 8; ++i) wide[i] = bigint_detail::addc(wide[i], 0, carry);
  return W{{wide[4], wide[5], wide[6], wide[7]}};
}

inline W negate(const W& x) {
  W out;
  out.sub_in_place(x);  // 0 - x mod 2^256
  return out;
}

inline bool is_negative(const W& x) { return (x.limbs[3] >> 63) != 0; }

// x + sign * (m * s), mod 2^256; m signed (magnitude, sign), s >= 0.
inline W add_product(W x, const GlvSigned& m, const W& s, bool negate_product) {
  W p = mul_low(m.magnitude, s);
  if (m.negative != negate_product) p = negate(p);
  x.add_in_place(p);
  return x;
}

}  // namespace glv_detail

// Splits k (canonical, below r) by the basis: k = k1 + lambda k2 (mod r).
inline GlvSplit glv_split(const BigInt<4>& k, const GlvBasis& basis) {
  using namespace glv_detail;
  // c1 = round(k g1 / 2^256), c2 = round(k g2 / 2^256), as magnitudes; the
  // rounding is towards the nearer integer for either sign.
  const W c1 = mul_round_high(k, basis.g1.magnitude), c2 = mul_round_high(k, basis.g2.magnitude);
  const GlvSigned sc1{c1, basis.g1.negative}, sc2{c2, basis.g2.negative};
  // k1 = k - c1 a1 - c2 a2; k2 = -c1 b1 - c2 b2 (mod 2^256, then signed).
  auto term = [](W acc, const GlvSigned& c, const GlvSigned& v) {
    return add_product(acc, GlvSigned{v.magnitude, v.negative != c.negative}, c.magnitude, true);
  };
  W k1 = term(term(k, sc1, basis.a1), sc2, basis.a2);
  W k2 = term(term(W{}, sc1, basis.b1), sc2, basis.b2);
  GlvSplit out;
  out.k1_negative = is_negative(k1);
  out.k2_negative = is_negative(k2);
  out.k1 = out.k1_negative ? negate(k1) : k1;
  out.k2 = out.k2_negative ? negate(k2) : k2;
  return out;
}

// beta x for x in Fq or Fq2 (componentwise) and beta in Fq.
template <class Field, class Base>
constexpr Field glv_scale(const Field& x, const Base& beta) {
  if constexpr (requires { x.c0; }) return Field{x.c0 * beta, x.c1 * beta};
  else return x * beta;
}

}  // namespace zkfarm
