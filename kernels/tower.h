// tower.h -- the extension-field tower of pairing-friendly curves:
//   Fq2  = Fq[u]  / (u^2 + 1)
//   Fq6  = Fq2[v] / (v^3 - xi)
//   Fq12 = Fq6[w] / (w^2 - v)          (so w^6 = xi)
//
// One generic implementation, parametrized by a TowerConfig struct that
// names the base field and the cubic non-residue xi = kXiC0 + kXiC1 * u
// (BN254: 9 + u, BLS12-381: 1 + u). This is the tower snarkjs/ffjavascript,
// arkworks and noble use for both curves, so coefficients line up 1:1.
//
// The Frobenius coefficients gamma[k][e] = xi^(e (p^k - 1) / 6) are computed
// by the compiler from the modulus (no hand-typed tables); see
// kTowerConstants below.
//
// Fq2 has the same layout as two Fq (c0 then c1): .zkey G2 coordinates are
// stored c0 || c1 in Montgomery form and are used in place.
//
// Thread safety: values are plain data; all functions are pure.
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>

#include "kernels/bigint.h"
#include "kernels/field.h"

namespace zkfarm {

// a * k for a small constant k, by double-and-add (cheaper than a field
// multiplication for the constants used here: 2, 3, 9, ...).
template <class F>
constexpr F mul_by_small(const F& a, std::uint64_t k) {
  F result = F::zero();
  F addend = a;
  while (k) {
    if (k & 1) result += addend;
    k >>= 1;
    if (k) addend = addend.dbl();
  }
  return result;
}

// a / 2 in a prime field without a multiplication: halve the Montgomery
// representation, adding p first when it is odd (halving aR halves a).
template <class Fp>
constexpr Fp half_of(const Fp& a) {
  Fp r = a;
  // p < 2^(64N - 1) (checked by Fp), so adding it to a value below p cannot carry out.
  if (r.mont.limbs[0] & 1) r.mont.add_in_place(Fp::kModulus);
  r.mont.shr1();
  return r;
}

// ---------------------------------------------------------------------------
// Fq2 = Fq[u] / (u^2 + 1). Requires p = 3 mod 4 (so -1 is a non-residue).

template <class Cfg>
struct Fq2 {
  using Fq = typename Cfg::Fq;
  using Base = Fq;
  static constexpr std::size_t kBytes = 2 * Fq::kBytes;
  static_assert((Fq::kModulus.limbs[0] & 3) == 3, "u^2 = -1 needs p = 3 mod 4");

  Fq c0{};
  Fq c1{};

  static constexpr Fq2 zero() { return Fq2(); }
  static constexpr Fq2 one() { return Fq2{Fq::one(), Fq::zero()}; }
  static constexpr Fq2 from_u64(std::uint64_t a) { return Fq2{Fq::from_u64(a), Fq::zero()}; }
  static constexpr Fq2 from_base(const Fq& a) { return Fq2{a, Fq::zero()}; }

  constexpr bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
  constexpr bool is_one() const { return c0.is_one() && c1.is_zero(); }
  constexpr bool operator==(const Fq2& o) const { return c0 == o.c0 && c1 == o.c1; }
  constexpr bool operator!=(const Fq2& o) const { return !(*this == o); }

  constexpr Fq2 operator+(const Fq2& o) const { return Fq2{c0 + o.c0, c1 + o.c1}; }
  constexpr Fq2& operator+=(const Fq2& o) {
    c0 += o.c0;
    c1 += o.c1;
    return *this;
  }
  constexpr Fq2 operator-(const Fq2& o) const { return Fq2{c0 - o.c0, c1 - o.c1}; }
  constexpr Fq2& operator-=(const Fq2& o) {
    c0 -= o.c0;
    c1 -= o.c1;
    return *this;
  }
  constexpr Fq2 operator-() const { return Fq2{-c0, -c1}; }
  constexpr Fq2 dbl() const { return Fq2{c0.dbl(), c1.dbl()}; }
  constexpr Fq2 half() const { return Fq2{half_of(c0), half_of(c1)}; }

