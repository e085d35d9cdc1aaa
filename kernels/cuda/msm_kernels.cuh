// msm_kernels.cuh -- the per-thread bodies of the GPU MSM (driver: msm.cuh)
// and the host-side planning they share.
//
// Pipeline for sum_i k_i P_i (n points, Montgomery-form scalars):
//  1. classify (thread per point): k = 0 or P = infinity -> skipped;
//     k = 1 -> "ones" list; else "dense" list; the dense scalars' largest
//     bit length bounds the windows. Lists are compacted by a prefix sum.
//  2. ones: each thread sums a run of ones points (mixed XYZZ additions),
//     then groups of partial sums are added (no scalar multiplication).
//  3. digits (thread per dense point): canonical scalar (one Montgomery
//     multiplication by 1), signed c-bit digits d_w in [-2^(c-1), 2^(c-1))
//     (top window [0, 2^(c-1)]), written per window as key |d| - 1 (or
//     EMPTY = 2^(c-1) for d = 0) and value = point index | sign << 31.
//  4. sort each window's (key, value) pairs by key (CUB radix sort, c bits).
//  5. bucket accumulation, load-balanced whatever the digit distribution:
//     the sorted pairs of all windows form one array of W*m entries whose
//     bucket id w*(B+1) + key is non-decreasing. Thread t takes the fixed
//     segment [t*L, (t+1)*L) and sums each run of equal ids with mixed
//     additions. A run strictly inside the segment is a whole bucket: it is
//     stored directly. The first and last runs may continue in the
//     neighbouring segments: they become two records (id, partial sum) per
//     thread (a one-run segment gives (id, sum) and (id, identity)), so the
//     record array is again sorted by id and is reduced by the same code
//     with full additions, level after level, until one thread holds all
//     remaining records and stores every run. A bucket with a million
//     points (all scalars equal) is thus summed by many threads in parallel.
//     L comes from accumulate_length (GpuMsmConfig::accumulate_waves).
//     (Or, GpuMsmConfig::accumulation = kBatchAffine, by pairwise rounds
//     of affine additions: batch_affine.cuh.)
//  6. bucket reduction: per window sum_b (b+1) B_b, split into segments of
//     G buckets: a running sum from the top gives A_s = sum (b - start +
//     1) B_b and R_s = sum B_b; the window is sum_s A_s + sum_s start_s
//     R_s, and the second sum is G (V - sum_s R_s) with V = sum_s (s + 1)
//     R_s, the same reduction over the R_s (msm.cuh); groups of partial
//     sums are added level by level.
//  7. host: per window A + G (V - R), then Horner over windows (c
//     doublings each) plus the ones sum.
// With shifted bases (GpuMsmConfig::shifted_*) every window's digits index
// the table's row w and share one bucket set: steps 4-6 run once over all.
//
// Every body is __host__ __device__ with the thread index explicit:
// msm_emulation_test.cc runs them on the CPU.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/cuda/curve.cuh"
#include "kernels/cuda/msm_layout.h"

