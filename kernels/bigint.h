// bigint.h -- fixed-width unsigned integers of N 64-bit limbs, little-endian.
//
// The building block under every prime field in kernels/. Everything here is
// constexpr so that field constants (R mod p, R^2 mod p, -p^-1 mod 2^64, roots
// of unity) are computed by the compiler from the modulus alone: no hand-typed
// magic numbers beyond the moduli themselves.
//
// The limb primitives below (addc / subb / mac) are what field.h's hot paths
// are built from. At run time on x86-64 they use the _addcarry_u64 /
// _subborrow_u64 intrinsics (their builtins): GCC 12 turns a chain of those into one
// add/adc/adc... sequence, whereas the same chain written with unsigned
// __int128 sums compiles to 128-bit adds against zeroed registers, spills
// and carry re-materialization (measured with the same branchless field add,
// field_benchmark BM_Add: BN254 8.4 -> 4.2 ns, BLS12-381 Fq 15 -> 5 ns).
// During constant evaluation, and on other targets, they fall back to plain
// unsigned __int128 arithmetic.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

// The compiler builtins behind _addcarry_u64 / _subborrow_u64, called
// directly: <x86intrin.h> costs ~0.5 s of compile time in every translation
// unit that includes this header.
#if defined(__x86_64__) && !defined(__CUDACC__) && (defined(__GNUC__) || defined(__clang__))
#define ZKFARM_BIGINT_X86 1
#define ZKFARM_ADDCARRY_U64 __builtin_ia32_addcarryx_u64
#if defined(__clang__)
#define ZKFARM_SUBBORROW_U64 __builtin_ia32_subborrow_u64
#else
#define ZKFARM_SUBBORROW_U64 __builtin_ia32_sbb_u64
#endif
#endif

// Fully unrolls the next loop (trip counts here are small template
// constants; GCC -O2 otherwise keeps most of them as loops, which keeps the
// limbs in memory instead of registers).
#if defined(__CUDACC__)
#define ZKFARM_UNROLL
#elif defined(__clang__)
#define ZKFARM_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define ZKFARM_UNROLL _Pragma("GCC unroll 16")
#else
#define ZKFARM_UNROLL
#endif

namespace zkfarm {

using u128 = unsigned __int128;

namespace bigint_detail {

// Returns the low word of a + b + carry (carry is 0 or 1) and sets carry to
// the carry out.
constexpr std::uint64_t addc(std::uint64_t a, std::uint64_t b, std::uint64_t& carry) {
#if defined(ZKFARM_BIGINT_X86)
  if (!std::is_constant_evaluated()) {
    unsigned long long out;
    carry = ZKFARM_ADDCARRY_U64(static_cast<unsigned char>(carry), a, b, &out);
    return out;
  }
#endif
  u128 s = u128(a) + b + carry;
  carry = std::uint64_t(s >> 64);
  return std::uint64_t(s);
}

// Returns the low word of a - b - borrow (borrow is 0 or 1) and sets borrow
// to the borrow out.
constexpr std::uint64_t subb(std::uint64_t a, std::uint64_t b, std::uint64_t& borrow) {
#if defined(ZKFARM_BIGINT_X86)
  if (!std::is_constant_evaluated()) {
    unsigned long long out;
    borrow = ZKFARM_SUBBORROW_U64(static_cast<unsigned char>(borrow), a, b, &out);
    return out;
  }
#endif
  u128 d = u128(a) - b - borrow;
  borrow = std::uint64_t(d >> 64) & 1;
  return std::uint64_t(d);
}

// Returns the low word of acc + a * b + carry and sets carry to the high
// word (the sum is below 2^128 for any inputs).
constexpr std::uint64_t mac(std::uint64_t acc, std::uint64_t a, std::uint64_t b, std::uint64_t& carry) {
  u128 t = u128(a) * b + acc + carry;
  carry = std::uint64_t(t >> 64);
  return std::uint64_t(t);
}

}  // namespace bigint_detail

template <std::size_t N>
struct BigInt {
  static constexpr std::size_t kLimbs = N;
  std::array<std::uint64_t, N> limbs{};

  constexpr bool operator==(const BigInt&) const = default;

  constexpr bool is_zero() const {
    for (auto l : limbs)
      if (l) return false;
    return true;
  }

  // Returns -1, 0 or 1 as *this is less than, equal to or greater than other.
  constexpr int compare(const BigInt& other) const {
    for (std::size_t i = N; i-- > 0;) {
      if (limbs[i] < other.limbs[i]) return -1;
      if (limbs[i] > other.limbs[i]) return 1;
    }
    return 0;
  }
  constexpr bool operator<(const BigInt& o) const { return compare(o) < 0; }
  constexpr bool operator>=(const BigInt& o) const { return compare(o) >= 0; }

