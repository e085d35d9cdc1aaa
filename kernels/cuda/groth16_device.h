// groth16_device.h -- the Groth16 prover on one GPU, bit-identical to the CPU
// prover (kernels/groth16_prover.h) for the same witness and r, s.
//
// Resident state: a DeviceProvingKey (device_key.h: points only) and a
// DevicePce (A, B and optionally C of kernels/pce.h, uploaded once per
// circuit); policy: the MemoryPlan the key was placed by (memory_plan.h:
// chunks, the transfer ring, overlap, compaction), passed with it to
// DeviceProver::prove, and the prover's GpuMsmConfig (window bits, waves;
// from the engine's DeviceConfig). Per proof only the witness moves;
// prove() reads as its stages, in the CPU prover's order:
//   1. host checks (witness length, w[0] = 1, key and PCE sizes);
//   2. witness upload: straight from the caller's memory when it is pinned
//      (fastest: callers that can, parse the witness into a PinnedBuffer),
//      else staged through two pinned chunks so that the host copy of chunk
//      k+1 (all cores) overlaps the DMA of chunk k;
//   3. a = A.w, b = B.w, c = a o b on the device (groth16_kernels.h), and,
//      when the PCE has C and options.check_constraints, the first row with
//      (A.w)(B.w) != C.w (ProveError naming it, as the CPU prover; read back
//      without a host wait and raised once the device work is done);
//   4. a, b, c to the odd coset (GpuNtt::evaluations_to_odd_coset: snarkjs's
//      convention, as ntt.h), h = a*b - c;
//   5. the five MSMs (msm.h: zeros skipped, ones summed, the rest by
//      Pippenger): A, B1, B2 (G2), C over the private witness, H over h, by
//      one of two strategies:
//      - resident (ResidentMsms): each query from its device points (H over
//        the shifted table when the key has one); with the plan's overlap
//        (always without a plan) the four witness MSMs run in a second host
//        thread on the prover's own two streams, from the witness upload
//        on, beside the SpMV, the NTTs and H. A plan without a ring streams
//        a query's host points on its own (msm_placed; the plan's
//        gather_nonzero moves only the bases of non-zero scalars, read by
//        the GPU from mapped host memory);
//      - streamed (StreamedMsms): a key partly in host memory, planned with
//        a ring, goes through msm_stream.h's MsmPipeline: chunks of
//        plan.msm_chunk points of all five queries through one ring of
//        plan.ring_slots transfer slots, the copies running ahead of the
//        kernels across queries and the first slots filled before the NTTs;
//        with the PCE in host memory those slots first carry its row slices
//        to the SpMV by DMA;
//   6. proof assembly with r, s on the host, the CPU prover's code verbatim.
// Field and curve arithmetic is exact, so any correct order of operations
// gives the CPU's bits; tests/gpu/groth16_device_test compares them.
//
// Memory per proof (device): the witness (32 bytes per signal) + three
// domain-size Fr vectors (96 bytes per domain point; b and c are freed
// before the MSMs) + the MSM working set (msm.h), twice when the witness
// MSMs overlap the rest, and up to five times for a small circuit whose
// four witness MSMs run at once (below). DeviceProveTimings reports the
// proof's own buffers.
//
// Small circuits (every query resident, at most kConcurrentWitnessMsmVars
// signals): an MSM of up to a million points is bound by its chains of
// dependent point additions and its launches, not by the device's width,
// so the four witness MSMs run at once, each on a stream of its own (three
// more host threads), beside H: the MSM stage takes about the longest of
// them rather than their sum.
//
// Threading: a DeviceProver runs one proof at a time on ctx.stream(0) and
// ctx.stream(1) (or, with own_streams, two streams of its own, so that
// several DeviceProvers of one context prove at once: the CUDA engine's
// lanes) plus streams of its own for the witness MSMs (its staging buffers
// are per object); callers serialize the proofs of one object. Errors: ProveError for
// a bad witness and UnsatisfiedConstraint (as the CPU prover), std::invalid_argument when key and PCE
// disagree, DeviceOutOfMemory when the proof's buffers do not fit, CudaError
// for any runtime failure.
#ifndef ZKFARM_KERNELS_CUDA_GROTH16_DEVICE_H_
#define ZKFARM_KERNELS_CUDA_GROTH16_DEVICE_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kernels/pce.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/device_key.h"
#include "kernels/cuda/groth16_kernels.h"
#include "kernels/cuda/msm.h"
#include "kernels/cuda/msm_stream.h"
#include "kernels/cuda/ntt.h"
#include "kernels/groth16_prover.h"
#include "kernels/groth16_types.h"
#include "kernels/parallel.h"
#include "kernels/random.h"

namespace zkfarm::cuda {

// One CSR matrix of a PCE in device memory (layout of kernels/pce.h's Csr),
// or, under a memory budget that cannot hold it (upload_host), in
// page-locked host memory that the SpMV kernels read over PCIe.
template <class Fr>
struct DeviceCsr {
  DeviceBuffer<std::uint64_t> row_offsets;      // rows + 1
  DeviceBuffer<std::uint64_t> general_offsets;  // rows + 1
  DeviceBuffer<std::uint32_t> cols;             // nnz
  DeviceBuffer<Fr> values;                      // general coefficients
  // Host mode: device-usable addresses of the page-locked host arrays, and
  // their host addresses (for copies by DMA, DeviceProver's streamed SpMV).
  DeviceCsrView<Fr> host_view{};
  DeviceCsrView<Fr> host_arrays{};
  std::vector<std::shared_ptr<HostPin>> host_storage;
  std::size_t host_bytes = 0;
  // Host mode: the row offsets packed for the streamed SpMV's DMA
  // (PackedCsrView: 4 bytes a row instead of the two 8-byte offsets);
  // empty when a row has 65536 non-zeros or more.
  PinnedBuffer<std::uint32_t> packed_counts;   // rows
  PinnedBuffer<std::uint64_t> block_starts;    // 2 per block of kPackedRowBlock rows
  // ... and its general coefficients as 2-byte indices into the table of
  // their distinct values, when there are at most 65536 of them (empty
  // otherwise: the values travel as they are).
  PinnedBuffer<std::uint16_t> value_index;     // one per general coefficient
  PinnedBuffer<Fr> value_table;
  std::size_t packed_bytes() const {
    return packed_counts.size() * 4 + block_starts.size() * 8 + value_index.size() * 2 + value_table.size() * sizeof(Fr);
  }

  std::size_t device_bytes() const {
    return row_offsets.bytes() + general_offsets.bytes() + cols.bytes() + values.bytes();
  }
  DeviceCsrView<Fr> view() const {
    if (!host_storage.empty() || host_bytes != 0) return host_view;
    return DeviceCsrView<Fr>{row_offsets.data(), general_offsets.data(), cols.data(), values.data()};
  }

  // m left in host memory (registered in place, or a pinned copy): no
  // device memory; the kernels read it over PCIe at every proof, or the
  // streamed SpMV moves its rows by DMA, packed when `packed` (pack()).
  static DeviceCsr upload_host(const Csr<Fr>& m, bool packed) {
    DeviceCsr d;
    std::size_t copied = 0;
    auto pin = [&](const auto& vec, auto& host) {
      using T = typename std::remove_cvref_t<decltype(vec)>::value_type;
      const std::span<const T> pinned = HostPin::pin(std::span<const T>(vec), d.host_storage, &copied);
      d.host_bytes += pinned.size_bytes();
      host = pinned.empty() ? nullptr : pinned.data();
      return pinned.empty() ? nullptr : HostPin::device_pointer(pinned.data());
    };
    auto& h = d.host_arrays;
    d.host_view = DeviceCsrView<Fr>{pin(m.row_offsets, h.row_offsets), pin(m.general_offsets, h.general_offsets),
                                    pin(m.cols, h.cols), pin(m.values, h.values)};
    if (packed) d.pack(m);
    return d;
  }

  // packed_counts and block_starts from m's offsets (left empty when a row
  // does not fit 16 bits of count).
  void pack(const Csr<Fr>& m) {
    if (m.row_offsets.size() < 2) return;
    const std::size_t rows = m.row_offsets.size() - 1;
    const std::size_t blocks = (rows + kPackedRowBlock - 1) / kPackedRowBlock;
    PinnedBuffer<std::uint32_t> counts(rows);
    PinnedBuffer<std::uint64_t> starts(2 * blocks);
    std::atomic<bool> fits{true};
    parallel_for(blocks, [&](std::size_t b0, std::size_t b1) {
      for (std::size_t k = b0; k < b1; ++k) {
        const std::size_t r0 = k * kPackedRowBlock, r1 = std::min(rows, r0 + kPackedRowBlock);
        starts[2 * k] = m.row_offsets[r0];
        starts[2 * k + 1] = m.general_offsets[r0];
        for (std::size_t r = r0; r < r1; ++r) {
          const std::uint64_t length = m.row_offsets[r + 1] - m.row_offsets[r];
          const std::uint64_t general = m.general_offsets[r + 1] - m.general_offsets[r];
          if (length > 0xffff || general > length) fits = false;
          counts[r] = std::uint32_t(length & 0xffff) | std::uint32_t((general & 0xffff) << 16);
        }
      }
    });
    if (!fits) return;
    packed_counts = std::move(counts);
    block_starts = std::move(starts);
    index_values(m);
  }

