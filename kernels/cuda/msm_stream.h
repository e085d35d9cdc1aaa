// msm_stream.h -- MSMs whose bases are partly or wholly in host memory, and
// MSMs split into chunks to bound their device working set.
//
// An MSM is linear in its points: sum_i k_i P_i over [0, n) is the sum of the
// same MSM over any split of [0, n) into ranges. msm_placed() uses that to
// run one query of a proving key whose first `resident` bases are in device
// memory and the rest in page-locked host memory (device_key.h's placement):
// the resident prefix goes through msm_device() (msm.h, the kernels
// unchanged, no new instantiations) in one call when its working set fits
// the budget, in halves otherwise; the streamed rest in ranges of `chunk`
// points; the results are added on the host. Host ranges are copied into two device buffers, alternating,
// on a copy stream: the transfer of chunk k+1 runs while the kernels of
// chunk k run on the work stream (events order each buffer's reuse), so a
// streamed MSM costs max(transfer, compute) per chunk rather than the sum.
// Scalars are always in device memory (the witness and h of the proof).
//
// Zero scalars (NonzeroGather): an MSM over the witness needs no base whose
// scalar is zero (about half of a typical witness). Given the sorted
// witness indices of the streamed range's non-zero scalars (page-locked
// host memory), each chunk is gathered on the copy stream by a kernel that
// reads only those bases from the mapped host memory over PCIe, with their
// scalars from the device witness, into the transfer buffers: the zeros'
// bases never cross the bus, and the bucket work of chunk k still overlaps
// the gather of chunk k+1. (Measured on the H200: such reads reach ~24
// GB/s against ~55 GB/s for the copy engines' DMA, so with ~45% zeros the
// plain copy is faster there; device_key.h leaves it off by default.)
//
// Results are exact group elements, so any split gives the same point and
// the proof's bytes do not depend on the placement (tests/gpu checks this
// against the CPU prover under budgets that stream every query).
#ifndef ZKFARM_KERNELS_CUDA_MSM_STREAM_H_
#define ZKFARM_KERNELS_CUDA_MSM_STREAM_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/cuda/device_context.h"
#include "kernels/cuda/groth16_kernels.h"
#include "kernels/cuda/msm.h"

namespace zkfarm::cuda {

// What msm_placed() moved (accumulated over calls when passed again).
struct MsmStreamStats {
  std::uint64_t chunks = 0;          // msm_device() calls
  std::uint64_t streamed_bytes = 0;  // bases copied host -> device
  std::uint64_t skipped_bytes = 0;   // streamed bases left on the host (zero scalars)
};

// The non-zero scalars of a streamed range over the witness: index[0..count)
// are sorted witness indices (page-locked host memory, mapped), each in
// [index_offset, index_offset + host_bases.size()); host_bases[i] belongs
// to witness index index_offset + i; witness is the device witness.
template <class Fr>
struct NonzeroGather {
  const std::uint32_t* index = nullptr;
  std::size_t count = 0;
  std::uint64_t index_offset = 0;
  const Fr* witness = nullptr;
};

namespace msm_stream_detail {
// The device address of page-locked host memory, or null when it is not
// mapped (pageable memory): the caller then copies instead.
inline const void* mapped(const void* host) {
  void* device = nullptr;
  if (cudaHostGetDevicePointer(&device, const_cast<void*>(host), 0) == cudaSuccess) return device;
  (void)cudaGetLastError();
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, host) == cudaSuccess && attributes.type == cudaMemoryTypeHost)
    return attributes.devicePointer;
  (void)cudaGetLastError();
  return nullptr;
}
}  // namespace msm_stream_detail

