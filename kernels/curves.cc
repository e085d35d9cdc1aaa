// curves.cc -- the two curves' pairings, instantiated once.
//
// optimal_ate_pairing<Curve> evaluates the tower's Frobenius constants
// (kTowerConstants, pairing.h's loop NAF) at compile time; with the bodies
// inline in bn254.h and bls12_381.h every translation unit that included
// kernels/curves.h paid ~4 s of g++ constant evaluation for them. Here they
// are compiled once.
#include "kernels/curves.h"

namespace zkfarm {

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