  // Karatsuba: 3 base multiplications.
  constexpr Fq2 operator*(const Fq2& o) const {
    Fq t0 = c0 * o.c0;
    Fq t1 = c1 * o.c1;
    return Fq2{t0 - t1, (c0 + c1) * (o.c0 + o.c1) - t0 - t1};
  }
  constexpr Fq2& operator*=(const Fq2& o) { return *this = *this * o; }
  // (c0 + c1 u)^2 = (c0 + c1)(c0 - c1) + 2 c0 c1 u: 2 base multiplications.
  constexpr Fq2 square() const {
    Fq t = c0 * c1;
    return Fq2{(c0 + c1) * (c0 - c1), t.dbl()};
  }
  constexpr Fq2 mul_by_base(const Fq& a) const { return Fq2{c0 * a, c1 * a}; }

  // Multiplies by the cubic non-residue xi = kXiC0 + kXiC1 u of the tower.
  constexpr Fq2 mul_by_nonresidue() const {
    Fq a0 = mul_by_small(c0, Cfg::kXiC0);
    Fq a1 = mul_by_small(c1, Cfg::kXiC0);
    if constexpr (Cfg::kXiC1 == 1) {
      return Fq2{a0 - c1, a1 + c0};
    } else {
      return Fq2{a0 - mul_by_small(c1, Cfg::kXiC1), a1 + mul_by_small(c0, Cfg::kXiC1)};
    }
  }
  static constexpr Fq2 nonresidue() { return Fq2{Fq::from_u64(Cfg::kXiC0), Fq::from_u64(Cfg::kXiC1)}; }

  // Conjugate c0 - c1 u, which is also the p-power Frobenius map.
  constexpr Fq2 conjugate() const { return Fq2{c0, -c1}; }
  // x -> x^(p^k).
  constexpr Fq2 frobenius_map(unsigned k) const { return (k & 1) ? conjugate() : *this; }
  // c0^2 + c1^2, the norm down to Fq.
  constexpr Fq norm() const { return c0.square() + c1.square(); }

  // Multiplicative inverse; the inverse of zero is zero.
  constexpr Fq2 inverse() const {
    Fq inv_norm = norm().inverse();
    return Fq2{c0 * inv_norm, -(c1 * inv_norm)};
  }

  template <std::size_t M>
  constexpr Fq2 pow(const BigInt<M>& e) const {
    Fq2 r = one();
    for (std::size_t i = e.num_bits(); i-- > 0;) {
      r = r.square();
      if (e.bit(i)) r *= *this;
    }
    return r;
  }
  constexpr Fq2 pow(std::uint64_t e) const {
    BigInt<1> b;
    b.limbs[0] = e;
    return pow(b);
  }

  // 1 for a non-zero square, -1 for a non-square, 0 for zero (an element of
  // Fq2 is a square iff its norm is a square in Fq).
  constexpr int legendre() const { return norm().legendre(); }

  // A square root, or nullopt if there is none. Which of the two roots is
  // returned is unspecified; callers that need a particular one (point
  // decompression) pick it by sign.
  //
  // Method: for a = a0 + a1 u with a1 != 0, a root x0 + x1 u satisfies
  // x0^2 - x1^2 = a0, 2 x0 x1 = a1, x0^2 + x1^2 = sqrt(norm(a)); so
  // x0^2 = (a0 +- sqrt(norm)) / 2 and x1 = a1 / (2 x0).
  std::optional<Fq2> sqrt() const {
    if (c1.is_zero()) {
      if (auto r = c0.sqrt()) return Fq2{*r, Fq::zero()};
      // c0 is a non-square in Fq, so -c0 is a square: (t u)^2 = -t^2.
      if (auto r = (-c0).sqrt()) return Fq2{Fq::zero(), *r};
      return std::nullopt;
    }
    auto norm_root = norm().sqrt();
    if (!norm_root) return std::nullopt;
    Fq delta = half_of(c0 + *norm_root);
    auto x0 = delta.sqrt();
    if (!x0) {
      delta = half_of(c0 - *norm_root);
      x0 = delta.sqrt();
      if (!x0) return std::nullopt;
    }
    Fq x1 = c1 * (x0->dbl()).inverse();
    Fq2 root{*x0, x1};
    if (root.square() != *this) return std::nullopt;
    return root;
  }

