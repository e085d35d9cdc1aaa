// msm_benchmark.cc -- G1 MSM throughput on the CPU pool, both curves, and
// the GLV split at small sizes on G1 and G2.
//
// Benchmarks are named BM_MsmG1<Curve>/<log2 n>/<scalars>, scalars 0 =
// uniformly random, 1 = Filecoin-like (50% zero, 40% one, 10% random).
// Sizes 2^16..2^22. Quick run:
//   bazel run //kernels:msm_benchmark -- --benchmark_filter='/(16|18)/'
// BM_MsmGlv<Curve, G>/<log2 n>/<glv>: random scalars, 2^8..2^16 points,
// glv 0 = split off, 1 = on, 2 = the cost model's choice (MsmConfig::glv).
// Thread count: ZKFARM_THREADS (default: all hardware threads).
//
// Bases: 2^16 distinct random points (FixedBaseTable from the generator),
// tiled to the full size so the array has the real memory footprint;
// Pippenger's cost does not depend on the points being distinct.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kernels/curves.h"
#include "kernels/msm.h"

namespace zkfarm {
namespace {

constexpr std::size_t kDistinctBases = std::size_t(1) << 16;

template <class F>
F random_scalar(std::mt19937_64& rng) {
  typename F::Int v;
  for (auto& l : v.limbs) l = rng();
  return F::from_canonical(v);
}

template <class Curve, class G = typename Curve::G1>
const std::vector<typename G::Affine>& distinct_bases() {
  static const std::vector<typename G::Affine> bases = [] {
    std::mt19937_64 rng(1);
    std::vector<typename Curve::Fr> k(kDistinctBases);
    for (auto& x : k) x = random_scalar<typename Curve::Fr>(rng);
    if constexpr (std::is_same_v<G, typename Curve::G1>)
      return FixedBaseTable<Curve, G>(Curve::g1_generator()).mul_many(k);
    else
      return FixedBaseTable<Curve, G>(Curve::g2_generator()).mul_many(k);
  }();
  return bases;
}

template <class Curve>
void BM_MsmG1(benchmark::State& state) {
  using Fr = typename Curve::Fr;
  const std::size_t n = std::size_t(1) << state.range(0);
  const bool filecoin_like = state.range(1) == 1;
  const auto& pool = distinct_bases<Curve>();
  std::vector<typename Curve::G1Affine> bases(n);
  for (std::size_t i = 0; i < n; ++i) bases[i] = pool[i % pool.size()];
  std::mt19937_64 rng(2);
  std::vector<Fr> scalars(n);
  for (auto& s : scalars) {
    unsigned r = rng() % 10;
    s = !filecoin_like ? random_scalar<Fr>(rng) : r < 5 ? Fr::zero() : r < 9 ? Fr::one() : random_scalar<Fr>(rng);
  }
  for (auto _ : state) {
    auto result = msm<Curve, typename Curve::G1>(bases, scalars);
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(n));
  state.counters["threads"] = double(parallel_threads());
}

void sizes(benchmark::internal::Benchmark* b) {
  for (int kind : {0, 1})
    for (int log_n = 16; log_n <= 22; ++log_n) b->Args({log_n, kind});
  b->Unit(benchmark::kMillisecond)->UseRealTime()->ArgNames({"log_n", "zero_one"});
}

BENCHMARK_TEMPLATE(BM_MsmG1, Bn254)->Apply(sizes);
BENCHMARK_TEMPLATE(BM_MsmG1, Bls12381)->Apply(sizes);

template <class Curve, class G>
void BM_MsmGlv(benchmark::State& state) {
  using Fr = typename Curve::Fr;
  const std::size_t n = std::size_t(1) << state.range(0);
  const auto& pool = distinct_bases<Curve, G>();
  std::vector<typename G::Affine> bases(pool.begin(), pool.begin() + std::ptrdiff_t(std::min(n, pool.size())));
  std::mt19937_64 rng(3);
  std::vector<Fr> scalars(n);
  for (auto& s : scalars) s = random_scalar<Fr>(rng);
  MsmConfig config;
  config.glv = state.range(1) == 0 ? MsmConfig::Glv::kOff
               : state.range(1) == 1 ? MsmConfig::Glv::kOn
                                     : MsmConfig::Glv::kAuto;
  for (auto _ : state) {
    auto result = msm<Curve, G>(bases, scalars, config);
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(n));
}

void glv_sizes(benchmark::internal::Benchmark* b) {
  for (int log_n : {8, 10, 12, 13, 14, 16})
    for (int glv : {0, 1, 2}) b->Args({log_n, glv});
  b->Unit(benchmark::kMillisecond)->UseRealTime()->ArgNames({"log_n", "glv"});
}

BENCHMARK_TEMPLATE(BM_MsmGlv, Bn254, Bn254::G1)->Apply(glv_sizes);
BENCHMARK_TEMPLATE(BM_MsmGlv, Bn254, Bn254::G2)->Apply(glv_sizes);
BENCHMARK_TEMPLATE(BM_MsmGlv, Bls12381, Bls12381::G1)->Apply(glv_sizes);
BENCHMARK_TEMPLATE(BM_MsmGlv, Bls12381, Bls12381::G2)->Apply(glv_sizes);

}  // namespace
}  // namespace zkfarm
