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

// ntt_group_pass_kernel<R> for one pass, phase by phase: every thread's
// registers persist across the barriers as the kernel's do.
template <unsigned R, class F>
void group_pass_emulated(const nk::PassArgs<F>& args) {
  const std::uint32_t tile_size = args.tile_size();
  const std::uint32_t threads = tile_size >> R;
  std::vector<std::uint32_t> smem(tile_size * F::kLimbs);
  std::vector<F> regs(std::size_t(threads) << R);
  const unsigned groups = nk::group_count(args.pass, R);
  for (std::uint64_t tile = 0; tile < args.tiles(); ++tile) {
    for (std::uint32_t t = 0; t < threads; ++t) nk::group_load<R>(args, tile, t, &regs[t << R]);
    for (unsigned step = 0; step < groups; ++step) {
      const unsigned i = args.dit ? groups - 1 - step : step;
      if (step > 0) {
        std::fill(smem.begin(), smem.end(), 0xdeadbeefu);  // every slot read must have been written
        for (std::uint32_t t = 0; t < threads; ++t)
          nk::group_put<R>(args, args.dit ? i + 1 : i - 1, t, &regs[t << R], smem.data());
        for (std::uint32_t t = 0; t < threads; ++t) nk::group_get<R>(args, i, t, &regs[t << R], smem.data());
      }
      for (std::uint32_t t = 0; t < threads; ++t) nk::group_stages<R>(args, i, t, &regs[t << R]);
    }
    for (std::uint32_t t = 0; t < threads; ++t) nk::group_store<R>(args, tile, t, &regs[t << R]);
  }
}

