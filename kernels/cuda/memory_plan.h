// memory_plan.h -- where a circuit's proving state lives under a device
// memory budget: which points of each proving-key query stay resident on the
// device, which are streamed from page-locked host memory at every proof,
// and how many points one MSM call may take (its working set).
//
// Plain C++ (no CUDA): the worker plans before it uploads, and the plan is
// unit-tested on the CPU. The estimates below are upper bounds of what the
// device prover (groth16_device.h) and the MSM (msm.cuh) allocate; the
// device allocator enforces the budget itself (device_context.h), so an
// estimate that fell short would give DeviceOutOfMemory, never more memory.
//
// Device memory of one proof, by stage (Fr = 32 bytes, n = domain size,
// V = signals):
//   always            PCE (A, B; C when kept) + resident key points
//   SpMV and NTT      witness V Fr + a, b, c: 3 n Fr (with the witness
//                     released: witness + a + b for the SpMV, then the
//                     witness freed before c = a o b, so max(V + 2n, 3n))
//   MSMs              witness V Fr + h: n Fr + one MSM's working set for
//                     `chunk` points (kMsmBytesPerPoint each, plus its
//                     buckets, at most a third more) + when anything is
//                     streamed, the transfer ring (ring_slots slots of
//                     `chunk` G1 points) and the dense-point collection
//                     of msm_stream.h's MsmPipeline (collect_slots()).
//   overlap           the witness MSMs (A, B1, B2, C) run on their own
//                     streams beside the SpMV, the NTTs and the H MSM: one
//                     more MSM working set on top of the larger stage.
// The plan: if the whole key fits beside the larger stage with MSMs
// unsplit, everything is resident (no chunking: the fastest case), with
// the witness MSMs overlapped when their working set fits too (always
// without a budget). Otherwise MSMs run in chunks of the largest power of
// two up to kMaxChunk that fits with three transfer slots, the ring takes
// as many slots as then fit (up to kRingSlots), and what is left of the
// budget holds resident prefixes of the queries in the order A, B1, C, B2,
// H: the witness MSMs skip zeros and sum ones, so their time is mostly the
// transfer, while H (dense scalars) is compute-bound and hides its
// transfer best. The slots that fit beside the NTT stage are filled before
// the NTTs (prefetch_slots; with the PCE in host memory they first carry
// it to the SpMV). Streaming plans run the MSMs in one lane by default:
// measured on the H200 (BENCHMARKS.md, "Device memory budgets"), a second
// lane for the witness chunks slows the H chunks' bucket work more than
// its overlap saves.
#ifndef ZKFARM_KERNELS_CUDA_MEMORY_PLAN_H_
#define ZKFARM_KERNELS_CUDA_MEMORY_PLAN_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <limits>
#include <string>

#include "kernels/cuda/msm_layout.h"

namespace zkfarm::cuda {

// The sizes a plan needs (from the key and PCE; curve-independent).
struct ProofShape {
  std::uint64_t num_vars = 0;     // witness length, w[0] included
  std::uint64_t num_public = 0;   // public signals, w[0] excluded
  std::uint64_t domain_size = 0;  // n
  std::size_t fr_bytes = 32;
  std::size_t g1_bytes = 0;       // affine G1 point
  std::size_t g2_bytes = 0;       // affine G2 point
  std::size_t pce_bytes = 0;      // the PCE's device bytes
};

// The five queries, in the order the plan keeps them resident.
enum KeyQuery : int { kQueryA = 0, kQueryB1 = 1, kQueryC = 2, kQueryB2 = 3, kQueryH = 4 };
inline const char* key_query_name(int q) {
  static const char* const names[5] = {"A", "B1", "C", "B2", "H"};
  return names[q];
}

struct MemoryPlan {
  std::size_t budget = 0;                  // bytes planned for (0: no budget, all resident)
  std::array<std::uint64_t, 5> points{};   // per query (KeyQuery order)
  std::array<std::uint64_t, 5> resident{}; // leading points of each query on the device
  std::array<std::size_t, 5> point_bytes{};
  std::uint64_t msm_chunk = 0;             // points per streamed MSM call; 0 = nothing streamed
  bool pce_on_host = false;                // the PCE read by the SpMV from pinned host memory
  bool release_witness = false;            // the witness off the device during the NTTs
  bool overlap = false;                    // witness MSMs beside the NTTs and H (own streams)
  // Streamed MSMs (msm_stream.h's MsmPipeline): transfer slots of msm_chunk
  // G1 points' bytes, and how many of them fit beside the NTT stage (filled
  // before the NTTs).
  int ring_slots = 0;
  int prefetch_slots = 0;
  // 2 when the ring has 4 slots or more: the witness chunks in a lane of
  // their own beside the H chunks (MsmPipeline).
  int ring_lanes = 1;
  std::size_t pce_bytes = 0;
  std::size_t peak_bytes = 0;              // estimated device peak of a proof, resident state included
  // Streamed witness queries move only the bases of non-zero scalars,
  // gathered by the GPU from mapped host memory (msm_stream.h's
  // NonzeroGather), each query streamed on its own (msm_placed), instead of
  // through the ring. Off by default: on the H200 the gather reads host
  // memory at ~24 GB/s against the copy engines' ~55 GB/s, more than the
  // ~45% of zeros saves at PoRep scale; it won only on a 3M-constraint
  // partition under 1.5 GiB, before host compaction (BENCHMARKS.md,
  // "Device memory budgets").
  bool gather_nonzero = false;
  // Through the ring (one lane), the share of the streamed witness chunks
  // offered to host compaction (msm_stream.h's HostCompaction: the CPU
  // gathers the bases of the non-zero scalars, only those cross PCIe);
  // 0: every chunk copied whole. Needs 4 or more CPU cores.
  double host_compaction = 1.0;
  // Tests: every offered chunk waits for the CPU (HostCompaction::wait_for_cpu).
  bool host_compaction_wait = false;

