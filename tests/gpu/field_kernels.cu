// field_kernels.cu -- implementation of field_kernels.h.
#include "tests/gpu/field_kernels.h"

#include <algorithm>
#include <vector>

#include "kernels/cuda/fp.cuh"
#include "tests/gpu/field64.cuh"

namespace zkfarm::cuda::testing {

namespace {

template <class Params>
__global__ void field_ops_kernel(std::size_t n, const DevFp<Params>* a, const DevFp<Params>* b, DevFp<Params>* mul,
                                 DevFp<Params>* sqr, DevFp<Params>* add, DevFp<Params>* sub) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const DevFp<Params> x = a[i], y = b[i];
  mul[i] = x * y;
  sqr[i] = x.sqr();
  add[i] = x + y;
  sub[i] = x - y;
}

constexpr int kSteps = 256;
constexpr int kChains = 4;

template <class Params>
__global__ void mul_rate32_kernel(const DevFp<Params>* seed, DevFp<Params>* out) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  DevFp<Params> acc[kChains];
  const DevFp<Params> m = seed[0];
  for (int c = 0; c < kChains; ++c) acc[c] = seed[1 + c];
  for (int s = 0; s < kSteps; ++s)
#pragma unroll
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * m;
  DevFp<Params> r = acc[0];
  for (int c = 1; c < kChains; ++c) r = r + acc[c];
  if (r.is_zero()) out[i] = r;  // keeps the work alive; never true for random seeds
}

template <class Params>
__global__ void mul_rate64_kernel(const DevFp64<Params>* seed, DevFp64<Params>* out) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  DevFp64<Params> acc[kChains];
  const DevFp64<Params> m = seed[0];
  for (int c = 0; c < kChains; ++c) acc[c] = seed[1 + c];
  for (int s = 0; s < kSteps; ++s)
#pragma unroll
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * m;
  DevFp64<Params> r = acc[0];
  for (int c = 1; c < kChains; ++c) r = r + acc[c];
  if (r.is_zero()) out[i] = r;
}

__global__ void trivial_kernel(int* out) {
  if (out) *out = 1;
}

}  // namespace

template <class Params>
void field_ops_on_device(const DeviceContext& ctx, std::span<const Fp<Params>> a, std::span<const Fp<Params>> b,
                         std::span<Fp<Params>> mul, std::span<Fp<Params>> sqr, std::span<Fp<Params>> add,
                         std::span<Fp<Params>> sub) {
  using D = DevFp<Params>;
  const std::size_t n = a.size();
  ctx.activate();
  const cudaStream_t s = ctx.stream(0);
  DeviceBuffer<D> da(n, s), db(n, s), dm(n, s), dq(n, s), dadd(n, s), dsub(n, s);
  ZKFARM_CUDA_CHECK(cudaMemcpyAsync(da.data(), a.data(), n * sizeof(D), cudaMemcpyHostToDevice, s));
  ZKFARM_CUDA_CHECK(cudaMemcpyAsync(db.data(), b.data(), n * sizeof(D), cudaMemcpyHostToDevice, s));
  ZKFARM_CUDA_LAUNCH(field_ops_kernel<Params><<<unsigned((n + 255) / 256), 256, 0, s>>>(
      n, da.data(), db.data(), dm.data(), dq.data(), dadd.data(), dsub.data()));
  ZKFARM_CUDA_CHECK(cudaMemcpyAsync(static_cast<void*>(mul.data()), dm.data(), n * sizeof(D), cudaMemcpyDeviceToHost, s));
  ZKFARM_CUDA_CHECK(cudaMemcpyAsync(static_cast<void*>(sqr.data()), dq.data(), n * sizeof(D), cudaMemcpyDeviceToHost, s));
  ZKFARM_CUDA_CHECK(cudaMemcpyAsync(static_cast<void*>(add.data()), dadd.data(), n * sizeof(D), cudaMemcpyDeviceToHost, s));
  ZKFARM_CUDA_CHECK(cudaMemcpyAsync(static_cast<void*>(sub.data()), dsub.data(), n * sizeof(D), cudaMemcpyDeviceToHost, s));
  ZKFARM_CUDA_CHECK(cudaStreamSynchronize(s));
}

template <class Params>
double field_mul_rate(const DeviceContext& ctx, bool limb64) {
  ctx.activate();
  const cudaStream_t s = ctx.stream(0);
  const unsigned threads = 256;
  const unsigned blocks = unsigned(ctx.info().multiprocessors) * 16;
  const std::size_t total = std::size_t(blocks) * threads;
  std::vector<Fp<Params>> seed(1 + kChains);
  for (int i = 0; i <= kChains; ++i) seed[i] = Fp<Params>::from_u64(0x9e3779b97f4a7c15ULL * (i + 3)).inverse();
  DeviceBuffer<Fp<Params>> dseed(seed.size(), s), dout(total, s);
  dseed.upload(seed.data(), seed.size(), s);
  Event start, stop;
  std::vector<float> ms;
  for (int rep = 0; rep < 6; ++rep) {
    start.record(s);
    if (limb64) {
      ZKFARM_CUDA_LAUNCH(mul_rate64_kernel<Params><<<blocks, threads, 0, s>>>(
          reinterpret_cast<const DevFp64<Params>*>(dseed.data()), reinterpret_cast<DevFp64<Params>*>(dout.data())));
    } else {
      ZKFARM_CUDA_LAUNCH(mul_rate32_kernel<Params><<<blocks, threads, 0, s>>>(
          reinterpret_cast<const DevFp<Params>*>(dseed.data()), reinterpret_cast<DevFp<Params>*>(dout.data())));
    }
    stop.record(s);
    stop.synchronize();
    if (rep > 0) ms.push_back(Event::elapsed_ms(start, stop));  // rep 0 is the warm-up
  }
  std::sort(ms.begin(), ms.end());
  return double(total) * kSteps * kChains / (double(ms[ms.size() / 2]) * 1e-3);
}

void launch_with_block_size(const DeviceContext& ctx, int threads) {
  ctx.activate();
  ZKFARM_CUDA_LAUNCH(trivial_kernel<<<1, threads, 0, ctx.stream(0)>>>(nullptr));
  ZKFARM_CUDA_CHECK(cudaStreamSynchronize(ctx.stream(0)));
}

#define ZKFARM_FIELD_KERNELS(P)                                                                                  \
  template void field_ops_on_device<P>(const DeviceContext&, std::span<const Fp<P>>, std::span<const Fp<P>>,   \
                                       std::span<Fp<P>>, std::span<Fp<P>>, std::span<Fp<P>>, std::span<Fp<P>>); \
  template double field_mul_rate<P>(const DeviceContext&, bool);
ZKFARM_FIELD_KERNELS(Bn254FqParams)
ZKFARM_FIELD_KERNELS(Bn254FrParams)
ZKFARM_FIELD_KERNELS(Bls12381FqParams)
ZKFARM_FIELD_KERNELS(Bls12381FrParams)

}  // namespace zkfarm::cuda::testing
