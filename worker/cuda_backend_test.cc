// cuda_backend_test -- the worker's CUDA path (prover::Prover::cuda, what
// zkfarm-worker --device N proves with) on device 0: load() from files as the
// worker does, proofs that verify and equal the CPU's for the same seed, the
// CPU's error kinds for bad witnesses, resident state reused across proofs,
// and a missing device refused at construction. SKIPPED (never passed)
// without a CUDA device or a CUDA build; tagged "gpu".
#include <gtest/gtest.h>

#ifndef ZKFARM_HAS_CUDA

TEST(CudaProver, SkippedWithoutCuda) { GTEST_SKIP() << "SKIPPED: no CUDA device (built without CUDA)"; }

#else

#include <cuda_runtime.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "formats/pce.h"
#include "formats/wtns.h"
#include "formats/zkey.h"
#include "kernels/cuda/device_context.h"
#include "kernels/curves.h"
#include "circuits/groth16_setup.h"
#include "kernels/groth16_verifier.h"
#include "circuits/synthetic_circuit.h"
#include "prover/prover.h"

namespace zkfarm::prover {
namespace {

bool have_gpu() { return cuda::DeviceContext::visible_device_count() > 0; }

std::string temp_dir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(base ? base : "/tmp") + "/cuda_backend_test_XXXXXX";
  if (!mkdtemp(dir.data())) throw std::runtime_error("mkdtemp failed");
  return dir;
}

template <class Curve>
class CudaProverTest : public ::testing::Test {};
using Curves = ::testing::Types<Bn254, Bls12381>;
TYPED_TEST_SUITE(CudaProverTest, Curves);

TYPED_TEST(CudaProverTest, LoadsFilesAndProvesOnTheDevice) {
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
  save_pce(pce_from_r1cs(r1cs), dir + "/c.pce");
  std::vector<Fr> witness = circuit.witness();

  auto prover = Prover::cuda(0);
  EXPECT_EQ(prover->device().backend, "cuda");
  EXPECT_EQ(prover->device().ordinal, 0);
  const std::uint64_t before = prover->memory_used_bytes();
  auto loaded = prover->load({dir + "/c.zkey", dir + "/c.pce", ""});
  EXPECT_GT(prover->memory_used_bytes(), before);  // key + PCE resident
  EXPECT_GT(loaded->device_bytes, 0u);
  EXPECT_EQ(loaded->num_vars(), key.num_vars);

  auto wtns = [&](const std::vector<Fr>& values) {
    return FileBytes::adopt(serialize_wtns<Fr>(std::span<const Fr>(values)), "w.wtns");
  };
  std::span<const Fr> pub(witness.data() + 1, key.num_public);
  ProveRequest seeded;
  seeded.seed = 11;
  for (int i = 0; i < 2; ++i) {  // the second proof reuses the resident state
    Timings timings;
    const auto proof = std::get<ProofOf<Curve>>(prover->prove(*loaded, wtns(witness), seeded, &timings)).proof;
    EXPECT_TRUE(groth16_verify<Curve>(key.verifying_key(), pub, proof));
    EXPECT_GT(timings.prove, 0);
    // The host time outside the device prover's clock: the lookups before
    // it (never nothing), the release after it; well under the proof.
    EXPECT_GT(timings.device_queue, 0);
    EXPECT_GE(timings.device_release, 0);
    EXPECT_LT(timings.device_queue + timings.device_release, 1.0);
    // Bit-identical to the CPU's for the same seed.
    auto cpu = Prover::cpu();
    Timings cpu_timings;
    const auto cpu_proof =
        std::get<ProofOf<Curve>>(cpu->prove(*cpu->load({dir + "/c.zkey", dir + "/c.pce", ""}), wtns(witness), seeded,
                                            &cpu_timings))
            .proof;
    EXPECT_EQ(cpu_timings.device_queue + cpu_timings.device_release, 0) << "the CPU has no device clock";
    EXPECT_TRUE(proof.a == cpu_proof.a && proof.b == cpu_proof.b && proof.c == cpu_proof.c);
  }
  // A prepared witness (the worker's prefetch) sits in page-locked memory
  // from the engine's pool, proves bit-identically to the file, and its
  // buffer, the last released, is reused by the next prepare() once dropped.
  {
    const void* first_buffer = nullptr;
    for (int i = 0; i < 2; ++i) {
      auto prepared = prover->prepare(*loaded, wtns(witness));
      EXPECT_TRUE(prepared->pinned);
      Timings timings;
      const auto proof = std::get<ProofOf<Curve>>(prover->prove(*loaded, *prepared, seeded, &timings)).proof;
      const auto again = std::get<ProofOf<Curve>>(prover->prove(*loaded, wtns(witness), seeded, &timings)).proof;
      EXPECT_TRUE(proof.a == again.a && proof.b == again.b && proof.c == again.c);
      EXPECT_TRUE(groth16_verify<Curve>(key.verifying_key(), pub, proof));
      const void* buffer = prepared->data;
      cudaPointerAttributes attributes{};
      ASSERT_EQ(cudaPointerGetAttributes(&attributes, buffer), cudaSuccess);
      EXPECT_EQ(attributes.type, cudaMemoryTypeHost);  // page-locked
      if (i == 0) first_buffer = buffer;
      else EXPECT_EQ(buffer, first_buffer);  // the pool's buffer again
    }
  }
  auto kind_of = [&](const std::vector<Fr>& values) -> std::optional<ErrorCode> {
    try {
      prover->prove(*loaded, wtns(values), {}, nullptr);
    } catch (const Error& e) {
      return e.kind();
    }
    return std::nullopt;
  };
  auto broken = witness;
  broken[broken.size() / 2] += Fr::one();
  EXPECT_EQ(kind_of(broken), ErrorCode::kUnsatisfied);
  auto short_witness = witness;
  short_witness.pop_back();
  EXPECT_EQ(kind_of(short_witness), ErrorCode::kWitnessLength);
  std::atomic<bool> cancelled{true};
  ProveRequest cancel;
  cancel.cancelled = &cancelled;
  try {
    prover->prove(*loaded, wtns(witness), cancel, nullptr);
    ADD_FAILURE() << "a cancelled proof ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorCode::kCancelled);
  }
  // Dropping the circuit drops its device copies (into the stream-ordered
  // pool, which keeps them cached: cudaMemGetInfo does not show it); a
  // reload proves again.
  loaded.reset();
  loaded = prover->load({dir + "/c.zkey", dir + "/c.pce", ""});
  const auto proof = std::get<ProofOf<Curve>>(prover->prove(*loaded, wtns(witness), {}, nullptr)).proof;
  EXPECT_TRUE(groth16_verify<Curve>(key.verifying_key(), pub, proof));
}

// Lanes (DeviceConfig::lanes, the worker's --slots): proofs from several
// threads at once on one device, each bit-identical to the CPU's for its
// seed (a proof that took another lane's vectors or streams would differ),
// and a bad witness among them failing alone with the CPU's error; with
// the proving threads spinning and sleeping in their waits alike.
TYPED_TEST(CudaProverTest, LanesProveAtOnceBitIdentically) {
  if (!have_gpu()) GTEST_SKIP() << "SKIPPED: no CUDA device";
  using Curve = TypeParam;
  using Fr = typename Curve::Fr;
  SyntheticCircuitOptions options;
  options.num_constraints = 5000;
  options.num_public = 3;
  options.seed = 5;
  SyntheticCircuit<Fr> circuit(options);
  const R1cs<Fr> r1cs = circuit.to_r1cs();
  Groth16SetupOptions setup_options;
  setup_options.seed = 6;
  const auto key = groth16_setup<Curve>(
      r1cs, sample_toxic_waste<Fr>(groth16_domain_size(r1cs.num_constraints, r1cs.num_public()), setup_options));
  const std::string dir = temp_dir();
  write_zkey<Curve>(dir + "/c.zkey", key.write_input());
  save_pce(pce_from_r1cs(r1cs), dir + "/c.pce");
  const std::vector<Fr> witness = circuit.witness();
  auto wtns = [&](const std::vector<Fr>& values) {
    return FileBytes::adopt(serialize_wtns<Fr>(std::span<const Fr>(values)), "w.wtns");
  };
  constexpr int kThreads = 6, kProofs = 4;
  auto cpu = Prover::cpu();
  auto cpu_circuit = cpu->load({dir + "/c.zkey", dir + "/c.pce", ""});
  std::vector<Groth16Proof<Curve>> expected;
  for (int k = 0; k < kThreads * kProofs; ++k) {
    ProveRequest seeded;
    seeded.seed = 100 + k;
    expected.push_back(std::get<ProofOf<Curve>>(cpu->prove(*cpu_circuit, wtns(witness), seeded, nullptr)).proof);
  }
  auto broken = witness;
  broken[broken.size() / 3] += Fr::one();
  // Threads spinning in their waits (the runtime's choice here), then
  // sleeping in them (--host-wait block: the driver wakes each).
  for (HostWait wait : {HostWait::kAuto, HostWait::kBlock}) {
    SCOPED_TRACE(std::string("--host-wait ") + host_wait_name(wait));
    DeviceConfig config;
    config.lanes = 4;
    config.host_wait = wait;
    auto prover = Prover::cuda(0, config);
    auto loaded = prover->load({dir + "/c.zkey", dir + "/c.pce", ""});
    std::vector<Groth16Proof<Curve>> got(kThreads * kProofs);
    std::atomic<int> unsatisfied{0}, other_errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < kProofs; ++i) {
          const int k = t * kProofs + i;
          ProveRequest seeded;
          seeded.seed = 100 + k;
          try {
            got[k] = std::get<ProofOf<Curve>>(prover->prove(*loaded, wtns(witness), seeded, nullptr)).proof;
            if (i == 1) prover->prove(*loaded, wtns(broken), seeded, nullptr);  // must throw
          } catch (const Error& e) {
            (e.kind() == ErrorCode::kUnsatisfied ? unsatisfied : other_errors)++;
          }
        }
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(unsatisfied.load(), kThreads);
    EXPECT_EQ(other_errors.load(), 0);
    for (int k = 0; k < kThreads * kProofs; ++k)
      EXPECT_TRUE(got[k].a == expected[k].a && got[k].b == expected[k].b && got[k].c == expected[k].c)
          << "proof " << k << " differs from the CPU's";
  }
}

TEST(CudaProver, MissingDeviceIsRefusedAtConstruction) {
  if (!have_gpu()) GTEST_SKIP() << "SKIPPED: no CUDA device";
  try {
    Prover::cuda(cuda::DeviceContext::visible_device_count() + 3);
    ADD_FAILURE() << "opened a device that is not there";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorCode::kNoDevice) << e.what();
  }
}

}  // namespace
}  // namespace zkfarm::prover

#endif  // ZKFARM_HAS_CUDA
