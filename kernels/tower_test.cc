// tower_test.cc -- Fq2/Fq6/Fq12 arithmetic of both curves' towers: ring laws,
// inverses, Frobenius maps against exponentiation by p, square roots,
// sparse and cyclotomic shortcuts against the general operations.
#include "kernels/tower.h"

#include <gtest/gtest.h>

#include <random>

#include "kernels/curves.h"
#include "kernels/seeded_random_testutil.h"

namespace zkfarm {
namespace {

template <class Curve>
class TowerTest : public ::testing::Test {};
using Curves = ::testing::Types<Bn254, Bls12381>;
TYPED_TEST_SUITE(TowerTest, Curves);

template <class Curve>
typename Curve::Fq2 random_fq2(std::mt19937_64& rng) {
  return {seeded_element<typename Curve::Fq>(rng), seeded_element<typename Curve::Fq>(rng)};
}
template <class Curve>
typename Curve::Fq6 random_fq6(std::mt19937_64& rng) {
  return {random_fq2<Curve>(rng), random_fq2<Curve>(rng), random_fq2<Curve>(rng)};
}
template <class Curve>
typename Curve::Fq12 random_fq12(std::mt19937_64& rng) {
  return {random_fq6<Curve>(rng), random_fq6<Curve>(rng)};
}

TYPED_TEST(TowerTest, Fq2Arithmetic) {
  using F2 = typename TypeParam::Fq2;
  std::mt19937_64 rng(1);
  // u^2 = -1.
  F2 u{TypeParam::Fq::zero(), TypeParam::Fq::one()};
  EXPECT_EQ(u.square(), -F2::one());
  EXPECT_EQ(F2::one().mul_by_nonresidue(), F2::nonresidue());
  for (int i = 0; i < 50; ++i) {
    F2 a = random_fq2<TypeParam>(rng), b = random_fq2<TypeParam>(rng), c = random_fq2<TypeParam>(rng);
    EXPECT_EQ((a + b) * c, a * c + b * c);
    EXPECT_EQ(a * b, b * a);
    EXPECT_EQ(a.square(), a * a);
    EXPECT_EQ(a * a.inverse(), F2::one());
    EXPECT_EQ(a.mul_by_nonresidue(), a * F2::nonresidue());
    EXPECT_EQ(a.half().dbl(), a);
    EXPECT_EQ(a.frobenius_map(1), a.pow(TypeParam::Fq::kModulus));
    F2 sq = a.square();
    auto root = sq.sqrt();
    ASSERT_TRUE(root.has_value());
    EXPECT_EQ(root->square(), sq);
    EXPECT_EQ(sq.legendre(), 1);
    // Squares of base-field elements (c1 = 0) including non-squares of Fq.
    F2 base{a.c0, TypeParam::Fq::zero()};
    auto base_root = base.sqrt();
    ASSERT_TRUE(base_root.has_value());
    EXPECT_EQ(base_root->square(), base);
  }
  // A non-square has no root: xi is a non-square (it is a non-cube and a
  // non-square, which the tower needs).
  EXPECT_EQ(F2::nonresidue().legendre(), -1);
  EXPECT_FALSE(F2::nonresidue().sqrt().has_value());
}

TYPED_TEST(TowerTest, Fq6AndFq12Arithmetic) {
  using F6 = typename TypeParam::Fq6;
  using F12 = typename TypeParam::Fq12;
  std::mt19937_64 rng(2);
  for (int i = 0; i < 20; ++i) {
    F6 a = random_fq6<TypeParam>(rng), b = random_fq6<TypeParam>(rng), c = random_fq6<TypeParam>(rng);
    EXPECT_EQ((a + b) * c, a * c + b * c);
    EXPECT_EQ(a * b, b * a);
    EXPECT_EQ((a * b) * c, a * (b * c));
    EXPECT_EQ(a.square(), a * a);
    EXPECT_EQ(a * a.inverse(), F6::one());
    F12 x = random_fq12<TypeParam>(rng), y = random_fq12<TypeParam>(rng), z = random_fq12<TypeParam>(rng);
    EXPECT_EQ((x + y) * z, x * z + y * z);
    EXPECT_EQ((x * y) * z, x * (y * z));
    EXPECT_EQ(x.square(), x * x);
    EXPECT_EQ(x * x.inverse(), F12::one());
  }
  // w^6 = xi, v^3 = xi.
  F12 w = F12::zero();
  w.c1.c0 = TypeParam::Fq2::one();
  F12 xi = F12::zero();
  xi.c0.c0 = TypeParam::Fq2::nonresidue();
  EXPECT_EQ(w.pow(6), xi);
}

TYPED_TEST(TowerTest, FrobeniusIsPowerOfP) {
  using F12 = typename TypeParam::Fq12;
  std::mt19937_64 rng(3);
  F12 x = random_fq12<TypeParam>(rng);
  F12 by_pow = x;
  for (unsigned k = 1; k <= 12; ++k) {
    by_pow = by_pow.pow(TypeParam::Fq::kModulus);
    EXPECT_EQ(x.frobenius_map(k), by_pow) << "k = " << k;
  }
  EXPECT_EQ(by_pow, x);  // x^(p^12) = x
  auto y = random_fq6<TypeParam>(rng);
  EXPECT_EQ(y.frobenius_map(1), y.pow(TypeParam::Fq::kModulus));
  EXPECT_EQ(y.frobenius_map(2), y.frobenius_map(1).frobenius_map(1));
}

TYPED_TEST(TowerTest, SparseMultiplication) {
  using F2 = typename TypeParam::Fq2;
  using F12 = typename TypeParam::Fq12;
  std::mt19937_64 rng(4);
  F12 x = random_fq12<TypeParam>(rng);
  F2 a = random_fq2<TypeParam>(rng), b = random_fq2<TypeParam>(rng), c = random_fq2<TypeParam>(rng);
  F12 line034 = F12::zero();
  line034.c0.c0 = a;
  line034.c1.c0 = b;
  line034.c1.c1 = c;
  EXPECT_EQ(x.mul_by_034(a, b, c), x * line034);
  F12 line014 = F12::zero();
  line014.c0.c0 = a;
  line014.c0.c1 = b;
  line014.c1.c1 = c;
  EXPECT_EQ(x.mul_by_014(a, b, c), x * line014);
}

TYPED_TEST(TowerTest, CyclotomicSquareAndPow) {
  using F12 = typename TypeParam::Fq12;
  std::mt19937_64 rng(5);
  F12 x = random_fq12<TypeParam>(rng);
  // Project into the cyclotomic subgroup: x^((p^6 - 1)(p^2 + 1)).
  F12 t = x.conjugate() * x.inverse();
  F12 c = t.frobenius_map(2) * t;
  EXPECT_EQ(c.cyclotomic_square(), c.square());
  for (std::uint64_t e : {0ULL, 1ULL, 2ULL, 3ULL, 7ULL, 0xd201000000010000ULL, 4965661367192848881ULL,
                          0xffffffffffffffffULL}) {
    EXPECT_EQ(c.cyclotomic_pow(e), c.pow(e)) << e;
  }
}

}  // namespace
}  // namespace zkfarm
