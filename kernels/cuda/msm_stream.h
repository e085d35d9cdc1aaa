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
#include <condition_variable>
#include <exception>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/cuda/device_context.h"
#include "kernels/cuda/device_key.h"
#include "kernels/cuda/groth16_kernels.h"
#include "kernels/cuda/memory_plan.h"
#include "kernels/cuda/msm.h"
#include "kernels/nonzero_bitmap.h"

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
  // MsmPipeline only (its H lane): device time the copy engine spent on the
  // chunks' transfers (CUDA events around each copy), and host compaction
  // (HostCompaction): chunks moved compacted, the CPU's wall time gathering
  // (including chunks it gathered too late to be used), chunks it gave up.
  double copy_ms = 0;
  std::uint64_t compacted = 0;
  double compaction_ms = 0;
  std::uint64_t compaction_late = 0;
  std::uint64_t compaction_failed = 0;  // the compactor stopped on an error (its chunks copied whole)
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
             const NonzeroGather<typename Curve::Fr>* gather = nullptr, const GpuMsmConfig& config = {}) {
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
      result += msm_device<Curve, G>(ctx, device_bases.data() + offset, device_scalars + offset, count, stream, config);
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
      result += msm_device<Curve, G>(ctx, buffers[b].data(), scalars[b].data(), count, stream, config);
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
    result += msm_device<Curve, G>(ctx, buffers[b].data(), device_scalars + resident + offset, count, stream, config);
    free_again[b].record(stream);
    if (stats) ++stats->chunks;
  }
  // The buffers are freed on `stream` after its work; the copy stream's last
  // copy was waited for by that work.
  return result;
}


// Host compaction of streamed witness chunks (MsmPipeline, one lane). A
// witness chunk's scalars are mostly zeros and ones, and a base whose
// scalar is zero adds nothing, yet a plain chunk moves every base over
// PCIe, the bound of a streaming proof. Here CPU threads copy the bases of
// the chunk's non-zero scalars, in order, into a page-locked staging
// buffer (the test: the host witness value is not zero), the copy engine
// moves only those, and the device compacts the chunk's scalars with the
// same test (launch_compact_nonzero) into the slot's unused tail: the
// chunk's MSM is then the same sum over fewer points. The CPU works ahead
// of the copy engine on the chunks after the next to be copied. The copies
// wait for a chunk it has not finished only while at least two earlier
// copies are still queued; otherwise (checked as each chunk is computed or
// gathered) that chunk is copied whole, so the CPU takes the share of the
// chunks it can gather in time. A chunk whose non-zero bases and scalars would not fit one slot is
// copied whole.
template <class Fr>
struct HostCompaction {
  std::span<const Fr> witness;         // the proof's witness, host memory
  std::size_t c_offset = 0;            // witness index of query C's first scalar
  double share = 1;                    // of the streamed witness chunks offered to the CPU, (0, 1]
  std::vector<std::uint8_t*> staging;  // >= 2 page-locked buffers of the pipeline's slot_bytes() each
  unsigned threads = 1;                // CPU threads copying one chunk's bases
  // Every offered chunk waits for the CPU instead (tests: each one then
  // goes through the compacted path, unless too dense for one slot).
  bool wait_for_cpu = false;
};

// All five MSMs of a proof whose key is partly in host memory, through
// rings of transfer slots (MemoryPlan::ring_slots slots of msm_chunk G1
// points' bytes each; a G2 chunk holds half the points).
//
// The streamed part of every query is cut into chunks of one slot. Chunk j
// of a ring is copied into slot j mod R on a copy stream as soon as chunk
// j - R's kernels are done, so the copy engine runs up to R - 1 chunks ahead
// of the kernels, across query boundaries. The resident prefixes (no
// transfer) run whenever the next chunk's copy is not done yet.
//
// The two kinds of chunk want different things: an H chunk (dense scalars)
// is bucket work, ~4x its transfer; a witness chunk (A, B1, B2, C: mostly
// zeros and ones) is msm_device_split(): its ones are summed and its few
// dense points collected, bases and scalars, into a buffer of one slot's
// size, so its time is the transfer. The collected points of a query go
// through one Pippenger (msm_device) when the buffer is full or the query
// changes: one per witness query instead of one per chunk (each costs ~10 ms
// of sorting and bucket reduction whatever its size).
//
// With two lanes (MemoryPlan::ring_lanes, when the ring has 4 slots or
// more) the witness chunks run in a second host thread on streams of their
// own (higher priority: their small kernels take SMs first as the bucket
// work's blocks retire) with the ring's slots but two, beside the H lane on
// the prover's streams: H chunks, resident prefixes and the collected
// points' Pippengers, which the witness lane hands over (two collection
// buffers: one fills while the other is summed). So the witness chunks'
// transfers overlap the H chunks' bucket work. With one lane every chunk
// runs in one order, the H chunks spread evenly among the witness chunks.
//
// The sums are exact group elements, so the order does not change the
// proof's bytes.
template <class Curve>
class MsmPipeline {
 public:
  using Fr = typename Curve::Fr;
  using G1 = typename Curve::G1;
  using G2 = typename Curve::G2;
  using G1Affine = typename Curve::G1Affine;
  using G2Affine = typename Curve::G2Affine;