  // value_index and value_table from m's general coefficients (left empty
  // beyond 65536 distinct values). Two passes on all cores: the distinct
  // values of each slice (a slice stops early past the limit), then each
  // coefficient's index in their union.
  void index_values(const Csr<Fr>& m) {
    constexpr std::size_t kMaxDistinct = std::size_t(1) << 16;
    const std::size_t count = m.values.size();
    if (count == 0) return;
    using Key = std::array<std::uint64_t, sizeof(Fr) / 8>;
    struct Hash {
      std::size_t operator()(const Key& k) const {
        std::uint64_t h = 0;
        for (std::uint64_t w : k) h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        return std::size_t(h ^ (h >> 29));
      }
    };
    auto key_of = [&](std::size_t g) {
      Key k;
      std::memcpy(k.data(), static_cast<const void*>(&m.values[g]), sizeof(Fr));
      return k;
    };
    const std::size_t slices = std::min<std::size_t>(std::max<std::size_t>(parallel_threads(), 1) * 4, count);
    std::vector<std::vector<Key>> found(slices);
    std::atomic<bool> too_many{false};
    parallel_for(
        slices,
        [&](std::size_t s0, std::size_t s1) {
          for (std::size_t s = s0; s < s1 && !too_many; ++s) {
            std::unordered_set<Key, Hash> local;
            for (std::size_t g = count * s / slices; g < count * (s + 1) / slices; ++g) {
              local.insert(key_of(g));
              if (local.size() > kMaxDistinct) {
                too_many = true;
                break;
              }
            }
            found[s].assign(local.begin(), local.end());
          }
        },
        slices);
    if (too_many) return;
    std::unordered_map<Key, std::uint16_t, Hash> where;
    std::vector<Key> table;
    for (const auto& keys : found)
      for (const Key& k : keys) {
        if (where.count(k)) continue;
        if (table.size() == kMaxDistinct) return;
        where.emplace(k, static_cast<std::uint16_t>(table.size()));
        table.push_back(k);
      }
    PinnedBuffer<std::uint16_t> index(count);
    PinnedBuffer<Fr> distinct(table.size());
    for (std::size_t t = 0; t < table.size(); ++t)
      std::memcpy(static_cast<void*>(&distinct[t]), table[t].data(), sizeof(Fr));
    parallel_for(count, [&](std::size_t g0, std::size_t g1) {
      for (std::size_t g = g0; g < g1; ++g) index[g] = where.find(key_of(g))->second;
    });
    value_index = std::move(index);
    value_table = std::move(distinct);
  }

  // Throws DeviceOutOfMemory / CudaError; the copies are queued on stream.
  static DeviceCsr upload(const Csr<Fr>& m, cudaStream_t stream) {
    DeviceCsr d;
    auto put = [stream](auto& buffer, const auto& vec) {
      using T = typename std::remove_cvref_t<decltype(vec)>::value_type;
      buffer = DeviceBuffer<T>(vec.size(), stream);
      if (!vec.empty()) buffer.upload(vec.data(), vec.size(), stream);
    };
    put(d.row_offsets, m.row_offsets);
    put(d.general_offsets, m.general_offsets);
    put(d.cols, m.cols);
    put(d.values, m.values);
    return d;
  }
};

// A PCE's A and B (and C, when the host PCE has it and it is asked for)
// resident on the device.
template <class Fr>
class DevicePce {
 public:
  DevicePce() = default;

  // Uploads pce's matrices on `stream` and waits for the copies. with_c:
  // also upload C (when pce.has_c()), which lets device_prove check every
  // constraint as the CPU prover does; it costs C's size in device memory.
  // Throws DeviceOutOfMemory (nothing stays allocated) or CudaError.
  // on_host: leave the matrices in (page-locked) host memory, read by the
  // kernels over PCIe (MemoryPlan::pce_on_host); pce must then outlive this
  // object when registered in place. packed (on_host): also the packed row
  // offsets and coefficient indices that the streamed SpMV moves (about 2 s
  // and 1.4 GiB of page-locked memory at PoRep-32G); only worth it where
  // the plan streams the SpMV through the ring (MemoryPlan::prefetch_slots
  // of 2 or more).
  static DevicePce upload(const Pce<Fr>& pce, cudaStream_t stream, bool with_c = true, bool on_host = false,
                          bool packed = true) {
    DevicePce d;
    d.num_rows_ = static_cast<std::uint32_t>(pce.num_rows());
    d.num_cols_ = static_cast<std::uint32_t>(pce.num_cols());
    d.num_public_ = pce.num_public();
    d.domain_size_ = pce.domain_size();
    auto put = [&](const Csr<Fr>& m) {
      return on_host ? DeviceCsr<Fr>::upload_host(m, packed) : DeviceCsr<Fr>::upload(m, stream);
    };
    d.a_ = put(pce.a());
    d.b_ = put(pce.b());
    d.has_c_ = with_c && pce.has_c();
    if (d.has_c_) d.c_ = put(pce.c());
    ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
    return d;
  }
  // Page-locked host bytes the kernels read (0 unless uploaded on_host).
  std::size_t host_bytes() const { return a_.host_bytes + b_.host_bytes + c_.host_bytes; }
  // ... and those of the packed row offsets beside them (on_host only).
  std::size_t packed_bytes() const { return a_.packed_bytes() + b_.packed_bytes() + c_.packed_bytes(); }
  bool on_host() const { return !a_.host_storage.empty() || a_.host_bytes != 0; }

  std::size_t num_rows() const { return num_rows_; }
  std::size_t num_cols() const { return num_cols_; }
  std::uint32_t num_public() const { return num_public_; }
  std::uint32_t domain_size() const { return domain_size_; }
  bool has_c() const { return has_c_; }
  const DeviceCsr<Fr>& a() const { return a_; }
  const DeviceCsr<Fr>& b() const { return b_; }
  // Empty unless has_c().
  const DeviceCsr<Fr>& c() const { return c_; }
  std::size_t device_bytes() const { return a_.device_bytes() + b_.device_bytes() + c_.device_bytes(); }

 private:
  std::uint32_t num_rows_ = 0, num_cols_ = 0, num_public_ = 0, domain_size_ = 0;
  bool has_c_ = false;
  DeviceCsr<Fr> a_, b_, c_;
};

// Milliseconds per stage of one device proof. Stages are timed with CUDA
// events on the proof's stream; total_ms is host wall-clock from the call to
// the returned proof (host checks, the MSMs' host-side window sums and the
// proof assembly included).
struct DeviceProveTimings {
  double upload_ms = 0;  // witness host -> device
  double spmv_ms = 0;    // A.w, B.w (C.w check), a o b
  double ntt_ms = 0;     // three odd-coset transforms and h
  double msm_ms = 0;     // the five MSMs
  double total_ms = 0;
  // Device memory the proof allocated for its own vectors (witness, a, b, c),
  // excluding the MSMs' temporary working set.
  std::size_t scratch_bytes = 0;
  // Key points copied from pinned host memory during the MSMs (0 when the
  // key is resident), and msm_device() calls (5 when nothing is split).
  std::size_t streamed_bytes = 0;
  std::size_t msm_calls = 0;
  // Streamed key bytes not moved because their scalars were zero.
  std::size_t skipped_bytes = 0;
  // The H MSM and the four witness MSMs (A, B1, B2, C) on their own; with
  // overlapped, the witness MSMs ran on a second stream beside the SpMV,
  // the NTTs and H, and msm_ms runs from h to whichever ended last. Through
  // MsmPipeline (ring_slots > 0) the five MSMs are interleaved: h_msm_ms is
  // then the whole stage, witness_msm_ms 0, and pipeline_*_ms below split it.
  double h_msm_ms = 0;
  double witness_msm_ms = 0;
  bool overlapped = false;
  // Streaming through MsmPipeline (msm_stream.h): its transfer slots, the
  // chunks copied before the NTTs, and the chunks the device had to wait
  // for with no resident work left to run (0 when PCIe kept ahead).
  int ring_slots = 0;
  int ring_lanes = 0;
  std::size_t prefetched_chunks = 0;
  std::size_t copy_waits = 0;
  // ... and where its MSM stage went (host wall time of synchronous calls):
  // H chunks, witness chunks (ones summed, dense points collected), the
  // Pippengers over the collected points, resident prefixes.
  double pipeline_h_ms = 0, pipeline_witness_ms = 0, pipeline_dense_ms = 0, pipeline_resident_ms = 0;
  // ... the copy engine's busy time over the H lane's chunks (device time),
  // and host compaction (msm_stream.h's HostCompaction): witness chunks
  // moved compacted, the CPU's wall time gathering them, chunks it gathered
  // too late to be used.
  double pipeline_copy_ms = 0;
  // The streamed SpMV (PCE in host memory through the ring): bytes of the
  // PCE moved by DMA, and whether its row offsets travelled packed.
  std::size_t spmv_streamed_bytes = 0;
  bool spmv_packed = false;
  std::size_t compacted_chunks = 0;
  double compaction_ms = 0;
  std::size_t compaction_late = 0;
  std::size_t compaction_failed = 0;  // the CPU's part stopped on an error (its chunks copied whole)
};

// Proves on one device, keeping the NTT tables and pinned staging buffers
// between proofs. Holds a reference to ctx, which must outlive it.
template <class Curve>
class DeviceProver {
 public:
  using Fr = typename Curve::Fr;
  using G1 = typename Curve::G1;
  using G2 = typename Curve::G2;

