// ntt_test.cc -- NTT/iNTT/odd-coset against naive evaluation and against
// ffjavascript (snarkjs's field library) vectors in tests/vectors/ntt_vectors.json.
#include "kernels/ntt.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

namespace zkfarm {
namespace {

template <class F>
F random_element(std::mt19937_64& rng) {
  typename F::Int v;
  for (auto& l : v.limbs) l = rng();
  return F::from_canonical(v);
}

template <class F>
std::vector<F> random_vector(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<F> v(n);
  for (auto& x : v) x = random_element<F>(rng);
  return v;
}

// out[i] = sum_j in[j] * (g * w^i)^j: O(n^2) evaluation of the polynomial
// with coefficients `in` on the coset g * <w>.
template <class F>
std::vector<F> naive_evaluate(const std::vector<F>& coeffs, const F& w, const F& g) {
  std::size_t n = coeffs.size();
  std::vector<F> out(n);
  F point = g;
  for (std::size_t i = 0; i < n; ++i) {
    F acc = F::zero();
    for (std::size_t j = n; j-- > 0;) acc = acc * point + coeffs[j];  // Horner
    out[i] = acc;
    point *= w;
  }
  return out;
}

template <class F>
class NttTest : public ::testing::Test {};
using Fields = ::testing::Types<Bn254Fr, Bls12381Fr>;
TYPED_TEST_SUITE(NttTest, Fields);

TYPED_TEST(NttTest, RootsHaveExactOrder) {
  using F = TypeParam;
  constexpr std::size_t s = two_adicity<F>();
  for (std::size_t k = 1; k <= s; ++k) {
    F w = root_of_unity<F>(k);
    EXPECT_EQ(w.pow(std::uint64_t(1) << k), F::one()) << k;
    EXPECT_EQ(w.pow(std::uint64_t(1) << (k - 1)), -F::one()) << k;  // primitive
  }
  EXPECT_THROW(root_of_unity<F>(s + 1), std::invalid_argument);
}

TYPED_TEST(NttTest, MatchesNaiveEvaluation) {
  using F = TypeParam;
  for (unsigned log_n = 0; log_n <= 9; ++log_n) {
    std::size_t n = std::size_t(1) << log_n;
    auto coeffs = random_vector<F>(n, 10 + log_n);
    auto values = coeffs;
    ntt<F>(values);
    EXPECT_EQ(values, naive_evaluate(coeffs, root_of_unity<F>(log_n), F::one())) << "n=" << n;
    intt<F>(values);
    EXPECT_EQ(values, coeffs) << "n=" << n;
  }
}

// Spot-checks a few outputs of sizes large enough to exercise the late
// (post-cache-block) stages and the multi-threaded paths.
TYPED_TEST(NttTest, LargeSizesSpotCheckAndRoundTrip) {
  using F = TypeParam;
  for (unsigned log_n : {11u, 12u, 13u, 16u}) {
    std::size_t n = std::size_t(1) << log_n;
    auto coeffs = random_vector<F>(n, 100 + log_n);
    auto values = coeffs;
    ntt<F>(values);
    F w = root_of_unity<F>(log_n);
    for (std::size_t i : {std::size_t(0), std::size_t(1), n / 2 - 1, n / 2 + 3, n - 1}) {
      F x = w.pow(std::uint64_t(i)), acc = F::zero();
      for (std::size_t j = n; j-- > 0;) acc = acc * x + coeffs[j];
      EXPECT_EQ(values[i], acc) << "n=" << n << " i=" << i;
    }
    intt<F>(values);
    EXPECT_EQ(values, coeffs) << "n=" << n;
  }
}

TYPED_TEST(NttTest, OddCosetMatchesNaive) {
  using F = TypeParam;
  for (unsigned log_n : {0u, 1u, 2u, 5u, 8u}) {
    std::size_t n = std::size_t(1) << log_n;
    auto coeffs = random_vector<F>(n, 200 + log_n);
    auto evals = naive_evaluate(coeffs, root_of_unity<F>(log_n), F::one());
    evaluations_to_odd_coset<F>(evals);
    EXPECT_EQ(evals, naive_evaluate(coeffs, root_of_unity<F>(log_n), root_of_unity<F>(log_n + 1)))
        << "n=" << n;
  }
  // Multi-threaded size: spot checks.
  std::size_t log_n = 13, n = std::size_t(1) << log_n;
  auto coeffs = random_vector<F>(n, 300);
  auto evals = coeffs;
  ntt<F>(evals);
  evaluations_to_odd_coset<F>(evals);
  F w = root_of_unity<F>(log_n), g = root_of_unity<F>(log_n + 1);
  for (std::size_t i : {std::size_t(0), std::size_t(7), n - 1}) {
    F x = g * w.pow(std::uint64_t(i)), acc = F::zero();
    for (std::size_t j = n; j-- > 0;) acc = acc * x + coeffs[j];
    EXPECT_EQ(evals[i], acc) << i;
  }
}

TYPED_TEST(NttTest, RejectsBadSizes) {
  using F = TypeParam;
  std::vector<F> v(6), empty;
  EXPECT_THROW(ntt<F>(v), std::invalid_argument);
  EXPECT_THROW(intt<F>(empty), std::invalid_argument);
  EXPECT_THROW(evaluations_to_odd_coset<F>(v), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// ffjavascript vectors (tests/vectors/gen_ntt_vectors.mjs).

nlohmann::json load_vectors() {
  std::ifstream in("tests/vectors/ntt_vectors.json");
  if (!in) throw std::runtime_error("cannot open tests/vectors/ntt_vectors.json (run from the repo root)");
  return nlohmann::json::parse(in);
}

template <class F>
std::vector<F> parse(const nlohmann::json& arr) {
  std::vector<F> out;
  for (const auto& s : arr) out.push_back(F::from_decimal(s.get<std::string>()));
  return out;
}

template <class F>
void check_against_ffjavascript(const nlohmann::json& v) {
  ASSERT_EQ(v["s"].get<std::size_t>(), two_adicity<F>());
  EXPECT_EQ(coset_shift<F>(), F::from_decimal(v["shift"].get<std::string>()));
  auto roots = parse<F>(v["roots"]);
  ASSERT_EQ(roots.size(), two_adicity<F>() + 1);
  for (std::size_t k = 0; k < roots.size(); ++k) EXPECT_EQ(root_of_unity<F>(k), roots[k]) << "w[" << k << "]";
  EXPECT_EQ(odd_coset_generator<F>(two_adicity<F>()), coset_shift<F>());
  for (const auto& t : v["transforms"]) {
    auto input = parse<F>(t["input"]);
    auto values = input;
    ntt<F>(values);
    EXPECT_EQ(values, parse<F>(t["fft"])) << "fft log_n=" << t["log_n"];
    values = input;
    intt<F>(values);
    EXPECT_EQ(values, parse<F>(t["ifft"])) << "ifft log_n=" << t["log_n"];
    values = input;
    evaluations_to_odd_coset<F>(values);
    EXPECT_EQ(values, parse<F>(t["odd_coset"])) << "odd coset log_n=" << t["log_n"];
  }
}

TEST(NttVectors, Bn254MatchesFfjavascript) { check_against_ffjavascript<Bn254Fr>(load_vectors()["bn128"]); }
TEST(NttVectors, Bls12381MatchesFfjavascript) {
  check_against_ffjavascript<Bls12381Fr>(load_vectors()["bls12381"]);
}

// ---------------------------------------------------------------------------
// parallel_for contract.

TEST(ParallelFor, CoversRangeExactlyOnce) {
  for (std::size_t n : {0, 1, 2, 7, 1000, 100003}) {
    std::vector<int> hits(n, 0);
    parallel_for(n, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) hits[i]++;
    });
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << i;
  }
}

TEST(ParallelFor, RethrowsWorkerExceptions) {
  EXPECT_THROW(parallel_for(
                   1000,
                   [&](std::size_t b, std::size_t e) {
                     if (b <= 500 && 500 < e) throw std::runtime_error("boom");
                   },
                   1000),
               std::runtime_error);
  // The pool is still usable afterwards.
  std::atomic<std::size_t> sum{0};
  parallel_for(100, [&](std::size_t b, std::size_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 100u);
}

TEST(ParallelFor, NestedCallsRunSerially) {
  std::atomic<std::size_t> sum{0};
  parallel_for(
      8,
      [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i)
          parallel_for(10, [&](std::size_t bb, std::size_t ee) { sum += ee - bb; });
      },
      8);
  EXPECT_EQ(sum.load(), 80u);
}

TEST(ParallelFor, PrivatePoolJoins) {
  std::atomic<std::size_t> sum{0};
  {
    ThreadPool pool(3);
    pool.run(50, [&](std::size_t b, std::size_t e) { sum += e - b; }, 50);
  }
  EXPECT_EQ(sum.load(), 50u);
  EXPECT_THROW(ThreadPool(0), std::invalid_argument);
}

}  // namespace
}  // namespace zkfarm
