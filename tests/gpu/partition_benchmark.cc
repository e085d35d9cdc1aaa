// partition_benchmark -- one Groth16 partition proved end to end on one GPU
// at PoRep-32G shape (or smaller), with per-stage times, plus the CPU prover
// on a smaller circuit for the GPU:CPU ratio.
//
//   partition_benchmark [--device=N] [--curve=bls12381|bn254]
//                       [--constraints=N] [--repeats=3] [--cpu-constraints=N]
//                       [--msm-breakdown] [--compare-serial] [--shifted-h]
//                       [--budgets-gib=G,G,...] [--ablate-gib=G,...]
//                       [--chunk-logs=24,23] [--compaction=1,0]
//                       [--ntt-tile-log=11]
//
// Steps (host stages: wall time; device stages: CUDA events):
//  1. a synthetic circuit with the PoRep profile (328 public inputs, A/B/C
//     ~2.4/1.0/2.2 non-zeros per row, witness mostly 0/1) generated in
//     memory on all cores: witness, R1CS, PCE (nothing is written to disk);
//  2. the setup scalars on the CPU (groth16_setup_scalars, all cores), the
//     key made by the GPU setup straight into device memory
//     (groth16_setup_device: a PoRep key never sits on the host);
//  3. the PCE (A, B) uploaded once (DevicePce), the witness put in pinned
//     memory, then DeviceProver::prove (groth16_device.h): one warm-up and
//     the median of --repeats, with its stage times;
//  4. the proof verified on the CPU (pairing check).
// --cpu-constraints N (0 = skip): the same circuit at N constraints proved
// by the CPU prover (groth16_prove on all cores, key downloaded from the
// device) and by device_prove, which must give the same proof for the same
// r and s; prints the ratio.
// --msm-breakdown: after the proofs, the five MSMs of the partition timed
// one by one on the resident key (what bounds the MSM stage).
// --budgets-gib=141,80,40,24,16: after the resident proofs, the key is
// moved to pinned host memory and the partition proved again under each
// device memory budget (GiB; memory_plan.h's plan, enforced by the
// allocator): resident prefixes uploaded, the rest streamed per proof; each
// proof checked against the resident one (same r, s). A budget too small
// for the circuit prints the planner's error (what it needs).
// --ablate-gib=24: at those budgets, the same placement also proved without
// the transfer ring (each query streamed on its own) and, with the PCE in
// host memory, with the SpMV moving the 8-byte row offsets instead of the
// packed ones, and without host compaction.
// --chunk-logs=24,23: each budget planned with MSM chunks of at most 2^24
// and again of at most 2^23 points (default: 24 only).
// --compaction=1,0.5,0: each budget proved with each share of the streamed
// witness chunks offered to host compaction (DeviceProvingKey::
// host_compaction; default: the key's default only).
// --ntt-tile-log=11: after the resident proofs, the same proofs (same r, s;
//   checked equal) with the NTT stage on another GpuNttConfig::tile_log (11:
//   the shaped kernels of eight elements a thread, the default before the
//   narrow ones), timed side by side with the default.
// --two-lanes: each budget also planned with the streamed MSMs in two lanes
// (MsmPipeline, plan_memory's max_lanes 2) where they fit.
// --compare-serial: the resident proofs also with the witness MSMs after H
// (no overlap), same r and s: what the overlap gives.
// --shifted-h: the resident proofs again with precomputed shifted H bases
// (shift_h_bases; where the table fits beside the key), same r and s.
// --shifted-witness[=8,10,0]: the resident proofs again with H's shifted
// table (the CUDA engine's case), then with the four witness queries'
// tables too (shift_witness_bases; a circuit of at most 2^20 signals, where
// they fit), once per window size listed (0, the default: the engine's,
// kWitnessTableBits), same r and s: the witness tables' gain over H's alone.
// --shifted-h-bits=12,14,0: with the witness tables at the engine's c, the
//   resident proofs with H's table at each window size listed (0: the cost
//   model's, shifted_layout), after one without H's table, same r and s:
//   the H MSM at a small circuit's sizes, against the model.
// Memory: host peak RSS and device use are printed after each stage.
// Exit status: 0 when every proof verified (and matched), 1 otherwise.
#include <cstdio>

#ifndef ZKFARM_HAS_CUDA

int main() {
  std::printf("SKIPPED: no CUDA device (built without CUDA)\n");
  return 0;
}

#else

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "formats/pce.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/groth16_device.h"
#include "kernels/cuda/memory_plan.h"
#include "kernels/cuda/msm.h"
#include "circuits/setup_device.h"
#include "kernels/curves.h"
#include "kernels/groth16_prover.h"
#include "circuits/groth16_setup.h"
#include "kernels/groth16_verifier.h"
#include "kernels/parallel.h"
#include "kernels/stopwatch.h"
#include "circuits/synthetic_circuit.h"


namespace zkfarm::cuda {
namespace {

struct Options {
  int device = 0;
  std::string curve = "bls12381";
  std::uint64_t constraints = 130'300'000;  // a PoRep-32G partition (~130.3M; domain 2^27)
  int repeats = 3;
  std::uint64_t cpu_constraints = 0;
  bool msm_breakdown = false;
  std::vector<double> budgets_gib;
  std::vector<double> ablate_gib;  // budgets also proved without gather and without overlap
  bool compare_serial = false;     // the resident proofs also with the witness MSMs after H
  bool shifted_h = false;          // then with precomputed shifted H bases (where they fit)
  std::vector<unsigned> shifted_witness_bits;  // then with H's and the witness queries' tables at each c (0: the engine's)
  std::vector<unsigned> shifted_h_bits;  // the witness tables, and H's at each c (0: the model's)
  std::vector<unsigned> chunk_logs = {24};
  bool two_lanes = false;
  unsigned ntt_tile_log = 0;       // then the resident proofs again with this GpuNttConfig::tile_log
  std::vector<double> compaction;  // host compaction shares to prove each budget with (empty: the default)
};

int g_failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    ++g_failures;
    std::printf("CHECK FAILED: %s\n", what.c_str());
  }
}