  // The plan of a key uploaded without one (it has the device to itself):
  // everything resident, the witness MSMs beside the rest.
  static MemoryPlan unplanned() {
    MemoryPlan plan;
    plan.overlap = true;
    return plan;
  }

  std::size_t key_resident_bytes() const {
    std::size_t b = 0;
    for (int q = 0; q < 5; ++q) b += resident[q] * point_bytes[q];
    return b;
  }
  std::size_t resident_bytes() const { return key_resident_bytes() + (pce_on_host ? 0 : pce_bytes); }
  // Key bases copied to the device at every proof = page-locked host bytes
  // held for the key (the PCE's, when on the host, comes on top).
  std::size_t streamed_bytes() const {
    std::size_t b = 0;
    for (int q = 0; q < 5; ++q) b += (points[q] - resident[q]) * point_bytes[q];
    return b;
  }
  bool all_resident() const { return streamed_bytes() == 0 && !pce_on_host && !release_witness; }

  // One line for logs: "budget 24.0 GiB: resident 20.1 GiB (key 14.4, PCE
  // 5.7), streamed 57.0 GiB per proof (B2 62%, H 100%), MSM chunks 2^24".
  std::string summary() const {
    auto gib = [](std::size_t b) { return double(b) / double(std::size_t(1) << 30); };
    char budget_text[32] = "none";
    if (budget) std::snprintf(budget_text, sizeof budget_text, "%.2f GiB", gib(budget));
    char line[512];
    int at = std::snprintf(line, sizeof line,
                           "budget %s: resident %.2f GiB (key %.2f, PCE %.2f), streamed %.2f GiB of key per proof",
                           budget_text, gib(resident_bytes()), gib(key_resident_bytes()),
                           gib(pce_on_host ? 0 : pce_bytes), gib(streamed_bytes()));
    bool first = true;
    for (int q = 0; q < 5 && at < int(sizeof line); ++q) {
      if (points[q] == resident[q]) continue;
      at += std::snprintf(line + at, sizeof line - at, "%s%s %.0f%%", first ? " (" : ", ", key_query_name(q),
                          100.0 * double(points[q] - resident[q]) / double(points[q]));
      first = false;
    }
    if (!first && at < int(sizeof line)) at += std::snprintf(line + at, sizeof line - at, ")");
    if (pce_on_host && at < int(sizeof line))
      at += std::snprintf(line + at, sizeof line - at, ", PCE (%.2f GiB) read from host memory", gib(pce_bytes));
    if (release_witness && at < int(sizeof line))
      at += std::snprintf(line + at, sizeof line - at, ", witness off the device during the NTTs");
    if (overlap && at < int(sizeof line))
      at += std::snprintf(line + at, sizeof line - at, ", witness MSMs beside the NTTs");
    if (ring_slots && at < int(sizeof line))
      at += std::snprintf(line + at, sizeof line - at, ", %d transfer slots (%d filled before the NTTs)%s",
                          ring_slots, prefetch_slots, ring_lanes == 2 ? ", witness chunks in a lane of their own" : "");
    if (at < int(sizeof line)) {
      if (msm_chunk) {
        int log = 0;
        while ((std::uint64_t(1) << log) < msm_chunk) ++log;
        std::snprintf(line + at, sizeof line - at, ", streamed in chunks of 2^%d points, peak ~%.2f GiB", log,
                      gib(peak_bytes));
      } else {
        std::snprintf(line + at, sizeof line - at, ", peak ~%.2f GiB", gib(peak_bytes));
      }
    }
    return line;
  }
};

// Thrown when a circuit cannot be proved within the budget even with every
// query streamed; what() says how much it needs.
class BudgetTooSmall : public std::runtime_error {
 public:
  BudgetTooSmall(const std::string& what, std::size_t needed) : std::runtime_error(what), needed_(needed) {}
  std::size_t needed() const { return needed_; }

