// curve_test.cc -- G1 and G2 of BN254 and BLS12-381 in every coordinate
// system: generators on the curve and of order r, group laws, agreement of
// Jacobian, mixed, XYZZ and batch-affine arithmetic, scalar multiplication,
// and scalar multiples and sums from @noble/curves (tests/vectors).
#include "kernels/curve.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/curve_vectors_testutil.h"
#include "kernels/curves.h"

namespace zkfarm {
namespace {

// One test type per group: (curve, G1 or G2).
template <class Curve, bool kIsG2>
struct Group {
  using Affine = std::conditional_t<kIsG2, typename Curve::G2Affine, typename Curve::G1Affine>;
  using Jacobian = std::conditional_t<kIsG2, typename Curve::G2, typename Curve::G1>;
  using Xyzz = std::conditional_t<kIsG2, typename Curve::G2Xyzz, typename Curve::G1Xyzz>;
  using Fr = typename Curve::Fr;
  static Affine generator() {
    if constexpr (kIsG2) return Curve::g2_generator();
    else return Curve::g1_generator();
  }
  static Affine parse(const nlohmann::json& j) {
    if constexpr (kIsG2) return curve_vectors::parse_g2<Curve>(j);
    else return curve_vectors::parse_g1<Curve>(j);
  }
  static const nlohmann::json& vectors(const char* g1_key, const char* g2_key) {
    return curve_vectors::for_curve<Curve>().at(kIsG2 ? g2_key : g1_key);
  }
  using CurveType = Curve;
};

template <class G>
class CurveTest : public ::testing::Test {};
using Groups = ::testing::Types<Group<Bn254, false>, Group<Bn254, true>, Group<Bls12381, false>,
                                Group<Bls12381, true>>;
TYPED_TEST_SUITE(CurveTest, Groups);

template <class Fr>
Fr random_scalar(std::mt19937_64& rng) {
  typename Fr::Int v;
  for (auto& l : v.limbs) l = rng();
  return Fr::from_canonical(v);
}

TYPED_TEST(CurveTest, GeneratorHasOrderR) {
  using G = TypeParam;
  auto g = G::generator();
  EXPECT_TRUE(g.is_on_curve());
  EXPECT_TRUE(g.is_in_subgroup());
  EXPECT_FALSE(g.is_identity());
  auto j = G::Jacobian::from_affine(g);
  EXPECT_TRUE(j.scalar_mul(G::Fr::kModulus).is_identity());
  auto r_minus_one = G::Fr::kModulus;
  r_minus_one.limbs[0] -= 1;
  EXPECT_EQ(j.scalar_mul(r_minus_one), -j);
}

TYPED_TEST(CurveTest, IdentityConventions) {
  using G = TypeParam;
  auto id = G::Affine::identity();
  EXPECT_TRUE(id.is_identity());
  EXPECT_TRUE(id.is_on_curve());
  EXPECT_TRUE(id.is_in_subgroup());
  EXPECT_EQ(-id, id);
  EXPECT_TRUE(G::Jacobian::from_affine(id).is_identity());
  EXPECT_TRUE(typename G::Jacobian().is_identity());
  EXPECT_EQ(G::Jacobian::identity().to_affine(), id);
  EXPECT_TRUE(typename G::Xyzz().is_identity());
  EXPECT_TRUE(G::Xyzz::identity().to_jacobian().is_identity());
  // Off-curve points are rejected.
  auto bad = G::generator();
  bad.y = bad.y + G::Affine::Field::one();
  EXPECT_FALSE(bad.is_on_curve());
  EXPECT_FALSE(bad.is_in_subgroup());
}

TYPED_TEST(CurveTest, GroupLaws) {
  using G = TypeParam;
  using J = typename G::Jacobian;
  std::mt19937_64 rng(1);
  J g = J::from_affine(G::generator());
  for (int i = 0; i < 10; ++i) {
    J a = g.scalar_mul(random_scalar<typename G::Fr>(rng));
    J b = g.scalar_mul(random_scalar<typename G::Fr>(rng));
    J c = g.scalar_mul(random_scalar<typename G::Fr>(rng));
    EXPECT_TRUE(a.is_on_curve());
    EXPECT_EQ(a + b, b + a);
    EXPECT_EQ((a + b) + c, a + (b + c));
    EXPECT_EQ(a + J::identity(), a);
    EXPECT_EQ(J::identity() + a, a);
    EXPECT_TRUE((a + (-a)).is_identity());
    EXPECT_EQ(a + a, a.dbl());
    EXPECT_EQ(a - b + b, a);
    auto b_affine = b.to_affine();
    EXPECT_TRUE(b_affine.is_on_curve());
    EXPECT_TRUE(b_affine.is_in_subgroup());
    EXPECT_EQ(a.add_mixed(b_affine), a + b);
    EXPECT_EQ(b.add_mixed(b_affine), b.dbl());
    EXPECT_TRUE(b.add_mixed(-b_affine).is_identity());
    EXPECT_EQ(J::identity().add_mixed(b_affine), b);
    EXPECT_EQ(a.add_mixed(G::Affine::identity()), a);
    EXPECT_EQ(J::from_affine(b_affine), b);
  }
}

TYPED_TEST(CurveTest, ScalarMultiplication) {
  using G = TypeParam;
  using J = typename G::Jacobian;
  using Fr = typename G::Fr;
  std::mt19937_64 rng(2);
  J g = J::from_affine(G::generator());
  // Small multiples by repeated addition.
  J acc = J::identity();
  for (std::uint64_t k = 0; k < 40; ++k) {
    EXPECT_EQ(g.scalar_mul(Fr::from_u64(k)), acc) << k;
    acc += g;
  }
  for (int i = 0; i < 5; ++i) {
    Fr a = random_scalar<Fr>(rng), b = random_scalar<Fr>(rng);
    EXPECT_EQ(g.scalar_mul(a) + g.scalar_mul(b), g.scalar_mul(a + b));
    EXPECT_EQ(g.scalar_mul(a).scalar_mul(b), g.scalar_mul(a * b));
  }
}

TYPED_TEST(CurveTest, XyzzAgreesWithJacobian) {
  using G = TypeParam;
  using J = typename G::Jacobian;
  using X = typename G::Xyzz;
  using A = typename G::Affine;
  std::mt19937_64 rng(3);
  J g = J::from_affine(G::generator());
  std::vector<A> points;
  for (int i = 0; i < 8; ++i) points.push_back(g.scalar_mul(random_scalar<typename G::Fr>(rng)).to_affine());
  // Include the identity, a repeated point and a point with its negation.
  points.push_back(A::identity());
  points.push_back(points[0]);
  points.push_back(-points[1]);
  points.push_back(points[1]);
  X bucket;
  J expected = J::identity();
  for (const A& p : points) {
    bucket.add_mixed(p);
    expected = expected.add_mixed(p);
    EXPECT_EQ(bucket.to_jacobian(), expected);
  }
  // Doubling through add_mixed of the same point from the identity chain.
  X twice = X::from_affine(points[2]);
  twice.add_mixed(points[2]);
  EXPECT_EQ(twice.to_jacobian(), J::from_affine(points[2]).dbl());
  // XYZZ + XYZZ, including equal, opposite and identity operands.
  X other;
  other.add_mixed(points[3]);
  other.add_mixed(points[4]);
  X sum = bucket;
  sum.add(other);
  EXPECT_EQ(sum.to_jacobian(), expected + J::from_affine(points[3]) + J::from_affine(points[4]));
  X same = other;
  same.add(other);
  EXPECT_EQ(same.to_jacobian(), other.to_jacobian().dbl());
  X neg;
  neg.add_mixed(-points[3]);
  neg.add_mixed(-points[4]);
  X zero = other;
  zero.add(neg);
  EXPECT_TRUE(zero.is_identity());
  X with_identity = other;
  with_identity.add(X::identity());
  EXPECT_EQ(with_identity.to_jacobian(), other.to_jacobian());
  X from_identity;
  from_identity.add(other);
  EXPECT_EQ(from_identity.to_jacobian(), other.to_jacobian());
  EXPECT_EQ(other.dbl().to_jacobian(), other.to_jacobian().dbl());
}

TYPED_TEST(CurveTest, BatchToAffine) {
  using G = TypeParam;
  using J = typename G::Jacobian;
  using A = typename G::Affine;
  std::mt19937_64 rng(4);
  J g = J::from_affine(G::generator());
  std::vector<J> points;
  for (int i = 0; i < 6; ++i) points.push_back(g.scalar_mul(random_scalar<typename G::Fr>(rng)));
  points.insert(points.begin() + 2, J::identity());
  points.push_back(J::identity());
  std::vector<A> out(points.size());
  J::batch_to_affine(points, out);
  for (std::size_t i = 0; i < points.size(); ++i) EXPECT_EQ(out[i], points[i].to_affine()) << i;
  std::vector<A> wrong_size(1);
  EXPECT_THROW(J::batch_to_affine(points, wrong_size), std::invalid_argument);
}

TEST(CurveConstants, TwistCoefficients) {
  // BN254: b' = 3 / (9 + u), the published constant.
  EXPECT_EQ(Bn254G2Config::kB.c0.to_decimal(),
            "19485874751759354771024239261021720505790618469301721065564631296452457478373");
  EXPECT_EQ(Bn254G2Config::kB.c1.to_decimal(),
            "266929791119991161246907387137283842545076965332900288569378510910307636690");
  // BLS12-381: b' = 4 (1 + u).
  EXPECT_EQ(Bls12381G2Config::kB, (Bls12381::Fq2{Bls12381::Fq::from_u64(4), Bls12381::Fq::from_u64(4)}));
}

TEST(CurveConstants, Bls12381G1CofactorPointsAreNotInSubgroup) {
  // Find a point on E(Fq) by trying x = 0, 1, 2, ...: almost surely of
  // order not dividing r (the cofactor is about 2^126).
  using Fq = Bls12381::Fq;
  for (std::uint64_t xi = 0;; ++xi) {
    Fq x = Fq::from_u64(xi);
    auto y = (x.square() * x + Fq::from_u64(4)).sqrt();
    if (!y) continue;
    Bls12381::G1Affine p{x, *y};
    EXPECT_TRUE(p.is_on_curve());
    EXPECT_FALSE(p.is_in_subgroup());
    break;
  }
  using F2 = Bls12381::Fq2;
  for (std::uint64_t xi = 0;; ++xi) {
    F2 x = F2::from_u64(xi);
    auto y = (x.square() * x + Bls12381G2Config::kB).sqrt();
    if (!y) continue;
    Bls12381::G2Affine p{x, *y};
    EXPECT_TRUE(p.is_on_curve());
    EXPECT_FALSE(p.is_in_subgroup());
    break;
  }
  using B2 = Bn254::Fq2;
  for (std::uint64_t xi = 0;; ++xi) {
    B2 x = B2::from_u64(xi);
    auto y = (x.square() * x + Bn254G2Config::kB).sqrt();
    if (!y) continue;
    Bn254::G2Affine p{x, *y};
    EXPECT_TRUE(p.is_on_curve());
    EXPECT_FALSE(p.is_in_subgroup());
    break;
  }
}

TYPED_TEST(CurveTest, MatchesNoble) {
  using G = TypeParam;
  using J = typename G::Jacobian;
  const auto& scalars = curve_vectors::for_curve<typename G::CurveType>().at("scalars");
  const auto& multiples = G::vectors("g1", "g2");
  const auto& sums = G::vectors("g1_sums", "g2_sums");
  ASSERT_EQ(multiples.size(), scalars.size());
  ASSERT_EQ(sums.size() + 1, scalars.size());
  J g = J::from_affine(G::generator());
  std::vector<J> computed;
  for (std::size_t i = 0; i < scalars.size(); ++i) {
    auto k = curve_vectors::parse_fr<typename G::CurveType>(scalars[i]);
    computed.push_back(g.scalar_mul(k));
    auto expected = G::parse(multiples[i]);
    EXPECT_TRUE(expected.is_in_subgroup());
    EXPECT_EQ(computed.back().to_affine(), expected) << "k = " << scalars[i];
  }
  for (std::size_t i = 0; i < sums.size(); ++i) {
    EXPECT_EQ((computed[i] + computed[i + 1]).to_affine(), G::parse(sums[i])) << i;
    EXPECT_EQ(computed[i].add_mixed(G::parse(multiples[i + 1])).to_affine(), G::parse(sums[i])) << i;
  }
}

}  // namespace
}  // namespace zkfarm