// check(got == want) that names the elements that differ (A, B, C: which
// MSMs to suspect) when they do.
template <class Curve>
void check_same(const Groth16Proof<Curve>& got, const Groth16Proof<Curve>& want, const std::string& what) {
  std::string differ;
  if (!(got.a == want.a)) differ += " A";
  if (!(got.b == want.b)) differ += " B";
  if (!(got.c == want.c)) differ += " C";
  check(differ.empty(), what + (differ.empty() ? "" : " (differ:" + differ + ")"));
}

// Host peak resident memory in GiB (VmHWM), 0 if unknown.
double host_peak_gib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return double(std::strtoull(line.c_str() + 6, nullptr, 10)) / (1 << 20);
  return 0;
}

void stage(const char* what, double seconds, const DeviceContext& ctx, const std::string& note = "") {
  const MemoryInfo m = ctx.memory();
  std::printf("  %-34s %9.3f s   host peak %6.1f GiB, device used %6.1f GiB  %s\n", what, seconds,
              host_peak_gib(), double(m.total - m.free) / double(1 << 30), note.c_str());
  std::fflush(stdout);
}

// The circuit's R1CS built on all cores: blocks are counted, then generated
// again into their place (SyntheticCircuit::to_r1cs does the same serially,
// ~0.8 us per constraint).
template <class Fr>
R1cs<Fr> parallel_r1cs(const SyntheticCircuit<Fr>& circuit) {
  const std::uint64_t blocks = circuit.num_blocks();
  std::vector<std::array<std::uint64_t, 4>> counts(blocks + 1, {0, 0, 0, 0});  // rows, A, B, C
  parallel_for(blocks, [&](std::size_t first, std::size_t last) {
    typename SyntheticCircuit<Fr>::Block block;
    for (std::size_t k = first; k < last; ++k) {
      circuit.generate_block(k, block);
      counts[k + 1][0] = block.num_constraints();
      for (std::size_t i = 0; i < block.num_constraints(); ++i)
        for (int m = 0; m < 3; ++m) counts[k + 1][1 + m] += block.lc(i, m).size();
    }
  });
  for (std::uint64_t k = 1; k <= blocks; ++k)
    for (int j = 0; j < 4; ++j) counts[k][j] += counts[k - 1][j];
  R1cs<Fr> r;
  r.num_wires = circuit.num_wires();
  r.num_pub_in = circuit.num_public();
  r.num_labels = circuit.num_wires();
  r.num_constraints = std::uint32_t(circuit.num_constraints());
  SparseMatrix<Fr>* ms[3] = {&r.a, &r.b, &r.c};
  for (int m = 0; m < 3; ++m) {
    ms[m]->row_offsets.assign(r.num_constraints + 1, 0);
    ms[m]->cols.resize(counts[blocks][1 + m]);
    ms[m]->values.resize(counts[blocks][1 + m]);
  }
  parallel_for(blocks, [&](std::size_t first, std::size_t last) {
    typename SyntheticCircuit<Fr>::Block block;
    for (std::size_t k = first; k < last; ++k) {
      circuit.generate_block(k, block);
      for (int m = 0; m < 3; ++m) {
        std::uint64_t at = counts[k][1 + m];
        for (std::size_t i = 0; i < block.num_constraints(); ++i) {
          for (const auto& t : block.lc(i, m)) {
            ms[m]->cols[at] = t.wire;
            ms[m]->values[at] = t.coeff;
            ++at;
          }
          ms[m]->row_offsets[block.first_constraint + i + 1] = at;
        }
      }
    }
  });
  return r;
}

// Everything a proof needs, made as steps 1-2 of the file comment say.
template <class Curve>
struct Prepared {
  using Fr = typename Curve::Fr;
  std::vector<Fr> witness;
  Pce<Fr> pce;
  DeviceSetupKey<Curve> key;
};

template <class Curve>
Prepared<Curve> prepare(const DeviceContext& ctx, std::uint64_t constraints) {
  using Fr = typename Curve::Fr;
  Prepared<Curve> p;
  Stopwatch clock;
  SyntheticCircuitOptions circuit_options;
  circuit_options.num_constraints = constraints;
  circuit_options.num_public = 328;
  circuit_options.seed = 7;
  const SyntheticCircuit<Fr> circuit(circuit_options);
  p.witness = circuit.witness();
  std::size_t binary = 0;
  for (const Fr& v : p.witness) binary += v.is_zero() || v.is_one();
  char note[128];
  std::snprintf(note, sizeof note, "%u wires, %.1f%% of the witness 0/1", circuit.num_wires(),
                100.0 * double(binary) / double(p.witness.size()));
  stage("witness", clock.lap(), ctx, note);
  {
    R1cs<Fr> r1cs = parallel_r1cs(circuit);
    std::snprintf(note, sizeof note, "nnz A %zu B %zu C %zu", r1cs.a.nnz(), r1cs.b.nnz(), r1cs.c.nnz());
    stage("r1cs (all cores)", clock.lap(), ctx, note);
    p.pce = pce_from_r1cs(r1cs);
  }
  stage("pce (Pce::from_r1cs)", clock.lap(), ctx);
  Groth16SetupOptions setup_options;
  setup_options.seed = 7;
  const std::uint32_t n = groth16_domain_size(constraints, circuit_options.num_public);
  Groth16SetupTimings setup_timings;
  {
    const Groth16SetupScalars<Fr> scalars =
        groth16_setup_scalars(circuit, sample_toxic_waste<Fr>(n, setup_options), false, &setup_timings);
    std::snprintf(note, sizeof note, "domain 2^%d; lagrange+h %.2f s, columns %.2f s", std::countr_zero(n),
                  setup_timings.lagrange, setup_timings.columns);
    stage("setup scalars (CPU, all cores)", clock.lap(), ctx, note);
    DeviceSetupTimings device;
    p.key = groth16_setup_device<Curve>(ctx, scalars, &device);
    std::snprintf(note, sizeof note,
                  "device ms: tables %.1f, upload %.1f, G1 %.1f, G2 %.1f, total %.1f; key %.1f GiB on the device",
                  device.tables_ms, device.upload_ms, device.g1_ms, device.g2_ms, device.total_ms,
                  double(p.key.proving_key.device_bytes()) / double(1 << 30));
    stage("setup points (GPU)", clock.lap(), ctx, note);
  }
  return p;
}

