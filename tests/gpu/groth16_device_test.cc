// groth16_device_test -- the device prover (kernels/cuda/groth16_device.h)
// against the CPU prover (kernels/groth16_prover.h): the same witness and
// fixed r, s must give the same proof bytes, on both curves, over several
// circuit sizes (none a power of two), with witnesses that stress the MSMs'
// special cases (all zeros, all ones, random full-field values), the PCE
// from the .r1cs (with C: constraint check on the device) and from the .zkey
// (A and B only), and the same errors for a bad witness.
//
// Runs on device 0. Without a usable CUDA device every test is SKIPPED
// (GTEST_SKIP), never passed. Tagged "gpu" in BUILD.
#include <gtest/gtest.h>

#ifndef ZKFARM_HAS_CUDA

TEST(Groth16Device, SkippedWithoutCuda) { GTEST_SKIP() << "SKIPPED: no CUDA device (built without CUDA)"; }

#else

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "formats/pce.h"
#include "formats/zkey.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/device_key.h"
#include "kernels/cuda/groth16_device.h"
#include "kernels/cuda/memory_plan.h"
#include "kernels/cuda/resident_cache.h"
#include "kernels/curves.h"
#include "kernels/groth16_prover.h"
#include "circuits/groth16_setup.h"
#include "kernels/groth16_verifier.h"
#include "kernels/random.h"
#include "circuits/synthetic_circuit.h"

namespace zkfarm::cuda {
namespace {

DeviceContext* context() {
  static const std::unique_ptr<DeviceContext> ctx = []() -> std::unique_ptr<DeviceContext> {
    if (DeviceContext::visible_device_count() == 0) {
      std::printf("SKIPPED: no CUDA device\n");
      return nullptr;
    }
    auto c = std::make_unique<DeviceContext>(0);
    std::printf("%s\n", c->info().summary().c_str());
    return c;
  }();
  return ctx.get();
}

#define REQUIRE_GPU()                                                    \
  do {                                                                   \
    if (context() == nullptr) GTEST_SKIP() << "SKIPPED: no CUDA device"; \
  } while (0)

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// A circuit with its host key, host PCEs (from the .r1cs and from the .zkey)
// and their device copies; built once per (curve, size) and shared by tests.
template <class Curve>
struct Fixture {
  using Fr = typename Curve::Fr;
  std::unique_ptr<SyntheticCircuit<Fr>> circuit;
  std::vector<Fr> witness;
  Groth16SetupKey<Curve> key;
  Pce<Fr> pce_r1cs, pce_zkey;
  DeviceProvingKey<Curve> device_key;
  DevicePce<Fr> device_pce_r1cs, device_pce_zkey;
  std::unique_ptr<DeviceProver<Curve>> prover;

  explicit Fixture(std::uint64_t constraints) {
    SyntheticCircuitOptions options;
    options.num_constraints = constraints;
    options.num_public = 5;
    options.seed = 42 + constraints;
    circuit = std::make_unique<SyntheticCircuit<Fr>>(options);
    witness = circuit->witness();
    const R1cs<Fr> r1cs = circuit->to_r1cs();
    Groth16SetupOptions setup_options;
    setup_options.seed = 9;
    const std::uint32_t n = groth16_domain_size(r1cs.num_constraints, r1cs.num_public());
    key = groth16_setup<Curve>(r1cs, sample_toxic_waste<Fr>(n, setup_options));
    pce_r1cs = pce_from_r1cs(r1cs);
    std::vector<std::uint8_t> image = serialize_zkey<Curve>(key.write_input());
    auto zkey = parse_zkey<Curve>(FileBytes::adopt(std::move(image), "test.zkey"));
    pce_zkey = pce_from_zkey(zkey.coefficients, zkey.num_public);
    const cudaStream_t stream = context()->stream(0);
    device_key = DeviceProvingKey<Curve>::upload(key.proving_key(), stream);
    device_pce_r1cs = DevicePce<Fr>::upload(pce_r1cs, stream);
    device_pce_zkey = DevicePce<Fr>::upload(pce_zkey, stream);
    prover = std::make_unique<DeviceProver<Curve>>(*context());
  }

  static Fixture& get(std::uint64_t constraints) {
    static std::map<std::uint64_t, std::unique_ptr<Fixture>> cache;
    auto& slot = cache[constraints];
    if (!slot) slot = std::make_unique<Fixture>(constraints);
    return *slot;
  }

  static ProveOptions<Fr> fixed(std::uint64_t seed, bool check = true) {
    ProveOptions<Fr> options;
    options.r = Fr::from_u64(seed * 1000003 + 17);
    options.s = Fr::from_u64(seed * 7919 + 5);
    options.check_constraints = check;
    return options;
  }

