// groth16_kernels.cuh -- the kernels behind groth16_kernels.h; included by
// one .cu file per scalar field, which instantiates the launchers with
// ZKFARM_INSTANTIATE_GROTH16_KERNELS.
//
// SpMV: one thread per row. PCE rows are short (PoRep: A ~2.4, B 1.0, C ~2.2
// non-zeros per row on average, at most a few dozen), so a warp per row would
// idle most lanes; the cost is the witness gathers (random 32-byte reads)
// plus one multiplication per general coefficient and one for a*b.
// Field addition is exact (results fully reduced below r), so the order of
// the sums cannot change a bit of the result: the device and CPU products
// are identical whatever the thread layout.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <cub/block/block_scan.cuh>
#include <cub/device/device_select.cuh>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/fp.cuh"
#include "kernels/cuda/groth16_kernels.h"
#include "kernels/field.h"

namespace zkfarm::cuda {

namespace groth16_kernels {

constexpr unsigned kThreads = 256;

template <class F>
struct Csr {
  const std::uint64_t* row_offsets;
  const std::uint64_t* general_offsets;
  const std::uint32_t* cols;
  const F* values;
};

template <class F>
__device__ __forceinline__ F row_dot(const Csr<F>& m, std::uint32_t row, const F* __restrict__ witness) {
  const std::uint64_t begin = m.row_offsets[row], end = m.row_offsets[row + 1];
  const std::uint64_t general = m.general_offsets[row];
  const std::uint64_t unit_end = end - (m.general_offsets[row + 1] - general);
  F sum = F::zero();
  for (std::uint64_t j = begin; j < unit_end; ++j) sum += witness[m.cols[j]];
  for (std::uint64_t j = unit_end, g = general; j < end; ++j, ++g) sum += m.values[g] * witness[m.cols[j]];
  return sum;
}

template <class F>
__global__ void __launch_bounds__(kThreads)
    pce_products_kernel(Csr<F> a, Csr<F> b, Csr<F> c, bool check, std::uint32_t rows, std::uint32_t n,
                        const F* __restrict__ witness, F* out_a, F* out_b, F* out_ab,
                        std::uint32_t* first_unsatisfied) {
  const std::uint32_t row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n) return;
  if (row >= rows) {
    out_a[row] = F::zero();
    out_b[row] = F::zero();
    if (out_ab) out_ab[row] = F::zero();
    return;
  }
  const F x = row_dot(a, row, witness);
  const F y = row_dot(b, row, witness);
  const F xy = x * y;
  out_a[row] = x;
  out_b[row] = y;
  if (out_ab) out_ab[row] = xy;
  if (check && row_dot(c, row, witness) != xy) atomicMin(first_unsatisfied, row);
}

// Packed rows (launch_pce_products_packed): one block of kThreads threads
// per kPackedRowBlock rows; each matrix's row offsets come from one block
// scan of the packed counts (non-zeros in the low 32 bits, general
// coefficients in the high 32, summed at once).
template <class F>
struct PackedCsr {
  const std::uint32_t* counts;
  const std::uint64_t* block_starts;
  const std::uint32_t* cols;
  const F* values;
  const std::uint16_t* value_index;  // null: values
  const F* value_table;
};

template <class F, class Scan>
__device__ __forceinline__ F packed_row_dot(const PackedCsr<F>& m, std::uint32_t row, bool live,
                                            typename Scan::TempStorage& temp, const F* __restrict__ witness) {
  const std::uint32_t count = live ? m.counts[row] : 0u;
  const std::uint64_t mine = std::uint64_t(count & 0xffffu) | (std::uint64_t(count >> 16) << 32);
  std::uint64_t before = 0;
  Scan(temp).ExclusiveSum(mine, before);
  __syncthreads();  // temp is reused by the next matrix's scan
  F sum = F::zero();
  if (!live) return sum;
  const std::uint64_t begin = m.block_starts[2 * blockIdx.x] + (before & 0xffffffffu);
  const std::uint64_t general = m.block_starts[2 * blockIdx.x + 1] + (before >> 32);
  const std::uint64_t end = begin + (count & 0xffffu);
  const std::uint64_t unit_end = end - (count >> 16);
  for (std::uint64_t j = begin; j < unit_end; ++j) sum += witness[m.cols[j]];
  if (m.value_index)
    for (std::uint64_t j = unit_end, g = general; j < end; ++j, ++g)
      sum += m.value_table[m.value_index[g]] * witness[m.cols[j]];
  else
    for (std::uint64_t j = unit_end, g = general; j < end; ++j, ++g) sum += m.values[g] * witness[m.cols[j]];
  return sum;
}

template <class F>
__global__ void __launch_bounds__(kThreads)
    pce_products_packed_kernel(PackedCsr<F> a, PackedCsr<F> b, PackedCsr<F> c, bool check, std::uint32_t rows,
                               const F* __restrict__ witness, F* out_a, F* out_b, F* out_ab,
                               std::uint32_t* first_unsatisfied) {
  static_assert(kThreads == kPackedRowBlock, "one thread per row of a packed block");
  using Scan = cub::BlockScan<std::uint64_t, kThreads>;
  __shared__ typename Scan::TempStorage temp;
  const std::uint32_t row = blockIdx.x * blockDim.x + threadIdx.x;
  const bool live = row < rows;
  const F x = packed_row_dot<F, Scan>(a, row, live, temp, witness);
  const F y = packed_row_dot<F, Scan>(b, row, live, temp, witness);
  const F z = check ? packed_row_dot<F, Scan>(c, row, live, temp, witness) : F::zero();
  if (!live) return;
  const F xy = x * y;
  out_a[row] = x;
  out_b[row] = y;
  if (out_ab) out_ab[row] = xy;
  if (check && z != xy) atomicMin(first_unsatisfied, row);
}

template <class F>
__global__ void __launch_bounds__(kThreads) h_kernel(F* a, const F* __restrict__ b, const F* __restrict__ c,
                                                     std::uint32_t n) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = a[i] * b[i] - c[i];
}

