// ntt.h -- GPU number-theoretic transforms over a scalar field, bit-for-bit
// the transforms of kernels/ntt.h (natural order in and out, ffjavascript's
// roots, snarkjs's odd coset).
//
// GpuNtt<Fr> (Fr = Bn254Fr or Bls12381Fr; instantiated in ntt_bn254.cu and
// ntt_bls12_381.cu) holds the twiddle tables (17 MB on the device: lo / hi
// 1 MB, local 64 KB, mid 16 MB; built once) for one DeviceContext. Transforms run in place on device
// memory, queued on the given stream (asynchronous: the caller synchronizes),
// or on host spans (upload, transform, download, synchronous).
// Algorithm and costs: ntt_kernels.cuh. Sizes: n = 2^k, 1 <= k <= 27
// (kMaxLogN); n = 1 is the identity.
//
// Thread safety: const methods may run concurrently on different streams.
// Errors: std::invalid_argument for a bad size, CudaError / DeviceOutOfMemory
// from the runtime.
#ifndef ZKFARM_KERNELS_CUDA_NTT_H_
#define ZKFARM_KERNELS_CUDA_NTT_H_

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>

#include "kernels/cuda/device_context.h"

namespace zkfarm::cuda {

struct GpuNttConfig {
  // log2 of the elements in a shared-memory tile (one block of
  // 2^(tile_log - 3) threads of eight elements, 32 << tile_log bytes of
  // shared memory), in [8, 11]. Smaller tiles fit more blocks on an SM;
  // larger ones need fewer early-pass columns. 10 runs the narrow kernels
  // (ntt_kernels.cuh "Narrow passes": 256 threads of four elements, three
  // blocks per SM) where a pass has their shape, 11 the shaped kernels of
  // eight elements a thread. 0 = the measured default (kDefaultTileLog).
  unsigned tile_log = 0;
  // Run every pass through the generic register-pass kernel (run-time
  // shape), as before the shaped kernels (ntt_kernels.cuh "Shaped passes");
  // kept to time the two side by side (gpu_benchmark).
  bool generic_passes = false;
  // The natural-order outputs of forward and inverse through the
  // element-wise bit-reversal kernel (each thread swaps one pair) instead
  // of the tiled one (ntt_kernels.cuh bit_reverse_tiled_kernel); kept to
  // time the two side by side (gpu_benchmark).
  bool elementwise_reversal = false;

  // Throws std::invalid_argument for out-of-range values.
  void validate() const {
    if (tile_log != 0 && (tile_log < 8 || tile_log > 11))
      throw std::invalid_argument("GpuNttConfig::tile_log must be 0 or in [8, 11], got " + std::to_string(tile_log));
  }
};

template <class Fr>
class GpuNtt {
 public:
  static constexpr unsigned kMaxLogN = 27;
  // The narrow kernels (tiles of 2^10, four elements a thread): 4% faster
  // than the 2^11 shaped kernels per transform at 2^24 and 2^27, 7% on the
  // odd coset (kernels/cuda/NOTES.md, run N6).
  static constexpr unsigned kDefaultTileLog = 10;

  // Builds the tables on ctx.stream(0) and waits for them. Throws
  // std::invalid_argument for a bad config.
  explicit GpuNtt(const DeviceContext& ctx, const GpuNttConfig& config = {});

  // Coefficients -> evaluations on <w_n>, in place (ntt.h's ntt()).
  void forward(Fr* device_values, std::size_t n, cudaStream_t stream) const;
  // Evaluations -> coefficients, in place (ntt.h's intt()).
  void inverse(Fr* device_values, std::size_t n, cudaStream_t stream) const;
  // Evaluations on <w_n> -> evaluations on the odd coset w_{2n} <w_n>, in
  // place (ntt.h's evaluations_to_odd_coset()).
  void evaluations_to_odd_coset(Fr* device_values, std::size_t n, cudaStream_t stream) const;

  // Host-memory conveniences on ctx.stream(0); synchronous.
  void forward(std::span<Fr> values) const;
  void inverse(std::span<Fr> values) const;
  void evaluations_to_odd_coset(std::span<Fr> values) const;

 private:
  enum class Op { kForward, kInverse, kCoset };
  void run(Op op, Fr* device_values, std::size_t n, cudaStream_t stream) const;
  void run_host(Op op, std::span<Fr> values) const;

  const DeviceContext& ctx_;
  unsigned tile_log_;
  bool generic_passes_;
  bool elementwise_reversal_;
  DeviceBuffer<Fr> lo_, hi_, local_fwd_, local_inv_, mid_;
};

}  // namespace zkfarm::cuda

#endif  // ZKFARM_KERNELS_CUDA_NTT_H_
