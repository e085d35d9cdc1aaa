// ntt_kernels.cuh -- the per-thread bodies of the GPU NTT (see ntt.cuh for
// the driver) and the pass plan.
//
// Algorithm: natural-order input, Gentleman-Sande (decimation in frequency)
// radix-2 stages grouped into passes, then one in-place bit-reversal pass
// that also applies any scaling (1/n for the inverse). A pass covering
// stages [j0, j0 + s) of an n = 2^k transform works on blocks of
// M = n / 2^j0 elements viewed as 2^s rows x S columns (S = M / 2^s); by
// the four-step identity, after s DIF stages row t holds
//   y[t][col] = w_M^(col * rev_s(t)) * DFT_{2^s}(column col)[rev_s(t)],
// so a pass is: load a tile of C adjacent columns (C * 32 bytes contiguous
// per row: coalesced), run a 2^s-point DIF on each column with the local
// roots w_{2^s}^m only, multiply by the twist w_M^(col * rev_s(t)) (skipped
// in the last pass, where S = 1), store back in place. Each element is read
// and written once per pass: 2^27 takes passes of 9 and 8 stages (C = 2, 4)
// and one of 10 (C = 1) on the default tiles of 2^10, plus the bit reversal
// (in 32 x 32 tiles from 2^10 up: bit_reverse_tiled_kernel). Inside a pass
// each thread holds four elements in registers (eight on tiles of 2^11)
// and runs up to two (three) stages between two shared-memory exchanges
// (see "Register groups" and "Narrow passes" below).
//
// The odd coset (evaluations -> coefficients -> coset evaluations) needs no
// bit reversal: the inverse DIF passes leave coefficient rev(i) at position
// i; the last of them multiplies it by g^rev(i) / n as it stores; then the
// transposed passes (decimation in time: each pass's transpose is its twist
// followed by its stages reversed, with (x, y) -> (x + w y, x - w y)), last
// pass first, take bit-reversed input to natural output.
//
// Twiddles: every root is a power of w = w_{2^28} (ffjavascript's Fr.w[28],
// so w_n = w^(2^(28 - k)) is exactly ntt.h's root_of_unity(k)). w^E for any
// 28-bit E is lo[E mod 2^14] * hi[E >> 14] (two 16384-entry tables, 1 MB,
// L2-resident); the inverse uses w^(2^28 - E). Twists of passes with
// M <= 2^19 are one load from the mid table (w_{2^19}^i, 16 MB): one
// multiplication instead of two. The 2^s-point DIFs read a 1024-entry table
// of w_{2^11}^m (32 KB, L1-resident) for either direction.
//
// Shared memory is struct-of-arrays (limb j of element i at [j * T + i],
// i swizzled: see swizzle()) so that a warp's 32 lanes hit 32 banks.
//
// Every function here is __host__ __device__ and takes the thread's index
// explicitly: the kernels call them between __syncthreads(), and
// ntt_emulation_test.cc runs the very same code on the CPU.
#pragma once

#include <cstdint>

#include <vector>

#include "kernels/cuda/fp.cuh"
#include "kernels/ntt.h"