namespace zkfarm::cuda::msm_kernels {

constexpr std::uint32_t kSignBit = 0x80000000u;
constexpr std::uint32_t kIndexMask = 0x7fffffffu;

template <class T>
ZKFARM_HD T load(const T* p) {
  return *p;
}

// ---------------------------------------------------------------------------
// Host planning.

// Layout, choose_layout: msm_layout.h.

// Entries per bucket-accumulation thread: `waves` waves of `resident`
// threads, but no share under min_share entries (each thread leaves two
// records for the record levels, full additions) unless a single wave needs
// fewer; never under min_segment.
inline std::uint64_t accumulate_length(std::uint64_t total, std::uint64_t resident, std::uint64_t waves,
                                       std::uint64_t min_share, std::uint64_t min_segment) {
  auto ceil_div = [](std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; };
  const std::uint64_t length =
      std::max(ceil_div(total, resident * waves), std::min(min_share, ceil_div(total, resident)));
  return std::max(length, min_segment);
}

// Entries per accumulation thread: enough threads to fill the device
// (target_threads), never fewer than min_segment entries each.
inline std::uint64_t segment_length(std::uint64_t total, std::uint64_t target_threads, std::uint64_t min_segment) {
  return std::max<std::uint64_t>(min_segment, (total + target_threads - 1) / target_threads);
}

// ---------------------------------------------------------------------------
// Bodies.

ZKFARM_HD unsigned count_leading_zeros(std::uint32_t x) {
#if defined(__CUDA_ARCH__)
  return unsigned(__clz(x));
#else
  return x ? unsigned(__builtin_clz(x)) : 32u;
#endif
}

template <class FrDev>
ZKFARM_HD unsigned bit_length(const FrDev& k) {
  unsigned bits = 0;
  ZKFARM_DEVICE_UNROLL
  for (int j = 0; j < FrDev::kLimbs; ++j)
    if (k.limb[j]) bits = 32u * unsigned(j) + 32u - count_leading_zeros(k.limb[j]);
  return bits;
}

// Step 1 for point i: sets the flags; returns the canonical scalar's bit
// length for dense points, 0 otherwise.
template <class FrDev, class Affine>
ZKFARM_HD unsigned classify(std::uint64_t i, const Affine* bases, const FrDev* scalars, std::uint32_t* dense_flag,
                            std::uint32_t* one_flag) {
  const FrDev s = load(scalars + i);
  const bool skip = s.is_zero() || load(bases + i).is_identity();
  const bool one = !skip && s.is_one();
  const bool dense = !skip && !one;
  dense_flag[i] = dense ? 1u : 0u;
  one_flag[i] = one ? 1u : 0u;
  return dense ? bit_length(s.from_montgomery()) : 0u;
}

// Compaction: flagged i goes to out[position[i]] (position = exclusive sum).
ZKFARM_HD void scatter_flagged(std::uint64_t i, const std::uint32_t* flag, const std::uint32_t* position,
                               std::uint32_t* out) {
  if (flag[i]) out[position[i]] = std::uint32_t(i);
}

// Limb idx of an n-limb value held in registers (constant indices only).
template <int n>
ZKFARM_HD std::uint32_t limb_at(const std::uint32_t* limb, unsigned idx) {
  std::uint32_t r = 0;
  ZKFARM_DEVICE_UNROLL
  for (int j = 0; j < n; ++j) r = (idx == unsigned(j)) ? limb[j] : r;
  return r;
}

// Bits [pos, pos + c) of k (c < 32); bits past the top read as 0.
template <class FrDev>
ZKFARM_HD std::uint32_t window_value(const FrDev& k, unsigned pos, unsigned c) {
  const unsigned lo = pos / 32, shift = pos % 32;
  std::uint32_t v = limb_at<FrDev::kLimbs>(k.limb, lo) >> shift;
  if (shift + c > 32) v |= limb_at<FrDev::kLimbs>(k.limb, lo + 1) << (32 - shift);
  return v & ((1u << c) - 1);
}

// Step 3 for dense point j (of m). With shifted bases (GpuMsmConfig::
// shifted_*), window w's digit refers to row w of the table: point index
// w * row_stride + i (row_stride = the table's n; 0 without a table).
template <class FrDev>
ZKFARM_HD void make_digits(std::uint64_t j, std::uint64_t m, const std::uint32_t* dense_index, const FrDev* scalars,
                           Layout layout, std::uint32_t* keys, std::uint32_t* values, std::uint64_t row_stride = 0) {
  const std::uint32_t i = dense_index[j];
  const FrDev k = load(scalars + i).from_montgomery();
  const unsigned c = layout.window_bits;
  const std::uint32_t half = 1u << (c - 1);
  std::uint32_t carry = 0;
  for (unsigned w = 0; w < layout.windows; ++w) {
    const std::uint32_t d = window_value(k, w * c, c) + carry;
    std::uint32_t magnitude = d, sign = 0;
    carry = 0;
    if (w + 1 < layout.windows && d >= half) {
      magnitude = (1u << c) - d;  // digit d - 2^c < 0, carry 1 into the next window
      sign = kSignBit;
      carry = 1;
    }
    keys[w * m + j] = magnitude ? magnitude - 1 : layout.buckets;  // buckets == EMPTY key
    values[w * m + j] = std::uint32_t(i + w * row_stride) | sign;
  }
}

// Element sources for the segmented reduction.
template <class Pts>
struct PointSource {
  const std::uint32_t* keys;    // sorted per window
  const std::uint32_t* values;  // point index | sign
  const typename Pts::Affine* bases;
  std::uint64_t m;              // entries per window
  std::uint32_t buckets;        // B (EMPTY key)

