// fixed_base.h -- fixed-base scalar multiplication on the GPU: [k_i]G for
// many scalars k_i and one point G (the trusted setup's generators), results
// written as affine points in the .zkey layout (Montgomery coordinates,
// (0, 0) = infinity) straight into device memory.
//
// DeviceFixedBaseTable<Curve, G> holds, on the device, the table
//   table[w][j] = (j + 1) * 2^(c*w) * G    for j < 2^(c-1), w < W,
// (W = floor(kBits / c) + 1 windows), built on the device from the W window
// bases 2^(c*w) G that the host computes with curve.h. mul_many() then costs,
// per scalar, W mixed XYZZ additions of signed c-bit digits (one thread per
// scalar, no doublings) and a batch conversion to affine (one field
// inversion shared by all the points of a thread). Algorithm: fixed_base_kernels.cuh,
// drivers: fixed_base.cuh; the device part is instantiated per curve in
// fixed_base_bn254.cu and fixed_base_bls12_381.cu, which include no curve
// headers (only field parameters), like the MSM.
//
// Results equal kernels/msm.h's FixedBaseTable (and any other way of
// computing [k]G) byte for byte: affine coordinates are unique and the
// device field keeps canonical Montgomery values.
//
// Memory: the table (c = 16: 16 x 2^15 points, 50 MB for BLS12-381 G1, 100
// MB for its G2) plus, while mul_many runs, a scratch of ~1.25 XYZZ points
// per scalar of the current batch (GpuFixedBaseConfig::batch scalars at a
// time). Errors: std::invalid_argument for a bad config; DeviceOutOfMemory
// / CudaError from the runtime. Thread safety: const methods may run
// concurrently on different streams.
#ifndef ZKFARM_KERNELS_CUDA_FIXED_BASE_H_
#define ZKFARM_KERNELS_CUDA_FIXED_BASE_H_

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/device_context.h"
#include "kernels/cuda/msm.h"
#include "kernels/curve.h"

namespace zkfarm::cuda {

// Tuning knobs of the fixed-base multiplication.
struct GpuFixedBaseConfig {
  // Window bits c in [4, 20]. 16 gives 16 windows (16 additions per scalar)
  // and a 2^15-entry table per window, built in about a millisecond.
  unsigned window_bits = 16;
  // Scalars per batch (bounds the scratch memory: ~240 MB per 2^20 scalars
  // for BLS12-381 G1, twice that for G2).
  std::size_t batch = std::size_t(1) << 22;
  // Points per thread in the affine conversion (one inversion each): 64
  // makes the inversion (~570 multiplications for BLS12-381 Fq) ~9 per point.
  unsigned points_per_thread = 64;

  // Throws std::invalid_argument for out-of-range values.
  void validate() const {
    if (window_bits < 4 || window_bits > 20)
      throw std::invalid_argument("GpuFixedBaseConfig::window_bits must be in [4, 20], got " +
                                  std::to_string(window_bits));
    if (batch == 0 || points_per_thread == 0)
      throw std::invalid_argument("GpuFixedBaseConfig: batch and points_per_thread must be positive");
  }
};

// The device parts (fixed_base.cuh), instantiated per base field, extension
// degree (1: G1, 2: G2) and scalar field. Pointers are device memory except
// host_window_bases (W affine points on the host).
//   fixed_base_table_raw: device_table[w * 2^(c-1) + j] = (j+1) * window_base[w].
//   fixed_base_mul_raw: device_out[i] = [scalar_i] G, affine, for i < n.
template <class FqParams, int kDegree, class FrParams>
void fixed_base_table_raw(const DeviceContext& ctx, const void* host_window_bases, unsigned windows,
                          unsigned window_bits, void* device_table, cudaStream_t stream);
template <class FqParams, int kDegree, class FrParams>
void fixed_base_mul_raw(const DeviceContext& ctx, const void* device_table, unsigned windows, unsigned window_bits,
                        const void* device_scalars, std::size_t n, void* device_out, cudaStream_t stream,
                        const GpuFixedBaseConfig& config);

template <class Curve, class G>
class DeviceFixedBaseTable {
 public:
  using Affine = typename G::Affine;
  using Fr = typename Curve::Fr;

  // Builds the table of `base` on `stream` (asynchronous; the table is ready
  // for work queued later on the same stream). base may be the identity.
  DeviceFixedBaseTable(const DeviceContext& ctx, const Affine& base, cudaStream_t stream,
                       const GpuFixedBaseConfig& config = {})
      : ctx_(ctx), config_(config) {
    config_.validate();
    ctx.activate();
    windows_ = unsigned(Fr::kBits / config_.window_bits + 1);
    const std::size_t entries = std::size_t(1) << (config_.window_bits - 1);
    // 2^(c*w) * base for every window, on the host (W*c doublings).
    std::vector<G> window_base(windows_);
    G p = G::from_affine(base);
    for (unsigned w = 0; w < windows_; ++w) {
      window_base[w] = p;
      for (unsigned d = 0; d < config_.window_bits; ++d) p = p.dbl();
    }
    host_bases_.resize(windows_);
    G::batch_to_affine(window_base, host_bases_);
    table_ = DeviceBuffer<Affine>(std::size_t(windows_) * entries, stream);
    fixed_base_table_raw<Params, kDegree, FrParams>(ctx_, host_bases_.data(), windows_, config_.window_bits,
                                                    table_.data(), stream);
  }

  unsigned windows() const { return windows_; }
  unsigned window_bits() const { return config_.window_bits; }
  std::size_t device_bytes() const { return table_.bytes(); }

  // device_out[i] = [device_scalars[i]] base for i < n, affine (identity =
  // (0, 0)), queued on `stream`; returns after queuing (the scratch memory is
  // stream-ordered). Scalars are Fr in Montgomery form, as in host memory.
  void mul_many(const Fr* device_scalars, std::size_t n, Affine* device_out, cudaStream_t stream) const {
    fixed_base_mul_raw<Params, kDegree, FrParams>(ctx_, table_.data(), windows_, config_.window_bits,
                                                  device_scalars, n, device_out, stream, config_);
  }

 private:
  using Shape = msm_detail::FieldShape<typename G::Config::Field>;
  using Params = typename Shape::Params;
  static constexpr int kDegree = Shape::kDegree;
  using FrParams = typename msm_detail::FieldShape<Fr>::Params;

  const DeviceContext& ctx_;
  GpuFixedBaseConfig config_;
  unsigned windows_ = 0;
  std::vector<Affine> host_bases_;  // kept alive: the upload in the constructor is asynchronous
  DeviceBuffer<Affine> table_;
};

}  // namespace zkfarm::cuda

#endif  // ZKFARM_KERNELS_CUDA_FIXED_BASE_H_