  // Elements per pinned staging chunk (32 MiB of Fr): each chunk is filled
  // by all cores while the other chunk's DMA runs. One thread filling 4 MiB
  // chunks measured ~5.6 GB/s on the H200 host; all cores halve a warm
  // prover's upload (NOTES.md runs 5-6). A pinned witness skips staging.
  static constexpr std::size_t kStagingChunk = std::size_t(1) << 20;
  // Circuits of at most this many signals run their four witness MSMs at
  // once (2^20: four MSMs' working sets of ~100 MB each).
  static constexpr std::size_t kConcurrentWitnessMsmVars = std::size_t(1) << 20;
  // The four witness MSMs at once (the file comment): every query resident
  // and at most kConcurrentWitnessMsmVars signals, so their working sets
  // side by side stay small beside the key.
  static bool concurrent_witness_msms_fit(const DeviceProvingKey<Curve>& key) {
    return !streams_witness_queries(key) && key.num_vars <= kConcurrentWitnessMsmVars;
  }

  // Builds the NTT tables on ctx.stream(0). staging_chunk: elements per
  // pinned staging chunk (tests use small ones to cover many chunks).
  // Throws CudaError, std::invalid_argument for staging_chunk == 0.
  // msm: the settings of every device MSM of a proof (window bits,
  // accumulation waves; GpuMsmConfig's defaults unless the engine's
  // DeviceConfig says otherwise).
  // own_streams: the proof runs on two streams made for this object
  // instead of ctx.stream(0) and (1), so that other DeviceProvers of ctx
  // can prove at the same time.
  // ntt: the NTT stage's kernels (GpuNttConfig's default unless a benchmark
  // compares another).
  explicit DeviceProver(const DeviceContext& ctx, const GpuMsmConfig& msm = {},
                        std::size_t staging_chunk = kStagingChunk, bool own_streams = false,
                        const GpuNttConfig& ntt = {})
      : ctx_(ctx), ntt_(ctx, ntt), msm_(msm), staging_chunk_(staging_chunk) {
    if (staging_chunk == 0) throw std::invalid_argument("DeviceProver: staging_chunk must be positive");
    msm_.validate();
    if (own_streams) {
      ctx_.activate();
      own_streams_ = std::make_unique<SideStreams>();
    }
  }
  const GpuMsmConfig& msm_config() const { return msm_; }

  const DeviceContext& context() const { return ctx_; }

  // The streamed SpMV (PCE in host memory, through the ring) moves packed
  // row offsets where the PCE has them (default); false: the 8-byte
  // offsets as stored (measurements, tests).
  void set_packed_spmv(bool packed) { packed_spmv_ = packed; }

  // The proof for witness with a key uploaded without a plan (everything
  // resident: MemoryPlan::unplanned()).
  Groth16Proof<Curve> prove(const DeviceProvingKey<Curve>& key, const DevicePce<Fr>& pce,
                            std::span<const Fr> witness, const ProveOptions<Fr>& options = {},
                            DeviceProveTimings* timings = nullptr) {
    return prove(key, pce, MemoryPlan::unplanned(), witness, options, timings);
  }

  // The proof for witness, with key placed by plan (the plan it was
  // uploaded with: its chunks, transfer ring, overlap and compaction); see
  // the file comment for the stages and errors.
  Groth16Proof<Curve> prove(const DeviceProvingKey<Curve>& key, const DevicePce<Fr>& pce, const MemoryPlan& plan,
                            std::span<const Fr> witness, const ProveOptions<Fr>& options = {},
                            DeviceProveTimings* timings = nullptr) {
    const auto wall_start = std::chrono::steady_clock::now();
    check_inputs(key, pce, witness);  // 1. host checks, with the CPU prover's messages
    ctx_.activate();
    const cudaStream_t stream = own_streams_ ? own_streams_->work.get() : ctx_.stream(0);
    const cudaStream_t copy_stream =
        own_streams_ ? own_streams_->copy.get() : ctx_.stream(ctx_.stream_count() > 1 ? 1 : 0);
    const bool check = options.check_constraints && pce.has_c();
    ProofVectors v;
    v.start.record(stream);
    upload_stage(v, key.domain_size, witness, plan.release_witness, stream);  // 2. the witness
    // 5 (begun): the MSM stage's strategy. The ring's slots exist before the
    // SpMV, which may move the PCE through them; the resident strategy's
    // witness MSMs start beside the SpMV when the plan overlaps them.
    std::optional<StreamedMsms> streamed;
    std::optional<ResidentMsms> resident;
    if (uses_ring(key, plan)) streamed.emplace(*this, key, plan, witness, stream, copy_stream);
    else resident.emplace(*this, key, plan, witness, stream, copy_stream);
    spmv_stage(v, pce, plan, check, streamed ? &streamed->pipeline() : nullptr, stream, copy_stream);  // 3.
    if (streamed) streamed->before_ntts();
    else resident->start(v.witness.data(), v.uploaded);
    const Fr r = options.r ? *options.r : random_field_element<Fr>();
    const Fr s = options.s ? *options.s : random_field_element<Fr>();
    ntt_stage(v, key.domain_size, witness, plan.release_witness, stream);  // 4. h on the odd coset
    const MsmResults m = streamed ? streamed->run(v.witness.data(), v.a.data())  // 5. the five MSMs
                                  : resident->run(v.witness.data(), v.a.data());
    if (check) raise_unsatisfied(v.chunk_rows);
    // 6. Assembly: the CPU prover's own code (groth16_assemble).
    Groth16Proof<Curve> proof = groth16_assemble<Curve>(key, m.a, m.b1, m.b2, m.c, m.h, r, s);
    if (timings) {
      DeviceProveTimings t;
      t.upload_ms = Event::elapsed_ms(v.start, v.uploaded);
      t.spmv_ms = Event::elapsed_ms(v.uploaded, v.multiplied);
      t.ntt_ms = Event::elapsed_ms(v.multiplied, v.transformed);
      t.scratch_bytes = v.scratch_bytes;
      t.spmv_streamed_bytes = v.streamed_spmv.bytes;
      t.spmv_packed = v.streamed_spmv.packed;
      if (streamed) streamed->report(v.transformed, t);
      else resident->report(v.transformed, t);
      const MsmStreamStats& st = m.stats;
      t.prefetched_chunks = st.prefetched;
      t.copy_waits = st.copy_waits;
      t.pipeline_h_ms = st.h_ms;
      t.pipeline_witness_ms = st.witness_ms;
      t.pipeline_dense_ms = st.dense_ms;
      t.pipeline_resident_ms = st.resident_ms;
      t.pipeline_copy_ms = st.copy_ms;
      t.compacted_chunks = st.compacted;
      t.compaction_ms = st.compaction_ms;
      t.compaction_late = st.compaction_late;
      t.compaction_failed = st.compaction_failed;
      t.streamed_bytes = st.streamed_bytes;
      t.skipped_bytes = st.skipped_bytes;
      t.msm_calls = st.chunks;
      t.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start).count();
      *timings = t;
    }
    return proof;
  }

 private:
  // The proof's device vectors and the events between its stages.
  struct ProofVectors {
    DeviceBuffer<Fr> witness, a, b, c;  // a becomes h (stage 4); b, c freed there
    DeviceBuffer<std::uint32_t> first_unsatisfied;
    // The first row of each SpMV launch (its word of first_unsatisfied).
    std::vector<std::uint32_t> chunk_rows;
    std::size_t scratch_bytes = 0;
    struct {
      std::size_t bytes = 0;
      bool packed = false;
    } streamed_spmv;
    Event start, uploaded, multiplied, transformed;
  };

  // The five MSMs' results, and what their stage moved.
  struct MsmResults {
    G1 a, b1, c, h;
    G2 b2;
    MsmStreamStats stats;
  };

