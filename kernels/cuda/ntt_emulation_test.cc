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
#include <type_traits>
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

// The arguments ntt_shaped_pass_kernel<S, DIT> (TileLog 11) or
// ntt_narrow_pass_kernel<S, DIT> (TileLog 10) computes with (shaped_args):
// the same pass as `args`, branch_free set.
template <unsigned TileLog, class F>
nk::PassArgs<F> shaped_emulated(const nk::PassArgs<F>& args) {
  auto pick = [&](auto s) {
    constexpr unsigned S = decltype(s)::value;
    return args.dit ? nk::shaped_args<S, true, TileLog>(args) : nk::shaped_args<S, false, TileLog>(args);
  };
  nk::PassArgs<F> shaped;
  switch (args.pass.s) {
    case 5: shaped = pick(std::integral_constant<unsigned, 5>{}); break;
    case 6: shaped = pick(std::integral_constant<unsigned, 6>{}); break;
    case 7: shaped = pick(std::integral_constant<unsigned, 7>{}); break;
    case 8: shaped = pick(std::integral_constant<unsigned, 8>{}); break;
    case 9: shaped = pick(std::integral_constant<unsigned, 9>{}); break;
    case 10: shaped = pick(std::integral_constant<unsigned, 10>{}); break;
    case 11: shaped = pick(std::integral_constant<unsigned, 11>{}); break;
    default: ADD_FAILURE() << "no shaped kernel for " << args.pass.s << " stages"; return args;
  }
  EXPECT_EQ(shaped.pass.s, args.pass.s);
  EXPECT_EQ(shaped.pass.column_log, args.pass.column_log);
  EXPECT_EQ(shaped.pass.j0, args.pass.j0);
  EXPECT_EQ(shaped.dit, args.dit);
  EXPECT_TRUE(shaped.branch_free);
  return shaped;
}

// Passes run by GpuNtt::run: the shaped kernel where nk::shaped(pass)
// (GpuNttConfig's default), or the generic one for all (generic_passes).
enum class Kernels { kDefault, kGeneric };

