// field_test.cc -- Montgomery field arithmetic against independent integer math.
#include "kernels/field.h"

#include <gtest/gtest.h>

#include <random>

namespace zkfarm {
namespace {

template <class F>
class FieldTest : public ::testing::Test {};
using Fields = ::testing::Types<Bn254Fq, Bn254Fr, Bls12381Fq, Bls12381Fr>;
TYPED_TEST_SUITE(FieldTest, Fields);

template <class F>
F random_element(std::mt19937_64& rng) {
  typename F::Int v;
  for (auto& l : v.limbs) l = rng();
  return F::from_canonical(v);  // reduces; bias is irrelevant for tests
}

TYPED_TEST(FieldTest, RingAxioms) {
  using F = TypeParam;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 200; ++i) {
    F a = random_element<F>(rng), b = random_element<F>(rng), c = random_element<F>(rng);
    EXPECT_EQ((a + b) * c, a * c + b * c);
    EXPECT_EQ(a * b, b * a);
    EXPECT_EQ((a - b) + b, a);
    EXPECT_EQ(a + (-a), F::zero());
    if (!a.is_zero()) {
      EXPECT_EQ(a * a.inverse(), F::one());
    }
  }
}

TYPED_TEST(FieldTest, CanonicalRoundTrip) {
  using F = TypeParam;
  std::mt19937_64 rng(2);
  for (int i = 0; i < 50; ++i) {
    F a = random_element<F>(rng);
    EXPECT_EQ(F::from_decimal(a.to_decimal()), a);
    std::uint8_t bytes[F::kBytes];
    a.to_le_bytes(bytes);
    EXPECT_EQ(*F::from_le_bytes(bytes), a);
  }
  // p itself is rejected, p-1 accepted.
  EXPECT_FALSE(F::from_canonical_checked(F::kModulus).has_value());
  EXPECT_THROW(F::from_decimal("12x"), std::invalid_argument);
}

TYPED_TEST(FieldTest, FermatLittleTheorem) {
  using F = TypeParam;
  F a = F::from_u64(7);
  auto e = F::kModulus;
  typename F::Int one;
  one.limbs[0] = 1;
  e.sub_in_place(one);
  EXPECT_EQ(a.pow(e), F::one());
}

TEST(FieldKnownValues, Bn254SmallProducts) {
  // 2^254 mod p, checked with an independent big-integer tool.
  EXPECT_EQ(Bn254Fq::from_u64(2).pow(254).to_decimal(),
            "7059779437489773633646340506914701874621185009112317347175358107333056201401");
  EXPECT_EQ(Bls12381Fq::from_u64(2).pow(381).to_decimal(),
            "922841219327642508117090186782047569078084588869172948161478539406683570946313461984095652731598791062934226228565");
}

}  // namespace
}  // namespace zkfarm