  // Whether the plan streams the key through the transfer ring (the
  // streamed strategy): a key with points in host memory, a plan with ring
  // slots, neither the zero-skipping gather nor overlapped witness MSMs
  // (those stream each query on its own: the resident strategy's path).
  static bool uses_ring(const DeviceProvingKey<Curve>& key, const MemoryPlan& plan) {
    const bool gather = plan.gather_nonzero && streams_witness_queries(key);
    const bool overlap = plan.overlap && !plan.release_witness;
    return plan.ring_slots > 0 && key.host_bytes() > 0 && !gather && !overlap;
  }
  static bool streams_witness_queries(const DeviceProvingKey<Curve>& key) {
    return !key.a_host.empty() || !key.b1_host.empty() || !key.b2_host.empty() || !key.c_host.empty();
  }
  // Stage 2: the witness on the device, and the SpMV's outputs allocated
  // first, so that an out-of-memory error never leaves a DMA reading the
  // caller's memory. Released witness (tight budgets): c comes after the
  // witness is freed (stage 3).
  void upload_stage(ProofVectors& v, std::size_t n, std::span<const Fr> witness, bool release, cudaStream_t stream) {
    v.witness = DeviceBuffer<Fr>(witness.size(), stream);
    v.a = DeviceBuffer<Fr>(n, stream);
    v.b = DeviceBuffer<Fr>(n, stream);
    if (!release) v.c = DeviceBuffer<Fr>(n, stream);
    v.scratch_bytes = v.witness.bytes() + v.a.bytes() + v.b.bytes() + n * sizeof(Fr);
    upload_witness(witness, v.witness, stream);
    v.uploaded.record(stream);
    v.first_unsatisfied = DeviceBuffer<std::uint32_t>(1, stream);
  }

  // Stage 3: a = A.w, b = B.w, c = a o b, and the constraint check (read
  // back without a wait; raise_unsatisfied looks once the device work is
  // done). With the PCE in host memory and a ring (pipeline), its row
  // slices travel by DMA through the ring's first slots; else the kernels
  // read it where it is.
  void spmv_stage(ProofVectors& v, const DevicePce<Fr>& pce, const MemoryPlan& plan, bool check,
                  MsmPipeline<Curve>* pipeline, cudaStream_t stream, cudaStream_t copy_stream) {
    const std::size_t n = v.a.size();
    const bool release = plan.release_witness;
    if (pipeline && pce.on_host() && plan.prefetch_slots >= 2 && copy_stream != stream) {
      StreamedSpmv streamed = spmv_streamed(pce, *pipeline, plan.prefetch_slots, check, n, v.witness.data(),
                                            v.a.data(), v.b.data(), release ? nullptr : v.c.data(),
                                            v.first_unsatisfied, stream, copy_stream);
      v.chunk_rows = std::move(streamed.starts);
      v.streamed_spmv.bytes = streamed.bytes;
      v.streamed_spmv.packed = streamed.packed;
    }
    if (v.chunk_rows.empty()) {
      v.chunk_rows = {0};
      ZKFARM_CUDA_CHECK(cudaMemsetAsync(v.first_unsatisfied.data(), 0xff, sizeof(std::uint32_t), stream));
      const DeviceCsrView<Fr> c_view = pce.c().view();
      launch_pce_products<Fr>(pce.a().view(), pce.b().view(), check ? &c_view : nullptr,
                              static_cast<std::uint32_t>(pce.num_rows()), static_cast<std::uint32_t>(n),
                              v.witness.data(), v.a.data(), v.b.data(), release ? nullptr : v.c.data(),
                              v.first_unsatisfied.data(), stream);
    }
    if (check) {
      if (unsatisfied_row_.size() < v.chunk_rows.size())
        unsatisfied_row_ = PinnedBuffer<std::uint32_t>(v.chunk_rows.size());
      v.first_unsatisfied.download(unsatisfied_row_.data(), v.chunk_rows.size(), stream);
    }
    if (release) {  // the witness off the device during the NTTs (stream-ordered free)
      v.witness = DeviceBuffer<Fr>();
      v.c = DeviceBuffer<Fr>(n, stream);
      launch_hadamard<Fr>(v.a.data(), v.b.data(), v.c.data(), static_cast<std::uint32_t>(n), stream);
    }
    v.multiplied.record(stream);
  }

  // Stage 4: a, b, c to the odd coset, h = a*b - c in a; b and c freed
  // (stream-ordered: the MSMs get the memory); a released witness back.
  void ntt_stage(ProofVectors& v, std::size_t n, std::span<const Fr> witness, bool release, cudaStream_t stream) {
    ntt_.evaluations_to_odd_coset(v.a.data(), n, stream);
    ntt_.evaluations_to_odd_coset(v.b.data(), n, stream);
    ntt_.evaluations_to_odd_coset(v.c.data(), n, stream);
    launch_h_from_coset<Fr>(v.a.data(), v.b.data(), v.c.data(), static_cast<std::uint32_t>(n), stream);
    v.b = DeviceBuffer<Fr>();
    v.c = DeviceBuffer<Fr>();
    if (release) {  // back for the MSMs, in b's and c's memory
      v.witness = DeviceBuffer<Fr>(witness.size(), stream);
      upload_witness(witness, v.witness, stream);
    }
    v.transformed.record(stream);
  }

  // Stage 5, streamed strategy: all five queries through the transfer ring
  // (msm_stream.h's MsmPipeline), host compaction of the witness chunks
  // where the plan offers it and the process has the cores. Made before the
  // SpMV (pipeline() lends it the first slots); before_ntts() fills the
  // first slots while the NTTs run; run() does the rest.
  class StreamedMsms {
   public:
    StreamedMsms(DeviceProver& prover, const DeviceProvingKey<Curve>& key, const MemoryPlan& plan,
                 std::span<const Fr> witness, cudaStream_t stream, cudaStream_t copy_stream)
        : key_(key),
          plan_(plan),
          stream_(stream),
          compaction_(plan.host_compaction > 0 && (plan.ring_lanes < 2 || plan.ring_slots < 4) &&
                              streams_witness_queries(key)
                          ? prover.host_compaction(plan, witness, key.num_public + 1)
                          : std::nullopt),
          pipeline_(prover.ctx_, key, plan.msm_chunk, plan.ring_slots, plan.ring_lanes, stream, copy_stream,
                    compaction_ ? &*compaction_ : nullptr, prover.msm_) {}
    MsmPipeline<Curve>& pipeline() { return pipeline_; }
    void before_ntts() { pipeline_.prefetch(plan_.prefetch_slots); }
    MsmResults run(const Fr* w, const Fr* h) {
      start_.record(stream_);
      pipeline_.run({w, w, w + key_.num_public + 1, w, h});
      MsmResults m;
      m.h = pipeline_.g1(kQueryH);
      m.a = pipeline_.g1(kQueryA);
      m.b1 = pipeline_.g1(kQueryB1);
      m.c = pipeline_.g1(kQueryC);
      m.b2 = pipeline_.b2();
      m.stats = pipeline_.stats();
      done_.record(stream_);
      done_.synchronize();
      return m;
    }
    // The stage's times: the five MSMs interleaved, all counted as H's.
    void report(const Event& transformed, DeviceProveTimings& t) const {
      t.msm_ms = Event::elapsed_ms(transformed, done_);
      t.h_msm_ms = Event::elapsed_ms(start_, done_);
      t.ring_slots = pipeline_.slots();
      t.ring_lanes = pipeline_.lanes();
    }

   private:
    const DeviceProvingKey<Curve>& key_;
    const MemoryPlan& plan_;
    cudaStream_t stream_;
    std::optional<HostCompaction<Fr>> compaction_;  // before pipeline_, which points to it
    MsmPipeline<Curve> pipeline_;
    Event start_, done_;
  };

  // Stage 5, resident strategy: each query on its own (msm_placed): its
  // device points, and where a plan without a ring left some in host
  // memory, those streamed through two buffers (with the plan's
  // zero-skipping gather, only the non-zero scalars' bases); H over the
  // key's shifted table when it has one. With the plan's overlap the four
  // witness MSMs run in a second host thread on the prover's own streams,
  // from the witness upload on (start()), beside the SpMV, the NTTs and H;
  // otherwise after H on the proof's streams.
  class ResidentMsms {
   public:
    ResidentMsms(DeviceProver& prover, const DeviceProvingKey<Curve>& key, const MemoryPlan& plan,
                 std::span<const Fr> witness, cudaStream_t stream, cudaStream_t copy_stream)
        : p_(prover),
          key_(key),
          plan_(plan),
          witness_(witness),
          stream_(stream),
          copy_(copy_stream),
          gather_(plan.gather_nonzero && streams_witness_queries(key)),
          overlap_(plan.overlap && !plan.release_witness),
          concurrent_(concurrent_witness_msms_fit(key)) {}
    // Waits for the witness MSMs (if running) before anything they read is
    // freed, also when the proof throws.
    ~ResidentMsms() {
      if (side_.valid()) side_.wait();
    }
    ResidentMsms(const ResidentMsms&) = delete;
    ResidentMsms& operator=(const ResidentMsms&) = delete;