template <class Fr>
std::span<const Fr> public_inputs(const std::vector<Fr>& witness, std::uint32_t num_public) {
  return std::span<const Fr>(witness).subspan(1, num_public);
}

// Proves `repeats` + 1 times on the device; returns the proof of the last run
// and prints the median stage times.
template <class Curve>
Groth16Proof<Curve> prove_on_device(DeviceContext& ctx, const Prepared<Curve>& p,
                                    const DevicePce<typename Curve::Fr>& device_pce, int repeats,
                                    const ProveOptions<typename Curve::Fr>& options, double* median_total_ms,
                                    bool overlap = true, const GpuNttConfig& ntt = {},
                                    DeviceProveTimings* median = nullptr, const GpuMsmConfig& msm = {}) {
  // The whole key resident, the witness MSMs beside the rest unless
  // overlap is false.
  MemoryPlan plan = MemoryPlan::unplanned();
  plan.overlap = overlap;
  using Fr = typename Curve::Fr;
  // The worker's case: the witness sits in pinned memory, the prover (NTT
  // tables, staging buffers) lives across proofs.
  PinnedBuffer<Fr> witness(p.witness.size());
  std::memcpy(static_cast<void*>(witness.data()), p.witness.data(), p.witness.size() * sizeof(Fr));
  DeviceProver<Curve> prover(ctx, msm, DeviceProver<Curve>::kStagingChunk, false, ntt);
  Groth16Proof<Curve> proof;
  std::vector<DeviceProveTimings> runs;
  std::vector<double> wall;
  for (int r = 0; r <= repeats; ++r) {
    DeviceProveTimings t{};
    Stopwatch clock;
    proof = prover.prove(p.key.proving_key, device_pce, plan, std::span<const Fr>(witness.data(), witness.size()),
                         options, &t);
    const double seconds = clock.lap();
    std::printf("    device_prove run %d%s: upload %.1f spmv %.1f ntt %.1f msm %.1f (H %.1f, witness MSMs %.1f%s) "
                "total %.1f ms (host wall %.1f ms)\n",
                r, r == 0 ? " (warm-up)" : "", t.upload_ms, t.spmv_ms, t.ntt_ms, t.msm_ms, t.h_msm_ms,
                t.witness_msm_ms, t.overlapped ? " beside the NTTs" : " after H", t.total_ms, seconds * 1e3);
    if (r > 0) {
      runs.push_back(t);
      wall.push_back(seconds * 1e3);
    }
  }
  std::sort(runs.begin(), runs.end(),
            [](const DeviceProveTimings& a, const DeviceProveTimings& b) { return a.total_ms < b.total_ms; });
  std::sort(wall.begin(), wall.end());
  const DeviceProveTimings& m = runs[runs.size() / 2];
  std::printf("  device_prove median of %d (witness MSMs %s): upload %.1f, spmv %.1f, ntt %.1f, msm %.1f (H %.1f, "
              "witness MSMs %.1f), total %.1f ms (host wall %.1f ms)\n",
              repeats, m.overlapped ? "overlapped" : "serial", m.upload_ms, m.spmv_ms, m.ntt_ms, m.msm_ms, m.h_msm_ms,
              m.witness_msm_ms, m.total_ms, wall[wall.size() / 2]);
  *median_total_ms = m.total_ms;
  if (median != nullptr) *median = m;
  return proof;
}

// The five MSMs of a proof timed one by one (CUDA events, median of
// `repeats` after a warm-up) on the resident key, with the witness as
// scalars and, for H, random full-width scalars (h = a*b - c on the coset
// is as dense as random): what bounds the proof's MSM stage.
template <class Curve>
void msm_breakdown(const DeviceContext& ctx, const Prepared<Curve>& p, int repeats) {
  using Fr = typename Curve::Fr;
  using G1 = typename Curve::G1;
  using G2 = typename Curve::G2;
  const DeviceProvingKey<Curve>& key = p.key.proving_key;
  const cudaStream_t stream = ctx.stream(0);
  DeviceBuffer<Fr> witness(p.witness.size(), stream);
  witness.upload(p.witness.data(), p.witness.size(), stream);
  std::vector<Fr> h(key.domain_size);
  {
    Xoshiro256 rng(99);
    for (Fr& x : h) x = rng.template field_element<Fr>();
  }
  DeviceBuffer<Fr> device_h(h.size(), stream);
  device_h.upload(h.data(), h.size(), stream);
  ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
  auto time = [&](const char* name, auto&& body) {
    std::vector<double> ms;
    for (int r = 0; r <= repeats; ++r) {
      Event start, stop;
      start.record(stream);
      body();
      stop.record(stream);
      stop.synchronize();
      if (r > 0) ms.push_back(Event::elapsed_ms(start, stop));
    }
    std::sort(ms.begin(), ms.end());
    std::printf("    msm %-34s %9.1f ms (median of %d)\n", name, ms[ms.size() / 2], repeats);
  };
  const std::size_t private_count = key.num_vars - key.num_public - 1;
  const Fr* w = witness.data();
  time("A (witness)", [&] { (void)msm_device<Curve, G1>(ctx, key.a_points.data(), w, key.num_vars, stream); });
  time("B1 (witness)", [&] { (void)msm_device<Curve, G1>(ctx, key.b1_points.data(), w, key.num_vars, stream); });
  time("B2 (witness, G2)", [&] { (void)msm_device<Curve, G2>(ctx, key.b2_points.data(), w, key.num_vars, stream); });
  time("C (private witness)", [&] {
    (void)msm_device<Curve, G1>(ctx, key.c_points.data(), w + key.num_public + 1, private_count, stream);
  });
  time("H (random scalars, dense)",
       [&] { (void)msm_device<Curve, G1>(ctx, key.h_points.data(), device_h.data(), key.domain_size, stream); });
}