  // The zcash/Filecoin "sign" of an Fq2 element: compare c1 first, then c0
  // if c1 is zero. True if the element is the larger of {y, -y}.
  bool is_lexicographically_largest() const {
    if (!c1.is_zero()) return c1.is_lexicographically_largest();
    return c0.is_lexicographically_largest();
  }

  // Byte forms, c0 then c1, each as Fq's (canonical or Montgomery) little-
  // endian bytes. The readers return nullopt if a coordinate is >= p.
  void to_le_bytes(std::uint8_t* out) const {
    c0.to_le_bytes(out);
    c1.to_le_bytes(out + Fq::kBytes);
  }
  static std::optional<Fq2> from_le_bytes(const std::uint8_t* in) {
    auto a = Fq::from_le_bytes(in);
    auto b = Fq::from_le_bytes(in + Fq::kBytes);
    if (!a || !b) return std::nullopt;
    return Fq2{*a, *b};
  }
  void to_mont_le_bytes(std::uint8_t* out) const {
    c0.to_mont_le_bytes(out);
    c1.to_mont_le_bytes(out + Fq::kBytes);
  }
  static std::optional<Fq2> from_mont_le_bytes(const std::uint8_t* in) {
    auto a = Fq::from_mont_le_bytes(in);
    auto b = Fq::from_mont_le_bytes(in + Fq::kBytes);
    if (!a || !b) return std::nullopt;
    return Fq2{*a, *b};
  }
};

// ---------------------------------------------------------------------------
// Frobenius coefficients, computed at compile time from the modulus.
//
// In Fq12 an element is sum_e a_e w^e (e = 0..5, a_e in Fq2) and
// (a w^e)^(p^k) = a^(p^k) w^e * xi^(e (p^k - 1) / 6); gamma[k][e] is that
// last factor. gamma[1][e] = g^e with g = xi^((p-1)/6); since Frobenius on
// Fq2 has order 2, gamma[2][e] = g^e * conj(g^e) and gamma[3][e] =
// gamma[2][e] * gamma[1][e].

template <class Cfg>
struct TowerConstants {
  Fq2<Cfg> gamma[4][6];  // row 0 unused (the identity map)
};

template <class Cfg>
constexpr TowerConstants<Cfg> compute_tower_constants() {
  using Fq = typename Cfg::Fq;
  typename Fq::Int exponent = Fq::kModulus;
  typename Fq::Int one_int;
  one_int.limbs[0] = 1;
  exponent.sub_in_place(one_int);
  if (exponent.div_small(6) != 0) throw "p - 1 must be divisible by 6";
  TowerConstants<Cfg> t;
  const Fq2<Cfg> g = Fq2<Cfg>::nonresidue().pow(exponent);
  Fq2<Cfg> g_e = Fq2<Cfg>::one();
  for (int e = 0; e < 6; ++e) {
    t.gamma[0][e] = Fq2<Cfg>::one();
    t.gamma[1][e] = g_e;
    t.gamma[2][e] = g_e * g_e.conjugate();
    t.gamma[3][e] = t.gamma[2][e] * g_e;
    g_e *= g;
  }
  return t;
}

template <class Cfg>
inline constexpr TowerConstants<Cfg> kTowerConstants = compute_tower_constants<Cfg>();

// ---------------------------------------------------------------------------
// Fq6 = Fq2[v] / (v^3 - xi).

template <class Cfg>
struct Fq6 {
  using F2 = Fq2<Cfg>;
  F2 c0{}, c1{}, c2{};

  static constexpr Fq6 zero() { return Fq6(); }
  static constexpr Fq6 one() { return Fq6{F2::one(), F2::zero(), F2::zero()}; }

  constexpr bool is_zero() const { return c0.is_zero() && c1.is_zero() && c2.is_zero(); }
  constexpr bool is_one() const { return c0.is_one() && c1.is_zero() && c2.is_zero(); }
  constexpr bool operator==(const Fq6& o) const { return c0 == o.c0 && c1 == o.c1 && c2 == o.c2; }
  constexpr bool operator!=(const Fq6& o) const { return !(*this == o); }

