// batch_affine.cuh -- affine point additions that share one field
// inversion (Montgomery's trick), and the bucket accumulation of the GPU MSM
// built on them (GpuMsmConfig::accumulation = kBatchAffine; driver:
// msm.cuh): each bucket's points summed pairwise in rounds, every round's
// additions batched so that one inversion serves a few hundred of them.
//
// Per addition: 3 multiplications for the trick (the prefix product, and
// two on the way back), 1 for the slope, 1 squaring and 1 multiplication
// for the result: 6, plus the batch's share of one inversion (~1.5 log2 p
// multiplications by Fermat), against 10 for the XYZZ mixed addition
// (curve.cuh). In SIMT a warp's lanes cannot share one inversion to any
// gain (the warp issues its ~570 multiplications whichever lanes are
// active), so each thread holds a batch of its own: `batch` pairs whose
// prefix products wait in global scratch (interleaved by thread, so a
// warp's accesses are coalesced) between the two passes. Exact in every
// case: either point at infinity ((0, 0), the .zkey layout), equal points
// (doubled), opposite points and a doubled point of order two (infinity).
//
// The rounds over all buckets of a group of windows at once: bucket b's
// points are [begin(b), end(b)) of the round's input; a round writes bucket
// b's ceil(len / 2) sums (an odd last point carried as is) to out[next[b],
// next[b + 1]), next being the exclusive scan of the halved lengths.
// ceil(log2 of the longest bucket) rounds leave at most one point per
// bucket. The first round reads the sorted digits of msm_kernels.cuh
// directly (point index | sign, gathered from the bases); later rounds read
// the previous round's output.
//
// ZKFARM_HD bodies with explicit thread indices, as in msm_kernels.cuh:
// batch_affine_emulation_test runs them on the CPU against the host curve
// arithmetic and kernels/msm.h.
#pragma once

#include <cstdint>

#include "kernels/cuda/curve.cuh"
#include "kernels/cuda/fp.cuh"
#include "kernels/cuda/msm_kernels.cuh"

