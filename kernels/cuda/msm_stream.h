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

#include <array>
#include <chrono>
#include <utility>
#include <vector>

#include "kernels/cuda/device_context.h"
#include "kernels/cuda/device_key.h"
#include "kernels/cuda/groth16_kernels.h"
#include "kernels/cuda/memory_plan.h"
#include "kernels/cuda/msm.h"

namespace zkfarm::cuda {

// What msm_placed() moved (accumulated over calls when passed again).
struct MsmStreamStats {
  std::uint64_t chunks = 0;          // msm_device() calls
  std::uint64_t streamed_bytes = 0;  // bases copied host -> device
  std::uint64_t skipped_bytes = 0;   // streamed bases left on the host (zero scalars)
  // MsmPipeline only: streamed chunks whose copy was not done when the
  // device turned to them with no resident work left to run meanwhile
  // (the device waited for PCIe), and slots filled before the NTTs.
  std::uint64_t copy_waits = 0;
  std::uint64_t prefetched = 0;
  // MsmPipeline only: host wall time (each MSM call is synchronous) in the
  // H chunks, the witness chunks (zeros skipped, ones summed, dense points
  // collected), the Pippengers over the collected dense points, and the
  // resident prefixes.
  double h_ms = 0, witness_ms = 0, dense_ms = 0, resident_ms = 0;
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


// All five MSMs of a proof whose key is partly in host memory, through one
// ring of transfer slots (MemoryPlan::ring_slots slots of msm_chunk G1
// points' bytes each; a G2 chunk holds half the points).
//
// The streamed part of every query is cut into chunks of one slot, and the
// chunks are put in one order: the H chunks (dense scalars: their bucket
// work takes ~4x their transfer) spread evenly among the witness queries'
// chunks (A, B1, B2, C: mostly zeros and ones, their transfer takes ~3x
// their bucket work). Chunk j is copied into slot j mod R on the copy
// stream as soon as chunk j - R's kernels are done, so the copy engine runs
// up to R - 1 chunks ahead of the kernels, across query boundaries, and the
// transfers that a witness chunk cannot hide are hidden behind the H chunks
// around it. The resident prefixes (no transfer) fill the gaps: whenever the
// next chunk's copy is not done, a resident prefix runs instead. prefetch()
// fills slots before the NTTs where the plan left room (the copy engine is
// idle during the SpMV's last part and the NTTs otherwise).
//
// An H chunk is an ordinary msm_device() call (msm.h). A witness chunk
// (mostly zeros and ones) is msm_device_split(): its ones are summed and its
// few dense points (scalar neither 0 nor 1) copied to a collection buffer of
// one slot's size, and one msm_device() over the collection runs when it is
// full or the query changes: one Pippenger per witness query instead of one
// per chunk (each of those costs ~10 ms of sorting and bucket reduction
// whatever its size). The sums are exact group elements, so the order does
// not change the proof's bytes.
template <class Curve>
class MsmPipeline {
 public:
  using Fr = typename Curve::Fr;
  using G1 = typename Curve::G1;
  using G2 = typename Curve::G2;
  using G1Affine = typename Curve::G1Affine;
  using G2Affine = typename Curve::G2Affine;

  // key's streamed ranges in chunks of `chunk` G1 points (G2: chunk / 2),
  // through `slots` slots (>= 2). Kernels run on work, copies on copy (two
  // different streams of ctx). Nothing is allocated yet.
  MsmPipeline(const DeviceContext& ctx, const DeviceProvingKey<Curve>& key, std::uint64_t chunk, int slots,
              cudaStream_t work, cudaStream_t copy)
      : ctx_(ctx), key_(key), work_(work), copy_(copy), slots_(std::max(slots, 2)) {
    if (chunk == 0) chunk = std::uint64_t(1) << 22;
    slot_bytes_ = chunk * sizeof(G1Affine);
    std::vector<Piece> witness, h;
    auto cut = [&](int query, const void* host, std::size_t points, std::size_t point_bytes, std::size_t resident,
                   std::vector<Piece>& out) {
      const std::size_t per = slot_bytes_ / point_bytes;
      for (std::size_t at = 0; at < points; at += per)
        out.push_back(Piece{query, static_cast<const std::uint8_t*>(host) + at * point_bytes, resident + at,
                            std::min(per, points - at), std::min(per, points - at) * point_bytes});
    };
    cut(kQueryA, key.a_host.data(), key.a_host.size(), sizeof(G1Affine), key.a_points.size(), witness);
    cut(kQueryB1, key.b1_host.data(), key.b1_host.size(), sizeof(G1Affine), key.b1_points.size(), witness);
    cut(kQueryB2, key.b2_host.data(), key.b2_host.size(), sizeof(G2Affine), key.b2_points.size(), witness);
    cut(kQueryC, key.c_host.data(), key.c_host.size(), sizeof(G1Affine), key.c_points.size(), witness);
    cut(kQueryH, key.h_host.data(), key.h_host.size(), sizeof(G1Affine), key.h_points.size(), h);
    // H chunks spread evenly, the first one first (its bucket work hides
    // the copies of the chunks after it).
    const std::size_t total = witness.size() + h.size();
    std::size_t hi = 0, wi = 0;
    for (std::size_t k = 0; k < total; ++k) {
      const bool take_h = hi < h.size() && (wi >= witness.size() || hi * total <= k * h.size());
      pieces_.push_back(take_h ? h[hi++] : witness[wi++]);
    }
    for (int q : {kQueryH, kQueryA, kQueryB1, kQueryB2, kQueryC})
      if (resident_points(q) > 0) resident_.push_back(q);
    slot_.resize(std::size_t(slots_));
  }

