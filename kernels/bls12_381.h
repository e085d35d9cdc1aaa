// bls12_381.h -- the BLS12-381 curve (snarkjs "bls12381", Filecoin, zcash):
// parameters only.
//
// All arithmetic is generic (tower.h, curve.h, pairing.h); this header names
// the tower non-residue, the curve constants, the generators and the seed.
//   E:  y^2 = x^3 + 4 over Fq; G1 has prime order r, cofactor != 1.
//   E': y^2 = x^3 + 4 (1 + u) over Fq2 (M-type sextic twist), the G2 group.
//   Seed x = -0xd201000000010000; Miller loop over |x|.
// Generators are the standard ones (zcash/IETF pairing-friendly-curves).
#pragma once

#include <span>

#include "kernels/curve.h"
#include "kernels/field.h"
#include "kernels/glv.h"
#include "kernels/pairing.h"
#include "kernels/tower.h"

namespace zkfarm {

struct Bls12381TowerConfig {
  using Fq = Bls12381Fq;
  static constexpr std::uint64_t kXiC0 = 1;  // xi = 1 + u
  static constexpr std::uint64_t kXiC1 = 1;
};

struct Bls12381G1Config {
  using Field = Bls12381Fq;
  using Scalar = Bls12381Fr;
  static constexpr Field kB = Field::from_u64(4);
  static constexpr bool kPrimeOrder = false;
  // phi(x, y) = (beta x, y) is [lambda] on the order-r subgroup (glv.h,
  // Bls12381::kGlv).
  static constexpr Bls12381Fq kGlvBeta = Bls12381Fq::from_canonical(Bls12381Fq::Int::from_decimal(
      "793479390729215512621379701633421447060886740281060493010456487427281649075476305620758731620350"));
  // Membership of a point on the curve other than the identity:
  // phi(P) = -[x^2] P (curves.cc).
  static bool in_subgroup(const AffinePoint<Bls12381G1Config>& p);
};

struct Bls12381G2Config {
  using Field = Fq2<Bls12381TowerConfig>;
  using Scalar = Bls12381Fr;
  static constexpr Field kB = Field::nonresidue().dbl().dbl();  // 4 (1 + u)
  static constexpr bool kPrimeOrder = false;
  // phi(x, y) = (beta x, y) on the twist, [lambda] on the order-r subgroup
  // (beta is the square of G1's: with G1's, phi would be [lambda^2]).
  static constexpr Bls12381Fq kGlvBeta = Bls12381Fq::from_canonical(Bls12381Fq::Int::from_decimal(
      "4002409555221667392624310435006688643935503118305586438271171395842971157480381377015405980053539358417135540939436"));
  // Membership of a point on the twist other than the identity:
  // psi(P) = [x] P (curves.cc).
  static bool in_subgroup(const AffinePoint<Bls12381G2Config>& p);
};

struct Bls12381 {
  static constexpr const char* kName = "bls12381";

  using TowerConfig = Bls12381TowerConfig;
  using Fq = Bls12381Fq;
  using Fr = Bls12381Fr;
  using Fq2 = zkfarm::Fq2<TowerConfig>;
  using Fq6 = zkfarm::Fq6<TowerConfig>;
  using Fq12 = zkfarm::Fq12<TowerConfig>;

  using G1Affine = AffinePoint<Bls12381G1Config>;
  using G1 = JacobianPoint<Bls12381G1Config>;
  using G1Xyzz = XyzzPoint<Bls12381G1Config>;
  using G2Affine = AffinePoint<Bls12381G2Config>;
  using G2 = JacobianPoint<Bls12381G2Config>;
  using G2Xyzz = XyzzPoint<Bls12381G2Config>;

  // The GLV split of an Fr scalar (glv.h); phi's beta is each group's
  // kGlvBeta.
  static constexpr GlvBasis kGlv{
      BigInt<4>::from_hex("0x73eda753299d7d483339d80809a1d804a7780001fffcb7fcfffffffe00000001"),
      {BigInt<4>::from_decimal("1"), false},
      {BigInt<4>::from_decimal("228988810152649578064853576960394133503"), true},
      {BigInt<4>::from_decimal("228988810152649578064853576960394133504"), false},
      {BigInt<4>::from_decimal("1"), false},
      {BigInt<4>::from_decimal("2"), false},
      {BigInt<4>::from_decimal("505667019974147811778249931229775261230"), false},
      128};

  // Pairing parameters (see pairing.h).
  static constexpr PairingFamily kFamily = PairingFamily::kBls12;
  static constexpr TwistType kTwist = TwistType::kM;
  static constexpr std::uint64_t kX = 0xd201000000010000ULL;
  static constexpr bool kXIsNegative = true;

  static constexpr G1Affine g1_generator() {
    return G1Affine{
        fq("0x17f1d3a73197d7942695638c4fa9ac0fc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb"),
        fq("0x08b3f481e3aaa0f1a09e30ed741d8ae4fcf5e095d5d00af600db18cb2c04b3edd03cc744a2888ae40caa232946c5e7e1")};
  }
  static constexpr G2Affine g2_generator() {
    return G2Affine{
        Fq2{fq("0x024aa2b2f08f0a91260805272dc51051c6e47ad4fa403b02b4510b647ae3d1770bac0326a805bbefd48056c8c121bdb8"),
            fq("0x13e02b6052719f607dacd3a088274f65596bd0d09920b61ab5da61bbdc7f5049334cf11213945d57e5ac7d055d042b7e")},
        Fq2{fq("0x0ce5d527727d6e118cc9cdc6da2e351aadfd9baa8cbdd3a76d429a695160d12c923ac9cc3baca289e193548608b82801"),
            fq("0x0606c4a02ea734cc32acd2b02bc28b99cb3e287e85a763af267492ab572e99ab3f370d275cec1da1aaa9075ff05f79be")}};
  }

  // e(p, q); 1 if either is the identity. Inputs must be subgroup points.
  static Fq12 pairing(const G1Affine& p, const G2Affine& q);
  // prod e(g1[i], g2[i]) with one final exponentiation. Throws
  // std::invalid_argument if the spans differ in length.
  // Defined in curves.cc: instantiating the pairing evaluates its Frobenius
  // constants at compile time, seconds per translation unit.
  static Fq12 multi_pairing(std::span<const G1Affine> g1, std::span<const G2Affine> g2);

 private:
  static constexpr Fq fq(const char* hex) { return Fq::from_canonical(Fq::Int::from_hex(hex)); }
};

static_assert(sizeof(Bls12381::G1Affine) == 2 * sizeof(Bls12381::Fq));
static_assert(sizeof(Bls12381::G2Affine) == 4 * sizeof(Bls12381::Fq));
static_assert(std::is_standard_layout_v<Bls12381::G1Affine> &&
              std::is_standard_layout_v<Bls12381::G2Affine>);

}  // namespace zkfarm