    // With overlap: the witness MSMs over device_witness, once uploaded.
    void start(const Fr* device_witness, const Event& uploaded) {
      if (!overlap_) return;
      if (!p_.side_streams_) {
        p_.ctx_.activate();
        p_.side_streams_ = std::make_unique<SideStreams>();
      }
      const cudaStream_t work = p_.side_streams_->work.get(), copy = p_.side_streams_->copy.get();
      ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(work, uploaded.get(), 0));
      side_ = std::async(std::launch::async, [this, device_witness, work, copy] {
        if (gather_) p_.nonzero_indices(witness_);
        return witness_msms(device_witness, work, copy);
      });
    }
    // H over h (each msm_device call synchronizes its stream), then the
    // witness MSMs' results (from the side thread with overlap).
    MsmResults run(const Fr* w, const Fr* h) {
      if (gather_ && !overlap_) p_.nonzero_indices(witness_);
      MsmStreamStats h_stats;
      h_start_.record(stream_);
      G1 msm_h;
      if (!key_.h_shifted.empty() && key_.h_host.empty()) {
        GpuMsmConfig shifted = p_.msm_;
        shifted.window_bits = 0;  // the table's
        shifted.shifted_windows = key_.h_shift_rows;
        shifted.shifted_window_bits = key_.h_shift_bits;
        const std::size_t covered = key_.h_shift_points;
        msm_h = msm_device<Curve, G1>(p_.ctx_, key_.h_shifted.data(), h, covered, stream_, shifted);
        if (covered < key_.domain_size)  // a partial table: the rest of H plainly
          msm_h += msm_device<Curve, G1>(p_.ctx_, key_.h_points.data() + covered, h + covered,
                                         key_.domain_size - covered, stream_, p_.msm_);
      } else {
        msm_h = placed(span_of(key_.h_points), key_.h_host, h, key_.domain_size, stream_, copy_, &h_stats, nullptr);
      }
      done_.record(stream_);
      MsmResults m = overlap_ ? side_.get() : witness_msms(w, stream_, copy_);
      if (!overlap_) done_.record(stream_);
      done_.synchronize();
      m.h = msm_h;
      m.stats.chunks += h_stats.chunks;
      m.stats.streamed_bytes += h_stats.streamed_bytes;
      m.stats.skipped_bytes += h_stats.skipped_bytes;
      return m;
    }
    // From h to the last MSM's end, whichever stream ran it; H and the
    // witness MSMs on their own.
    void report(const Event& transformed, DeviceProveTimings& t) const {
      t.msm_ms = std::max(Event::elapsed_ms(transformed, done_), Event::elapsed_ms(transformed, side_done_));
      t.h_msm_ms = Event::elapsed_ms(h_start_, overlap_ ? done_ : side_start_);
      t.witness_msm_ms = Event::elapsed_ms(side_start_, side_done_);
      t.overlapped = overlap_;
    }

