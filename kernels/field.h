// field.h -- prime fields in Montgomery form on 64-bit limbs.
//
// One template, Fp<Params>, serves every prime field zkfarm uses (BN254 and
// BLS12-381, base field and scalar field). A Params struct only names the
// modulus; R = 2^(64*N) mod p, R^2 mod p and -p^-1 mod 2^64 are derived at
// compile time. Because R = 2^(8*n8) for all four fields, the Montgomery form
// stored in snarkjs .zkey files is bit-for-bit our in-memory representation
// (limbs little-endian), so key sections can be used in place.
//
// Multiplication is CIOS with the "no final carry" shortcut, valid when the
// top limb of the modulus is below 2^63 - 1 (true for all four fields:
// checked by static_assert). Values are always kept fully reduced (< p).
//
// Thread safety: values are plain data; all functions are pure.
#pragma once

#include <cstring>
#include <optional>
#include <string>

#include "kernels/bigint.h"

namespace zkfarm {

namespace field_detail {

template <std::size_t N>
constexpr std::uint64_t neg_inverse_mod_2_64(const BigInt<N>& p) {
  // Newton iteration: inv = inv * (2 - p0 * inv) doubles correct bits.
  std::uint64_t inv = 1;
  for (int i = 0; i < 7; ++i) inv *= 2 - p.limbs[0] * inv;
  return ~inv + 1;
}

// (2^(64*N*times)) mod p, computed by repeated doubling.
template <std::size_t N>
constexpr BigInt<N> pow2_mod(const BigInt<N>& p, std::size_t bits) {
  BigInt<N> r;
  r.limbs[0] = 1;
  for (std::size_t i = 0; i < bits; ++i) {
    std::uint64_t carry = r.add_in_place(r);
    if (carry || r >= p) r.sub_in_place(p);
  }
  return r;
}

}  // namespace field_detail

template <class Params>
class Fp {
 public:
  static constexpr std::size_t N = Params::kLimbs;
  using Int = BigInt<N>;
  static constexpr Int kModulus = Params::kModulus;
  static constexpr std::size_t kBytes = N * 8;  // n8 in iden3 file formats
  static constexpr std::size_t kBits = kModulus.num_bits();
  static constexpr std::uint64_t kInv = field_detail::neg_inverse_mod_2_64(kModulus);
  static constexpr Int kR = field_detail::pow2_mod(kModulus, 64 * N);
  static constexpr Int kR2 = field_detail::pow2_mod(kModulus, 128 * N);
  static constexpr const char* kName = Params::kName;

  static_assert(kModulus.limbs[N - 1] < 0x7fffffffffffffffULL,
                "no-carry CIOS needs the modulus' top limb below 2^63 - 1");
  static_assert(kModulus.limbs[0] & 1, "modulus must be odd");

  // Montgomery representation: value * R mod p.
  Int mont{};

  constexpr Fp() = default;

  static constexpr Fp zero() { return Fp(); }
  static constexpr Fp one() { return from_mont(kR); }
  // Wraps a Montgomery-form integer already reduced below p.
  static constexpr Fp from_mont(const Int& m) {
    Fp r;
    r.mont = m;
    return r;
  }
  // Converts a canonical integer; returns nullopt if v >= p.
  static constexpr std::optional<Fp> from_canonical_checked(const Int& v) {
    if (v >= kModulus) return std::nullopt;
    return from_mont(v) * from_mont(kR2);
  }
  // Converts a canonical integer, reducing it modulo p first.
  static constexpr Fp from_canonical(Int v) {
    while (v >= kModulus) v.sub_in_place(kModulus);
    return from_mont(v) * from_mont(kR2);
  }
  static constexpr Fp from_u64(std::uint64_t x) {
    Int v;
    v.limbs[0] = x;
    return from_canonical(v);
  }
  // Canonical (non-Montgomery) integer value in [0, p).
  constexpr Int to_canonical() const {
    Int one_int;
    one_int.limbs[0] = 1;
    return (*this * from_mont(one_int)).mont;
  }

