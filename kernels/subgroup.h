// subgroup.h -- membership in the prime-order subgroups G1 and G2 by the
// curves' endomorphisms, instead of a multiplication by r.
//
// On the order-r subgroups, phi(x, y) = (beta x, y) is [lambda] (glv.h) and
// psi, the p-power Frobenius carried to the twist (pairing.h's
// twist_frobenius), is [p]. For these curves the converse holds as well
// (the results cited below: a point of the curve or twist that satisfies
// the equation is in the subgroup), and lambda and p reduce mod r to
// scalars of half the size or less:
//   BN254 G2:      psi(P) = [6 x^2] P   p = r + 6 x^2 (El Housni, Guillevic
//                                       and Piellard, eprint 2022/352, 4.3)
//   BLS12-381 G1:  phi(P) = -[x^2] P    lambda = r - x^2 (Scott, eprint
//                                       2021/1130, section 6)
//   BLS12-381 G2:  psi(P) = [x] P       p = x mod r (the same, section 4)
// where x is the curve's parameter (BN254 4965661367192848881, BLS12-381
// -0xd201000000010000). BN254's G1 has prime order: every point of the curve
// is in it. Each test is one multiplication by a 64- or 128-bit scalar where
// [r]P takes a 254-255-bit one (BENCHMARKS.md, "Subgroup checks by the
// endomorphisms"). subgroup_test compares every test with the
// multiplication by r on subgroup points, on random points of the curves
// and twists, and on subgroup points plus points of small order.
//
// Thread safety: pure functions. Not constant-time (inputs are public:
// proofs, keys).
#pragma once

#include <type_traits>

#include "kernels/bigint.h"
#include "kernels/curves.h"
#include "kernels/glv.h"
#include "kernels/pairing.h"

namespace zkfarm {

namespace subgroup_detail {

// 6 x^2 for BN254's x = 4965661367192848881.
inline constexpr BigInt<2> kBn254SixXSquared = BigInt<2>::from_decimal("147946756881789318990833708069417712966");
// |x| and x^2 for BLS12-381's x = -0xd201000000010000.
inline constexpr BigInt<1> kBls12381AbsX = BigInt<1>::from_hex("0xd201000000010000");
inline constexpr BigInt<2> kBls12381XSquared = BigInt<2>::from_hex("0xac45a4010001a4020000000100000000");

}  // namespace subgroup_detail

// True if p is on the curve (or twist) and in its order-r subgroup, the
// point at infinity included: the same answer as p.is_in_subgroup(), for
// the G1 and G2 points of Bn254 and Bls12381.
template <class Affine>
bool in_prime_subgroup(const Affine& p) {
  using Cfg = typename Affine::Config;
  if (!p.is_on_curve()) return false;
  if (p.is_identity()) return true;
  if constexpr (std::is_same_v<Cfg, Bn254G1Config>) {
    return true;  // prime order
  } else if constexpr (std::is_same_v<Cfg, Bls12381G1Config>) {
    using G1 = Bls12381::G1;
    const Affine phi{glv_scale(p.x, Cfg::kGlvBeta), p.y};
    return G1::from_affine(phi) == -G1::from_affine(p).scalar_mul(subgroup_detail::kBls12381XSquared);
  } else if constexpr (std::is_same_v<Cfg, Bn254G2Config>) {
    using G2 = Bn254::G2;
    return G2::from_affine(pairing_detail::twist_frobenius<Bn254>(p)) ==
           G2::from_affine(p).scalar_mul(subgroup_detail::kBn254SixXSquared);
  } else {
    static_assert(std::is_same_v<Cfg, Bls12381G2Config>, "a G1 or G2 point of Bn254 or Bls12381");
    using G2 = Bls12381::G2;
    return G2::from_affine(pairing_detail::twist_frobenius<Bls12381>(p)) ==
           -G2::from_affine(p).scalar_mul(subgroup_detail::kBls12381AbsX);  // x < 0
  }
}

}  // namespace zkfarm