  constexpr Fq6 operator+(const Fq6& o) const { return Fq6{c0 + o.c0, c1 + o.c1, c2 + o.c2}; }
  constexpr Fq6& operator+=(const Fq6& o) { return *this = *this + o; }
  constexpr Fq6 operator-(const Fq6& o) const { return Fq6{c0 - o.c0, c1 - o.c1, c2 - o.c2}; }
  constexpr Fq6& operator-=(const Fq6& o) { return *this = *this - o; }
  constexpr Fq6 operator-() const { return Fq6{-c0, -c1, -c2}; }
  constexpr Fq6 dbl() const { return Fq6{c0.dbl(), c1.dbl(), c2.dbl()}; }

  // Karatsuba-style: 6 Fq2 multiplications.
  constexpr Fq6 operator*(const Fq6& o) const {
    F2 t0 = c0 * o.c0, t1 = c1 * o.c1, t2 = c2 * o.c2;
    return Fq6{t0 + ((c1 + c2) * (o.c1 + o.c2) - t1 - t2).mul_by_nonresidue(),
               (c0 + c1) * (o.c0 + o.c1) - t0 - t1 + t2.mul_by_nonresidue(),
               (c0 + c2) * (o.c0 + o.c2) - t0 - t2 + t1};
  }
  constexpr Fq6& operator*=(const Fq6& o) { return *this = *this * o; }

  // Chung-Hasan squaring (SQR2): 2 multiplications and 3 squarings in Fq2.
  constexpr Fq6 square() const {
    F2 s0 = c0.square();
    F2 s1 = (c0 * c1).dbl();
    F2 s2 = (c0 - c1 + c2).square();
    F2 s3 = (c1 * c2).dbl();
    F2 s4 = c2.square();
    return Fq6{s0 + s3.mul_by_nonresidue(), s1 + s4.mul_by_nonresidue(), s1 + s2 + s3 - s0 - s4};
  }

  constexpr Fq6 mul_by_fq2(const F2& a) const { return Fq6{c0 * a, c1 * a, c2 * a}; }
  // Multiplies by v: (c0, c1, c2) -> (xi c2, c0, c1).
  constexpr Fq6 mul_by_nonresidue() const { return Fq6{c2.mul_by_nonresidue(), c0, c1}; }
  // Multiplies by b0 + b1 v (5 Fq2 multiplications).
  constexpr Fq6 mul_by_01(const F2& b0, const F2& b1) const {
    F2 t0 = c0 * b0, t1 = c1 * b1;
    return Fq6{((c1 + c2) * b1 - t1).mul_by_nonresidue() + t0,
               (c0 + c1) * (b0 + b1) - t0 - t1,
               (c0 + c2) * b0 - t0 + t1};
  }
  // Multiplies by b1 v (3 Fq2 multiplications).
  constexpr Fq6 mul_by_1(const F2& b1) const {
    return Fq6{(c2 * b1).mul_by_nonresidue(), c0 * b1, c1 * b1};
  }

  // Multiplicative inverse; the inverse of zero is zero.
  constexpr Fq6 inverse() const {
    F2 a = c0.square() - (c1 * c2).mul_by_nonresidue();
    F2 b = c2.square().mul_by_nonresidue() - c0 * c1;
    F2 c = c1.square() - c0 * c2;
    F2 f = c0 * a + (c2 * b + c1 * c).mul_by_nonresidue();
    F2 f_inv = f.inverse();
    return Fq6{a * f_inv, b * f_inv, c * f_inv};
  }

  template <std::size_t M>
  constexpr Fq6 pow(const BigInt<M>& e) const {
    Fq6 r = one();
    for (std::size_t i = e.num_bits(); i-- > 0;) {
      r = r.square();
      if (e.bit(i)) r *= *this;
    }
    return r;
  }

  // x -> x^(p^k): v^(p^k) = v * xi^((p^k - 1)/3) = v * gamma[k][2].
  constexpr Fq6 frobenius_map(unsigned k) const {
    Fq6 r = *this;
    for (; k >= 3; k -= 3) r = r.frobenius_step(3);
    return k ? r.frobenius_step(k) : r;
  }

 private:
  constexpr Fq6 frobenius_step(unsigned k) const {
    const auto& g = kTowerConstants<Cfg>.gamma[k];
    return Fq6{c0.frobenius_map(k), c1.frobenius_map(k) * g[2], c2.frobenius_map(k) * g[4]};
  }
};

// ---------------------------------------------------------------------------
// Fq12 = Fq6[w] / (w^2 - v).

template <class Cfg>
struct Fq12 {
  using F2 = Fq2<Cfg>;
  using F6 = Fq6<Cfg>;
  F6 c0{}, c1{};

