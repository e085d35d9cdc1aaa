// ntt.cuh -- GpuNtt<Fr>'s implementation (ntt.h); included by one .cu file
// per field, which instantiates it. Kernels and the algorithm:
// ntt_kernels.cuh.
#pragma once

#include <string>
#include <vector>

#include "kernels/cuda/ntt.h"
#include "kernels/cuda/ntt_kernels.cuh"
#include "kernels/ntt.h"

namespace zkfarm::cuda {

namespace ntt_detail {

template <class F>
__global__ void scale_table_kernel(const F* in, F* out, F factor, std::uint32_t count) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = ntt_kernels::load(in + i) * factor;
}

template <class F>
using PassKernel = void (*)(ntt_kernels::PassArgs<F>);

// The shaped kernel for a pass of s stages (ntt_kernels::shaped(pass)).
template <class F>
PassKernel<F> shaped_kernel(unsigned s, bool dit) {
  namespace nk = ntt_kernels;
  switch (s) {
    case 5: return dit ? nk::ntt_shaped_pass_kernel<5, true, F> : nk::ntt_shaped_pass_kernel<5, false, F>;
    case 6: return dit ? nk::ntt_shaped_pass_kernel<6, true, F> : nk::ntt_shaped_pass_kernel<6, false, F>;
    case 7: return dit ? nk::ntt_shaped_pass_kernel<7, true, F> : nk::ntt_shaped_pass_kernel<7, false, F>;
    case 8: return dit ? nk::ntt_shaped_pass_kernel<8, true, F> : nk::ntt_shaped_pass_kernel<8, false, F>;
    case 9: return dit ? nk::ntt_shaped_pass_kernel<9, true, F> : nk::ntt_shaped_pass_kernel<9, false, F>;
    case 11: return dit ? nk::ntt_shaped_pass_kernel<11, true, F> : nk::ntt_shaped_pass_kernel<11, false, F>;
    default: throw std::logic_error("GpuNtt: no shaped kernel for " + std::to_string(s) + " stages");
  }
}
// The narrow kernel for a pass of s stages (ntt_kernels::narrow_shaped(pass)).
template <class F>
PassKernel<F> narrow_kernel(unsigned s, bool dit) {
  namespace nk = ntt_kernels;
  switch (s) {
    case 5: return dit ? nk::ntt_narrow_pass_kernel<5, true, F> : nk::ntt_narrow_pass_kernel<5, false, F>;
    case 6: return dit ? nk::ntt_narrow_pass_kernel<6, true, F> : nk::ntt_narrow_pass_kernel<6, false, F>;
    case 7: return dit ? nk::ntt_narrow_pass_kernel<7, true, F> : nk::ntt_narrow_pass_kernel<7, false, F>;
    case 8: return dit ? nk::ntt_narrow_pass_kernel<8, true, F> : nk::ntt_narrow_pass_kernel<8, false, F>;
    case 9: return dit ? nk::ntt_narrow_pass_kernel<9, true, F> : nk::ntt_narrow_pass_kernel<9, false, F>;
    case 10: return dit ? nk::ntt_narrow_pass_kernel<10, true, F> : nk::ntt_narrow_pass_kernel<10, false, F>;
    default: throw std::logic_error("GpuNtt: no narrow kernel for " + std::to_string(s) + " stages");
  }
}
static_assert(ntt_kernels::kNarrowTileLog == 10, "narrow_kernel() lists these shapes");
static_assert(ntt_kernels::kShapedMinStages == 5 && ntt_kernels::kShapedMaxStages == 9 &&
              ntt_kernels::kShapedTileLog == 11, "shaped_kernel() lists these shapes");

// Returns log2(n); throws std::invalid_argument unless n = 2^k, k <= 27.
inline unsigned checked_log(std::size_t n, const char* what) {
  if (n == 0 || (n & (n - 1)) != 0)
    throw std::invalid_argument(std::string(what) + ": size must be a power of two, got " + std::to_string(n));
  const unsigned k = unsigned(__builtin_ctzll(n));
  if (k > ntt_kernels::kMaxLogN)
    throw std::invalid_argument(std::string(what) + ": size 2^" + std::to_string(k) + " exceeds the GPU maximum 2^" +
                                std::to_string(ntt_kernels::kMaxLogN));
  return k;
}

}  // namespace ntt_detail

