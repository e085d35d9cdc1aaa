// synthetic_circuit_test.cc -- the synthetic PoRep-profile circuits are
// satisfiable, deterministic, shaped like a PoRep partition and written as
// files that our readers (and therefore snarkjs's layout) accept.
#include "circuits/synthetic_circuit.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/files.h"
#include "formats/r1cs.h"
#include "formats/wtns.h"

namespace zkfarm {
namespace {

std::vector<std::uint8_t> slurp(const std::string& path) {
  const std::string text = read_file(path);
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + std::to_string(getpid()) + "_" + name;
}

template <class Fr>
class SyntheticCircuitTest : public ::testing::Test {};
using Fields = ::testing::Types<Bn254Fr, Bls12381Fr>;
TYPED_TEST_SUITE(SyntheticCircuitTest, Fields);

TYPED_TEST(SyntheticCircuitTest, WitnessSatisfiesEveryConstraint) {
  using Fr = TypeParam;
  for (std::uint64_t n : {1ull, 5ull, 328ull, 329ull, 1000ull, 4321ull, 65536ull}) {
    SyntheticCircuitOptions options;
    options.num_constraints = n;
    options.seed = n * 7 + 1;
    SyntheticCircuit<Fr> circuit(options);
    const auto witness = circuit.witness();
    ASSERT_EQ(witness.size(), circuit.num_wires());
    EXPECT_TRUE(witness[0].is_one());
    EXPECT_EQ(circuit.first_unsatisfied(witness), std::nullopt) << "n = " << n;
    std::uint64_t count = 0;
    circuit.for_each_constraint([&](std::uint64_t index, auto, auto, auto) { EXPECT_EQ(index, count++); });
    EXPECT_EQ(count, n);
  }
}

TYPED_TEST(SyntheticCircuitTest, SmallPublicCountsAndCutBlocks) {
  using Fr = TypeParam;
  for (std::uint32_t pub : {0u, 1u, 3u}) {
    for (std::uint64_t n : {1ull, 2ull, 99ull, 100ull, 101ull, 257ull}) {
      SyntheticCircuitOptions options;
      options.num_constraints = n;
      options.num_public = pub;
      SyntheticCircuit<Fr> circuit(options);
      const auto witness = circuit.witness();
      EXPECT_EQ(circuit.first_unsatisfied(witness), std::nullopt) << "n = " << n << " pub = " << pub;
      EXPECT_EQ(circuit.to_r1cs().num_constraints, n);
    }
  }
}

TYPED_TEST(SyntheticCircuitTest, BrokenWitnessIsCaught) {
  using Fr = TypeParam;
  SyntheticCircuitOptions options;
  options.num_constraints = 328 + 100 * 47;  // whole blocks: the last wire is constrained
  SyntheticCircuit<Fr> circuit(options);
  auto witness = circuit.witness();
  // The last wire belongs to the last block's unpack gadget (its A side).
  witness.back() += Fr::one();
  auto failing = circuit.first_unsatisfied(witness);
  ASSERT_TRUE(failing.has_value());
  EXPECT_EQ(*failing, options.num_constraints - 1);
  // A public input breaks its copy constraint.
  witness = circuit.witness();
  witness[7] += Fr::one();
  EXPECT_EQ(circuit.first_unsatisfied(witness), std::optional<std::uint64_t>(6));
  EXPECT_THROW(circuit.first_unsatisfied(std::span<const Fr>(witness).first(10)), std::invalid_argument);
}

TYPED_TEST(SyntheticCircuitTest, PoRepProfile) {
  using Fr = TypeParam;
  SyntheticCircuitOptions options;
  options.num_constraints = std::uint64_t(1) << 17;
  SyntheticCircuit<Fr> circuit(options);
  const auto witness = circuit.witness();
  const R1csProfile p = circuit.profile(witness);
  EXPECT_EQ(circuit.num_public(), 328u);
  EXPECT_NEAR(p.per_row(0), 2.4, 0.05);
  EXPECT_NEAR(p.per_row(1), 1.0, 0.01);
  EXPECT_NEAR(p.per_row(2), 2.2, 0.05);
  EXPECT_NEAR(p.aux_in_b_fraction(), 0.25, 0.02);
  EXPECT_GT(p.binary_witness_fraction(), 0.85);
  // ~1 wire per constraint, as in PoRep (130.3M constraints, ~130M wires).
  EXPECT_NEAR(double(circuit.num_wires()) / double(p.num_constraints), 1.02, 0.02);
  // Some full-field values (fmul gadgets and public commitments).
  std::size_t large = 0;
  for (const Fr& v : witness) large += v.to_canonical().num_bits() > 128;
  EXPECT_GT(large, circuit.num_blocks());
}

TYPED_TEST(SyntheticCircuitTest, DeterministicPerSeed) {
  using Fr = TypeParam;
  SyntheticCircuitOptions options;
  options.num_constraints = 3000;
  options.seed = 42;
  SyntheticCircuit<Fr> a(options), b(options);
  EXPECT_EQ(a.witness(), b.witness());
  EXPECT_EQ(a.to_r1cs(), b.to_r1cs());
  options.seed = 43;
  SyntheticCircuit<Fr> c(options);
  EXPECT_NE(a.witness(), c.witness());
  EXPECT_NE(a.to_r1cs(), c.to_r1cs());
}

TYPED_TEST(SyntheticCircuitTest, StreamedFilesMatchTheFormatWriters) {
  using Fr = TypeParam;
  SyntheticCircuitOptions options;
  options.num_constraints = 20000;  // several write batches
  options.num_public = 17;
  SyntheticCircuit<Fr> circuit(options);
  const std::string r1cs_path = temp_path("synthetic.r1cs"), wtns_path = temp_path("synthetic.wtns");
  write_synthetic_circuit(circuit, r1cs_path, wtns_path);
  const auto r1cs = circuit.to_r1cs();
  const auto witness = circuit.witness();
  EXPECT_EQ(slurp(r1cs_path), serialize_r1cs(r1cs));
  EXPECT_EQ(slurp(wtns_path), serialize_wtns<Fr>(witness));

  const auto parsed = read_r1cs<Fr>(r1cs_path);
  EXPECT_EQ(parsed.num_wires, circuit.num_wires());
  EXPECT_EQ(parsed.num_pub_out, 0u);
  EXPECT_EQ(parsed.num_pub_in, 17u);
  EXPECT_EQ(parsed.num_prv_in, 0u);
  EXPECT_EQ(parsed.num_constraints, 20000u);
  EXPECT_EQ(parsed.a, r1cs.a);
  EXPECT_EQ(parsed.b, r1cs.b);
  EXPECT_EQ(parsed.c, r1cs.c);
  EXPECT_EQ(read_wtns<Fr>(wtns_path, circuit.num_wires()), witness);
  std::remove(r1cs_path.c_str());
  std::remove(wtns_path.c_str());
}

TEST(SyntheticCircuit, GenerateByCurveId) {
  SyntheticCircuitOptions options;
  options.num_constraints = 1234;
  const std::string r1cs_path = temp_path("gen.r1cs"), wtns_path = temp_path("gen.wtns");
  for (CurveId curve : {CurveId::kBn254, CurveId::kBls12381}) {
    const SyntheticCircuitInfo info = generate_synthetic_circuit(curve, options, r1cs_path, wtns_path);
    EXPECT_EQ(info.num_constraints, 1234u);
    EXPECT_EQ(info.num_public, 328u);
    EXPECT_EQ(r1cs_curve(FileBytes::map(r1cs_path)), curve);
    EXPECT_EQ(wtns_curve(FileBytes::map(wtns_path)), curve);
  }
  // Either file may be skipped.
  std::remove(wtns_path.c_str());
  generate_synthetic_circuit(CurveId::kBn254, options, "", wtns_path);
  EXPECT_EQ(read_wtns<Bn254Fr>(wtns_path).size(), SyntheticCircuit<Bn254Fr>(options).num_wires());
  std::remove(r1cs_path.c_str());
  std::remove(wtns_path.c_str());
}

TEST(SyntheticCircuit, RejectsImpossibleSizes) {
  SyntheticCircuitOptions options;
  options.num_constraints = 0;
  EXPECT_THROW(SyntheticCircuit<Bn254Fr>{options}, std::invalid_argument);
  options.num_constraints = std::uint64_t(1) << 32;
  EXPECT_THROW(SyntheticCircuit<Bn254Fr>{options}, std::invalid_argument);
}

TEST(Xoshiro256, FieldElementsAreCanonicalAndVaried) {
  Xoshiro256 rng(9);
  Bls12381Fr prev = Bls12381Fr::zero();
  for (int i = 0; i < 1000; ++i) {
    Bls12381Fr x = rng.field_element<Bls12381Fr>();
    EXPECT_TRUE(x.mont < Bls12381Fr::kModulus);
    EXPECT_NE(x, prev);
    prev = x;
  }
  for (int i = 0; i < 1000; ++i) EXPECT_LT(rng.below(7), 7u);
}

}  // namespace
}  // namespace zkfarm
