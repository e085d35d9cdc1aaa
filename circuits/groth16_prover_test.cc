// groth16_prover_test.cc -- the CPU prover and verifier end to end on both
// curves: synthetic circuit -> test setup -> prove -> verify, plus every way
// a caller can get it wrong (witness length, w[0], unsatisfied constraint,
// tampered proof or public input, batch with one bad partition).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "circuits/groth16_setup.h"
#include "circuits/synthetic_circuit.h"
#include "formats/pce.h"
#include "kernels/curves.h"
#include "kernels/groth16_prover.h"
#include "kernels/groth16_verifier.h"

namespace zkfarm {
namespace {

template <class Curve>
class Groth16ProverTest : public ::testing::Test {
 protected:
  using Fr = typename Curve::Fr;

  void SetUp() override {
    SyntheticCircuitOptions options;
    options.num_constraints = 700;
    options.num_public = 5;
    options.seed = 42;
    circuit_ = std::make_unique<SyntheticCircuit<Fr>>(options);
    witness_ = circuit_->witness();
    r1cs_ = circuit_->to_r1cs();
    Groth16SetupOptions setup_options;
    setup_options.seed = 9;
    const std::uint32_t n = groth16_domain_size(r1cs_.num_constraints, r1cs_.num_public());
    key_ = groth16_setup<Curve>(r1cs_, sample_toxic_waste<Fr>(n, setup_options));
    pce_from_r1cs_ = pce_from_r1cs(r1cs_);
  }

  std::vector<Fr> public_inputs(const std::vector<Fr>& witness) const {
    return std::vector<Fr>(witness.begin() + 1, witness.begin() + 1 + key_.num_public);
  }

  Groth16Proof<Curve> prove(const std::vector<Fr>& witness, std::uint64_t seed = 0) const {
    ProveOptions<Fr> options;
    if (seed) {
      options.r = Fr::from_u64(seed);
      options.s = Fr::from_u64(seed + 1);
    }
    return groth16_prove<Curve>(key_.proving_key(), pce_from_r1cs_, std::span<const Fr>(witness),
                                options);
  }

  std::unique_ptr<SyntheticCircuit<Fr>> circuit_;
  std::vector<Fr> witness_;
  R1cs<Fr> r1cs_;
  Groth16SetupKey<Curve> key_;
  Pce<Fr> pce_from_r1cs_;
};

using Curves = ::testing::Types<Bn254, Bls12381>;
TYPED_TEST_SUITE(Groth16ProverTest, Curves);

TYPED_TEST(Groth16ProverTest, ProofVerifies) {
  using Fr = typename TypeParam::Fr;
  auto proof = this->prove(this->witness_);
  auto pub = this->public_inputs(this->witness_);
  EXPECT_TRUE(groth16_verify<TypeParam>(this->key_.verifying_key(), std::span<const Fr>(pub), proof));
}

TYPED_TEST(Groth16ProverTest, FixedBlindingIsDeterministicAndRandomIsNot) {
  auto p1 = this->prove(this->witness_, 5);
  auto p2 = this->prove(this->witness_, 5);
  EXPECT_EQ(p1, p2);
  auto p3 = this->prove(this->witness_);
  auto p4 = this->prove(this->witness_);
  EXPECT_FALSE(p3 == p4);  // fresh r, s from the CSPRNG
}

TYPED_TEST(Groth16ProverTest, ZkeyPceGivesTheSameProofAsR1csPce) {
  using Fr = typename TypeParam::Fr;
  // The PCE a worker builds from the .zkey's coefficient section (A and B
  // with snarkjs's appended public rows) must drive the same computation as
  // the one built from the .r1cs.
  const auto input = this->key_.write_input();
  std::vector<std::uint8_t> image = serialize_zkey<TypeParam>(input);
  auto zkey = parse_zkey<TypeParam>(FileBytes::adopt(std::move(image), "test.zkey"));
  auto pce = pce_from_zkey(zkey.coefficients, zkey.num_public);
  ProveOptions<Fr> options;
  options.r = Fr::from_u64(3);
  options.s = Fr::from_u64(4);
  auto from_zkey = groth16_prove<TypeParam>(this->key_.proving_key(), pce,
                                            std::span<const Fr>(this->witness_), options);
  auto from_r1cs = groth16_prove<TypeParam>(this->key_.proving_key(), this->pce_from_r1cs_,
                                            std::span<const Fr>(this->witness_), options);
  EXPECT_EQ(from_zkey, from_r1cs);
}

TYPED_TEST(Groth16ProverTest, TamperedProofOrPublicInputIsRejected) {
  using Fr = typename TypeParam::Fr;
  auto proof = this->prove(this->witness_);
  auto pub = this->public_inputs(this->witness_);
  auto vk = this->key_.verifying_key();
  auto bad_pub = pub;
  bad_pub[0] += Fr::one();
  EXPECT_FALSE(groth16_verify<TypeParam>(vk, std::span<const Fr>(bad_pub), proof));
  auto bad_proof = proof;
  bad_proof.a = (TypeParam::G1::from_affine(proof.a) + TypeParam::G1::from_affine(TypeParam::g1_generator()))
                    .to_affine();
  EXPECT_FALSE(groth16_verify<TypeParam>(vk, std::span<const Fr>(pub), bad_proof));
  auto swapped = proof;
  std::swap(swapped.a, swapped.c);
  EXPECT_FALSE(groth16_verify<TypeParam>(vk, std::span<const Fr>(pub), swapped));
  // Wrong number of public inputs is malformed input, not a "no".
  pub.pop_back();
  EXPECT_THROW(groth16_verify<TypeParam>(vk, std::span<const Fr>(pub), proof), std::invalid_argument);
}

TYPED_TEST(Groth16ProverTest, OffCurveProofPointIsMalformed) {
  using Fr = typename TypeParam::Fr;
  auto proof = this->prove(this->witness_);
  auto pub = this->public_inputs(this->witness_);
  proof.a.y += TypeParam::Fq::one();
  EXPECT_THROW(groth16_verify<TypeParam>(this->key_.verifying_key(), std::span<const Fr>(pub), proof),
               std::invalid_argument);
}

// A point of the curve (or twist) outside the order-r subgroup: the first
// x = k (or k + u) with a square on the right whose point fails the
// multiplication by r. None exists for BN254's G1 (prime order).
template <class Affine>
std::optional<Affine> point_outside_subgroup() {
  using Field = typename Affine::Field;
  for (std::uint64_t k = 1; k < 1000; ++k) {
    Field x;
    if constexpr (requires { x.c0; }) x = Field{decltype(x.c0)::from_u64(k), decltype(x.c0)::one()};
    else x = Field::from_u64(k);
    auto y = (x.square() * x + Affine::Config::kB).sqrt();
    if (!y) continue;
    const Affine p{x, *y};
    if (p.is_on_curve() && !p.is_in_subgroup_by_order()) return p;
  }
  return std::nullopt;
}

TYPED_TEST(Groth16ProverTest, ProofPointOutsideTheSubgroupIsMalformed) {
  using Fr = typename TypeParam::Fr;
  const auto proof = this->prove(this->witness_);
  const auto pub = this->public_inputs(this->witness_);
  const auto vk = this->key_.verifying_key();
  auto expect_refused = [&](const Groth16Proof<TypeParam>& bad, const std::string& message) {
    try {
      groth16_verify<TypeParam>(vk, std::span<const Fr>(pub), bad);
      ADD_FAILURE() << "accepted: " << message;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "proof: " + message);
    }
    const std::vector<std::vector<Fr>> publics = {pub, pub};
    const std::vector<Groth16Proof<TypeParam>> proofs = {proof, bad};
    try {
      groth16_verify_batch<TypeParam>(vk, std::span<const std::vector<Fr>>(publics),
                                      std::span<const Groth16Proof<TypeParam>>(proofs));
      ADD_FAILURE() << "batch accepted: " << message;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "partition 1: " + message);
    }
  };
  const auto b = point_outside_subgroup<typename TypeParam::G2Affine>();
  ASSERT_TRUE(b.has_value());
  auto bad = proof;
  bad.b = *b;
  expect_refused(bad, "B is not a point of the G2 subgroup");
  if (const auto a = point_outside_subgroup<typename TypeParam::G1Affine>()) {
    bad = proof;
    bad.a = *a;
    expect_refused(bad, "A is not a point of the G1 subgroup");
    bad = proof;
    bad.c = *a;
    expect_refused(bad, "C is not a point of the G1 subgroup");
  } else {
    EXPECT_TRUE((std::is_same_v<TypeParam, Bn254>)) << "only BN254's G1 has prime order";
  }
}