namespace zkfarm::cuda {

// inverse(): fp.cuh.

namespace batch_affine_detail {

// How left + right is formed: from either point alone, from the chord's or
// the tangent's slope, or as infinity.
enum class Sum : std::uint8_t { kLeft, kRight, kChord, kTangent, kInfinity };

template <class F>
ZKFARM_HD Sum kind(const DevAffine<F>& left, const DevAffine<F>& right) {
  if (right.is_identity()) return Sum::kLeft;
  if (left.is_identity()) return Sum::kRight;
  if (left.x != right.x) return Sum::kChord;
  if (left.y == right.y && !left.y.is_zero()) return Sum::kTangent;
  return Sum::kInfinity;  // opposite points, or a point of order two doubled
}

// The slope's denominator (1 where no slope is needed).
template <class F>
ZKFARM_HD F denominator(Sum sum, const DevAffine<F>& left, const DevAffine<F>& right) {
  switch (sum) {
    case Sum::kChord: return right.x - left.x;
    case Sum::kTangent: return left.y.dbl();
    default: return F::one();
  }
}

// left + right given inv = 1 / denominator(sum, left, right).
template <class F>
ZKFARM_HD DevAffine<F> sum_with(Sum sum, const DevAffine<F>& a, const DevAffine<F>& b, const F& inv) {
  switch (sum) {
    case Sum::kLeft: return a;
    case Sum::kRight: return b;
    case Sum::kInfinity: return DevAffine<F>{F::zero(), F::zero()};
    default: break;
  }
  F numerator;
  if (sum == Sum::kChord) {
    numerator = b.y - a.y;
  } else {
    const F x2 = a.x.sqr();
    numerator = x2.dbl() + x2;
  }
  const F slope = numerator * inv;
  DevAffine<F> r;
  r.x = slope.sqr() - a.x - b.x;  // b.x == a.x for the tangent
  r.y = slope * (a.x - r.x) - a.y;
  return r;
}

}  // namespace batch_affine_detail

// out[i] = left[i * stride] + right[i * stride] for i < count, with one
// inversion for the whole batch. scratch: room for count field elements.
// out may be left or right when stride is 1 (each i is read before out[i]
// is written); with a larger stride it must not overlap them.
template <class F>
ZKFARM_HD void batch_affine_add(const DevAffine<F>* left, const DevAffine<F>* right, std::uint32_t stride,
                                DevAffine<F>* out, std::uint32_t count, F* scratch) {
  namespace bd = batch_affine_detail;
  if (count == 0) return;
  // 1. The denominators' prefix products.
  F product = F::one();
  for (std::uint32_t i = 0; i < count; ++i) {
    const DevAffine<F>& a = left[i * stride];
    const DevAffine<F>& b = right[i * stride];
    product *= bd::denominator(bd::kind(a, b), a, b);
    scratch[i] = product;
  }
  // 2. One inversion; 3. back down the batch, each denominator's inverse
  // peeled off the running one.
  F running = inverse(product);
  for (std::uint32_t i = count; i-- > 0;) {
    const DevAffine<F> a = left[i * stride], b = right[i * stride];
    const bd::Sum sum = bd::kind(a, b);
    const F d = bd::denominator(sum, a, b);
    const F inv = i > 0 ? running * scratch[i - 1] : running;
    running *= d;
    out[i] = bd::sum_with(sum, a, b, inv);
  }
}

// ---------------------------------------------------------------------------
// Bucket accumulation by rounds.

ZKFARM_HD std::uint32_t halved(std::uint32_t len) { return (len + 1) / 2; }

// The bucket that output position o belongs to: the last b with next[b] <=
// o (next non-decreasing, buckets + 1 entries, o < next[buckets]).
ZKFARM_HD std::uint32_t bucket_at(const std::uint32_t* next, std::uint32_t buckets, std::uint32_t o) {
  std::uint32_t lo = 0, hi = buckets - 1;
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo + 1) / 2;
    if (next[mid] <= o) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// Round inputs. The first round: the sorted digits of msm_kernels.cuh
// (values = point index | sign), buckets as (start, length).
template <class F>
struct SortedPoints {
  const std::uint32_t* values;
  const DevAffine<F>* bases;
  ZKFARM_HD DevAffine<F> point(std::uint32_t pos) const {
    const std::uint32_t v = values[pos];
    DevAffine<F> p = bases[v & msm_kernels::kIndexMask];  // never infinity (classify skips those)
    p.y = p.y.cneg((v & msm_kernels::kSignBit) != 0);
    return p;
  }
};
struct SortedRuns {
  const std::uint32_t* start;
  const std::uint32_t* length;
  ZKFARM_HD std::uint32_t begin(std::uint32_t b) const { return start[b]; }
  ZKFARM_HD std::uint32_t end(std::uint32_t b) const { return start[b] + length[b]; }
};
// Later rounds: the previous round's output, buckets at its scan.
template <class F>
struct ArrayPoints {
  const DevAffine<F>* points;
  ZKFARM_HD DevAffine<F> point(std::uint32_t pos) const { return points[pos]; }
};
struct ScannedRuns {
  const std::uint32_t* next;
  ZKFARM_HD std::uint32_t begin(std::uint32_t b) const { return next[b]; }
  ZKFARM_HD std::uint32_t end(std::uint32_t b) const { return next[b + 1]; }
};

// First position of keys[0, n) (sorted) holding a key >= key.
ZKFARM_HD std::uint32_t lower_bound(const std::uint32_t* keys, std::uint32_t n, std::uint32_t key) {
  std::uint32_t lo = 0, hi = n;
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Slot s of a group of windows (s = window * (buckets + 1) + key, the
// window's m sorted keys at keys + window * m): its run in the sorted
// arrays and its halved length (the first round's output count); the EMPTY
// key (digit 0) gets an empty run. Returns the run's length.
ZKFARM_HD std::uint32_t bucket_run(std::uint64_t s, const std::uint32_t* keys, std::uint32_t m, std::uint32_t buckets,
                                   std::uint32_t* start, std::uint32_t* length, std::uint32_t* halves) {
  const std::uint32_t window = std::uint32_t(s / (buckets + 1));
  const std::uint32_t key = std::uint32_t(s % (buckets + 1));
  const std::uint32_t* window_keys = keys + std::uint64_t(window) * m;
  const std::uint32_t first = key == buckets ? m : lower_bound(window_keys, m, key);
  const std::uint32_t last = key == buckets ? m : lower_bound(window_keys, m, key + 1);
  start[s] = window * m + first;
  length[s] = last - first;
  halves[s] = halved(last - first);
  return last - first;
}

// Thread t of `threads` in a round: outputs [t * batch, (t + 1) * batch)
// of next[buckets], its pairs' additions in one batch (prefix products in
// scratch[j * threads + t], j < batch).
template <class F, class Runs, class Source>
ZKFARM_HD void batch_round(std::uint64_t t, std::uint64_t threads, std::uint32_t batch, const Source& source,
                           const Runs& runs, const std::uint32_t* next, std::uint32_t buckets, DevAffine<F>* out,
                           F* scratch) {
  namespace bd = batch_affine_detail;
  const std::uint32_t total = next[buckets];
  const std::uint64_t first_out = t * batch;
  if (first_out >= total) return;
  const std::uint32_t o0 = std::uint32_t(first_out);
  const std::uint32_t o1 = total - o0 < batch ? total : o0 + batch;
  std::uint32_t b = bucket_at(next, buckets, o0);
  F product = F::one();
  std::uint32_t pairs = 0;
  for (std::uint32_t o = o0; o < o1; ++o) {
    while (next[b + 1] <= o) ++b;
    const std::uint32_t first = runs.begin(b) + 2 * (o - next[b]);
    if (first + 1 < runs.end(b)) {
      const DevAffine<F> a = source.point(first), c = source.point(first + 1);
      product *= bd::denominator(bd::kind(a, c), a, c);
      scratch[std::uint64_t(pairs++) * threads + t] = product;
    } else {
      out[o] = source.point(first);  // the odd point, carried
    }
  }
  if (pairs == 0) return;
  F running = inverse(product);
  for (std::uint32_t o = o1; o-- > o0;) {
    while (next[b] > o) --b;
    const std::uint32_t first = runs.begin(b) + 2 * (o - next[b]);
    if (first + 1 >= runs.end(b)) continue;
    const DevAffine<F> a = source.point(first), c = source.point(first + 1);
    const bd::Sum sum = bd::kind(a, c);
    const F d = bd::denominator(sum, a, c);
    --pairs;
    const F inv = pairs > 0 ? running * scratch[std::uint64_t(pairs - 1) * threads + t] : running;
    running *= d;
    out[o] = bd::sum_with(sum, a, c, inv);
  }
}

// After the rounds: slot s's single point (if any) as its XYZZ bucket sum.
template <class F, class Runs, class Source>
ZKFARM_HD void bucket_from_run(std::uint64_t s, const Runs& runs, const Source& source, DevXyzz<F>* bucket_sums) {
  const std::uint32_t b = std::uint32_t(s);
  if (runs.end(b) - runs.begin(b) == 1) bucket_sums[s] = DevXyzz<F>::from_affine(source.point(runs.begin(b)));
}

// Thread t of `threads`: points t, t + threads, ... of pts[0, n) doubled in
// place (affine, one inversion for the thread's points; prefix products in
// scratch[i]). Shifted bases for the MSM (2^c P by c of these).
template <class F>
ZKFARM_HD void double_strided(std::uint64_t t, std::uint64_t threads, std::uint64_t n, DevAffine<F>* pts,
                              F* scratch) {
  namespace bd = batch_affine_detail;
  if (t >= n) return;
  F product = F::one();
  for (std::uint64_t i = t; i < n; i += threads) {
    const DevAffine<F> p = pts[i];
    product *= bd::denominator(bd::kind(p, p), p, p);
    scratch[i] = product;
  }
  F running = inverse(product);
  const std::uint64_t last = t + (n - 1 - t) / threads * threads;
  for (std::uint64_t i = last + threads; i > t;) {
    i -= threads;
    const DevAffine<F> p = pts[i];
    const bd::Sum sum = bd::kind(p, p);
    const F d = bd::denominator(sum, p, p);
    const F inv = i >= t + threads ? running * scratch[i - threads] : running;
    running *= d;
    pts[i] = bd::sum_with(sum, p, p, inv);
  }
}

#if defined(__CUDACC__)

namespace batch_affine_kernels {

constexpr unsigned kThreads = 128;

template <class F, class Runs, class Source>
__global__ void __launch_bounds__(kThreads)
    round_kernel(std::uint64_t threads, std::uint32_t batch, Source source, Runs runs, const std::uint32_t* next,
                 std::uint32_t buckets, DevAffine<F>* out, F* scratch) {
  const std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < threads) batch_round<F>(t, threads, batch, source, runs, next, buckets, out, scratch);
}

template <class F>
__global__ void __launch_bounds__(kThreads)
    double_kernel(std::uint64_t threads, std::uint64_t n, DevAffine<F>* pts, F* scratch) {
  const std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < threads) double_strided<F>(t, threads, n, pts, scratch);
}

// The light kernels (no field arithmetic but from_affine), instantiated
// where the driver is (msm.cuh).
static __global__ void __launch_bounds__(256)
    runs_kernel(std::uint64_t slots, const std::uint32_t* keys, std::uint32_t m, std::uint32_t buckets,
                std::uint32_t* start, std::uint32_t* length, std::uint32_t* halves, std::uint32_t* longest) {
  const std::uint64_t s = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  std::uint32_t len = 0;
  if (s < slots) len = bucket_run(s, keys, m, buckets, start, length, halves);
  len = __reduce_max_sync(0xffffffffu, len);
  if ((threadIdx.x & 31) == 0 && len) atomicMax(longest, len);
}

static __global__ void __launch_bounds__(256)
    halves_kernel(std::uint64_t slots, const std::uint32_t* next, std::uint32_t* halves) {
  const std::uint64_t s = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s < slots) halves[s] = halved(next[s + 1] - next[s]);
}

template <class F, class Runs, class Source>
__global__ void __launch_bounds__(256)
    from_run_kernel(std::uint64_t slots, Runs runs, Source source, DevXyzz<F>* bucket_sums) {
  const std::uint64_t s = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s < slots) bucket_from_run<F>(s, runs, source, bucket_sums);
}

