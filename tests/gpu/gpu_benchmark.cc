// gpu_benchmark -- timings of the CUDA kernels on one device, every result
// checked.
//
//   gpu_benchmark [--device=N] [--ntt-min-log=20] [--ntt-max-log=27]
//                 [--msm-min-log=20] [--msm-max-log=26] [--repeats=5]
//                 [--g2-max-log=24] [--quick] [--no-g1] [--no-g2] [--curve=bn254|bls12-381] [--only-msm]
//
// Method (as BENCHMARKS.md's GPU section states it): inputs random (never zeros), one
// warm-up, then the median of --repeats runs timed with CUDA events on the
// stream; data resident on the device unless a row says "+upload". Every
// configuration's output is verified once (NTT: a round trip on the device
// at every size and the CPU reference in the tests; MSM: the exact grid
// reference of test_inputs.h). Prints one line per measurement and a summary
// table at the end; exits 1 if any check failed.
#include <cstdio>

#ifndef ZKFARM_HAS_CUDA

int main() {
  std::printf("SKIPPED: no CUDA device (built without CUDA)\n");
  return 0;
}

#else

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cuda/device_context.h"
#include "kernels/cuda/msm.h"
#include "kernels/cuda/ntt.h"
#include "kernels/curves.h"
#include "tests/gpu/field_kernels.h"
#include "tests/gpu/test_inputs.h"