template <class Fr>
void run_emulated(Op op, std::vector<Fr>& values, unsigned tile_log = nk::kTileLog,
                  Kernels kernels = Kernels::kDefault, unsigned* shaped_passes = nullptr) {
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
  const unsigned plan_tile_log = tile_log;  // GpuNttConfig::tile_log (10: the narrow kernels)
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
      if (kernels == Kernels::kDefault && plan_tile_log == nk::kNarrowTileLog && nk::narrow_shaped(args.pass)) {
        group_pass_emulated<nk::kNarrowRadixLog>(shaped_emulated<nk::kNarrowTileLog>(args));
        if (shaped_passes != nullptr) ++*shaped_passes;
      } else if (kernels == Kernels::kDefault && nk::shaped(args.pass)) {
        group_pass_emulated<nk::kRadixLog>(shaped_emulated<nk::kShapedTileLog>(args));
        if (shaped_passes != nullptr) ++*shaped_passes;
      } else if (tile_log >= 3) group_pass_emulated<3>(args);
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
// the mid table (shaped kernels, branch_free: every twist multiplied in).
TEST(NttEmulation, Bn254TwoEarlyPasses) {
  std::mt19937_64 rng(7);
  const auto input = random_values<Bn254Fr>(std::size_t(1) << 21, rng);
  std::vector<Bn254Fr> expected = input, got = input;
  ntt<Bn254Fr>(expected);
  run_emulated(Op::kForward, got);
  ASSERT_TRUE(got == expected);
}

// 2^20 odd coset: one early pass of 9 stages with M = 2^20 > 2^19, so the
// transposed pass applies lo * hi twists on load (shaped kernels; the
// inverse's exponent of w^0 wraps to 0).
TEST(NttEmulation, Bn254OddCosetOneEarlyPass) {
  std::mt19937_64 rng(9);
  const auto input = random_values<Bn254Fr>(std::size_t(1) << 20, rng);
  std::vector<Bn254Fr> expected = input, got = input;
  evaluations_to_odd_coset<Bn254Fr>(expected);
  run_emulated(Op::kCoset, got);
  ASSERT_TRUE(got == expected);
}

// The shaped kernels (every 2^11-tile shape: early passes of 5..9 stages
// and the last of 11) against the CPU NTT, forward, inverse and odd coset,
// and the generic kernel on the same input (2^16..2^20 are one early pass
// of 5..9 stages).
template <class Fr>
void check_shaped(unsigned log_n, unsigned seed) {
  std::mt19937_64 rng(seed);
  const auto input = random_values<Fr>(std::size_t(1) << log_n, rng);
  for (Op op : {Op::kForward, Op::kInverse, Op::kCoset}) {
    std::vector<Fr> expected = input, got = input, generic = input;
    if (op == Op::kForward) ntt<Fr>(expected);
    if (op == Op::kInverse) intt<Fr>(expected);
    if (op == Op::kCoset) evaluations_to_odd_coset<Fr>(expected);
    unsigned shaped_passes = 0;
    run_emulated(op, got, nk::kTileLog, Kernels::kDefault, &shaped_passes);
    EXPECT_EQ(shaped_passes, nk::make_plan(log_n).count * (op == Op::kCoset ? 2u : 1u)) << log_n;
    ASSERT_TRUE(got == expected) << Fr::kName << " 2^" << log_n << " op " << int(op) << " (shaped)";
    run_emulated(op, generic, nk::kTileLog, Kernels::kGeneric);
    ASSERT_TRUE(generic == expected) << Fr::kName << " 2^" << log_n << " op " << int(op) << " (generic)";
  }
}

// Kept to seconds: 2^16 and 2^17 (5 and 6 stages) on BN254, 2^16 on
// BLS12-381; 7 and 8 stages at 2^18 / 2^19 forward only; 9 stages are the
// 2^20 odd coset below, two early passes the 2^21 forward below (both
// through the shaped kernels, the default).
TEST(NttEmulation, Bn254ShapedPasses) {
  check_shaped<Bn254Fr>(16, 16);
  check_shaped<Bn254Fr>(17, 17);
}
TEST(NttEmulation, Bls12381ShapedPasses) { check_shaped<Bls12381Fr>(16, 3); }
TEST(NttEmulation, Bn254ShapedSevenAndEightStages) {
  for (unsigned log_n : {18u, 19u}) {
    std::mt19937_64 rng(log_n);
    const auto input = random_values<Bn254Fr>(std::size_t(1) << log_n, rng);
    std::vector<Bn254Fr> expected = input, got = input;
    ntt<Bn254Fr>(expected);
    run_emulated(Op::kForward, got);
    ASSERT_TRUE(got == expected) << log_n;
  }
}

// The narrow kernels (tiles of 2^10, four elements a thread: early passes
// of 5..9 stages and the last of 10) against the CPU NTT and the generic
// kernel, forward, inverse and odd coset: 2^15 is one pass of 5 stages and
// the last of 10; 2^16 6 + 10; 2^19 9 + 10 (as 2^27's first pass); 2^18
// 8 + 10 forward only.
template <class Fr>
void check_narrow(unsigned log_n, unsigned seed, bool all_ops = true) {
  std::mt19937_64 rng(seed);
  const auto input = random_values<Fr>(std::size_t(1) << log_n, rng);
  for (Op op : {Op::kForward, Op::kInverse, Op::kCoset}) {
    if (!all_ops && op != Op::kForward) continue;
    std::vector<Fr> expected = input, got = input;
    if (op == Op::kForward) ntt<Fr>(expected);
    if (op == Op::kInverse) intt<Fr>(expected);
    if (op == Op::kCoset) evaluations_to_odd_coset<Fr>(expected);
    unsigned narrow_passes = 0;
    run_emulated(op, got, nk::kNarrowTileLog, Kernels::kDefault, &narrow_passes);
    EXPECT_EQ(narrow_passes, nk::make_plan(log_n, nk::kNarrowTileLog).count * (op == Op::kCoset ? 2u : 1u));
    ASSERT_TRUE(got == expected) << Fr::kName << " 2^" << log_n << " op " << int(op) << " (narrow)";
  }
}
TEST(NttEmulation, Bn254NarrowPasses) {
  check_narrow<Bn254Fr>(15, 15);
  check_narrow<Bn254Fr>(16, 16);
  check_narrow<Bn254Fr>(18, 18, false);
}
TEST(NttEmulation, Bls12381NarrowPasses) {
  check_narrow<Bls12381Fr>(15, 5);
  check_narrow<Bls12381Fr>(19, 19, false);
}

// Every plan at 2^10 tiles from 2^15 to 2^27 runs the narrow kernels only.
TEST(NttEmulation, LargeNarrowPlansAreShaped) {
  for (unsigned log_n = 15; log_n <= nk::kMaxLogN; ++log_n) {
    const nk::Plan plan = nk::make_plan(log_n, nk::kNarrowTileLog);
    for (unsigned p = 0; p < plan.count; ++p)
      EXPECT_TRUE(nk::narrow_shaped(plan.passes[p])) << log_n << " pass " << p;
  }
}

// The tiled bit reversal (bit_reverse_tiled_kernel's two phases, every
// block and thread, a barrier between them) against the element-wise one,
// plain and scaled, at 2^10 (no middle bits), 2^11 (one) and 2^15, 2^16
// (odd and even middle widths: blocks with m < rev(m), m = rev(m) and
// m > rev(m)).
template <class Fr>
void check_tiled_reversal(unsigned log_n, unsigned seed) {
  using F = typename DeviceFieldOf<Fr>::type;
  std::mt19937_64 rng(seed);
  const auto input = random_values<Fr>(std::size_t(1) << log_n, rng);
  const Fr constant = random_values<Fr>(1, rng)[0];
  for (nk::Scale scale : {nk::Scale::kNone, nk::Scale::kConstant}) {
    std::vector<Fr> tiled = input, elementwise = input;
    nk::BitReverseArgs<F> args;
    args.log_n = log_n;
    args.scale = scale;
    args.constant = F::from_host(constant);
    args.data = reinterpret_cast<F*>(elementwise.data());
    for (std::uint64_t i = 0; i < input.size(); ++i) nk::bit_reverse(args, i);
    args.data = reinterpret_cast<F*>(tiled.data());
    std::vector<std::uint32_t> smem(nk::bit_reverse_tiled_smem<F>() / sizeof(std::uint32_t));
    const std::uint32_t blocks = 1u << (log_n - 2 * nk::kReverseEdgeLog);
    for (std::uint32_t m = 0; m < blocks; ++m) {
      std::fill(smem.begin(), smem.end(), 0xdeadbeefu);
      for (std::uint32_t t = 0; t < nk::kThreads; ++t) nk::reverse_tiles_load(args, m, t, nk::kThreads, smem.data());
      for (std::uint32_t t = 0; t < nk::kThreads; ++t) nk::reverse_tiles_store(args, m, t, nk::kThreads, smem.data());
    }
    ASSERT_TRUE(tiled == elementwise) << "2^" << log_n << " scale " << int(scale);
    ASSERT_FALSE(tiled == input) << "2^" << log_n;
    if (scale == nk::Scale::kNone) {
      for (std::uint64_t i = 0; i < input.size(); ++i) {
        ASSERT_TRUE(tiled[nk::reverse_bits(std::uint32_t(i), log_n)] == input[i]) << "2^" << log_n << " at " << i;
      }
    }
  }
}
TEST(NttEmulation, TiledBitReversal) {
  for (unsigned log_n : {10u, 11u, 15u, 16u}) check_tiled_reversal<Bn254Fr>(log_n, log_n);
  check_tiled_reversal<Bls12381Fr>(13, 13);
}

// Every shape of the plans at 2^11 tiles from 2^12 to 2^27 past the first
// few sizes has a shaped kernel: the large transforms never fall back to
// the generic kernel.
TEST(NttEmulation, LargePlansAreShaped) {
  for (unsigned log_n = 16; log_n <= nk::kMaxLogN; ++log_n) {
    const nk::Plan plan = nk::make_plan(log_n);
    for (unsigned p = 0; p < plan.count; ++p) EXPECT_TRUE(nk::shaped(plan.passes[p])) << log_n << " pass " << p;
  }
}

// Every register-group layout of the passes up to 2^27: for each element j
// of a thread, the 32 lanes of a warp use 32 different shared-memory banks
// (slot mod 32 after swizzle()), and the swizzle is a bijection on the tile;
// for eight elements a thread and, on the narrow kernels' passes, four.
TEST(NttEmulation, SharedMemoryLayoutsAreConflictFree) {
  for (unsigned tile_log = nk::kMinTileLog; tile_log <= nk::kTileLog; ++tile_log)
  for (unsigned log_n = 5; log_n <= nk::kMaxLogN; ++log_n) {
    const nk::Plan plan = nk::make_plan(log_n, tile_log);
    for (unsigned p = 0; p < plan.count; ++p) {
      const nk::Pass& pass = plan.passes[p];
      const std::uint32_t tile_size = 1u << (pass.s + pass.column_log);
      // Eight elements a thread, and four in the narrow kernels' passes.
      for (unsigned r : {3u, 2u}) {
        if (r == 2 && !(tile_log == nk::kNarrowTileLog && nk::narrow_shaped(pass))) continue;
        std::vector<bool> seen(tile_size, false);
        for (std::uint32_t e = 0; e < tile_size; ++e) {
          const std::uint32_t slot = nk::swizzle(e, r);
          ASSERT_LT(slot, tile_size);
          ASSERT_FALSE(seen[slot]);
          seen[slot] = true;
        }
        if ((tile_size >> r) < 32) continue;  // fewer than 32 threads
        for (unsigned i = 0; i < nk::group_count(pass, r); ++i) {
          const nk::Group gr = nk::make_group(pass, r, i);
          for (std::uint32_t warp = 0; warp < (tile_size >> r) / 32; ++warp)
            for (std::uint32_t j = 0; j < (1u << r); ++j) {
              std::uint32_t banks = 0;
              for (std::uint32_t lane = 0; lane < 32; ++lane)
                banks |= 1u << (nk::swizzle(nk::group_element(warp * 32 + lane, gr.p, r, j), r) % 32);
              EXPECT_EQ(banks, 0xffffffffu) << "2^" << log_n << " pass " << p << " group " << i << " r " << r;
            }
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
