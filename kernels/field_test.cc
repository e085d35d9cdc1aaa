// field_test.cc -- Montgomery field arithmetic against independent integer math.
#include "kernels/field.h"
#include "kernels/seeded_random_testutil.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace zkfarm {
namespace {

template <class F>
class FieldTest : public ::testing::Test {};
using Fields = ::testing::Types<Bn254Fq, Bn254Fr, Bls12381Fq, Bls12381Fr>;
TYPED_TEST_SUITE(FieldTest, Fields);


TYPED_TEST(FieldTest, RingAxioms) {
  using F = TypeParam;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 200; ++i) {
    F a = seeded_element<F>(rng), b = seeded_element<F>(rng), c = seeded_element<F>(rng);
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
    F a = seeded_element<F>(rng);
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

// --- Slow reference on plain integers (no Montgomery code involved) ---

template <class Int>
Int add_mod_ref(Int a, const Int& b, const Int& p) {
  a.add_in_place(b);  // p < 2^(64N-1): no carry out
  if (a >= p) a.sub_in_place(p);
  return a;
}

template <class Int>
Int sub_mod_ref(Int a, const Int& b, const Int& p) {
  if (a.sub_in_place(b)) a.add_in_place(p);
  return a;
}

// a * b mod p by double-and-add.
template <class Int>
Int mul_mod_ref(const Int& a, const Int& b, const Int& p) {
  Int r;
  for (std::size_t i = b.num_bits(); i-- > 0;) {
    r = add_mod_ref(r, r, p);
    if (b.bit(i)) r = add_mod_ref(r, a, p);
  }
  return r;
}

// Canonical values that stress carries, borrows and the final subtractions:
// 0, 1, 2, p-1, p-2, (p-1)/2, (p+1)/2, R mod p, single bits, long runs of
// ones, plus random values.
template <class F>
std::vector<typename F::Int> edge_values(std::mt19937_64& rng, int random_count) {
  using Int = typename F::Int;
  const Int p = F::kModulus;
  Int one, two;
  one.limbs[0] = 1;
  two.limbs[0] = 2;
  std::vector<Int> v = {Int(), one, two, sub_mod_ref(Int(), one, p), sub_mod_ref(Int(), two, p), F::kR};
  Int half = p;
  half.shr1();
  v.push_back(half);
  v.push_back(add_mod_ref(half, one, p));
  for (std::size_t bit = 0; bit + 1 < F::kBits; bit += 37) {
    Int b;
    b.limbs[bit / 64] = std::uint64_t(1) << (bit % 64);
    v.push_back(b);
    Int ones;  // 2^bit - 1 (< p)
    ones.sub_in_place(one);
    for (std::size_t i = bit; i < 64 * F::N; ++i) ones.limbs[i / 64] &= ~(std::uint64_t(1) << (i % 64));
    v.push_back(ones);
  }
  for (int i = 0; i < random_count; ++i) {
    Int r;
    for (auto& l : r.limbs) l = rng();
    while (r >= p) r.sub_in_place(p);
    v.push_back(r);
  }
  return v;
}

TYPED_TEST(FieldTest, MatchesIntegerReference) {
  using F = TypeParam;
  using Int = typename F::Int;
  const Int p = F::kModulus;
  std::mt19937_64 rng(3);
  const auto values = edge_values<F>(rng, 40);
  Int one;
  one.limbs[0] = 1;
  for (const Int& x : values) {
    const F a = F::from_canonical(x);
    EXPECT_EQ(a.to_canonical(), x);
    EXPECT_EQ((-a).to_canonical(), sub_mod_ref(Int(), x, p));
    EXPECT_EQ(a.square().to_canonical(), mul_mod_ref(x, x, p));
    EXPECT_EQ(a.dbl().to_canonical(), add_mod_ref(x, x, p));
    if (!a.is_zero()) {
      EXPECT_EQ(mul_mod_ref(a.inverse().to_canonical(), x, p), one) << x.to_hex();
    } else {
      EXPECT_TRUE(a.inverse().is_zero());
    }
    for (const Int& y : values) {
      const F b = F::from_canonical(y);
      ASSERT_EQ((a + b).to_canonical(), add_mod_ref(x, y, p));
      ASSERT_EQ((a - b).to_canonical(), sub_mod_ref(x, y, p));
    }
    for (int k = 0; k < 8; ++k) {
      const Int& y = values[rng() % values.size()];
      EXPECT_EQ((a * F::from_canonical(y)).to_canonical(), mul_mod_ref(x, y, p));
    }
  }
}

// Constant evaluation takes the plain C++ paths (and Fermat for inverse);
// run time may take the assembly and the binary GCD. They must agree.
TYPED_TEST(FieldTest, ConstexprMatchesRuntime) {
  using F = TypeParam;
  constexpr F kA = F::from_u64(0x1234567890abcdefULL).pow(9) - F::from_u64(5);
  constexpr F kB = -F::from_u64(3).pow(100);
  constexpr F kProd = kA * kB, kSq = kA.square(), kSum = kA + kB, kDiff = kB - kA;
  F a = F::from_u64(0x1234567890abcdefULL).pow(9) - F::from_u64(5);
  F b = -F::from_u64(3).pow(100);
  EXPECT_EQ(a, kA);
  EXPECT_EQ(b, kB);
  EXPECT_EQ(a * b, kProd);
  EXPECT_EQ(a.square(), kSq);
  if constexpr (F::N == 4) {
    // (A 6-limb Fermat chain exceeds clang's default constexpr step limit.)
    constexpr F kInv = kA.inverse();
    EXPECT_EQ(a.inverse(), kInv);
  }
  EXPECT_EQ(a + b, kSum);
  EXPECT_EQ(b - a, kDiff);
}

#if defined(ZKFARM_FIELD_MULX_ASM)
// On a machine with ADX, runs the portable multiplication too and checks
// that both paths agree bit for bit.
TYPED_TEST(FieldTest, PortableMatchesAssembly) {
  using F = TypeParam;
  if (!field_detail::cpu_has_bmi2_adx()) GTEST_SKIP() << "no BMI2/ADX: only the portable path exists";
  std::mt19937_64 rng(4);
  const auto values = edge_values<F>(rng, 200);
  struct Restore {
    bool saved = field_detail::use_mulx_adx;
    ~Restore() { field_detail::use_mulx_adx = saved; }
  } restore;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const F a = F::from_mont(values[i]), b = F::from_mont(values[(i * 7 + 3) % values.size()]);
    field_detail::use_mulx_adx = true;
    const F prod_asm = a * b, sq_asm = a.square();
    field_detail::use_mulx_adx = false;
    EXPECT_EQ(a * b, prod_asm) << i;
    EXPECT_EQ(a.square(), sq_asm) << i;
  }
}
#endif

TEST(FieldKnownValues, Bn254SmallProducts) {
  // 2^254 mod p, checked with an independent big-integer tool.
  EXPECT_EQ(Bn254Fq::from_u64(2).pow(254).to_decimal(),
            "7059779437489773633646340506914701874621185009112317347175358107333056201401");
  EXPECT_EQ(Bls12381Fq::from_u64(2).pow(381).to_decimal(),
            "922841219327642508117090186782047569078084588869172948161478539406683570946313461984095652731598791062934226228565");
}

}  // namespace
}  // namespace zkfarm