namespace zkfarm::cuda::ntt_kernels {

constexpr unsigned kRootLog = 28;     // tables hold powers of w_{2^28}
constexpr unsigned kTableLog = 14;    // lo / hi tables: 2^14 entries each
constexpr unsigned kMaxLogN = 27;     // largest transform (issue: 2^10..2^27)
constexpr unsigned kLocalLog = 11;    // local table: w_{2^11}^m, m < 2^10
constexpr unsigned kTileLog = 11;     // elements per shared-memory tile (64 KB at 32 B each), at most
constexpr unsigned kMinTileLog = 8;   // smallest tile option (32 threads of eight elements)
constexpr unsigned kMaxPassStages = 9;  // early passes: <= 9 stages so C >= 4 columns (128 B rows)
constexpr unsigned kThreads = 256;    // threads per block
constexpr unsigned kMidLog = 19;      // mid table: w_{2^19}^i, i < 2^19 (16 MB)

struct Pass {
  unsigned j0 = 0;          // first stage
  unsigned s = 0;           // stages in this pass
  unsigned column_log = 0;  // C = 2^column_log adjacent columns per tile
};

struct Plan {
  unsigned log_n = 0;
  unsigned count = 0;
  Pass passes[4];
};

// Passes for n = 2^log_n (1 <= log_n <= kMaxLogN) with tiles of up to
// 2^tile_log elements (kMinTileLog <= tile_log <= kTileLog): everything in
// one tile up to 2^tile_log; otherwise a last pass of tile_log stages
// (contiguous tiles) after ceil((log_n - tile_log) / m) balanced passes of
// <= m = min(9, tile_log - 1) stages with C = 2^(tile_log - s) columns.
inline Plan make_plan(unsigned log_n, unsigned tile_log = kTileLog) {
  Plan plan;
  plan.log_n = log_n;
  if (log_n <= tile_log) {
    plan.count = 1;
    plan.passes[0] = Pass{0, log_n, 0};
    return plan;
  }
  const unsigned rest = log_n - tile_log;
  const unsigned most = tile_log - 1 < kMaxPassStages ? tile_log - 1 : kMaxPassStages;  // >= 2 columns
  const unsigned early = (rest + most - 1) / most;
  unsigned j0 = 0;
  for (unsigned p = 0; p < early; ++p) {
    const unsigned s = rest / early + (p < rest % early ? 1 : 0);
    plan.passes[plan.count++] = Pass{j0, s, tile_log - s};
    j0 += s;
  }
  plan.passes[plan.count++] = Pass{j0, tile_log, 0};
  return plan;
}

template <class F>
struct Tables {
  const F* lo = nullptr;         // w^i, i < 2^14 (w = w_{2^28})
  const F* hi = nullptr;         // w^(i * 2^14), i < 2^14
  const F* local_fwd = nullptr;  // w_{2^11}^m, m < 2^10
  const F* local_inv = nullptr;  // w_{2^11}^-m
  const F* coset_hi = nullptr;   // c * w^(i * 2^14): hi table with a constant folded in (coset scaling)
  const F* mid = nullptr;        // w_{2^19}^i, i < 2^19: twists of passes with M <= 2^19 in one load
};

// Host side: the table contents for field Fr (host types, same bytes as the
// device field): lo, hi, local_fwd, local_inv as described in Tables.
template <class Fr>
struct HostTables {
  std::vector<Fr> lo, hi, local_fwd, local_inv, mid;

  HostTables() {
    static_assert(two_adicity<Fr>() >= kRootLog, "tables need a 2^28-th root of unity");
    const std::size_t table = std::size_t(1) << kTableLog;
    const std::size_t local = std::size_t(1) << (kLocalLog - 1);
    lo.resize(table);
    hi.resize(table);
    local_fwd.resize(local);
    local_inv.resize(local);
    const Fr w = root_of_unity<Fr>(kRootLog);
    const Fr w_step = w.pow(std::uint64_t(table));
    lo[0] = hi[0] = Fr::one();
    for (std::size_t i = 1; i < table; ++i) {
      lo[i] = lo[i - 1] * w;
      hi[i] = hi[i - 1] * w_step;
    }
    mid.resize(std::size_t(1) << kMidLog);
    const Fr w_mid = root_of_unity<Fr>(kMidLog);
    mid[0] = Fr::one();
    for (std::size_t i = 1; i < mid.size(); ++i) mid[i] = mid[i - 1] * w_mid;
    const Fr w_local = root_of_unity<Fr>(kLocalLog);
    const Fr w_local_inv = w_local.inverse();
    local_fwd[0] = local_inv[0] = Fr::one();
    for (std::size_t m = 1; m < local; ++m) {
      local_fwd[m] = local_fwd[m - 1] * w_local;
      local_inv[m] = local_inv[m - 1] * w_local_inv;
    }
  }
};

template <class F>
ZKFARM_HD F load(const F* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const F*>(__builtin_assume_aligned(p, 16));
#else
  return *p;
#endif
}

// w^e for e < 2^28 (hi may carry a folded constant).
template <class F>
ZKFARM_HD F root_power(const F* lo, const F* hi, std::uint32_t e) {
  return load(lo + (e & ((1u << kTableLog) - 1))) * load(hi + (e >> kTableLog));
}

ZKFARM_HD std::uint32_t reverse_bits(std::uint32_t x, unsigned bits) {
  if (bits == 0) return 0;
#if defined(__CUDA_ARCH__)
  return __brev(x) >> (32 - bits);
#else
  std::uint32_t r = 0;
  for (unsigned i = 0; i < bits; ++i) r |= ((x >> i) & 1u) << (bits - 1 - i);
  return r;
#endif
}

// Shared-memory tile of T elements, struct-of-arrays.
template <class F>
ZKFARM_HD F tile_get(const std::uint32_t* smem, std::uint32_t tile_size, std::uint32_t i) {
  F r;
  ZKFARM_DEVICE_UNROLL
  for (int j = 0; j < F::kLimbs; ++j) r.limb[j] = smem[std::uint32_t(j) * tile_size + i];
  return r;
}
template <class F>
ZKFARM_HD void tile_put(std::uint32_t* smem, std::uint32_t tile_size, std::uint32_t i, const F& v) {
  ZKFARM_DEVICE_UNROLL
  for (int j = 0; j < F::kLimbs; ++j) smem[std::uint32_t(j) * tile_size + i] = v.limb[j];
}

template <class F>
struct PassArgs {
  F* data = nullptr;
  unsigned log_n = 0;
  Pass pass;
  bool inverse = false;
  Tables<F> tables;
  // Register passes only (ntt_group_pass_kernel): the transposed pass
  // (decimation in time: twist on load, stages in reverse order with
  // (x, y) -> (x + w y, x - w y), no twist on store), and for the last DIF
  // pass the coset scaling of the bit-reversed result (element at position
  // i times coset_hi-folded constant * g^rev(i), g = w_{2n}) when coset_hi
  // is set.
  bool dit = false;
  // Shaped passes only (ntt_shaped_pass_kernel, see "Shaped passes" below):
  // a twiddle or twist whose index varies across the lanes of a warp is
  // multiplied in even when it is 1, so that no multiplication sits behind a
  // divergent branch; only those known to be 1 for the whole warp are
  // skipped. Same results (x * 1 = x exactly: mont_mul's output is reduced).
  bool branch_free = false;

