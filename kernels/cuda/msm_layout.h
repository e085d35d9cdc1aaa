// msm_layout.h -- the GPU MSM's window size and count (plain C++: the
// driver msm.cuh, the shifted-bases planning of msm.h and the emulation
// tests share one cost model).
//
// Unit: one mixed XYZZ addition. For m dense points, c-bit windows and W(c)
// = scalar_bits / c + 1 windows of B = 2^(c-1) buckets:
//   W * m * (1 + sort_cost * ceil(c / 8))   one addition per point and
//                                           window, and the radix sort
//                                           (8-bit passes)
// + kBucketWeight * W * B                   a bucket set per window
//   or kSharedBucketWeight * B              one bucket set for all windows
//                                           (precomputed shifted bases)
// Both bucket weights were measured on the H200 (kernels/cuda/NOTES.md runs
// 1-3, B1 and W1): each bucket costs two full additions in the reduction
// (1.4 mixed ones each). The one shared set has 2^(c-1) buckets at c =
// 22-24: there the reduction's marginal cost is ~3 additions per bucket,
// and an addition of the accumulation costs ~3% more with 2^23 buckets than
// with 2^21 (BN254 2^24: 36.9 ms for 11 windows at c = 24, 39.8 for 12 at
// c = 22), which the weight takes in: 4.2 picks c = 22 at 2^24 points on
// both curves (measured best) and c = 24 at 2^26.
#ifndef ZKFARM_KERNELS_CUDA_MSM_LAYOUT_H_
#define ZKFARM_KERNELS_CUDA_MSM_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <limits>

namespace zkfarm::cuda::msm_kernels {

struct Layout {
  unsigned window_bits = 0;      // c
  unsigned windows = 0;          // W = scalar_bits / c + 1
  std::uint32_t buckets = 0;     // B = 2^(c-1) per bucket set (+1 EMPTY slot in the bucket array)
  std::uint64_t bucket_slots() const { return std::uint64_t(windows) * (buckets + 1); }
};

// Smallest and largest window sizes: c >= 2 so that B >= 2; c <= 24 keeps
// digits within 32-bit keys with room to spare and bucket arrays bounded.
constexpr unsigned kMinWindowBits = 2;
constexpr unsigned kMaxWindowBits = 24;

// Most waves of the bucket-accumulation kernel (GpuMsmConfig::
// accumulate_waves): beyond it the shares are shorter than the records they
// leave cost.
constexpr unsigned kMaxAccumulateWaves = 64;

constexpr double kBucketWeight = 2.8;
constexpr double kSharedBucketWeight = 4.2;

// One element's radix-sort pass relative to one mixed addition: ~1/20 for
// BLS12-381 G1, scaling with a multiplication's cost (limbs^2; three base
// multiplications per Fq2 one).
inline double sort_cost(int fq_limbs, int degree) {
  return 7.2 / double(fq_limbs * fq_limbs) / (degree == 2 ? 3.0 : 1.0);
}

// The c minimising the model above (forced_bits != 0: that c). Bucket
// memory (bucket_bytes per slot) is capped at max_bucket_bytes unless c is
// forced. shared_buckets: one bucket set for all windows.
// Examples (sort_cost 0.05, 255-bit scalars): per-window sets, m = 2^24 ->
// c = 20 (13 windows), 2^20 -> 16, 2^10 -> 8; one shared set, 2^24 ->
// c = 22 (12 windows), 2^26 -> c = 24 (11).
inline Layout choose_layout(std::uint64_t m, unsigned scalar_bits, unsigned forced_bits, double sort_cost,
                            std::size_t bucket_bytes, std::uint64_t max_bucket_bytes, bool shared_buckets = false) {
  Layout best;
  double best_cost = std::numeric_limits<double>::infinity();
  const unsigned lo = forced_bits ? forced_bits : kMinWindowBits;
  const unsigned hi = forced_bits ? forced_bits : kMaxWindowBits;
  for (unsigned c = lo; c <= hi; ++c) {
    Layout l;
    l.window_bits = c;
    l.windows = scalar_bits / c + 1;
    l.buckets = 1u << (c - 1);
    const std::uint64_t slots = shared_buckets ? std::uint64_t(l.buckets) + 1 : l.bucket_slots();
    if (!forced_bits && slots * bucket_bytes > max_bucket_bytes) continue;
    const double reduction = shared_buckets ? kSharedBucketWeight * double(l.buckets)
                                            : kBucketWeight * double(l.windows) * double(l.buckets);
    const double cost = double(l.windows) * double(m) * (1.0 + sort_cost * double((c + 7) / 8)) + reduction;
    if (cost < best_cost) {
      best_cost = cost;
      best = l;
    }
  }
  return best;
}

}  // namespace zkfarm::cuda::msm_kernels

#endif  // ZKFARM_KERNELS_CUDA_MSM_LAYOUT_H_