  static constexpr Fq12 zero() { return Fq12(); }
  static constexpr Fq12 one() { return Fq12{F6::one(), F6::zero()}; }

  constexpr bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
  constexpr bool is_one() const { return c0.is_one() && c1.is_zero(); }
  constexpr bool operator==(const Fq12& o) const { return c0 == o.c0 && c1 == o.c1; }
  constexpr bool operator!=(const Fq12& o) const { return !(*this == o); }

  constexpr Fq12 operator+(const Fq12& o) const { return Fq12{c0 + o.c0, c1 + o.c1}; }
  constexpr Fq12& operator+=(const Fq12& o) { return *this = *this + o; }
  constexpr Fq12 operator-(const Fq12& o) const { return Fq12{c0 - o.c0, c1 - o.c1}; }
  constexpr Fq12& operator-=(const Fq12& o) { return *this = *this - o; }
  constexpr Fq12 operator-() const { return Fq12{-c0, -c1}; }
  constexpr Fq12 dbl() const { return Fq12{c0.dbl(), c1.dbl()}; }

  // Karatsuba: 3 Fq6 multiplications.
  constexpr Fq12 operator*(const Fq12& o) const {
    F6 t0 = c0 * o.c0, t1 = c1 * o.c1;
    return Fq12{t0 + t1.mul_by_nonresidue(), (c0 + c1) * (o.c0 + o.c1) - t0 - t1};
  }
  constexpr Fq12& operator*=(const Fq12& o) { return *this = *this * o; }

  // Complex squaring: (a + b w)^2 = ((a + b)(a + v b) - ab - v ab) + 2ab w.
  constexpr Fq12 square() const {
    F6 ab = c0 * c1;
    F6 c0_new = (c0 + c1) * (c0 + c1.mul_by_nonresidue()) - ab - ab.mul_by_nonresidue();
    return Fq12{c0_new, ab.dbl()};
  }

  // Conjugate c0 - c1 w = x^(p^6); the inverse for elements of the
  // cyclotomic subgroup (everything after the easy part of the final
  // exponentiation).
  constexpr Fq12 conjugate() const { return Fq12{c0, -c1}; }

  // Multiplicative inverse; the inverse of zero is zero.
  constexpr Fq12 inverse() const {
    F6 t = (c0.square() - c1.square().mul_by_nonresidue()).inverse();
    return Fq12{c0 * t, -(c1 * t)};
  }

  template <std::size_t M>
  constexpr Fq12 pow(const BigInt<M>& e) const {
    Fq12 r = one();
    for (std::size_t i = e.num_bits(); i-- > 0;) {
      r = r.square();
      if (e.bit(i)) r *= *this;
    }
    return r;
  }
  constexpr Fq12 pow(std::uint64_t e) const {
    BigInt<1> b;
    b.limbs[0] = e;
    return pow(b);
  }

  // x -> x^(p^k), any k.
  constexpr Fq12 frobenius_map(unsigned k) const {
    k %= 12;
    Fq12 r = *this;
    if (k >= 6) {
      r = r.conjugate();
      k -= 6;
    }
    for (; k >= 3; k -= 3) r = r.frobenius_step(3);
    return k ? r.frobenius_step(k) : r;
  }

  // Sparse multiplication by a line value l0 + l3 w + l4 v w (the shape of
  // a line function for a D-type twist; basis 1, v, v^2, w, vw, v^2 w is
  // numbered 0..5). 13 Fq2 multiplications instead of 18.
  constexpr Fq12 mul_by_034(const F2& l0, const F2& l3, const F2& l4) const {
    F6 a = c0.mul_by_fq2(l0);
    F6 b = c1.mul_by_01(l3, l4);
    F6 sum = (c0 + c1).mul_by_01(l0 + l3, l4);
    return Fq12{a + b.mul_by_nonresidue(), sum - a - b};
  }
  // Sparse multiplication by l0 + l1 v + l4 v w (the M-type twist's line).
  constexpr Fq12 mul_by_014(const F2& l0, const F2& l1, const F2& l4) const {
    F6 a = c0.mul_by_01(l0, l1);
    F6 b = c1.mul_by_1(l4);
    F6 sum = (c0 + c1).mul_by_01(l0, l1 + l4);
    return Fq12{a + b.mul_by_nonresidue(), sum - a - b};
  }