  ZKFARM_HD unsigned column_total_log() const { return log_n - pass.j0 - pass.s; }  // log2 S
  ZKFARM_HD std::uint32_t tile_size() const { return 1u << (pass.s + pass.column_log); }
  ZKFARM_HD std::uint64_t tiles() const { return (std::uint64_t(1) << log_n) >> (pass.s + pass.column_log); }
  // Global index of element e (row e >> column_log, column e & (C - 1)) of
  // tile `tile`, and that element's column within its block.
  ZKFARM_HD std::uint64_t global_index(std::uint64_t tile, std::uint32_t e, std::uint64_t* column) const {
    const unsigned s_log = column_total_log();
    const unsigned tiles_per_block_log = s_log - pass.column_log;
    const std::uint64_t block = tile >> tiles_per_block_log;
    const std::uint64_t group = tile & ((std::uint64_t(1) << tiles_per_block_log) - 1);
    const std::uint32_t row = e >> pass.column_log;
    const std::uint32_t c = e & ((1u << pass.column_log) - 1);
    *column = (group << pass.column_log) + c;
    return (block << (log_n - pass.j0)) + (std::uint64_t(row) << s_log) + *column;
  }
};

// ---------------------------------------------------------------------------
// Register groups. A pass runs with 2^R elements per thread (R = kRadixLog, fewer for tiles under 2^R elements). The pass's s
// stages run in groups of <= R consecutive stages; a thread holds the 2^R
// elements of the tile whose indices differ only in R consecutive "free" bits
// [p, p + R) that contain the group's row bits (element bit = row bit +
// column_log), so every butterfly of the group is between two of its own
// registers. Between groups the tile goes through shared memory once (write,
// barrier, read, barrier) instead of once per stage. The first group reads
// global memory straight into registers, the last writes back (with the
// twist) straight from them.

constexpr unsigned kRadixLog = 3;

struct Group {
  unsigned q0 = 0;  // first stage (within the pass)
  unsigned g = 0;   // stages in the group, 1..R
  unsigned p = 0;   // free bits [p, p + R) of the tile index
};

// log2 of the elements per thread for a tile of 2^tile_log elements.
ZKFARM_HD unsigned radix_log(unsigned tile_log) { return tile_log < kRadixLog ? tile_log : kRadixLog; }

ZKFARM_HD unsigned group_count(const Pass& pass, unsigned r) { return (pass.s + r - 1) / r; }

ZKFARM_HD Group make_group(const Pass& pass, unsigned r, unsigned i) {
  Group gr;
  gr.q0 = i * r;
  gr.g = pass.s - gr.q0 < r ? pass.s - gr.q0 : r;
  const unsigned tile_log = pass.s + pass.column_log;
  const unsigned lo = pass.s - gr.q0 - gr.g + pass.column_log;  // lowest element bit of the group
  gr.p = lo < tile_log - r ? lo : tile_log - r;
  return gr;
}

// Tile index of the thread's element j (j < 2^r): j's bits inserted at p.
ZKFARM_HD std::uint32_t group_element(std::uint32_t t, unsigned p, unsigned r, std::uint32_t j) {
  return ((t >> p) << (p + r)) | (j << p) | (t & ((1u << p) - 1));
}

// Shared-memory slot of tile element e for groups of 2^r elements a
// thread: bits 0..4 XOR bits r..r+4 (a bijection: bit i is changed only by
// the higher bit i + r). With the struct-of-arrays tile, the bank of an
// access is its slot mod 32; for every group layout of the 2^11-tile passes
// (r = 3: free bits at 0, 2, 3, 5 or 8) and of the narrow 2^10-tile passes
// (r = 2: free bits at 0, 1, 2, 3, 4, 5, 6 or 8) the 32 lanes of a warp then
// hit 32 different banks, where the plain index gives 4- to 8-way conflicts
// for the low free bits, and a shift of 3 with r = 2 two-way ones (counted
// over the layouts of make_group: ntt_emulation_test's
// SharedMemoryLayoutsAreConflictFree).
ZKFARM_HD std::uint32_t swizzle(std::uint32_t e, unsigned r) { return e ^ ((e >> r) & 31u); }

// The twist of tile element e (in column `column` of its block):
// w_M^(column * rev_s(row)), or its inverse. False when it is 1. One load
// from the mid table when M <= 2^19, else lo * hi.
template <class F>
ZKFARM_HD bool twist_factor(const PassArgs<F>& a, std::uint32_t e, std::uint64_t column, F* out) {
  if (a.column_total_log() == 0) return false;
  if (!a.branch_free && column == 0) return false;
  const unsigned m_log = a.log_n - a.pass.j0;  // M = 2^m_log
  std::uint64_t exponent = column * reverse_bits(e >> a.pass.column_log, a.pass.s);  // < M
  if (!a.branch_free && exponent == 0) return false;
  // (2^M - 0) mod 2^M = 0: the inverse of w^0 is w^0 (branch_free only).
  if (a.inverse) exponent = ((std::uint64_t(1) << m_log) - exponent) & ((std::uint64_t(1) << m_log) - 1);
  if (m_log <= kMidLog) {
    *out = load(a.tables.mid + (exponent << (kMidLog - m_log)));
  } else {
    *out = root_power(a.tables.lo, a.tables.hi, std::uint32_t(exponent << (kRootLog - m_log)));
  }
  return true;
}

// Phase "load": the thread's elements of its first group (group 0, or the
// last group for a transposed pass) from global memory, times the twist for
// a transposed pass.
template <unsigned R, class F>
ZKFARM_HD void group_load(const PassArgs<F>& a, std::uint64_t tile, std::uint32_t t, F* r) {
  const Group gr = make_group(a.pass, R, a.dit ? group_count(a.pass, R) - 1 : 0);
  ZKFARM_DEVICE_UNROLL
  for (std::uint32_t j = 0; j < (1u << R); ++j) {
    const std::uint32_t e = group_element(t, gr.p, R, j);
    std::uint64_t column;
    r[j] = load(a.data + a.global_index(tile, e, &column));
    F w;
    if (a.dit && twist_factor(a, e, column, &w)) r[j] = r[j] * w;
  }
}

// Butterflies of stage q between registers j and j + 2^K (bit K of j clear).
template <unsigned R, unsigned K, class F>
ZKFARM_HD void group_stage_bit(const PassArgs<F>& a, unsigned q, std::uint32_t t, unsigned p, F* r) {
  const unsigned h_log = a.pass.s - q - 1;
  const std::uint32_t m_mask = (1u << h_log) - 1;
  const F* local = a.inverse ? a.tables.local_inv : a.tables.local_fwd;
  // branch_free: m's bits that come from the thread index (the same for the
  // warp only by chance); when there are none, m == 0 is warp-uniform (and
  // a compile-time fact in the shaped kernels) and the product is skipped.
  const unsigned tile_log = a.pass.s + a.pass.column_log;
  const std::uint32_t m_from_thread =
      (group_element((1u << (tile_log - R)) - 1, p, R, 0) >> a.pass.column_log) & m_mask;
  ZKFARM_DEVICE_UNROLL
  for (std::uint32_t j = 0; j < (1u << R); ++j) {
    if (j & (1u << K)) continue;
    const std::uint32_t row = group_element(t, p, R, j) >> a.pass.column_log;
    const std::uint32_t m = row & m_mask;
    const bool twiddle = a.branch_free && m_from_thread != 0 ? true : m != 0;
    const F x = r[j];
    F y = r[j | (1u << K)];
    if (a.dit) {
      if (twiddle) y = y * load(local + (m << (kLocalLog - a.pass.s + q)));
      r[j] = x + y;
      r[j | (1u << K)] = x - y;
    } else {
      r[j] = x + y;
      F d = x - y;
      if (twiddle) d = d * load(local + (m << (kLocalLog - a.pass.s + q)));
      r[j | (1u << K)] = d;
    }
  }
}

template <unsigned R, class F>
ZKFARM_HD void group_stage(const PassArgs<F>& a, const Group& gr, unsigned q, std::uint32_t t, F* r) {
  const unsigned k = a.pass.s - q - 1 + a.pass.column_log - gr.p;  // the stage's bit among the free bits
  if (k == 0) group_stage_bit<R, 0>(a, q, t, gr.p, r);
  if constexpr (R > 1) {
    if (k == 1) group_stage_bit<R, (R > 1 ? 1 : 0)>(a, q, t, gr.p, r);
  }
  if constexpr (R > 2) {
    if (k == 2) group_stage_bit<R, (R > 2 ? 2 : 0)>(a, q, t, gr.p, r);
  }
}

// Phase "compute": the stages of group i, in registers (in reverse order
// for a transposed pass).
template <unsigned R, class F>
ZKFARM_HD void group_stages(const PassArgs<F>& a, unsigned i, std::uint32_t t, F* r) {
  const Group gr = make_group(a.pass, R, i);
  // Unrolled only where the group's size is a compile-time constant (the
  // shaped kernels); #pragma unroll leaves a run-time count alone.
  if (a.dit) {
    ZKFARM_DEVICE_UNROLL
    for (unsigned d = 0; d < gr.g; ++d) group_stage<R>(a, gr, gr.q0 + gr.g - 1 - d, t, r);
  } else {
    ZKFARM_DEVICE_UNROLL
    for (unsigned d = 0; d < gr.g; ++d) group_stage<R>(a, gr, gr.q0 + d, t, r);
  }
}

// Phase "exchange", first half: group i's elements into shared memory.
template <unsigned R, class F>
ZKFARM_HD void group_put(const PassArgs<F>& a, unsigned i, std::uint32_t t, const F* r, std::uint32_t* smem) {
  const Group gr = make_group(a.pass, R, i);
  ZKFARM_DEVICE_UNROLL
  for (std::uint32_t j = 0; j < (1u << R); ++j)
    tile_put(smem, a.tile_size(), swizzle(group_element(t, gr.p, R, j), R), r[j]);
}

// Second half (after a barrier): group i's elements from shared memory.
template <unsigned R, class F>
ZKFARM_HD void group_get(const PassArgs<F>& a, unsigned i, std::uint32_t t, F* r, const std::uint32_t* smem) {
  const Group gr = make_group(a.pass, R, i);
  ZKFARM_DEVICE_UNROLL
  for (std::uint32_t j = 0; j < (1u << R); ++j)
    r[j] = tile_get<F>(smem, a.tile_size(), swizzle(group_element(t, gr.p, R, j), R));
}

// Phase "store": the thread's elements of its last group (the last group,
// or group 0 for a transposed pass) back to global memory, times the twist
// (DIF) or the coset scaling (last DIF pass with coset_hi set).
template <unsigned R, class F>
ZKFARM_HD void group_store(const PassArgs<F>& a, std::uint64_t tile, std::uint32_t t, const F* r) {
  const Group gr = make_group(a.pass, R, a.dit ? 0 : group_count(a.pass, R) - 1);
  ZKFARM_DEVICE_UNROLL
  for (std::uint32_t j = 0; j < (1u << R); ++j) {
    const std::uint32_t e = group_element(t, gr.p, R, j);
    std::uint64_t column;
    const std::uint64_t g = a.global_index(tile, e, &column);
    F v = r[j];
    F w;
    if (!a.dit && twist_factor(a, e, column, &w)) v = v * w;
    if (!a.dit && a.tables.coset_hi != nullptr && a.column_total_log() == 0) {
      // g^i = w_{2^28}^(i << (27 - log_n)), i = rev(g).
      const std::uint32_t i = reverse_bits(std::uint32_t(g), a.log_n);
      v = v * root_power(a.tables.lo, a.tables.coset_hi, i << (kRootLog - 1 - a.log_n));
    }
    a.data[g] = v;
  }
}

// ---------------------------------------------------------------------------
// Shaped passes. The passes of the large transforms have few shapes (tiles
// of 2^11: s stages with 2^(11 - s) columns, s in 5..9, and the last pass of
// 11 stages); ntt_shaped_pass_kernel<S, DIT> is the register pass with s,
// the column count and the direction as compile-time constants: every group
// layout, stage bit and register index folds away, the stage loops unroll
// into straight-line code in which the independent products of a stage can
// interleave, and it runs branch_free (PassArgs). The generic kernel keeps
// every other shape (and every shape with GpuNttConfig::generic_passes).

constexpr unsigned kShapedTileLog = 11;
constexpr unsigned kShapedMinStages = 5;
constexpr unsigned kShapedMaxStages = 9;  // early passes; the last has kShapedTileLog

// True when `pass` has a shaped kernel.
ZKFARM_HD bool shaped(const Pass& pass) {
  if (pass.s + pass.column_log != kShapedTileLog) return false;
  return pass.s == kShapedTileLog || (pass.s >= kShapedMinStages && pass.s <= kShapedMaxStages);
}

// Narrow passes: the same shaped pass on tiles of 2^10 with four elements
// a thread (R = 2: groups of two stages, one more shared-memory exchange per
// pass) instead of eight, so that a thread needs ~70-80 registers instead of
// ~120 and three blocks of 256 threads fit an SM instead of two: six warps
// per scheduler to hide the carry chains' latency instead of four (run N5
// in NOTES.md: the 2^11 passes issue in under 40% of cycles, latency-bound).
// They are GpuNtt's default (GpuNttConfig::tile_log 10; 11 runs the 2^11
// shaped kernels): 4% faster per transform, 7% on the odd coset (run N6).
constexpr unsigned kNarrowTileLog = 10;
constexpr unsigned kNarrowRadixLog = 2;
constexpr unsigned kNarrowBlocksPerSm = 3;

// True when `pass` has a narrow kernel (early passes of 5..9 stages, the
// last of 10).
ZKFARM_HD bool narrow_shaped(const Pass& pass) {
  if (pass.s + pass.column_log != kNarrowTileLog) return false;
  return pass.s == kNarrowTileLog || (pass.s >= kShapedMinStages && pass.s <= kShapedMaxStages);
}

// The arguments as the shaped (TileLog 11) or narrow (10) kernel for S
// stages and direction DIT sees them (equal to `a` for such a pass, with
// the constants visible to the compiler), branch_free set.
template <unsigned S, bool DIT, unsigned TileLog = kShapedTileLog, class F>
ZKFARM_HD PassArgs<F> shaped_args(PassArgs<F> a) {
  a.pass.s = S;
  a.pass.column_log = TileLog - S;
  a.dit = DIT;
  a.branch_free = true;
  return a;
}

enum class Scale : int { kNone = 0, kConstant = 1 };

template <class F>
struct BitReverseArgs {
  F* data = nullptr;
  unsigned log_n = 0;
  Scale scale = Scale::kNone;
  F constant;      // kConstant: every element times this
};

// Element pair (i, rev(i)) for i <= rev(i): swap, applying the scale of the
// destination index.
template <class F>
ZKFARM_HD void bit_reverse(const BitReverseArgs<F>& a, std::uint64_t i) {
  const std::uint64_t j = reverse_bits(std::uint32_t(i), a.log_n);
  if (i > j) return;
  const F x = load(a.data + i);
  if (i == j) {
    a.data[i] = a.scale == Scale::kNone ? x : x * a.constant;
    return;
  }
  const F y = load(a.data + j);
  if (a.scale == Scale::kNone) {
    a.data[i] = y;
    a.data[j] = x;
  } else {
    a.data[i] = y * a.constant;
    a.data[j] = x * a.constant;
  }
}

// The bit reversal in tiles, for log_n >= 2 * kReverseEdgeLog. An index is
// (h, m, l): its top and bottom kReverseEdgeLog (5) bits and the middle
// bits; rev(h, m, l) = (rev(l), rev(m), rev(h)). Block m (one per middle
// value, those with m > rev(m) idle) loads the 32 x 32 tile of middle m
// (row h: 32 adjacent elements, 1 KB, coalesced) and, unless m = rev(m),
// the tile of rev(m), into shared memory; then writes each tile's elements
// to the other's positions, again in rows of 32 adjacent elements: the
// element at (r, m', c) is the tile's (h = rev(c), l = rev(r)). The
// element-wise reversal (bit_reverse above, a pair per thread) reads one of
// each pair 2^(log_n - 1) apart, a 32-byte access in another DRAM page, and
// kept the DRAM ~40% busy (ncu: 6.2 ms at 2^27 on the H200, run N6 in
// NOTES.md); the tiles take ~1.6 ms at 2^27 on the H100 (run N7).
// Shared memory: two tiles, limb-major with rows padded to 33 words, so a
// warp's 32 lanes hit 32 banks both when a row goes in and when a
// bit-reversed column comes out.
constexpr unsigned kReverseEdgeLog = 5;
constexpr unsigned kReversePitch = 33;

template <class F>
constexpr std::size_t bit_reverse_tiled_smem() {
  return 2 * std::size_t(F::kLimbs) * 32 * kReversePitch * sizeof(std::uint32_t);
}

// Block m's part of the tiled bit reversal, as thread t of `threads` (a
// multiple of 32, at most 1024) sees it: middles m and rev(m), how many
// tiles (1 when m = rev(m); idle when m > rev(m): block rev(m) does both),
// and the thread's lane and warp. A tile's row r and column c are elements
// (r, middle, c) of the index.
struct ReverseBlock {
  static constexpr std::uint32_t kTileWords = 32 * kReversePitch;  // one limb of a tile
  std::uint32_t m, m_rev, lane, warp, warps;
  unsigned top_shift;
  int tiles;