template <class F>
__global__ void __launch_bounds__(kThreads) hadamard_kernel(const F* __restrict__ a, const F* __restrict__ b,
                                                            F* out, std::uint32_t n) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] * b[i];
}

// One 16-byte word per thread and step: consecutive threads read
// consecutive words of a point, so a warp's reads of host memory are a few
// whole points (PCIe requests of full cache lines). (A template only so
// that each field's .cu file has its own instance.)
template <class F>
__global__ void __launch_bounds__(kThreads)
    gather_kernel(const std::uint32_t* __restrict__ index, std::uint64_t count, std::uint64_t index_offset,
                  const uint4* __restrict__ bases, unsigned base_words, const uint4* __restrict__ witness,
                  uint4* __restrict__ out_bases, uint4* __restrict__ out_scalars, unsigned scalar_words) {
  const std::uint64_t words = count * (base_words + scalar_words);
  const std::uint64_t base_total = count * base_words;
  for (std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < words;
       t += std::uint64_t(gridDim.x) * blockDim.x) {
    if (t < base_total) {
      const std::uint64_t j = t / base_words, w = t - j * base_words;
      out_bases[t] = bases[(std::uint64_t(index[j]) - index_offset) * base_words + w];
    } else {
      const std::uint64_t u = t - base_total;
      const std::uint64_t j = u / scalar_words, w = u - j * scalar_words;
      out_scalars[u] = witness[std::uint64_t(index[j]) * scalar_words + w];
    }
  }
}

template <class F, class Fr>
Csr<F> device_view(const DeviceCsrView<Fr>& m) {
  return Csr<F>{m.row_offsets, m.general_offsets, m.cols, reinterpret_cast<const F*>(m.values)};
}

}  // namespace groth16_kernels