  ZKFARM_HD std::uint32_t id(std::uint64_t pos) const {
    return std::uint32_t(pos / m) * (buckets + 1) + keys[pos];
  }
  ZKFARM_HD void accumulate(typename Pts::Xyzz& acc, std::uint64_t pos) const {
    if (keys[pos] == buckets) return;  // digit 0
    const std::uint32_t v = values[pos];
    const typename Pts::Affine p = load(bases + (v & kIndexMask));
    acc.add_affine(p.x, p.y.cneg((v & kSignBit) != 0));
  }
};

template <class Pts>
struct RecordSource {
  const std::uint32_t* ids;
  const typename Pts::Xyzz* sums;

  ZKFARM_HD std::uint32_t id(std::uint64_t pos) const { return ids[pos]; }
  ZKFARM_HD void accumulate(typename Pts::Xyzz& acc, std::uint64_t pos) const { acc.add(load(sums + pos)); }
};

// Step 5, thread t over entries [t*L, min((t+1)*L, total)) of `source`.
// Complete runs go to buckets[id] (ids of EMPTY slots, id % (B+1) == B, are
// dropped); with last_level (a single thread) every run is complete,
// otherwise the first and last runs go to records 2t and 2t+1.
template <class Pts, class Source>
ZKFARM_HD void segment_reduce(std::uint64_t t, std::uint64_t length, std::uint64_t total, const Source& source,
                              std::uint32_t buckets, bool last_level, typename Pts::Xyzz* bucket_sums,
                              std::uint32_t* record_ids, typename Pts::Xyzz* record_sums) {
  using Xyzz = typename Pts::Xyzz;
  const std::uint64_t begin = t * length;
  const std::uint64_t end = begin + length < total ? begin + length : total;
  auto store = [&](std::uint32_t id, const Xyzz& sum) {
    if (id % (buckets + 1) != buckets) bucket_sums[id] = sum;
  };
  std::uint32_t current = source.id(begin);
  Xyzz acc = Xyzz::identity();
  bool first_run = true;
  for (std::uint64_t pos = begin; pos < end; ++pos) {
    const std::uint32_t id = source.id(pos);
    if (id != current) {
      if (first_run && !last_level) {
        record_ids[2 * t] = current;
        record_sums[2 * t] = acc;
      } else {
        store(current, acc);
      }
      first_run = false;
      current = id;
      acc = Xyzz::identity();
    }
    source.accumulate(acc, pos);
  }
  if (last_level) {
    store(current, acc);
  } else if (first_run) {
    record_ids[2 * t] = current;
    record_sums[2 * t] = acc;
    record_ids[2 * t + 1] = current;
    record_sums[2 * t + 1] = Xyzz::identity();
  } else {
    record_ids[2 * t + 1] = current;
    record_sums[2 * t + 1] = acc;
  }
}

// Step 6, in two kernels (each holding a single inlined point addition, so
// that nvcc's optimizer sees one copy of the Fq2 arithmetic per kernel: with
// four copies in one kernel, BLS12-381 G2's took 325 s to compile). With S =
// buckets >> segment_log segments per window, the window's 2S outputs are
// [share of segment 0 .. S-1 without its offset, offset term of segment
// 0 .. S-1], so that summing them (reduce_group) gives sum_b (b+1) B_b.
//
// bucket_segment, thread t = (window, segment) with 2^segment_log buckets
// per segment from start: a running sum from the top gives
// acc = sum (b - start + 1) B_b and running = sum B_b, kept in
// out[window * 2S + segment] and out[window * 2S + S + segment]. The two
// additions per bucket (running += B_b, acc += running) alternate through
// one call site, and both sums stay in that (cached) memory between steps:
// each step holds just two points in registers, like reduce_group.
// The window's buckets start at bucket_sums + window * in_stride (buckets
// + 1 for the bucket array; the second level of msm.cuh's reduction reads
// the first level's running sums in place).
template <class Pts>
ZKFARM_HD void bucket_segment(std::uint64_t t, std::uint32_t buckets, unsigned segment_log,
                              const typename Pts::Xyzz* bucket_sums, std::uint64_t in_stride,
                              typename Pts::Xyzz* out) {
  using Xyzz = typename Pts::Xyzz;
  const std::uint32_t segments = buckets >> segment_log;
  const std::uint64_t window = t / segments;
  const std::uint32_t segment = std::uint32_t(t % segments);
  const std::uint32_t start = segment << segment_log;
  const Xyzz* window_buckets = bucket_sums + window * in_stride;
  Xyzz* acc = out + window * 2 * segments + segment;
  Xyzz* running = acc + segments;
  *acc = Xyzz::identity();
  *running = Xyzz::identity();
  const std::uint32_t steps = 2u << segment_log;
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
  for (std::uint32_t i = 0; i < steps; ++i) {
    const bool second = (i & 1) != 0;
    const std::uint32_t b = start + (1u << segment_log) - 1 - (i >> 1);
    Xyzz* target = second ? acc : running;
    const Xyzz* term = second ? running : window_buckets + b;
    Xyzz sum = load(target);
    sum.add(load(term));
    *target = sum;
  }
}

// segment_scale, thread t = (window, segment) as above: replaces the
// segment's running sum by start * running (start = segment <<
// segment_log; 0 for the first segment), double-and-add from start's top
// set bit (the steps above it would only double the identity: each is a
// dependent addition, and this chain is the reduction's latency at small
// sizes) with the doublings done as additions of the sum to itself (add()
// doubles equal points with dbl()'s formula: the same result). The running
// sum is first moved to scratch[t]; the partial product lives in its slot;
// each step loads the two operands, so one addition with two points in
// registers.
template <class Pts>
ZKFARM_HD void segment_scale(std::uint64_t t, std::uint32_t buckets, unsigned segment_log, typename Pts::Xyzz* out,
                             typename Pts::Xyzz* scratch) {
  using Xyzz = typename Pts::Xyzz;
  const std::uint32_t segments = buckets >> segment_log;
  const std::uint64_t window = t / segments;
  const std::uint32_t segment = std::uint32_t(t % segments);
  const std::uint32_t start = segment << segment_log;
  Xyzz* slot = out + window * 2 * segments + segments + segment;
  Xyzz* base = scratch + t;
  *base = load(slot);
  *slot = Xyzz::identity();
  int top = -1;  // start's highest set bit (-1: start is 0, the product the identity)
  for (std::uint32_t rest = start; rest != 0; rest >>= 1) ++top;
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
  for (int step = 2 * top; step >= 0; --step) {
    const bool doubling = (step & 1) != 0;  // odd steps double, even steps add the base if the bit is set
    if (!doubling && ((start >> (step >> 1)) & 1) == 0) continue;
    const Xyzz* term = doubling ? slot : base;
    Xyzz sum = load(slot);
    sum.add(load(term));
    *slot = sum;
  }
}

// out[i] = sum of in[i*group, min((i+1)*group, count)).
template <class Xyzz>
ZKFARM_HD void reduce_group(std::uint64_t i, std::uint64_t group, std::uint64_t count, const Xyzz* in, Xyzz* out) {
  Xyzz acc = Xyzz::identity();
  const std::uint64_t end = (i + 1) * group < count ? (i + 1) * group : count;
  for (std::uint64_t j = i * group; j < end; ++j) acc.add(load(in + j));
  out[i] = acc;
}

// Step 2: thread t sums the ones points [t*L, min((t+1)*L, count)).
template <class Pts>
ZKFARM_HD void sum_ones(std::uint64_t t, std::uint64_t length, std::uint64_t count, const std::uint32_t* ones_index,
                        const typename Pts::Affine* bases, typename Pts::Xyzz* out) {
  typename Pts::Xyzz acc = Pts::Xyzz::identity();
  const std::uint64_t end = (t + 1) * length < count ? (t + 1) * length : count;
  for (std::uint64_t j = t * length; j < end; ++j) {
    const typename Pts::Affine p = load(bases + ones_index[j]);
    acc.add_affine(p.x, p.y);
  }
  out[t] = acc;
}

// ---------------------------------------------------------------------------
// Kernels: one thread per index, bodies above.

#if defined(__CUDACC__)

constexpr unsigned kLightThreads = 256;  // index and digit kernels
constexpr unsigned kPointThreads = 128;  // kernels doing curve arithmetic

template <class FrDev, class Affine>
__global__ void __launch_bounds__(kLightThreads)
    classify_kernel(std::uint64_t n, const Affine* bases, const FrDev* scalars, std::uint32_t* dense_flag,
                    std::uint32_t* one_flag, std::uint32_t* max_bits) {
  const std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned bits = 0;
  if (i < n) bits = classify(i, bases, scalars, dense_flag, one_flag);
  // One atomic per warp: 2^24 atomics on one address would serialize.
  bits = __reduce_max_sync(0xffffffffu, bits);
  if ((threadIdx.x & 31) == 0 && bits) atomicMax(max_bits, bits);
}

// static: one private copy per translation unit (each msm_*.cu registers
// its own kernels; a non-template __global__ in a header would otherwise be
// defined in every object).
static __global__ void __launch_bounds__(kLightThreads)
    scatter_kernel(std::uint64_t n, const std::uint32_t* flag, const std::uint32_t* position, std::uint32_t* out) {
  const std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) scatter_flagged(i, flag, position, out);
}