  // key's streamed ranges in chunks of `chunk` G1 points (G2: chunk / 2),
  // through `slots` slots in all (>= 2; two lanes need >= 4). Kernels of
  // the H lane run on work, its copies on copy (two different streams of
  // ctx). Nothing is allocated yet.
  // compaction (optional, one lane only): see HostCompaction; its staging
  // buffers must hold slot_bytes_for(chunk) bytes each. config: the
  // settings of the Pippenger calls (GpuMsmConfig).
  MsmPipeline(const DeviceContext& ctx, const DeviceProvingKey<Curve>& key, std::uint64_t chunk, int slots,
              int lanes, cudaStream_t work, cudaStream_t copy, const HostCompaction<Fr>* compaction = nullptr,
              const GpuMsmConfig& config = {})
      : ctx_(ctx), key_(key), msm_(config) {
    if (chunk == 0) chunk = std::uint64_t(1) << 22;
    slots = std::max(slots, 2);
    two_lanes_ = lanes >= 2 && slots >= 4;
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
    main_.work = work;
    main_.copy = copy;
    if (two_lanes_) {
      int least = 0, greatest = 0;
      ZKFARM_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
      ZKFARM_CUDA_CHECK(cudaStreamCreateWithPriority(&side_streams_[0], cudaStreamNonBlocking, greatest));
      ZKFARM_CUDA_CHECK(cudaStreamCreateWithPriority(&side_streams_[1], cudaStreamNonBlocking, greatest));
      side_.work = side_streams_[0];
      side_.copy = side_streams_[1];
      main_.pieces = std::move(h);
      side_.pieces = std::move(witness);
      main_.slot.resize(2);
      side_.slot.resize(std::size_t(slots - 2));
    } else {
      // H chunks spread evenly, the first one first (its bucket work hides
      // the copies of the chunks after it).
      const std::size_t total = witness.size() + h.size();
      std::size_t hi = 0, wi = 0;
      for (std::size_t k = 0; k < total; ++k) {
        const bool take_h = hi < h.size() && (wi >= witness.size() || hi * total <= k * h.size());
        main_.pieces.push_back(take_h ? h[hi++] : witness[wi++]);
      }
      main_.slot.resize(std::size_t(slots));
    }
    for (int q : {kQueryH, kQueryA, kQueryB1, kQueryB2, kQueryC})
      if (resident_points(q) > 0) resident_.push_back(q);
    copy_begin_.resize(main_.pieces.size());
    copy_end_.resize(main_.pieces.size());
    if (compaction && !two_lanes_ && compaction->share > 0 && compaction->staging.size() >= 2 &&
        compaction->threads > 0) {
      compaction_ = *compaction;
      compact_.resize(main_.pieces.size());
      double credit = 0;  // the share spread evenly over the witness chunks
      for (std::size_t j = 0; j < main_.pieces.size(); ++j) {
        if (main_.pieces[j].query == kQueryH) continue;
        credit += std::min(compaction_.share, 1.0);
        if (credit >= 1.0 - 1e-9) {
          credit -= 1.0;
          compact_[j].state = Compact::kPending;
        }
      }
      staging_.resize(compaction_.staging.size());
      for (std::size_t b = 0; b < staging_.size(); ++b) staging_[b].data = compaction_.staging[b];
    }
  }
  // The slot size for `chunk` G1 points (0: 2^22), for HostCompaction's
  // staging buffers.
  static std::size_t slot_bytes_for(std::uint64_t chunk) {
    return std::size_t(chunk ? chunk : std::uint64_t(1) << 22) * sizeof(G1Affine);
  }
  ~MsmPipeline() {
    // The compactor first (it may issue copies); then copies and
    // witness-lane kernels still in flight (only when a run stopped on an
    // error) must not outlive the buffers they use: wait for them, then
    // free the buffers (in the H lane's stream order), then destroy the
    // witness lane's streams.
    stop_compactor();
    for (cudaStream_t s : {main_.copy, side_.copy, side_.work})
      if (s && s != main_.work) (void)cudaStreamSynchronize(s);
    for (Collection& c : collect_) c = Collection();
    main_.slot.clear();
    side_.slot.clear();
    for (cudaStream_t s : side_streams_)
      if (s) (void)cudaStreamDestroy(s);
  }
  MsmPipeline(const MsmPipeline&) = delete;
  MsmPipeline& operator=(const MsmPipeline&) = delete;

