// bn254.h -- the BN254 (alt_bn128, snarkjs "bn128") curve: parameters only.
//
// All arithmetic is generic (tower.h, curve.h, pairing.h); this header names
// the tower non-residue, the curve constants, the generators and the seed.
//   E:  y^2 = x^3 + 3 over Fq, prime order r (cofactor 1).
//   E': y^2 = x^3 + 3 / (9 + u) over Fq2 (D-type sextic twist), the G2 group.
//   Seed x = 4965661367192848881; Miller loop over 6x + 2.
// Generators are the standard ones (EIP-196/197, snarkjs, arkworks).
#pragma once

#include <span>

#include "kernels/curve.h"
#include "kernels/field.h"
#include "kernels/glv.h"
#include "kernels/pairing.h"
#include "kernels/tower.h"

namespace zkfarm {

struct Bn254TowerConfig {
  using Fq = Bn254Fq;
  static constexpr std::uint64_t kXiC0 = 9;  // xi = 9 + u
  static constexpr std::uint64_t kXiC1 = 1;
};

struct Bn254G1Config {
  using Field = Bn254Fq;
  using Scalar = Bn254Fr;
  static constexpr Field kB = Field::from_u64(3);
  static constexpr bool kPrimeOrder = true;
  // phi(x, y) = (beta x, y) is [lambda] on the group (glv.h, Bn254::kGlv).
  static constexpr Bn254Fq kGlvBeta =
      Bn254Fq::from_canonical(Bn254Fq::Int::from_decimal("2203960485148121921418603742825762020974279258880205651966"));
};

struct Bn254G2Config {
  using Field = Fq2<Bn254TowerConfig>;
  using Scalar = Bn254Fr;
  static constexpr Field kB = Field::from_u64(3) * Field::nonresidue().inverse();
  static constexpr bool kPrimeOrder = false;
  // phi(x, y) = (beta x, y) on the twist, [lambda] on the order-r subgroup
  // (beta is the square of G1's: with G1's, phi would be [lambda^2]).
  static constexpr Bn254Fq kGlvBeta =
      Bn254Fq::from_canonical(Bn254Fq::Int::from_decimal("21888242871839275220042445260109153167277707414472061641714758635765020556616"));
  // Membership of a point on the twist other than the identity:
  // psi(P) = [6 x^2] P (curves.cc).
  static bool in_subgroup(const AffinePoint<Bn254G2Config>& p);
};

struct Bn254 {
  static constexpr const char* kName = "bn128";

  using TowerConfig = Bn254TowerConfig;
  using Fq = Bn254Fq;
  using Fr = Bn254Fr;
  using Fq2 = zkfarm::Fq2<TowerConfig>;
  using Fq6 = zkfarm::Fq6<TowerConfig>;
  using Fq12 = zkfarm::Fq12<TowerConfig>;

  using G1Affine = AffinePoint<Bn254G1Config>;
  using G1 = JacobianPoint<Bn254G1Config>;
  using G1Xyzz = XyzzPoint<Bn254G1Config>;
  using G2Affine = AffinePoint<Bn254G2Config>;
  using G2 = JacobianPoint<Bn254G2Config>;
  using G2Xyzz = XyzzPoint<Bn254G2Config>;

  // The GLV split of an Fr scalar (glv.h); phi's beta is each group's
  // kGlvBeta.
  static constexpr GlvBasis kGlv{
      BigInt<4>::from_hex("0xb3c4d79d41a917585bfc41088d8daaa78b17ea66b99c90dd"),
      {BigInt<4>::from_decimal("9931322734385697763"), false},
      {BigInt<4>::from_decimal("147946756881789319000765030803803410728"), true},
      {BigInt<4>::from_decimal("147946756881789319010696353538189108491"), false},
      {BigInt<4>::from_decimal("9931322734385697763"), false},
      {BigInt<4>::from_decimal("52538187511802934231"), false},
      {BigInt<4>::from_decimal("782660544089080853078787955015628534158"), false},
      128};

  // Pairing parameters (see pairing.h).
  static constexpr PairingFamily kFamily = PairingFamily::kBn;
  static constexpr TwistType kTwist = TwistType::kD;
  static constexpr std::uint64_t kX = 4965661367192848881ULL;
  static constexpr bool kXIsNegative = false;

  static constexpr G1Affine g1_generator() { return G1Affine{Fq::from_u64(1), Fq::from_u64(2)}; }
  static constexpr G2Affine g2_generator() {
    return G2Affine{
        Fq2{fq("10857046999023057135944570762232829481370756359578518086990519993285655852781"),
            fq("11559732032986387107991004021392285783925812861821192530917403151452391805634")},
        Fq2{fq("8495653923123431417604973247489272438418190587263600148770280649306958101930"),
            fq("4082367875863433681332203403145435568316851327593401208105741076214120093531")}};
  }

  // e(p, q); 1 if either is the identity. Inputs must be subgroup points.
  static Fq12 pairing(const G1Affine& p, const G2Affine& q);
  // prod e(g1[i], g2[i]) with one final exponentiation. Throws
  // std::invalid_argument if the spans differ in length.
  // Defined in curves.cc: instantiating the pairing evaluates its Frobenius
  // constants at compile time, seconds per translation unit.
  static Fq12 multi_pairing(std::span<const G1Affine> g1, std::span<const G2Affine> g2);

 private:
  static constexpr Fq fq(const char* decimal) { return Fq::from_canonical(Fq::Int::from_decimal(decimal)); }
};

static_assert(sizeof(Bn254::G1Affine) == 2 * sizeof(Bn254::Fq));
static_assert(sizeof(Bn254::G2Affine) == 4 * sizeof(Bn254::Fq));
static_assert(std::is_standard_layout_v<Bn254::G1Affine> && std::is_standard_layout_v<Bn254::G2Affine>);

}  // namespace zkfarm
