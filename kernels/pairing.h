// pairing.h -- the optimal ate pairing for BN and BLS12 curves, one
// implementation for both families.
//
// A Curve traits struct (kernels/bn254.h, kernels/bls12_381.h) supplies
//   Fq, Fq2, Fq12, G1Affine, G2Affine   the fields and groups,
//   kFamily  PairingFamily::kBn or kBls12,
//   kTwist   TwistType::kD (E': y^2 = x^3 + b/xi) or kM (y^2 = x^3 + b xi),
//   kX, kXIsNegative   the curve's seed x as |x| and its sign.
// The Miller loop runs over 6x + 2 (BN, followed by the two Frobenius line
// steps) or |x| (BLS12), with the twist point in homogeneous projective
// coordinates so that no inversion is needed; line functions are sparse
// Fq12 elements whose shape depends on the twist type only.
//
// Line derivation. With w^6 = xi, the D-type untwisting map is
// (x', y') -> (x' w^2, y' w^3), so a line through twist points with slope
// l' evaluated at P = (xP, yP) is yP - l' xP w + (l' x' - y') w^3. For the
// M-type map (x' w^-2, y' w^-3) the line times w^3 (an element of Fq4,
// erased by the final exponentiation) is (l' x' - y') - l' xP v + yP v w.
// Clearing the (Fq2) denominators of l' gives the coefficients of Line.
//
// The final exponentiation computes exactly f^((p^12 - 1) / r) (not a
// multiple of it), so values agree with other libraries' pairings.
//
// Inputs are trusted to be in the prime-order subgroups; callers that read
// points from outside check is_in_subgroup() first (see groth16_verifier.h).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/bigint.h"
#include "kernels/tower.h"