  std::size_t slot_bytes() const { return slot_bytes_; }
  int slots() const { return int(main_.slot.size() + side_.slot.size()); }
  int lanes() const { return two_lanes_ ? 2 : 1; }

  // Allocates up to `count` slots now (on the H lane's work stream) and
  // queues their chunks' copies: for the room the NTT stage leaves
  // (MemoryPlan::prefetch_slots); with two lanes one H chunk, the rest
  // witness chunks. Throws DeviceOutOfMemory when they do not fit.
  void prefetch(int count) {
    ctx_.activate();
    const auto [h, w] = prefetch_split(count);
    {
      std::lock_guard<std::mutex> lock(issue_mutex_);
      prefetch_lane(main_, int(h));
      prefetch_lane(side_, int(w));
      stats_.prefetched = main_.issued + side_.issued;
    }
    start_compactor();  // gathers while the NTTs run
  }

  // The slots prefetch(count) will fill, allocated now and lent out first
  // (DeviceProver's streamed SpMV stages the PCE in them); then
  // return_slots(done): the copies into them wait for `done` (recorded
  // behind the last kernel that reads them).
  std::vector<std::uint8_t*> lend_slots(int count) {
    ctx_.activate();
    const auto [h, w] = prefetch_split(count);
    std::vector<std::uint8_t*> out;
    for (std::size_t s = 0; s < h; ++s) {
      allocate(main_, s);
      out.push_back(main_.slot[s].buffer.data());
    }
    for (std::size_t s = 0; s < w; ++s) {
      allocate(side_, s);
      out.push_back(side_.slot[s].buffer.data());
    }
    return out;
  }
  void return_slots(const Event& done) {
    ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(main_.copy, done.get(), 0));
    if (side_.copy) ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(side_.copy, done.get(), 0));
  }

  // Every MSM, with each query's scalars (device pointers, KeyQuery order:
  // A, B1, C, B2, H; C's from the first private signal). Returns once all
  // are done; the sums are then g1(q) and b2().
  void run(const std::array<const Fr*, 5>& scalars) {
    ctx_.activate();
    scalars_ = scalars;
    struct StopCompactor {  // also when a chunk throws
      MsmPipeline* p;
      ~StopCompactor() { p->stop_compactor(); }
    } stop_compactor_at_end{this};
    // Every slot and collection now, on the H lane's stream (after the
    // proof's earlier frees), so that the witness lane never waits for an
    // allocation queued behind H work.
    for (Lane* lane : {&main_, &side_})
      for (std::size_t s = 0; s < lane->slot.size(); ++s) allocate(*lane, s);
    for (int c = 0; c < (two_lanes_ ? 2 : 1); ++c) {
      collect_[c].bases = DeviceBuffer<std::uint8_t>(slot_bytes_, main_.work);
      collect_[c].scalars = DeviceBuffer<Fr>(slot_bytes_ / sizeof(G1Affine), main_.work);
    }
    if (two_lanes_) {  // the witness (and its re-upload) and the buffers before any witness-lane work
      Event ready;
      ready.record(main_.work);
      ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(side_.work, ready.get(), 0));
      ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(side_.copy, ready.get(), 0));
    }
    if (!two_lanes_) {
      {
        std::lock_guard<std::mutex> lock(issue_mutex_);
        running_ = true;  // the compactor may now issue copies (every slot is allocated)
      }
      start_compactor();
      run_lane(main_, true);
      flush(main_.work, collect_[0]);
      stop_compactor();
      finish_stats();
      return;
    }
    side_stats_ = MsmStreamStats();
    std::future<void> side = std::async(std::launch::async, [this] {
      struct Done {  // the H lane stops waiting for hand-overs, also when this lane throws
        MsmPipeline* p;
        ~Done() {
          std::lock_guard<std::mutex> lock(p->mutex_);
          p->side_done_ = true;
          p->changed_.notify_all();
        }
      } done{this};
      ctx_.activate();
      run_lane(side_, false);
      hand_over(collect_[current_]);
    });
    try {
      run_h_lane();
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        aborted_ = true;
        changed_.notify_all();
      }
      side.wait();
      throw;
    }
    side.get();  // rethrows the witness lane's error
    for (int q = 0; q < 5; ++q) g1_[q] += side_g1_[q];
    b2_ += side_b2_;
    stats_.chunks += side_stats_.chunks;
    stats_.streamed_bytes += side_stats_.streamed_bytes;
    stats_.copy_waits += side_stats_.copy_waits;
    stats_.witness_ms += side_stats_.witness_ms;
    finish_stats();
  }

  const G1& g1(int query) const { return g1_[query]; }
  const G2& b2() const { return b2_; }
  const MsmStreamStats& stats() const { return stats_; }

 private:
  using Clock = std::chrono::steady_clock;
  static double since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  }

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
  // One ring: its chunks in order, its slots, its streams.
  struct Lane {
    cudaStream_t work = nullptr, copy = nullptr;
    std::vector<Piece> pieces;
    std::vector<Slot> slot;
    std::size_t issued = 0, next = 0;
  };
  // Dense points collected from one witness query's chunks.
  struct Collection {
    DeviceBuffer<std::uint8_t> bases;
    DeviceBuffer<Fr> scalars;
    int query = -1;
    std::size_t fill = 0;
    bool busy = false;  // handed over, its Pippenger not done yet
    Event gathered;     // the witness lane's last gather into it
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
  static std::size_t point_bytes(int query) { return query == kQueryB2 ? sizeof(G2Affine) : sizeof(G1Affine); }

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

  // Slot s of lane, allocated on the H lane's work stream (stream-ordered
  // after the proof's earlier frees) the first time it is used.
  void allocate(Lane& lane, std::size_t s) {
    Slot& slot = lane.slot[s];
    if (slot.buffer.size() != 0) return;
    slot.buffer = DeviceBuffer<std::uint8_t>(slot_bytes_, main_.work);
    Event allocated;
    allocated.record(main_.work);  // the allocation precedes the copies into it
    ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(lane.copy, allocated.get(), 0));
    if (lane.work != main_.work) ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(lane.work, allocated.get(), 0));
  }

  // Queues the copy of lane's next chunk into its slot, behind the kernels
  // that last read that slot: compacted when the CPU has it ready, whole
  // otherwise. Returns false (nothing queued) for a chunk the CPU is still
  // gathering while the copy engine has at least two chunks queued; the
  // compactor queues it when done. Called with issue_mutex_ held.
  bool issue(Lane& lane, MsmStreamStats& stats, bool force = false) {
    const std::size_t j = lane.issued;
    const Piece& p = lane.pieces[j];
    CompactState* cs = (&lane == &main_ && !compact_.empty()) ? &compact_[j] : nullptr;
    if (cs && compaction_.wait_for_cpu && (cs->state == Compact::kPending || cs->state == Compact::kGathering))
      return false;
    if (cs && cs->state == Compact::kGathering) {
      if (!force && j >= 2 && !done(copy_end_[j - 2])) return false;
      cs->state = Compact::kPlain;  // too late: the compactor drops it
      ++stats.compaction_late;
    } else if (cs && cs->state == Compact::kPending) {
      cs->state = Compact::kPlain;
    }
    const bool compacted = cs && cs->state == Compact::kReady;
    const std::size_t s = j % lane.slot.size();
    allocate(lane, s);
    Slot& slot = lane.slot[s];
    if (j >= lane.slot.size()) ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(lane.copy, slot.free_again.get(), 0));
    const bool timed = &lane == &main_;
    if (timed) copy_begin_[j].record(lane.copy);
    if (compacted) {
      const std::size_t bytes = cs->nz * point_bytes(p.query);
      Staging& staging = staging_[std::size_t(cs->staging)];
      slot.buffer.upload(staging.data, bytes, lane.copy);
      staging.copied.record(lane.copy);
      staging.in_flight = true;
      stats.streamed_bytes += bytes;
      stats.skipped_bytes += p.bytes - bytes;
      ++stats.compacted;
    } else {
      slot.buffer.upload(p.host, p.bytes, lane.copy);
      stats.streamed_bytes += p.bytes;
    }
    if (timed) copy_end_[j].record(lane.copy);
    slot.copied.record(lane.copy);
    ++lane.issued;
    issue_changed_.notify_all();
    return true;
  }

  // Copies run up to slots - 1 chunks ahead of the kernels (the slot of the
  // chunk being computed is busy). Called with issue_mutex_ held.
  void top_up(Lane& lane, MsmStreamStats& stats) {
    while (lane.issued < lane.pieces.size() && lane.issued < lane.next + lane.slot.size())
      if (!issue(lane, stats)) return;
  }

  // Slots filled before the NTTs: with two lanes one H chunk, the rest
  // witness chunks (the witness lane's transfers are what bounds it).
  std::pair<std::size_t, std::size_t> prefetch_split(int count) const {
    const std::size_t c = std::size_t(std::max(count, 0));
    const std::size_t h = std::min(two_lanes_ ? std::min<std::size_t>(c, 1) : c, main_.slot.size());
    const std::size_t w = two_lanes_ ? std::min(c - std::min<std::size_t>(c, 1), side_.slot.size()) : 0;
    return {h, w};
  }

  void prefetch_lane(Lane& lane, int count) {
    for (std::size_t s = 0; s < std::min(lane.slot.size(), std::size_t(std::max(count, 0))); ++s) allocate(lane, s);
    while (lane.issued < lane.pieces.size() && lane.issued < std::size_t(std::max(count, 0)) &&
           lane.issued < lane.slot.size())
      if (!issue(lane, stats_)) break;
  }

  // The chunks of one lane in order. The H lane (main_lane) runs a
  // resident prefix instead of waiting for a copy, and (with two lanes)
  // takes the witness lane's hand-overs between chunks.
  void run_lane(Lane& lane, bool main_lane) {
    MsmStreamStats& stats = main_lane ? stats_ : side_stats_;
    {
      std::lock_guard<std::mutex> lock(issue_mutex_);
      top_up(lane, stats);
    }
    while (lane.next < lane.pieces.size() || (main_lane && !resident_.empty())) {
      if (main_lane && two_lanes_ && flush_handed_over()) continue;
      if (!main_lane && aborted()) return;
      bool ready = false;
      if (lane.next < lane.pieces.size()) {
        std::lock_guard<std::mutex> lock(issue_mutex_);
        ready = lane.next < lane.issued && done(lane.slot[lane.next % lane.slot.size()].copied);
      }
      if (main_lane && !resident_.empty() && (!ready || lane.next == lane.pieces.size())) {
        const int q = resident_.front();
        resident_.erase(resident_.begin());
        const auto t = Clock::now();
        run_resident(q, scalars_[q]);
        stats_.resident_ms += since(t);
        continue;
      }
      if (!ready) ++stats.copy_waits;
      bool compacted = false;
      {
        // Nothing left to run meanwhile: a chunk the CPU is still gathering
        // is copied whole now.
        std::unique_lock<std::mutex> lock(issue_mutex_);
        while (lane.issued <= lane.next)
          if (!issue(lane, stats, true)) issue_changed_.wait(lock);  // wait_for_cpu
        compacted = !compact_.empty() && compact_[lane.next].state == Compact::kReady;
      }
      const Piece& p = lane.pieces[lane.next];
      Slot& slot = lane.slot[lane.next % lane.slot.size()];
      ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(lane.work, slot.copied.get(), 0));
      const Fr* piece_scalars = scalars_[p.query] + p.offset;
      std::size_t piece_count = p.count;
      if (compacted) {  // the non-zero scalars, in the slot after the moved bases
        piece_count = compact_[lane.next].nz;
        Fr* tail = reinterpret_cast<Fr*>(slot.buffer.data() + compact_tail(piece_count, p.query));
        launch_compact_nonzero<Fr>(piece_scalars, p.count, tail, lane.work);
        piece_scalars = tail;
      }
      const auto t = Clock::now();
      if (p.query == kQueryH) {
        g1_[kQueryH] += msm_device<Curve, G1>(ctx_, reinterpret_cast<const G1Affine*>(slot.buffer.data()),
                                              piece_scalars, p.count, lane.work, msm_);
        stats.h_ms += since(t);
      } else {
        Collection& c = collect_[current_];
        if (c.query != p.query) {
          if (two_lanes_) hand_over(c);
          else flush(lane.work, c);
          if (two_lanes_) acquire_collection(p.query);
        }
        collect_[current_].query = p.query;
        std::size_t dense = 0;
        auto& g1 = main_lane ? g1_ : side_g1_;
        auto& b2 = main_lane ? b2_ : side_b2_;
        const DenseReserve reserve = [&](std::size_t count) { return reserve_dense(lane.work, p.query, count); };
        if (p.query == kQueryB2)
          b2 += msm_device_split<Curve, G2>(ctx_, reinterpret_cast<const G2Affine*>(slot.buffer.data()),
                                            piece_scalars, piece_count, lane.work, reserve, &dense);
        else
          g1[p.query] += msm_device_split<Curve, G1>(ctx_, reinterpret_cast<const G1Affine*>(slot.buffer.data()),
                                                     piece_scalars, piece_count, lane.work, reserve, &dense);
        collect_[current_].gathered.record(lane.work);
        stats.witness_ms += since(t);
      }
      std::lock_guard<std::mutex> lock(issue_mutex_);
      slot.free_again.record(lane.work);
      ++stats.chunks;
      ++lane.next;
      top_up(lane, stats);
    }
  }

  // The H lane with two lanes: its own chunks and residents, then the
  // hand-overs until the witness lane is done.
  void run_h_lane() {
    run_lane(main_, true);
    for (;;) {
      if (flush_handed_over()) continue;
      std::unique_lock<std::mutex> lock(mutex_);
      if (side_done_ && handed_.empty()) return;
      changed_.wait(lock, [&] { return side_done_ || !handed_.empty(); });
    }
  }

  // Room for `dense` more collected points of query in the current
  // collection: emptied first (one lane) or handed over and the other
  // taken (two lanes) when they would not fit. Buffers (one slot of bases,
  // their scalars) are allocated on first use, after the NTTs.
  std::pair<void*, void*> reserve_dense(cudaStream_t stream, int query, std::size_t dense) {
    Collection* c = &collect_[current_];
    const std::size_t bytes = point_bytes(query);
    if ((c->fill + dense) * bytes > slot_bytes_) {
      if (two_lanes_) {
        hand_over(*c);
        acquire_collection(query);
      } else {
        flush(stream, *c);
      }
      c = &collect_[current_];
    }
    c->query = query;
    std::pair<void*, void*> at{c->bases.data() + c->fill * bytes, c->scalars.data() + c->fill};
    c->fill += dense;
    return at;
  }

  // The collected dense points' MSM (on stream), added to their query's sum.
  void flush(cudaStream_t stream, Collection& c) {
    if (c.fill == 0) return;
    const auto t = Clock::now();
    if (c.query == kQueryB2)
      b2_ += msm_device<Curve, G2>(ctx_, reinterpret_cast<const G2Affine*>(c.bases.data()), c.scalars.data(), c.fill,
                                   stream, msm_);
    else
      g1_[c.query] += msm_device<Curve, G1>(ctx_, reinterpret_cast<const G1Affine*>(c.bases.data()),
                                            c.scalars.data(), c.fill, stream, msm_);
    ++stats_.chunks;
    stats_.dense_ms += since(t);
    c.fill = 0;
  }

  // Witness lane: c goes to the H lane for its Pippenger (if it holds any
  // points; its gathers are ordered by c.gathered).
  void hand_over(Collection& c) {
    if (c.fill == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    c.busy = true;
    handed_.push_back(int(&c - collect_));
    changed_.notify_all();
  }
  // Witness lane: switches to the other collection once the H lane has
  // summed what it held (throws when the H lane gave up).
  void acquire_collection(int query) {
    const int other = 1 - current_;
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !collect_[other].busy || aborted_; });
    if (aborted_) throw std::runtime_error("msm pipeline: the H lane stopped");
    current_ = other;
    collect_[other].query = query;
    collect_[other].fill = 0;
  }
  // H lane: sums one handed-over collection, if any; true when it did.
  bool flush_handed_over() {
    int index = -1;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (handed_.empty()) return false;
      index = handed_.front();
      handed_.erase(handed_.begin());
    }
    Collection& c = collect_[index];
    ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(main_.work, c.gathered.get(), 0));
    flush(main_.work, c);
    std::lock_guard<std::mutex> lock(mutex_);
    c.busy = false;
    changed_.notify_all();
    return true;
  }
  bool aborted() {
    std::lock_guard<std::mutex> lock(mutex_);
    return aborted_;
  }

  // A query's resident prefix: msm_placed() with nothing streamed (one call,
  // halved when its working set does not fit).
  void run_resident(int q, const Fr* scalars) {
    if (q == kQueryB2) {
      b2_ += msm_placed<Curve, G2>(ctx_, std::span<const G2Affine>(key_.b2_points.data(), key_.b2_points.size()),
                                   std::span<const G2Affine>(), scalars, 0, main_.work, main_.copy, &stats_,
                                   nullptr, msm_);
      return;
    }
    const DeviceBuffer<G1Affine>& points = q == kQueryA    ? key_.a_points
                                           : q == kQueryB1 ? key_.b1_points
                                           : q == kQueryC  ? key_.c_points
                                                           : key_.h_points;
    g1_[q] += msm_placed<Curve, G1>(ctx_, std::span<const G1Affine>(points.data(), points.size()),
                                    std::span<const G1Affine>(), scalars, 0, main_.work, main_.copy, &stats_,
                                    nullptr, msm_);
  }

  // ---- Host compaction (HostCompaction) ----
  enum class Compact : std::uint8_t {
    kNo,         // copied whole (not offered to the CPU)
    kPending,    // offered, not started
    kGathering,  // the CPU is copying its bases into a staging buffer
    kReady,      // gathered (nz bases in staging buffer `staging`); compacted once issued
    kPlain,      // copied whole after all (too late, or too many non-zeros for one slot)
  };
  struct CompactState {
    Compact state = Compact::kNo;
    int staging = -1;
    std::size_t nz = 0;
  };
  struct Staging {
    std::uint8_t* data = nullptr;
    long holder = -1;        // the chunk gathered into it, until its copy is done
    bool in_flight = false;  // that chunk's copy is queued (copied records its end)
    Event copied;
  };
  static constexpr std::size_t kNone = ~std::size_t(0);

  // Where a compacted chunk's scalars start in its slot: after its bases,
  // 256-byte aligned.
  static std::size_t compact_tail(std::size_t nz, int query) { return (nz * point_bytes(query) + 255) / 256 * 256; }

  void start_compactor() {
    if (compact_.empty() || compactor_.joinable() || compactor_done_) return;
    compactor_ = std::thread([this] { compactor_main(); });
  }
  // Stops the compactor (waits for the chunk it is gathering) and rethrows
  // its error, if any, once.
  void stop_compactor() {
    if (compactor_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(issue_mutex_);
        stop_ = true;
        issue_changed_.notify_all();
      }
      compactor_.join();
    }
    compactor_done_ = true;
  }
  // Once the lane's work is done: the copy engine's busy time (every copy
  // finished first: a compacted chunk of zeros leaves nothing that waited
  // for its copy). A compactor that failed (e.g. no thread to be had) only
  // left its chunks to be copied whole: the sums are right, the failure is
  // counted; a logic error is rethrown.
  void finish_stats() {
    if (compactor_error_) {
      ++stats_.compaction_failed;
      try {
        std::rethrow_exception(std::exchange(compactor_error_, nullptr));
      } catch (const std::logic_error&) {
        throw;
      } catch (...) {
      }
    }
    if (main_.issued > 0) copy_end_[main_.issued - 1].synchronize();  // one copy stream: all before it too
    for (std::size_t j = 0; j < main_.issued; ++j) stats_.copy_ms += Event::elapsed_ms(copy_begin_[j], copy_end_[j]);
  }

  // The CPU's part for chunk j: its non-zero scalars' bases into staging
  // buffer b; returns how many, or kNone when they and their scalars would
  // not fit one slot.
  std::size_t gather(std::size_t j, std::size_t b) {
    const Piece& p = main_.pieces[j];
    const std::size_t first = p.offset + (p.query == kQueryC ? compaction_.c_offset : 0);
    if (first + p.count > compaction_.witness.size())
      throw std::logic_error("msm pipeline: chunk past the end of the witness");
    const std::size_t nz = nonzero_.count(first, first + p.count);
    if (compact_tail(nz, p.query) + nz * sizeof(Fr) > slot_bytes_) return kNone;
    return nonzero_.gather(p.host, point_bytes(p.query), first, p.count, staging_[b].data, compaction_.threads);
  }
  // A staging buffer free for the next chunk, or -1 (with issue_mutex_).
  long free_staging() {
    for (std::size_t b = 0; b < staging_.size(); ++b) {
      Staging& st = staging_[b];
      if (st.holder >= 0 && st.in_flight && done(st.copied)) {
        st.holder = -1;
        st.in_flight = false;
      }
      if (st.holder < 0) return long(b);
    }
    return -1;
  }
  // The next chunk to gather: the first offered one not yet started at or
  // after the next to be copied (with issue_mutex_).
  std::size_t next_candidate() const {
    for (std::size_t j = main_.issued; j < compact_.size(); ++j)
      if (compact_[j].state == Compact::kPending) return j;
    return kNone;
  }
  void compactor_main() {
    try {
      ctx_.activate();  // this thread's CUDA calls (top_up, events) on the pipeline's device
      nonzero_.build(compaction_.witness, compaction_.threads);
      for (;;) {
        std::size_t j = kNone;
        long b = -1;
        {
          std::unique_lock<std::mutex> lock(issue_mutex_);
          for (;;) {
            if (stop_) return;
            j = next_candidate();
            if (j == kNone) return;
            b = free_staging();
            if (b >= 0) break;
            // Every buffer holds a chunk: wait for the oldest copy under
            // way, else for the next copy to be queued.
            long flight = -1;
            for (std::size_t k = 0; k < staging_.size(); ++k)
              if (staging_[k].in_flight && (flight < 0 || staging_[k].holder < staging_[std::size_t(flight)].holder))
                flight = long(k);
            if (flight >= 0) {
              lock.unlock();
              staging_[std::size_t(flight)].copied.synchronize();
              lock.lock();
            } else {
              issue_changed_.wait(lock);
            }
          }
          compact_[j].state = Compact::kGathering;
          compact_[j].staging = int(b);
          staging_[std::size_t(b)].holder = long(j);
          staging_[std::size_t(b)].in_flight = false;
        }
        const auto t = Clock::now();
        const std::size_t nz = gather(j, std::size_t(b));
        std::lock_guard<std::mutex> lock(issue_mutex_);
        stats_.compaction_ms += since(t);
        CompactState& cs = compact_[j];
        if (cs.state == Compact::kGathering && nz != kNone) {
          cs.state = Compact::kReady;
          cs.nz = nz;
        } else {
          if (cs.state == Compact::kGathering) cs.state = Compact::kPlain;
          staging_[std::size_t(b)].holder = -1;
        }
        if (running_) top_up(main_, stats_);
        issue_changed_.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(issue_mutex_);
      compactor_error_ = std::current_exception();
      for (CompactState& cs : compact_)
        if (cs.state == Compact::kPending || cs.state == Compact::kGathering) cs.state = Compact::kPlain;
      issue_changed_.notify_all();
    }
  }

  const DeviceContext& ctx_;
  const DeviceProvingKey<Curve>& key_;
  const GpuMsmConfig msm_;  // every msm_device call's settings
  bool two_lanes_ = false;
  std::size_t slot_bytes_ = 0;
  Lane main_, side_;
  cudaStream_t side_streams_[2] = {nullptr, nullptr};
  std::vector<int> resident_;
  std::array<const Fr*, 5> scalars_{};
  Collection collect_[2];
  int current_ = 0;  // the collection the witness chunks fill
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<int> handed_;  // collections handed over, in order
  bool side_done_ = false, aborted_ = false;
  std::array<G1, 5> g1_{G1::identity(), G1::identity(), G1::identity(), G1::identity(), G1::identity()};
  std::array<G1, 5> side_g1_{G1::identity(), G1::identity(), G1::identity(), G1::identity(), G1::identity()};
  G2 b2_ = G2::identity(), side_b2_ = G2::identity();
  MsmStreamStats stats_, side_stats_;
  // Per chunk of the H lane: its copy's start and end (copy_ms).
  std::vector<Event> copy_begin_, copy_end_;
  // Host compaction. issue_mutex_ guards the lanes' issued and next, the
  // chunks' compaction states and the staging buffers (the compactor
  // thread queues the copies of the chunks it finishes).
  HostCompaction<Fr> compaction_;
  std::vector<CompactState> compact_;  // per chunk of the H lane; empty: off
  std::vector<Staging> staging_;
  NonzeroBitmap nonzero_;  // the host witness's non-zero values
  std::thread compactor_;
  std::exception_ptr compactor_error_;
  std::mutex issue_mutex_;
  std::condition_variable issue_changed_;
  bool running_ = false, stop_ = false, compactor_done_ = false;
};

}  // namespace zkfarm::cuda

#endif  // ZKFARM_KERNELS_CUDA_MSM_STREAM_H_
