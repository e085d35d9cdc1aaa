// ntt_emulation_test -- the GPU NTT's per-thread code (ntt_kernels.cuh) run
// on the CPU, thread by thread and barrier by barrier, against kernels/ntt.h.
//
// Plain C++ (no CUDA needed): checks the pass plan, the index arithmetic,
// the twiddle exponents and the bit-reversal scaling in CI. The kernels in
// ntt_kernels.cuh call exactly these functions between __syncthreads();
// GpuNtt::run (ntt.cuh) issues the same sequence of passes as run_emulated
// below.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/ntt_kernels.cuh"
#include "kernels/field.h"
#include "kernels/ntt.h"

namespace zkfarm::cuda {
namespace {

namespace nk = ntt_kernels;

enum class Op { kForward, kInverse, kCoset };

template <class F, class Fr>
const F* as_device(const std::vector<Fr>& v) {
  static_assert(sizeof(F) == sizeof(Fr));
  return reinterpret_cast<const F*>(v.data());
}

template <class Fr>
void run_emulated(Op op, std::vector<Fr>& values) {
  using F = typename DeviceFieldOf<Fr>::type;
  static const nk::HostTables<Fr> host;
  const std::size_t n = values.size();
  const unsigned log_n = unsigned(__builtin_ctzll(n));
  if (log_n == 0) return;
  F* data = reinterpret_cast<F*>(values.data());
  nk::Tables<F> tables;
  tables.lo = as_device<F>(host.lo);
  tables.hi = as_device<F>(host.hi);
  tables.local_fwd = as_device<F>(host.local_fwd);
  tables.local_inv = as_device<F>(host.local_inv);
  const nk::Plan plan = nk::make_plan(log_n);
  // Every pass must cover its stages exactly once, in order.
  unsigned next_stage = 0;
  for (unsigned p = 0; p < plan.count; ++p) {
    EXPECT_EQ(plan.passes[p].j0, next_stage);
    EXPECT_LE(plan.passes[p].s + plan.passes[p].column_log, nk::kTileLog);
    next_stage += plan.passes[p].s;
  }
  EXPECT_EQ(next_stage, log_n);

  auto passes = [&](bool inverse) {
    for (unsigned p = 0; p < plan.count; ++p) {
      nk::PassArgs<F> args;
      args.data = data;
      args.log_n = log_n;
      args.pass = plan.passes[p];
      args.inverse = inverse;
      args.tables = tables;
      const std::uint32_t tile_size = args.tile_size();
      std::vector<std::uint32_t> smem(tile_size * F::kLimbs);
      for (std::uint64_t tile = 0; tile < args.tiles(); ++tile) {
        for (std::uint32_t e = 0; e < tile_size; ++e) nk::pass_load(args, tile, e, smem.data());
        for (unsigned q = 0; q < args.pass.s; ++q)
          for (std::uint32_t b = 0; b < tile_size / 2; ++b) nk::pass_butterfly(args, q, b, smem.data());
        for (std::uint32_t e = 0; e < tile_size; ++e) nk::pass_store(args, tile, e, smem.data());
      }
    }
  };
  std::vector<Fr> coset_hi(host.hi.size());
  auto bit_reverse = [&](nk::Scale scale, const F& constant) {
    nk::BitReverseArgs<F> args;
    args.data = data;
    args.log_n = log_n;
    args.scale = scale;
    args.constant = constant;
    args.tables = tables;
    args.tables.coset_hi = as_device<F>(coset_hi);
    for (std::uint64_t i = 0; i < n; ++i) nk::bit_reverse(args, i);
  };
  const Fr n_inv = Fr::from_u64(n).inverse();
  switch (op) {
    case Op::kForward:
      passes(false);
      bit_reverse(nk::Scale::kNone, F::one());
      break;
    case Op::kInverse:
      passes(true);
      bit_reverse(nk::Scale::kConstant, F::from_host(n_inv));
      break;
    case Op::kCoset:
      for (std::size_t i = 0; i < coset_hi.size(); ++i) coset_hi[i] = host.hi[i] * n_inv;
      passes(true);
      bit_reverse(nk::Scale::kCoset, F::one());
      passes(false);
      bit_reverse(nk::Scale::kNone, F::one());
      break;
  }
}

template <class Fr>
std::vector<Fr> random_values(std::size_t n, std::mt19937_64& rng) {
  std::vector<Fr> v(n);
  for (auto& x : v) {
    typename Fr::Int i;
    for (auto& l : i.limbs) l = rng();
    i.limbs[Fr::N - 1] &= (~std::uint64_t(0)) >> 4;  // below 2^252 < r
    x = Fr::from_mont(i);
  }
  return v;
}

template <class Fr>
void check_sizes(unsigned max_log) {
  std::mt19937_64 rng(42);
  for (unsigned log_n = 0; log_n <= max_log; ++log_n) {
    const std::size_t n = std::size_t(1) << log_n;
    const auto input = random_values<Fr>(n, rng);
    for (Op op : {Op::kForward, Op::kInverse, Op::kCoset}) {
      std::vector<Fr> expected = input, got = input;
      if (op == Op::kForward) ntt<Fr>(expected);
      if (op == Op::kInverse) intt<Fr>(expected);
      if (op == Op::kCoset) evaluations_to_odd_coset<Fr>(expected);
      run_emulated(op, got);
      ASSERT_TRUE(got == expected) << Fr::kName << " 2^" << log_n << " op " << int(op);
    }
  }
}

TEST(NttEmulation, PlanFor27) {
  const nk::Plan plan = nk::make_plan(27);
  ASSERT_EQ(plan.count, 3u);
  EXPECT_EQ(plan.passes[0].s, 8u);
  EXPECT_EQ(plan.passes[1].s, 8u);
  EXPECT_EQ(plan.passes[2].s, 11u);
  EXPECT_EQ(plan.passes[0].column_log, 3u);
}

// Up to 2^11 one tile; 2^12 adds a one-stage early pass with 1024 columns
// per tile; 2^15 a four-stage one.
TEST(NttEmulation, Bn254AllSizes) { check_sizes<Bn254Fr>(15); }
TEST(NttEmulation, Bls12381AllSizes) { check_sizes<Bls12381Fr>(13); }

// 2^21: two early passes (5 + 5 stages, 64 columns per tile) before the last.
TEST(NttEmulation, Bn254TwoEarlyPasses) {
  std::mt19937_64 rng(7);
  const auto input = random_values<Bn254Fr>(std::size_t(1) << 21, rng);
  std::vector<Bn254Fr> expected = input, got = input;
  ntt<Bn254Fr>(expected);
  run_emulated(Op::kForward, got);
  ASSERT_TRUE(got == expected);
}

TEST(NttEmulation, PlanShapes) {
  for (unsigned log_n = 1; log_n <= nk::kMaxLogN; ++log_n) {
    const nk::Plan plan = nk::make_plan(log_n);
    unsigned stages = 0;
    for (unsigned p = 0; p < plan.count; ++p) {
      const auto& pass = plan.passes[p];
      EXPECT_LE(pass.s, p + 1 == plan.count ? nk::kTileLog : nk::kMaxPassStages);
      // Early passes need at least C columns per block.
      EXPECT_LE(pass.column_log, log_n - pass.j0 - pass.s) << log_n;
      stages += pass.s;
    }
    EXPECT_EQ(stages, log_n);
  }
}

}  // namespace
}  // namespace zkfarm::cuda
