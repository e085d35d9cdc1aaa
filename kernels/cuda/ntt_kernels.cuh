// ntt_kernels.cuh -- the per-thread bodies of the GPU NTT (see ntt.cuh for
// the driver) and the pass plan.
//
// Algorithm: natural-order input, Gentleman-Sande (decimation in frequency)
// radix-2 stages grouped into passes, then one in-place bit-reversal pass
// that also applies any scaling (1/n for the inverse, g^i/n for the coset
// shift). A pass covering stages [j0, j0 + s) of an n = 2^k transform works
// on blocks of M = n / 2^j0 elements viewed as 2^s rows x S columns
// (S = M / 2^s); by the four-step identity, after s DIF stages row t holds
//   y[t][col] = w_M^(col * rev_s(t)) * DFT_{2^s}(column col)[rev_s(t)],
// so a pass is: load a tile of C adjacent columns (C * 32 bytes contiguous
// per row: coalesced) into shared memory, run a 2^s-point DIF on each column
// with the local roots w_{2^s}^m only, multiply by the twist
// w_M^(col * rev_s(t)) (skipped in the last pass, where S = 1), store back in
// place. Each element is read and written once per pass: 2^27 takes two
// passes of 8 stages (C = 8) and one of 11 (C = 1) plus the bit reversal.
//
// Twiddles: every root is a power of w = w_{2^28} (ffjavascript's Fr.w[28],
// so w_n = w^(2^(28 - k)) is exactly ntt.h's root_of_unity(k)). w^E for any
// 28-bit E is lo[E mod 2^14] * hi[E >> 14] (two 16384-entry tables, 1 MB,
// L2-resident); the inverse uses w^(2^28 - E). The 2^s-point DIFs read a
// 1024-entry table of w_{2^11}^m (32 KB, L1-resident) for either direction.
//
// Shared memory is struct-of-arrays (limb j of element i at [j * T + i]) so
// that a warp touching 32 consecutive elements hits 32 different banks.
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
constexpr unsigned kTileLog = 11;     // elements per shared-memory tile (64 KB at 32 B each)
constexpr unsigned kMaxPassStages = 9;  // early passes: <= 9 stages so C >= 4 columns (128 B rows)
constexpr unsigned kThreads = 256;    // threads per block

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

// Passes for n = 2^log_n (1 <= log_n <= kMaxLogN): everything in one tile
// up to 2^11; otherwise a last pass of 11 stages (contiguous tiles) after
// ceil((log_n - 11) / 9) balanced passes of <= 9 stages with
// C = 2^(11 - s) columns.
inline Plan make_plan(unsigned log_n) {
  Plan plan;
  plan.log_n = log_n;
  if (log_n <= kTileLog) {
    plan.count = 1;
    plan.passes[0] = Pass{0, log_n, 0};
    return plan;
  }
  const unsigned rest = log_n - kTileLog;
  const unsigned early = (rest + kMaxPassStages - 1) / kMaxPassStages;
  unsigned j0 = 0;
  for (unsigned p = 0; p < early; ++p) {
    const unsigned s = rest / early + (p < rest % early ? 1 : 0);
    plan.passes[plan.count++] = Pass{j0, s, kTileLog - s};
    j0 += s;
  }
  plan.passes[plan.count++] = Pass{j0, kTileLog, 0};
  return plan;
}

template <class F>
struct Tables {
  const F* lo = nullptr;         // w^i, i < 2^14 (w = w_{2^28})
  const F* hi = nullptr;         // w^(i * 2^14), i < 2^14
  const F* local_fwd = nullptr;  // w_{2^11}^m, m < 2^10
  const F* local_inv = nullptr;  // w_{2^11}^-m
  const F* coset_hi = nullptr;   // c * w^(i * 2^14): hi table with a constant folded in (coset scaling)
};

