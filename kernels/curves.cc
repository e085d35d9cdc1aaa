// curves.cc -- the two curves' pairings, instantiated once.
//
// optimal_ate_pairing<Curve> evaluates the tower's Frobenius constants
// (kTowerConstants, pairing.h's loop NAF) at compile time; with the bodies
// inline in bn254.h and bls12_381.h every translation unit that included
// kernels/curves.h paid ~4 s of g++ constant evaluation for them. Here they
// are compiled once.
//
// So are the subgroup tests by endomorphism (the configs' in_subgroup, which
// AffinePoint::is_in_subgroup asks): psi, the p-power Frobenius carried to
// the twist (pairing.h's twist_frobenius), is [p] on G2, and phi (glv.h) is
// [lambda] on G1; for these curves the converse holds as well (the results
// cited below: a point of the curve or twist that satisfies the equation is
// in the subgroup), with p and lambda reduced mod r to short scalars in the
// seed x (Curve::kX):
//   BN254 G2:      psi(P) = [6 x^2] P   p = r + 6 x^2 (El Housni, Guillevic
//                                       and Piellard, eprint 2022/352, 4.3)
//   BLS12-381 G1:  phi(P) = -[x^2] P    lambda = r - x^2 (Scott, eprint
//                                       2021/1130, section 6)
//   BLS12-381 G2:  psi(P) = [x] P       p = x mod r (the same, section 4)
// One multiplication by a 64- or 128-bit scalar where [r] P takes a 254-255-
// bit one. subgroup_test compares each with is_in_subgroup_by_order().
#include "kernels/curves.h"

namespace zkfarm {

namespace {

// A u128 as the two limbs scalar_mul takes.
constexpr BigInt<2> limbs(u128 v) { return BigInt<2>{{std::uint64_t(v), std::uint64_t(v >> 64)}}; }

}  // namespace

bool Bn254G2Config::in_subgroup(const AffinePoint<Bn254G2Config>& p) {
  static_assert(!Bn254::kXIsNegative);
  constexpr BigInt<2> kSixXSquared = limbs(u128(6) * Bn254::kX * Bn254::kX);  // < 2^128
  return Bn254::G2::from_affine(pairing_detail::twist_frobenius<Bn254>(p)) ==
         Bn254::G2::from_affine(p).scalar_mul(kSixXSquared);
}

bool Bls12381G1Config::in_subgroup(const AffinePoint<Bls12381G1Config>& p) {
  constexpr BigInt<2> kXSquared = limbs(u128(Bls12381::kX) * Bls12381::kX);
  const AffinePoint<Bls12381G1Config> phi{glv_scale(p.x, kGlvBeta), p.y};
  return Bls12381::G1::from_affine(phi) == -Bls12381::G1::from_affine(p).scalar_mul(kXSquared);
}

bool Bls12381G2Config::in_subgroup(const AffinePoint<Bls12381G2Config>& p) {
  static_assert(Bls12381::kXIsNegative);
  const Bls12381::G2 x_times = Bls12381::G2::from_affine(p).scalar_mul(BigInt<1>{{Bls12381::kX}});
  return Bls12381::G2::from_affine(pairing_detail::twist_frobenius<Bls12381>(p)) == -x_times;
}

Bn254::Fq12 Bn254::pairing(const G1Affine& p, const G2Affine& q) { return optimal_ate_pairing<Bn254>(p, q); }

Bn254::Fq12 Bn254::multi_pairing(std::span<const G1Affine> g1, std::span<const G2Affine> g2) {
  return optimal_ate_multi_pairing<Bn254>(g1, g2);
}

Bls12381::Fq12 Bls12381::pairing(const G1Affine& p, const G2Affine& q) {
  return optimal_ate_pairing<Bls12381>(p, q);
}

Bls12381::Fq12 Bls12381::multi_pairing(std::span<const G1Affine> g1, std::span<const G2Affine> g2) {
  return optimal_ate_multi_pairing<Bls12381>(g1, g2);
}

}  // namespace zkfarm