template <class Fr>
void run_emulated(Op op, std::vector<Fr>& values, unsigned tile_log = nk::kTileLog) {
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
  tables.mid = as_device<F>(host.mid);
  const nk::Plan plan = nk::make_plan(log_n, tile_log);
  // Every pass must cover its stages exactly once, in order.
  unsigned next_stage = 0;
  for (unsigned p = 0; p < plan.count; ++p) {
    EXPECT_EQ(plan.passes[p].j0, next_stage);
    EXPECT_LE(plan.passes[p].s + plan.passes[p].column_log, tile_log);
    next_stage += plan.passes[p].s;
  }
  EXPECT_EQ(next_stage, log_n);

  // dit: the transposed passes, last pass first (bit-reversed input,
  // natural output); coset: the scaling folded into the last DIF pass.
  auto passes = [&](bool inverse, bool dit = false, const F* coset = nullptr) {
    for (unsigned step = 0; step < plan.count; ++step) {
      const unsigned p = dit ? plan.count - 1 - step : step;
      nk::PassArgs<F> args;
      args.data = data;
      args.log_n = log_n;
      args.pass = plan.passes[p];
      args.inverse = inverse;
      args.tables = tables;
      args.tables.coset_hi = coset;
      args.dit = dit;
      const unsigned tile_log = args.pass.s + args.pass.column_log;
      if (tile_log >= 3) group_pass_emulated<3>(args);
      else if (tile_log == 2) group_pass_emulated<2>(args);
      else group_pass_emulated<1>(args);
    }
  };
  std::vector<Fr> coset_hi(host.hi.size());
  auto bit_reverse = [&](nk::Scale scale, const F& constant) {
    nk::BitReverseArgs<F> args;
    args.data = data;
    args.log_n = log_n;
    args.scale = scale;
    args.constant = constant;
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
      // No bit reversal: DIF inverse (natural -> bit-reversed) with the
      // coset scaling in its last pass, then DIT forward (-> natural).
      passes(true, false, as_device<F>(coset_hi));
      passes(false, true);
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
void check_sizes(unsigned max_log, unsigned tile_log = nk::kTileLog) {
  std::mt19937_64 rng(42);
  for (unsigned log_n = 0; log_n <= max_log; ++log_n) {
    const std::size_t n = std::size_t(1) << log_n;
    const auto input = random_values<Fr>(n, rng);
    for (Op op : {Op::kForward, Op::kInverse, Op::kCoset}) {
      std::vector<Fr> expected = input, got = input;
      if (op == Op::kForward) ntt<Fr>(expected);
      if (op == Op::kInverse) intt<Fr>(expected);
      if (op == Op::kCoset) evaluations_to_odd_coset<Fr>(expected);
      run_emulated(op, got, tile_log);
      ASSERT_TRUE(got == expected) << Fr::kName << " 2^" << log_n << " op " << int(op) << " tile 2^" << tile_log;
    }
  }
}

TEST(NttEmulation, PlanFor27Tile10) {
  const nk::Plan plan = nk::make_plan(27, 10);
  ASSERT_EQ(plan.count, 3u);
  EXPECT_EQ(plan.passes[0].s, 9u);
  EXPECT_EQ(plan.passes[0].column_log, 1u);
  EXPECT_EQ(plan.passes[1].s, 8u);
  EXPECT_EQ(plan.passes[1].column_log, 2u);
  EXPECT_EQ(plan.passes[2].s, 10u);
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
// Tiles of 2^10 and 2^8 (GpuNttConfig::tile_log): at 2^14 a four-stage
// early pass with 64 columns (2^10) or a six-stage one with 4 (2^8).
TEST(NttEmulation, Bn254SmallerTiles) {
  check_sizes<Bn254Fr>(14, 10);
  check_sizes<Bn254Fr>(14, 8);
}

// 2^21: two early passes (5 + 5 stages, 64 columns per tile) before the last;
// the first pass's twists come from lo * hi (M = 2^21), the second's from
// the mid table.
TEST(NttEmulation, Bn254TwoEarlyPasses) {
  std::mt19937_64 rng(7);
  const auto input = random_values<Bn254Fr>(std::size_t(1) << 21, rng);
  std::vector<Bn254Fr> expected = input, got = input;
  ntt<Bn254Fr>(expected);
  run_emulated(Op::kForward, got);
  ASSERT_TRUE(got == expected);
}

// 2^20 odd coset: one early pass of 9 stages with M = 2^20 > 2^19, so the
// transposed pass applies lo * hi twists on load.
TEST(NttEmulation, Bn254OddCosetOneEarlyPass) {
  std::mt19937_64 rng(9);
  const auto input = random_values<Bn254Fr>(std::size_t(1) << 20, rng);
  std::vector<Bn254Fr> expected = input, got = input;
  evaluations_to_odd_coset<Bn254Fr>(expected);
  run_emulated(Op::kCoset, got);
  ASSERT_TRUE(got == expected);
}

// Every register-group layout of the passes up to 2^27: for each element j
// of a thread, the 32 lanes of a warp use 32 different shared-memory banks
// (slot mod 32 after swizzle()), and the swizzle is a bijection on the tile.
TEST(NttEmulation, SharedMemoryLayoutsAreConflictFree) {
  for (unsigned tile_log = nk::kMinTileLog; tile_log <= nk::kTileLog; ++tile_log)
  for (unsigned log_n = 5; log_n <= nk::kMaxLogN; ++log_n) {
    const nk::Plan plan = nk::make_plan(log_n, tile_log);
    for (unsigned p = 0; p < plan.count; ++p) {
      const nk::Pass& pass = plan.passes[p];
      const std::uint32_t tile_size = 1u << (pass.s + pass.column_log);
      std::vector<bool> seen(tile_size, false);
      for (std::uint32_t e = 0; e < tile_size; ++e) {
        const std::uint32_t slot = nk::swizzle(e);
        ASSERT_LT(slot, tile_size);
        ASSERT_FALSE(seen[slot]);
        seen[slot] = true;
      }
      if (tile_size < 256) continue;  // fewer than 32 threads
      for (unsigned i = 0; i < nk::group_count(pass, 3); ++i) {
        const nk::Group gr = nk::make_group(pass, 3, i);
        for (std::uint32_t warp = 0; warp < (tile_size >> 3) / 32; ++warp)
          for (std::uint32_t j = 0; j < 8; ++j) {
            std::uint32_t banks = 0;
            for (std::uint32_t lane = 0; lane < 32; ++lane)
              banks |= 1u << (nk::swizzle(nk::group_element(warp * 32 + lane, gr.p, 3, j)) % 32);
            EXPECT_EQ(banks, 0xffffffffu) << "2^" << log_n << " pass " << p << " group " << i;
          }
      }
    }
  }
}

TEST(NttEmulation, PlanShapes) {
  for (unsigned tile_log = nk::kMinTileLog; tile_log <= nk::kTileLog; ++tile_log)
  for (unsigned log_n = 1; log_n <= nk::kMaxLogN; ++log_n) {
    const nk::Plan plan = nk::make_plan(log_n, tile_log);
    ASSERT_LE(plan.count, 4u);
    unsigned stages = 0;
    for (unsigned p = 0; p < plan.count; ++p) {
      const auto& pass = plan.passes[p];
      EXPECT_LE(pass.s + pass.column_log, tile_log);
      EXPECT_LE(pass.s, p + 1 == plan.count ? tile_log : nk::kMaxPassStages);
      // Early passes need at least C columns per block.
      EXPECT_LE(pass.column_log, log_n - pass.j0 - pass.s) << log_n;
      stages += pass.s;
    }
    EXPECT_EQ(stages, log_n);
  }
}

}  // namespace
}  // namespace zkfarm::cuda