// Launchers of the two heavy kernels (an inversion and an affine addition
// each), instantiated in part files of their own like msm_kernels.cuh's
// (definitions: msm_launch.cuh).
template <class F, class Runs, class Source>
struct BatchRoundLaunch {
  static void launch(unsigned blocks, cudaStream_t stream, std::uint64_t threads, std::uint32_t batch,
                     const Source& source, const Runs& runs, const std::uint32_t* next, std::uint32_t buckets,
                     DevAffine<F>* out, F* scratch);
};

template <class F>
struct DoubleLaunch {
  static void launch(unsigned blocks, cudaStream_t stream, std::uint64_t threads, std::uint64_t n,
                     DevAffine<F>* pts, F* scratch);
};

}  // namespace batch_affine_kernels

#endif  // __CUDACC__

}  // namespace zkfarm::cuda

// Parts of the batch-affine accumulation (G1 only), for ZKFARM_GPU_MSM_PART:
// batch_sorted (the first round), batch_array (later rounds); and
// double_rows (shifted bases, G1 and G2).
#define ZKFARM_GPU_MSM_FQ_(FQ) ::zkfarm::cuda::DevFp<FQ>
#define ZKFARM_GPU_MSM_PART_batch_sorted(X, FQ, DEG)                                                  \
  X template struct ::zkfarm::cuda::batch_affine_kernels::BatchRoundLaunch<                            \
      ZKFARM_GPU_MSM_FQ_(FQ), ::zkfarm::cuda::SortedRuns, ::zkfarm::cuda::SortedPoints<ZKFARM_GPU_MSM_FQ_(FQ)>>;
#define ZKFARM_GPU_MSM_PART_batch_array(X, FQ, DEG)                                                   \
  X template struct ::zkfarm::cuda::batch_affine_kernels::BatchRoundLaunch<                            \
      ZKFARM_GPU_MSM_FQ_(FQ), ::zkfarm::cuda::ScannedRuns, ::zkfarm::cuda::ArrayPoints<ZKFARM_GPU_MSM_FQ_(FQ)>>;
#define ZKFARM_GPU_MSM_PART_double_rows(X, FQ, DEG) \
  X template struct ::zkfarm::cuda::batch_affine_kernels::DoubleLaunch<ZKFARM_GPU_MSM_PTS_(FQ, DEG)::Field>;
