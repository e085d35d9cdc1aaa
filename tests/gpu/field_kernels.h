// field_kernels.h -- device-side helpers for the GPU tests and benchmark:
// field operations on arrays, a multiplication-throughput kernel for both
// limb layouts, and a deliberately bad launch (error-reporting test).
// Implemented in field_kernels.cu (nvcc); callable from plain C++.
#ifndef ZKFARM_TESTS_GPU_FIELD_KERNELS_H_
#define ZKFARM_TESTS_GPU_FIELD_KERNELS_H_

#include <cstddef>
#include <span>

#include "kernels/cuda/device_context.h"
#include "kernels/field.h"

namespace zkfarm::cuda::testing {

// out_*[i] = a[i] op b[i] computed by DevFp on the device (sqr of a[i]).
template <class Params>
void field_ops_on_device(const DeviceContext& ctx, std::span<const Fp<Params>> a, std::span<const Fp<Params>> b,
                         std::span<Fp<Params>> mul, std::span<Fp<Params>> sqr, std::span<Fp<Params>> add,
                         std::span<Fp<Params>> sub);

// Multiplications per second on the whole device (median of 5 timed
// launches of a kernel where each thread runs 4 independent chains of
// multiplications). limb64 = false: DevFp (32-bit limbs, PTX carry chains);
// true: DevFp64 (field64.cuh: 64-bit limbs, plain C++ CIOS).
template <class Params>
double field_mul_rate(const DeviceContext& ctx, bool limb64);

// Launches a trivial kernel with `threads` threads per block through
// ZKFARM_CUDA_LAUNCH (2048 must throw CudaError naming this file).
void launch_with_block_size(const DeviceContext& ctx, int threads);

}  // namespace zkfarm::cuda::testing

#endif  // ZKFARM_TESTS_GPU_FIELD_KERNELS_H_
