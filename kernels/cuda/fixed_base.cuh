// fixed_base.cuh -- fixed_base_table_raw() and fixed_base_mul_raw()
// (fixed_base.h): the kernels over the bodies of fixed_base_kernels.cuh and
// their host drivers, on one stream. Included by one .cu file per curve,
// which instantiates them with ZKFARM_INSTANTIATE_GPU_FIXED_BASE.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cuda/fixed_base.h"
#include "kernels/cuda/fixed_base_kernels.cuh"

namespace zkfarm::cuda {

namespace fixed_base_kernels {

#if defined(__CUDACC__)

template <class Pts>
__global__ void __launch_bounds__(kThreads)
    table_kernel(std::uint64_t count, unsigned entries_log, const typename Pts::Affine* window_bases,
                 typename Pts::Xyzz* out) {
  const std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) out[i] = table_entry<Pts>(i, entries_log, window_bases);
}

template <class Pts, class FrDev>
__global__ void __launch_bounds__(kThreads)
    accumulate_kernel(std::uint64_t n, const FrDev* scalars, const typename Pts::Affine* table, unsigned windows,
                      unsigned window_bits, typename Pts::Xyzz* out) {
  const std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fixed_base_point<Pts>(scalars[i], table, windows, window_bits);
}

template <class Pts>
__global__ void __launch_bounds__(kThreads)
    to_affine_kernel(std::uint64_t n, std::uint64_t threads, const typename Pts::Xyzz* in,
                     typename Pts::Field* prefix, typename Pts::Affine* out) {
  const std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < threads) to_affine_run<Pts>(t, threads, n, in, prefix, out);
}

inline unsigned blocks_for(std::uint64_t threads) {
  const std::uint64_t blocks = (threads + kThreads - 1) / kThreads;
  if (blocks > std::uint64_t(std::numeric_limits<int>::max()))
    throw std::invalid_argument("gpu fixed-base: launch of " + std::to_string(threads) + " threads is too large");
  return unsigned(blocks);
}

template <class Pts>
void to_affine(const typename Pts::Xyzz* in, std::uint64_t n, unsigned points_per_thread,
               typename Pts::Affine* out, cudaStream_t stream) {
  const std::uint64_t threads = (n + points_per_thread - 1) / points_per_thread;
  DeviceBuffer<typename Pts::Field> prefix(n, stream);
  ZKFARM_CUDA_LAUNCH(to_affine_kernel<Pts><<<blocks_for(threads), kThreads, 0, stream>>>(n, threads, in,
                                                                                          prefix.data(), out));
}

#endif  // __CUDACC__

}  // namespace fixed_base_kernels

#if defined(__CUDACC__)

namespace fixed_base_detail {
template <class FqParams, int kDegree>
using PointsOf = PointTypes<std::conditional_t<kDegree == 1, DevFp<FqParams>, DevFq2<DevFp<FqParams>>>>;
}  // namespace fixed_base_detail

template <class FqParams, int kDegree, class FrParams>
void fixed_base_table_raw(const DeviceContext& ctx, const void* host_window_bases, unsigned windows,
                          unsigned window_bits, void* device_table, cudaStream_t stream) {
  namespace fk = fixed_base_kernels;
  using Pts = fixed_base_detail::PointsOf<FqParams, kDegree>;
  using Affine = typename Pts::Affine;
  ctx.activate();
  const unsigned entries_log = window_bits - 1;
  const std::uint64_t count = std::uint64_t(windows) << entries_log;
  DeviceBuffer<Affine> bases(windows, stream);
  bases.upload(static_cast<const Affine*>(host_window_bases), windows, stream);
  DeviceBuffer<typename Pts::Xyzz> xyzz(count, stream);
  ZKFARM_CUDA_LAUNCH(fk::table_kernel<Pts><<<fk::blocks_for(count), fk::kThreads, 0, stream>>>(
      count, entries_log, bases.data(), xyzz.data()));
  fk::to_affine<Pts>(xyzz.data(), count, 16, static_cast<Affine*>(device_table), stream);
  // The host bases may go away once the caller returns: wait for the copy.
  ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
}

template <class FqParams, int kDegree, class FrParams>
void fixed_base_mul_raw(const DeviceContext& ctx, const void* device_table, unsigned windows, unsigned window_bits,
                        const void* device_scalars, std::size_t n, void* device_out, cudaStream_t stream,
                        const GpuFixedBaseConfig& config) {
  namespace fk = fixed_base_kernels;
  using Pts = fixed_base_detail::PointsOf<FqParams, kDegree>;
  using Affine = typename Pts::Affine;
  using FrDev = DevFp<FrParams>;
  config.validate();
  if (n == 0) return;
  ctx.activate();
  const auto* table = static_cast<const Affine*>(device_table);
  const auto* scalars = static_cast<const FrDev*>(device_scalars);
  auto* out = static_cast<Affine*>(device_out);
  const std::size_t batch = std::min(config.batch, n);
  DeviceBuffer<typename Pts::Xyzz> xyzz(batch, stream);
  for (std::size_t offset = 0; offset < n; offset += batch) {
    const std::size_t m = std::min(batch, n - offset);
    ZKFARM_CUDA_LAUNCH(fk::accumulate_kernel<Pts, FrDev><<<fk::blocks_for(m), fk::kThreads, 0, stream>>>(
        m, scalars + offset, table, windows, window_bits, xyzz.data()));
    fk::to_affine<Pts>(xyzz.data(), m, config.points_per_thread, out + offset, stream);
  }
}

#endif  // __CUDACC__

}  // namespace zkfarm::cuda

// Explicit instantiation for one base field, degree and scalar field, e.g.
//   ZKFARM_INSTANTIATE_GPU_FIXED_BASE(zkfarm::Bn254FqParams, 1, zkfarm::Bn254FrParams)
#define ZKFARM_INSTANTIATE_GPU_FIXED_BASE(FQ_PARAMS, DEGREE, FR_PARAMS)                                        \
  template void zkfarm::cuda::fixed_base_table_raw<FQ_PARAMS, DEGREE, FR_PARAMS>(                            \
      const zkfarm::cuda::DeviceContext&, const void*, unsigned, unsigned, void*, cudaStream_t);               \
  template void zkfarm::cuda::fixed_base_mul_raw<FQ_PARAMS, DEGREE, FR_PARAMS>(                              \
      const zkfarm::cuda::DeviceContext&, const void*, unsigned, unsigned, const void*, std::size_t, void*,   \
      cudaStream_t, const zkfarm::cuda::GpuFixedBaseConfig&);