// The partition under each budget of o.budgets_gib (see the file comment).
template <class Curve>
void run_budgets(DeviceContext& ctx, Prepared<Curve>& p, const DevicePce<typename Curve::Fr>& device_pce,
                 ProveOptions<typename Curve::Fr> options, const Groth16Proof<Curve>& resident_proof,
                 double resident_ms, const Options& o) {
  using Fr = typename Curve::Fr;
  using G1Affine = typename Curve::G1Affine;
  using G2Affine = typename Curve::G2Affine;
  Stopwatch clock;
  const cudaStream_t stream = ctx.stream(0);
  // The key to pinned host memory (what a worker holds for a key it
  // streams), then off the device.
  DeviceProvingKey<Curve>& dk = p.key.proving_key;
  PinnedBuffer<G1Affine> a(dk.a_points.size()), b1(dk.b1_points.size()), c(dk.c_points.size()),
      h(dk.h_points.size());
  PinnedBuffer<G2Affine> b2(dk.b2_points.size());
  dk.a_points.download(a.data(), a.size(), stream);
  dk.b1_points.download(b1.data(), b1.size(), stream);
  dk.b2_points.download(b2.data(), b2.size(), stream);
  dk.c_points.download(c.data(), c.size(), stream);
  dk.h_points.download(h.data(), h.size(), stream);
  ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
  Groth16ProvingKey<Curve> host_key;
  host_key.num_vars = dk.num_vars;
  host_key.num_public = dk.num_public;
  host_key.domain_size = dk.domain_size;
  host_key.alpha1 = dk.alpha1;
  host_key.beta1 = dk.beta1;
  host_key.delta1 = dk.delta1;
  host_key.beta2 = dk.beta2;
  host_key.delta2 = dk.delta2;
  host_key.a_points = std::span<const G1Affine>(a.data(), a.size());
  host_key.b1_points = std::span<const G1Affine>(b1.data(), b1.size());
  host_key.b2_points = std::span<const G2Affine>(b2.data(), b2.size());
  host_key.c_points = std::span<const G1Affine>(c.data(), c.size());
  host_key.h_points = std::span<const G1Affine>(h.data(), h.size());
  const std::size_t key_bytes = dk.device_bytes();
  const auto vk = p.key.verifying_key();
  dk = DeviceProvingKey<Curve>();  // the key off the device
  ctx.synchronize();
  stage("key to pinned host memory", clock.lap(), ctx);
  ProofShape shape;
  shape.num_vars = host_key.num_vars;
  shape.num_public = host_key.num_public;
  shape.domain_size = host_key.domain_size;
  shape.fr_bytes = sizeof(Fr);
  shape.g1_bytes = sizeof(G1Affine);
  shape.g2_bytes = sizeof(G2Affine);
  shape.pce_bytes = device_pce.device_bytes();
  PinnedBuffer<Fr> witness(p.witness.size());
  std::memcpy(static_cast<void*>(witness.data()), p.witness.data(), p.witness.size() * sizeof(Fr));
  DeviceProver<Curve> prover(ctx);
  std::printf("  budgets: key %.2f GiB in pinned host memory, PCE %.2f GiB resident; host peak %.1f GiB\n",
              double(key_bytes) / double(1 << 30), double(shape.pce_bytes) / double(1 << 30), host_peak_gib());
  for (double gib : o.budgets_gib)
  for (unsigned chunk_log : o.chunk_logs)
  for (int max_lanes : {1, 2}) {
    if (max_lanes == 2 && !o.two_lanes) continue;
    const std::size_t budget = std::size_t(gib * double(std::size_t(1) << 30));
    MemoryPlan plan;
    try {
      plan = plan_memory(shape, budget, std::uint64_t(1) << chunk_log, max_lanes);
      if (max_lanes == 2 && plan.ring_lanes == 1) continue;
    } catch (const BudgetTooSmall& e) {
      std::printf("RESULT budget %.0f GiB: cannot prove: %s\n", gib, e.what());
      continue;
    }
    std::printf("  plan: %s\n", plan.summary().c_str());
    // The budget covers what this process holds on the device besides the
    // resident PCE from above (the prover's NTT tables); that PCE counts
    // when the plan keeps it, and is left out of the count (unused) when the
    // plan reads the PCE from host memory instead.
    set_device_memory_budget(budget + device_memory_in_use() - (plan.pce_on_host ? 0 : shape.pce_bytes));
    try {
      Stopwatch load;
      DeviceProvingKey<Curve> key = DeviceProvingKey<Curve>::upload(host_key, stream, &plan);
      // The PCE stays resident from above (outside the budget's count) unless
      // the plan reads it from host memory.
      const DevicePce<Fr> host_pce =
          plan.pce_on_host ? DevicePce<Fr>::upload(p.pce, stream, false, true) : DevicePce<Fr>();
      const DevicePce<Fr>& pce = plan.pce_on_host ? host_pce : device_pce;
      const double load_s = load.lap();
      // The plan as made, then (--ablate-gib) the same placement with the
      // zero-skipping gather toggled and with the witness MSMs' overlap
      // toggled.
      struct Variant {
        std::string name;
        bool gather, overlap;
        int ring_slots;
        double compaction;
        bool packed = true;
      };
      const bool gather = plan.gather_nonzero;
      const std::string planned = std::string(max_lanes == 2 ? "two lanes allowed" : "planned") + " (chunks <= 2^" +
                                  std::to_string(chunk_log) + ", " + std::to_string(plan.ring_lanes) + " lane" +
                                  (plan.ring_lanes == 1 ? ")" : "s)");
      const double default_compaction = plan.host_compaction;
      std::vector<Variant> variants;
      if (o.compaction.empty() || plan.ring_lanes != 1) {
        variants.push_back({planned, gather, plan.overlap, plan.ring_slots, default_compaction});
      } else {
        for (double share : o.compaction) {
          char label[64];
          std::snprintf(label, sizeof label, ", host compaction %.2f", share);
          variants.push_back({planned + label, gather, plan.overlap, plan.ring_slots, share});
        }
      }
      if (max_lanes == 1 && std::find(o.ablate_gib.begin(), o.ablate_gib.end(), gib) != o.ablate_gib.end() &&
          plan.ring_slots)
        variants.push_back({"same placement, no ring", gather, plan.overlap, 0, default_compaction});
      if (max_lanes == 1 && std::find(o.ablate_gib.begin(), o.ablate_gib.end(), gib) != o.ablate_gib.end() &&
          plan.ring_slots && plan.pce_on_host)
        variants.push_back({"same plan, SpMV with 8-byte row offsets", gather, plan.overlap, plan.ring_slots,
                            default_compaction, false});
      if (max_lanes == 1 && std::find(o.ablate_gib.begin(), o.ablate_gib.end(), gib) != o.ablate_gib.end() &&
          plan.ring_slots && o.compaction.empty() && default_compaction > 0)
        variants.push_back({"same plan, no host compaction", gather, plan.overlap, plan.ring_slots, 0.0});
      for (const Variant& variant : variants) {
        MemoryPlan run_plan = plan;
        run_plan.gather_nonzero = variant.gather;
        run_plan.overlap = variant.overlap;
        run_plan.ring_slots = variant.ring_slots;
        run_plan.host_compaction = variant.compaction;
        prover.set_packed_spmv(variant.packed);
        std::vector<DeviceProveTimings> runs;
        Groth16Proof<Curve> proof;
        for (int r = 0; r <= o.repeats; ++r) {
          DeviceProveTimings t;
          proof = prover.prove(key, pce, run_plan, std::span<const Fr>(witness.data(), witness.size()), options, &t);
          std::printf("    budget %.0f GiB %s run %d%s: upload %.1f spmv %.1f ntt %.1f msm %.1f (H %.1f, witness %.1f%s) "
                      "total %.1f ms, streamed %.2f GiB (%.2f GiB of zeros' bases skipped) in %zu MSM calls; "
                      "ring %d slots %d lanes, %zu chunks copied before the NTTs, %zu waits for a copy; ring stage: H chunks "
                      "%.1f, witness chunks %.1f, dense %.1f, resident %.1f ms; copy engine busy %.1f ms; "
                      "%zu chunks compacted (CPU %.1f ms, %zu too late); SpMV moved %.2f GiB of PCE%s\n",
                      gib, variant.name.c_str(), r, r == 0 ? " (warm-up)" : "", t.upload_ms, t.spmv_ms, t.ntt_ms,
                      t.msm_ms, t.h_msm_ms, t.witness_msm_ms, t.overlapped ? " beside" : " after H", t.total_ms,
                      double(t.streamed_bytes) / double(1 << 30), double(t.skipped_bytes) / double(1 << 30),
                      t.msm_calls, t.ring_slots, t.ring_lanes, t.prefetched_chunks, t.copy_waits, t.pipeline_h_ms,
                      t.pipeline_witness_ms, t.pipeline_dense_ms, t.pipeline_resident_ms, t.pipeline_copy_ms,
                      t.compacted_chunks, t.compaction_ms, t.compaction_late,
                      double(t.spmv_streamed_bytes) / double(1 << 30), t.spmv_packed ? " (packed row offsets)" : "");
          if (r > 0) runs.push_back(t);
        }
        std::sort(runs.begin(), runs.end(),
                  [](const DeviceProveTimings& x, const DeviceProveTimings& y) { return x.total_ms < y.total_ms; });
        const DeviceProveTimings& m = runs[runs.size() / 2];
        const bool same = proof == resident_proof;
        const bool ok = groth16_verify<Curve>(vk, public_inputs(p.witness, 328), proof);
        check(same, "budget proof equals the resident proof");
        check(ok, "budget proof verifies");
        std::printf("RESULT budget %.0f GiB %s: %.1f ms median (%.2fx resident %.1f ms; upload %.1f spmv %.1f ntt %.1f "
                    "msm %.1f, H %.1f, witness MSMs %.1f%s), resident %.2f GiB, streamed %.2f GiB per proof (+%.2f "
                    "GiB skipped), host pinned %.2f GiB (+%.2f copied; PCE %.2f GiB + %.2f GiB packed), load %.2f s, ring %d slots "
                    "(%zu prefetched, %zu copy waits, copy engine busy %.1f ms, %zu chunks compacted), proof %s\n",
                    gib, variant.name.c_str(), m.total_ms, m.total_ms / resident_ms, resident_ms, m.upload_ms, m.spmv_ms,
                    m.ntt_ms, m.msm_ms, m.h_msm_ms, m.witness_msm_ms, m.overlapped ? " beside" : " after H",
                    double(plan.resident_bytes()) / double(1 << 30), double(m.streamed_bytes) / double(1 << 30),
                    double(m.skipped_bytes) / double(1 << 30), double(key.host_bytes()) / double(1 << 30),
                    double(key.host_copied_bytes) / double(1 << 30), double(pce.host_bytes()) / double(1 << 30),
                    double(pce.packed_bytes()) / double(1 << 30),
                    load_s, m.ring_slots, m.prefetched_chunks, m.copy_waits, m.pipeline_copy_ms, m.compacted_chunks,
                    same && ok ? "identical, valid" : "WRONG");
      }
    } catch (const std::exception& e) {
      check(false, std::string("budget run: ") + e.what());
    }
    set_device_memory_budget(0);
    ctx.synchronize();
  }
}

