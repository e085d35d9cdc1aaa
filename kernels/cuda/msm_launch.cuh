// msm_launch.cuh -- definitions of the MSM's kernel launchers (declared in
// msm_kernels.cuh) and the macros that instantiate them, one part per .cu.
//
// Why: nvcc compiles every kernel of a translation unit in one process, and
// the point kernels of one curve and group (Fq2 arithmetic for G2) took over
// 590 s of one core (BLS12-381 G2, on the H200 host) when they all sat in
// msm_<curve>_<group>.cu. Each launcher (and so its kernel) is now
// explicitly instantiated in a .cu of its own
// (ZKFARM_INSTANTIATE_GPU_MSM_PART); the driver's .cu (msm.cuh,
// ZKFARM_INSTANTIATE_GPU_MSM) declares them `extern template` and launches
// through them, so the parts compile in parallel and link into the same
// library. The kernels and their launch configurations are exactly those of
// msm.cuh before the split; only the translation unit that holds each
// instantiation differs. (A launcher is a host function because nvcc 13's
// whole-program mode gives kernel template stubs internal linkage: a kernel
// cannot be declared extern and launched from another translation unit.)
//
// Only the part files include this header; nothing else needs the kernel
// bodies' instantiations.
#pragma once

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/batch_affine.cuh"
#include "kernels/cuda/msm_kernels.cuh"

namespace zkfarm::cuda::msm_kernels {

template <class Pts, class Source, int kMinBlocks>
void SegmentReduceLaunch<Pts, Source, kMinBlocks>::launch(unsigned blocks, cudaStream_t stream, std::uint64_t threads,
                                                          std::uint64_t length, std::uint64_t total,
                                                          const Source& source, std::uint32_t buckets,
                                                          bool last_level, typename Pts::Xyzz* bucket_sums,
                                                          std::uint32_t* record_ids,
                                                          typename Pts::Xyzz* record_sums) {
  ZKFARM_CUDA_LAUNCH(segment_reduce_kernel<Pts, Source, kMinBlocks><<<blocks, kPointThreads, 0, stream>>>(
      threads, length, total, source, buckets, last_level, bucket_sums, record_ids, record_sums));
}

template <class Pts, class Source, int kMinBlocks>
unsigned SegmentReduceLaunch<Pts, Source, kMinBlocks>::blocks_per_sm() {
  // Asked once per process (one device a process: device_context.h), not
  // on every MSM: a runtime call each proof's threads would contend for.
  static const unsigned cached = [] {
    int blocks = 0;
    ZKFARM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks, segment_reduce_kernel<Pts, Source, kMinBlocks>, int(kPointThreads), 0));
    return blocks > 0 ? unsigned(blocks) : 1u;
  }();
  return cached;
}

template <class Pts>
void BucketSegmentLaunch<Pts>::launch(unsigned blocks, cudaStream_t stream, std::uint64_t threads,
                                      std::uint32_t buckets, unsigned segment_log,
                                      const typename Pts::Xyzz* bucket_sums, std::uint64_t in_stride,
                                      typename Pts::Xyzz* out) {
  ZKFARM_CUDA_LAUNCH(bucket_segment_kernel<Pts><<<blocks, kPointThreads, 0, stream>>>(threads, buckets, segment_log,
                                                                                      bucket_sums, in_stride, out));
}

template <class Pts>
void SegmentScaleLaunch<Pts>::launch(unsigned blocks, cudaStream_t stream, std::uint64_t threads,
                                     std::uint32_t buckets, unsigned segment_log, typename Pts::Xyzz* out,
                                     typename Pts::Xyzz* scratch) {
  ZKFARM_CUDA_LAUNCH(segment_scale_kernel<Pts><<<blocks, kPointThreads, 0, stream>>>(threads, buckets, segment_log,
                                                                                     out, scratch));
}

template <class Xyzz>
void ReduceGroupLaunch<Xyzz>::launch(unsigned blocks, cudaStream_t stream, std::uint64_t outputs, std::uint64_t group,
                                     std::uint64_t count, const Xyzz* in, Xyzz* out) {
  ZKFARM_CUDA_LAUNCH(reduce_group_kernel<Xyzz><<<blocks, kPointThreads, 0, stream>>>(outputs, group, count, in, out));
}

template <class Pts>
void SumOnesLaunch<Pts>::launch(unsigned blocks, cudaStream_t stream, std::uint64_t threads, std::uint64_t length,
                                std::uint64_t count, const std::uint32_t* ones_index,
                                const typename Pts::Affine* bases, typename Pts::Xyzz* out) {
  ZKFARM_CUDA_LAUNCH(sum_ones_kernel<Pts><<<blocks, kPointThreads, 0, stream>>>(threads, length, count, ones_index,
                                                                                bases, out));
}

}  // namespace zkfarm::cuda::msm_kernels

namespace zkfarm::cuda::batch_affine_kernels {

template <class F>
void DoubleLaunch<F>::launch(unsigned blocks, cudaStream_t stream, std::uint64_t threads, std::uint64_t n,
                             DevAffine<F>* pts, F* scratch) {
  ZKFARM_CUDA_LAUNCH(double_kernel<F><<<blocks, kThreads, 0, stream>>>(threads, n, pts, scratch));
}

}  // namespace zkfarm::cuda::batch_affine_kernels

// The definition of one part, e.g. in msm_bls12_381_g2_records.cu:
//   ZKFARM_INSTANTIATE_GPU_MSM_PART(zkfarm::Bls12381FqParams, 2, records)
#define ZKFARM_INSTANTIATE_GPU_MSM_PART(FQ_PARAMS, DEGREE, PART) ZKFARM_GPU_MSM_PART(, FQ_PARAMS, DEGREE, PART)