// msm_device_split: dense point j (of m) copied, base and scalar.
template <class FrDev, class Affine>
__global__ void __launch_bounds__(kLightThreads)
    gather_dense_kernel(std::uint64_t m, const std::uint32_t* dense_index, const Affine* bases, const FrDev* scalars,
                        Affine* out_bases, FrDev* out_scalars) {
  const std::uint64_t j = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < m) {
    const std::uint32_t i = dense_index[j];
    out_bases[j] = bases[i];
    out_scalars[j] = scalars[i];
  }
}

template <class FrDev>
__global__ void __launch_bounds__(kLightThreads)
    digits_kernel(std::uint64_t m, const std::uint32_t* dense_index, const FrDev* scalars, Layout layout,
                  std::uint32_t* keys, std::uint32_t* values, std::uint64_t row_stride) {
  const std::uint64_t j = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < m) make_digits(j, m, dense_index, scalars, layout, keys, values, row_stride);
}

// kMinBlocks > 1 caps registers so that many 128-thread blocks fit per SM
// (GpuMsmConfig::accumulate_min_blocks): more warps to hide the carry
// chains' latency, against spills.
template <class Pts, class Source, int kMinBlocks = 1>
__global__ void __launch_bounds__(kPointThreads, kMinBlocks)
    segment_reduce_kernel(std::uint64_t threads, std::uint64_t length, std::uint64_t total, Source source,
                          std::uint32_t buckets, bool last_level, typename Pts::Xyzz* bucket_sums,
                          std::uint32_t* record_ids, typename Pts::Xyzz* record_sums) {
  const std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < threads)
    segment_reduce<Pts>(t, length, total, source, buckets, last_level, bucket_sums, record_ids, record_sums);
}