namespace zkfarm::cuda {
namespace {

struct Options {
  int device = 0;
  unsigned ntt_min_log = 20;
  unsigned ntt_max_log = 27;
  unsigned msm_min_log = 20;
  unsigned msm_max_log = 26;
  int repeats = 5;
  bool quick = false;
  bool g1 = true;
  bool g2 = true;
  std::string curve;  // empty: both; "bn254" or "bls12-381"
  unsigned g2_max_log = 24;
  bool only_msm = false;
  bool reduce_variants = false;  // rows per bucket-reduction setting (GpuMsmConfig::reduce_*)
};

struct Row {
  std::string what;
  double ms;
  std::string note;
};

std::vector<Row> g_rows;
int g_failures = 0;

void report(const std::string& what, double ms, const std::string& note = "") {
  std::printf("%-44s %10.3f ms  %s\n", what.c_str(), ms, note.c_str());
  std::fflush(stdout);
  g_rows.push_back({what, ms, note});
}

void check(bool ok, const std::string& what) {
  if (!ok) {
    ++g_failures;
    std::printf("CHECK FAILED: %s\n", what.c_str());
  }
}

// Median of `repeats` timed runs after one warm-up; body(stream) enqueues
// the work on the stream (it may also block).
template <class Body>
double time_ms(const DeviceContext& ctx, int repeats, Body&& body) {
  const cudaStream_t s = ctx.stream(0);
  Event start, stop;
  body(s);
  ZKFARM_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    start.record(s);
    body(s);
    stop.record(s);
    stop.synchronize();
    ms.push_back(Event::elapsed_ms(start, stop));
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

template <class Params>
void bench_field(const DeviceContext& ctx, const char* name) {
  const double rate32 = testing::field_mul_rate<Params>(ctx, false);
  const double rate64 = testing::field_mul_rate<Params>(ctx, true);
  const double k = double(2 * Params::kLimbs);  // 32-bit limbs
  char note[160];
  std::snprintf(note, sizeof note, "32-bit limbs %.3g mul/s (%.3g 32x32 products/s); 64-bit limbs %.3g mul/s",
                rate32, rate32 * 2 * k * k, rate64);
  report(std::string("field mul ") + name + " (ns per mul, device)", 1e9 / rate32, note);
}

template <class Fr>
void bench_ntt(const DeviceContext& ctx, const Options& o, const char* name, const GpuNttConfig& config,
               unsigned min_log) {
  const GpuNtt<Fr> gpu(ctx, config);
  const cudaStream_t s = ctx.stream(0);
  std::string label = config.tile_log ? " tile 2^" + std::to_string(config.tile_log) : "";
  if (config.tile_log == 11 && !config.generic_passes) label += " shaped";
  if (config.generic_passes) label += " generic";
  if (config.elementwise_reversal) label += " element-wise reversal";
  for (unsigned log_n = min_log; log_n <= o.ntt_max_log; ++log_n) {
    const std::size_t n = std::size_t(1) << log_n;
    const std::vector<Fr> input = testing::random_elements<Fr>(n, 1000 + log_n);
    DeviceBuffer<Fr> d(n, s);
    d.upload(input.data(), n, s);
    // Round trip first (verification), then timings on the same buffer.
    gpu.forward(d.data(), n, s);
    gpu.inverse(d.data(), n, s);
    std::vector<Fr> back(n);
    d.download(back.data(), n, s);
    ZKFARM_CUDA_CHECK(cudaStreamSynchronize(s));
    const bool ok = back == input;
    check(ok, std::string("ntt round trip ") + name + " 2^" + std::to_string(log_n) + label);
    const double fwd = time_ms(ctx, o.repeats, [&](cudaStream_t st) { gpu.forward(d.data(), n, st); });
    const double inv = time_ms(ctx, o.repeats, [&](cudaStream_t st) { gpu.inverse(d.data(), n, st); });
    const double coset =
        time_ms(ctx, o.repeats, [&](cudaStream_t st) { gpu.evaluations_to_odd_coset(d.data(), n, st); });
    char note[128];
    std::snprintf(note, sizeof note, "inverse %.3f ms, odd coset %.3f ms, %s", inv, coset, ok ? "verified" : "WRONG");
    report(std::string("ntt ") + name + " 2^" + std::to_string(log_n) + label, fwd, note);
  }
}

template <class Fr>
void bench_ntt(const DeviceContext& ctx, const Options& o, const char* name) {
  const unsigned large = std::max(o.quick ? 16u : o.ntt_min_log, 24u);
  bench_ntt<Fr>(ctx, o, name, GpuNttConfig{}, o.quick ? 16 : o.ntt_min_log);
  // At the large sizes: the generic pass kernel (the default before the
  // shaped kernels), the shaped kernels of 2^11 tiles (GpuNttConfig::tile_log
  // 11: eight elements a thread, the default before the narrow kernels), and
  // the default again (the run-to-run spread).
  GpuNttConfig generic;
  generic.generic_passes = true;
  bench_ntt<Fr>(ctx, o, name, generic, large);
  bench_ntt<Fr>(ctx, o, name, GpuNttConfig{11}, large);
  GpuNttConfig elementwise;
  elementwise.elementwise_reversal = true;
  bench_ntt<Fr>(ctx, o, name, elementwise, large);
  bench_ntt<Fr>(ctx, o, name, GpuNttConfig{}, large);
}

template <class Curve, class G>
void bench_msm(const DeviceContext& ctx, const Options& o, const char* name, const typename G::Affine& generator,
               unsigned min_log, unsigned max_log, bool extras) {
  using Fr = typename Curve::Fr;
  using Affine = typename G::Affine;
  const cudaStream_t s = ctx.stream(0);
  for (unsigned log_n = min_log; log_n <= max_log; log_n += 2) {
    const std::size_t n = std::size_t(1) << log_n;
    const testing::GridPoints<Affine> grid(n, generator, 77 + log_n);
    const std::vector<Fr> scalars = testing::random_elements<Fr>(n, 88 + log_n);
    DeviceBuffer<Affine> bases(n, s);
    DeviceBuffer<Fr> device_scalars(n, s);
    bases.upload(grid.points.data(), n, s);
    device_scalars.upload(scalars.data(), n, s);
    const G expected = grid.template reference_msm<Curve, G>(scalars);

    // One verified, timed row: the MSM of `sc` over `points` (the bases, or
    // a shifted-bases table with its config).
    auto run_on = [&](const Affine* points, const GpuMsmConfig& config, const DeviceBuffer<Fr>& sc, const G& want,
                      const std::string& label) {
      GpuMsmStats stats;
      G got = msm_device<Curve, G>(ctx, points, sc.data(), n, s, config, &stats);
      const bool ok = got == want;
      check(ok, label);
      const double ms = time_ms(ctx, o.repeats, [&](cudaStream_t st) {
        got = msm_device<Curve, G>(ctx, points, sc.data(), n, st, config, &stats);
      });
      char note[256];
      std::snprintf(note, sizeof note,
                    "c=%u W=%u sets=%u dense=%zu ones=%zu levels=%u stages "
                    "classify/ones/sort/accumulate/reduce %.1f/%.1f/%.1f/%.1f/%.1f ms %s",
                    stats.window_bits, stats.windows, stats.bucket_sets, stats.dense, stats.ones,
                    stats.record_levels, stats.stage_ms[0], stats.stage_ms[1], stats.stage_ms[2],
                    stats.stage_ms[3], stats.stage_ms[4], ok ? "verified" : "WRONG");
      report(label, ms, note);
    };
    auto run = [&](const GpuMsmConfig& config, const DeviceBuffer<Fr>& sc, const G& want, const std::string& label) {
      run_on(bases.data(), config, sc, want, label);
    };
    const std::string base = std::string("msm ") + name + " 2^" + std::to_string(log_n);
    run(GpuMsmConfig{}, device_scalars, expected, base);

    // Same, with the scalars uploaded from pinned memory inside the timing
    // (the prover's case: bases resident, witness new each partition).
    {
      PinnedBuffer<Fr> pinned(n);
      std::memcpy(static_cast<void*>(pinned.data()), scalars.data(), n * sizeof(Fr));
      const double ms = time_ms(ctx, o.repeats, [&](cudaStream_t st) {
        device_scalars.upload(pinned.data(), n, st);
        (void)msm_device<Curve, G>(ctx, bases.data(), device_scalars.data(), n, st);
      });
      report(base + " +upload", ms, "scalars from pinned host memory");
    }
    // Witness-like scalars at every size: 45% zeros, 45% ones, 10% random
    // (the 0/1-heavy profile of a PoRep witness).
    std::vector<Fr> witness = scalars;
    for (auto& x : witness) {
      const std::uint64_t r = x.mont.limbs[1] % 20;
      if (r < 9) x = Fr::zero();
      else if (r < 18) x = Fr::one();
    }
    DeviceBuffer<Fr> device_witness(n, s);
    device_witness.upload(witness.data(), n, s);
    const G witness_expected = grid.template reference_msm<Curve, G>(witness);
    run(GpuMsmConfig{}, device_witness, witness_expected, base + " witness 45%0 45%1");
    // The bucket reduction's chains (GpuMsmConfig::reduce_group and
    // reduce_segment_log): latency at small sizes, noise at large ones.
    if (o.reduce_variants) {
      for (const auto& [group, segment_log] : {std::pair{16u, 6u}, {2u, 2u}, {2u, 3u}, {4u, 2u}, {8u, 4u}}) {
        GpuMsmConfig config;
        config.reduce_group = group;
        config.reduce_segment_log = segment_log;
        run(config, device_scalars, expected,
            base + " reduce g=" + std::to_string(group) + " s=" + std::to_string(segment_log));
      }
    }
    constexpr bool kG1 = std::is_same_v<G, typename Curve::G1>;
    if ((log_n >= 22 && (log_n <= 24 || kG1)) || log_n <= 18) {
      // Precomputed shifted bases (G1 and G2): the table's build time and
      // memory, then the MSM over it. Small sizes too: a small circuit's
      // witness queries get tables (shift_witness_bases).
      const ShiftedLayout layout = shifted_layout<Curve, G>(n);
      if (layout.bytes + std::size_t(32) * n * layout.windows < device_memory_available()) {
        Event start, stop;
        start.record(s);
        const auto table = shifted_bases<Curve, G>(ctx, bases.data(), n, s);
        stop.record(s);
        ZKFARM_CUDA_CHECK(cudaStreamSynchronize(s));
        char note[160];
        std::snprintf(note, sizeof note, "c=%u, %u rows, %.2f GiB (the bases alone: %.2f GiB)", table.window_bits,
                      table.windows, double(layout.bytes) / double(1u << 30),
                      double(n * sizeof(Affine)) / double(1u << 30));
        report(base + " shifted bases: build", Event::elapsed_ms(start, stop), note);
        run_on(table.table.data(), table.apply(GpuMsmConfig{}), device_scalars, expected, base + " shifted bases");
        if (log_n <= 18) {
          // A small circuit's queries over tables of one c each: a witness
          // query at the model's c (sized for all n points) and at smaller
          // ones (sized for the dense tenth), the ones in the buckets and
          // apart; on G1 H's dense scalars too, against the model's c (the
          // row above).
          run_on(table.table.data(), table.apply(GpuMsmConfig{}), device_witness, witness_expected,
                 base + " witness 45%0 45%1 shifted bases");
          for (unsigned c : {5u, 6u, 8u, 10u, 12u, 14u}) {
            const bool witness_rows = c <= 10, dense_row = kG1 && c >= 8 && c != table.window_bits;
            if (!witness_rows && !dense_row) continue;
            const auto other = shifted_bases<Curve, G>(ctx, bases.data(), n, s, c);
            const std::string at = " shifted bases c=" + std::to_string(c);
            if (witness_rows) {
              run_on(other.table.data(), other.apply(GpuMsmConfig{}), device_witness, witness_expected,
                     base + " witness 45%0 45%1" + at);
              GpuMsmConfig apart;  // the ones summed on their own first
              apart.ones_in_buckets = false;
              run_on(other.table.data(), other.apply(apart), device_witness, witness_expected,
                     base + " witness 45%0 45%1" + at + " ones apart");
            }
            if (dense_row) run_on(other.table.data(), other.apply(GpuMsmConfig{}), device_scalars, expected, base + at);
          }
        }
        if (kG1 && extras && log_n == 24) {
          // The accumulation's thread count over the table (GpuMsmConfig::
          // accumulate_waves; the default row above).
          for (unsigned waves : {3u, 16u}) {
            GpuMsmConfig config;
            config.accumulate_waves = waves;
            run_on(table.table.data(), table.apply(config), device_scalars, expected,
                   base + " shifted bases waves=" + std::to_string(waves));
          }
          // Tables of other window sizes (12 rows at c = 22 and 23, 11 at 24).
          for (unsigned c : {22u, 23u, 24u}) {
            if (c == table.window_bits) continue;
            const auto other = shifted_bases<Curve, G>(ctx, bases.data(), n, s, c);
            run_on(other.table.data(), other.apply(GpuMsmConfig{}), device_scalars, expected,
                   base + " shifted bases c=" + std::to_string(c));
          }
        }
      } else {
        report(base + " shifted bases", 0, "not run: the table needs " + std::to_string(layout.bytes >> 30) + " GiB");
      }
    }
    if (extras && log_n < 24) {
      // The accumulation's share per thread where the record levels weigh:
      // fixed waves with no minimum share, against the default row.
      for (unsigned waves : {3u, 8u, 16u}) {
        GpuMsmConfig config;
        config.accumulate_waves = waves;
        config.accumulate_min_share = 0;
        run(config, device_scalars, expected, base + " waves=" + std::to_string(waves) + " share=0");
      }
    }
    if (extras && log_n == 26) {
      for (unsigned c : {20u, 21u, 22u, 23u}) {
        GpuMsmConfig config;
        config.window_bits = c;
        run(config, device_scalars, expected, base + " c=" + std::to_string(c));
      }
    }
    if (extras && log_n == 24) {
      // Window sizes around the model's choice, and the accumulation kernel
      // with capped registers (more resident warps).
      for (unsigned c : {19u, 21u}) {
        GpuMsmConfig config;
        config.window_bits = c;
        run(config, device_scalars, expected, base + " c=" + std::to_string(c));
      }
      for (unsigned blocks : {3u, 4u}) {
        GpuMsmConfig config;
        config.accumulate_min_blocks = blocks;
        run(config, device_scalars, expected, base + " min_blocks=" + std::to_string(blocks));
      }
      for (unsigned waves : {1u, 3u, 4u, 16u}) {
        GpuMsmConfig config;
        config.accumulate_waves = waves;
        run(config, device_scalars, expected, base + " waves=" + std::to_string(waves));
      }
    }
  }
}

void bench_upload(const DeviceContext& ctx, const Options& o) {
  const std::size_t bytes = std::size_t(1) << 30;
  PinnedBuffer<std::uint8_t> pinned(bytes);
  std::memset(pinned.data(), 0x5a, bytes);
  DeviceBuffer<std::uint8_t> d(bytes, ctx.stream(0));
  const double ms = time_ms(ctx, o.repeats, [&](cudaStream_t st) { d.upload(pinned.data(), bytes, st); });
  char note[64];
  std::snprintf(note, sizeof note, "%.1f GB/s", double(bytes) / (ms * 1e-3) / 1e9);
  report("upload 1 GiB pinned -> device", ms, note);
}

int run(const Options& o) {
  if (DeviceContext::visible_device_count() == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    return 0;
  }
  DeviceContext ctx(o.device);
  std::printf("%s\n", ctx.info().summary().c_str());
  if (!o.only_msm) {
    bench_upload(ctx, o);
    bench_field<Bn254FqParams>(ctx, "BN254 Fq");
    bench_field<Bls12381FqParams>(ctx, "BLS12-381 Fq");
    bench_field<Bn254FrParams>(ctx, "BN254 Fr");
    bench_ntt<Bn254Fr>(ctx, o, "BN254");
    bench_ntt<Bls12381Fr>(ctx, o, "BLS12-381");
  }
  const unsigned msm_lo = o.quick ? 16 : o.msm_min_log;
  const bool bn254 = o.curve.empty() || o.curve == "bn254";
  const bool bls12_381 = o.curve.empty() || o.curve == "bls12-381";
  if (o.g1 && bn254)
    bench_msm<Bn254, Bn254::G1>(ctx, o, "G1 BN254", Bn254::g1_generator(), msm_lo, o.msm_max_log, true);
  if (o.g1 && bls12_381)
    bench_msm<Bls12381, Bls12381::G1>(ctx, o, "G1 BLS12-381", Bls12381::g1_generator(), msm_lo, o.msm_max_log, true);
  const unsigned g2_hi = std::min(o.msm_max_log, o.g2_max_log);
  if (o.g2 && bn254) bench_msm<Bn254, Bn254::G2>(ctx, o, "G2 BN254", Bn254::g2_generator(), msm_lo, g2_hi, false);
  if (o.g2 && bls12_381)
    bench_msm<Bls12381, Bls12381::G2>(ctx, o, "G2 BLS12-381", Bls12381::g2_generator(), msm_lo, g2_hi, false);

  std::printf("\n==== summary (median ms; %s) ====\n", ctx.info().name.c_str());
  for (const Row& r : g_rows) std::printf("%-44s %10.3f  %s\n", r.what.c_str(), r.ms, r.note.c_str());
  std::printf("checks failed: %d\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace zkfarm::cuda

int main(int argc, char** argv) {
  zkfarm::cuda::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* prefix) { return std::strtol(a.c_str() + std::strlen(prefix), nullptr, 10); };
    if (a.rfind("--device=", 0) == 0) o.device = int(value("--device="));
    else if (a.rfind("--ntt-min-log=", 0) == 0) o.ntt_min_log = unsigned(value("--ntt-min-log="));
    else if (a.rfind("--msm-min-log=", 0) == 0) o.msm_min_log = unsigned(value("--msm-min-log="));
    else if (a.rfind("--ntt-max-log=", 0) == 0) o.ntt_max_log = unsigned(value("--ntt-max-log="));
    else if (a.rfind("--msm-max-log=", 0) == 0) o.msm_max_log = unsigned(value("--msm-max-log="));
    else if (a.rfind("--repeats=", 0) == 0) o.repeats = int(value("--repeats="));
    else if (a.rfind("--g2-max-log=", 0) == 0) o.g2_max_log = unsigned(value("--g2-max-log="));
    else if (a == "--quick") o.quick = true;
    else if (a == "--no-g1") o.g1 = false;
    else if (a.rfind("--curve=", 0) == 0 && (a == "--curve=bn254" || a == "--curve=bls12-381")) o.curve = a.substr(8);
    else if (a == "--no-g2") o.g2 = false;
    else if (a == "--only-msm") o.only_msm = true;
    else if (a == "--reduce-variants") o.reduce_variants = true;
    else {
      std::fprintf(stderr, "usage: %s [--device=N] [--ntt-min-log=20] [--ntt-max-log=27] [--msm-min-log=20] [--msm-max-log=26] [--repeats=5] [--g2-max-log=24] [--quick] [--no-g1] [--no-g2] [--curve=bn254|bls12-381] [--only-msm] [--reduce-variants]\n",
                   argv[0]);
      return 2;
    }
  }
  try {
    return zkfarm::cuda::run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_benchmark: %s\n", e.what());
    return 1;
  }
}

#endif  // ZKFARM_HAS_CUDA