  // Proves on both sides and expects equal proofs; returns the device proof.
  Groth16Proof<Curve> compare(const std::vector<Fr>& w, const ProveOptions<Fr>& options, bool use_zkey_pce,
                              const char* label) {
    ProveTimings cpu_timings;
    const auto cpu_start = std::chrono::steady_clock::now();
    const auto cpu = groth16_prove<Curve>(key.proving_key(), use_zkey_pce ? pce_zkey : pce_r1cs,
                                          std::span<const Fr>(w), options, &cpu_timings);
    const double cpu_ms = ms_since(cpu_start);
    DeviceProveTimings t;
    const auto gpu = prover->prove(device_key, use_zkey_pce ? device_pce_zkey : device_pce_r1cs,
                                   std::span<const Fr>(w), options, &t);
    std::printf(
        "  %-10s %-14s n=%-8u vars=%-8u cpu %8.1f ms | gpu %7.2f ms (upload %.2f spmv %.2f ntt %.2f msm %.2f)\n",
        Curve::kName, label, key.domain_size, key.num_vars, cpu_ms, t.total_ms, t.upload_ms, t.spmv_ms, t.ntt_ms,
        t.msm_ms);
    EXPECT_TRUE(gpu == cpu) << label << ": device proof differs from the CPU proof";
    return gpu;
  }
};

template <class Curve>
class Groth16DeviceTest : public ::testing::Test {};

using Curves = ::testing::Types<Bn254, Bls12381>;
TYPED_TEST_SUITE(Groth16DeviceTest, Curves);

// Sizes: none a power of two; domains 2^10, 2^13 and 2^17.
constexpr std::uint64_t kSizes[] = {700, 5000, 70000};

TYPED_TEST(Groth16DeviceTest, SatisfyingWitnessMatchesCpuAndVerifies) {
  REQUIRE_GPU();
  using Fr = typename TypeParam::Fr;
  for (std::uint64_t size : kSizes) {
    auto& f = Fixture<TypeParam>::get(size);
    for (bool zkey_pce : {false, true}) {
      const auto proof = f.compare(f.witness, Fixture<TypeParam>::fixed(size), zkey_pce,
                                   zkey_pce ? "valid/zkeyPCE" : "valid/r1csPCE");
      std::span<const Fr> pub(f.witness.data() + 1, f.key.num_public);
      EXPECT_TRUE(groth16_verify<TypeParam>(f.key.verifying_key(), pub, proof)) << size;
    }
  }
}

// A key with precomputed shifted H bases (shift_h_bases) proves the same
// bytes as the CPU, then the key without them again.
TYPED_TEST(Groth16DeviceTest, ShiftedHBasesMatchCpu) {
  REQUIRE_GPU();
  for (std::uint64_t size : kSizes) {
    auto& f = Fixture<TypeParam>::get(size);
    const cudaStream_t stream = context()->stream(0);
    ASSERT_TRUE(shift_h_bases(*context(), f.device_key, 0, 0, 0, stream)) << size;
    EXPECT_GE(f.device_key.h_shift_rows, 10u);
    EXPECT_EQ(f.device_key.h_shifted.size(), std::size_t(f.device_key.h_shift_rows) * f.key.domain_size);
    f.compare(f.witness, Fixture<TypeParam>::fixed(size + 1), false, "shifted H");
    std::vector<typename TypeParam::Fr> random(f.witness.size());
    for (auto& v : random) v = random_field_element<typename TypeParam::Fr>();
    random[0] = TypeParam::Fr::one();
    f.compare(random, Fixture<TypeParam>::fixed(size + 2, false), false, "shifted H/random");
    // Under a budget the table does not fit: not built.
    DeviceProvingKey<TypeParam> other = DeviceProvingKey<TypeParam>::upload(f.key.proving_key(), stream);
    EXPECT_FALSE(shift_h_bases(*context(), other, 0, 1, 1, stream));
    EXPECT_TRUE(other.h_shifted.empty());
    EXPECT_EQ(f.device_key.h_shift_points, f.key.domain_size);
    // A partial table (the memory left beside a large key): the first
    // points from the table, the rest plainly, the same bytes.
    f.device_key.h_shifted = DeviceBuffer<typename TypeParam::G1Affine>();
    const std::size_t half = f.key.domain_size / 2 + 3;
    ASSERT_TRUE(shift_h_bases(*context(), f.device_key, 0, 0, 0, stream, 0, half, 1)) << size;
    EXPECT_EQ(f.device_key.h_shift_points, half);
    EXPECT_EQ(f.device_key.h_shifted.size(), std::size_t(f.device_key.h_shift_rows) * half);
    f.compare(f.witness, Fixture<TypeParam>::fixed(size + 1), false, "partial shifted H");
    f.compare(random, Fixture<TypeParam>::fixed(size + 2, false), false, "partial shifted H/random");
    // Room for part of the table only (a budget): a partial table of a
    // multiple of 2^16 points, or none below min_points.
    const std::size_t full_bytes = shifted_layout<TypeParam, typename TypeParam::G1>(f.key.domain_size).bytes;
    f.device_key.h_shifted = DeviceBuffer<typename TypeParam::G1Affine>();
    if (f.key.domain_size >= (std::size_t(1) << 17)) {
      ASSERT_TRUE(shift_h_bases(*context(), f.device_key, 0, full_bytes / 2, 0, stream, 0, 0, 1)) << size;
      EXPECT_LT(f.device_key.h_shift_points, f.key.domain_size);
      EXPECT_EQ(f.device_key.h_shift_points % (std::size_t(1) << 16), 0u);
      EXPECT_LE(f.device_key.h_shifted.bytes(), full_bytes / 2);
      f.compare(f.witness, Fixture<TypeParam>::fixed(size + 1), false, "budget-partial shifted H");
      f.device_key.h_shifted = DeviceBuffer<typename TypeParam::G1Affine>();
    }
    EXPECT_FALSE(shift_h_bases(*context(), f.device_key, 0, full_bytes / 2, 0, stream, 0, 0, f.key.domain_size));
    EXPECT_TRUE(f.device_key.h_shifted.empty());
    f.device_key.drop_shifted_tables();
    f.compare(f.witness, Fixture<TypeParam>::fixed(size + 1), false, "plain H");
  }
}

// A small key with shifted tables of its four witness queries
// (shift_witness_bases: A, B1, C on G1, B2 on G2) proves the CPU's bytes,
// over the witness and over random scalars, beside a shifted H table and
// without one; under a budget with no room none is built.
TYPED_TEST(Groth16DeviceTest, ShiftedWitnessBasesMatchCpu) {
  REQUIRE_GPU();
  using Fr = typename TypeParam::Fr;
  for (std::uint64_t size : kSizes) {
    auto& f = Fixture<TypeParam>::get(size);
    const cudaStream_t stream = context()->stream(0);
    auto& key = f.device_key;
    EXPECT_FALSE(shift_witness_bases(*context(), key, 0, 1, 1, stream)) << size;
    EXPECT_TRUE(key.a_shifted.table.empty());
    EXPECT_EQ(key.witness_shifted_bytes(), 0u);
    ASSERT_TRUE(shift_witness_bases(*context(), key, 0, 0, 0, stream)) << size;
    const std::size_t v = f.key.num_vars, num_private = key.c_points.size();
    EXPECT_EQ(key.a_shifted.table.size(), std::size_t(key.a_shifted.windows) * v);
    EXPECT_EQ(key.b1_shifted.table.size(), std::size_t(key.b1_shifted.windows) * v);
    EXPECT_EQ(key.b2_shifted.table.size(), std::size_t(key.b2_shifted.windows) * v);
    EXPECT_EQ(key.c_shifted.table.size(), std::size_t(key.c_shifted.windows) * num_private);
    EXPECT_GE(key.a_shifted.windows, 10u);
    f.compare(f.witness, Fixture<TypeParam>::fixed(size + 3), false, "shifted witness queries");
    std::vector<Fr> random(f.witness.size());
    for (auto& x : random) x = random_field_element<Fr>();
    random[0] = Fr::one();
    f.compare(random, Fixture<TypeParam>::fixed(size + 4, false), false, "shifted witness queries/random");
    ASSERT_TRUE(shift_h_bases(*context(), key, 0, 0, 0, stream)) << size;
    f.compare(f.witness, Fixture<TypeParam>::fixed(size + 5), true, "shifted witness queries and H");
    key.drop_shifted_tables();
    EXPECT_EQ(key.witness_shifted_bytes(), 0u);
    EXPECT_TRUE(key.h_shifted.empty());
    f.compare(f.witness, Fixture<TypeParam>::fixed(size + 3), false, "plain witness queries");
  }
}

TYPED_TEST(Groth16DeviceTest, EdgeWitnessesMatchCpu) {
  REQUIRE_GPU();
  using Fr = typename TypeParam::Fr;
  for (std::uint64_t size : {kSizes[0], kSizes[1]}) {
    auto& f = Fixture<TypeParam>::get(size);
    const std::size_t vars = f.witness.size();
    // Not satisfying, so the check is off on both sides (the CPU prover
    // proves whatever it is given then).
    std::vector<Fr> zeros(vars, Fr::zero());
    zeros[0] = Fr::one();
    f.compare(zeros, Fixture<TypeParam>::fixed(1, false), false, "all-zero");
    std::vector<Fr> ones(vars, Fr::one());
    f.compare(ones, Fixture<TypeParam>::fixed(2, false), false, "all-one");
    std::vector<Fr> random(vars);
    for (auto& v : random) v = random_field_element<Fr>();
    random[0] = Fr::one();
    f.compare(random, Fixture<TypeParam>::fixed(3, false), true, "random");
    std::vector<Fr> minus_one(vars, -Fr::one());
    minus_one[0] = Fr::one();
    f.compare(minus_one, Fixture<TypeParam>::fixed(4, false), false, "all-minus-one");
  }
}

TYPED_TEST(Groth16DeviceTest, RandomBlindingDiffersAndVerifies) {
  REQUIRE_GPU();
  using Fr = typename TypeParam::Fr;
  auto& f = Fixture<TypeParam>::get(kSizes[0]);
  const auto p1 = f.prover->prove(f.device_key, f.device_pce_r1cs, std::span<const Fr>(f.witness));
  const auto p2 = device_prove<TypeParam>(*context(), f.device_key, f.device_pce_r1cs,
                                          std::span<const Fr>(f.witness), {}, nullptr);
  EXPECT_FALSE(p1 == p2);
  std::span<const Fr> pub(f.witness.data() + 1, f.key.num_public);
  EXPECT_TRUE(groth16_verify<TypeParam>(f.key.verifying_key(), pub, p1));
  EXPECT_TRUE(groth16_verify<TypeParam>(f.key.verifying_key(), pub, p2));
}

TYPED_TEST(Groth16DeviceTest, PinnedWitnessGivesTheSameProof) {
  REQUIRE_GPU();
  using Fr = typename TypeParam::Fr;
  auto& f = Fixture<TypeParam>::get(kSizes[1]);
  PinnedBuffer<Fr> pinned(f.witness.size());
  std::copy(f.witness.begin(), f.witness.end(), pinned.data());
  const auto options = Fixture<TypeParam>::fixed(11);
  const auto from_pinned =
      f.prover->prove(f.device_key, f.device_pce_r1cs, std::span<const Fr>(pinned.data(), pinned.size()), options);
  const auto from_pageable = f.prover->prove(f.device_key, f.device_pce_r1cs, std::span<const Fr>(f.witness), options);
  EXPECT_TRUE(from_pinned == from_pageable);
  // Many staging chunks, the last one partial.
  DeviceProver<TypeParam> chunked(*context(), {}, 1000);
  const auto from_chunks = chunked.prove(f.device_key, f.device_pce_r1cs, std::span<const Fr>(f.witness), options);
  EXPECT_GT(f.witness.size() % 1000, 0u);
  EXPECT_GT(f.witness.size(), 3000u);
  EXPECT_TRUE(from_chunks == from_pageable);
}

TYPED_TEST(Groth16DeviceTest, BadWitnessFailsAsOnCpu) {
  REQUIRE_GPU();
  using Fr = typename TypeParam::Fr;
  auto& f = Fixture<TypeParam>::get(kSizes[0]);
  auto messages = [&](const std::vector<Fr>& w, const DevicePce<Fr>& device_pce, const Pce<Fr>& pce) {
    std::string cpu_message = "(none)", gpu_message = "(none)";
    try {
      groth16_prove<TypeParam>(f.key.proving_key(), pce, std::span<const Fr>(w), Fixture<TypeParam>::fixed(1));
    } catch (const ProveError& e) {
      cpu_message = e.what();
    }
    try {
      f.prover->prove(f.device_key, device_pce, std::span<const Fr>(w), Fixture<TypeParam>::fixed(1));
    } catch (const ProveError& e) {
      gpu_message = e.what();
    }
    EXPECT_EQ(gpu_message, cpu_message);
    return gpu_message;
  };
  // Unsatisfied constraint: the device names the same (first) row.
  auto broken = f.witness;
  broken[f.witness.size() / 2] += Fr::one();
  broken[f.witness.size() - 3] += Fr::one();
  EXPECT_NE(messages(broken, f.device_pce_r1cs, f.pce_r1cs).find("does not satisfy constraint"), std::string::npos);
  // Wrong length and w[0] != 1.
  auto short_witness = f.witness;
  short_witness.pop_back();
  EXPECT_NE(messages(short_witness, f.device_pce_r1cs, f.pce_r1cs).find("values but the circuit has"),
            std::string::npos);
  auto bad_constant = f.witness;
  bad_constant[0] = Fr::zero();
  EXPECT_NE(messages(bad_constant, f.device_pce_r1cs, f.pce_r1cs).find("witness[0]"), std::string::npos);
  // Without C (zkey PCE) nothing is checked on either side: equal proofs.
  f.compare(broken, Fixture<TypeParam>::fixed(5), true, "unsat/noC");
}

TYPED_TEST(Groth16DeviceTest, ReportsResidentAndScratchMemory) {
  REQUIRE_GPU();
  using Fr = typename TypeParam::Fr;
  auto& f = Fixture<TypeParam>::get(kSizes[0]);
  EXPECT_GT(f.device_key.device_bytes(), f.key.h.size() * sizeof(typename TypeParam::G1Affine));
  EXPECT_GT(f.device_pce_r1cs.device_bytes(), f.device_pce_zkey.device_bytes());  // C
  DeviceProveTimings t;
  f.prover->prove(f.device_key, f.device_pce_r1cs, std::span<const Fr>(f.witness), Fixture<TypeParam>::fixed(2), &t);
  EXPECT_EQ(t.scratch_bytes, (f.witness.size() + 3 * std::size_t(f.key.domain_size)) * sizeof(Fr));
  EXPECT_GT(t.total_ms, 0);
}

TYPED_TEST(Groth16DeviceTest, ResidentCacheEvictsLeastRecentlyUsedAndProvesAfterReload) {
  REQUIRE_GPU();
  using Fr = typename TypeParam::Fr;
  auto& small = Fixture<TypeParam>::get(kSizes[0]);
  auto& medium = Fixture<TypeParam>::get(kSizes[1]);
  auto maker = [](Fixture<TypeParam>& f) {
    return [&f] {
      const cudaStream_t stream = context()->stream(0);
      return DeviceCircuit<TypeParam>{DeviceProvingKey<TypeParam>::upload(f.key.proving_key(), stream),
                                      DevicePce<Fr>::upload(f.pce_r1cs, stream)};
    };
  };
  const std::size_t small_bytes = small.device_key.device_bytes() + small.device_pce_r1cs.device_bytes();
  const std::size_t medium_bytes = medium.device_key.device_bytes() + medium.device_pce_r1cs.device_bytes();
  // Room for the medium circuit and less than the small one besides it.
  ResidentCache cache(*context(), medium_bytes + small_bytes - 1);
  bool loaded = false;
  auto s1 = cache.get<DeviceCircuit<TypeParam>>("small", maker(small), &loaded);
  EXPECT_TRUE(loaded);
  auto s2 = cache.get<DeviceCircuit<TypeParam>>("small", maker(small), &loaded);
  EXPECT_FALSE(loaded);
  EXPECT_EQ(s1.get(), s2.get());
  auto m = cache.get<DeviceCircuit<TypeParam>>("medium", maker(medium), &loaded);
  EXPECT_TRUE(loaded);
  EXPECT_EQ(cache.resident(), std::vector<std::string>{"medium"});  // small evicted
  ResidentCacheUsage usage = cache.usage();
  EXPECT_EQ(usage.entries, 1u);
  EXPECT_EQ(usage.resident_bytes, medium_bytes);
  EXPECT_EQ(usage.evictions, 1u);
  EXPECT_EQ(usage.loads, 2u);
  EXPECT_EQ(usage.hits, 1u);
  EXPECT_GT(usage.device.total, usage.device.free);
  // The evicted state is still usable by whoever holds it, and a reload
  // proves the same.
  const auto options = Fixture<TypeParam>::fixed(21);
  const auto held = small.prover->prove(s1->key, s1->pce, std::span<const Fr>(small.witness), options);
  auto reloaded = cache.get<DeviceCircuit<TypeParam>>("small", maker(small), &loaded);
  EXPECT_TRUE(loaded);
  EXPECT_EQ(cache.resident(), std::vector<std::string>{"small"});
  EXPECT_TRUE(held == small.prover->prove(reloaded->key, reloaded->pce, std::span<const Fr>(small.witness), options));
  // run_evicting: a body that runs out of memory evicts everything but the
  // kept id, then gives up with the error.
  int attempts = 0;
  EXPECT_THROW(cache.run_evicting("small",
                                  [&]() -> int {
                                    ++attempts;
                                    throw DeviceOutOfMemory("test", 0);
                                  }),
               DeviceOutOfMemory);
  EXPECT_EQ(attempts, 1);  // nothing but "small" to evict
}


// The shape memory_plan.h plans for, from a fixture's key and PCE.
template <class Curve>
ProofShape shape_of(const Fixture<Curve>& f, const DevicePce<typename Curve::Fr>& pce) {
  ProofShape shape;
  shape.num_vars = f.key.num_vars;
  shape.num_public = f.key.num_public;
  shape.domain_size = f.key.domain_size;
  shape.fr_bytes = sizeof(typename Curve::Fr);
  shape.g1_bytes = sizeof(typename Curve::G1Affine);
  shape.g2_bytes = sizeof(typename Curve::G2Affine);
  shape.pce_bytes = pce.device_bytes();
  return shape;
}

// Proofs from a key placed partly or wholly in pinned host memory (streamed
// MSMs, chunked MSMs) equal the CPU prover's, for every placement: every
// query streamed in many small chunks, half of each resident, and the plans
// of memory_plan.h at a budget that forces streaming (enforced by the
// allocator) and at none (all resident).
TYPED_TEST(Groth16DeviceTest, StreamedKeyMatchesCpuUnderEveryBudget) {
  REQUIRE_GPU();
  using Fr = typename TypeParam::Fr;
  const cudaStream_t stream = context()->stream(0);
  for (std::uint64_t size : kSizes) {
    auto& f = Fixture<TypeParam>::get(size);
    const auto options = Fixture<TypeParam>::fixed(31 + size);
    const auto cpu = groth16_prove<TypeParam>(f.key.proving_key(), f.pce_r1cs, std::span<const Fr>(f.witness), options);
    // compaction: the share of streamed witness chunks offered to host
    // compaction (through the ring), each waiting for the CPU with wait.
    auto prove_placed = [&](const MemoryPlan& plan, const char* label, DeviceProveTimings* timings = nullptr,
                            bool gather = true, double compaction = 1.0, bool wait = false) {
      auto key = DeviceProvingKey<TypeParam>::upload(f.key.proving_key(), stream, &plan);
      MemoryPlan run_plan = plan;
      run_plan.gather_nonzero = gather;
      run_plan.host_compaction = compaction;
      run_plan.host_compaction_wait = wait;
      EXPECT_EQ(key.device_bytes(), plan.key_resident_bytes()) << label;
      EXPECT_EQ(key.host_bytes(), plan.streamed_bytes()) << label;
      // With C: the constraint check runs on the PCE wherever it is.
      const DevicePce<Fr> host_pce =
          plan.pce_on_host ? DevicePce<Fr>::upload(f.pce_r1cs, stream, true, true) : DevicePce<Fr>();
      if (plan.pce_on_host) {
        EXPECT_EQ(host_pce.device_bytes(), 0u) << label;
        EXPECT_EQ(host_pce.host_bytes(), f.device_pce_r1cs.device_bytes()) << label;
      }
      DeviceProveTimings t;
      const auto gpu = f.prover->prove(key, plan.pce_on_host ? host_pce : f.device_pce_r1cs, run_plan,
                                       std::span<const Fr>(f.witness), options, &t);
      std::printf("  %-10s n=%-7u %-36s streamed %8.2f MiB (+%.2f MiB of zeros' bases skipped) in %zu MSM calls, "
                  "msm %.2f ms%s, %zu chunks compacted (%zu too late)\n",
                  TypeParam::kName, f.key.domain_size, label, double(t.streamed_bytes) / double(1 << 20),
                  double(t.skipped_bytes) / double(1 << 20), t.msm_calls, t.msm_ms,
                  t.overlapped ? " (witness MSMs overlapped)" : "", t.compacted_chunks, t.compaction_late);
      // Every streamed base is either moved or skipped for its zero scalar;
      // only witness queries skip, only with the gather or compaction.
      EXPECT_EQ(t.streamed_bytes + t.skipped_bytes, plan.streamed_bytes()) << label;
      if (!gather && (compaction == 0 || t.ring_slots == 0)) {
        EXPECT_EQ(t.skipped_bytes, 0u) << label;
        EXPECT_EQ(t.compacted_chunks, 0u) << label;
      }
      if (wait && t.ring_slots > 0 && t.ring_lanes == 1 && compaction == 1.0 && std::thread::hardware_concurrency() >= 4) {
        // Every witness chunk compacted (the fixtures' witnesses are sparse
        // enough for one slot), none given up.
        EXPECT_GT(t.compacted_chunks, 0u) << label;
        EXPECT_EQ(t.compaction_late, 0u) << label;
        EXPECT_GT(t.skipped_bytes, 0u) << label;
      }
      EXPECT_EQ(t.overlapped, plan.overlap && !plan.release_witness) << label;
      // Without the gather and the overlap, a streaming key goes through the
      // transfer ring (MsmPipeline), its first slots filled before the NTTs.
      const bool ring = !gather && !t.overlapped && plan.ring_slots > 0 && plan.streamed_bytes() > 0;
      EXPECT_EQ(t.ring_slots, ring ? std::max(plan.ring_slots, 2) : 0) << label;
      EXPECT_EQ(t.ring_lanes, ring ? (plan.ring_lanes >= 2 && plan.ring_slots >= 4 ? 2 : 1) : 0) << label;
      if (ring) {
        EXPECT_LE(t.prefetched_chunks, std::size_t(plan.prefetch_slots)) << label;
        if (plan.prefetch_slots > 0) {
          EXPECT_GT(t.prefetched_chunks, 0u) << label;
        }
      }
      EXPECT_EQ(t.compaction_failed, 0u) << label;
      EXPECT_TRUE(gpu == cpu) << label << " at " << size << " constraints: device proof differs from the CPU proof";
      if (timings) *timings = t;
    };
    const ProofShape shape = shape_of(f, f.device_pce_r1cs);
    MemoryPlan all_streamed = plan_memory(shape, 0);
    all_streamed.resident = {0, 0, 0, 0, 0};
    all_streamed.msm_chunk = 4096;  // many chunks per MSM at these sizes, the last partial
    DeviceProveTimings t;
    prove_placed(all_streamed, "all streamed, 4096", &t);
    if (f.key.domain_size > 4096) {
      EXPECT_GT(t.msm_calls, 5u);  // H split at least
    }
    EXPECT_GT(t.skipped_bytes, 0u) << "the fixture's witness has zeros: their bases should stay on the host";
    MemoryPlan serial_copied = all_streamed;  // every base copied, witness MSMs after H
    serial_copied.overlap = false;
    prove_placed(serial_copied, "all streamed, copied, serial", nullptr, false);
    // The transfer ring: chunks of every query through 3 slots, 2 of them
    // filled before the NTTs (the H chunks among the witness queries').
    MemoryPlan ring = serial_copied;
    ring.ring_slots = 3;
    ring.prefetch_slots = 2;
    prove_placed(ring, "all streamed, ring of 3", &t, false);
    if (f.key.domain_size > 4096) {
      EXPECT_GT(t.msm_calls, 5u);
    }
    // Host compaction: every witness chunk gathered by the CPU (compacted
    // on the device), half of them offered, and none.
    prove_placed(ring, "all streamed, ring of 3, compacted", &t, false, 1.0, true);
    prove_placed(ring, "all streamed, ring of 3, half offered", &t, false, 0.5, true);
    prove_placed(ring, "all streamed, ring of 3, no compaction", &t, false, 0.0);
    // Two lanes: the witness chunks beside the H chunks, their dense points
    // handed over through two collections (small chunks: many hand-overs).
    MemoryPlan lanes = ring;
    lanes.msm_chunk = 1024;
    lanes.ring_slots = 5;
    lanes.ring_lanes = 2;
    prove_placed(lanes, "all streamed, two lanes", nullptr, false);
    MemoryPlan half = plan_memory(shape, 0);
    for (int q = 0; q < 5; ++q) half.resident[q] = half.points[q] / 2 + 1;
    prove_placed(half, "half resident");
    MemoryPlan half_ring = half;  // resident halves run while the ring's copies are under way
    half_ring.msm_chunk = 2048;
    half_ring.ring_slots = 2;
    prove_placed(half_ring, "half resident, ring of 2", nullptr, false);
    half_ring.ring_slots = 4;
    half_ring.ring_lanes = 2;
    prove_placed(half_ring, "half resident, two lanes", nullptr, false);
    MemoryPlan everything_on_host = all_streamed;  // PCE read over PCIe, witness re-uploaded for the MSMs
    everything_on_host.pce_on_host = true;
    everything_on_host.release_witness = true;
    prove_placed(everything_on_host, "PCE+key on host");
    MemoryPlan everything_ring = everything_on_host;  // the witness re-uploaded beside the ring's copies
    everything_ring.ring_slots = 6;
    everything_ring.prefetch_slots = 6;
    prove_placed(everything_ring, "PCE+key on host, ring of 6", &t, false);
    // The SpMV's row ranges by DMA with packed row offsets (the default),
    // and with the 8-byte offsets as stored.
    EXPECT_TRUE(t.spmv_packed);
    EXPECT_GT(t.spmv_streamed_bytes, 0u);
    const std::size_t packed_bytes = t.spmv_streamed_bytes;
    f.prover->set_packed_spmv(false);
    prove_placed(everything_ring, "PCE+key on host, ring of 6, offsets", &t, false);
    f.prover->set_packed_spmv(true);
    EXPECT_FALSE(t.spmv_packed);
    EXPECT_LT(packed_bytes, t.spmv_streamed_bytes) << "packed offsets should move fewer bytes";
    prove_placed(everything_ring, "PCE+key on host, ring of 6, compacted", nullptr, false, 1.0, true);
    everything_ring.ring_lanes = 2;
    prove_placed(everything_ring, "PCE+key on host, two lanes", nullptr, false);
    {  // The SpMV by DMA (PCE in host memory, slices in the ring's slots)
       // names the same first unsatisfied row as the CPU prover.
      auto key = DeviceProvingKey<TypeParam>::upload(f.key.proving_key(), stream, &everything_ring);
      const DevicePce<Fr> host_pce = DevicePce<Fr>::upload(f.pce_r1cs, stream, true, true);
      auto broken = f.witness;
      broken[f.witness.size() / 2] += Fr::one();
      broken[f.witness.size() - 3] += Fr::one();
      std::string cpu_message = "(none)", gpu_message = "(none)";
      try {
        groth16_prove<TypeParam>(f.key.proving_key(), f.pce_r1cs, std::span<const Fr>(broken), options);
      } catch (const ProveError& e) {
        cpu_message = e.what();
      }
      for (bool packed : {true, false}) {  // packed row offsets and the 8-byte ones
        f.prover->set_packed_spmv(packed);
        gpu_message = "(none)";
        try {
          f.prover->prove(key, host_pce, everything_ring, std::span<const Fr>(broken), options);
        } catch (const ProveError& e) {
          gpu_message = e.what();
        }
        EXPECT_EQ(gpu_message, cpu_message) << (packed ? "packed" : "offsets");
        EXPECT_NE(gpu_message.find("does not satisfy constraint"), std::string::npos) << gpu_message;
      }
      f.prover->set_packed_spmv(true);
    }
    // The planner's own plans, the budget enforced by the allocator on top
    // of what this process already holds.
    const MemoryPlan resident = plan_memory(shape, 0);
    EXPECT_TRUE(resident.all_resident());
    prove_placed(resident, "planned, no budget");
    std::size_t needed = 0;
    try {
      plan_memory(shape, 1 << 20);
      ADD_FAILURE() << "a 1 MiB budget should be too small";
    } catch (const BudgetTooSmall& e) {
      needed = e.needed();
      EXPECT_NE(std::string(e.what()).find("needs at least"), std::string::npos) << e.what();
    }
    const MemoryPlan tight = plan_memory(shape, needed, 1 << 16);
    EXPECT_FALSE(tight.all_resident()) << tight.summary();
    std::printf("  plan: %s\n", tight.summary().c_str());
    set_device_memory_budget(device_memory_in_use() + tight.budget);
    try {
      prove_placed(tight, "planned, tight budget");
      prove_placed(tight, "planned, tight budget, ring", nullptr, false);
      prove_placed(tight, "planned, tight budget, ring, compacted", nullptr, false, 1.0, true);
    } catch (...) {
      set_device_memory_budget(0);
      throw;
    }
    set_device_memory_budget(0);
  }
}

// The allocator refuses what would exceed the budget, with a message that
// says so, and allocates again once the budget is lifted.
TEST(DeviceMemoryBudget, AllocationsBeyondTheBudgetFail) {
  REQUIRE_GPU();
  const cudaStream_t stream = context()->stream(0);
  const std::size_t before = device_memory_in_use();
  set_device_memory_budget(before + (std::size_t(4) << 20));
  {
    DeviceBuffer<std::uint8_t> fits(std::size_t(3) << 20, stream);
    EXPECT_EQ(device_memory_in_use(), before + (std::size_t(3) << 20));
    try {
      DeviceBuffer<std::uint8_t> too_much(std::size_t(2) << 20, stream);
      ADD_FAILURE() << "allocation over the budget succeeded";
    } catch (const DeviceOutOfMemory& e) {
      EXPECT_NE(std::string(e.what()).find("budget"), std::string::npos) << e.what();
    }
    EXPECT_LE(device_memory_available(), std::size_t(1) << 20);
  }
  EXPECT_EQ(device_memory_in_use(), before);
  set_device_memory_budget(0);
  DeviceBuffer<std::uint8_t> after(std::size_t(8) << 20, stream);
  EXPECT_EQ(device_memory_in_use(), before + (std::size_t(8) << 20));
}

}  // namespace
}  // namespace zkfarm::cuda

#endif  // ZKFARM_HAS_CUDA
