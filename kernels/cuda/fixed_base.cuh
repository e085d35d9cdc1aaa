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

// Host launchers of the three kernels (blocks of kThreads threads on
// `stream`; CudaError if the launch failed). The drivers below call only
// these; each is explicitly instantiated in a .cu of its own
// (fixed_base_launch.cuh, ZKFARM_INSTANTIATE_GPU_FIXED_BASE_PART) and
// declared extern by ZKFARM_INSTANTIATE_GPU_FIXED_BASE, so the curve
// arithmetic of one curve and group compiles as three translation units in
// parallel (both groups of BLS12-381 in one file took 194 s of one core).
template <class Pts>
struct TableLaunch {
  static void launch(unsigned blocks, cudaStream_t stream, std::uint64_t count, unsigned entries_log,
                     const typename Pts::Affine* window_bases, typename Pts::Xyzz* out);
};

template <class Pts, class FrDev>
struct AccumulateLaunch {
  static void launch(unsigned blocks, cudaStream_t stream, std::uint64_t n, const FrDev* scalars,
                     const typename Pts::Affine* table, unsigned windows, unsigned window_bits,
                     typename Pts::Xyzz* out);
};

template <class Pts>
struct ToAffineLaunch {
  static void launch(unsigned blocks, cudaStream_t stream, std::uint64_t n, std::uint64_t threads,
                     const typename Pts::Xyzz* in, typename Pts::Field* prefix, typename Pts::Affine* out);
};

template <class Pts>
void to_affine(const typename Pts::Xyzz* in, std::uint64_t n, unsigned points_per_thread,
               typename Pts::Affine* out, cudaStream_t stream) {
  const std::uint64_t threads = (n + points_per_thread - 1) / points_per_thread;
  DeviceBuffer<typename Pts::Field> prefix(n, stream);
  ToAffineLaunch<Pts>::launch(blocks_for(threads), stream, n, threads, in, prefix.data(), out);
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
  fk::TableLaunch<Pts>::launch(fk::blocks_for(count), stream, count, entries_log, bases.data(), xyzz.data());
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
    fk::AccumulateLaunch<Pts, FrDev>::launch(fk::blocks_for(m), stream, m, scalars + offset, table, windows,
                                             window_bits, xyzz.data());
    fk::to_affine<Pts>(xyzz.data(), m, config.points_per_thread, out + offset, stream);
  }
}

#endif  // __CUDACC__

}  // namespace zkfarm::cuda

// Explicit instantiation for one base field, degree and scalar field, e.g.
//   ZKFARM_INSTANTIATE_GPU_FIXED_BASE(zkfarm::Bn254FqParams, 1, zkfarm::Bn254FrParams)
// The parts (ZKFARM_GPU_FIXED_BASE_PART(X, FQ, DEG, FR, PART), PART one of
// table, accumulate, to_affine) with X = extern (declaration, here) or empty
// (definition, a part .cu including fixed_base_launch.cuh).
#define ZKFARM_GPU_FIXED_BASE_PTS_(FQ, DEG) ::zkfarm::cuda::fixed_base_detail::PointsOf<FQ, DEG>
#define ZKFARM_GPU_FIXED_BASE_PART_table(X, FQ, DEG, FR) \
  X template struct ::zkfarm::cuda::fixed_base_kernels::TableLaunch<ZKFARM_GPU_FIXED_BASE_PTS_(FQ, DEG)>;
#define ZKFARM_GPU_FIXED_BASE_PART_accumulate(X, FQ, DEG, FR)                   \
  X template struct ::zkfarm::cuda::fixed_base_kernels::AccumulateLaunch<     \
      ZKFARM_GPU_FIXED_BASE_PTS_(FQ, DEG), ::zkfarm::cuda::DevFp<FR>>;
#define ZKFARM_GPU_FIXED_BASE_PART_to_affine(X, FQ, DEG, FR) \
  X template struct ::zkfarm::cuda::fixed_base_kernels::ToAffineLaunch<ZKFARM_GPU_FIXED_BASE_PTS_(FQ, DEG)>;
#define ZKFARM_GPU_FIXED_BASE_PART(X, FQ, DEG, FR, PART) ZKFARM_GPU_FIXED_BASE_PART_##PART(X, FQ, DEG, FR)

#define ZKFARM_INSTANTIATE_GPU_FIXED_BASE(FQ_PARAMS, DEGREE, FR_PARAMS)                                        \
  ZKFARM_GPU_FIXED_BASE_PART(extern, FQ_PARAMS, DEGREE, FR_PARAMS, table)                                    \
  ZKFARM_GPU_FIXED_BASE_PART(extern, FQ_PARAMS, DEGREE, FR_PARAMS, accumulate)                               \
  ZKFARM_GPU_FIXED_BASE_PART(extern, FQ_PARAMS, DEGREE, FR_PARAMS, to_affine)                                \
  template void zkfarm::cuda::fixed_base_table_raw<FQ_PARAMS, DEGREE, FR_PARAMS>(                            \
      const zkfarm::cuda::DeviceContext&, const void*, unsigned, unsigned, void*, cudaStream_t);               \
  template void zkfarm::cuda::fixed_base_mul_raw<FQ_PARAMS, DEGREE, FR_PARAMS>(                              \
      const zkfarm::cuda::DeviceContext&, const void*, unsigned, unsigned, const void*, std::size_t, void*,   \
      cudaStream_t, const zkfarm::cuda::GpuFixedBaseConfig&);
