// msm_test.cc -- Pippenger MSM and FixedBaseTable against independent sums,
// for G1 and G2 of BN254 and BLS12-381.
//
// Small sizes compare with sum_i scalar_mul(bases[i], scalars[i]) directly.
// Larger sizes use bases with known discrete logs (base_i = [b_i] G, built
// by a chain of additions), so the expected MSM is [sum_i s_i b_i] G: one
// scalar multiplication instead of n.
#include "kernels/msm.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/curves.h"
#include "kernels/seeded_random_testutil.h"

namespace zkfarm {
namespace {

template <class C, class Group>
struct Case {
  using Curve = C;
  using G = Group;
  using Affine = typename G::Affine;
  using Fr = typename C::Fr;
  static Affine generator() {
    if constexpr (std::is_same_v<G, typename C::G1>) return C::g1_generator();
    else return C::g2_generator();
  }
};


// Bases with known logs: b_i = b0 + i*q (some entries then overwritten with
// duplicates, negations and infinity, logs adjusted).
template <class T>
struct Instance {
  std::vector<typename T::Affine> bases;
  std::vector<typename T::Fr> logs;  // bases[i] = [logs[i]] G; infinity: 0
  std::vector<typename T::Fr> scalars;
};

enum class Scalars { kRandom, kMixed, kZeroOneHeavy, kAllZero, kAllOne, kSmall, kMinusOne };

template <class T>
Instance<T> make_instance(std::size_t n, Scalars kind, std::uint64_t seed) {
  using G = typename T::G;
  using Fr = typename T::Fr;
  std::mt19937_64 rng(seed);
  Instance<T> inst;
  const auto g = G::from_affine(T::generator());
  Fr b0 = seeded_element<Fr>(rng), q = seeded_element<Fr>(rng);
  G p = g.scalar_mul(b0);
  const G step = g.scalar_mul(q);
  std::vector<G> jac(n);
  inst.logs.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    jac[i] = p;
    inst.logs[i] = b0 + q * Fr::from_u64(i);
    p += step;
  }
  inst.bases.resize(n);
  G::batch_to_affine(jac, inst.bases);
  // Duplicates, negations and points at infinity (only when n is big enough
  // to keep the rest random).
  if (n >= 8) {
    for (std::size_t k = 0; k < n / 8; ++k) {
      std::size_t i = rng() % n, j = rng() % n;
      switch (k % 3) {
        case 0:  // duplicate
          inst.bases[i] = inst.bases[j];
          inst.logs[i] = inst.logs[j];
          break;
        case 1:  // negation
          inst.bases[i] = -inst.bases[j];
          inst.logs[i] = -inst.logs[j];
          break;
        case 2:  // infinity
          inst.bases[i] = T::Affine::identity();
          inst.logs[i] = Fr::zero();
          break;
      }
    }
  }
  inst.scalars.resize(n);
  const Fr minus_one = -Fr::one();
  for (std::size_t i = 0; i < n; ++i) {
    Fr& s = inst.scalars[i];
    switch (kind) {
      case Scalars::kRandom: s = seeded_element<Fr>(rng); break;
      case Scalars::kMixed: {
        unsigned r = rng() % 5;
        s = r == 0 ? Fr::zero() : r == 1 ? Fr::one() : r == 2 ? minus_one : seeded_element<Fr>(rng);
        break;
      }
      case Scalars::kZeroOneHeavy: {
        unsigned r = rng() % 100;
        s = r < 60 ? Fr::zero() : r < 95 ? Fr::one() : seeded_element<Fr>(rng);
        break;
      }
      case Scalars::kAllZero: s = Fr::zero(); break;
      case Scalars::kAllOne: s = Fr::one(); break;
      case Scalars::kSmall: s = Fr::from_u64(rng() % 1000); break;
      case Scalars::kMinusOne: s = minus_one; break;
    }
  }
  return inst;
}

template <class T>
typename T::G expected_by_logs(const Instance<T>& inst) {
  using Fr = typename T::Fr;
  Fr total = Fr::zero();
  for (std::size_t i = 0; i < inst.scalars.size(); ++i) total += inst.scalars[i] * inst.logs[i];
  return T::G::from_affine(T::generator()).scalar_mul(total);
}

template <class T>
typename T::G expected_naive(const Instance<T>& inst) {
  auto acc = T::G::identity();
  for (std::size_t i = 0; i < inst.scalars.size(); ++i)
    acc += T::G::from_affine(inst.bases[i]).scalar_mul(inst.scalars[i]);
  return acc;
}

template <class T>
class MsmTest : public ::testing::Test {};
using Cases = ::testing::Types<Case<Bn254, Bn254::G1>, Case<Bn254, Bn254::G2>, Case<Bls12381, Bls12381::G1>,
                               Case<Bls12381, Bls12381::G2>>;
TYPED_TEST_SUITE(MsmTest, Cases);

template <class T>
typename T::G run_msm(const Instance<T>& inst, const MsmConfig& config = {}) {
  return msm<typename T::Curve, typename T::G>(inst.bases, inst.scalars, config);
}

TYPED_TEST(MsmTest, SmallSizesMatchNaiveScalarMul) {
  using T = TypeParam;
  for (std::size_t n : {1, 2, 3, 17}) {
    for (Scalars kind : {Scalars::kRandom, Scalars::kMixed, Scalars::kMinusOne}) {
      auto inst = make_instance<T>(n, kind, 1000 * n + int(kind));
      EXPECT_EQ(run_msm(inst), expected_naive(inst)) << "n=" << n << " kind=" << int(kind);
    }
  }
}

TYPED_TEST(MsmTest, EmptyAndMismatched) {
  using T = TypeParam;
  std::vector<typename T::Affine> bases(3);
  std::vector<typename T::Fr> scalars(2);
  EXPECT_TRUE((msm<typename T::Curve, typename T::G>({}, {}).is_identity()));
  EXPECT_THROW((msm<typename T::Curve, typename T::G>(bases, scalars)), std::invalid_argument);
  MsmConfig bad;
  bad.window_bits = 3;
  scalars.resize(3, T::Fr::from_u64(5));
  EXPECT_THROW((msm<typename T::Curve, typename T::G>(bases, scalars, bad)), std::invalid_argument);
}

TYPED_TEST(MsmTest, ManySizesAndScalarKindsMatchLogs) {
  using T = TypeParam;
  for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(100), std::size_t(1000),
                        (std::size_t(1) << 12) + 7}) {
    for (Scalars kind : {Scalars::kRandom, Scalars::kMixed, Scalars::kZeroOneHeavy, Scalars::kAllZero,
                         Scalars::kAllOne, Scalars::kSmall, Scalars::kMinusOne}) {
      // The largest size only with the two most telling kinds (time).
      if (n > 1000 && kind != Scalars::kMixed && kind != Scalars::kZeroOneHeavy) continue;
      auto inst = make_instance<T>(n, kind, 7 * n + int(kind));
      auto got = run_msm(inst);
      EXPECT_EQ(got, expected_by_logs(inst)) << "n=" << n << " kind=" << int(kind);
      if (kind == Scalars::kAllZero) {
        EXPECT_TRUE(got.is_identity());
      }
    }
  }
}

