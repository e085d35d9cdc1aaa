// groth16_setup_test.cc -- the test-only trusted setup makes keys that are
// right point by point (against naive formulas and the toxic waste), pass the
// pairing checks that need no secrets, match snarkjs's layout (coefficients
// byte for byte against a `snarkjs groth16 setup` fixture), and prove and
// verify end to end with the prover.
#include "circuits/groth16_setup.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "formats/pce.h"
#include "formats/wtns.h"
#include "formats/zkey_proving_key.h"
#include "kernels/groth16_prover.h"
#include "kernels/groth16_verifier.h"

namespace zkfarm {
namespace {

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + std::to_string(getpid()) + "_" + name;
}

std::string fixture(const std::string& name) { return "formats/testdata/" + name; }

// prod_{j != i} (x - w^j) / (w^i - w^j) over the size-n domain of root w.
template <class Fr>
Fr naive_lagrange(std::size_t n, const Fr& root, std::size_t i, const Fr& x) {
  Fr num = Fr::one(), den = Fr::one();
  const Fr wi = root.pow(std::uint64_t(i));
  Fr wj = Fr::one();
  for (std::size_t j = 0; j < n; ++j, wj *= root) {
    if (j == i) continue;
    num *= x - wj;
    den *= wi - wj;
  }
  return num * den.inverse();
}

template <class Curve>
typename Curve::G1Affine g1_times(const typename Curve::Fr& k) {
  return Curve::G1::from_affine(Curve::g1_generator()).scalar_mul(k).to_affine();
}
template <class Curve>
typename Curve::G2Affine g2_times(const typename Curve::Fr& k) {
  return Curve::G2::from_affine(Curve::g2_generator()).scalar_mul(k).to_affine();
}

template <class Curve>
Zkey<Curve> round_trip(const Groth16SetupKey<Curve>& key, std::vector<std::uint8_t>& bytes) {
  bytes = serialize_zkey<Curve>(key.write_input());
  ZkeyReadOptions options;
  options.validate_points = true;
  return parse_zkey<Curve>(FileBytes::copy(bytes, "setup.zkey"), options);
}

template <class Curve>
class Groth16SetupTest : public ::testing::Test {};
using Curves = ::testing::Types<Bn254, Bls12381>;
TYPED_TEST_SUITE(Groth16SetupTest, Curves);

TEST(Groth16Setup, DomainSizeIsSnarkjs) {
  // snarkjs: 2^(floor(log2(nConstraints + nPublic)) + 1).
  EXPECT_EQ(groth16_domain_size(1, 0), 2u);
  EXPECT_EQ(groth16_domain_size(3, 1), 8u);  // 4 -> 8
  EXPECT_EQ(groth16_domain_size(300, 5), 512u);
  EXPECT_EQ(groth16_domain_size(506, 5), 512u);   // 511 -> 2^(8+1)
  EXPECT_EQ(groth16_domain_size(507, 5), 1024u);  // 512 -> 2^(9+1)
  EXPECT_EQ(groth16_domain_size(1 << 20, 328), 1u << 21);
  EXPECT_EQ(groth16_domain_size((1 << 20) - 329, 328), 1u << 20);
  EXPECT_EQ(groth16_domain_size((1 << 20) - 328, 328), 1u << 21);
  EXPECT_THROW(groth16_domain_size(std::uint64_t(1) << 31, 0), std::invalid_argument);
}

// Every point against the toxic waste, with Lagrange values from the naive
// product formula (independent of the setup's batch-inversion shortcut) and
// H from the 2n-domain odd-index definition snarkjs uses.
TYPED_TEST(Groth16SetupTest, PointsMatchNaiveFormulas) {
  using Curve = TypeParam;
  using Fr = typename Curve::Fr;
  SyntheticCircuitOptions circuit_options;
  circuit_options.num_constraints = 150;
  circuit_options.num_public = 4;
  SyntheticCircuit<Fr> circuit(circuit_options);
  const R1cs<Fr> r1cs = circuit.to_r1cs();
  Groth16SetupOptions options;
  options.seed = 1;
  const std::uint32_t n = groth16_domain_size(150, 4);
  ASSERT_EQ(n, 256u);
  const ToxicWaste<Fr> toxic = sample_toxic_waste<Fr>(n, options);
  const auto key = groth16_setup<Curve>(r1cs, toxic);
  ASSERT_EQ(key.domain_size, n);
  ASSERT_EQ(key.num_vars, circuit.num_wires());
  ASSERT_EQ(key.num_public, 4u);

  const unsigned log_n = 8;
  const Fr w = root_of_unity<Fr>(log_n);
  std::vector<Fr> lagrange(n);
  for (std::uint32_t i = 0; i < n; ++i) lagrange[i] = naive_lagrange(n, w, i, toxic.tau);
  std::vector<Fr> u(key.num_vars), v(key.num_vars), c(key.num_vars);
  const SparseMatrix<Fr>* ms[3] = {&r1cs.a, &r1cs.b, &r1cs.c};
  std::vector<Fr>* sums[3] = {&u, &v, &c};
  for (int m = 0; m < 3; ++m)
    for (std::uint32_t row = 0; row < r1cs.num_constraints; ++row)
      for (auto i = ms[m]->row_offsets[row]; i < ms[m]->row_offsets[row + 1]; ++i)
        (*sums[m])[ms[m]->cols[i]] += ms[m]->values[i] * lagrange[row];
  for (std::uint32_t s = 0; s <= 4; ++s) u[s] += lagrange[150 + s];

  EXPECT_EQ(key.alpha1, g1_times<Curve>(toxic.alpha));
  EXPECT_EQ(key.beta1, g1_times<Curve>(toxic.beta));
  EXPECT_EQ(key.delta1, g1_times<Curve>(toxic.delta));
  EXPECT_EQ(key.beta2, g2_times<Curve>(toxic.beta));
  EXPECT_EQ(key.gamma2, g2_times<Curve>(toxic.gamma));
  EXPECT_EQ(key.delta2, g2_times<Curve>(toxic.delta));
  ASSERT_EQ(key.a.size(), key.num_vars);
  ASSERT_EQ(key.b1.size(), key.num_vars);
  ASSERT_EQ(key.b2.size(), key.num_vars);
  ASSERT_EQ(key.ic.size(), 5u);
  ASSERT_EQ(key.c.size(), key.num_vars - 5);
  ASSERT_EQ(key.h.size(), n);
  for (std::uint32_t s = 0; s < key.num_vars; ++s) {
    EXPECT_EQ(key.a[s], g1_times<Curve>(u[s])) << "A " << s;
    EXPECT_EQ(key.b1[s], g1_times<Curve>(v[s])) << "B1 " << s;
    EXPECT_EQ(key.b2[s], g2_times<Curve>(v[s])) << "B2 " << s;
    const Fr k = toxic.beta * u[s] + toxic.alpha * v[s] + c[s];
    if (s <= 4) EXPECT_EQ(key.ic[s], g1_times<Curve>(k * toxic.gamma.inverse())) << "IC " << s;
    else EXPECT_EQ(key.c[s - 5], g1_times<Curve>(k * toxic.delta.inverse())) << "C " << s;
  }
  const Fr w2 = root_of_unity<Fr>(log_n + 1);
  const Fr delta_inv = toxic.delta.inverse();
  for (std::uint32_t i = 0; i < n; ++i)
    EXPECT_EQ(key.h[i], g1_times<Curve>(naive_lagrange(2 * n, w2, 2 * i + 1, toxic.tau) * delta_inv)) << "H " << i;
}

// Pairing relations a key must satisfy, checked without the toxic waste.
TYPED_TEST(Groth16SetupTest, PairingConsistency) {
  using Curve = TypeParam;
  using Fr = typename Curve::Fr;
  using G1Affine = typename Curve::G1Affine;
  using G2Affine = typename Curve::G2Affine;
  SyntheticCircuitOptions circuit_options;
  circuit_options.num_constraints = 60;
  circuit_options.num_public = 2;
  SyntheticCircuit<Fr> circuit(circuit_options);
  Groth16SetupOptions options;  // OS randomness
  const auto key = groth16_setup<Curve>(
      circuit, sample_toxic_waste<Fr>(groth16_domain_size(60, 2), options));
  const G1Affine g1 = Curve::g1_generator();
  const G2Affine g2 = Curve::g2_generator();
  auto same_exponent = [&](const G1Affine& p, const G2Affine& q) {
    const G1Affine lhs[2] = {p, -g1};
    const G2Affine rhs[2] = {g2, q};
    return Curve::multi_pairing(lhs, rhs) == Curve::Fq12::one();
  };
  EXPECT_TRUE(same_exponent(key.beta1, key.beta2));
  EXPECT_TRUE(same_exponent(key.delta1, key.delta2));
  EXPECT_FALSE(same_exponent(key.alpha1, key.beta2));
  std::size_t non_zero = 0;
  for (std::uint32_t s = 0; s < key.num_vars; ++s) {
    EXPECT_TRUE(same_exponent(key.b1[s], key.b2[s])) << "signal " << s;
    EXPECT_TRUE(key.a[s].is_on_curve() && key.b1[s].is_on_curve() && key.b2[s].is_in_subgroup());
    non_zero += !key.b1[s].is_identity();
  }
  EXPECT_GT(non_zero, 0u);
}

// The QAP in the exponent, through the real prover and verifier: setup ->
// .zkey bytes -> parse -> PCE from the coefficient section -> prove -> verify,
// for a PoRep-shaped circuit (328 public inputs).
TYPED_TEST(Groth16SetupTest, ProveAndVerifyEndToEnd) {
  using Curve = TypeParam;
  using Fr = typename Curve::Fr;
  SyntheticCircuitOptions circuit_options;
  circuit_options.num_constraints = 2000;
  SyntheticCircuit<Fr> circuit(circuit_options);
  Groth16SetupOptions options;
  options.seed = 77;
  const auto key = groth16_setup<Curve>(
      circuit, sample_toxic_waste<Fr>(groth16_domain_size(2000, 328), options));
  std::vector<std::uint8_t> bytes;
  const Zkey<Curve> zkey = round_trip(key, bytes);
  const auto pce = pce_from_zkey(zkey.coefficients, zkey.num_public);
  const auto witness = circuit.witness();
  const auto proof = groth16_prove<Curve>(proving_key_from_zkey(zkey), pce, std::span<const Fr>(witness));
  std::vector<Fr> public_inputs(witness.begin() + 1, witness.begin() + 1 + 328);
  const auto vk = zkey.verifying_key();
  EXPECT_TRUE(groth16_verify<Curve>(vk, std::span<const Fr>(public_inputs), proof));
  public_inputs[100] += Fr::one();
  EXPECT_FALSE(groth16_verify<Curve>(vk, std::span<const Fr>(public_inputs), proof));
  // The in-memory verifying key is the parsed one.
  EXPECT_EQ(key.verifying_key().ic, vk.ic);

  // With the .r1cs-built PCE (which has C) the prover checks the witness.
  const auto pce_r1cs = pce_from_r1cs(circuit.to_r1cs());
  auto bad_witness = witness;
  bad_witness[1 + 328 + 5] += Fr::one();  // the private copy of public input 5
  EXPECT_THROW(groth16_prove<Curve>(proving_key_from_zkey(zkey), pce_r1cs, std::span<const Fr>(bad_witness)),
               ProveError);
}

TYPED_TEST(Groth16SetupTest, SeedMakesTheKeyReproducible) {
  using Curve = TypeParam;
  using Fr = typename Curve::Fr;
  SyntheticCircuitOptions circuit_options;
  circuit_options.num_constraints = 100;
  circuit_options.num_public = 3;
  SyntheticCircuit<Fr> circuit(circuit_options);
  const std::uint32_t n = groth16_domain_size(100, 3);
  Groth16SetupOptions options;
  options.seed = 5;
  const auto a = serialize_zkey<Curve>(groth16_setup<Curve>(circuit, sample_toxic_waste<Fr>(n, options)).write_input());
  const auto b = serialize_zkey<Curve>(groth16_setup<Curve>(circuit, sample_toxic_waste<Fr>(n, options)).write_input());
  EXPECT_EQ(a, b);
  // Setup from the synthetic generator equals setup from its R1cs.
  const auto c = serialize_zkey<Curve>(groth16_setup<Curve>(circuit.to_r1cs(), sample_toxic_waste<Fr>(n, options)).write_input());
  EXPECT_EQ(a, c);
  options.seed = 6;
  const auto d = serialize_zkey<Curve>(groth16_setup<Curve>(circuit, sample_toxic_waste<Fr>(n, options)).write_input());
  EXPECT_NE(a, d);
  EXPECT_EQ(a.size(), d.size());
  options.seed.reset();
  const auto e = sample_toxic_waste<Fr>(n, options), f = sample_toxic_waste<Fr>(n, options);
  EXPECT_NE(e.tau, f.tau);
}

// The synthetic circuit's scalars, its blocks enumerated on all cores, equal
// the generic serial enumeration's (coefficient order included), and
// without coefficients only the coefficient list is left out.
TYPED_TEST(Groth16SetupTest, ParallelSyntheticScalarsMatchSerial) {
  using Curve = TypeParam;
  using Fr = typename Curve::Fr;
  SyntheticCircuitOptions circuit_options;
  circuit_options.num_constraints = 5000;  // 48 blocks
  circuit_options.num_public = 40;
  const SyntheticCircuit<Fr> circuit(circuit_options);
  Groth16SetupOptions options;
  options.seed = 3;
  const auto toxic = sample_toxic_waste<Fr>(groth16_domain_size(5000, 40), options);
  const auto serial = groth16_setup_scalars(circuit.to_r1cs(), toxic);
  const auto parallel = groth16_setup_scalars(circuit, toxic);
  EXPECT_EQ(parallel.a, serial.a);
  EXPECT_EQ(parallel.b, serial.b);
  EXPECT_EQ(parallel.k, serial.k);
  EXPECT_EQ(parallel.h, serial.h);
  ASSERT_EQ(parallel.coefficients.size(), serial.coefficients.size());
  for (std::size_t i = 0; i < serial.coefficients.size(); ++i) {
    const auto &x = parallel.coefficients[i], &y = serial.coefficients[i];
    ASSERT_TRUE(x.matrix == y.matrix && x.constraint == y.constraint && x.signal == y.signal && x.value == y.value)
        << "coefficient " << i;
  }
  const auto bare = groth16_setup_scalars(circuit, toxic, false);
  EXPECT_TRUE(bare.coefficients.empty());
  EXPECT_EQ(bare.k, serial.k);
  EXPECT_GT(serial.b_nonzero(), 0u);
  EXPECT_LT(serial.b_nonzero(), serial.b.size());
}

// Against `snarkjs groth16 setup` on the same circuit (formats/testdata, made
// by make_fixtures.sh from mul.circom: an output, two public inputs, non-unit
// coefficients): same header sizes, the coefficient section entry for entry
// (it does not depend on the toxic waste), the same points at infinity; and
// the key proves the fixture's circom witness.
TYPED_TEST(Groth16SetupTest, MatchesSnarkjsSetupOfTheFixture) {
  using Curve = TypeParam;
  using Fr = typename Curve::Fr;
  const std::string name = Curve::kName;
  const std::string zkey_path = temp_path(name + "_ours.zkey");
  Groth16SetupOptions options;
  options.seed = 3;
  const Groth16SetupReport report = run_setup(fixture(name + "_mul.r1cs"), zkey_path, options);
  EXPECT_EQ(report.curve, curve_id_of<Curve>());
  ZkeyReadOptions read_options;
  read_options.validate_points = true;
  const Zkey<Curve> ours = read_zkey<Curve>(zkey_path, read_options);
  const Zkey<Curve> theirs = read_zkey<Curve>(fixture(name + "_mul_0000.zkey"));
  EXPECT_EQ(ours.num_vars, theirs.num_vars);
  EXPECT_EQ(ours.num_public, theirs.num_public);
  EXPECT_EQ(ours.domain_size, theirs.domain_size);
  EXPECT_EQ(report.domain_size, theirs.domain_size);
  ASSERT_EQ(ours.coefficients.size(), theirs.coefficients.size());
  for (std::size_t i = 0; i < ours.coefficients.size(); ++i) {
    const auto x = ours.coefficients[i], y = theirs.coefficients[i];
    EXPECT_EQ(x.matrix, y.matrix) << i;
    EXPECT_EQ(x.constraint, y.constraint) << i;
    EXPECT_EQ(x.signal, y.signal) << i;
    EXPECT_EQ(x.value, y.value) << i;
  }
  auto same_infinities = [](auto ours_points, auto theirs_points, const char* what) {
    ASSERT_EQ(ours_points.size(), theirs_points.size()) << what;
    for (std::size_t i = 0; i < ours_points.size(); ++i)
      EXPECT_EQ(ours_points[i].is_identity(), theirs_points[i].is_identity()) << what << " " << i;
  };
  same_infinities(ours.ic.span(), theirs.ic.span(), "IC");
  same_infinities(ours.a.span(), theirs.a.span(), "A");
  same_infinities(ours.b1.span(), theirs.b1.span(), "B1");
  same_infinities(ours.b2.span(), theirs.b2.span(), "B2");
  same_infinities(ours.c.span(), theirs.c.span(), "C");
  same_infinities(ours.h.span(), theirs.h.span(), "H");

  const auto witness = read_wtns<Fr>(fixture(name + "_mul.wtns"), ours.num_vars);
  const auto pce = pce_from_r1cs(read_r1cs<Fr>(fixture(name + "_mul.r1cs")));
  const auto proof = groth16_prove<Curve>(proving_key_from_zkey(ours), pce, std::span<const Fr>(witness));
  std::vector<Fr> public_inputs(witness.begin() + 1, witness.begin() + 1 + ours.num_public);
  EXPECT_TRUE(groth16_verify<Curve>(ours.verifying_key(), std::span<const Fr>(public_inputs), proof));
  std::remove(zkey_path.c_str());
}

TEST(Groth16Setup, RejectsBadInput) {
  R1cs<Bn254Fr> r1cs;
  r1cs.num_wires = 3;
  r1cs.num_pub_in = 1;
  r1cs.num_constraints = 1;
  const std::uint32_t cols[] = {0, 5};
  const Bn254Fr values[] = {Bn254Fr::one(), Bn254Fr::one()};
  r1cs.a.add_row(cols, values);  // wire 5 >= nVars
  r1cs.b.add_row({}, {});
  r1cs.c.add_row({}, {});
  Groth16SetupOptions options;
  options.seed = 1;
  const auto toxic = sample_toxic_waste<Bn254Fr>(groth16_domain_size(1, 1), options);
  EXPECT_THROW(groth16_setup<Bn254>(r1cs, toxic), std::invalid_argument);
  r1cs.num_pub_in = 3;  // 3 public signals + wire 0 > 3 wires
  EXPECT_THROW(groth16_setup<Bn254>(r1cs, toxic), std::invalid_argument);
  r1cs.num_pub_in = 1;
  r1cs.b.row_offsets.push_back(0);  // 2 rows for 1 constraint
  EXPECT_THROW(groth16_setup<Bn254>(r1cs, toxic), std::invalid_argument);
  // A tau inside the domain would divide by zero.
  ToxicWaste<Bn254Fr> in_domain = toxic;
  in_domain.tau = root_of_unity<Bn254Fr>(2);
  R1cs<Bn254Fr> ok;
  ok.num_wires = 2;
  ok.num_constraints = 1;
  ok.a.add_row({}, {});
  ok.b.add_row({}, {});
  ok.c.add_row({}, {});
  EXPECT_NO_THROW(groth16_setup<Bn254>(ok, toxic));
  EXPECT_THROW(groth16_setup<Bn254>(ok, in_domain), std::invalid_argument);
  EXPECT_THROW(run_setup("/nonexistent/x.r1cs", temp_path("never.zkey")), FormatError);
}

}  // namespace
}  // namespace zkfarm