template <class Fr>
GpuNtt<Fr>::GpuNtt(const DeviceContext& ctx, const GpuNttConfig& config)
    : ctx_(ctx),
      tile_log_((config.validate(), config.tile_log ? config.tile_log : kDefaultTileLog)),
      generic_passes_(config.generic_passes),
      elementwise_reversal_(config.elementwise_reversal) {
  using F = typename DeviceFieldOf<Fr>::type;
  ctx_.activate();
  const cudaStream_t stream = ctx_.stream(0);
  const ntt_kernels::HostTables<Fr> host;
  const std::size_t table = host.lo.size(), local = host.local_fwd.size(), mid = host.mid.size();
  lo_ = DeviceBuffer<Fr>(table, stream);
  hi_ = DeviceBuffer<Fr>(table, stream);
  local_fwd_ = DeviceBuffer<Fr>(local, stream);
  local_inv_ = DeviceBuffer<Fr>(local, stream);
  mid_ = DeviceBuffer<Fr>(mid, stream);
  lo_.upload(host.lo.data(), table, stream);
  hi_.upload(host.hi.data(), table, stream);
  local_fwd_.upload(host.local_fwd.data(), local, stream);
  local_inv_.upload(host.local_inv.data(), local, stream);
  mid_.upload(host.mid.data(), mid, stream);
  // Tiles of 2^11 elements need 64 KB of shared memory (opt-in above 48 KB).
  ZKFARM_CUDA_CHECK(cudaFuncSetAttribute(ntt_kernels::ntt_group_pass_kernel<3, F>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, int(sizeof(F) << ntt_kernels::kTileLog)));
  for (unsigned s : {5u, 6u, 7u, 8u, 9u, 11u})
    for (bool dit : {false, true})
      ZKFARM_CUDA_CHECK(cudaFuncSetAttribute(ntt_detail::shaped_kernel<F>(s, dit),
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             int(sizeof(F) << ntt_kernels::kShapedTileLog)));
  ZKFARM_CUDA_CHECK(cudaFuncSetAttribute(ntt_kernels::bit_reverse_tiled_kernel<F>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         int(ntt_kernels::bit_reverse_tiled_smem<F>())));
  ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
}