namespace zkfarm {

enum class PairingFamily { kBn, kBls12 };
enum class TwistType { kD, kM };

namespace pairing_detail {

// The non-adjacent form of a 128-bit value, least significant digit first.
struct Naf {
  signed char digits[130] = {};
  int length = 0;
};
constexpr Naf naf_of(u128 k) {
  Naf naf;
  while (k) {
    if (k & 1) {
      int digit = 2 - int(k & 3);
      naf.digits[naf.length] = static_cast<signed char>(digit);
      if (digit == 1) k -= 1;
      else k += 1;
    }
    k >>= 1;
    ++naf.length;
  }
  return naf;
}

// The Miller loop's parameter: |6x + 2| for BN curves, |x| for BLS12.
template <class Curve>
constexpr u128 loop_parameter() {
  if constexpr (Curve::kFamily == PairingFamily::kBn) {
    // 6x + 2 with x = -|x| is -(6|x| - 2).
    return Curve::kXIsNegative ? u128(6) * Curve::kX - 2 : u128(6) * Curve::kX + 2;
  } else {
    return Curve::kX;
  }
}

// A line function's coefficients before evaluation at P: the line is
//   constant + x_coeff * xP + y_coeff * yP placed in Fq12 by the twist type.
template <class F2>
struct Line {
  F2 constant, x_coeff, y_coeff;
};

// A twist point in homogeneous projective coordinates: x = X/Z, y = Y/Z.
template <class F2>
struct TwistProjective {
  F2 X, Y, Z;
};

// T <- 2T; returns the tangent line at T, multiplied by the Fq2 factor 2YZ
// (slope l' = 3X^2 / (2YZ); the constant term 3X^3/Z - 2Y^2 simplifies to
// Z (Y^2 - 3 b' Z^2) by the curve equation). In affine terms the new point
// has x = X (Y^2 - 9 b' Z^2) / (4 Y^2 Z).
template <class Curve>
constexpr Line<typename Curve::Fq2> doubling_step(TwistProjective<typename Curve::Fq2>& t) {
  using F2 = typename Curve::Fq2;
  constexpr F2 kThreeB = mul_by_small(Curve::G2Affine::Config::kB, 3);
  F2 a = (t.X * t.Y).half();
  F2 b = t.Y.square();
  F2 c = t.Z.square();
  F2 e = kThreeB * c;
  F2 f = e.dbl() + e;
  F2 g = (b + f).half();
  F2 h = (t.Y + t.Z).square() - (b + c);
  F2 i = e - b;
  F2 j = t.X.square();
  F2 e_sq = e.square();
  t.X = a * (b - f);
  t.Y = g.square() - (e_sq.dbl() + e_sq);
  t.Z = b * h;
  return Line<F2>{i, j.dbl() + j, -h};
}

// T <- T + Q for affine Q != +-T; returns the line through T and Q (scaled
// by lambda = X - xQ Z).
template <class Curve>
constexpr Line<typename Curve::Fq2> addition_step(TwistProjective<typename Curve::Fq2>& t,
                                                  const typename Curve::G2Affine& q) {
  using F2 = typename Curve::Fq2;
  F2 theta = t.Y - q.y * t.Z;
  F2 lambda = t.X - q.x * t.Z;
  F2 c = theta.square();
  F2 d = lambda.square();
  F2 e = lambda * d;
  F2 f = t.Z * c;
  F2 g = t.X * d;
  F2 h = e + f - g.dbl();
  t.X = lambda * h;
  t.Y = theta * (g - h) - e * t.Y;
  t.Z = t.Z * e;
  F2 j = theta * q.x - lambda * q.y;
  return Line<F2>{j, -theta, lambda};
}

// f * line(P).
template <class Curve>
constexpr void multiply_by_line(typename Curve::Fq12& f, const Line<typename Curve::Fq2>& line,
                                const typename Curve::G1Affine& p) {
  auto x_term = line.x_coeff.mul_by_base(p.x);
  auto y_term = line.y_coeff.mul_by_base(p.y);
  if constexpr (Curve::kTwist == TwistType::kD) {
    f = f.mul_by_034(y_term, x_term, line.constant);
  } else {
    f = f.mul_by_014(line.constant, x_term, y_term);
  }
}

// The p-power Frobenius endomorphism carried to the twist:
// (x, y) -> (conj(x) cx, conj(y) cy) with cx = xi^((p-1)/3), cy = xi^((p-1)/2)
// for a D-type twist and their inverses for an M-type twist.
template <class Curve>
constexpr typename Curve::G2Affine twist_frobenius(const typename Curve::G2Affine& q) {
  using F2 = typename Curve::Fq2;
  using Cfg = typename Curve::TowerConfig;
  constexpr bool kD = Curve::kTwist == TwistType::kD;
  constexpr F2 kCx = kD ? kTowerConstants<Cfg>.gamma[1][2] : kTowerConstants<Cfg>.gamma[1][2].inverse();
  constexpr F2 kCy = kD ? kTowerConstants<Cfg>.gamma[1][3] : kTowerConstants<Cfg>.gamma[1][3].inverse();
  return typename Curve::G2Affine{q.x.conjugate() * kCx, q.y.conjugate() * kCy};
}

}  // namespace pairing_detail

// The product of the Miller loops f_{loop, Q_i}(P_i), before the final
// exponentiation. Pairs with an identity point contribute 1. Throws
// std::invalid_argument if the spans differ in length.
template <class Curve>
typename Curve::Fq12 miller_loop(std::span<const typename Curve::G1Affine> g1,
                                 std::span<const typename Curve::G2Affine> g2) {
  using namespace pairing_detail;
  using F2 = typename Curve::Fq2;
  using F12 = typename Curve::Fq12;
  using G1Affine = typename Curve::G1Affine;
  using G2Affine = typename Curve::G2Affine;
  if (g1.size() != g2.size())
    throw std::invalid_argument("multi_pairing: " + std::to_string(g1.size()) + " G1 points but " +
                                std::to_string(g2.size()) + " G2 points");

  struct Pair {
    G1Affine p;
    G2Affine q, minus_q;
    TwistProjective<F2> t;
  };
  std::vector<Pair> pairs;
  pairs.reserve(g1.size());
  for (std::size_t i = 0; i < g1.size(); ++i) {
    if (g1[i].is_identity() || g2[i].is_identity()) continue;
    pairs.push_back(Pair{g1[i], g2[i], -g2[i], TwistProjective<F2>{g2[i].x, g2[i].y, F2::one()}});
  }
  if (pairs.empty()) return F12::one();

  static constexpr Naf kNaf = naf_of(loop_parameter<Curve>());
  F12 f = F12::one();
  for (int i = kNaf.length - 1; i-- > 0;) {
    if (i != kNaf.length - 2) f = f.square();
    for (Pair& pair : pairs) multiply_by_line<Curve>(f, doubling_step<Curve>(pair.t), pair.p);
    if (int digit = kNaf.digits[i]) {
      for (Pair& pair : pairs)
        multiply_by_line<Curve>(f, addition_step<Curve>(pair.t, digit > 0 ? pair.q : pair.minus_q),
                                pair.p);
    }
  }

  if constexpr (Curve::kFamily == PairingFamily::kBn) {
    // The loop ran over |6x + 2|; for negative x, T = -[6|x|-2]Q and f^-1.
    if (Curve::kXIsNegative) {
      f = f.conjugate();
      for (Pair& pair : pairs) pair.t.Y = -pair.t.Y;
    }
    // Two more lines: T + pi(Q), then (T + pi(Q)) - pi^2(Q).
    for (Pair& pair : pairs) {
      G2Affine q1 = twist_frobenius<Curve>(pair.q);
      G2Affine q2 = -twist_frobenius<Curve>(q1);
      multiply_by_line<Curve>(f, addition_step<Curve>(pair.t, q1), pair.p);
      multiply_by_line<Curve>(f, addition_step<Curve>(pair.t, q2), pair.p);
    }
  } else {
    if (Curve::kXIsNegative) f = f.conjugate();
  }
  return f;
}

// f^((p^12 - 1) / r). Easy part f^((p^6 - 1)(p^2 + 1)) by conjugation, one
// inversion and a Frobenius map; hard part (p^4 - p^2 + 1) / r by a
// decomposition in base p whose digits are polynomials in the seed x:
//   BN:    l0 + l1 p + l2 p^2 + p^3 with l2 = 6x^2 + 1,
//          l1 = -36x^3 - 18x^2 - 12x + 1, l0 = -36x^3 - 30x^2 - 18x - 2
//          (three exponentiations by x);
//   BLS12: mu (x + p)(x^2 + p^2 - 1) + 1 with mu = (x - 1)^2 / 3
//          (five exponentiations by numbers of about 64 bits).
// pairing_test checks the result against plain exponentiation by (p^12 - 1)/r.
template <class Curve>
typename Curve::Fq12 final_exponentiation(const typename Curve::Fq12& f) {
  using F12 = typename Curve::Fq12;
  // Easy part; the result lies in the cyclotomic subgroup.
  F12 t = f.conjugate() * f.inverse();
  F12 m = t.frobenius_map(2) * t;

  // m^x for the signed seed x.
  auto pow_x = [](const F12& a) {
    F12 r = a.cyclotomic_pow(Curve::kX);
    return Curve::kXIsNegative ? r.conjugate() : r;
  };

  if constexpr (Curve::kFamily == PairingFamily::kBn) {
    F12 y0 = pow_x(m);   // m^x
    F12 y1 = pow_x(y0);  // m^(x^2)
    F12 y2 = pow_x(y1);  // m^(x^3)
    F12 y1_sq = y1.cyclotomic_square();
    F12 y1_cube = y1_sq * y1;
    F12 y2_cube = y2.cyclotomic_square() * y2;
    // a = y2^6 y1^3 y0^2, big = a^6 = m^(36x^3 + 18x^2 + 12x).
    F12 a = y2_cube.cyclotomic_square() * y1_cube * y0.cyclotomic_square();
    F12 a_cube = a.cyclotomic_square() * a;
    F12 big = a_cube.cyclotomic_square();
    // (y1^2 y0)^6 = m^(12x^2 + 6x).
    F12 b = y1_sq * y0;
    F12 b_cube = b.cyclotomic_square() * b;
    F12 b6 = b_cube.cyclotomic_square();
    F12 l0 = (big * b6 * m.cyclotomic_square()).conjugate();  // m^l0
    F12 l1 = big.conjugate() * m;                             // m^l1
    F12 l2 = y1_cube.cyclotomic_square() * m;                 // m^l2
    return l0 * l1.frobenius_map(1) * l2.frobenius_map(2) * m.frobenius_map(3);
  } else {
    // |x - 1| = |x| + 1 for negative x, |x| - 1 otherwise; divisible by 3.
    constexpr std::uint64_t kXMinusOne = Curve::kXIsNegative ? Curve::kX + 1 : Curve::kX - 1;
    static_assert(kXMinusOne % 3 == 0, "BLS12 seed must satisfy x = 1 mod 3");
    F12 a = m.cyclotomic_pow(kXMinusOne / 3).cyclotomic_pow(kXMinusOne);  // m^mu
    F12 b = pow_x(a) * a.frobenius_map(1);                                 // a^(x + p)
    F12 c = pow_x(pow_x(b)) * b.frobenius_map(2) * b.conjugate();          // b^(x^2 + p^2 - 1)
    return c * m;
  }
}

// e(P, Q). The identity in either argument gives 1.
template <class Curve>
typename Curve::Fq12 optimal_ate_pairing(const typename Curve::G1Affine& p,
                                         const typename Curve::G2Affine& q) {
  return final_exponentiation<Curve>(miller_loop<Curve>(std::span(&p, 1), std::span(&q, 1)));
}

// prod_i e(P_i, Q_i) with one shared Miller loop and one final
// exponentiation. Throws std::invalid_argument if the spans differ in length.
template <class Curve>
typename Curve::Fq12 optimal_ate_multi_pairing(std::span<const typename Curve::G1Affine> g1,
                                               std::span<const typename Curve::G2Affine> g2) {
  return final_exponentiation<Curve>(miller_loop<Curve>(g1, g2));
}

}  // namespace zkfarm
