// batch_affine.cuh -- affine point additions and doublings that share one
// field inversion (Montgomery's trick): the doublings that build the MSM's
// precomputed shifted bases (shifted_bases_raw in msm.cuh, double_rows part).
//
// Per addition: 3 multiplications for the trick (the prefix product, and
// two on the way back), 1 for the slope, 1 squaring and 1 multiplication
// for the result, plus the batch's share of one inversion (~1.5 log2 p
// multiplications by Fermat). In SIMT a warp's lanes cannot share one
// inversion to any gain (the warp issues its ~570 multiplications whichever
// lanes are active), so each thread holds a batch of its own. Exact in
// every case: either point at infinity ((0, 0), the .zkey layout), equal
// points (doubled), opposite points and a doubled point of order two
// (infinity).
//
// (A bucket accumulation built on these additions, summing each bucket
// pairwise in rounds, measured slower than the mixed XYZZ additions at every
// size on the H200 and was removed on 2026-12-03; BENCHMARKS.md keeps its
// figures.)
//
// ZKFARM_HD bodies with explicit thread indices, as in msm_kernels.cuh:
// batch_affine_emulation_test runs them on the CPU against the host curve
// arithmetic.
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

template <class F>
__global__ void __launch_bounds__(kThreads)
    double_kernel(std::uint64_t threads, std::uint64_t n, DevAffine<F>* pts, F* scratch) {
  const std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < threads) double_strided<F>(t, threads, n, pts, scratch);
}

// Launcher of the doubling kernel, instantiated in a part file of its own
// like msm_kernels.cuh's (definition: msm_launch.cuh).
template <class F>
struct DoubleLaunch {
  static void launch(unsigned blocks, cudaStream_t stream, std::uint64_t threads, std::uint64_t n,
                     DevAffine<F>* pts, F* scratch);
};

}  // namespace batch_affine_kernels

#endif  // __CUDACC__

}  // namespace zkfarm::cuda

// The double_rows part (shifted bases, G1 and G2), for ZKFARM_GPU_MSM_PART.
#define ZKFARM_GPU_MSM_PART_double_rows(X, FQ, DEG) \
  X template struct ::zkfarm::cuda::batch_affine_kernels::DoubleLaunch<ZKFARM_GPU_MSM_PTS_(FQ, DEG)::Field>;