  ZKFARM_HD ReverseBlock(unsigned log_n, std::uint32_t block, std::uint32_t t, std::uint32_t threads)
      : m(block),
        m_rev(reverse_bits(block, log_n - 2 * kReverseEdgeLog)),
        lane(t & 31),
        warp(t >> 5),
        warps(threads >> 5),
        top_shift(log_n - kReverseEdgeLog),
        tiles(m == m_rev ? 1 : 2) {}
  ZKFARM_HD bool idle() const { return m > m_rev; }
  ZKFARM_HD std::uint64_t index(std::uint32_t row, std::uint32_t middle, std::uint32_t column) const {
    return (std::uint64_t(row) << top_shift) | (std::uint64_t(middle) << kReverseEdgeLog) | column;
  }
};

// Phase "load": the tiles of middles m and, unless m = rev(m), rev(m) into
// shared memory, a row (32 adjacent elements) per warp at a time.
template <class F>
ZKFARM_HD void reverse_tiles_load(const BitReverseArgs<F>& a, std::uint32_t m, std::uint32_t t,
                                  std::uint32_t threads, std::uint32_t* smem) {
  const ReverseBlock b(a.log_n, m, t, threads);
  if (b.idle()) return;
  for (int k = 0; k < b.tiles; ++k) {
    std::uint32_t* tile = smem + std::uint32_t(k) * F::kLimbs * ReverseBlock::kTileWords;
    const std::uint32_t middle = k == 0 ? b.m : b.m_rev;
    for (std::uint32_t h = b.warp; h < 32; h += b.warps) {
      const F v = load(a.data + b.index(h, middle, b.lane));
      ZKFARM_DEVICE_UNROLL
      for (int j = 0; j < F::kLimbs; ++j)
        tile[std::uint32_t(j) * ReverseBlock::kTileWords + h * kReversePitch + b.lane] = v.limb[j];
    }
  }
}

// Phase "store" (after a barrier): each tile's elements to the other's
// positions (to its own for m = rev(m)), times the scale: the element at
// (r, middle', c) is the tile's (h = rev(c), l = rev(r)).
template <class F>
ZKFARM_HD void reverse_tiles_store(const BitReverseArgs<F>& a, std::uint32_t m, std::uint32_t t,
                                   std::uint32_t threads, const std::uint32_t* smem) {
  const ReverseBlock b(a.log_n, m, t, threads);
  if (b.idle()) return;
  const std::uint32_t column = reverse_bits(b.lane, kReverseEdgeLog) * kReversePitch;  // h = rev(c)
  for (int k = 0; k < b.tiles; ++k) {
    const std::uint32_t* tile = smem + std::uint32_t(k) * F::kLimbs * ReverseBlock::kTileWords;
    const std::uint32_t destination = k + 1 == b.tiles ? b.m : b.m_rev;  // rev(m) for tile m, m for tile rev(m)
    for (std::uint32_t r = b.warp; r < 32; r += b.warps) {
      const std::uint32_t l = reverse_bits(r, kReverseEdgeLog);
      F v;
      ZKFARM_DEVICE_UNROLL
      for (int j = 0; j < F::kLimbs; ++j) v.limb[j] = tile[std::uint32_t(j) * ReverseBlock::kTileWords + column + l];
      if (a.scale == Scale::kConstant) v = v * a.constant;
      a.data[b.index(r, destination, b.lane)] = v;
    }
  }
}

#if defined(__CUDACC__)

// One tile per block, 2^(tile_log - R) threads (<= 256); two blocks per SM
// (126 registers for R = 3, no spills; 64 KB of shared memory each).
template <unsigned R, class F>
__global__ void __launch_bounds__(kThreads, 2) ntt_group_pass_kernel(PassArgs<F> args) {
  extern __shared__ std::uint32_t ntt_tile[];
  const std::uint64_t tile = blockIdx.x;
  const std::uint32_t t = threadIdx.x;
  F r[1u << R];
  group_load<R>(args, tile, t, r);
  const unsigned groups = group_count(args.pass, R);
  for (unsigned step = 0; step < groups; ++step) {
    const unsigned i = args.dit ? groups - 1 - step : step;
    if (step > 0) {
      group_put<R>(args, args.dit ? i + 1 : i - 1, t, r, ntt_tile);
      __syncthreads();
      group_get<R>(args, i, t, r, ntt_tile);
      __syncthreads();
    }
    group_stages<R>(args, i, t, r);
  }
  group_store<R>(args, tile, t, r);
}

// The register pass with a compile-time shape (see "Shaped passes"): one
// tile of 2^TileLog elements per block, 2^(TileLog - R) threads.
template <unsigned S, bool DIT, unsigned TileLog, unsigned R, class F>
__device__ __forceinline__ void shaped_pass(const PassArgs<F>& runtime_args) {
  constexpr unsigned groups = (S + R - 1) / R;
  const PassArgs<F> args = shaped_args<S, DIT, TileLog>(runtime_args);
  extern __shared__ std::uint32_t ntt_tile[];
  const std::uint64_t tile = blockIdx.x;
  const std::uint32_t t = threadIdx.x;
  F r[1u << R];
  group_load<R>(args, tile, t, r);
  ZKFARM_DEVICE_UNROLL
  for (unsigned step = 0; step < groups; ++step) {
    const unsigned i = DIT ? groups - 1 - step : step;
    if (step > 0) {
      group_put<R>(args, DIT ? i + 1 : i - 1, t, r, ntt_tile);
      __syncthreads();
      group_get<R>(args, i, t, r, ntt_tile);
      __syncthreads();
    }
    group_stages<R>(args, i, t, r);
  }
  group_store<R>(args, tile, t, r);
}

// Tiles of 2^11, eight elements a thread: 256 threads, 64 KB of shared
// memory, two blocks per SM. The caller launches it only for a pass with
// pass.s == S, a tile of 2^11 and args.dit == DIT.
template <unsigned S, bool DIT, class F>
__global__ void __launch_bounds__(kThreads, 2) ntt_shaped_pass_kernel(PassArgs<F> runtime_args) {
  shaped_pass<S, DIT, kShapedTileLog, kRadixLog>(runtime_args);
}

// Tiles of 2^10, four elements a thread (see "Narrow passes"): 256 threads,
// 32 KB of shared memory, three blocks per SM.
template <unsigned S, bool DIT, class F>
__global__ void __launch_bounds__(kThreads, kNarrowBlocksPerSm) ntt_narrow_pass_kernel(PassArgs<F> runtime_args) {
  shaped_pass<S, DIT, kNarrowTileLog, kNarrowRadixLog>(runtime_args);
}

template <class F>
__global__ void __launch_bounds__(kThreads) bit_reverse_kernel(BitReverseArgs<F> args) {
  const std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < (std::uint64_t(1) << args.log_n)) bit_reverse(args, i);
}

// The tiled bit reversal (see reverse_tiles_load): one block per middle
// value, kThreads threads, bit_reverse_tiled_smem<F>() bytes of shared memory.
template <class F>
__global__ void __launch_bounds__(kThreads) bit_reverse_tiled_kernel(BitReverseArgs<F> args) {
  extern __shared__ std::uint32_t reverse_tiles[];
  reverse_tiles_load(args, blockIdx.x, threadIdx.x, blockDim.x, reverse_tiles);
  __syncthreads();
  reverse_tiles_store(args, blockIdx.x, threadIdx.x, blockDim.x, reverse_tiles);
}

#endif

}  // namespace zkfarm::cuda::ntt_kernels