  std::size_t slot_bytes() const { return slot_bytes_; }
  int slots() const { return slots_; }
  std::size_t streamed_chunks() const { return pieces_.size(); }

  // Allocates up to `count` slots now (on the work stream) and queues their
  // chunks' copies: for the room the NTT stage leaves (MemoryPlan::
  // prefetch_slots). Throws DeviceOutOfMemory when they do not fit.
  void prefetch(int count) {
    ctx_.activate();
    for (int s = 0; s < std::min(count, slots_); ++s) allocate(s);
    while (issued_ < pieces_.size() && issued_ < std::size_t(std::min(count, slots_))) issue();
    stats_.prefetched = issued_;
  }

  // Every MSM, with each query's scalars (device pointers, KeyQuery order:
  // A, B1, C, B2, H; C's from the first private signal). Returns once all
  // are done; the sums are then g1(q) and b2().
  void run(const std::array<const Fr*, 5>& scalars) {
    ctx_.activate();
    std::size_t next = 0;
    top_up(next);
    using Clock = std::chrono::steady_clock;
    auto since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
    while (next < pieces_.size() || !resident_.empty()) {
      const bool ready = next < pieces_.size() && done(slot_[next % slots_].copied);
      if (!resident_.empty() && (!ready || next == pieces_.size())) {
        const int q = resident_.front();
        resident_.erase(resident_.begin());
        const auto t = Clock::now();
        run_resident(q, scalars[q]);
        stats_.resident_ms += since(t);
        continue;
      }
      if (!ready) ++stats_.copy_waits;
      const Piece& p = pieces_[next];
      Slot& slot = slot_[next % slots_];
      ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(work_, slot.copied.get(), 0));
      const Fr* piece_scalars = scalars[p.query] + p.offset;
      const auto t = Clock::now();
      if (p.query == kQueryH) {
        g1_[kQueryH] += msm_device<Curve, G1>(ctx_, reinterpret_cast<const G1Affine*>(slot.buffer.data()),
                                              piece_scalars, p.count, work_);
        stats_.h_ms += since(t);
      } else {
        if (dense_query_ != p.query) flush();
        dense_query_ = p.query;
        std::size_t dense = 0;
        if (p.query == kQueryB2)
          b2_ += msm_device_split<Curve, G2>(ctx_, reinterpret_cast<const G2Affine*>(slot.buffer.data()),
                                             piece_scalars, p.count, work_, reserve_, &dense);
        else
          g1_[p.query] += msm_device_split<Curve, G1>(ctx_, reinterpret_cast<const G1Affine*>(slot.buffer.data()),
                                                      piece_scalars, p.count, work_, reserve_, &dense);
        stats_.witness_ms += since(t);
      }
      slot.free_again.record(work_);
      ++stats_.chunks;
      ++next;
      top_up(next);
    }
    flush();
  }

  const G1& g1(int query) const { return g1_[query]; }
  const G2& b2() const { return b2_; }
  const MsmStreamStats& stats() const { return stats_; }

 private:
  struct Piece {
    int query;
    const std::uint8_t* host;
    std::size_t offset;  // of the first point in the query (its scalar index)
    std::size_t count;   // points
    std::size_t bytes;
  };
  struct Slot {
    DeviceBuffer<std::uint8_t> buffer;
    Event copied, free_again;
  };

  std::size_t resident_points(int q) const {
    switch (q) {
      case kQueryA: return key_.a_points.size();
      case kQueryB1: return key_.b1_points.size();
      case kQueryB2: return key_.b2_points.size();
      case kQueryC: return key_.c_points.size();
      default: return key_.h_points.size();
    }
  }

  std::size_t point_bytes(int query) const { return query == kQueryB2 ? sizeof(G2Affine) : sizeof(G1Affine); }

