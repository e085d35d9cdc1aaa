// setup_device_test -- the GPU setup (circuits/setup_device.h) makes the
// CPU setup's key byte for byte, and the fixed-base multiplication under it
// (kernels/cuda/fixed_base.h) equals scalar_mul on edge-case scalars, small
// windows and batches that split the input.
//
// Runs on device 0. Without a usable CUDA device every test is reported as
// SKIPPED (GTEST_SKIP), never as passed; the Bazel target is tagged "gpu"
// (and "local": it needs the machine's device).
//   bazel test //tests/gpu:setup_device_test --test_tag_filters=gpu
// or from the bundle: tests/gpu/run_gpu_tests.sh.
#include <gtest/gtest.h>

#ifndef ZKFARM_HAS_CUDA

TEST(SetupDevice, SkippedWithoutCuda) { GTEST_SKIP() << "SKIPPED: no CUDA device (built without CUDA)"; }

#else

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "formats/zkey.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/fixed_base.h"
#include "circuits/setup_device.h"
#include "kernels/curves.h"
#include "circuits/groth16_setup.h"
#include "circuits/synthetic_circuit.h"
#include "tests/gpu/test_inputs.h"

namespace zkfarm::cuda {
namespace {

// One context per process (as in the worker), or null without a device.
const DeviceContext* context() {
  static const std::unique_ptr<DeviceContext> ctx = []() -> std::unique_ptr<DeviceContext> {
    if (DeviceContext::visible_device_count() == 0) {
      std::printf("SKIPPED: no CUDA device\n");
      return nullptr;
    }
    return std::make_unique<DeviceContext>(0);
  }();
  return ctx.get();
}

#define REQUIRE_GPU()                                                    \
  do {                                                                   \
    if (context() == nullptr) GTEST_SKIP() << "SKIPPED: no CUDA device"; \
  } while (0)

template <class Curve>
class SetupDeviceTest : public ::testing::Test {};
using Curves = ::testing::Types<Bn254, Bls12381>;
TYPED_TEST_SUITE(SetupDeviceTest, Curves);

// Scalars that stress the digit recoding: 0, 1, 2, r - 1, r - 2, powers of
// two at and around window edges, all-ones-per-window patterns, random.
template <class Fr>
std::vector<Fr> edge_scalars(std::size_t random_count, std::uint64_t seed) {
  std::vector<Fr> out = {Fr::zero(), Fr::one(), Fr::from_u64(2), -Fr::one(), -Fr::from_u64(2),
                         Fr::from_u64(0xffff), Fr::from_u64(0x8000), Fr::from_u64(0x7fff), Fr::from_u64(0x18000)};
  Fr power = Fr::one();
  for (unsigned bit = 0; bit < Fr::kBits; ++bit, power += power)
    if (bit % 16 == 15 || bit % 16 == 0 || bit + 1 == Fr::kBits) {
      out.push_back(power);
      out.push_back(-power);
    }
  const std::vector<Fr> random = testing::random_elements<Fr>(random_count, seed);
  out.insert(out.end(), random.begin(), random.end());
  return out;
}

template <class Curve, class G>
void expect_fixed_base_matches(const typename G::Affine& base, const GpuFixedBaseConfig& config, std::size_t random,
                               std::uint64_t seed) {
  using Fr = typename Curve::Fr;
  using Affine = typename G::Affine;
  const DeviceContext& ctx = *context();
  const cudaStream_t stream = ctx.stream(0);
  const std::vector<Fr> scalars = edge_scalars<Fr>(random, seed);
  const std::size_t n = scalars.size();
  DeviceBuffer<Fr> device_scalars(n, stream);
  device_scalars.upload(scalars.data(), n, stream);
  DeviceBuffer<Affine> device_out(n, stream);
  // Poison the output: every element must be written.
  ZKFARM_CUDA_CHECK(cudaMemsetAsync(device_out.data(), 0x5a, device_out.bytes(), stream));
  const DeviceFixedBaseTable<Curve, G> table(ctx, base, stream, config);
  table.mul_many(device_scalars.data(), n, device_out.data(), stream);
  std::vector<Affine> got(n);
  device_out.download(got.data(), n, stream);
  ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
  const G g = G::from_affine(base);
  for (std::size_t i = 0; i < n; ++i) {
    const Affine want = g.scalar_mul(scalars[i]).to_affine();
    ASSERT_TRUE(got[i] == want) << "scalar " << i << " of " << n << ", window bits " << config.window_bits;
  }
}

TYPED_TEST(SetupDeviceTest, FixedBaseMatchesScalarMul) {
  REQUIRE_GPU();
  using Curve = TypeParam;
  for (unsigned c : {16u, 4u, 7u, 13u}) {
    GpuFixedBaseConfig config;
    config.window_bits = c;
    config.batch = 300;             // several batches, the last one short
    config.points_per_thread = 5;   // several points per inversion
    expect_fixed_base_matches<Curve, typename Curve::G1>(Curve::g1_generator(), config, 700, 11 + c);
    expect_fixed_base_matches<Curve, typename Curve::G2>(Curve::g2_generator(), config, 300, 21 + c);
  }
  // Default config, a base other than the generator, and the identity base.
  const auto other = Curve::G1::from_affine(Curve::g1_generator()).scalar_mul(Curve::Fr::from_u64(12345));
  expect_fixed_base_matches<Curve, typename Curve::G1>(other.to_affine(), GpuFixedBaseConfig{}, 2000, 31);
  expect_fixed_base_matches<Curve, typename Curve::G1>(typename Curve::G1Affine{}, GpuFixedBaseConfig{}, 10, 41);
}

TYPED_TEST(SetupDeviceTest, KeyIsByteIdenticalToTheCpuSetup) {
  REQUIRE_GPU();
  using Curve = TypeParam;
  using Fr = typename Curve::Fr;
  const DeviceContext& ctx = *context();
  for (std::uint64_t constraints : {std::uint64_t(100), std::uint64_t(3000)}) {
    SyntheticCircuitOptions circuit_options;
    circuit_options.num_constraints = constraints;
    circuit_options.num_public = constraints < 1000 ? 3 : 328;
    circuit_options.seed = 9;
    const SyntheticCircuit<Fr> circuit(circuit_options);
    const R1cs<Fr> r1cs = circuit.to_r1cs();
    Groth16SetupOptions options;
    options.seed = 7;
    const ToxicWaste<Fr> toxic =
        sample_toxic_waste<Fr>(groth16_domain_size(constraints, circuit_options.num_public), options);

    const auto cpu = serialize_zkey<Curve>(groth16_setup<Curve>(r1cs, toxic).write_input());
    auto scalars = groth16_setup_scalars(r1cs, toxic);
    DeviceSetupTimings timings;
    const DeviceSetupKey<Curve> device_key = groth16_setup_device<Curve>(ctx, scalars, &timings);
    EXPECT_EQ(device_key.proving_key.num_vars, circuit.num_wires());
    EXPECT_GT(timings.total_ms, 0);
    const auto gpu =
        serialize_zkey<Curve>(download_setup_key<Curve>(ctx, device_key, std::move(scalars.coefficients)).write_input());
    ASSERT_EQ(cpu.size(), gpu.size()) << constraints << " constraints";
    EXPECT_TRUE(cpu == gpu) << constraints << " constraints: the device key differs from the CPU key";
  }
}

// The CLI's `zkfarm setup --device 0` path: same .zkey file as `zkfarm setup`.
TEST(SetupDevice, RunSetupDeviceWritesTheCpuSetupsFile) {
  REQUIRE_GPU();
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string prefix = std::string(dir ? dir : "/tmp") + "/setup_device_test_" + std::to_string(getpid());
  for (CurveId curve : {CurveId::kBn254, CurveId::kBls12381}) {
    SyntheticCircuitOptions circuit_options;
    circuit_options.num_constraints = 500;
    circuit_options.num_public = 5;
    generate_synthetic_circuit(curve, circuit_options, prefix + ".r1cs", "");
    Groth16SetupOptions options;
    options.seed = 11;
    run_setup(prefix + ".r1cs", prefix + "_cpu.zkey", options);
    const DeviceSetupReport report = run_setup_device(prefix + ".r1cs", prefix + "_gpu.zkey", options, 0);
    EXPECT_EQ(report.setup.curve, curve);
    EXPECT_GT(report.device.total_ms, 0);
    const auto cpu = FileBytes::map(prefix + "_cpu.zkey");
    const auto gpu = FileBytes::map(prefix + "_gpu.zkey");
    const auto a = cpu->bytes(), b = gpu->bytes();
    ASSERT_EQ(a.size(), b.size());
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin())) << "the .zkey files differ";
  }
  EXPECT_THROW(run_setup_device(prefix + ".r1cs", prefix + "_bad.zkey", Groth16SetupOptions{},
                                DeviceContext::visible_device_count()),
               NoSuchDevice);
  for (const char* suffix : {".r1cs", "_cpu.zkey", "_gpu.zkey"}) std::remove((prefix + suffix).c_str());
}

TEST(SetupDevice, RejectsInconsistentScalars) {
  REQUIRE_GPU();
  Groth16SetupScalars<Bn254Fr> scalars;
  scalars.num_vars = 4;
  scalars.num_public = 1;
  scalars.domain_size = 8;
  scalars.a.resize(4);
  scalars.b.resize(3);  // wrong
  scalars.k.resize(4);
  scalars.h.resize(8);
  EXPECT_THROW(groth16_setup_device<Bn254>(*context(), scalars), std::invalid_argument);
}

}  // namespace
}  // namespace zkfarm::cuda

#endif  // ZKFARM_HAS_CUDA