   private:
    template <class Buffer>
    static auto span_of(const Buffer& buffer) {
      return std::span<const std::remove_cvref_t<decltype(*buffer.data())>>(buffer.data(), buffer.size());
    }
    // A query's resident points from device memory, the rest (if any)
    // streamed from pinned host memory on a copy stream (msm_stream.h).
    template <class DeviceSpan, class HostSpan>
    auto placed(DeviceSpan device_span, HostSpan host_span, const Fr* scalars, std::size_t count, cudaStream_t work,
                cudaStream_t copy, MsmStreamStats* stats, const NonzeroGather<Fr>* gather) const {
      using Affine = typename HostSpan::value_type;
      using Group = std::conditional_t<std::is_same_v<Affine, typename Curve::G2Affine>, G2, G1>;
      const std::size_t resident = std::min(device_span.size(), count);
      return msm_placed<Curve, Group>(p_.ctx_, device_span.first(resident), host_span.first(count - resident),
                                      scalars, plan_.msm_chunk, work, copy, stats, gather, p_.msm_);
    }
    // The gather of a query whose scalars are the witness from
    // scalar_offset on, streamed after its resident prefix (null: none).
    const NonzeroGather<Fr>* gather_for(const Fr* w, std::size_t scalar_offset, std::size_t resident,
                                        std::size_t count, NonzeroGather<Fr>& g) const {
      if (!gather_ || !p_.nonzero_.size() || resident >= count) return nullptr;
      const auto* mapped_index = static_cast<const std::uint32_t*>(msm_stream_detail::mapped(p_.nonzero_.data()));
      if (!mapped_index) return nullptr;
      const std::uint32_t* begin = p_.nonzero_.data();
      const std::uint32_t* end = begin + p_.nonzero_count_;
      const std::uint32_t* lo = std::lower_bound(begin, end, std::uint64_t(scalar_offset + resident));
      const std::uint32_t* hi = std::lower_bound(lo, end, std::uint64_t(scalar_offset + count));
      g.index = mapped_index + (lo - begin);
      g.count = std::size_t(hi - lo);
      g.index_offset = scalar_offset + resident;
      g.witness = w;
      return &g;
    }
    // The four MSMs over the witness (A, B1, B2, C) on work and copy; at
    // once on four streams for a small resident key (the file comment).
    MsmResults witness_msms(const Fr* w, cudaStream_t work, cudaStream_t copy) {
      p_.ctx_.activate();
      const std::size_t v = key_.num_vars, c_offset = key_.num_public + 1, num_private = v - c_offset;
      side_start_.record(work);
      if (concurrent_) {
        MsmResults out = concurrent_witness_msms(w, work);
        side_done_.record(work);
        return out;
      }
      MsmResults out;
      NonzeroGather<Fr> ga, gb1, gb2, gc;
      out.a = placed(span_of(key_.a_points), key_.a_host, w, v, work, copy, &out.stats,
                     gather_for(w, 0, key_.a_points.size(), v, ga));
      out.b1 = placed(span_of(key_.b1_points), key_.b1_host, w, v, work, copy, &out.stats,
                      gather_for(w, 0, key_.b1_points.size(), v, gb1));
      out.b2 = placed(span_of(key_.b2_points), key_.b2_host, w, v, work, copy, &out.stats,
                      gather_for(w, 0, key_.b2_points.size(), v, gb2));
      out.c = placed(span_of(key_.c_points), key_.c_host, w + c_offset, num_private, work, copy, &out.stats,
                     gather_for(w, c_offset, key_.c_points.size(), num_private, gc));
      side_done_.record(work);
      return out;
    }
    // A, B1 and C each on a stream and host thread of its own, B2 (G2, the
    // longest) on work; work waits for the other three before it returns.
    MsmResults concurrent_witness_msms(const Fr* w, cudaStream_t work) {
      if (!p_.witness_streams_) p_.witness_streams_ = std::make_unique<WitnessStreams>();
      WitnessStreams& ws = *p_.witness_streams_;
      const std::size_t v = key_.num_vars, c_offset = key_.num_public + 1, num_private = v - c_offset;
      ws.start.record(work);
      for (const Stream* st : {&ws.a, &ws.b1, &ws.c}) ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(st->get(), ws.start.get(), 0));
      auto g1_msm = [&](const Stream& st, Event& done, const auto& points, const auto& shifted, const Fr* scalars,
                        std::size_t count) {
        return std::async(std::launch::async, [&, scalars, count] {
          p_.ctx_.activate();
          G1 r = query_msm<G1>(points, shifted, scalars, count, st.get());
          done.record(st.get());
          return r;
        });
      };
      // Joined on every path (a throwing MSM included) before ws is reused.
      std::future<G1> a = g1_msm(ws.a, ws.a_done, key_.a_points, key_.a_shifted, w, v);
      std::future<G1> b1 = g1_msm(ws.b1, ws.b1_done, key_.b1_points, key_.b1_shifted, w, v);
      std::future<G1> c = g1_msm(ws.c, ws.c_done, key_.c_points, key_.c_shifted, w + c_offset, num_private);
      MsmResults out;
      std::exception_ptr failure;
      try {
        out.b2 = query_msm<G2>(key_.b2_points, key_.b2_shifted, w, v, work);
      } catch (...) {
        failure = std::current_exception();
      }
      auto take = [&](std::future<G1>& f, G1& into) {
        try {
          into = f.get();
        } catch (...) {
          if (!failure) failure = std::current_exception();
        }
      };
      take(a, out.a);
      take(b1, out.b1);
      take(c, out.c);
      if (failure) std::rethrow_exception(failure);
      out.stats.chunks += 4;  // one msm_device() call each
      for (const Event* e : {&ws.a_done, &ws.b1_done, &ws.c_done}) ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(work, e->get(), 0));
      return out;
    }

    // One resident query's MSM, over its shifted table when the key has one
    // (the table fixes c: the engine's window bits are the table's).
    template <class Group, class Points, class Table>
    Group query_msm(const Points& points, const Table& shifted, const Fr* scalars, std::size_t count,
                    cudaStream_t stream) const {
      if (shifted.table.empty()) return msm_device<Curve, Group>(p_.ctx_, points.data(), scalars, count, stream, p_.msm_);
      GpuMsmConfig config = p_.msm_;
      config.window_bits = 0;
      return msm_device<Curve, Group>(p_.ctx_, shifted.table.data(), scalars, count, stream, shifted.apply(config));
    }

    DeviceProver& p_;
    const DeviceProvingKey<Curve>& key_;
    const MemoryPlan& plan_;
    std::span<const Fr> witness_;  // the host witness (the gather's index)
    cudaStream_t stream_, copy_;
    const bool gather_, overlap_, concurrent_;
    std::future<MsmResults> side_;
    Event h_start_, done_, side_start_, side_done_;
  };

  // After the device work, the first unsatisfied row the SpMV launches
  // starting at chunk_rows reported (unsatisfied_row_, one word each) as
  // UnsatisfiedConstraint; nothing when all held.
  void raise_unsatisfied(const std::vector<std::uint32_t>& chunk_rows) const {
    std::uint64_t first = ~std::uint64_t(0);
    for (std::size_t k = 0; k < chunk_rows.size(); ++k)
      if (unsatisfied_row_[k] != 0xffffffffu)
        first = std::min<std::uint64_t>(first, chunk_rows[k] + std::uint64_t(unsatisfied_row_[k]));
    if (first != ~std::uint64_t(0)) throw UnsatisfiedConstraint(static_cast<std::uint32_t>(first));
  }

  // Stage 1: the witness and the key and PCE against each other (ProveError
  // for a bad witness, std::invalid_argument for a key and PCE that do not
  // match).
  static void check_inputs(const DeviceProvingKey<Curve>& key, const DevicePce<Fr>& pce, std::span<const Fr> witness) {
    const std::size_t n = key.domain_size;
    if (witness.size() != key.num_vars)
      throw ProveError("witness has " + std::to_string(witness.size()) + " values but the circuit has " +
                       std::to_string(key.num_vars) + " signals");
    if (!witness[0].is_one()) throw ProveError("witness[0] must be 1 (the constant signal)");
    if (pce.num_rows() > n)
      throw std::invalid_argument("PCE has " + std::to_string(pce.num_rows()) + " rows, more than the domain size " +
                                  std::to_string(n));
    if (pce.num_cols() != key.num_vars)
      throw std::invalid_argument("PCE has " + std::to_string(pce.num_cols()) + " columns but the key has " +
                                  std::to_string(key.num_vars) + " signals");
    if (key.h_size() < n || key.a_size() != key.num_vars || key.b1_size() != key.num_vars ||
        key.b2_size() != key.num_vars || key.c_size() != key.num_vars - key.num_public - 1)
      throw std::invalid_argument("device proving key: query sizes do not match num_vars " +
                                  std::to_string(key.num_vars) + ", num_public " + std::to_string(key.num_public) +
                                  " and domain size " + std::to_string(n));
    if (n > (std::size_t(1) << GpuNtt<Fr>::kMaxLogN))
      throw std::invalid_argument("domain size " + std::to_string(n) + " exceeds the GPU NTT's 2^" +
                                  std::to_string(GpuNtt<Fr>::kMaxLogN));

  }

  // The SpMV of a PCE in host memory by DMA instead of the kernels' reads
  // over PCIe: rows in ranges whose slices of A, B (and C when checking)
  // fill one of `slots` transfer slots of the pipeline, copied on
  // copy_stream while the previous range's products run on stream (the
  // kernels see each slice through views rebased to its first row). The
  // slots are then the pipeline's to fill (MsmPipeline::lend_slots). Each
  // range has its own unsatisfied-row word (first_unsatisfied is sized
  // here); returns the ranges' first rows, to turn those words into rows,
  // and what was moved, or no rows (nothing queued) when one row's slices
  // exceed a slot.
  struct StreamedSpmv {
    std::vector<std::uint32_t> starts;
    std::size_t bytes = 0;  // of the PCE, by DMA
    bool packed = false;    // row offsets packed (PackedCsrView)
  };
  StreamedSpmv spmv_streamed(const DevicePce<Fr>& pce, MsmPipeline<Curve>& pipeline, int slots,
                                           bool check, std::size_t n, const Fr* witness, Fr* out_a, Fr* out_b,
                                           Fr* out_ab, DeviceBuffer<std::uint32_t>& first_unsatisfied,
                                           cudaStream_t stream, cudaStream_t copy_stream) {
    const std::size_t slot_bytes = pipeline.slot_bytes();
    const std::size_t rows = pce.num_rows();
    std::vector<const DeviceCsr<Fr>*> matrices = {&pce.a(), &pce.b()};
    if (check) matrices.push_back(&pce.c());
    // Packed row offsets (4 bytes a row) when every matrix has them; ranges
    // then start on a block of kPackedRowBlock rows. Where one block (with
    // the tables of distinct coefficients) does not fit a slot, the offsets
    // as stored.
    bool packed = packed_spmv_;
    for (const DeviceCsr<Fr>* m : matrices) packed = packed && m->packed_counts.size() == rows;
    auto align = [](std::size_t x) { return (x + 15) & ~std::size_t(15); };
    auto bytes_of = [&](std::size_t r0, std::size_t r1) {
      std::size_t total = 0;
      for (const DeviceCsr<Fr>* m : matrices) {
        const auto& h = m->host_arrays;
        const std::size_t generals = h.general_offsets[r1] - h.general_offsets[r0];
        if (packed)
          total += align((r1 - r0) * sizeof(std::uint32_t)) +
                   align(2 * ((r1 - r0 + kPackedRowBlock - 1) / kPackedRowBlock) * sizeof(std::uint64_t));
        else
          total += 2 * align((r1 - r0 + 1) * sizeof(std::uint64_t));
        total += align((h.row_offsets[r1] - h.row_offsets[r0]) * sizeof(std::uint32_t));
        if (packed && m->value_index.size())  // indices and the table of distinct values
          total += align(generals * sizeof(std::uint16_t)) + align(m->value_table.size() * sizeof(Fr));
        else
          total += align(generals * sizeof(Fr));
      }
      return total;
    };
    // Ranges: the most rows (whole blocks when packed) whose slices fit a
    // slot (binary search over the range's end in steps); empty when a
    // single step does not fit.
    auto plan_ranges = [&] {
      const std::size_t step = packed ? kPackedRowBlock : 1;
      std::vector<std::uint32_t> out;
      for (std::size_t r0 = 0; r0 < rows;) {
        auto end_of = [&](std::size_t steps) { return std::min(rows, r0 + steps * step); };
        std::size_t lo = 1, hi = (rows - r0 + step - 1) / step;
        if (bytes_of(r0, end_of(lo)) > slot_bytes) return std::vector<std::uint32_t>();
        while (lo < hi) {
          const std::size_t mid = lo + (hi - lo + 1) / 2;
          if (bytes_of(r0, end_of(mid)) <= slot_bytes) lo = mid;
          else hi = mid - 1;
        }
        out.push_back(static_cast<std::uint32_t>(r0));
        r0 = end_of(lo);
      }
      return out;
    };
    std::vector<std::uint32_t> starts = plan_ranges();
    if (starts.empty() && packed && rows > 0) {
      packed = false;
      starts = plan_ranges();
    }
    if (starts.empty() && rows > 0) return {};  // a row larger than a slot: the caller reads over PCIe
    StreamedSpmv out;
    out.packed = packed;
    const std::vector<std::uint8_t*> buffers = pipeline.lend_slots(slots);
    const std::size_t ranges = std::max<std::size_t>(starts.size(), 1);
    first_unsatisfied = DeviceBuffer<std::uint32_t>(ranges, stream);
    ZKFARM_CUDA_CHECK(cudaMemsetAsync(first_unsatisfied.data(), 0xff, ranges * sizeof(std::uint32_t), stream));
    Event ready;
    ready.record(stream);  // the slots' allocation, the witness upload
    ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, ready.get(), 0));
    std::vector<Event> copied(buffers.size()), consumed(buffers.size());
    for (std::size_t k = 0; k < starts.size(); ++k) {
      const std::size_t s = k % buffers.size();
      const std::size_t r0 = starts[k], r1 = k + 1 < starts.size() ? starts[k + 1] : rows;
      if (k >= buffers.size()) ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, consumed[s].get(), 0));
      std::uint8_t* at = buffers[s];
      auto put = [&](const void* host, std::size_t bytes) {
        std::uint8_t* where = at;
        if (bytes) ZKFARM_CUDA_CHECK(cudaMemcpyAsync(where, host, bytes, cudaMemcpyHostToDevice, copy_stream));
        at += align(bytes);
        out.bytes += bytes;
        return where;
      };
      std::vector<DeviceCsrView<Fr>> views;
      std::vector<PackedCsrView<Fr>> packed_views;
      for (const DeviceCsr<Fr>* m : matrices) {
        const auto& h = m->host_arrays;
        const std::uint64_t first_col = h.row_offsets[r0], first_value = h.general_offsets[r0];
        DeviceCsrView<Fr> v;
        PackedCsrView<Fr> pv;
        if (packed) {
          pv.counts = reinterpret_cast<const std::uint32_t*>(
              put(m->packed_counts.data() + r0, (r1 - r0) * sizeof(std::uint32_t)));
          pv.block_starts = reinterpret_cast<const std::uint64_t*>(
              put(m->block_starts.data() + 2 * (r0 / kPackedRowBlock),
                  2 * ((r1 - r0 + kPackedRowBlock - 1) / kPackedRowBlock) * sizeof(std::uint64_t)));
        } else {
          v.row_offsets = reinterpret_cast<const std::uint64_t*>(
              put(h.row_offsets + r0, (r1 - r0 + 1) * sizeof(std::uint64_t)));
          v.general_offsets = reinterpret_cast<const std::uint64_t*>(
              put(h.general_offsets + r0, (r1 - r0 + 1) * sizeof(std::uint64_t)));
        }
        // Rebased: the kernels index cols and values by the absolute offsets
        // the row offsets (block starts) hold.
        v.cols = reinterpret_cast<const std::uint32_t*>(
                     put(h.cols + first_col, (h.row_offsets[r1] - first_col) * sizeof(std::uint32_t))) -
                 first_col;
        if (packed && m->value_index.size()) {
          pv.value_index = reinterpret_cast<const std::uint16_t*>(
                               put(m->value_index.data() + first_value,
                                   (h.general_offsets[r1] - first_value) * sizeof(std::uint16_t))) -
                           first_value;
          pv.value_table =
              reinterpret_cast<const Fr*>(put(m->value_table.data(), m->value_table.size() * sizeof(Fr)));
        } else {
          v.values = reinterpret_cast<const Fr*>(put(h.values + first_value, (h.general_offsets[r1] - first_value) *
                                                                                  sizeof(Fr))) -
                     first_value;
        }
        pv.cols = v.cols;
        pv.values = v.values;
        views.push_back(v);
        packed_views.push_back(pv);
      }
      copied[s].record(copy_stream);
      ZKFARM_CUDA_CHECK(cudaStreamWaitEvent(stream, copied[s].get(), 0));
      const std::uint32_t count = static_cast<std::uint32_t>(r1 - r0);
      if (packed)
        launch_pce_products_packed<Fr>(packed_views[0], packed_views[1], check ? &packed_views[2] : nullptr, count,
                                       witness, out_a + r0, out_b + r0, out_ab ? out_ab + r0 : nullptr,
                                       first_unsatisfied.data() + k, stream);
      else
        launch_pce_products<Fr>(views[0], views[1], check ? &views[2] : nullptr, count, count, witness, out_a + r0,
                                out_b + r0, out_ab ? out_ab + r0 : nullptr, first_unsatisfied.data() + k, stream);
      consumed[s].record(stream);
    }
    if (n > rows)  // the domain's padding rows: zero
      launch_pce_products<Fr>(DeviceCsrView<Fr>{}, DeviceCsrView<Fr>{}, nullptr, 0,
                              static_cast<std::uint32_t>(n - rows), witness, out_a + rows, out_b + rows,
                              out_ab ? out_ab + rows : nullptr, first_unsatisfied.data(), stream);
    Event done;
    done.record(stream);
    pipeline.return_slots(done);
    if (starts.empty()) starts.push_back(0);
    out.starts = std::move(starts);
    return out;
  }

  // Host compaction of the streamed witness chunks (msm_stream.h), when
  // the process has cores to spare for it: of the CPU threads it may use
  // (the cores, or ZKFARM_THREADS when lower: kernels/parallel.h), 4 or
  // more, all but two copy. kCompactionStaging page-locked buffers of one
  // transfer slot, kept between proofs.
  static constexpr std::size_t kCompactionStaging = 3;
  std::optional<HostCompaction<Fr>> host_compaction(const MemoryPlan& plan, std::span<const Fr> witness,
                                                     std::size_t c_offset) {
    const unsigned cores = static_cast<unsigned>(
        std::min<std::size_t>(std::max(std::thread::hardware_concurrency(), 1u), parallel_threads()));
    if (cores < 4) return std::nullopt;
    const std::size_t bytes = MsmPipeline<Curve>::slot_bytes_for(plan.msm_chunk);
    HostCompaction<Fr> out;
    out.witness = witness;
    out.c_offset = c_offset;
    out.share = plan.host_compaction;
    out.wait_for_cpu = plan.host_compaction_wait;
    out.threads = std::min(cores - 2, 16u);
    try {
      for (std::size_t k = 0; k < kCompactionStaging; ++k) {
        if (compaction_staging_.size() <= k) compaction_staging_.emplace_back();
        if (compaction_staging_[k].size() < bytes) {
          compaction_staging_[k] = PinnedBuffer<std::uint8_t>();  // the old one first: host memory
          compaction_staging_[k] = PinnedBuffer<std::uint8_t>(bytes);
        }
        out.staging.push_back(compaction_staging_[k].data());
      }
    } catch (const std::exception&) {
      // No page-locked memory to spare: every chunk is copied whole (the
      // proof is the same).
      compaction_staging_.clear();
      return std::nullopt;
    }
    return out;
  }

  // Copies witness to device memory on stream. Pinned (or registered) host
  // memory is copied directly; pageable memory goes through two pinned
  // chunks, alternating, so that the memcpy into one (on all cores) overlaps
  // the DMA out of the other. Returns once the copies are queued; a staging buffer is
  // refilled only after the event recorded behind its last DMA.
  void upload_witness(std::span<const Fr> witness, DeviceBuffer<Fr>& device, cudaStream_t stream) {
    cudaPointerAttributes attributes{};
    const cudaError_t status = cudaPointerGetAttributes(&attributes, witness.data());
    if (status == cudaSuccess && attributes.type == cudaMemoryTypeHost) {
      device.upload(witness.data(), witness.size(), stream);
      return;
    }
    if (status != cudaSuccess) (void)cudaGetLastError();
    const std::size_t chunk = std::min(staging_chunk_, witness.size());
    for (int slot = 0; slot < 2; ++slot) {
      if (staging_[slot].size() < chunk) {
        staged_[slot].synchronize();  // no DMA may still read the old buffer
        staging_[slot] = PinnedBuffer<Fr>(chunk);
      }
    }
    for (std::size_t offset = 0, k = 0; offset < witness.size(); offset += chunk, ++k) {
      const int slot = int(k % 2);
      const std::size_t count = std::min(chunk, witness.size() - offset);
      staged_[slot].synchronize();  // the DMA that last read this buffer (no-op if none)
      Fr* staging = staging_[slot].data();
      const Fr* source = witness.data() + offset;
      parallel_for(count, [&](std::size_t begin, std::size_t end) {
        std::memcpy(static_cast<void*>(staging + begin), source + begin, (end - begin) * sizeof(Fr));
      });
      device.upload(staging, count, stream, offset);
      staged_[slot].record(stream);
    }
  }

  // The sorted indices of witness's non-zero entries into nonzero_ (page-
  // locked, read by the gather kernels over PCIe), on all cores: blocks
  // counted, then written at their offsets.
  void nonzero_indices(std::span<const Fr> witness) {
    if (nonzero_.size() < witness.size()) nonzero_ = PinnedBuffer<std::uint32_t>(witness.size());
    const std::size_t blocks = std::max<std::size_t>(1, std::min<std::size_t>(witness.size() / 4096 + 1, 1024));
    std::vector<std::size_t> offsets(blocks + 1, 0);
    auto range = [&](std::size_t k) {
      return std::pair<std::size_t, std::size_t>(witness.size() * k / blocks, witness.size() * (k + 1) / blocks);
    };
    parallel_for(blocks, [&](std::size_t first, std::size_t last) {
      for (std::size_t k = first; k < last; ++k) {
        const auto [lo, hi] = range(k);
        std::size_t count = 0;
        for (std::size_t i = lo; i < hi; ++i) count += !witness[i].is_zero();
        offsets[k + 1] = count;
      }
    });
    for (std::size_t k = 0; k < blocks; ++k) offsets[k + 1] += offsets[k];
    std::uint32_t* out = nonzero_.data();
    parallel_for(blocks, [&](std::size_t first, std::size_t last) {
      for (std::size_t k = first; k < last; ++k) {
        const auto [lo, hi] = range(k);
        std::size_t at = offsets[k];
        for (std::size_t i = lo; i < hi; ++i)
          if (!witness[i].is_zero()) out[at++] = static_cast<std::uint32_t>(i);
      }
    });
    nonzero_count_ = offsets[blocks];
  }

  // The witness MSMs' work and copy streams (overlap), made on first use;
  // the proof's own (own_streams).
  struct SideStreams {
    Stream work, copy;
  };
  // The streams of the three witness MSMs that run beside the fourth
  // (concurrent_witness_msms), made on first use.
  struct WitnessStreams {
    Stream a, b1, c;
    Event start, a_done, b1_done, c_done;
  };

  const DeviceContext& ctx_;
  GpuNtt<Fr> ntt_;
  GpuMsmConfig msm_;
  std::size_t staging_chunk_;
  bool packed_spmv_ = true;
  PinnedBuffer<Fr> staging_[2];
  std::vector<PinnedBuffer<std::uint8_t>> compaction_staging_;
  Event staged_[2];
  std::unique_ptr<SideStreams> side_streams_;
  std::unique_ptr<SideStreams> own_streams_;
  std::unique_ptr<WitnessStreams> witness_streams_;
  PinnedBuffer<std::uint32_t> nonzero_;
  std::size_t nonzero_count_ = 0;
  PinnedBuffer<std::uint32_t> unsatisfied_row_;
};

