// memory_plan_test -- the device memory planner (memory_plan.h) on the CPU:
// what stays resident under each budget, what is streamed, and the error for
// a budget too small. The device side (the same plans proving byte-identical
// proofs) is tests/gpu/groth16_device_test.
#include "kernels/cuda/memory_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace zkfarm::cuda {
namespace {

constexpr std::size_t kGiB = std::size_t(1) << 30;

// The PoRep-32G partition of BENCHMARKS.md (BLS12-381, domain 2^27).
ProofShape porep() {
  ProofShape s;
  s.num_vars = 132906351;
  s.num_public = 328;
  s.domain_size = std::uint64_t(1) << 27;
  s.fr_bytes = 32;
  s.g1_bytes = 96;
  s.g2_bytes = 192;
  s.pce_bytes = std::size_t(12.25 * double(kGiB));
  return s;
}

std::size_t key_bytes(const MemoryPlan& p) {
  std::size_t b = 0;
  for (int q = 0; q < 5; ++q) b += p.points[q] * p.point_bytes[q];
  return b;
}

TEST(MemoryPlan, NoBudgetOrAmpleBudgetKeepsEverythingResident) {
  for (std::size_t budget : {std::size_t(0), std::size_t(141e9)}) {
    const MemoryPlan p = plan_memory(porep(), budget);
    EXPECT_TRUE(p.all_resident()) << p.summary();
    EXPECT_EQ(p.streamed_bytes(), 0u);
    EXPECT_EQ(p.msm_chunk, 0u);
    EXPECT_EQ(p.key_resident_bytes(), key_bytes(p));
    if (budget) {
      EXPECT_LE(p.peak_bytes, budget);
    }
  }
}

// Streaming plans go through the transfer ring (MsmPipeline): its slots are
// counted in the MSM stage, and the slots filled before the NTTs fit beside
// the NTT stage's vectors within the budget.
TEST(MemoryPlan, TheTransferRingFitsTheBudgetBeforeAndAfterTheNtts) {
  const ProofShape s = porep();
  const std::size_t fr = s.fr_bytes, v = s.num_vars, n = s.domain_size;
  for (double gib : {80.0, 40.0, 24.0, 16.0}) {
    const std::size_t budget = std::size_t(gib * double(kGiB));
    const MemoryPlan p = plan_memory(s, budget);
    SCOPED_TRACE(p.summary());
    EXPECT_GE(p.ring_slots, 2);
    EXPECT_LE(p.ring_slots, kRingSlots);
    EXPECT_GE(p.prefetch_slots, 0);
    EXPECT_LE(p.prefetch_slots, p.ring_slots);
    const std::size_t slot = p.msm_chunk * s.g1_bytes;
    const std::size_t ntt = (p.release_witness ? fr * std::max(v + 2 * n, 3 * n) : fr * (v + 3 * n)) + kPlanSlackBytes;
    const std::size_t fixed = p.key_resident_bytes() + (p.pce_on_host ? 0 : s.pce_bytes);
    EXPECT_LE(fixed + ntt + std::size_t(p.prefetch_slots) * slot, budget);
    EXPECT_LE(fixed + fr * (v + n) + kPlanSlackBytes + std::size_t(p.ring_slots + collect_slots(p.ring_lanes)) * slot +
                  msm_working_bytes(p.msm_chunk),
              budget);
    EXPECT_NE(p.summary().find("transfer slots"), std::string::npos);
  }
  EXPECT_EQ(plan_memory(s, 0).ring_slots, 0);  // nothing streamed: no ring
}

// Two lanes (opt-in): four slots at least and a second collection, within
// the budget; one lane by default; a budget with no room for four slots of
// at least half the one-lane chunk stays in one lane.
TEST(MemoryPlan, TwoLanesOnlyWhenAskedAndWhereTheyFit) {
  const ProofShape s = porep();
  const std::size_t fr = s.fr_bytes, v = s.num_vars, n = s.domain_size;
  for (double gib : {80.0, 40.0, 24.0, 16.0}) {
    const std::size_t budget = std::size_t(gib * double(kGiB));
    const MemoryPlan one = plan_memory(s, budget);
    const MemoryPlan two = plan_memory(s, budget, kMaxChunk, 2);
    SCOPED_TRACE(two.summary());
    EXPECT_EQ(one.ring_lanes, 1);
    if (two.ring_lanes == 2) {
      EXPECT_GE(two.ring_slots, 4);
      EXPECT_GE(two.msm_chunk * 2, one.msm_chunk);
      EXPECT_NE(two.summary().find("lane of their own"), std::string::npos);
    }
    const std::size_t fixed = two.key_resident_bytes() + (two.pce_on_host ? 0 : s.pce_bytes);
    EXPECT_LE(fixed + fr * (v + n) + kPlanSlackBytes +
                  std::size_t(two.ring_slots + collect_slots(two.ring_lanes)) * two.msm_chunk * s.g1_bytes +
                  msm_working_bytes(two.msm_chunk),
              budget);
  }
  EXPECT_EQ(plan_memory(s, 24 * kGiB, kMaxChunk, 2).ring_lanes, 2);
}

TEST(MemoryPlan, SmallerBudgetsStreamMoreAndStayWithinTheBudget) {
  std::size_t first_streamed = 0;
  for (double gib : {80.0, 40.0, 24.0, 16.0}) {
    const std::size_t budget = std::size_t(gib * double(kGiB));
    const MemoryPlan p = plan_memory(porep(), budget);
    SCOPED_TRACE(p.summary());
    EXPECT_FALSE(p.all_resident());
    EXPECT_LE(p.peak_bytes, budget);
    EXPECT_EQ(p.key_resident_bytes() + p.streamed_bytes(), key_bytes(p));
    // (Not monotone in between: a smaller budget may take smaller MSM
    // chunks and keep more points resident.)
    if (first_streamed == 0) first_streamed = p.streamed_bytes();
    EXPECT_GE(p.streamed_bytes(), first_streamed);
    EXPECT_GE(p.msm_chunk, kMinChunk);
    EXPECT_LE(p.msm_chunk, kMaxChunk);
    // H (dense scalars, compute-bound) is the first query streamed.
    EXPECT_EQ(p.resident[kQueryH], 0u);
    // Resident prefixes are taken in the order A, B1, C, B2, H.
    for (int q = 1; q < 5; ++q) {
      if (p.resident[q] > 0) {
        EXPECT_EQ(p.resident[q - 1], p.points[q - 1]) << key_query_name(q);
      }
    }
  }
  // 80 GiB keeps the PCE and the witness; 16 GiB needs both moved.
  EXPECT_FALSE(plan_memory(porep(), 80 * kGiB).pce_on_host);
  const MemoryPlan tight = plan_memory(porep(), 16 * kGiB);
  EXPECT_TRUE(tight.pce_on_host);
  EXPECT_TRUE(tight.release_witness);
  EXPECT_FALSE(tight.overlap);  // the witness is not on the device beside the NTTs
  // Released witness: the SpMV holds witness + a + b, then a, b, c; the
  // larger of the two with the MSM stage and the resident key fits.
  const std::size_t fr = 32, v = porep().num_vars, n = porep().domain_size;
  EXPECT_LE(tight.key_resident_bytes() + fr * std::max(v + 2 * n, 3 * n), 16 * kGiB);
  // Without a budget (or with room for a second MSM working set) the
  // witness MSMs overlap the NTTs; streaming plans keep that room for
  // resident points instead.
  EXPECT_TRUE(plan_memory(porep(), 0).overlap);
  EXPECT_NE(plan_memory(porep(), 0).summary().find("beside the NTTs"), std::string::npos);
  EXPECT_FALSE(plan_memory(porep(), 24 * kGiB).overlap);
  EXPECT_FALSE(plan_memory(porep(), 80 * kGiB).overlap);
  EXPECT_NE(tight.summary().find("read from host memory"), std::string::npos) << tight.summary();
}

TEST(MemoryPlan, TooSmallABudgetSaysWhatItNeeds) {
  try {
    plan_memory(porep(), 8 * kGiB);
    FAIL() << "8 GiB cannot hold the partition's NTT vectors";
  } catch (const BudgetTooSmall& e) {
    EXPECT_GT(e.needed(), 8 * kGiB);
    EXPECT_LT(e.needed(), 16 * kGiB);
    const std::string what = e.what();
    EXPECT_NE(what.find("needs at least"), std::string::npos) << what;
    EXPECT_NE(what.find("8.00 GiB"), std::string::npos) << what;
    // The bytes it names are enough.
    EXPECT_NO_THROW(plan_memory(porep(), e.needed()));
  }
}

// The bytes a too-small budget's error names are the least that proves the
// circuit, whether that least keeps everything resident (a key smaller than
// the streaming machinery: transfer slots, collection, working set) or
// streams it all.
TEST(MemoryPlan, TheNeededBytesAreTheLeastThatProves) {
  for (std::uint64_t vars : {std::uint64_t(300), std::uint64_t(5001), std::uint64_t(200000)}) {
    ProofShape s;
    s.num_vars = vars;
    s.num_public = 2;
    std::uint64_t n = 1;
    while (n < vars + 3) n *= 2;
    s.domain_size = n;
    s.g1_bytes = 64;
    s.g2_bytes = 128;
    s.pce_bytes = vars * 40;
    try {
      plan_memory(s, 1024);
      FAIL() << "1 KiB cannot hold " << vars << " signals";
    } catch (const BudgetTooSmall& e) {
      SCOPED_TRACE(e.what());
      EXPECT_NO_THROW(plan_memory(s, e.needed()));
      EXPECT_THROW(plan_memory(s, e.needed() - 1), BudgetTooSmall);
      EXPECT_LE(e.needed(), plan_memory(s, 0).peak_bytes);
    }
  }
}

TEST(MemoryPlan, SmallCircuitsAndForcedChunks) {
  ProofShape s;
  s.num_vars = 5001;
  s.num_public = 5;
  s.domain_size = 8192;
  s.g1_bytes = 64;
  s.g2_bytes = 128;
  s.pce_bytes = 1 << 20;
  const MemoryPlan all = plan_memory(s, 0);
  EXPECT_TRUE(all.all_resident());
  EXPECT_EQ(all.points[kQueryC], 5001u - 5 - 1);
  std::size_t needed = 0;
  try {
    plan_memory(s, 1);
  } catch (const BudgetTooSmall& e) {
    needed = e.needed();
  }
  ASSERT_GT(needed, 0u);
  // At exactly what it needs: everything streamed, in the smallest chunks
  // (the circuit's own size here, below kMinChunk).
  const MemoryPlan p = plan_memory(s, needed);
  EXPECT_EQ(p.msm_chunk, 8192u);
  EXPECT_EQ(p.key_resident_bytes(), 0u);
  EXPECT_LE(p.peak_bytes, needed);
  // A forced smaller chunk.
  EXPECT_EQ(plan_memory(s, needed, 1024).msm_chunk, 1024u);
}

}  // namespace
}  // namespace zkfarm::cuda
