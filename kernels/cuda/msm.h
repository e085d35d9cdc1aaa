// msm.h -- multi-scalar multiplication on the GPU (Pippenger), the device
// counterpart of kernels/msm.h's msm<Curve, G>() with the same result.
//
// msm_device<Curve, G>() works on bases and scalars already in device
// memory (the prover keeps proving-key points resident); msm<Curve, G>()
// uploads host spans first. G is Curve::G1 or Curve::G2; instantiated for
// both curves' G1 and G2 (msm_bn254_g1.cu ... msm_bls12_381_g2.cu hold the
// device part, msm_device_raw). Scalars are Fr in Montgomery
// form exactly as in memory on the host (and in .wtns after conversion),
// bases affine with (0, 0) = infinity (the .zkey layout).
// Zero scalars and points at infinity are skipped, scalars equal to one are
// summed without any scalar multiplication, and only the rest goes through
// Pippenger (algorithm: msm_kernels.cuh).
//
// Returns in G (Jacobian, host type). Throws std::invalid_argument for
// mismatched lengths, more than 2^31 - 1 points or a bad config;
// DeviceOutOfMemory when the working set (about 16 bytes per point and
// window plus the buckets) does not fit; CudaError on any runtime failure.
// Synchronous: returns once the result is on the host.
#ifndef ZKFARM_KERNELS_CUDA_MSM_H_
#define ZKFARM_KERNELS_CUDA_MSM_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/device_context.h"
#include "kernels/cuda/msm_layout.h"
#include "kernels/curve.h"
#include "kernels/field.h"
#include "kernels/tower.h"

namespace zkfarm::cuda {

// Tuning knobs; defaults come from the cost model in msm_kernels.cuh.
struct GpuMsmConfig {
  // Pippenger window bits c; 0 = chosen by the cost model. Forced values
  // must lie in [2, 24].
  unsigned window_bits = 0;
  // Points per accumulation thread at least, and records per thread in the
  // record levels (>= 4: each level then shrinks the records from R to at
  // most 2 * ceil(R / record_segment), so the levels end). Small values
  // only matter for tests that want many reduction levels.
  std::size_t min_segment = 8;
  std::size_t record_segment = 16;
  // Bucket reduction (step 6 of msm_kernels.cuh): the second level's
  // segments of 2^reduce_segment_log first-level sums per thread (each a
  // chain of twice that many dependent additions), and partial sums added
  // in groups of reduce_group (a power of two, 2..16) level after level.
  // At small sizes these chains are the MSM's latency (NOTES.md, run L1).
  unsigned reduce_segment_log = 3;
  unsigned reduce_group = 4;
  // G1 bucket accumulation: registers capped so that this many 128-thread
  // blocks fit per SM (3 or 4); 0 = the measured best (3 for BLS12-381,
  // 4 for BN254; NOTES.md). G2 ignores it.
  unsigned accumulate_min_blocks = 0;
  // Bucket accumulation threads: this many waves of the kernel's resident
  // blocks, each thread an equal share of the sorted digits, but no share
  // under accumulate_min_share digits unless one wave needs fewer (each
  // share leaves two records to add), and none under min_segment. Warps of
  // equal work still finish at different times; smaller shares let the SMs
  // refill sooner (NOTES.md, run W1).
  unsigned accumulate_waves = 8;
  std::size_t accumulate_min_share = 128;
  // Precomputed shifted bases (G1 or G2): when shifted_windows > 0, the bases
  // passed in are a table of shifted_windows rows of n points, row w =
  // 2^(w * shifted_window_bits) * bases (shifted_bases() below). Every
  // window's digits then go to one set of buckets: one bucket reduction
  // instead of one per window, so a larger c pays (fewer windows).
  unsigned shifted_windows = 0;
  unsigned shifted_window_bits = 0;
  // With shifted bases: the points whose scalar is 1 join the bucket
  // accumulation (digit 1 of row 0, the bases themselves) instead of being
  // summed on their own first (step 2 of msm_kernels.cuh, a chain of
  // dependent additions and a synchronization before the dense points
  // start: 0.7 ms of a G2 witness MSM's 3.4 at 2^16). Without shifted
  // bases the ones are always summed apart (their bucket would be one
  // window's, and the sets are sorted at one size).
  bool ones_in_buckets = true;

