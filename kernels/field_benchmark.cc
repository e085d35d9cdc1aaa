// field_benchmark.cc -- single-thread latency of the prime-field primitives
// (mul, square, add, sub, neg, inverse) for the four fields of field.h.
//
// Every benchmark is a dependent chain (x = op(x, y)), so the numbers are
// latencies, which is what towers / point formulas / Miller loops see.
//   bazel run -c opt //kernels:field_benchmark
#include <benchmark/benchmark.h>

#include <random>

#include "kernels/field.h"

namespace zkfarm {
namespace {

template <class F>
F random_element(std::mt19937_64& rng) {
  typename F::Int v;
  for (auto& l : v.limbs) l = rng();
  return F::from_canonical(v);
}

template <class F>
void BM_Mul(benchmark::State& state) {
  std::mt19937_64 rng(1);
  F a = random_element<F>(rng), b = random_element<F>(rng);
  for (auto _ : state) {
    a = a * b;
    benchmark::DoNotOptimize(a);
  }
}

template <class F>
void BM_Square(benchmark::State& state) {
  std::mt19937_64 rng(2);
  F a = random_element<F>(rng);
  for (auto _ : state) {
    a = a.square();
    benchmark::DoNotOptimize(a);
  }
}

template <class F>
void BM_Add(benchmark::State& state) {
  std::mt19937_64 rng(3);
  F a = random_element<F>(rng), b = random_element<F>(rng);
  for (auto _ : state) {
    a = a + b;
    benchmark::DoNotOptimize(a);
  }
}

template <class F>
void BM_Sub(benchmark::State& state) {
  std::mt19937_64 rng(4);
  F a = random_element<F>(rng), b = random_element<F>(rng);
  for (auto _ : state) {
    a = a - b;
    benchmark::DoNotOptimize(a);
  }
}

template <class F>
void BM_Neg(benchmark::State& state) {
  std::mt19937_64 rng(5);
  F a = random_element<F>(rng);
  for (auto _ : state) {
    a = -a;
    benchmark::DoNotOptimize(a);
  }
}

template <class F>
void BM_Inverse(benchmark::State& state) {
  std::mt19937_64 rng(6);
  F a = random_element<F>(rng);
  for (auto _ : state) {
    a = a.inverse();
    benchmark::DoNotOptimize(a);
  }
}

#define ZKFARM_FIELD_BENCHMARKS(F)     \
  BENCHMARK(BM_Mul<F>);                \
  BENCHMARK(BM_Square<F>);             \
  BENCHMARK(BM_Add<F>);                \
  BENCHMARK(BM_Sub<F>);                \
  BENCHMARK(BM_Neg<F>);                \
  BENCHMARK(BM_Inverse<F>)->Unit(benchmark::kMicrosecond);

ZKFARM_FIELD_BENCHMARKS(Bn254Fq)
ZKFARM_FIELD_BENCHMARKS(Bn254Fr)
ZKFARM_FIELD_BENCHMARKS(Bls12381Fq)
ZKFARM_FIELD_BENCHMARKS(Bls12381Fr)

}  // namespace
}  // namespace zkfarm
