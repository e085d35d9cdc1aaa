// fixed_base_emulation_test -- the GPU fixed-base multiplication's
// per-thread code (fixed_base_kernels.cuh) run on the CPU against
// scalar_mul.
//
// Plain C++ (no CUDA needed). run_emulated() issues the steps of
// fixed_base.cuh's drivers -- table entries, their batch conversion to
// affine, the per-scalar accumulation, the output conversion -- with a loop
// over thread indices per kernel launch, so the signed-digit recoding
// (carries across windows, the top window), the field inversion and the
// strided batch inversion (identities inside a run) are checked in CI.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/cuda/fixed_base_kernels.cuh"
#include "kernels/curves.h"
#include "kernels/prng.h"

namespace zkfarm::cuda {
namespace {

namespace fk = fixed_base_kernels;

// [scalars[i]] base for every i, as the device computes it, with
// window_bits-bit windows and `threads` threads in each affine conversion.
template <class Curve, class G>
std::vector<typename G::Affine> run_emulated(const typename G::Affine& base,
                                             const std::vector<typename Curve::Fr>& scalars, unsigned window_bits,
                                             std::uint64_t threads) {
  using Pts = DevicePointsOf<typename G::Config>;
  using DeviceAffine = typename Pts::Affine;
  using FrDev = typename DeviceFieldOf<typename Curve::Fr>::type;
  using Affine = typename G::Affine;
  const unsigned windows = Curve::Fr::kBits / window_bits + 1;
  // Window bases on the host, as DeviceFixedBaseTable does.
  std::vector<G> window_base(windows);
  G p = G::from_affine(base);
  for (unsigned w = 0; w < windows; ++w) {
    window_base[w] = p;
    for (unsigned d = 0; d < window_bits; ++d) p = p.dbl();
  }
  std::vector<Affine> host_bases(windows);
  G::batch_to_affine(window_base, host_bases);
  const auto* bases = reinterpret_cast<const DeviceAffine*>(host_bases.data());

  // Table: XYZZ entries, then affine.
  const std::uint64_t count = std::uint64_t(windows) << (window_bits - 1);
  std::vector<typename Pts::Xyzz> xyzz(count);
  for (std::uint64_t i = 0; i < count; ++i) xyzz[i] = fk::table_entry<Pts>(i, window_bits - 1, bases);
  std::vector<DeviceAffine> table(count);
  std::vector<typename Pts::Field> prefix(count);
  for (std::uint64_t t = 0; t < 7; ++t) fk::to_affine_run<Pts>(t, 7, count, xyzz.data(), prefix.data(), table.data());

  // Products, then affine.
  const std::uint64_t n = scalars.size();
  const auto* device_scalars = reinterpret_cast<const FrDev*>(scalars.data());
  xyzz.resize(n);
  for (std::uint64_t i = 0; i < n; ++i)
    xyzz[i] = fk::fixed_base_point<Pts>(device_scalars[i], table.data(), windows, window_bits);
  std::vector<Affine> out(n);
  prefix.assign(n, Pts::Field::zero());
  auto* device_out = reinterpret_cast<DeviceAffine*>(out.data());
  for (std::uint64_t t = 0; t < threads; ++t)
    fk::to_affine_run<Pts>(t, threads, n, xyzz.data(), prefix.data(), device_out);
  return out;
}

template <class Fr>
std::vector<Fr> edge_scalars(std::size_t random_count, std::uint64_t seed) {
  std::vector<Fr> out = {Fr::zero(), Fr::one(), Fr::from_u64(2), -Fr::one(), -Fr::from_u64(2), Fr::zero(),
                         Fr::from_u64(7), Fr::from_u64(8), Fr::from_u64(9), Fr::from_u64(0xffff)};
  Fr power = Fr::one();
  for (unsigned bit = 0; bit < Fr::kBits; ++bit, power += power) {
    out.push_back(power);
    out.push_back(-power);
  }
  Xoshiro256 rng(seed);
  for (std::size_t i = 0; i < random_count; ++i) out.push_back(rng.template field_element<Fr>());
  return out;
}

template <class Curve>
class FixedBaseEmulationTest : public ::testing::Test {};
using Curves = ::testing::Types<Bn254, Bls12381>;
TYPED_TEST_SUITE(FixedBaseEmulationTest, Curves);

template <class Curve, class G>
void check_against_scalar_mul(const typename G::Affine& base, unsigned window_bits, std::uint64_t threads,
                              std::size_t random, std::uint64_t seed) {
  using Fr = typename Curve::Fr;
  const std::vector<Fr> scalars = edge_scalars<Fr>(random, seed);
  const auto got = run_emulated<Curve, G>(base, scalars, window_bits, threads);
  const G g = G::from_affine(base);
  for (std::size_t i = 0; i < scalars.size(); ++i)
    ASSERT_TRUE(got[i] == g.scalar_mul(scalars[i]).to_affine())
        << "scalar " << i << ", window bits " << window_bits << ", threads " << threads;
}

TYPED_TEST(FixedBaseEmulationTest, G1MatchesScalarMul) {
  using Curve = TypeParam;
  for (unsigned c : {4u, 5u, 8u})
    check_against_scalar_mul<Curve, typename Curve::G1>(Curve::g1_generator(), c, 3, 20, 100 + c);
  // The identity as base: every product is (0, 0).
  check_against_scalar_mul<Curve, typename Curve::G1>(typename Curve::G1Affine{}, 4, 2, 3, 7);
}

TYPED_TEST(FixedBaseEmulationTest, G2MatchesScalarMul) {
  using Curve = TypeParam;
  check_against_scalar_mul<Curve, typename Curve::G2>(Curve::g2_generator(), 6, 4, 5, 200);
}

TEST(FixedBaseEmulation, InverseIsFermat) {
  using F = DevFp<Bls12381FqParams>;
  Xoshiro256 rng(3);
  for (int i = 0; i < 20; ++i) {
    const Bls12381Fq x = rng.field_element<Bls12381Fq>();
    if (x.is_zero()) continue;
    EXPECT_EQ(fk::inverse(F::from_host(x)).to_host(), x.inverse());
  }
  EXPECT_TRUE(fk::inverse(F::zero()).is_zero());
}

}  // namespace
}  // namespace zkfarm::cuda