// Every window size and a few range splits give the same answer (exercises
// top-window carries at every c, tiny and huge bucket counts, XYZZ buckets
// for c < 12 and batch-affine buckets with XYZZ overflow for c >= 12).
TYPED_TEST(MsmTest, ForcedPlansAgree) {
  using T = TypeParam;
  auto inst = make_instance<T>(300, Scalars::kMixed, 99);
  const auto expected = expected_by_logs(inst);
  // c = 16 means 2^15 buckets to reduce per task: G1 only (time).
  const bool g1 = std::is_same_v<typename T::G, typename T::Curve::G1>;
  for (unsigned c : {4u, 5u, 8u, 12u, 16u}) {
    if (c == 16 && !g1) continue;
    for (std::size_t ranges : {1, 3}) {
      if (c == 16 && ranges > 1) continue;
      MsmConfig config;
      config.window_bits = c;
      config.ranges_per_window = ranges;
      EXPECT_EQ(run_msm(inst, config), expected) << "c=" << c << " ranges=" << ranges;
    }
  }
  // Batch-affine buckets when every point hits the same bucket (all scalars
  // r - 1): everything after the first point per batch overflows to XYZZ.
  auto same = make_instance<T>(300, Scalars::kMinusOne, 98);
  MsmConfig config;
  config.window_bits = MsmConfig::kBatchAffineMinWindowBits;
  EXPECT_EQ(run_msm(same, config), expected_by_logs(same));
}