template <class Curve>
void run_partition(DeviceContext& ctx, const Options& o) {
  std::printf("== partition %s, %llu constraints\n", Curve::kName, static_cast<unsigned long long>(o.constraints));
  Prepared<Curve> p = prepare<Curve>(ctx, o.constraints);
  using Fr = typename Curve::Fr;
  Stopwatch clock;
  // Without C: the benchmark times proving, not the constraint check (C
  // would cost ~2 GB of device memory at PoRep scale).
  const DevicePce<Fr> device_pce = DevicePce<Fr>::upload(p.pce, ctx.stream(0), false);
  stage("pce upload", clock.lap(), ctx);
  const MemoryInfo before_proofs = ctx.memory();
  ProveOptions<Fr> options;
  options.check_constraints = false;
  // Fixed r, s for every run: each variant's proof must equal the plain one
  // (and the time of a proof does not depend on them).
  options.r = Fr::from_u64(0x5151);
  options.s = Fr::from_u64(0x7272);
  double total_ms = 0;
  if (o.compare_serial) {  // the same proofs with the witness MSMs after H (no overlap)
    double serial_ms = 0;
    const Groth16Proof<Curve> serial =
        prove_on_device<Curve>(ctx, p, device_pce, o.repeats, options, &serial_ms, false);
    double overlapped_ms = 0;
    const Groth16Proof<Curve> overlapped = prove_on_device<Curve>(ctx, p, device_pce, o.repeats, options, &overlapped_ms);
    check_same(serial, overlapped, "serial and overlapped proofs are identical (same r, s)");
    std::printf("RESULT overlap: witness MSMs after H %.1f ms, beside the NTTs %.1f ms (%.2fx)\n", serial_ms,
                overlapped_ms, serial_ms / overlapped_ms);
  }
  DeviceProveTimings median{};
  const Groth16Proof<Curve> proof =
      prove_on_device<Curve>(ctx, p, device_pce, o.repeats, options, &total_ms, true, {}, &median);
  stage("proofs", clock.lap(), ctx);
  if (o.ntt_tile_log) {  // the same proofs with the NTT stage on other kernels (GpuNttConfig::tile_log)
    GpuNttConfig ntt;
    ntt.tile_log = o.ntt_tile_log;
    double other_ms = 0;
    DeviceProveTimings other{};
    const Groth16Proof<Curve> again =
        prove_on_device<Curve>(ctx, p, device_pce, o.repeats, options, &other_ms, true, ntt, &other);
    check_same(again, proof, "the proof with NTT tiles of 2^" + std::to_string(o.ntt_tile_log) +
                              " equals the default's (same r, s)");
    std::printf("RESULT ntt tile 2^%u: device_prove %.1f ms against %.1f ms (%.3fx), NTT stage %.1f against %.1f ms\n",
                o.ntt_tile_log, other_ms, total_ms, other_ms / total_ms, other.ntt_ms, median.ntt_ms);
  }
  const MemoryInfo after_proofs = ctx.memory();
  const bool ok = groth16_verify<Curve>(p.key.verifying_key(), public_inputs(p.witness, 328), proof);
  stage("verify on the CPU", clock.lap(), ctx, ok ? "valid" : "INVALID");
  check(ok, "partition proof verifies");
  std::printf("RESULT partition %s %llu constraints: device_prove %.1f ms (median), proof %s\n", Curve::kName,
              static_cast<unsigned long long>(o.constraints), total_ms, ok ? "valid" : "INVALID");
  // The room the CUDA engine leaves the proofs beside a shifted table; their
  // working memory is what the proofs above took.
  const std::size_t working = before_proofs.free > after_proofs.free ? before_proofs.free - after_proofs.free : 0;
  const std::size_t reserve = shifted_table_reserve(working, after_proofs.total);
  if (o.shifted_h) {
    // The H MSM over precomputed shifted bases (a partial table where the
    // whole one does not fit).
    Stopwatch build;
    if (!shift_h_bases(ctx, p.key.proving_key, reserve, 0, 0, ctx.stream(0))) {
      std::printf("RESULT shifted H: not built (no room for a table of at least 2^22 points beside the key and twice the proofs' working memory)\n");
    } else {
      const double build_s = build.lap();
      double shifted_ms = 0;
      const Groth16Proof<Curve> shifted = prove_on_device<Curve>(ctx, p, device_pce, o.repeats, options, &shifted_ms);
      check_same(shifted, proof, "the proof with shifted H bases equals the plain one (same r, s)");
      const auto& key = p.key.proving_key;
      std::printf(
          "RESULT shifted H: %.1f ms (%.2fx of %.1f ms), table %u rows at c = %u over %zu of %llu points (%.1f%%), "
          "%.2f GiB, built in %.2f s\n",
          shifted_ms, shifted_ms / total_ms, total_ms, key.h_shift_rows, key.h_shift_bits, key.h_shift_points,
          static_cast<unsigned long long>(key.domain_size), 100.0 * double(key.h_shift_points) / double(key.domain_size),
          double(key.h_shifted.bytes()) / double(1 << 30), build_s);
      p.key.proving_key.drop_shifted_tables();
    }
  }
  if (!o.shifted_witness_bits.empty()) {
    // The engine's case today first (H's table where it fits), then the
    // witness queries' tables on top of it: the gain is theirs alone.
    auto& key = p.key.proving_key;
    double base_ms = total_ms;
    DeviceProveTimings base = median;
    const bool h = shift_h_bases(ctx, key, reserve, 0, 0, ctx.stream(0));
    if (h) {
      const Groth16Proof<Curve> with_h =
          prove_on_device<Curve>(ctx, p, device_pce, o.repeats, options, &base_ms, true, {}, &base);
      check_same(with_h, proof, "the proof with shifted H bases equals the plain one (same r, s)");
    }
    for (const unsigned bits : o.shifted_witness_bits) {
      Stopwatch build;
      if (!shift_witness_bases(ctx, key, reserve, 0, 0, ctx.stream(0), bits)) {
        std::printf("RESULT shifted witness queries at c = %u: not built (more than 2^20 signals, or no room)\n", bits);
        continue;
      }
      const double build_s = build.lap();
      double shifted_ms = 0;
      DeviceProveTimings t{};
      const Groth16Proof<Curve> shifted =
          prove_on_device<Curve>(ctx, p, device_pce, o.repeats, options, &shifted_ms, true, {}, &t);
      check_same(shifted, proof, "the proof with shifted witness (and H) bases equals the plain one (same r, s)");
      std::printf(
          "RESULT shifted witness queries at c = %u (B2: %u): %.1f ms (%.2fx of %.1f ms %s; plain %.1f ms), MSM "
          "stage %.2f ms against %.2f, witness MSMs %.2f against %.2f; tables %.1f MiB (witness, built in %.3f s) "
          "+ %.1f MiB (H)\n",
          key.a_shifted.window_bits, key.b2_shifted.window_bits, shifted_ms, shifted_ms / base_ms, base_ms,
          h ? "with H's table" : "without tables (H's did not fit)", total_ms, t.msm_ms, base.msm_ms,
          t.witness_msm_ms, base.witness_msm_ms, double(key.witness_shifted_bytes()) / double(1 << 20), build_s,
          double(key.h_shifted.bytes()) / double(1 << 20));
      // The same tables with the ones summed apart (GpuMsmConfig::
      // ones_in_buckets false, the MSM before it).
      GpuMsmConfig apart;
      apart.ones_in_buckets = false;
      double apart_ms = 0;
      DeviceProveTimings ta{};
      const Groth16Proof<Curve> again =
          prove_on_device<Curve>(ctx, p, device_pce, o.repeats, options, &apart_ms, true, {}, &ta, apart);
      check_same(again, proof, "the proof with the ones summed apart equals the plain one (same r, s)");
      std::printf("RESULT ones in the buckets at c = %u: %.1f ms, witness MSMs %.2f; summed apart %.1f ms, witness "
                  "MSMs %.2f (%.2fx)\n",
                  key.a_shifted.window_bits, shifted_ms, t.witness_msm_ms, apart_ms, ta.witness_msm_ms,
                  shifted_ms / apart_ms);
      key.drop_witness_tables();
    }
    key.drop_shifted_tables();
  }
  if (!o.shifted_h_bits.empty()) {
    auto& key = p.key.proving_key;
    if (!shift_witness_bases(ctx, key, reserve, 0, 0, ctx.stream(0))) {
      std::printf("RESULT H's table sweep: the witness tables were not built (more than 2^20 signals, or no room)\n");
    } else {
      double none_ms = 0;
      DeviceProveTimings none{};
      const Groth16Proof<Curve> witness_only =
          prove_on_device<Curve>(ctx, p, device_pce, o.repeats, options, &none_ms, true, {}, &none);
      check_same(witness_only, proof, "the proof with the witness tables alone equals the plain one (same r, s)");
      std::printf("RESULT witness tables, no H table: %.1f ms, H MSM %.2f ms, MSM stage %.2f\n", none_ms,
                  none.h_msm_ms, none.msm_ms);
      for (const unsigned bits : o.shifted_h_bits) {
        if (!shift_h_bases(ctx, key, reserve, 0, 0, ctx.stream(0), bits)) {
          std::printf("RESULT H's table at c = %u: not built (no room)\n", bits);
          continue;
        }
        double ms = 0;
        DeviceProveTimings t{};
        const Groth16Proof<Curve> shifted = prove_on_device<Curve>(ctx, p, device_pce, o.repeats, options, &ms, true,
                                                                   {}, &t);
        check_same(shifted, proof, "the proof with H's table equals the plain one (same r, s)");
        std::printf("RESULT H's table at c = %u (%u rows, %.1f MiB)%s: %.1f ms (%.2fx), H MSM %.2f ms against %.2f, "
                    "MSM stage %.2f against %.2f\n",
                    key.h_shift_bits, key.h_shift_rows, double(key.h_shifted.bytes()) / double(1 << 20),
                    bits == 0 ? " (the model's)" : "", ms, ms / none_ms, t.h_msm_ms, none.h_msm_ms, t.msm_ms,
                    none.msm_ms);
        key.drop_h_table();
      }
    }
    key.drop_shifted_tables();
  }
  if (o.msm_breakdown) msm_breakdown<Curve>(ctx, p, o.repeats);
  if (!o.budgets_gib.empty()) run_budgets<Curve>(ctx, p, device_pce, options, proof, total_ms, o);
}

