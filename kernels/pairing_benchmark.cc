// pairing_benchmark.cc -- single-thread cost of the curve and pairing
// primitives: Fq multiplication, Fq12 operations, Miller loop, final
// exponentiation, one pairing, a 4-pair multi-pairing (one Groth16
// verification), the G1 and G2 subgroup checks (the multiplication by r
// against the configs' endomorphism tests, curves.cc) and BLS12-381 G2 decompression.
//   bazel run //kernels:pairing_benchmark
#include <benchmark/benchmark.h>

#include <vector>

#include "kernels/bls12_381_compress.h"
#include "kernels/curves.h"

namespace zkfarm {
namespace {

template <class Curve>
struct Inputs {
  std::vector<typename Curve::G1Affine> g1;
  std::vector<typename Curve::G2Affine> g2;
  Inputs() {
    for (std::uint64_t i = 1; i <= 4; ++i) {
      g1.push_back(Curve::G1::from_affine(Curve::g1_generator()).scalar_mul(Curve::Fr::from_u64(1000 + i)).to_affine());
      g2.push_back(Curve::G2::from_affine(Curve::g2_generator()).scalar_mul(Curve::Fr::from_u64(77 * i)).to_affine());
    }
  }
};

template <class Curve>
void BM_FqMul(benchmark::State& state) {
  auto a = Curve::Fq::from_u64(3), b = Curve::Fq::from_u64(5);
  for (auto _ : state) {
    a = a * b;
    benchmark::DoNotOptimize(a);
  }
}

template <class Curve>
void BM_Fq12Mul(benchmark::State& state) {
  auto f = Curve::pairing(Curve::g1_generator(), Curve::g2_generator());
  auto g = f;
  for (auto _ : state) {
    g = g * f;
    benchmark::DoNotOptimize(g);
  }
}

template <class Curve>
void BM_Fq12CyclotomicSquare(benchmark::State& state) {
  auto f = Curve::pairing(Curve::g1_generator(), Curve::g2_generator());
  for (auto _ : state) {
    f = f.cyclotomic_square();
    benchmark::DoNotOptimize(f);
  }
}

template <class Curve>
void BM_MillerLoop(benchmark::State& state) {
  Inputs<Curve> in;
  for (auto _ : state)
    benchmark::DoNotOptimize(miller_loop<Curve>(std::span(in.g1.data(), 1), std::span(in.g2.data(), 1)));
}

template <class Curve>
void BM_FinalExponentiation(benchmark::State& state) {
  Inputs<Curve> in;
  auto f = miller_loop<Curve>(std::span(in.g1.data(), 1), std::span(in.g2.data(), 1));
  for (auto _ : state) benchmark::DoNotOptimize(final_exponentiation<Curve>(f));
}

template <class Curve>
void BM_Pairing(benchmark::State& state) {
  Inputs<Curve> in;
  for (auto _ : state) benchmark::DoNotOptimize(Curve::pairing(in.g1[0], in.g2[0]));
}

template <class Curve>
void BM_MultiPairing4(benchmark::State& state) {
  Inputs<Curve> in;
  for (auto _ : state)
    benchmark::DoNotOptimize(Curve::multi_pairing(in.g1, in.g2));
}

template <class Curve>
void BM_G2SubgroupCheck(benchmark::State& state) {
  Inputs<Curve> in;
  for (auto _ : state) benchmark::DoNotOptimize(in.g2[0].is_in_subgroup_by_order());
}

template <class Curve>
void BM_G2SubgroupCheckEndomorphism(benchmark::State& state) {
  Inputs<Curve> in;
  for (auto _ : state) benchmark::DoNotOptimize(in.g2[0].is_in_subgroup());
}

template <class Curve>
void BM_G1SubgroupCheck(benchmark::State& state) {
  Inputs<Curve> in;
  for (auto _ : state) benchmark::DoNotOptimize(in.g1[0].is_in_subgroup_by_order());
}

template <class Curve>
void BM_G1SubgroupCheckEndomorphism(benchmark::State& state) {
  Inputs<Curve> in;
  for (auto _ : state) benchmark::DoNotOptimize(in.g1[0].is_in_subgroup());
}

void BM_Bls12381DecompressG2(benchmark::State& state) {
  Inputs<Bls12381> in;
  auto bytes = bls12_381::compress_g2(in.g2[0]);
  for (auto _ : state) benchmark::DoNotOptimize(bls12_381::decompress_g2(bytes));
}

#define ZKFARM_CURVE_BENCHMARKS(Curve)                                          \
  BENCHMARK(BM_FqMul<Curve>);                                                   \
  BENCHMARK(BM_Fq12Mul<Curve>);                                                 \
  BENCHMARK(BM_Fq12CyclotomicSquare<Curve>);                                    \
  BENCHMARK(BM_MillerLoop<Curve>)->Unit(benchmark::kMicrosecond);               \
  BENCHMARK(BM_FinalExponentiation<Curve>)->Unit(benchmark::kMicrosecond);      \
  BENCHMARK(BM_Pairing<Curve>)->Unit(benchmark::kMicrosecond);                  \
  BENCHMARK(BM_MultiPairing4<Curve>)->Unit(benchmark::kMicrosecond);            \
  BENCHMARK(BM_G2SubgroupCheck<Curve>)->Unit(benchmark::kMicrosecond);             \
  BENCHMARK(BM_G2SubgroupCheckEndomorphism<Curve>)->Unit(benchmark::kMicrosecond); \
  BENCHMARK(BM_G1SubgroupCheck<Curve>)->Unit(benchmark::kMicrosecond);             \
  BENCHMARK(BM_G1SubgroupCheckEndomorphism<Curve>)->Unit(benchmark::kMicrosecond);

ZKFARM_CURVE_BENCHMARKS(Bn254)
ZKFARM_CURVE_BENCHMARKS(Bls12381)
BENCHMARK(BM_Bls12381DecompressG2)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace zkfarm