  constexpr bool bit(std::size_t i) const {
    return i < 64 * N && ((limbs[i / 64] >> (i % 64)) & 1);
  }

  // Number of significant bits (0 for zero).
  constexpr std::size_t num_bits() const {
    for (std::size_t i = N; i-- > 0;) {
      if (limbs[i]) return i * 64 + 64 - std::size_t(std::countl_zero(limbs[i]));
    }
    return 0;
  }

  // *this += o; returns the carry out.
  constexpr std::uint64_t add_in_place(const BigInt& o) {
    std::uint64_t carry = 0;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) limbs[i] = bigint_detail::addc(limbs[i], o.limbs[i], carry);
    return carry;
  }

  // *this -= o; returns the borrow out.
  constexpr std::uint64_t sub_in_place(const BigInt& o) {
    std::uint64_t borrow = 0;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) limbs[i] = bigint_detail::subb(limbs[i], o.limbs[i], borrow);
    return borrow;
  }

  // Logical shift right by one bit.
  constexpr void shr1() {
    for (std::size_t i = 0; i < N; ++i) {
      limbs[i] >>= 1;
      if (i + 1 < N) limbs[i] |= limbs[i + 1] << 63;
    }
  }

  // *this = *this * m + a; returns the limb that overflowed.
  constexpr std::uint64_t mul_add_small(std::uint64_t m, std::uint64_t a) {
    std::uint64_t carry = a;
    for (std::size_t i = 0; i < N; ++i) {
      u128 p = u128(limbs[i]) * m + carry;
      limbs[i] = std::uint64_t(p);
      carry = std::uint64_t(p >> 64);
    }
    return carry;
  }

  // *this /= d; returns the remainder.
  constexpr std::uint64_t div_small(std::uint64_t d) {
    u128 rem = 0;
    for (std::size_t i = N; i-- > 0;) {
      u128 cur = (rem << 64) | limbs[i];
      limbs[i] = std::uint64_t(cur / d);
      rem = cur % d;
    }
    return std::uint64_t(rem);
  }

  // Parses hexadecimal (optional 0x prefix). Throws std::invalid_argument on
  // a bad digit or a value that does not fit in N limbs.
  static constexpr BigInt from_hex(std::string_view s) {
    if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
    if (s.empty()) throw std::invalid_argument("empty hexadecimal number");
    BigInt r;
    for (char c : s) {
      std::uint64_t d;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else throw std::invalid_argument("bad hexadecimal digit");
      if (r.mul_add_small(16, d)) throw std::invalid_argument("hexadecimal number too large");
    }
    return r;
  }

  // Parses a non-negative decimal number. Throws std::invalid_argument on a
  // bad digit, an empty string or a value that does not fit in N limbs.
  static constexpr BigInt from_decimal(std::string_view s) {
    if (s.empty()) throw std::invalid_argument("empty decimal number");
    BigInt r;
    for (char c : s) {
      if (c < '0' || c > '9') throw std::invalid_argument("bad decimal digit");
      if (r.mul_add_small(10, std::uint64_t(c - '0')))
        throw std::invalid_argument("decimal number too large");
    }
    return r;
  }

  std::string to_decimal() const {
    if (is_zero()) return "0";
    BigInt t = *this;
    std::string out;
    while (!t.is_zero()) out.push_back(char('0' + t.div_small(10)));
    return std::string(out.rbegin(), out.rend());
  }

  std::string to_hex() const {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (std::size_t i = N; i-- > 0;)
      for (int s = 60; s >= 0; s -= 4) out.push_back(digits[(limbs[i] >> s) & 15]);
    std::size_t nz = out.find_first_not_of('0');
    return "0x" + (nz == std::string::npos ? std::string("0") : out.substr(nz));
  }

  // Little-endian bytes; len may be shorter than 8*N only if the value fits.
  void to_le_bytes(std::uint8_t* out, std::size_t len) const {
    for (std::size_t i = 0; i < len; ++i)
      out[i] = i / 8 < N ? std::uint8_t(limbs[i / 8] >> (8 * (i % 8))) : 0;
  }
  // Reads len little-endian bytes; bytes beyond 8*N must be zero (else throws).
  static BigInt from_le_bytes(const std::uint8_t* in, std::size_t len) {
    BigInt r;
    for (std::size_t i = 0; i < len; ++i) {
      if (i / 8 >= N) {
        if (in[i]) throw std::invalid_argument("integer too large for field");
        continue;
      }
      r.limbs[i / 8] |= std::uint64_t(in[i]) << (8 * (i % 8));
    }
    return r;
  }
};

}  // namespace zkfarm