  // Room for `dense` more collected points of the current query: the
  // collection is emptied first when they would not fit. The buffers (one
  // slot of bases, their scalars) are allocated on first use, after the NTTs.
  std::pair<void*, void*> reserve(std::size_t dense) {
    if (dense_bases_.size() == 0) {
      dense_bases_ = DeviceBuffer<std::uint8_t>(slot_bytes_, work_);
      dense_scalars_ = DeviceBuffer<Fr>(slot_bytes_ / sizeof(G1Affine), work_);
    }
    const std::size_t bytes = point_bytes(dense_query_);
    if ((dense_fill_ + dense) * bytes > slot_bytes_) flush();
    std::pair<void*, void*> at{dense_bases_.data() + dense_fill_ * bytes, dense_scalars_.data() + dense_fill_};
    dense_fill_ += dense;
    return at;
  }

  // The collected dense points' MSM, added to their query's sum.
  void flush() {
    if (dense_fill_ == 0) return;
    const auto t = std::chrono::steady_clock::now();
    if (dense_query_ == kQueryB2)
      b2_ += msm_device<Curve, G2>(ctx_, reinterpret_cast<const G2Affine*>(dense_bases_.data()), dense_scalars_.data(),
                                   dense_fill_, work_);
    else
      g1_[dense_query_] += msm_device<Curve, G1>(ctx_, reinterpret_cast<const G1Affine*>(dense_bases_.data()),
                                                 dense_scalars_.data(), dense_fill_, work_);
    ++stats_.chunks;
    stats_.dense_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
    dense_fill_ = 0;
  }

  // A query's resident prefix: msm_placed() with nothing streamed (one call,
  // halved when its working set does not fit).
  void run_resident(int q, const Fr* scalars) {
    auto none1 = std::span<const G1Affine>();
    if (q == kQueryB2) {
      b2_ += msm_placed<Curve, G2>(ctx_, std::span<const G2Affine>(key_.b2_points.data(), key_.b2_points.size()),
                                   std::span<const G2Affine>(), scalars, 0, work_, copy_, &stats_);
      return;
    }
    const DeviceBuffer<G1Affine>& points = q == kQueryA    ? key_.a_points
                                           : q == kQueryB1 ? key_.b1_points
                                           : q == kQueryC  ? key_.c_points
                                                           : key_.h_points;
    g1_[q] += msm_placed<Curve, G1>(ctx_, std::span<const G1Affine>(points.data(), points.size()), none1, scalars, 0,
                                    work_, copy_, &stats_);
  }

  static bool done(const Event& e) {
    const cudaError_t status = cudaEventQuery(e.get());
    if (status == cudaSuccess) return true;
    if (status == cudaErrorNotReady) {
      (void)cudaGetLastError();  // not an error: the copy is still running
      return false;
    }
    ZKFARM_CUDA_CHECK(status);
    return false;
  }

  void allocate(int s) {
    Slot& slot = slot_[std::size_t(s)];
    if (slot.buffer.size() != 0) return;
    slot.buffer = DeviceBuffer<std::uint8_t>(slot_bytes_, work_);
    Event allocated;
    allocated.record(work_);  // the stream-ordered allocation precedes the copies into it
    ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(copy_, allocated.get(), 0));
  }

  // Queues the copy of the next chunk into its slot, behind the kernels that
  // last read that slot.
  void issue() {
    const std::size_t j = issued_++;
    Slot& slot = slot_[j % slots_];
    allocate(int(j % slots_));
    if (j >= std::size_t(slots_)) ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(copy_, slot.free_again.get(), 0));
    const Piece& p = pieces_[j];
    slot.buffer.upload(p.host, p.bytes, copy_);
    slot.copied.record(copy_);
    stats_.streamed_bytes += p.bytes;
  }

  // Copies run up to slots - 1 chunks ahead of the kernels (the slot of the
  // chunk being computed is busy).
  void top_up(std::size_t next) {
    while (issued_ < pieces_.size() && issued_ < next + std::size_t(slots_)) issue();
  }

  const DeviceContext& ctx_;
  const DeviceProvingKey<Curve>& key_;
  cudaStream_t work_, copy_;
  int slots_;
  std::size_t slot_bytes_ = 0;
  std::vector<Piece> pieces_;
  std::vector<int> resident_;
  std::vector<Slot> slot_;
  std::size_t issued_ = 0;
  // The dense points collected from the current witness query's chunks.
  DeviceBuffer<std::uint8_t> dense_bases_;
  DeviceBuffer<Fr> dense_scalars_;
  int dense_query_ = -1;
  std::size_t dense_fill_ = 0;
  DenseReserve reserve_ = [this](std::size_t dense) { return reserve(dense); };
  std::array<G1, 5> g1_{G1::identity(), G1::identity(), G1::identity(), G1::identity(), G1::identity()};
  G2 b2_ = G2::identity();
  MsmStreamStats stats_;
};

}  // namespace zkfarm::cuda

#endif  // ZKFARM_KERNELS_CUDA_MSM_STREAM_H_