  // Decimal text as snarkjs writes it. Throws std::invalid_argument on a bad
  // number or one >= p.
  static Fp from_decimal(std::string_view s) {
    auto v = from_canonical_checked(Int::from_decimal(s));
    if (!v) throw std::invalid_argument(std::string("value is not below the ") + kName + " modulus");
    return *v;
  }
  std::string to_decimal() const { return to_canonical().to_decimal(); }

  constexpr bool is_zero() const { return mont.is_zero(); }
  constexpr bool is_one() const { return mont == kR; }
  constexpr bool operator==(const Fp& o) const { return mont == o.mont; }
  constexpr bool operator!=(const Fp& o) const { return !(mont == o.mont); }

  constexpr Fp operator+(const Fp& o) const {
    Fp r = *this;
    r += o;
    return r;
  }
  constexpr Fp& operator+=(const Fp& o) {
    // p < 2^(64N-1), so the sum of two reduced values never carries out.
    mont.add_in_place(o.mont);
    if (mont >= kModulus) mont.sub_in_place(kModulus);
    return *this;
  }
  constexpr Fp operator-(const Fp& o) const {
    Fp r = *this;
    r -= o;
    return r;
  }
  constexpr Fp& operator-=(const Fp& o) {
    if (mont.sub_in_place(o.mont)) mont.add_in_place(kModulus);
    return *this;
  }
  constexpr Fp operator-() const {
    if (is_zero()) return *this;
    Fp r = from_mont(kModulus);
    r.mont.sub_in_place(mont);
    return r;
  }
  constexpr Fp dbl() const { return *this + *this; }

  constexpr Fp operator*(const Fp& o) const {
    // CIOS without the final carry word (see file comment).
    std::uint64_t t[N] = {};
    const auto& a = mont.limbs;
    const auto& b = o.mont.limbs;
    const auto& p = kModulus.limbs;
    for (std::size_t i = 0; i < N; ++i) {
      u128 acc = u128(a[0]) * b[i] + t[0];
      std::uint64_t A = std::uint64_t(acc >> 64);
      t[0] = std::uint64_t(acc);
      std::uint64_t m = t[0] * kInv;
      u128 red = u128(m) * p[0] + t[0];
      std::uint64_t C = std::uint64_t(red >> 64);
      for (std::size_t j = 1; j < N; ++j) {
        acc = u128(a[j]) * b[i] + t[j] + A;
        A = std::uint64_t(acc >> 64);
        red = u128(m) * p[j] + std::uint64_t(acc) + C;
        C = std::uint64_t(red >> 64);
        t[j - 1] = std::uint64_t(red);
      }
      t[N - 1] = C + A;
    }
    Fp r;
    for (std::size_t i = 0; i < N; ++i) r.mont.limbs[i] = t[i];
    if (r.mont >= kModulus) r.mont.sub_in_place(kModulus);
    return r;
  }
  constexpr Fp& operator*=(const Fp& o) { return *this = *this * o; }
  constexpr Fp square() const { return *this * *this; }

  // this^e for a little-endian exponent of any width.
  template <std::size_t M>
  constexpr Fp pow(const BigInt<M>& e) const {
    Fp r = one();
    for (std::size_t i = e.num_bits(); i-- > 0;) {
      r = r.square();
      if (e.bit(i)) r *= *this;
    }
    return r;
  }
  constexpr Fp pow(std::uint64_t e) const {
    BigInt<1> b;
    b.limbs[0] = e;
    return pow(b);
  }

  // Multiplicative inverse (Fermat). The inverse of zero is zero; callers
  // that must not see zero check first.
  constexpr Fp inverse() const {
    Int e = kModulus;
    Int two;
    two.limbs[0] = 2;
    e.sub_in_place(two);
    return pow(e);
  }

  // Legendre symbol: 1 for a non-zero square, -1 for a non-square, 0 for zero.
  constexpr int legendre() const {
    if (is_zero()) return 0;
    Int e = kModulus;
    e.shr1();  // (p-1)/2 since p is odd
    Fp r = pow(e);
    return r.is_one() ? 1 : -1;
  }