template <class Curve>
void run_cpu_ratio(DeviceContext& ctx, const Options& o) {
  using Fr = typename Curve::Fr;
  std::printf("== CPU vs GPU prover, %s, %llu constraints\n", Curve::kName,
              static_cast<unsigned long long>(o.cpu_constraints));
  Prepared<Curve> p = prepare<Curve>(ctx, o.cpu_constraints);
  Stopwatch clock;
  const Groth16SetupKey<Curve> host_key = download_setup_key<Curve>(ctx, p.key, {});
  stage("key download", clock.lap(), ctx);
  ProveOptions<Fr> options;
  options.r = Fr::from_u64(0x1234567);
  options.s = Fr::from_u64(0x7654321);
  options.check_constraints = false;
  Groth16Proof<Curve> cpu_proof;
  std::vector<double> cpu_seconds;
  for (int r = 0; r <= o.repeats; ++r) {
    ProveTimings t;
    cpu_proof = groth16_prove<Curve>(host_key.proving_key(), p.pce, std::span<const Fr>(p.witness), options, &t);
    std::printf("    groth16_prove (CPU, %zu threads) run %d%s: spmv %.3f ntt %.3f msm %.3f total %.3f s\n",
                parallel_threads(), r, r == 0 ? " (warm-up)" : "", t.spmv, t.ntt, t.msm, t.total);
    if (r > 0) cpu_seconds.push_back(t.total);
  }
  std::sort(cpu_seconds.begin(), cpu_seconds.end());
  const double cpu_ms = cpu_seconds[cpu_seconds.size() / 2] * 1e3;
  const bool cpu_ok = groth16_verify<Curve>(p.key.verifying_key(), public_inputs(p.witness, 328), cpu_proof);
  check(cpu_ok, "CPU proof verifies");
  stage("CPU proofs", clock.lap(), ctx, cpu_ok ? "valid" : "INVALID");
  const DevicePce<Fr> device_pce = DevicePce<Fr>::upload(p.pce, ctx.stream(0), false);
  double gpu_ms = 0;
  const Groth16Proof<Curve> gpu_proof = prove_on_device<Curve>(ctx, p, device_pce, o.repeats, options, &gpu_ms);
  check(gpu_proof == cpu_proof, "device proof equals the CPU proof (same r, s)");
  std::printf("RESULT cpu-vs-gpu %s %llu constraints: CPU %.1f ms, GPU %.1f ms, ratio %.1fx, proofs %s\n",
              Curve::kName, static_cast<unsigned long long>(o.cpu_constraints), cpu_ms, gpu_ms, cpu_ms / gpu_ms,
              gpu_proof == cpu_proof ? "identical" : "DIFFER");
}