// msm_sum over two point sets equals the sum of the two MSMs, whatever the
// split (empty sides, a split inside a classification chunk or a task's
// range, forced batch-affine windows), and checks each side's lengths.
// The GLV split forced on and off gives the same sums, at sizes where the
// cost model would choose either, with every scalar kind (k1 or k2 zero,
// negative halves, scalars already short) and forced windows over the halves.
TYPED_TEST(MsmTest, GlvSplitForcedOnAndOffAgree) {
  using T = TypeParam;
  const bool g1 = std::is_same_v<typename T::G, typename T::Curve::G1>;
  for (std::size_t n : {std::size_t(1), std::size_t(5), std::size_t(300), std::size_t(g1 ? 3000 : 1200)}) {
    for (Scalars kind : {Scalars::kRandom, Scalars::kMixed, Scalars::kSmall, Scalars::kMinusOne}) {
      auto inst = make_instance<T>(n, kind, 31 * n + int(kind));
      const auto expected = n <= 5 ? expected_naive(inst) : expected_by_logs(inst);
      for (MsmConfig::Glv glv : {MsmConfig::Glv::kOff, MsmConfig::Glv::kOn, MsmConfig::Glv::kAuto}) {
        MsmConfig config;
        config.glv = glv;
        EXPECT_EQ(run_msm(inst, config), expected) << "n=" << n << " kind=" << int(kind) << " glv=" << int(glv);
      }
    }
  }
  auto inst = make_instance<T>(200, Scalars::kMixed, 77);
  const auto expected = expected_by_logs(inst);
  for (unsigned c : {4u, 7u, 12u}) {
    MsmConfig config;
    config.glv = MsmConfig::Glv::kOn;
    config.window_bits = c;
    EXPECT_EQ(run_msm(inst, config), expected) << "c=" << c;
  }
}

// kAuto splits small MSMs of full-width scalars only; kOff never splits.
TEST(MsmPlanTest, GlvSplitsSmallFullWidthMsmsOnly) {
  const MsmConfig config;
  EXPECT_TRUE(msm_detail::glv_pays(1000, 254, config));
  EXPECT_TRUE(msm_detail::glv_pays(MsmConfig::kGlvMaxPoints, 255, config));
  EXPECT_FALSE(msm_detail::glv_pays(MsmConfig::kGlvMaxPoints + 1, 254, config));
  EXPECT_FALSE(msm_detail::glv_pays(1000, 64, config));
  MsmConfig off, on;
  off.glv = MsmConfig::Glv::kOff;
  on.glv = MsmConfig::Glv::kOn;
  EXPECT_FALSE(msm_detail::glv_pays(1000, 254, off));
  EXPECT_TRUE(msm_detail::glv_pays(std::size_t(1) << 20, 64, on));
}

TYPED_TEST(MsmTest, SumOfTwoSegmentsMatchesSeparateMsms) {
  using T = TypeParam;
  using Curve = typename T::Curve;
  using G = typename T::G;
  using Affine = typename T::Affine;
  using Fr = typename T::Fr;
  auto inst = make_instance<T>(1500, Scalars::kMixed, 4242);
  const auto expected = expected_by_logs(inst);
  const std::span<const Affine> bases(inst.bases);
  const std::span<const Fr> scalars(inst.scalars);
  for (std::size_t split : {std::size_t(0), std::size_t(1), std::size_t(511), std::size_t(700), std::size_t(1500)}) {
    for (unsigned c : {0u, 6u, 12u}) {
      MsmConfig config;
      config.window_bits = c;
      const G got = msm_sum<Curve, G>(bases.first(split), scalars.first(split), bases.subspan(split),
                                      scalars.subspan(split), config);
      EXPECT_EQ(got, expected) << "split=" << split << " c=" << c;
    }
  }
  // Two unrelated instances: the sum of their MSMs.
  auto other = make_instance<T>(40, Scalars::kRandom, 4343);
  EXPECT_EQ((msm_sum<Curve, G>(inst.bases, inst.scalars, other.bases, other.scalars)),
            expected + expected_by_logs(other));
  EXPECT_THROW((msm_sum<Curve, G>(bases, scalars, bases.first(3), scalars.first(2))), std::invalid_argument);
  EXPECT_THROW((msm_sum<Curve, G>(bases.first(2), scalars.first(3), bases, scalars)), std::invalid_argument);
}