template <class Pts>
__global__ void __launch_bounds__(kPointThreads)
    bucket_segment_kernel(std::uint64_t threads, std::uint32_t buckets, unsigned segment_log,
                          const typename Pts::Xyzz* bucket_sums, std::uint64_t in_stride, typename Pts::Xyzz* out) {
  const std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < threads) bucket_segment<Pts>(t, buckets, segment_log, bucket_sums, in_stride, out);
}

template <class Pts>
__global__ void __launch_bounds__(kPointThreads)
    segment_scale_kernel(std::uint64_t threads, std::uint32_t buckets, unsigned segment_log,
                         typename Pts::Xyzz* out, typename Pts::Xyzz* scratch) {
  const std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < threads) segment_scale<Pts>(t, buckets, segment_log, out, scratch);
}

template <class Xyzz>
__global__ void __launch_bounds__(kPointThreads)
    reduce_group_kernel(std::uint64_t outputs, std::uint64_t group, std::uint64_t count, const Xyzz* in, Xyzz* out) {
  const std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < outputs) reduce_group(i, group, count, in, out);
}

template <class Pts>
__global__ void __launch_bounds__(kPointThreads)
    sum_ones_kernel(std::uint64_t threads, std::uint64_t length, std::uint64_t count, const std::uint32_t* ones_index,
                    const typename Pts::Affine* bases, typename Pts::Xyzz* out) {
  const std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < threads) sum_ones<Pts>(t, length, count, ones_index, bases, out);
}

