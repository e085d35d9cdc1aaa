// subgroup_test.cc -- AffinePoint::is_in_subgroup, which asks the configs'
// endomorphism tests (curves.cc), against is_in_subgroup_by_order (the
// multiplication by r) on points of the subgroups, on random points of the
// curves and twists (almost never in the subgroup), and on subgroup points
// plus points of each order below 20,000 that divides the cofactor (the
// cases a sloppy test lets through).
#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "kernels/curves.h"
#include "kernels/seeded_random_testutil.h"

namespace zkfarm {
namespace {

// A random point of the curve (or twist): y^2 = x^3 + b for a random x
// with a square on the right.
template <class Affine>
Affine random_curve_point(std::mt19937_64& rng) {
  for (;;) {
    const auto x = seeded_element<typename Affine::Field>(rng);
    if (auto y = (x.square() * x + Affine::Config::kB).sqrt()) {
      Affine p{x, *y};
      if (p.is_on_curve()) return p;
    }
  }
}

template <class Curve, class G>
struct Group {
  using C = Curve;
  using Jacobian = G;
  using Affine = typename G::Affine;
  static bool fast(const Affine& p) { return p.is_in_subgroup(); }
  static Affine generator() {
    if constexpr (std::is_same_v<G, typename Curve::G1>) return Curve::g1_generator();
    else return Curve::g2_generator();
  }
};

// The cofactor of each group: #E = h r.
template <class T>
std::string cofactor_hex() {
  using C = typename T::C;
  if constexpr (std::is_same_v<C, Bn254>) {
    if constexpr (std::is_same_v<typename T::Jacobian, typename C::G1>) return "0x1";
    else return "0x30644e72e131a029b85045b68181585e06ceecda572a2489345f2299c0f9fa8d";  // 2p - r
  } else if constexpr (std::is_same_v<typename T::Jacobian, typename C::G1>) {
    return "0x396c8c005555e1568c00aaab0000aaab";
  } else {
    return "0x5d543a95414e7f1091d50792876a202cd91de4547085abaa68a205b2e5a7ddfa628f1cb4d9e82ef21537e293a6691ae1616"
           "ec6e786f0c70cf1c38e31c7238e5";
  }
}

template <class T>
class SubgroupTest : public ::testing::Test {};
using Groups = ::testing::Types<Group<Bn254, Bn254::G1>, Group<Bn254, Bn254::G2>, Group<Bls12381, Bls12381::G1>,
                                Group<Bls12381, Bls12381::G2>>;
TYPED_TEST_SUITE(SubgroupTest, Groups);

TYPED_TEST(SubgroupTest, SubgroupPointsPass) {
  using T = TypeParam;
  using Fr = typename T::C::Fr;
  std::mt19937_64 rng(1);
  EXPECT_TRUE(T::fast(T::Affine::identity()));
  EXPECT_TRUE(T::fast(T::generator()));
  for (int i = 0; i < 20; ++i) {
    const auto p = T::Jacobian::from_affine(T::generator()).scalar_mul(seeded_element<Fr>(rng)).to_affine();
    EXPECT_TRUE(T::fast(p)) << i;
    EXPECT_TRUE(T::fast(-p)) << i;
  }
  // Off the curve: false, as by the order.
  auto off = T::generator();
  off.y = off.y + off.y;
  EXPECT_FALSE(T::fast(off));
  EXPECT_EQ(T::fast(off), off.is_in_subgroup_by_order());
}

TYPED_TEST(SubgroupTest, RandomPointsOfTheCurveAgreeWithTheMultiplicationByR) {
  using T = TypeParam;
  std::mt19937_64 rng(2);
  int outside = 0;
  for (int i = 0; i < 40; ++i) {
    const auto p = random_curve_point<typename T::Affine>(rng);
    const bool slow = p.is_in_subgroup_by_order();
    EXPECT_EQ(T::fast(p), slow) << i;
    outside += !slow;
  }
  if (cofactor_hex<T>() != "0x1") {
    EXPECT_GT(outside, 35);  // a cofactor >= 3: most are outside
  }
}

TYPED_TEST(SubgroupTest, SubgroupPointsPlusSmallOrderPointsFail) {
  using T = TypeParam;
  using G = typename T::Jacobian;
  using Fr = typename T::C::Fr;
  using H = BigInt<8>;
  const H h = H::from_hex(cofactor_hex<T>());
  if (h == H::from_hex("0x1")) GTEST_SKIP() << "prime order: no point outside the subgroup";
  std::mt19937_64 rng(3);
  // T0 = [r] R lies in the cofactor's part: [h] T0 = [h r] R = O (checks h).
  const G r_times = G::from_affine(random_curve_point<typename T::Affine>(rng)).scalar_mul(Fr::kModulus);
  ASSERT_TRUE(r_times.scalar_mul(h).is_identity());
  ASSERT_FALSE(r_times.is_identity());
  const G p = G::from_affine(T::generator()).scalar_mul(seeded_element<Fr>(rng));
  int small_orders = 0;
  for (std::uint64_t q = 2; q < 20000; ++q) {
    H rest = h;
    if (rest.div_small(q) != 0) continue;
    const G t = r_times.scalar_mul(rest);  // order q, or O
    if (t.is_identity()) continue;
    ++small_orders;
    const auto bad = (p + t).to_affine();
    EXPECT_FALSE(bad.is_in_subgroup_by_order()) << "q=" << q;
    EXPECT_FALSE(T::fast(bad)) << "q=" << q;
    EXPECT_FALSE(T::fast(t.to_affine())) << "q=" << q;
  }
  const auto bad = (p + r_times).to_affine();
  EXPECT_FALSE(T::fast(bad));
  EXPECT_GT(small_orders, 0);
  std::cerr << small_orders << " small orders tried\n";
}

}  // namespace
}  // namespace zkfarm