template <class Curve>
void run_curve(DeviceContext& ctx, const Options& o) {
  if (o.cpu_constraints) run_cpu_ratio<Curve>(ctx, o);
  if (o.constraints) run_partition<Curve>(ctx, o);
}

int run(const Options& o) {
  if (DeviceContext::visible_device_count() == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    return 0;
  }
  DeviceContext ctx(o.device);
  std::printf("%s; %zu CPU threads\n", ctx.info().summary().c_str(), parallel_threads());
  if (o.curve == "bn254") run_curve<Bn254>(ctx, o);
  else run_curve<Bls12381>(ctx, o);
  std::printf("checks failed: %d\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

// Calls take(item) for each comma-separated item of a flag's value
// ("--flag=a,b,c"); stops with false when take refuses one (it says why).
template <class Take>
bool each_item(const std::string& arg, Take take) {
  const std::string list = arg.substr(arg.find('=') + 1);
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    if (!take(list.substr(at, comma - at))) return false;
    at = comma + 1;
  }
  return true;
}

// Reads a flag's comma list of window sizes ("--flag=8,0": 0 or 2..24,
// 0 the default's) into out; false, having said why, on a bad item.
bool window_sizes(const std::string& arg, const char* program, std::vector<unsigned>& out) {
  return each_item(arg, [&](const std::string& item) {
    char* end = nullptr;
    const unsigned long bits = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || (bits != 0 && (bits < 2 || bits > 24))) {
      std::fprintf(stderr, "%s: %s: '%s' is not 0 or a window size in [2, 24]\n", program,
                   arg.substr(0, arg.find('=')).c_str(), item.c_str());
      return false;
    }
    out.push_back(unsigned(bits));
    return true;
  });
}

}  // namespace zkfarm::cuda

