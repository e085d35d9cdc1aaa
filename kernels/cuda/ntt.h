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

#include "kernels/cuda/device_context.h"

namespace zkfarm::cuda {

template <class Fr>
class GpuNtt {
 public:
  static constexpr unsigned kMaxLogN = 27;

  // Builds the tables on ctx.stream(0) and waits for them.
  explicit GpuNtt(const DeviceContext& ctx);

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
  DeviceBuffer<Fr> lo_, hi_, local_fwd_, local_inv_, mid_;
};

}  // namespace zkfarm::cuda

#endif  // ZKFARM_KERNELS_CUDA_NTT_H_