  // Squaring in the cyclotomic subgroup (x^(p^6 + 1) = 1), Granger-Scott:
  // view x as A0 + A1 w + A2 w^2 over Fq4 = Fq2[s]/(s^2 - xi), s = w^3; then
  //   x^2 = (3 A0^2 - 2 conj(A0)) + (3 s A2^2 + 2 conj(A1)) w
  //         + (3 A1^2 - 2 conj(A2)) w^2.
  // 9 Fq2 squarings instead of 2 Fq6 multiplications. Only valid on the
  // cyclotomic subgroup.
  constexpr Fq12 cyclotomic_square() const {
    // Coefficients of w^0..w^5: w^(2i) = c0.ci, w^(2i+1) = c1.ci.
    // A0 = g0 + g3 s, A1 = g1 + g4 s, A2 = g2 + g5 s.
    const F2 &g0 = c0.c0, &g2 = c0.c1, &g4 = c0.c2;
    const F2 &g1 = c1.c0, &g3 = c1.c1, &g5 = c1.c2;
    auto fq4_square = [](const F2& a, const F2& b, F2& out_a, F2& out_b) {
      F2 a2 = a.square(), b2 = b.square();
      out_a = a2 + b2.mul_by_nonresidue();
      out_b = (a + b).square() - a2 - b2;
    };
    F2 t0, t1, t2, t3, t4, t5;
    fq4_square(g0, g3, t0, t1);  // A0^2 = t0 + t1 s
    fq4_square(g1, g4, t2, t3);  // A1^2 = t2 + t3 s
    fq4_square(g2, g5, t4, t5);  // A2^2 = t4 + t5 s
    // 3 A0^2 - 2 conj(A0): conj(g0 + g3 s) = g0 - g3 s.
    F2 h0 = mul_by_small(t0 - g0, 2) + t0;
    F2 h3 = mul_by_small(t1 + g3, 2) + t1;
    // 3 s A2^2 + 2 conj(A1): s (t4 + t5 s) = xi t5 + t4 s.
    F2 t5_xi = t5.mul_by_nonresidue();
    F2 h1 = mul_by_small(t5_xi + g1, 2) + t5_xi;
    F2 h4 = mul_by_small(t4 - g4, 2) + t4;
    // 3 A1^2 - 2 conj(A2).
    F2 h2 = mul_by_small(t2 - g2, 2) + t2;
    F2 h5 = mul_by_small(t3 + g5, 2) + t3;
    return Fq12{F6{h0, h2, h4}, F6{h1, h3, h5}};
  }

  // x^e for x in the cyclotomic subgroup, using the non-adjacent form of e
  // (conjugation is a free inverse there).
  constexpr Fq12 cyclotomic_pow(std::uint64_t e) const {
    // NAF digits, least significant first.
    signed char naf[66] = {};
    int len = 0;
    u128 k = e;
    while (k) {
      if (k & 1) {
        int digit = 2 - int(k & 3);  // +1 or -1
        naf[len] = static_cast<signed char>(digit);
        if (digit == 1) k -= 1;
        else k += 1;
      }
      k >>= 1;
      ++len;
    }
    Fq12 r = one();
    const Fq12 inv = conjugate();
    bool started = false;
    for (int i = len; i-- > 0;) {
      if (started) r = r.cyclotomic_square();
      if (naf[i] == 1) r = started ? r * *this : *this;
      else if (naf[i] == -1) r = started ? r * inv : inv;
      started = started || naf[i] != 0;
    }
    return r;
  }

 private:
  constexpr Fq12 frobenius_step(unsigned k) const {
    const auto& g = kTowerConstants<Cfg>.gamma[k];
    F6 a = c0.frobenius_map(k);
    return Fq12{a, F6{c1.c0.frobenius_map(k) * g[1], c1.c1.frobenius_map(k) * g[3],
                      c1.c2.frobenius_map(k) * g[5]}};
  }
};

}  // namespace zkfarm