// Host launchers of the curve-arithmetic kernels (the heavy ones to
// compile: each instantiation runs the field arithmetic of a whole point
// addition through nvcc's optimizer and ptxas). The driver (msm.cuh) calls
// these; their definitions are in msm_launch.cuh and each is explicitly
// instantiated in a .cu file of its own (ZKFARM_INSTANTIATE_GPU_MSM_PART),
// so one curve and group compiles as several translation units in parallel.
// A launch() enqueues the kernel on `stream` with `blocks` blocks of
// kPointThreads threads and throws CudaError if the launch failed.
template <class Pts, class Source, int kMinBlocks>
struct SegmentReduceLaunch {
  // 128-thread blocks of this kernel resident per SM (registers decide),
  // on the current device.
  static unsigned blocks_per_sm();
  static void launch(unsigned blocks, cudaStream_t stream, std::uint64_t threads, std::uint64_t length,
                     std::uint64_t total, const Source& source, std::uint32_t buckets, bool last_level,
                     typename Pts::Xyzz* bucket_sums, std::uint32_t* record_ids, typename Pts::Xyzz* record_sums);
};

template <class Pts>
struct BucketSegmentLaunch {
  static void launch(unsigned blocks, cudaStream_t stream, std::uint64_t threads, std::uint32_t buckets,
                     unsigned segment_log, const typename Pts::Xyzz* bucket_sums, std::uint64_t in_stride,
                     typename Pts::Xyzz* out);
};

template <class Pts>
struct SegmentScaleLaunch {
  static void launch(unsigned blocks, cudaStream_t stream, std::uint64_t threads, std::uint32_t buckets,
                     unsigned segment_log, typename Pts::Xyzz* out, typename Pts::Xyzz* scratch);
};

template <class Xyzz>
struct ReduceGroupLaunch {
  static void launch(unsigned blocks, cudaStream_t stream, std::uint64_t outputs, std::uint64_t group,
                     std::uint64_t count, const Xyzz* in, Xyzz* out);
};