 private:
  std::size_t needed_;
};

// Device bytes of one MSM's working set per point (msm.cuh: indices and
// flags, 16 bytes per point and window for the digits and their sorted
// copy, sort scratch), with the window count the MSM's own cost model picks
// for that many points (msm_layout.h's choose_layout, scalar_bits-bit
// scalars, base field of fq_limbs 32-bit limbs: c = 20, 13 windows at 2^24),
// and 15% on top for the buckets (measured: the PoRep partition's unsplit
// H MSM over 2^27 points used ~26 GiB beside the rest; this gives 31 GiB).
inline std::size_t msm_working_bytes(std::uint64_t points, unsigned scalar_bits = 255, int fq_limbs = 12) {
  const msm_kernels::Layout layout = msm_kernels::choose_layout(
      std::max<std::uint64_t>(points, 1), scalar_bits, 0, msm_kernels::sort_cost(fq_limbs, 1), 0,
      std::numeric_limits<std::uint64_t>::max());
  const std::size_t per_point = 16 * std::size_t(layout.windows) + 24;
  return std::size_t(points) * per_point / 20 * 23;
}
// Slack for the NTT tables, CUB scratch and allocator rounding.
constexpr std::size_t kPlanSlackBytes = std::size_t(256) << 20;
// Transfer slots of a streaming plan (MsmPipeline): the copy engine runs up
// to kRingSlots - 1 chunks ahead of the kernels, enough to keep it busy
// through one H chunk's bucket work (~4 chunk transfers at 2^24 points).
constexpr int kRingSlots = 6;
// Slots' worth of room for the dense points MsmPipeline collects from the
// witness chunks (a collection is one slot of bases and their scalars, at
// most half a slot more) and their classification buffers: one collection
// with one lane, two (one fills while the other is summed) with two.
inline int collect_slots(int lanes) { return lanes >= 2 ? 4 : 2; }
// Largest and smallest MSM chunk a budget plan uses (2^24: larger chunks
// gain little per point -- BLS12-381 G1 2^24 in 119.6 ms, 2^26 in 427.6 --
// and their transfer buffers and working set take room from resident
// points; 2^16: below it the per-call overhead dominates).
constexpr std::uint64_t kMaxChunk = std::uint64_t(1) << 24;
constexpr std::uint64_t kMinChunk = std::uint64_t(1) << 16;

// The plan for shape under budget bytes (0 = no budget: everything
// resident, unsplit). max_chunk: the largest MSM chunk (tests force small
// ones); max_lanes: 2 lets the streamed MSMs take two lanes where they fit
// (MsmPipeline; measured slower on the H200, so not the default: see
// BENCHMARKS.md, "Device memory budgets"). Throws BudgetTooSmall naming the bytes needed.
inline MemoryPlan plan_memory(const ProofShape& shape, std::size_t budget, std::uint64_t max_chunk = kMaxChunk,
                              int max_lanes = 1) {
  MemoryPlan plan;
  plan.budget = budget;
  plan.pce_bytes = shape.pce_bytes;
  const std::uint64_t v = shape.num_vars, n = shape.domain_size;
  plan.points = {v, v, v - shape.num_public - 1, v, n};
  plan.point_bytes = {shape.g1_bytes, shape.g1_bytes, shape.g1_bytes, shape.g2_bytes, shape.g1_bytes};
  std::size_t key_bytes = 0;
  std::uint64_t largest = 0;
  for (int q = 0; q < 5; ++q) {
    key_bytes += plan.points[q] * plan.point_bytes[q];
    largest = std::max(largest, plan.points[q]);
  }
  const std::size_t fr = shape.fr_bytes;
  // The MSMs' scalars (at most fr_bytes * 8 - 1 bits) and base field (an
  // affine G1 point is two elements of 32-bit limbs), for their windows.
  const unsigned scalar_bits = unsigned(fr * 8 - 1);
  const int fq_limbs = std::max(1, int(shape.g1_bytes / 8));
  auto msm_working_bytes = [&](std::uint64_t points) {
    return cuda::msm_working_bytes(points, scalar_bits, fq_limbs);
  };
  const std::size_t ntt_stage = fr * (v + 3 * n) + kPlanSlackBytes;
  const std::size_t msm_stage_base = fr * (v + n) + kPlanSlackBytes;
  const std::size_t widest = std::max(shape.g1_bytes, shape.g2_bytes);
  // The ring of kRingSlots slots of `chunk` G1 points (MsmPipeline), or,
  // with the zero-skipping gather (msm_placed), two transfer buffers of
  // `chunk` bases of `point` bytes and their scalars: room for either.
  auto transfer = [&](std::uint64_t chunk, std::size_t point, int slots, int lanes = 1) {
    return std::max<std::size_t>(std::size_t(slots + collect_slots(lanes)) * chunk * shape.g1_bytes,
                                 2 * chunk * (point + fr));
  };
  auto msm_stage = [&](std::uint64_t chunk, bool streaming) {
    return msm_stage_base + (streaming ? transfer(chunk, widest, 2) : 0) + msm_working_bytes(chunk);
  };
  // The witness MSMs beside the rest: one MSM's working set over at most
  // `points` points (+ its transfer buffers when streaming).
  auto side = [&](std::uint64_t points, bool streaming) {
    return msm_working_bytes(points) + (streaming ? transfer(points, widest, 2) : 0);
  };
  const std::size_t resident_base = shape.pce_bytes + key_bytes + std::max(ntt_stage, msm_stage(largest, false));
  const std::size_t resident_overlap = resident_base + side(v, false);
  if (budget == 0 || resident_overlap <= budget) {
    plan.resident = plan.points;
    plan.overlap = true;
    plan.peak_bytes = resident_overlap;
    return plan;
  }
  const std::size_t all_resident = resident_base;
  if (all_resident <= budget) {
    plan.resident = plan.points;
    plan.peak_bytes = all_resident;
    return plan;
  }
  // Smallest footprint: every query streamed in the smallest chunks.
  std::uint64_t largest_pow2 = 1;
  while (largest_pow2 < largest) largest_pow2 *= 2;
  const std::uint64_t min_chunk = std::max<std::uint64_t>(1, std::min({kMinChunk, largest_pow2, max_chunk}));
  // The modes, fastest first: the PCE resident or read from pinned host
  // memory by the SpMV kernels (each proof then moves it over PCIe), the
  // witness kept on the device through the NTTs or released and uploaded
  // again for the MSMs (one more witness upload per proof). (Mode::overlap
  // is there for measurements: no mode listed uses it, see above.)
  const std::size_t ntt_released = fr * std::max(v + 2 * n, 3 * n) + kPlanSlackBytes;
  struct Mode {
    bool pce_on_host, release_witness, overlap;
  };
  const Mode modes[4] = {{false, false, false}, {false, true, false}, {true, false, false}, {true, true, false}};
  auto stage_of = [&](const Mode& m, std::uint64_t chunk, std::size_t point, int slots = 2, int lanes = 1) {
    const std::size_t msm = msm_stage_base + transfer(chunk, point, slots, lanes) + msm_working_bytes(chunk);
    return std::max(m.release_witness ? ntt_released : ntt_stage, msm) + (m.overlap ? side(chunk, true) : 0);
  };
  auto fixed_need = [&](const Mode& m, std::uint64_t chunk) {
    return (m.pce_on_host ? 0 : shape.pce_bytes) + stage_of(m, chunk, widest);
  };
  const Mode* mode = nullptr;
  for (const Mode& m : modes)
    if (fixed_need(m, min_chunk) <= budget) {
      mode = &m;
      break;
    }
  auto gib = [](std::size_t b) {
    char s[32];
    std::snprintf(s, sizeof s, "%.2f GiB", double(b) / double(std::size_t(1) << 30));
    return std::string(s);
  };
  if (!mode) {
    // The least budget that proves it: streaming everything, or, for a
    // circuit whose key is smaller than the streaming machinery, keeping
    // everything resident.
    const std::size_t streaming = fixed_need(modes[3], min_chunk);
    const std::size_t needed = std::min(streaming, all_resident);
    throw BudgetTooSmall("the circuit needs at least " + gib(needed) + " (" + std::to_string(needed) +
                             " bytes) of device memory" +
                             (needed == all_resident ? std::string(" with everything resident; ")
                                                     : std::string(" with its whole proving key and PCE in host "
                                                                   "memory (NTT vectors ") +
                                                           gib(ntt_released) + "); ") +
                             "the device memory budget is " + gib(budget) + " (" + std::to_string(budget) +
                             " bytes); all resident it would need " + gib(all_resident) +
                             ", streaming at least " + gib(streaming),
                         needed);
  }
  plan.pce_on_host = mode->pce_on_host;
  plan.release_witness = mode->release_witness;
  plan.overlap = mode->overlap;
  const std::size_t device_pce = mode->pce_on_host ? 0 : shape.pce_bytes;
  const std::uint64_t first_chunk = min_chunk;
  // The transfer buffers hold G1 points unless B2 (G2) is streamed too:
  // plan with G1 buffers first, again with G2 ones if B2 did not fit.
  std::size_t stage = 0;
  // The largest chunk that fits with three transfer slots (two where even
  // the smallest chunk does not fit three), then as many slots as fit
  // (kRingSlots at most): larger chunks cost less per point, and three
  // slots already keep one copy running ahead of the kernels. Two lanes
  // (max_lanes 2; MsmPipeline: the witness chunks beside the H chunks) need
  // four slots and a second collection; they are taken when their chunk is
  // at least half the one-lane chunk (the H chunks' bucket work grows per
  // point as chunks shrink, ~15% from 2^24 to 2^23 points on the H200).
  const int min_slots = device_pce + stage_of(*mode, first_chunk, widest, 3) <= budget ? 3 : 2;
  int slots = min_slots;
  for (int pass = 0; pass < 2; ++pass) {
    const std::size_t point = pass == 1 ? widest : shape.g1_bytes;
    auto largest_chunk = [&](int with_slots, int lanes) {
      std::uint64_t chunk = first_chunk;
      if (device_pce + stage_of(*mode, chunk, point, with_slots, lanes) > budget) return std::uint64_t(0);
      while (chunk * 2 <= max_chunk && chunk * 2 <= largest_pow2 &&
             device_pce + stage_of(*mode, chunk * 2, point, with_slots, lanes) <= budget)
        chunk *= 2;
      return chunk;
    };
    const std::uint64_t one_lane = largest_chunk(min_slots, 1), two_lanes = largest_chunk(4, 2);
    const int lanes = max_lanes >= 2 && two_lanes != 0 && two_lanes * 2 >= one_lane ? 2 : 1;
    const std::uint64_t chunk = lanes == 2 ? two_lanes : one_lane;
    slots = lanes == 2 ? 4 : min_slots;
    while (slots < kRingSlots && device_pce + stage_of(*mode, chunk, point, slots + 1, lanes) <= budget) ++slots;
    plan.msm_chunk = chunk;
    plan.ring_slots = slots;
    plan.ring_lanes = lanes;
    stage = stage_of(*mode, chunk, point, slots, lanes);
    // (fits: first_chunk with G2 buffers fits, as the mode was chosen so)
    std::size_t room = budget - device_pce - stage;
    plan.resident = {0, 0, 0, 0, 0};
    for (int q = 0; q < 5; ++q) {  // prefixes in order: stop at the first query that does not fit whole
      const std::uint64_t fit = room / plan.point_bytes[q];
      plan.resident[q] = std::min<std::uint64_t>(plan.points[q], fit);
      room -= plan.resident[q] * plan.point_bytes[q];
      if (plan.resident[q] < plan.points[q]) break;
    }
    if (plan.resident[kQueryB2] == plan.points[kQueryB2]) break;
  }
  plan.peak_bytes = device_pce + plan.key_resident_bytes() + stage;
  // Slots the NTT stage leaves room for (the stage above is the larger of
  // the NTT and MSM stages).
  const std::size_t ntt_need = plan.release_witness ? ntt_released : ntt_stage;
  const std::size_t slot = plan.msm_chunk * shape.g1_bytes;
  plan.prefetch_slots =
      stage > ntt_need && slot > 0 ? int(std::min<std::size_t>(slots, (stage - ntt_need) / slot)) : 0;
  return plan;
}

}  // namespace zkfarm::cuda

#endif  // ZKFARM_KERNELS_CUDA_MEMORY_PLAN_H_