  // Throws std::invalid_argument for out-of-range values.
  void validate() const {
    if (window_bits != 0 && (window_bits < 2 || window_bits > 24))
      throw std::invalid_argument("GpuMsmConfig::window_bits must be 0 or in [2, 24], got " +
                                  std::to_string(window_bits));
    if (accumulate_min_blocks != 0 && accumulate_min_blocks != 3 && accumulate_min_blocks != 4)
      throw std::invalid_argument("GpuMsmConfig::accumulate_min_blocks must be 0, 3 or 4, got " +
                                  std::to_string(accumulate_min_blocks));
    if (accumulate_waves == 0 || accumulate_waves > msm_kernels::kMaxAccumulateWaves)
      throw std::invalid_argument("GpuMsmConfig::accumulate_waves must be in [1, 64], got " +
                                  std::to_string(accumulate_waves));
    if (min_segment == 0 || record_segment < 4)
      throw std::invalid_argument("GpuMsmConfig: min_segment must be >= 1 and record_segment >= 4");
    if (reduce_segment_log < 1 || reduce_segment_log > 8)
      throw std::invalid_argument("GpuMsmConfig::reduce_segment_log must be in [1, 8], got " +
                                  std::to_string(reduce_segment_log));
    if (reduce_group < 2 || reduce_group > 16 || (reduce_group & (reduce_group - 1)) != 0)
      throw std::invalid_argument("GpuMsmConfig::reduce_group must be 2, 4, 8 or 16, got " +
                                  std::to_string(reduce_group));
    if ((shifted_windows == 0) != (shifted_window_bits == 0) ||
        (shifted_window_bits != 0 && (shifted_window_bits < 2 || shifted_window_bits > 24)))
      throw std::invalid_argument(
          "GpuMsmConfig: shifted_windows and shifted_window_bits go together, with bits in [2, 24]");
    if (shifted_windows != 0 && window_bits != 0 && window_bits != shifted_window_bits)
      throw std::invalid_argument("GpuMsmConfig: window_bits must be 0 or the shifted bases' window bits");
  }
};

// What one call did (for logs and benchmarks).
struct GpuMsmStats {
  std::size_t points = 0;
  std::size_t dense = 0;    // through Pippenger
  std::size_t ones = 0;     // summed directly
  unsigned scalar_bits = 0; // largest dense scalar
  unsigned window_bits = 0;
  unsigned windows = 0;
  unsigned record_levels = 0;
  unsigned bucket_sets = 0;     // windows, or 1 with shifted bases
  // Device time per stage (CUDA events, recorded only when stats are
  // requested): classify + compaction, ones, digits + sort, bucket
  // accumulation, bucket reduction.
  float stage_ms[5] = {0, 0, 0, 0, 0};
};

// The device part, instantiated per base field, extension degree (1: G1,
// 2: G2 over Fq2) and scalar field in msm_*.cu, which include no curve
// headers: it returns the per-window sums and the ones sum as bytes of host
// XyzzPoint values (same layout), and msm_device() below combines them.
struct MsmRawResult {
  unsigned window_bits = 0;
  unsigned segment_log = 0;
  // Per window (bucket set), window 0 first, as the two levels of msm.cuh's
  // step 6 leave them: two XYZZ points A, R each in window_sums, one V each
  // in window_offsets; the window's sum is A + 2^segment_log (V - R).
  std::vector<std::uint8_t> window_sums;
  std::vector<std::uint8_t> window_offsets;
  std::vector<std::uint8_t> ones_sum;     // one XYZZ point, or empty
};

// Where msm_device_split() puts the dense points: called once their count
// is known (before anything is written), it returns device addresses with
// room for that many bases and scalars (it may run other work on the stream
// first, e.g. to empty a full buffer).
using DenseReserve = std::function<std::pair<void*, void*>(std::size_t dense)>;

template <class FqParams, int kDegree, class FrParams>
void msm_device_split_raw(const DeviceContext& ctx, const void* device_bases, const void* device_scalars,
                          std::size_t n, cudaStream_t stream, const DenseReserve& reserve, std::size_t* dense,
                          MsmRawResult* out);

template <class FqParams, int kDegree, class FrParams>
void msm_device_raw(const DeviceContext& ctx, const void* device_bases, const void* device_scalars, std::size_t n,
                    cudaStream_t stream, const GpuMsmConfig& config, GpuMsmStats* stats, MsmRawResult* out);

// Precomputed shifted bases: table[w * n + i] = 2^(w * window_bits) *
// bases[i] for w < windows (row 0 a copy), in device memory the caller
// owns (windows * n affine points), for GpuMsmConfig::shifted_*. G1 (kDegree
// 1) or G2 (2); about windows * window_bits affine doublings per point,
// each batch sharing an inversion.
template <class FqParams, int kDegree>
void shifted_bases_raw(const DeviceContext& ctx, const void* device_bases, std::size_t n, unsigned window_bits,
                       unsigned windows, void* device_table, cudaStream_t stream);

// The window size and count of a table for n points, as the cost model of
// msm_layout.h chooses them with one bucket set, and the table's bytes.
struct ShiftedLayout {
  unsigned window_bits = 0;
  unsigned windows = 0;
  std::size_t bytes = 0;
};
// At 2^24 points and 255 bits: c = 22, 12 windows (13 without the table, at
// c = 20); at 2^26: c = 24, 11 windows. forced_bits != 0: that c.
inline ShiftedLayout choose_shifted_layout(std::size_t n, unsigned scalar_bits, std::size_t affine_bytes,
                                           int fq_limbs, int degree, unsigned forced_bits = 0) {
  const msm_kernels::Layout layout = msm_kernels::choose_layout(
      n, scalar_bits, forced_bits, msm_kernels::sort_cost(fq_limbs, degree), 0, 0, true);
  return ShiftedLayout{layout.window_bits, layout.windows, std::size_t(layout.windows) * n * affine_bytes};
}

namespace msm_detail {

template <class F>
struct FieldShape;
template <class P>
struct FieldShape<Fp<P>> {
  using Params = P;
  static constexpr int kDegree = 1;
};
template <class Cfg>
struct FieldShape<Fq2<Cfg>> {
  using Params = typename FieldShape<typename Cfg::Fq>::Params;
  static constexpr int kDegree = 2;
};

}  // namespace msm_detail

// choose_shifted_layout() for n points of group G (G1 or G2) of Curve.
template <class Curve, class G>
ShiftedLayout shifted_layout(std::size_t n, unsigned forced_bits = 0) {
  using Field = typename G::Config::Field;
  using Shape = msm_detail::FieldShape<Field>;
  return choose_shifted_layout(n, unsigned(Curve::Fr::kBits), sizeof(typename G::Affine),
                               int(sizeof(Field) / 4 / Shape::kDegree), Shape::kDegree, forced_bits);
}

template <class Curve, class G>
G msm_device(const DeviceContext& ctx, const typename G::Affine* device_bases,
             const typename Curve::Fr* device_scalars, std::size_t n, cudaStream_t stream,
             const GpuMsmConfig& config = {}, GpuMsmStats* stats = nullptr) {
  using Cfg = typename G::Config;
  using Shape = msm_detail::FieldShape<typename Cfg::Field>;
  using FrParams = typename msm_detail::FieldShape<typename Curve::Fr>::Params;
  using HostXyzz = XyzzPoint<Cfg>;
  MsmRawResult raw;
  msm_device_raw<typename Shape::Params, Shape::kDegree, FrParams>(ctx, device_bases, device_scalars, n, stream,
                                                                    config, stats, &raw);
  auto point = [](const std::uint8_t* bytes) {
    HostXyzz p;
    std::memcpy(static_cast<void*>(&p), bytes, sizeof(p));
    return p.to_jacobian();
  };
  // Horner over windows, top first: c doublings each.
  G result = G::identity();
  const std::size_t windows = raw.window_offsets.size() / sizeof(HostXyzz);
  for (std::size_t w = windows; w-- > 0;) {
    for (unsigned d = 0; d < raw.window_bits; ++d) result = result.dbl();
    const std::uint8_t* parts = raw.window_sums.data() + w * 2 * sizeof(HostXyzz);
    G offsets = point(raw.window_offsets.data() + w * sizeof(HostXyzz)) - point(parts + sizeof(HostXyzz));
    for (unsigned d = 0; d < raw.segment_log; ++d) offsets = offsets.dbl();
    result += point(parts) + offsets;
  }
  if (!raw.ones_sum.empty()) result += point(raw.ones_sum.data());
  return result;
}

// The first part of msm_device() only: zeros and points at infinity
// skipped, the ones summed (the return value), and the other points --
// scalars neither 0 nor 1, the ones Pippenger needs -- copied in index
// order, bases and scalars, to where reserve(count) says (*dense = count).
// Their MSM is then msm_device() over those copies, which may collect the
// dense points of many calls first: streamed chunks of a sparse witness
// (msm_stream.h) pay for one Pippenger instead of one each. Synchronous.
template <class Curve, class G>
G msm_device_split(const DeviceContext& ctx, const typename G::Affine* device_bases,
                   const typename Curve::Fr* device_scalars, std::size_t n, cudaStream_t stream,
                   const DenseReserve& reserve, std::size_t* dense) {
  using Cfg = typename G::Config;
  using Shape = msm_detail::FieldShape<typename Cfg::Field>;
  using FrParams = typename msm_detail::FieldShape<typename Curve::Fr>::Params;
  MsmRawResult raw;
  msm_device_split_raw<typename Shape::Params, Shape::kDegree, FrParams>(ctx, device_bases, device_scalars, n, stream,
                                                                          reserve, dense, &raw);
  if (raw.ones_sum.empty()) return G::identity();
  XyzzPoint<Cfg> p;
  std::memcpy(static_cast<void*>(&p), raw.ones_sum.data(), sizeof(p));
  return p.to_jacobian();
}

// The shifted-bases table of G1 or G2 bases already on the device, laid out
// as shifted_layout() says (or as window_bits / windows say when given),
// and the config that makes msm_device() use it.
template <class Curve, class G>
struct ShiftedBases {
  DeviceBuffer<typename G::Affine> table;
  unsigned window_bits = 0;
  unsigned windows = 0;
  GpuMsmConfig apply(GpuMsmConfig config) const {
    config.shifted_windows = windows;
    config.shifted_window_bits = window_bits;
    return config;
  }
};

template <class Curve, class G>
ShiftedBases<Curve, G> shifted_bases(const DeviceContext& ctx, const typename G::Affine* device_bases, std::size_t n,
                                     cudaStream_t stream, unsigned window_bits = 0, unsigned windows = 0) {
  using Shape = msm_detail::FieldShape<typename G::Config::Field>;
  ShiftedBases<Curve, G> out;
  if (window_bits == 0 || windows == 0) {
    const ShiftedLayout layout = shifted_layout<Curve, G>(n, window_bits);
    window_bits = layout.window_bits;
    windows = layout.windows;
  }
  if (window_bits < 2 || window_bits > 24 || std::uint64_t(windows) * n >= (std::uint64_t(1) << 31))
    throw std::invalid_argument("shifted bases: " + std::to_string(windows) + " rows of " + std::to_string(n) +
                                " points at c = " + std::to_string(window_bits) +
                                " do not fit (c in [2, 24], at most 2^31 - 1 entries)");
  out.window_bits = window_bits;
  out.windows = windows;
  out.table = DeviceBuffer<typename G::Affine>(std::size_t(windows) * n, stream);
  shifted_bases_raw<typename Shape::Params, Shape::kDegree>(ctx, device_bases, n, window_bits, windows,
                                                            out.table.data(), stream);
  return out;
}

// Uploads bases and scalars (on ctx.stream(0)) and runs msm_device.
template <class Curve, class G>
G msm(const DeviceContext& ctx, std::span<const typename G::Affine> bases,
      std::span<const typename Curve::Fr> scalars, const GpuMsmConfig& config = {},
      GpuMsmStats* stats = nullptr) {
  if (bases.size() != scalars.size())
    throw std::invalid_argument("gpu msm: " + std::to_string(bases.size()) + " bases but " +
                                std::to_string(scalars.size()) + " scalars");
  ctx.activate();
  const cudaStream_t stream = ctx.stream(0);
  DeviceBuffer<typename G::Affine> device_bases(bases.size(), stream);
  DeviceBuffer<typename Curve::Fr> device_scalars(scalars.size(), stream);
  device_bases.upload(bases.data(), bases.size(), stream);
  device_scalars.upload(scalars.data(), scalars.size(), stream);
  return msm_device<Curve, G>(ctx, device_bases.data(), device_scalars.data(), bases.size(), stream, config, stats);
}

}  // namespace zkfarm::cuda

#endif  // ZKFARM_KERNELS_CUDA_MSM_H_