template <class Fr>
void launch_pce_products(const DeviceCsrView<Fr>& a, const DeviceCsrView<Fr>& b, const DeviceCsrView<Fr>* c,
                         std::uint32_t rows, std::uint32_t n, const Fr* witness, Fr* out_a, Fr* out_b, Fr* out_ab,
                         std::uint32_t* first_unsatisfied, cudaStream_t stream) {
  using F = typename DeviceFieldOf<Fr>::type;
  namespace gk = groth16_kernels;
  if (n == 0) return;
  const gk::Csr<F> c_view = c ? gk::device_view<F>(*c) : gk::Csr<F>{nullptr, nullptr, nullptr, nullptr};
  const unsigned blocks = (n + gk::kThreads - 1) / gk::kThreads;
  ZKFARM_CUDA_LAUNCH(gk::pce_products_kernel<F><<<blocks, gk::kThreads, 0, stream>>>(
      gk::device_view<F>(a), gk::device_view<F>(b), c_view, c != nullptr, rows, n,
      reinterpret_cast<const F*>(witness), reinterpret_cast<F*>(out_a), reinterpret_cast<F*>(out_b),
      reinterpret_cast<F*>(out_ab), first_unsatisfied));
}

template <class Fr>
void launch_pce_products_packed(const PackedCsrView<Fr>& a, const PackedCsrView<Fr>& b, const PackedCsrView<Fr>* c,
                                std::uint32_t rows, const Fr* witness, Fr* out_a, Fr* out_b, Fr* out_ab,
                                std::uint32_t* first_unsatisfied, cudaStream_t stream) {
  using F = typename DeviceFieldOf<Fr>::type;
  namespace gk = groth16_kernels;
  if (rows == 0) return;
  auto view = [](const PackedCsrView<Fr>& m) {
    return gk::PackedCsr<F>{m.counts, m.block_starts, m.cols, reinterpret_cast<const F*>(m.values), m.value_index,
                            reinterpret_cast<const F*>(m.value_table)};
  };
  const gk::PackedCsr<F> c_view =
      c ? view(*c) : gk::PackedCsr<F>{nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
  const unsigned blocks = (rows + kPackedRowBlock - 1) / kPackedRowBlock;
  ZKFARM_CUDA_LAUNCH(gk::pce_products_packed_kernel<F><<<blocks, gk::kThreads, 0, stream>>>(
      view(a), view(b), c_view, c != nullptr, rows, reinterpret_cast<const F*>(witness), reinterpret_cast<F*>(out_a),
      reinterpret_cast<F*>(out_b), reinterpret_cast<F*>(out_ab), first_unsatisfied));
}

template <class Fr>
void launch_hadamard(const Fr* a, const Fr* b, Fr* out, std::uint32_t n, cudaStream_t stream) {
  using F = typename DeviceFieldOf<Fr>::type;
  namespace gk = groth16_kernels;
  if (n == 0) return;
  const unsigned blocks = (n + gk::kThreads - 1) / gk::kThreads;
  ZKFARM_CUDA_LAUNCH(gk::hadamard_kernel<F><<<blocks, gk::kThreads, 0, stream>>>(
      reinterpret_cast<const F*>(a), reinterpret_cast<const F*>(b), reinterpret_cast<F*>(out), n));
}

template <class Fr>
void launch_gather_nonzero(const std::uint32_t* index, std::uint64_t count, std::uint64_t index_offset,
                           const void* bases, std::size_t base_bytes, const Fr* witness, void* out_bases,
                           Fr* out_scalars, cudaStream_t stream) {
  namespace gk = groth16_kernels;
  static_assert(sizeof(Fr) % 16 == 0, "scalars are whole 16-byte words");
  if (count == 0) return;
  if (base_bytes == 0 || base_bytes % 16 != 0)
    throw std::invalid_argument("gather: point size " + std::to_string(base_bytes) + " is not a multiple of 16");
  int device = 0, sms = 0;
  ZKFARM_CUDA_CHECK(cudaGetDevice(&device));
  ZKFARM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // Enough reads in flight to cover PCIe's latency (~2 blocks of 256
  // threads per SM), few enough to leave the SMs to the MSM beside it.
  const std::uint64_t words = count * (base_bytes / 16 + sizeof(Fr) / 16);
  const unsigned blocks = unsigned(std::min<std::uint64_t>(std::uint64_t(sms) * 2, (words + gk::kThreads - 1) / gk::kThreads));
  ZKFARM_CUDA_LAUNCH(gk::gather_kernel<typename DeviceFieldOf<Fr>::type><<<blocks, gk::kThreads, 0, stream>>>(
      index, count, index_offset, static_cast<const uint4*>(bases), unsigned(base_bytes / 16),
      reinterpret_cast<const uint4*>(witness), static_cast<uint4*>(out_bases), reinterpret_cast<uint4*>(out_scalars),
      unsigned(sizeof(Fr) / 16)));
}

namespace groth16_kernels {
template <class F>
struct NonZero {
  __device__ __forceinline__ bool operator()(const F& x) const { return !x.is_zero(); }
};
}  // namespace groth16_kernels

template <class Fr>
void launch_compact_nonzero(const Fr* in, std::uint64_t n, Fr* out, cudaStream_t stream) {
  using F = typename DeviceFieldOf<Fr>::type;
  namespace gk = groth16_kernels;
  if (n == 0) return;
  if (n >= (std::uint64_t(1) << 31))
    throw std::invalid_argument("compact_nonzero: at most 2^31 - 1 scalars per call, got " + std::to_string(n));
  const F* d_in = reinterpret_cast<const F*>(in);
  F* d_out = reinterpret_cast<F*>(out);
  DeviceBuffer<std::uint64_t> selected(1, stream);
  std::size_t temp_bytes = 0;
  ZKFARM_CUDA_CHECK(cub::DeviceSelect::If(nullptr, temp_bytes, d_in, d_out, selected.data(), int(n),
                                          gk::NonZero<F>(), stream));
  DeviceBuffer<std::uint8_t> temp(temp_bytes, stream);
  ZKFARM_CUDA_CHECK(cub::DeviceSelect::If(temp.data(), temp_bytes, d_in, d_out, selected.data(), int(n),
                                          gk::NonZero<F>(), stream));
}

template <class Fr>
void launch_h_from_coset(Fr* a, const Fr* b, const Fr* c, std::uint32_t n, cudaStream_t stream) {
  using F = typename DeviceFieldOf<Fr>::type;
  namespace gk = groth16_kernels;
  if (n == 0) return;
  const unsigned blocks = (n + gk::kThreads - 1) / gk::kThreads;
  ZKFARM_CUDA_LAUNCH(gk::h_kernel<F><<<blocks, gk::kThreads, 0, stream>>>(
      reinterpret_cast<F*>(a), reinterpret_cast<const F*>(b), reinterpret_cast<const F*>(c), n));
}

}  // namespace zkfarm::cuda