template <class Pts>
struct SumOnesLaunch {
  static void launch(unsigned blocks, cudaStream_t stream, std::uint64_t threads, std::uint64_t length,
                     std::uint64_t count, const std::uint32_t* ones_index, const typename Pts::Affine* bases,
                     typename Pts::Xyzz* out);
};

// The point types of one base field and degree (1: G1 over Fq, 2: G2 over
// Fq2), as the driver instantiates the kernels with.
template <class FqParams, int kDegree>
using PointsOf = PointTypes<std::conditional_t<kDegree == 1, DevFp<FqParams>, DevFq2<DevFp<FqParams>>>>;

#endif

}  // namespace zkfarm::cuda::msm_kernels

// The parts of one curve and group (ZKFARM_GPU_MSM_PART(X, FQ, DEG, PART))
// with X = extern (declaration, msm.cuh) or empty (definition, a part .cu
// including msm_launch.cuh). PART is one of accumulate1, accumulate3,
// accumulate4 (bucket accumulation over the points, registers capped for
// 1/3/4 blocks per SM), records (the record levels), bucket_segment,
// segment_scale, reduce_group, sum_ones.
#define ZKFARM_GPU_MSM_PTS_(FQ, DEG) ::zkfarm::cuda::msm_kernels::PointsOf<FQ, DEG>
#define ZKFARM_GPU_MSM_PART_accumulate_(X, FQ, DEG, BLOCKS)                                                  \
  X template struct ::zkfarm::cuda::msm_kernels::SegmentReduceLaunch<                                       \
      ZKFARM_GPU_MSM_PTS_(FQ, DEG), ::zkfarm::cuda::msm_kernels::PointSource<ZKFARM_GPU_MSM_PTS_(FQ, DEG)>, BLOCKS>;
#define ZKFARM_GPU_MSM_PART_accumulate1(X, FQ, DEG) ZKFARM_GPU_MSM_PART_accumulate_(X, FQ, DEG, 1)
#define ZKFARM_GPU_MSM_PART_accumulate3(X, FQ, DEG) ZKFARM_GPU_MSM_PART_accumulate_(X, FQ, DEG, 3)
#define ZKFARM_GPU_MSM_PART_accumulate4(X, FQ, DEG) ZKFARM_GPU_MSM_PART_accumulate_(X, FQ, DEG, 4)
#define ZKFARM_GPU_MSM_PART_records(X, FQ, DEG)                                                              \
  X template struct ::zkfarm::cuda::msm_kernels::SegmentReduceLaunch<                                       \
      ZKFARM_GPU_MSM_PTS_(FQ, DEG), ::zkfarm::cuda::msm_kernels::RecordSource<ZKFARM_GPU_MSM_PTS_(FQ, DEG)>, 1>;
#define ZKFARM_GPU_MSM_PART_bucket_segment(X, FQ, DEG) \
  X template struct ::zkfarm::cuda::msm_kernels::BucketSegmentLaunch<ZKFARM_GPU_MSM_PTS_(FQ, DEG)>;
#define ZKFARM_GPU_MSM_PART_segment_scale(X, FQ, DEG) \
  X template struct ::zkfarm::cuda::msm_kernels::SegmentScaleLaunch<ZKFARM_GPU_MSM_PTS_(FQ, DEG)>;
#define ZKFARM_GPU_MSM_PART_reduce_group(X, FQ, DEG) \
  X template struct ::zkfarm::cuda::msm_kernels::ReduceGroupLaunch<ZKFARM_GPU_MSM_PTS_(FQ, DEG)::Xyzz>;
#define ZKFARM_GPU_MSM_PART_sum_ones(X, FQ, DEG) \
  X template struct ::zkfarm::cuda::msm_kernels::SumOnesLaunch<ZKFARM_GPU_MSM_PTS_(FQ, DEG)>;
#define ZKFARM_GPU_MSM_PART(X, FQ, DEG, PART) ZKFARM_GPU_MSM_PART_##PART(X, FQ, DEG)
