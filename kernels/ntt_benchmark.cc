// ntt_benchmark.cc -- NTT, iNTT and odd-coset throughput on the CPU pool.
//
// Sizes 2^16..2^22 for BN254 and BLS12-381 Fr. Quick run:
//   bazel run //kernels:ntt_benchmark -- --benchmark_filter='/(16|18|20)$'
// Thread count: ZKFARM_THREADS (default: all hardware threads).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kernels/ntt.h"

namespace zkfarm {
namespace {

template <class F>
std::vector<F> random_vector(std::size_t n) {
  std::mt19937_64 rng(42);
  std::vector<F> v(n);
  for (auto& x : v) {
    typename F::Int i;
    for (auto& l : i.limbs) l = rng();
    x = F::from_canonical(i);
  }
  return v;
}

template <class F>
void BM_Ntt(benchmark::State& state) {
  auto v = random_vector<F>(std::size_t(1) << state.range(0));
  for (auto _ : state) {
    ntt<F>(v);
    benchmark::DoNotOptimize(v.data());
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(v.size()));
}

template <class F>
void BM_Intt(benchmark::State& state) {
  auto v = random_vector<F>(std::size_t(1) << state.range(0));
  for (auto _ : state) {
    intt<F>(v);
    benchmark::DoNotOptimize(v.data());
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(v.size()));
}

// One of the prover's three coset transforms (iNTT + scale + NTT).
template <class F>
void BM_OddCoset(benchmark::State& state) {
  auto v = random_vector<F>(std::size_t(1) << state.range(0));
  for (auto _ : state) {
    evaluations_to_odd_coset<F>(v);
    benchmark::DoNotOptimize(v.data());
  }
  state.SetItemsProcessed(state.iterations() * std::int64_t(v.size()));
}

#define ZKFARM_NTT_BENCH(fn, F) \
  BENCHMARK_TEMPLATE(fn, F)->DenseRange(16, 22, 1)->Unit(benchmark::kMillisecond)->UseRealTime()

ZKFARM_NTT_BENCH(BM_Ntt, Bn254Fr);
ZKFARM_NTT_BENCH(BM_Ntt, Bls12381Fr);
ZKFARM_NTT_BENCH(BM_Intt, Bn254Fr);
ZKFARM_NTT_BENCH(BM_Intt, Bls12381Fr);
ZKFARM_NTT_BENCH(BM_OddCoset, Bn254Fr);
ZKFARM_NTT_BENCH(BM_OddCoset, Bls12381Fr);

}  // namespace
}  // namespace zkfarm