// The fewest points a partial shifted H table covers (shift_h_bases): below
// that its gain (the table's ~13% on the points it covers, BENCHMARKS.md)
// is under a millisecond and not worth the build.
inline constexpr std::size_t kMinPartialShiftPoints = std::size_t(1) << 22;

// The device memory a shifted H table must leave free for the proofs
// (shift_h_bases' reserve_bytes): twice a proof's working memory and a tenth
// of the card. With only the 8 GiB the benchmark once kept, a 40M-constraint
// key's partial table took the memory its next proof needed (H100,
// BENCHMARKS.md "A partial shifted H table").
inline std::size_t shifted_table_reserve(std::size_t working_bytes, std::size_t device_bytes) {
  return 2 * working_bytes + device_bytes / 10;
}

// The device memory a shifted table may take (shift_h_bases,
// shift_witness_bases): what is free beyond reserve_bytes, and under a
// budget (non-zero) no more than budget - planned_bytes.
inline std::size_t shifted_table_room(std::size_t reserve_bytes, std::size_t budget, std::size_t planned_bytes) {
  const std::size_t free_bytes = device_memory_available();
  std::size_t room = free_bytes > reserve_bytes ? free_bytes - reserve_bytes : 0;
  if (budget != 0) room = std::min(room, budget > planned_bytes ? budget - planned_bytes : std::size_t(0));
  return room;
}