  // Square root for p = 3 mod 4 (both curves' base fields); nullopt if none.
  // For other moduli use a Tonelli-Shanks helper (not needed by zkfarm).
  std::optional<Fp> sqrt() const {
    static_assert((kModulus.limbs[0] & 3) == 3 || true);
    if ((kModulus.limbs[0] & 3) != 3) throw std::logic_error("sqrt needs p = 3 mod 4");
    Int e = kModulus;
    Int one_int;
    one_int.limbs[0] = 1;
    e.add_in_place(one_int);
    e.shr1();
    e.shr1();
    Fp r = pow(e);
    if (r.square() == *this) return r;
    return std::nullopt;
  }

  // True if the canonical value is > (p-1)/2 (the "sign" used by point
  // compression in the zcash/Filecoin encoding).
  bool is_lexicographically_largest() const {
    Int half = kModulus;
    half.shr1();
    return to_canonical().compare(half) > 0;
  }

  // Canonical little-endian bytes (kBytes of them), as in .r1cs/.wtns files.
  void to_le_bytes(std::uint8_t* out) const { to_canonical().to_le_bytes(out, kBytes); }
  // Reads canonical little-endian bytes; nullopt if the value is >= p.
  static std::optional<Fp> from_le_bytes(const std::uint8_t* in) {
    return from_canonical_checked(Int::from_le_bytes(in, kBytes));
  }
  // Reads Montgomery-form little-endian bytes (as in .zkey); nullopt if >= p.
  static std::optional<Fp> from_mont_le_bytes(const std::uint8_t* in) {
    Int v = Int::from_le_bytes(in, kBytes);
    if (v >= kModulus) return std::nullopt;
    return from_mont(v);
  }
  void to_mont_le_bytes(std::uint8_t* out) const { mont.to_le_bytes(out, kBytes); }
};

// Inverts every element of values in place with one field inversion
// (Montgomery's trick). Zeros stay zero. scratch must hold values.size()
// elements.
template <class F, class Span, class Scratch>
void batch_inverse(Span& values, Scratch& scratch) {
  F acc = F::one();
  std::size_t n = values.size();
  for (std::size_t i = 0; i < n; ++i) {
    scratch[i] = acc;
    if (!values[i].is_zero()) acc *= values[i];
  }
  acc = acc.inverse();
  for (std::size_t i = n; i-- > 0;) {
    if (values[i].is_zero()) continue;
    F inv = acc * scratch[i];
    acc *= values[i];
    values[i] = inv;
  }
}

// ---------------------------------------------------------------------------
// The four prime fields. Moduli are the published curve parameters.

struct Bn254FqParams {
  static constexpr std::size_t kLimbs = 4;
  static constexpr const char* kName = "BN254 Fq";
  static constexpr BigInt<4> kModulus = BigInt<4>::from_decimal(
      "21888242871839275222246405745257275088696311157297823662689037894645226208583");
};
struct Bn254FrParams {
  static constexpr std::size_t kLimbs = 4;
  static constexpr const char* kName = "BN254 Fr";
  static constexpr BigInt<4> kModulus = BigInt<4>::from_decimal(
      "21888242871839275222246405745257275088548364400416034343698204186575808495617");
};
struct Bls12381FqParams {
  static constexpr std::size_t kLimbs = 6;
  static constexpr const char* kName = "BLS12-381 Fq";
  static constexpr BigInt<6> kModulus = BigInt<6>::from_hex(
      "0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab");
};
struct Bls12381FrParams {
  static constexpr std::size_t kLimbs = 4;
  static constexpr const char* kName = "BLS12-381 Fr";
  static constexpr BigInt<4> kModulus = BigInt<4>::from_hex(
      "0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001");
};

using Bn254Fq = Fp<Bn254FqParams>;
using Bn254Fr = Fp<Bn254FrParams>;
using Bls12381Fq = Fp<Bls12381FqParams>;
using Bls12381Fr = Fp<Bls12381FrParams>;

}  // namespace zkfarm