// sum_i scalars[i] * base_i for i in [0, device_bases.size() +
// host_bases.size()), where base_i = device_bases[i] for the resident prefix
// and host_bases[i - resident] after it. chunk: points per streamed
// msm_device() call (0: 2^22). host_bases must be page-locked (pinned
// or registered) for the copies to overlap; pageable memory works, slower.
// Runs on `stream`, copies on `copy_stream` (a different stream of ctx).
// gather (optional): the streamed range's non-zero scalars, see
// NonzeroGather; then device_scalars is still the range's scalars (for the
// resident prefix) and only the listed bases are moved. Without a mapping
// of host_bases or the index, every base is copied as without gather.
// Throws what msm_device() throws; DeviceOutOfMemory when the two transfer
// buffers do not fit.
template <class Curve, class G>
G msm_placed(const DeviceContext& ctx, std::span<const typename G::Affine> device_bases,
             std::span<const typename G::Affine> host_bases, const typename Curve::Fr* device_scalars,
             std::size_t chunk, cudaStream_t stream, cudaStream_t copy_stream, MsmStreamStats* stats = nullptr,
             const NonzeroGather<typename Curve::Fr>* gather = nullptr) {
  using Affine = typename G::Affine;
  using Fr = typename Curve::Fr;
  G result = G::identity();
  const std::size_t resident = device_bases.size();
  // The resident prefix in one call when its working set fits (the witness
  // MSMs' depends on how many scalars are neither 0 nor 1, unknown to the
  // plan), else split in halves until it does: the budget makes an
  // allocation that does not fit fail at once (DeviceOutOfMemory), before
  // anything of that call is queued.
  auto resident_range = [&](auto&& self, std::size_t offset, std::size_t count) -> void {
    try {
      result += msm_device<Curve, G>(ctx, device_bases.data() + offset, device_scalars + offset, count, stream);
      if (stats) ++stats->chunks;
    } catch (const DeviceOutOfMemory&) {
      if (count <= (std::size_t(1) << 12)) throw;
      ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));  // the failed call's frees done
      self(self, offset, count / 2);
      self(self, offset + count / 2, count - count / 2);
    }
  };
  if (resident > 0) resident_range(resident_range, 0, resident);
  if (host_bases.empty()) return result;

  ctx.activate();
  const void* mapped_bases = gather ? msm_stream_detail::mapped(host_bases.data()) : nullptr;
  const void* mapped_index = gather && gather->count ? msm_stream_detail::mapped(gather->index) : nullptr;
  if (gather && mapped_bases && (mapped_index || gather->count == 0)) {
    if (stats) stats->skipped_bytes += (host_bases.size() - gather->count) * sizeof(Affine);
    if (gather->count == 0) return result;
    const auto* index = static_cast<const std::uint32_t*>(mapped_index);
    const std::size_t total = gather->count;
    const std::size_t streamed_chunk = std::min(chunk ? chunk : (std::size_t(1) << 22), total);
    const std::size_t chunks = (total + streamed_chunk - 1) / streamed_chunk;
    DeviceBuffer<Affine> buffers[2];
    DeviceBuffer<Fr> scalars[2];
    for (int b = 0; b < (chunks > 1 ? 2 : 1); ++b) {
      buffers[b] = DeviceBuffer<Affine>(streamed_chunk, stream);
      scalars[b] = DeviceBuffer<Fr>(streamed_chunk, stream);
    }
    Event copied[2], free_again[2], allocated;
    allocated.record(stream);
    ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, allocated.get(), 0));
    auto queue_gather = [&](std::size_t k) {
      const int b = int(k % 2);
      const std::size_t offset = k * streamed_chunk;
      const std::size_t count = std::min(streamed_chunk, total - offset);
      if (k >= 2) ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, free_again[b].get(), 0));
      launch_gather_nonzero<Fr>(index + offset, count, gather->index_offset, mapped_bases, sizeof(Affine),
                                gather->witness, buffers[b].data(), scalars[b].data(), copy_stream);
      copied[b].record(copy_stream);
      if (stats) stats->streamed_bytes += count * sizeof(Affine);
    };
    queue_gather(0);
    for (std::size_t k = 0; k < chunks; ++k) {
      if (k + 1 < chunks) queue_gather(k + 1);
      const int b = int(k % 2);
      const std::size_t count = std::min(streamed_chunk, total - k * streamed_chunk);
      ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(stream, copied[b].get(), 0));
      result += msm_device<Curve, G>(ctx, buffers[b].data(), scalars[b].data(), count, stream);
      free_again[b].record(stream);
      if (stats) ++stats->chunks;
    }
    return result;
  }
  const std::size_t streamed_chunk = std::min(chunk ? chunk : (std::size_t(1) << 22), host_bases.size());
  const std::size_t chunks = (host_bases.size() + streamed_chunk - 1) / streamed_chunk;
  DeviceBuffer<Affine> buffers[2];
  buffers[0] = DeviceBuffer<Affine>(streamed_chunk, stream);
  if (chunks > 1) buffers[1] = DeviceBuffer<Affine>(streamed_chunk, stream);
  // copied[b]: buffer b holds its chunk (recorded on copy_stream); free[b]:
  // the kernels that read buffer b are done (recorded on stream); allocated:
  // the buffers exist (their stream-ordered allocation is on stream).
  Event copied[2], free_again[2], allocated;
  allocated.record(stream);
  ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, allocated.get(), 0));
  auto queue_copy = [&](std::size_t k) {
    const int b = int(k % 2);
    const std::size_t offset = k * streamed_chunk;
    const std::size_t count = std::min(streamed_chunk, host_bases.size() - offset);
    if (k >= 2) ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, free_again[b].get(), 0));
    buffers[b].upload(host_bases.data() + offset, count, copy_stream);
    copied[b].record(copy_stream);
    if (stats) stats->streamed_bytes += count * sizeof(Affine);
  };
  queue_copy(0);
  for (std::size_t k = 0; k < chunks; ++k) {
    if (k + 1 < chunks) queue_copy(k + 1);  // overlaps the kernels of chunk k
    const int b = int(k % 2);
    const std::size_t offset = k * streamed_chunk;
    const std::size_t count = std::min(streamed_chunk, host_bases.size() - offset);
    ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(stream, copied[b].get(), 0));
    result += msm_device<Curve, G>(ctx, buffers[b].data(), device_scalars + resident + offset, count, stream);
    free_again[b].record(stream);
    if (stats) ++stats->chunks;
  }
  // The buffers are freed on `stream` after its work; the copy stream's last
  // copy was waited for by that work.
  return result;
}

}  // namespace zkfarm::cuda

#endif  // ZKFARM_KERNELS_CUDA_MSM_STREAM_H_