// Builds key.h_shifted (precomputed shifted H bases, see DeviceProvingKey)
// when the whole H query is resident and the device has room: the table's
// bytes plus reserve_bytes (a proof's working memory, and any margin the
// caller wants) free now, and, under a budget (non-zero), planned_bytes +
// the table within it. When the table of every point does not fit, a
// partial one: the first points of H, as many as the room holds (a
// multiple of 2^16, the rows and c of that many points' layout), if that
// is at least min_points; the H MSM then adds the rest of the points
// plainly. max_points (0: all) caps the points covered. Returns whether a
// table was built: it is an option, so a device that refuses its memory
// after all (another process took it since the check) leaves the key as it
// was. Measured on the H200 (BENCHMARKS.md): 12 rows at c = 22 for 2^24
// points, 18 GiB for BLS12-381 G1, built in 2.8 s; that MSM 118.4 -> 103.5
// ms, a partition of 16M constraints 223.9 -> 211.7 ms. window_bits: the
// table's c (0: the cost model's, as above; DeviceConfig::msm_window_bits
// otherwise).
template <class Curve>
bool shift_h_bases(const DeviceContext& ctx, DeviceProvingKey<Curve>& key, std::size_t reserve_bytes,
                   std::size_t budget, std::size_t planned_bytes, cudaStream_t stream, unsigned window_bits = 0,
                   std::size_t max_points = 0, std::size_t min_points = kMinPartialShiftPoints) {
  using G1 = typename Curve::G1;
  if (!key.h_host.empty() || key.h_points.size() < key.domain_size || key.domain_size == 0) return false;
  const std::size_t n = key.domain_size;
  std::size_t points = max_points == 0 ? n : std::min(max_points, n);
  ctx.activate();
  const std::size_t room = shifted_table_room(reserve_bytes, budget, planned_bytes);
  ShiftedLayout layout = shifted_layout<Curve, G1>(points, window_bits);
  if (layout.bytes > room) {
    // A partial table: fewer points, each costing its layout's rows. Fewer
    // points may choose a smaller c (more rows), so the layout is taken
    // again until it fits.
    constexpr std::size_t kStep = std::size_t(1) << 16;
    const std::size_t point_bytes = layout.bytes / points;
    points = std::min(points, room / point_bytes) / kStep * kStep;
    while (points >= min_points && points > 0) {
      layout = shifted_layout<Curve, G1>(points, window_bits);
      if (layout.bytes <= room) break;
      const std::size_t fewer = std::max(kStep, (layout.bytes - room) / (layout.bytes / points) / kStep * kStep);
      points = fewer < points ? points - fewer : 0;
    }
    if (points < min_points || points == 0) return false;
  }
  ShiftedBases<Curve, G1> table;
  try {
    table = shifted_bases<Curve, G1>(ctx, key.h_points.data(), points, stream, layout.window_bits, layout.windows);
  } catch (const DeviceOutOfMemory&) {
    return false;
  }
  key.h_shifted = std::move(table.table);
  key.h_shift_bits = table.window_bits;
  key.h_shift_rows = table.windows;
  key.h_shift_points = points;
  ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));  // proofs read it from other streams
  return true;
}

// The witness tables' window size. A witness MSM's scalars are mostly 0
// and 1 (handled apart); its dense rest, ~a tenth of the points, goes to
// one bucket set whose reduction is a chain of dependent additions, so at
// these sizes small sets win although each point then takes more rows.
// Measured on an H100 (BN254, kernels/cuda/NOTES.md run L2): a proof of
// 2^16 constraints with H's table 5.0-5.2 ms, with witness tables at c = 4
// / 6 / 8 / 10 / 16 (the cost model's c for all 2^16 points) 3.9 / 4.0-4.2
// / 4.3-4.4 / 4.8 / 5.7 ms, the tables 1312 / 882 / 656 / 533 / 328 MiB;
// through the farm (8 slots) c = 8 proved 234-253 partitions/s and c = 6
// 224-239 against 199-243 without. 8 is the smaller memory of the two best.
constexpr unsigned kWitnessTableBits = 8;
// B2's (G2): a G2 addition costs ~3 G1 ones, so its reduction's chain
// weighs more and a smaller set pays for its extra rows. One witness MSM of
// 2^16 G2 points (45% zeros, 45% ones) over a table at c = 10 / 8 / 6 / 5:
// 3.64 / 3.39 / 3.20 / 2.99 ms, against 1.01-1.18 ms for G1 at any of them;
// B2 is the longest of the four, which run at once. With the ones in the
// buckets (GpuMsmConfig::ones_in_buckets) the 2^16 proof went 3.9 -> 3.2-3.4
// ms with B2 at 5 (H100, NOTES.md run L3), for 156 MiB more (812 in all).
constexpr unsigned kWitnessTableBitsG2 = 5;

// Builds the shifted tables of the four witness queries (A, B1 and C on G1,
// B2 on G2; DeviceProvingKey::a_shifted and the others) for a circuit whose
// witness MSMs run at once (every query resident, at most
// DeviceProver::kConcurrentWitnessMsmVars signals), when all four fit in the
// free memory beside reserve_bytes and, under a budget (non-zero), within
// budget - planned_bytes. Such MSMs are bound by latency and launches: over
// a table each sorts and reduces one bucket set instead of one per window.
// All four or none: returns whether they were built (a device that refuses
// the memory after all leaves the key as it was). window_bits: the tables'
// c (0: kWitnessTableBits, kWitnessTableBitsG2 for B2).
template <class Curve>
bool shift_witness_bases(const DeviceContext& ctx, DeviceProvingKey<Curve>& key, std::size_t reserve_bytes,
                         std::size_t budget, std::size_t planned_bytes, cudaStream_t stream,
                         unsigned window_bits = 0) {
  using G1 = typename Curve::G1;
  using G2 = typename Curve::G2;
  const std::size_t v = key.num_vars, num_private = key.c_points.size();
  if (!DeviceProver<Curve>::concurrent_witness_msms_fit(key) || v == 0 || num_private == 0) return false;
  const unsigned g2_bits = window_bits == 0 ? kWitnessTableBitsG2 : window_bits;
  if (window_bits == 0) window_bits = kWitnessTableBits;
  ctx.activate();
  const std::size_t room = shifted_table_room(reserve_bytes, budget, planned_bytes);
  const std::size_t bytes = 2 * shifted_layout<Curve, G1>(v, window_bits).bytes +
                            shifted_layout<Curve, G1>(num_private, window_bits).bytes +
                            shifted_layout<Curve, G2>(v, g2_bits).bytes;
  if (bytes > room) return false;
  try {
    auto a = shifted_bases<Curve, G1>(ctx, key.a_points.data(), v, stream, window_bits);
    auto b1 = shifted_bases<Curve, G1>(ctx, key.b1_points.data(), v, stream, window_bits);
    auto c = shifted_bases<Curve, G1>(ctx, key.c_points.data(), num_private, stream, window_bits);
    auto b2 = shifted_bases<Curve, G2>(ctx, key.b2_points.data(), v, stream, g2_bits);
    key.a_shifted = std::move(a);
    key.b1_shifted = std::move(b1);
    key.c_shifted = std::move(c);
    key.b2_shifted = std::move(b2);
  } catch (const DeviceOutOfMemory&) {
    return false;
  }
  ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));  // proofs read them from other streams
  return true;
}

// One proof with a fresh DeviceProver (builds the NTT tables, ~1 MB upload):
// the interface of the CPU's groth16_prove on the device. Callers proving
// many times keep a DeviceProver instead.
template <class Curve>
Groth16Proof<Curve> device_prove(DeviceContext& ctx, const DeviceProvingKey<Curve>& key,
                                 const DevicePce<typename Curve::Fr>& pce, std::span<const typename Curve::Fr> witness,
                                 const ProveOptions<typename Curve::Fr>& options = {},
                                 DeviceProveTimings* timings = nullptr) {
  DeviceProver<Curve> prover(ctx);
  return prover.prove(key, pce, witness, options, timings);
}

}  // namespace zkfarm::cuda

#endif  // ZKFARM_KERNELS_CUDA_GROTH16_DEVICE_H_