int main(int argc, char** argv) {
  using zkfarm::cuda::each_item;
  using zkfarm::cuda::window_sizes;
  zkfarm::cuda::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* prefix) { return std::strtoull(a.c_str() + std::strlen(prefix), nullptr, 10); };
    if (a.rfind("--device=", 0) == 0) o.device = int(value("--device="));
    else if (a.rfind("--curve=", 0) == 0 && (a == "--curve=bn254" || a == "--curve=bls12381")) o.curve = a.substr(8);
    else if (a.rfind("--constraints=", 0) == 0) o.constraints = value("--constraints=");
    else if (a.rfind("--cpu-constraints=", 0) == 0) o.cpu_constraints = value("--cpu-constraints=");
    else if (a.rfind("--repeats=", 0) == 0) o.repeats = std::max(1, int(value("--repeats=")));
    else if (a == "--msm-breakdown") o.msm_breakdown = true;
    else if (a == "--compare-serial") o.compare_serial = true;
    else if (a == "--shifted-h") o.shifted_h = true;
    else if (a == "--shifted-witness") o.shifted_witness_bits = {0};
    else if (a.rfind("--shifted-witness=", 0) == 0) {
      if (!window_sizes(a, argv[0], o.shifted_witness_bits)) return 2;
    }
    else if (a.rfind("--shifted-h-bits=", 0) == 0) {
      if (!window_sizes(a, argv[0], o.shifted_h_bits)) return 2;
    }
    else if (a == "--two-lanes") o.two_lanes = true;
    else if (a.rfind("--ntt-tile-log=", 0) == 0) o.ntt_tile_log = unsigned(value("--ntt-tile-log="));
    else if (a.rfind("--compaction=", 0) == 0) {
      if (!each_item(a, [&](const std::string& item) {
            char* end = nullptr;
            const double share = std::strtod(item.c_str(), &end);
            if (item.empty() || *end != '\0' || share < 0 || share > 1) {
              std::fprintf(stderr, "%s: --compaction: '%s' is not a share in [0, 1]\n", argv[0], item.c_str());
              return false;
            }
            o.compaction.push_back(share);
            return true;
          }))
        return 2;
    }
    else if (a.rfind("--chunk-logs=", 0) == 0) {
      o.chunk_logs.clear();
      if (!each_item(a, [&](const std::string& item) {
            const unsigned log = unsigned(std::strtoul(item.c_str(), nullptr, 10));
            if (log < 16 || log > 24) {
              std::fprintf(stderr, "%s: --chunk-logs: '%s' is not in [16, 24]\n", argv[0], item.c_str());
              return false;
            }
            o.chunk_logs.push_back(log);
            return true;
          }))
        return 2;
    }
    else if (a.rfind("--budgets-gib=", 0) == 0 || a.rfind("--ablate-gib=", 0) == 0) {
      const bool ablate = a.rfind("--ablate-gib=", 0) == 0;
      if (!each_item(a, [&](const std::string& item) {
            const double gib = std::strtod(item.c_str(), nullptr);
            if (gib <= 0) {
              std::fprintf(stderr, "%s: %s: '%s' is not a positive number of GiB\n", argv[0],
                           ablate ? "--ablate-gib" : "--budgets-gib", item.c_str());
              return false;
            }
            (ablate ? o.ablate_gib : o.budgets_gib).push_back(gib);
            return true;
          }))
        return 2;
    }
    else {
      std::fprintf(stderr,
                   "usage: %s [--device=N] [--curve=bls12381|bn254] [--constraints=N] [--repeats=3] "
                   "[--cpu-constraints=N] [--msm-breakdown] [--compare-serial] [--shifted-h] [--shifted-witness[=8,6]] [--shifted-h-bits=12,0] "
                   "[--budgets-gib=141,80,40,24,16] "
                   "[--ablate-gib=24] [--chunk-logs=24,23] [--two-lanes] [--compaction=1,0] [--ntt-tile-log=11]\n",
                   argv[0]);
      return 2;
    }
  }
  try {
    return zkfarm::cuda::run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "partition_benchmark: %s\n", e.what());
    return 1;
  }
}

#endif  // ZKFARM_HAS_CUDA