template <class Fr>
void GpuNtt<Fr>::run(Op op, Fr* device_values, std::size_t n, cudaStream_t stream) const {
  using F = typename DeviceFieldOf<Fr>::type;
  namespace nk = ntt_kernels;
  const unsigned log_n = ntt_detail::checked_log(n, "GpuNtt");
  if (log_n == 0) return;
  ctx_.activate();
  F* data = reinterpret_cast<F*>(device_values);
  nk::Tables<F> tables;
  tables.lo = reinterpret_cast<const F*>(lo_.data());
  tables.hi = reinterpret_cast<const F*>(hi_.data());
  tables.local_fwd = reinterpret_cast<const F*>(local_fwd_.data());
  tables.local_inv = reinterpret_cast<const F*>(local_inv_.data());
  tables.mid = reinterpret_cast<const F*>(mid_.data());
  const nk::Plan plan = nk::make_plan(log_n, tile_log_);

  // dit: the transposed passes, last pass first (bit-reversed input, natural
  // output); coset: the coset scaling folded into the last DIF pass.
  auto passes = [&](bool inverse, bool dit = false, const F* coset = nullptr) {
    for (unsigned step = 0; step < plan.count; ++step) {
      const unsigned p = dit ? plan.count - 1 - step : step;
      nk::PassArgs<F> args;
      args.data = data;
      args.log_n = log_n;
      args.pass = plan.passes[p];
      args.inverse = inverse;
      args.tables = tables;
      args.tables.coset_hi = coset;
      args.dit = dit;
      const std::uint32_t tile_size = args.tile_size();
      const unsigned tile_log = args.pass.s + args.pass.column_log;
      const unsigned blocks = unsigned(args.tiles());
      const std::size_t smem = tile_size * sizeof(F);
      // Eight elements a thread (four in the narrow kernels); tiles of 2 and 4
      // elements (n = 2, 4) one thread.
      if (!generic_passes_ && tile_log_ == nk::kNarrowTileLog && nk::narrow_shaped(args.pass)) {
        ZKFARM_CUDA_LAUNCH(ntt_detail::narrow_kernel<F>(args.pass.s, dit)<<<blocks, tile_size >> nk::kNarrowRadixLog,
                                                                            smem, stream>>>(args));
      } else if (!generic_passes_ && nk::shaped(args.pass)) {
        ZKFARM_CUDA_LAUNCH(ntt_detail::shaped_kernel<F>(args.pass.s, dit)<<<blocks, tile_size >> 3, smem, stream>>>(args));
      } else if (tile_log >= 3) {
        ZKFARM_CUDA_LAUNCH(nk::ntt_group_pass_kernel<3, F><<<blocks, tile_size >> 3, smem, stream>>>(args));
      } else if (tile_log == 2) {
        ZKFARM_CUDA_LAUNCH(nk::ntt_group_pass_kernel<2, F><<<blocks, 1, smem, stream>>>(args));
      } else {
        ZKFARM_CUDA_LAUNCH(nk::ntt_group_pass_kernel<1, F><<<blocks, 1, smem, stream>>>(args));
      }
    }
  };
  auto bit_reverse = [&](nk::Scale scale, const F& constant) {
    nk::BitReverseArgs<F> args;
    args.data = data;
    args.log_n = log_n;
    args.scale = scale;
    args.constant = constant;
    if (!elementwise_reversal_ && log_n >= 2 * nk::kReverseEdgeLog) {
      const unsigned blocks = 1u << (log_n - 2 * nk::kReverseEdgeLog);
      ZKFARM_CUDA_LAUNCH(nk::bit_reverse_tiled_kernel<F><<<blocks, nk::kThreads, nk::bit_reverse_tiled_smem<F>(),
                                                           stream>>>(args));
      return;
    }
    const unsigned blocks = unsigned((n + nk::kThreads - 1) / nk::kThreads);
    ZKFARM_CUDA_LAUNCH(nk::bit_reverse_kernel<F><<<blocks, nk::kThreads, 0, stream>>>(args));
  };
  const Fr n_inv = Fr::from_u64(n).inverse();
  const F n_inv_dev = F::from_host(n_inv);

  switch (op) {
    case Op::kForward:
      passes(false);
      bit_reverse(nk::Scale::kNone, F::one());
      break;
    case Op::kInverse:
      passes(true);
      bit_reverse(nk::Scale::kConstant, n_inv_dev);
      break;
    case Op::kCoset: {
      // iNTT, coefficient i times g^i / n (g = w_{2n}), NTT.
      const std::uint32_t table = 1u << nk::kTableLog;
      DeviceBuffer<Fr> coset_hi(table, stream);
      F* coset_hi_dev = reinterpret_cast<F*>(coset_hi.data());
      ZKFARM_CUDA_LAUNCH(ntt_detail::scale_table_kernel<F><<<table / 256, 256, 0, stream>>>(tables.hi, coset_hi_dev,
                                                                                           n_inv_dev, table));
      // No bit reversal: DIF inverse (natural -> bit-reversed) with the
      // coset scaling in its last pass, then the transposed (DIT) forward
      // passes (bit-reversed -> natural).
      passes(true, false, coset_hi_dev);
      passes(false, true);
      break;  // coset_hi is freed stream-ordered, after the kernels that read it
    }
  }
}

template <class Fr>
void GpuNtt<Fr>::run_host(Op op, std::span<Fr> values) const {
  if (values.empty()) throw std::invalid_argument("GpuNtt: size must be a power of two, got 0");
  ctx_.activate();
  const cudaStream_t stream = ctx_.stream(0);
  DeviceBuffer<Fr> buffer(values.size(), stream);
  buffer.upload(values.data(), values.size(), stream);
  run(op, buffer.data(), values.size(), stream);
  buffer.download(values.data(), values.size(), stream);
  ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
}

template <class Fr>
void GpuNtt<Fr>::forward(Fr* d, std::size_t n, cudaStream_t s) const {
  run(Op::kForward, d, n, s);
}
template <class Fr>
void GpuNtt<Fr>::inverse(Fr* d, std::size_t n, cudaStream_t s) const {
  run(Op::kInverse, d, n, s);
}
template <class Fr>
void GpuNtt<Fr>::evaluations_to_odd_coset(Fr* d, std::size_t n, cudaStream_t s) const {
  run(Op::kCoset, d, n, s);
}
template <class Fr>
void GpuNtt<Fr>::forward(std::span<Fr> v) const {
  run_host(Op::kForward, v);
}
template <class Fr>
void GpuNtt<Fr>::inverse(std::span<Fr> v) const {
  run_host(Op::kInverse, v);
}
template <class Fr>
void GpuNtt<Fr>::evaluations_to_odd_coset(std::span<Fr> v) const {
  run_host(Op::kCoset, v);
}

}  // namespace zkfarm::cuda