TYPED_TEST(MsmTest, FixedBaseTableMatchesScalarMul) {
  using T = TypeParam;
  using Fr = typename T::Fr;
  std::mt19937_64 rng(5);
  const auto g = T::generator();
  std::vector<Fr> scalars = {Fr::zero(), Fr::one(), -Fr::one(), Fr::from_u64(2), Fr::from_u64(1) - Fr::from_u64(3)};
  for (int i = 0; i < 40; ++i) scalars.push_back(seeded_element<Fr>(rng));
  for (unsigned c : {4u, 7u, 10u}) {
    FixedBaseTable<typename T::Curve, typename T::G> table(g, c);
    auto out = table.mul_many(scalars);
    ASSERT_EQ(out.size(), scalars.size());
    for (std::size_t i = 0; i < scalars.size(); ++i) {
      auto want = T::G::from_affine(g).scalar_mul(scalars[i]);
      EXPECT_EQ(out[i], want.to_affine()) << "c=" << c << " i=" << i;
      EXPECT_EQ(table.mul(scalars[i]), want) << "c=" << c << " i=" << i;
    }
  }
  EXPECT_THROW((FixedBaseTable<typename T::Curve, typename T::G>(g, 3)), std::invalid_argument);
  EXPECT_THROW((FixedBaseTable<typename T::Curve, typename T::G>(g, 17)), std::invalid_argument);
}

TYPED_TEST(MsmTest, BatchAddAffineEdgeCases) {
  using T = TypeParam;
  using G = typename T::G;
  using Affine = typename T::Affine;
  const Affine p = T::generator();
  const Affine q = G::from_affine(p).dbl().to_affine();
  const Affine id = Affine::identity();
  std::vector<Affine> acc = {id, p, p, p, p, q, id, q};
  const std::vector<Affine> addend = {p, id, p, -p, q, p, id, -q};
  std::vector<Affine> expected;
  for (std::size_t i = 0; i < acc.size(); ++i)
    expected.push_back(G::from_affine(acc[i]).add_mixed(addend[i]).to_affine());
  std::vector<typename Affine::Field> den, scratch;
  msm_detail::batch_add_affine(std::span<Affine>(acc), std::span<const Affine>(addend), den, scratch);
  EXPECT_EQ(acc, expected);
}

// Several output chunks (one inversion each) in parallel: consecutive scalars
// s0 + i must give consecutive multiples.
TYPED_TEST(MsmTest, FixedBaseTableManyChunks) {
  using T = TypeParam;
  using Fr = typename T::Fr;
  std::mt19937_64 rng(6);
  const auto g = T::generator();
  const Fr s0 = seeded_element<Fr>(rng);
  const std::size_t n = 2 * MsmConfig::kFixedBaseChunk + 5;
  std::vector<Fr> scalars(n);
  for (std::size_t i = 0; i < n; ++i) scalars[i] = s0 + Fr::from_u64(i);
  FixedBaseTable<typename T::Curve, typename T::G> table(g);
  auto out = table.mul_many(scalars);
  using G = typename T::G;
  EXPECT_EQ(G::from_affine(out[0]), G::from_affine(g).scalar_mul(s0));
  for (std::size_t i = 1; i < n; ++i) ASSERT_EQ(out[i], G::from_affine(out[i - 1]).add_mixed(g).to_affine()) << i;
}

}  // namespace
}  // namespace zkfarm
