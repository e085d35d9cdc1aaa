// groth16_verifier.h -- Groth16 verification: single proofs and batches.
//
// A proof (A, B, C) for public inputs x is valid when
//   e(A, B) = e(alpha, beta) * e(L, gamma) * e(C, delta),  L = IC_0 + sum x_i IC_i,
// checked as one multi-pairing  e(-A, B) e(alpha, beta) e(L, gamma) e(C, delta) = 1.
//
// A batch of k proofs of one circuit (the partitions of a Filecoin proof) is
// checked with random weights rho_j drawn from a CSPRNG:
//   prod e(-rho_j A_j, B_j) * e(sum rho_j alpha, beta) * e(sum rho_j L_j, gamma)
//   * e(sum rho_j C_j, delta) = 1,
// k + 3 Miller loops and one final exponentiation instead of 4k pairings. A
// forged batch passes with probability about k / 2^128 (128-bit weights).
//
// Proof points are checked to lie on the curve and in the prime-order
// subgroup before any pairing; public inputs must be below r. Malformed input
// is reported by exception (std::invalid_argument naming what was wrong); an
// honest "no" is a false return.
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/curves.h"
#include "kernels/groth16_types.h"
#include "kernels/msm.h"
#include "kernels/random.h"

namespace zkfarm {

namespace groth16_detail {

template <class Curve>
void check_proof_points(const Groth16Proof<Curve>& proof, const std::string& what) {
  if (!proof.a.is_on_curve() || !proof.a.is_in_subgroup())
    throw std::invalid_argument(what + ": A is not a point of the G1 subgroup");
  if (!proof.b.is_on_curve() || !proof.b.is_in_subgroup())
    throw std::invalid_argument(what + ": B is not a point of the G2 subgroup");
  if (!proof.c.is_on_curve() || !proof.c.is_in_subgroup())
    throw std::invalid_argument(what + ": C is not a point of the G1 subgroup");
}

// From this many public inputs on, L is computed by one MSM.
inline constexpr std::size_t kPublicInputMsmThreshold = 16;

// L = IC_0 + sum x_i IC_i.
template <class Curve>
typename Curve::G1 public_input_term(const Groth16VerifyingKey<Curve>& vk,
                                     std::span<const typename Curve::Fr> public_inputs) {
  if (public_inputs.size() != vk.num_public())
    throw std::invalid_argument("expected " + std::to_string(vk.num_public()) +
                                " public inputs, got " + std::to_string(public_inputs.size()));
  auto acc = Curve::G1::from_affine(vk.ic[0]);
  // A few inputs: one scalar multiplication each. Many (a PoRep partition
  // has 328): one MSM, ~10x less work than 328 double-and-add chains.
  if (public_inputs.size() >= kPublicInputMsmThreshold)
    return acc + msm<Curve, typename Curve::G1>(std::span(vk.ic).subspan(1), public_inputs);
  for (std::size_t i = 0; i < public_inputs.size(); ++i)
    acc += Curve::G1::from_affine(vk.ic[i + 1]).scalar_mul(public_inputs[i].to_canonical());
  return acc;
}

}  // namespace groth16_detail

// Returns true iff proof is valid for public_inputs under vk. Throws
// std::invalid_argument when the input is malformed (wrong number of public
// inputs, proof points off the curve or outside the subgroup).
template <class Curve>
bool groth16_verify(const Groth16VerifyingKey<Curve>& vk,
                    std::span<const typename Curve::Fr> public_inputs,
                    const Groth16Proof<Curve>& proof) {
  using G1Affine = typename Curve::G1Affine;
  using G2Affine = typename Curve::G2Affine;
  groth16_detail::check_proof_points(proof, "proof");
  auto l = groth16_detail::public_input_term(vk, public_inputs).to_affine();
  const G1Affine g1[4] = {-proof.a, vk.alpha1, l, proof.c};
  const G2Affine g2[4] = {proof.b, vk.beta2, vk.gamma2, vk.delta2};
  return Curve::multi_pairing(std::span<const G1Affine>(g1, 4), std::span<const G2Affine>(g2, 4)) ==
         Curve::Fq12::one();
}

// Batch verification of proofs of one circuit. Returns true iff every proof
// is valid (up to the soundness error above). An empty batch is valid.
// Throws std::invalid_argument on malformed input, naming the partition.
template <class Curve>
bool groth16_verify_batch(const Groth16VerifyingKey<Curve>& vk,
                          std::span<const std::vector<typename Curve::Fr>> public_inputs,
                          std::span<const Groth16Proof<Curve>> proofs) {
  using Fr = typename Curve::Fr;
  using G1 = typename Curve::G1;
  using G1Affine = typename Curve::G1Affine;
  using G2Affine = typename Curve::G2Affine;
  if (public_inputs.size() != proofs.size())
    throw std::invalid_argument("batch has " + std::to_string(proofs.size()) + " proofs but " +
                                std::to_string(public_inputs.size()) + " public input sets");
  if (proofs.empty()) return true;
  std::vector<G1Affine> g1;
  std::vector<G2Affine> g2;
  G1 alpha_sum = G1::identity(), l_sum = G1::identity(), c_sum = G1::identity();
  Fr rho_sum = Fr::zero();
  for (std::size_t j = 0; j < proofs.size(); ++j) {
    const std::string what = "partition " + std::to_string(j);
    groth16_detail::check_proof_points(proofs[j], what);
    G1 l;
    try {
      l = groth16_detail::public_input_term(vk, std::span<const Fr>(public_inputs[j]));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(what + ": " + e.what());
    }
    Fr rho = random_field_element_bits<Fr>(128);
    auto rho_int = rho.to_canonical();
    rho_sum += rho;
    g1.push_back((-G1::from_affine(proofs[j].a).scalar_mul(rho_int)).to_affine());
    g2.push_back(proofs[j].b);
    l_sum += l.scalar_mul(rho_int);
    c_sum += G1::from_affine(proofs[j].c).scalar_mul(rho_int);
  }
  alpha_sum = G1::from_affine(vk.alpha1).scalar_mul(rho_sum.to_canonical());
  g1.push_back(alpha_sum.to_affine());
  g2.push_back(vk.beta2);
  g1.push_back(l_sum.to_affine());
  g2.push_back(vk.gamma2);
  g1.push_back(c_sum.to_affine());
  g2.push_back(vk.delta2);
  return Curve::multi_pairing(std::span<const G1Affine>(g1), std::span<const G2Affine>(g2)) ==
         Curve::Fq12::one();
}

}  // namespace zkfarm