// Explicit instantiation for one host scalar field, e.g.
//   ZKFARM_INSTANTIATE_GROTH16_KERNELS(zkfarm::Bn254Fr)
#define ZKFARM_INSTANTIATE_GROTH16_KERNELS(FR)                                                                \
  template void zkfarm::cuda::launch_pce_products<FR>(                                                        \
      const zkfarm::cuda::DeviceCsrView<FR>&, const zkfarm::cuda::DeviceCsrView<FR>&,                        \
      const zkfarm::cuda::DeviceCsrView<FR>*, std::uint32_t, std::uint32_t, const FR*, FR*, FR*, FR*,        \
      std::uint32_t*, cudaStream_t);                                                                          \
  template void zkfarm::cuda::launch_h_from_coset<FR>(FR*, const FR*, const FR*, std::uint32_t, cudaStream_t); \
  template void zkfarm::cuda::launch_hadamard<FR>(const FR*, const FR*, FR*, std::uint32_t, cudaStream_t);     \
  template void zkfarm::cuda::launch_gather_nonzero<FR>(const std::uint32_t*, std::uint64_t, std::uint64_t,    \
                                                        const void*, std::size_t, const FR*, void*, FR*,       \
                                                        cudaStream_t);                                         \
  template void zkfarm::cuda::launch_compact_nonzero<FR>(const FR*, std::uint64_t, FR*, cudaStream_t);         \
  template void zkfarm::cuda::launch_pce_products_packed<FR>(                                                 \
      const zkfarm::cuda::PackedCsrView<FR>&, const zkfarm::cuda::PackedCsrView<FR>&,                        \
      const zkfarm::cuda::PackedCsrView<FR>*, std::uint32_t, const FR*, FR*, FR*, FR*, std::uint32_t*,       \
      cudaStream_t);