// Host side: the table contents for field Fr (host types, same bytes as the
// device field): lo, hi, local_fwd, local_inv as described in Tables.
template <class Fr>
struct HostTables {
  std::vector<Fr> lo, hi, local_fwd, local_inv;

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

// Phase 1: element e of the tile from global memory into shared memory.
template <class F>
ZKFARM_HD void pass_load(const PassArgs<F>& a, std::uint64_t tile, std::uint32_t e, std::uint32_t* smem) {
  std::uint64_t column;
  const std::uint64_t g = a.global_index(tile, e, &column);
  tile_put(smem, a.tile_size(), e, load(a.data + g));
}

// Phase 2, stage q of the pass: butterfly b of the T/2 in the tile. Rows
// t and t + h (h = 2^(s-q-1)) of one column: (x, y) -> (x + y, (x - y) w^m)
// with w = w_{2^(s-q)} and m = t mod h.
template <class F>
ZKFARM_HD void pass_butterfly(const PassArgs<F>& a, unsigned q, std::uint32_t b, std::uint32_t* smem) {
  const unsigned column_log = a.pass.column_log;
  const unsigned h_log = a.pass.s - q - 1;
  const std::uint32_t c = b & ((1u << column_log) - 1);
  const std::uint32_t pair = b >> column_log;
  const std::uint32_t m = pair & ((1u << h_log) - 1);
  const std::uint32_t row = ((pair >> h_log) << (h_log + 1)) + m;
  const std::uint32_t i0 = (row << column_log) + c;
  const std::uint32_t i1 = i0 + (1u << (h_log + column_log));
  const std::uint32_t tile_size = a.tile_size();
  const F x = tile_get<F>(smem, tile_size, i0);
  const F y = tile_get<F>(smem, tile_size, i1);
  tile_put(smem, tile_size, i0, x + y);
  F d = x - y;
  if (m != 0) {
    const F* local = a.inverse ? a.tables.local_inv : a.tables.local_fwd;
    d = d * load(local + (m << (kLocalLog - a.pass.s + q)));
  }
  tile_put(smem, tile_size, i1, d);
}

// Phase 3: element e back to global memory, times the twist
// w_M^(column * rev_s(row)) unless this is the last pass (S = 1).
template <class F>
ZKFARM_HD void pass_store(const PassArgs<F>& a, std::uint64_t tile, std::uint32_t e, const std::uint32_t* smem) {
  std::uint64_t column;
  const std::uint64_t g = a.global_index(tile, e, &column);
  F v = tile_get<F>(smem, a.tile_size(), e);
  if (a.column_total_log() > 0 && column != 0) {
    const std::uint32_t row = e >> a.pass.column_log;
    // w_M = w_{2^28}^(2^(28 - log_n + j0)); column * rev < 2^(log_n - j0).
    std::uint32_t exponent =
        std::uint32_t((column * reverse_bits(row, a.pass.s)) << (kRootLog - a.log_n + a.pass.j0));
    if (a.inverse) exponent = ((1u << kRootLog) - exponent) & ((1u << kRootLog) - 1);
    if (exponent != 0) v = v * root_power(a.tables.lo, a.tables.hi, exponent);
  }
  a.data[g] = v;
}

enum class Scale : int { kNone = 0, kConstant = 1, kCoset = 2 };

template <class F>
struct BitReverseArgs {
  F* data = nullptr;
  unsigned log_n = 0;
  Scale scale = Scale::kNone;
  F constant;      // kConstant: every element times this
  Tables<F> tables;  // kCoset: element i times coset_hi-folded constant * g^i, g = w_{2n}
};

template <class F>
ZKFARM_HD F scale_factor(const BitReverseArgs<F>& a, std::uint64_t i) {
  // g = w_{2n} = w_{2^28}^(2^(27 - log_n)), so g^i = w^(i << (27 - log_n)).
  if (a.scale == Scale::kConstant) return a.constant;
  return root_power(a.tables.lo, a.tables.coset_hi, std::uint32_t(i << (kRootLog - 1 - a.log_n)));
}

// Element pair (i, rev(i)) for i <= rev(i): swap, applying the scale of the
// destination index.
template <class F>
ZKFARM_HD void bit_reverse(const BitReverseArgs<F>& a, std::uint64_t i) {
  const std::uint64_t j = reverse_bits(std::uint32_t(i), a.log_n);
  if (i > j) return;
  const F x = load(a.data + i);
  if (i == j) {
    a.data[i] = a.scale == Scale::kNone ? x : x * scale_factor(a, i);
    return;
  }
  const F y = load(a.data + j);
  if (a.scale == Scale::kNone) {
    a.data[i] = y;
    a.data[j] = x;
  } else {
    a.data[i] = y * scale_factor(a, i);
    a.data[j] = x * scale_factor(a, j);
  }
}

#if defined(__CUDACC__)

template <class F>
__global__ void __launch_bounds__(kThreads) ntt_pass_kernel(PassArgs<F> args) {
  extern __shared__ std::uint32_t ntt_tile[];
  const std::uint64_t tile = blockIdx.x;
  const std::uint32_t tile_size = args.tile_size();
  for (std::uint32_t e = threadIdx.x; e < tile_size; e += blockDim.x) pass_load(args, tile, e, ntt_tile);
  __syncthreads();
  for (unsigned q = 0; q < args.pass.s; ++q) {
    for (std::uint32_t b = threadIdx.x; b < tile_size / 2; b += blockDim.x) pass_butterfly(args, q, b, ntt_tile);
    __syncthreads();
  }
  for (std::uint32_t e = threadIdx.x; e < tile_size; e += blockDim.x) pass_store(args, tile, e, ntt_tile);
}

template <class F>
__global__ void __launch_bounds__(kThreads) bit_reverse_kernel(BitReverseArgs<F> args) {
  const std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < (std::uint64_t(1) << args.log_n)) bit_reverse(args, i);
}

#endif

}  // namespace zkfarm::cuda::ntt_kernels
