// fixed_base_launch.cuh -- definitions of the fixed-base launchers declared
// in fixed_base.cuh, for the part files fixed_base_<curve>_<group>_<part>.cu
// (one kernel instantiation per translation unit, so they compile in
// parallel; the kernels and launch configurations are those of
// fixed_base.cuh). Only the part files include this header.
#pragma once

#include "kernels/cuda/fixed_base.cuh"

namespace zkfarm::cuda::fixed_base_kernels {

template <class Pts>
void TableLaunch<Pts>::launch(unsigned blocks, cudaStream_t stream, std::uint64_t count, unsigned entries_log,
                              const typename Pts::Affine* window_bases, typename Pts::Xyzz* out) {
  ZKFARM_CUDA_LAUNCH(table_kernel<Pts><<<blocks, kThreads, 0, stream>>>(count, entries_log, window_bases, out));
}

template <class Pts, class FrDev>
void AccumulateLaunch<Pts, FrDev>::launch(unsigned blocks, cudaStream_t stream, std::uint64_t n, const FrDev* scalars,
                                          const typename Pts::Affine* table, unsigned windows, unsigned window_bits,
                                          typename Pts::Xyzz* out) {
  ZKFARM_CUDA_LAUNCH(accumulate_kernel<Pts, FrDev><<<blocks, kThreads, 0, stream>>>(n, scalars, table, windows,
                                                                                    window_bits, out));
}

template <class Pts>
void ToAffineLaunch<Pts>::launch(unsigned blocks, cudaStream_t stream, std::uint64_t n, std::uint64_t threads,
                                 const typename Pts::Xyzz* in, typename Pts::Field* prefix,
                                 typename Pts::Affine* out) {
  ZKFARM_CUDA_LAUNCH(to_affine_kernel<Pts><<<blocks, kThreads, 0, stream>>>(n, threads, in, prefix, out));
}

}  // namespace zkfarm::cuda::fixed_base_kernels

// The definition of one part, e.g. in fixed_base_bls12_381_g2_table.cu:
//   ZKFARM_INSTANTIATE_GPU_FIXED_BASE_PART(zkfarm::Bls12381FqParams, 2, zkfarm::Bls12381FrParams, table)
#define ZKFARM_INSTANTIATE_GPU_FIXED_BASE_PART(FQ_PARAMS, DEGREE, FR_PARAMS, PART) \
  ZKFARM_GPU_FIXED_BASE_PART(, FQ_PARAMS, DEGREE, FR_PARAMS, PART)
