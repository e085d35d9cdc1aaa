// cuda_backend_test -- the worker's CUDA backend on device 0: load() from
// files as the worker does, proofs that verify, the CPU backend's error
// codes for bad witnesses, resident state reused across proofs, and a
// missing device refused at construction. SKIPPED (never passed) without a
// CUDA device or a CUDA build; tagged "gpu".
#include <gtest/gtest.h>

#ifndef ZKFARM_HAS_CUDA

TEST(CudaBackend, SkippedWithoutCuda) { GTEST_SKIP() << "SKIPPED: no CUDA device (built without CUDA)"; }

#else

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cluster/groth16_glue.h"
#include "formats/pce.h"
#include "formats/wtns.h"
#include "formats/zkey.h"
#include "kernels/cuda/device_context.h"
#include "kernels/curves.h"
#include "kernels/groth16_setup.h"
#include "kernels/groth16_verifier.h"
#include "kernels/synthetic_circuit.h"
#include "worker/cuda_backend.h"

namespace zkfarm {
namespace {

bool have_gpu() { return cuda::DeviceContext::visible_device_count() > 0; }

std::string temp_dir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(base ? base : "/tmp") + "/cuda_backend_test_XXXXXX";
  if (!mkdtemp(dir.data())) throw std::runtime_error("mkdtemp failed");
  return dir;
}

template <class Curve>
class CudaBackendTest : public ::testing::Test {};
using Curves = ::testing::Types<Bn254, Bls12381>;
TYPED_TEST_SUITE(CudaBackendTest, Curves);

TYPED_TEST(CudaBackendTest, LoadsFilesAndProvesOnTheDevice) {
  if (!have_gpu()) GTEST_SKIP() << "SKIPPED: no CUDA device";
  using Curve = TypeParam;
  using Fr = typename Curve::Fr;
  SyntheticCircuitOptions options;
  options.num_constraints = 3000;
  options.num_public = 4;
  options.seed = 3;
  SyntheticCircuit<Fr> circuit(options);
  const R1cs<Fr> r1cs = circuit.to_r1cs();
  Groth16SetupOptions setup_options;
  setup_options.seed = 4;
  const auto key = groth16_setup<Curve>(
      r1cs, sample_toxic_waste<Fr>(groth16_domain_size(r1cs.num_constraints, r1cs.num_public()), setup_options));
  const std::string dir = temp_dir();
  write_zkey<Curve>(dir + "/c.zkey", key.write_input());
  Pce<Fr>::from_r1cs(r1cs).save(dir + "/c.pce");
  std::vector<Fr> witness = circuit.witness();

  CudaBackend backend(0);
  EXPECT_EQ(backend.device().backend, "cuda");
  EXPECT_EQ(backend.device().ordinal, 0);
  const std::uint64_t before = backend.memory_used_bytes();
  auto loaded = backend.load(dir + "/c.zkey", dir + "/c.pce");
  EXPECT_GT(backend.memory_used_bytes(), before);  // key + PCE resident
  EXPECT_EQ(loaded->num_vars(), key.num_vars);

  auto wtns = [&](const std::vector<Fr>& values) {
    return FileBytes::adopt(serialize_wtns<Fr>(std::span<const Fr>(values)), "w.wtns");
  };
  std::span<const Fr> pub(witness.data() + 1, key.num_public);
  for (int i = 0; i < 2; ++i) {  // the second proof reuses the resident state
    ProverStageTimings timings;
    const std::string bytes = backend.prove(*loaded, wtns(witness), &timings, nullptr);
    const auto proof = decode_proof<Curve>(
        std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
    EXPECT_TRUE(groth16_verify<Curve>(key.verifying_key(), pub, proof));
    EXPECT_GT(timings.prove, 0);
  }
  auto code_of = [&](const std::vector<Fr>& values) {
    try {
      ProverStageTimings timings;
      backend.prove(*loaded, wtns(values), &timings, nullptr);
    } catch (const ProverFailure& e) {
      return e.code();
    }
    return wire::ErrorCode::UNKNOWN;
  };
  auto broken = witness;
  broken[broken.size() / 2] += Fr::one();
  EXPECT_EQ(code_of(broken), wire::ErrorCode::UNSATISFIED);
  auto short_witness = witness;
  short_witness.pop_back();
  EXPECT_EQ(code_of(short_witness), wire::ErrorCode::WITNESS_LENGTH);
  std::atomic<bool> cancelled{true};
  ProverStageTimings timings;
  try {
    backend.prove(*loaded, wtns(witness), &timings, &cancelled);
    ADD_FAILURE() << "a cancelled proof ran";
  } catch (const ProverFailure& e) {
    EXPECT_EQ(e.code(), wire::ErrorCode::CANCELLED);
  }
  // Dropping the circuit drops its device copies (into the stream-ordered
  // pool, which keeps them cached: cudaMemGetInfo does not show it); a
  // reload proves again.
  loaded.reset();
  loaded = backend.load(dir + "/c.zkey", dir + "/c.pce");
  const std::string bytes = backend.prove(*loaded, wtns(witness), &timings, nullptr);
  EXPECT_TRUE(groth16_verify<Curve>(
      key.verifying_key(), pub,
      decode_proof<Curve>(
          std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()))));
}

TEST(CudaBackend, MissingDeviceIsRefusedAtConstruction) {
  if (!have_gpu()) GTEST_SKIP() << "SKIPPED: no CUDA device";
  EXPECT_THROW(CudaBackend(cuda::DeviceContext::visible_device_count() + 3), cuda::NoSuchDevice);
}

}  // namespace
}  // namespace zkfarm

#endif  // ZKFARM_HAS_CUDA