TYPED_TEST(Groth16ProverTest, BadWitnessesAreRefusedWithClearErrors) {
  using Fr = typename TypeParam::Fr;
  auto short_witness = this->witness_;
  short_witness.pop_back();
  try {
    this->prove(short_witness);
    FAIL() << "short witness accepted";
  } catch (const ProveError& e) {
    EXPECT_NE(std::string(e.what()).find("witness has"), std::string::npos) << e.what();
  }
  auto no_one = this->witness_;
  no_one[0] = Fr::from_u64(2);
  EXPECT_THROW(this->prove(no_one), ProveError);

  // Break one constraint: the prover names it (the PCE from .r1cs has C).
  auto broken = this->witness_;
  std::optional<std::uint64_t> expected;
  for (std::size_t i = broken.size() - 1; i > this->key_.num_public; --i) {
    broken[i] += Fr::one();
    expected = this->circuit_->first_unsatisfied(std::span<const Fr>(broken));
    if (expected) break;
    broken[i] -= Fr::one();
  }
  ASSERT_TRUE(expected.has_value());
  try {
    this->prove(broken);
    FAIL() << "unsatisfied witness accepted";
  } catch (const ProveError& e) {
    EXPECT_NE(std::string(e.what()).find("constraint " + std::to_string(*expected)), std::string::npos)
        << e.what();
  }
}

TYPED_TEST(Groth16ProverTest, BatchVerificationCatchesOneBadPartition) {
  using Fr = typename TypeParam::Fr;
  std::vector<Groth16Proof<TypeParam>> proofs;
  std::vector<std::vector<Fr>> publics;
  for (int j = 0; j < 3; ++j) {
    proofs.push_back(this->prove(this->witness_));
    publics.push_back(this->public_inputs(this->witness_));
  }
  auto vk = this->key_.verifying_key();
  EXPECT_TRUE(groth16_verify_batch<TypeParam>(vk, std::span<const std::vector<Fr>>(publics),
                                              std::span<const Groth16Proof<TypeParam>>(proofs)));
  publics[1][0] += Fr::one();
  EXPECT_FALSE(groth16_verify_batch<TypeParam>(vk, std::span<const std::vector<Fr>>(publics),
                                               std::span<const Groth16Proof<TypeParam>>(proofs)));
  publics[1][0] -= Fr::one();
  std::swap(proofs[0].c, proofs[2].c);
  EXPECT_FALSE(groth16_verify_batch<TypeParam>(vk, std::span<const std::vector<Fr>>(publics),
                                               std::span<const Groth16Proof<TypeParam>>(proofs)));
}

}  // namespace
}  // namespace zkfarm
