// glv_test.cc -- the GLV constants of BN254 and BLS12-381 (bn254.h,
// bls12_381.h) and glv_split (glv.h): lambda is a cube root of unity mod r,
// phi(x, y) = (beta x, y) is [lambda] on G1 and G2, the basis vectors lie
// in the lattice, and every split recombines to its scalar with halves
// within half_bits.
#include "kernels/glv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <random>
#include <vector>

#include "kernels/curves.h"
#include "kernels/seeded_random_testutil.h"

namespace zkfarm {
namespace {

template <class Curve>
class GlvTest : public ::testing::Test {};
using Curves = ::testing::Types<Bn254, Bls12381>;
TYPED_TEST_SUITE(GlvTest, Curves);

template <class Fr>
Fr signed_fr(const GlvSigned& v) {
  const Fr f = Fr::from_canonical(v.magnitude);
  return v.negative ? -f : f;
}


TYPED_TEST(GlvTest, LambdaIsACubeRootOfUnityAndTheBasisLiesInTheLattice) {
  using Fr = typename TypeParam::Fr;
  const GlvBasis& b = TypeParam::kGlv;
  ASSERT_LT(b.lambda, Fr::kModulus);
  const Fr lambda = Fr::from_canonical(b.lambda);
  EXPECT_TRUE((lambda * lambda + lambda + Fr::one()).is_zero());
  EXPECT_TRUE((signed_fr<Fr>(b.a1) + signed_fr<Fr>(b.b1) * lambda).is_zero());
  EXPECT_TRUE((signed_fr<Fr>(b.a2) + signed_fr<Fr>(b.b2) * lambda).is_zero());
  // a1 b2 - a2 b1 = r as integers (not only 0 mod r), which Babai's
  // rounding assumes: all four magnitudes are below 2^128, so each product
  // is exact in 256 bits.
  for (const GlvSigned* v : {&b.a1, &b.b1, &b.a2, &b.b2}) ASSERT_LE(v->magnitude.num_bits(), 128u);
  using glv_detail::mul_low;
  using glv_detail::negate;
  BigInt<4> det = mul_low(b.a1.magnitude, b.b2.magnitude);
  if (b.a1.negative != b.b2.negative) det = negate(det);
  BigInt<4> other = mul_low(b.a2.magnitude, b.b1.magnitude);
  if (b.a2.negative == b.b1.negative) other = negate(other);
  det.add_in_place(other);
  EXPECT_EQ(det, Fr::kModulus) << det.to_hex();
}

template <class Curve, class G>
void expect_phi_is_lambda(const typename G::Affine& generator) {
  using Fr = typename Curve::Fr;
  const Fr lambda = Fr::from_canonical(Curve::kGlv.lambda);
  std::mt19937_64 rng(5);
  for (int i = 0; i < 4; ++i) {
    const G p = G::from_affine(generator).scalar_mul(i == 0 ? Fr::one() : seeded_element<Fr>(rng));
    const typename G::Affine a = p.to_affine();
    const typename G::Affine phi{glv_scale(a.x, G::Config::kGlvBeta), a.y};
    EXPECT_TRUE(phi.is_on_curve());
    EXPECT_EQ(G::from_affine(phi), p.scalar_mul(lambda)) << "point " << i;
  }
}

TYPED_TEST(GlvTest, PhiIsMultiplicationByLambdaOnG1AndG2) {
  using C = TypeParam;
  expect_phi_is_lambda<C, typename C::G1>(C::g1_generator());
  expect_phi_is_lambda<C, typename C::G2>(C::g2_generator());
}

TYPED_TEST(GlvTest, SplitsRecombineWithinTheBound) {
  using Fr = typename TypeParam::Fr;
  const GlvBasis& b = TypeParam::kGlv;
  const Fr lambda = Fr::from_canonical(b.lambda);
  std::mt19937_64 rng(11);
  std::vector<typename Fr::Int> ks;
  typename Fr::Int r_minus = Fr::kModulus;
  for (std::uint64_t d : {1, 2, 3}) {
    typename Fr::Int t = r_minus;
    t.sub_in_place(typename Fr::Int{{d, 0, 0, 0}});
    ks.push_back(t);
  }
  for (std::uint64_t small : {0, 1, 2, 1000}) ks.push_back(typename Fr::Int{{small, 0, 0, 0}});
  ks.push_back(b.lambda);
  ks.push_back(b.a1.magnitude);
  ks.push_back(b.a2.magnitude);
  for (int i = 0; i < 20000; ++i) ks.push_back(seeded_element<Fr>(rng).to_canonical());
  std::size_t widest = 0;
  for (const auto& k : ks) {
    const GlvSplit s = glv_split(k, b);
    const Fr k1 = s.k1_negative ? -Fr::from_canonical(s.k1) : Fr::from_canonical(s.k1);
    const Fr k2 = s.k2_negative ? -Fr::from_canonical(s.k2) : Fr::from_canonical(s.k2);
    ASSERT_EQ(k1 + lambda * k2, Fr::from_canonical(k)) << k.to_hex();
    widest = std::max({widest, s.k1.num_bits(), s.k2.num_bits()});
    ASSERT_LE(s.k1.num_bits(), b.half_bits) << k.to_hex();
    ASSERT_LE(s.k2.num_bits(), b.half_bits) << k.to_hex();
  }
  std::cerr << "widest half: " << widest << " bits\n";
}

}  // namespace
}  // namespace zkfarm
