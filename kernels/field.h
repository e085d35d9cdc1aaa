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
// Implementation paths (all give bit-identical results; field_test checks
// each against the others and against independent vectors):
//  * constant evaluation: plain C++ loops on unsigned __int128 (so every
//    constant here and in tower.h / curve.h is still computed at compile
//    time); inverse() is Fermat's little theorem there.
//  * run time, portable: the same CIOS fully unrolled, additions through the
//    carry intrinsics of bigint.h, branchless final subtraction.
//  * run time, x86-64 with BMI2+ADX (checked once with cpuid, since the build
//    targets x86-64-v2): 4- and 6-limb multiplication in inline assembly with
//    MULX and the two independent carry chains of ADCX/ADOX.
//  * add / sub / neg never branch on data: both candidates are computed and
//    one is selected with a borrow mask.
//  * inverse() at run time is a variable-time binary extended GCD that runs
//    31 steps at a time on 64-bit approximations (the "optimized binary GCD"
//    of T. Pornin, eprint 2020/972), with Fermat as a fallback.
//  * square() has its own code (fewer multiplications) on the portable path
//    and, for 4 limbs, in the assembly.
//
// Thread safety: values are plain data; all functions are pure.
#pragma once

#include <cstring>
#include <optional>
#include <string>

#include "kernels/bigint.h"

// The MULX/ADX assembly path is on by default on x86-64 (GCC/clang) and
// chosen at run time by cpuid; -DZKFARM_FIELD_DISABLE_MULX_ASM compiles it
// out. (It was briefly opt-in after "impossible constraints" errors in
// -fPIC code; see the operand notes at ZKFARM_MULX_STEP for the fix.)
#if !defined(ZKFARM_FIELD_DISABLE_MULX_ASM) && defined(ZKFARM_BIGINT_X86) && \
    (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define ZKFARM_FIELD_MULX_ASM 1
#endif

// 4-limb (BN254 Fq/Fr, BLS12-381 Fr) multiplication and squaring are forced
// inline; the 6-limb ones (BLS12-381 Fq) are not. Addition, subtraction and
// the final conditional subtraction are forced inline for every width (GCC
// otherwise leaves them as calls: ~20% of a BN254 G1 MSM's profile).
// Forcing all of them ([[gnu::always_inline]]) made the pairing ~12% faster
// (BN254 pairing benchmark: ~770 us with calls, ~680 us inlined) but made
// GCC 12 take over 8 minutes of CPU per translation unit that instantiates
// the pairing for both curves (formats/zkey.cc: 15 s without), which CI on 2
// cores cannot afford. The blow-up comes from inlining the 6-limb assembly;
// forcing only the 4-limb path (6-limb behind a noinline call) keeps
// formats/zkey.cc at ~12.5 s of CPU (+0-17% on other kernels/ TUs) and gives
// 4-limb mul ~36 -> ~30 ns, square ~37 -> ~28 ns, single-thread BN254 MSM
// 2^16 ~580 -> ~540 ms; the CPU prover's BN254 MSMs are where it pays.
#if defined(__GNUC__) && !defined(__CUDACC__)
#define ZKFARM_FIELD_ALWAYS_INLINE [[gnu::always_inline]] inline
#define ZKFARM_FIELD_NOINLINE [[gnu::noinline]]
#else
#define ZKFARM_FIELD_ALWAYS_INLINE
#define ZKFARM_FIELD_NOINLINE
#endif

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

// Returns x unchanged, but opaque to the optimizer (an empty asm that
// "modifies" it; no instruction is emitted).
constexpr std::uint64_t opaque(std::uint64_t x) {
#if defined(__GNUC__) && !defined(__CUDACC__)
  if (!std::is_constant_evaluated()) __asm__("" : "+r"(x));
#endif
  return x;
}

// mask ? a : b for mask in {0, ~0}, without a branch. opaque() on the mask
// keeps the compiler from turning this back into a (mispredicting) branch;
// opaque() on the result keeps GCC 12's SLP vectorizer from doing the
// selects of two limbs at a time in SSE registers (MOVQ/PINSRQ/PAND/...),
// which in a dependent chain measured ~2x slower for sub and neg (5.8 vs
// 2.7 ns on BN254).
constexpr std::uint64_t select(std::uint64_t mask, std::uint64_t a, std::uint64_t b) {
  return opaque(b ^ ((a ^ b) & opaque(mask)));
}

#if defined(ZKFARM_FIELD_MULX_ASM)
inline bool cpu_has_bmi2_adx() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (ebx & (1u << 8)) && (ebx & (1u << 19));  // BMI2 (MULX), ADX
}
// Whether multiplication takes the MULX/ADCX/ADOX assembly. Set once during
// static initialization; code running before that sees false and takes the
// portable path, which is equally correct. Tests clear it to exercise the
// portable path on machines that have ADX.
inline bool use_mulx_adx = cpu_has_bmi2_adx();
#endif

}  // namespace field_detail

#if defined(ZKFARM_FIELD_MULX_ASM)
// Building blocks of the MULX/ADX Montgomery multiplication (AT&T syntax).
// Operands: %[a0].., %[b0].. are the factors' limbs and %[p0].., %[inv] the
// modulus words and -p^-1 mod 2^64, all memory operands; %[t0]..%[tN] hold
// the running sum t (N+1 words); %[lo], %[hi] are scratch. The register
// holding t_j changes from row to row (t shifts down one word per row), so
// the macros take the operand names, e.g. "[t3]".
//
// Register budget: with Bazel's -fno-omit-frame-pointer GCC has 14
// allocatable registers, and the 6-limb product needs 10 (t0..t6, lo, hi,
// rdx). Every memory operand must therefore be addressable without extra
// registers of its own: the limbs are one operand each (so all limbs of a
// factor share one base register, whatever it is), and the constants live
// in a hidden-visibility array (Fp::kMulxConstants), which -fPIC code
// reaches RIP-relative; a default-visibility constant would go through the
// GOT and cost a register per operand, which is what made GCC fail with
// "impossible constraints" in formats/ (built with -fPIC).
//
// hi:lo = rdx * SRC; DLO += lo on the CF chain; DHI += hi on the OF chain.
#define ZKFARM_MULX_STEP(SRC, DLO, DHI) \
  "mulxq " SRC ", %[lo], %[hi]\n\t"      \
  "adcxq %[lo], %" DLO "\n\t"            \
  "adoxq %[hi], %" DHI "\n\t"
// m = t0 * inv (into rdx); t += m * p, whose low word cancels t0.
#define ZKFARM_MONT_REDUCE_HEAD(T0, T1) \
  "movq %" T0 ", %%rdx\n\t"              \
  "imulq %[inv], %%rdx\n\t"              \
  "xorl %k[lo], %k[lo]\n\t"              \
  "mulxq %[p0], %[lo], %[hi]\n\t"        \
  "adcxq %" T0 ", %[lo]\n\t"             \
  "adoxq %[hi], %" T1 "\n\t"
// First row: t = a * b0 (N+1 words).
#define ZKFARM_MONT_ROW0_HEAD(T0, T1, T2) \
  "movq %[b0], %%rdx\n\t"                  \
  "mulxq %[a0], %" T0 ", %" T1 "\n\t"      \
  "mulxq %[a1], %[lo], %" T2 "\n\t"        \
  "addq %[lo], %" T1 "\n\t"
#define ZKFARM_MONT_ROW0_STEP(A, TJ, TJ1) \
  "mulxq " A ", %[lo], %" TJ1 "\n\t"     \
  "adcq %[lo], %" TJ "\n\t"
// Later rows start with t_N = 0 and both carry flags clear.
#define ZKFARM_MONT_ROW_HEAD(B, TN) \
  "movq " B ", %%rdx\n\t"          \
  "xorl %k" TN ", %k" TN "\n\t"
#define ZKFARM_ADC0(T) "adcq $0, %" T "\n\t"

#define ZKFARM_MONT_ROW4(B, T0, T1, T2, T3, T4)                                        \
  ZKFARM_MONT_ROW_HEAD(B, T4)                                                          \
  ZKFARM_MULX_STEP("%[a0]", T0, T1) ZKFARM_MULX_STEP("%[a1]", T1, T2)                 \
  ZKFARM_MULX_STEP("%[a2]", T2, T3) ZKFARM_MULX_STEP("%[a3]", T3, T4) ZKFARM_ADC0(T4)
#define ZKFARM_MONT_REDUCE4(T0, T1, T2, T3, T4)                                              \
  ZKFARM_MONT_REDUCE_HEAD(T0, T1)                                                            \
  ZKFARM_MULX_STEP("%[p1]", T1, T2) ZKFARM_MULX_STEP("%[p2]", T2, T3)                       \
  ZKFARM_MULX_STEP("%[p3]", T3, T4) ZKFARM_ADC0(T4)

#define ZKFARM_MONT_ROW6(B, T0, T1, T2, T3, T4, T5, T6)                                \
  ZKFARM_MONT_ROW_HEAD(B, T6)                                                          \
  ZKFARM_MULX_STEP("%[a0]", T0, T1) ZKFARM_MULX_STEP("%[a1]", T1, T2)                 \
  ZKFARM_MULX_STEP("%[a2]", T2, T3) ZKFARM_MULX_STEP("%[a3]", T3, T4)                 \
  ZKFARM_MULX_STEP("%[a4]", T4, T5) ZKFARM_MULX_STEP("%[a5]", T5, T6) ZKFARM_ADC0(T6)
#define ZKFARM_MONT_REDUCE6(T0, T1, T2, T3, T4, T5, T6)                        \
  ZKFARM_MONT_REDUCE_HEAD(T0, T1)                                              \
  ZKFARM_MULX_STEP("%[p1]", T1, T2) ZKFARM_MULX_STEP("%[p2]", T2, T3)         \
  ZKFARM_MULX_STEP("%[p3]", T3, T4) ZKFARM_MULX_STEP("%[p4]", T4, T5)         \
  ZKFARM_MULX_STEP("%[p5]", T5, T6) ZKFARM_ADC0(T6)
#endif  // ZKFARM_FIELD_MULX_ASM

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

  ZKFARM_FIELD_ALWAYS_INLINE constexpr Fp operator+(const Fp& o) const {
    Fp r = *this;
    r += o;
    return r;
  }
  ZKFARM_FIELD_ALWAYS_INLINE constexpr Fp& operator+=(const Fp& o) {
    // p < 2^(64N-1), so the sum of two reduced values never carries out.
    Int s;
    std::uint64_t carry = 0;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) s.limbs[i] = bigint_detail::addc(mont.limbs[i], o.mont.limbs[i], carry);
    mont = reduce_once(s);
    return *this;
  }
  ZKFARM_FIELD_ALWAYS_INLINE constexpr Fp operator-(const Fp& o) const {
    Fp r = *this;
    r -= o;
    return r;
  }
  ZKFARM_FIELD_ALWAYS_INLINE constexpr Fp& operator-=(const Fp& o) {
    // d = a - b and d + p, then keep d + p if a - b borrowed. Both chains
    // run unconditionally; the borrow only drives a masked select.
    Int d, e;
    std::uint64_t borrow = 0, carry = 0;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) d.limbs[i] = bigint_detail::subb(mont.limbs[i], o.mont.limbs[i], borrow);
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) e.limbs[i] = bigint_detail::addc(d.limbs[i], kModulus.limbs[i], carry);
    const std::uint64_t mask = 0 - borrow;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) mont.limbs[i] = field_detail::select(mask, e.limbs[i], d.limbs[i]);
    return *this;
  }
  ZKFARM_FIELD_ALWAYS_INLINE constexpr Fp operator-() const {
    // p - a, or a itself (= 0) when a is zero, without a branch.
    std::uint64_t any = 0;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) any |= mont.limbs[i];
    const std::uint64_t mask = 0 - std::uint64_t(any != 0);
    Int d;
    std::uint64_t borrow = 0;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) d.limbs[i] = bigint_detail::subb(kModulus.limbs[i], mont.limbs[i], borrow);
    Fp r;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) r.mont.limbs[i] = field_detail::select(mask, d.limbs[i], mont.limbs[i]);
    return r;
  }
  constexpr Fp dbl() const { return *this + *this; }

  ZKFARM_FIELD_ALWAYS_INLINE constexpr Fp operator*(const Fp& o) const {
    if (std::is_constant_evaluated()) return from_mont(mul_portable(mont, o.mont));
    return from_mont(mul_runtime(mont, o.mont));
  }
  ZKFARM_FIELD_ALWAYS_INLINE constexpr Fp& operator*=(const Fp& o) { return *this = *this * o; }
  ZKFARM_FIELD_ALWAYS_INLINE constexpr Fp square() const {
    if (std::is_constant_evaluated()) return from_mont(mul_portable(mont, mont));
    return from_mont(square_runtime(mont));
  }

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

  // Multiplicative inverse. The inverse of zero is zero; callers that must
  // not see zero check first. Run time: binary GCD (see inverse_bingcd);
  // constant evaluation: Fermat, this^(p-2).
  constexpr Fp inverse() const {
    if (!std::is_constant_evaluated() && !is_zero()) {
      Int v;
      // v = (aR)^-1 mod p; the Montgomery form of a^-1 is v * R^2, i.e. the
      // Montgomery product of v and R^3.
      if (inverse_bingcd(mont, v)) return from_mont(v) * from_mont(r_cubed());
    }
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

 private:
  using Limb = std::uint64_t;

  // t mod p for t < 2p: subtract p, keep t instead if that borrowed.
  ZKFARM_FIELD_ALWAYS_INLINE static constexpr Int reduce_once(const Int& t) {
    Int d;
    Limb borrow = 0;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) d.limbs[i] = bigint_detail::subb(t.limbs[i], kModulus.limbs[i], borrow);
    const Limb mask = 0 - borrow;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) d.limbs[i] = field_detail::select(mask, t.limbs[i], d.limbs[i]);
    return d;
  }

  // CIOS without the final carry word (see file comment); a * b / R mod p.
  static constexpr Int mul_portable(const Int& x, const Int& y) {
    using bigint_detail::mac;
    const auto& a = x.limbs;
    const auto& b = y.limbs;
    const auto& p = kModulus.limbs;
    Int t;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) {
      Limb A = 0, C = 0;
      t.limbs[0] = mac(t.limbs[0], a[0], b[i], A);
      const Limb m = t.limbs[0] * kInv;
      (void)mac(t.limbs[0], m, p[0], C);
      ZKFARM_UNROLL
      for (std::size_t j = 1; j < N; ++j) {
        t.limbs[j] = mac(t.limbs[j], a[j], b[i], A);
        t.limbs[j - 1] = mac(t.limbs[j], m, p[j], C);
      }
      t.limbs[N - 1] = C + A;
    }
    return reduce_once(t);
  }

  // a^2 / R mod p: the off-diagonal products once, doubled, plus the
  // squares (N(N+1)/2 multiplications instead of N^2), then N word-by-word
  // Montgomery reduction steps. Measured against mul_portable(x, x): ~5%
  // faster for 4 limbs, ~10% for 6 (latency and throughput alike).
  static constexpr Int square_portable(const Int& x) {
    using bigint_detail::addc;
    using bigint_detail::mac;
    const auto& a = x.limbs;
    const auto& p = kModulus.limbs;
    Limb T[2 * N] = {};
    ZKFARM_UNROLL
    for (std::size_t i = 0; i + 1 < N; ++i) {
      Limb c = 0;
      ZKFARM_UNROLL
      for (std::size_t j = i + 1; j < N; ++j) T[i + j] = mac(T[i + j], a[i], a[j], c);
      T[i + N] = c;
    }
    T[2 * N - 1] = T[2 * N - 2] >> 63;
    ZKFARM_UNROLL
    for (std::size_t k = 2 * N - 2; k > 0; --k) T[k] = (T[k] << 1) | (T[k - 1] >> 63);
    T[0] <<= 1;
    Limb c = 0;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) {
      Limb hi = 0;
      const Limb lo = mac(0, a[i], a[i], hi);
      T[2 * i] = addc(T[2 * i], lo, c);
      T[2 * i + 1] = addc(T[2 * i + 1], hi, c);
    }
    // a^2 + m * p < p^2 + R * p < R^2 (p < R/2): the top carry stays zero.
    Limb top = 0;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) {
      const Limb m = T[i] * kInv;
      Limb carry = 0;
      ZKFARM_UNROLL
      for (std::size_t j = 0; j < N; ++j) T[i + j] = mac(T[i + j], m, p[j], carry);
      T[i + N] = addc(T[i + N], carry, top);
    }
    Int r;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) r.limbs[i] = T[N + i];
    return reduce_once(r);
  }

#if defined(ZKFARM_FIELD_MULX_ASM)
  // The assembly's %[p0].., %[inv]: p_0 .. p_{N-1}, then -p^-1 mod 2^64.
  // Hidden visibility makes -fPIC code address it RIP-relative instead of
  // through the GOT (see the register budget note at ZKFARM_MULX_STEP).
  [[gnu::visibility("hidden")]] static constexpr std::array<Limb, N + 1> kMulxConstants = [] {
    std::array<Limb, N + 1> c{};
    for (std::size_t i = 0; i < N; ++i) c[i] = kModulus.limbs[i];
    c[N] = kInv;
    return c;
  }();

  // The same CIOS as mul_portable, in MULX/ADCX/ADOX assembly. Per row: t +=
  // a * b_i, then m = t_0 * inv, t = (t + m * p) / 2^64. The lo halves of the
  // products go on the CF chain (ADCX), the hi halves on the OF chain (ADOX),
  // so both accumulate in one pass without the register moves that MUL's
  // fixed RDX:RAX output costs. The division by 2^64 is free: the register
  // names rotate (row i's t_1 is row i+1's t_0). Only the final conditional
  // subtraction is left to C++ (reduce_once).
  ZKFARM_FIELD_ALWAYS_INLINE static Int mul_mulx_adx(const Int& x, const Int& y) {
    if constexpr (N == 4) return mul_mulx_adx4(x, y);
    else return mul_mulx_adx6(x, y);
  }
  ZKFARM_FIELD_ALWAYS_INLINE static Int mul_mulx_adx4(const Int& x, const Int& y) {
    static_assert(N == 4);
    Limb t0, t1, t2, t3, t4, lo, hi, rdx;
    const auto& a = x.limbs;
    const auto& b = y.limbs;
    const auto& k = kMulxConstants;
    {
      __asm__(
          ZKFARM_MONT_ROW0_HEAD("[t0]", "[t1]", "[t2]")
          ZKFARM_MONT_ROW0_STEP("%[a2]", "[t2]", "[t3]")
          ZKFARM_MONT_ROW0_STEP("%[a3]", "[t3]", "[t4]")
          ZKFARM_ADC0("[t4]")
          ZKFARM_MONT_REDUCE4("[t0]", "[t1]", "[t2]", "[t3]", "[t4]")
          ZKFARM_MONT_ROW4("%[b1]", "[t1]", "[t2]", "[t3]", "[t4]", "[t0]")
          ZKFARM_MONT_REDUCE4("[t1]", "[t2]", "[t3]", "[t4]", "[t0]")
          ZKFARM_MONT_ROW4("%[b2]", "[t2]", "[t3]", "[t4]", "[t0]", "[t1]")
          ZKFARM_MONT_REDUCE4("[t2]", "[t3]", "[t4]", "[t0]", "[t1]")
          ZKFARM_MONT_ROW4("%[b3]", "[t3]", "[t4]", "[t0]", "[t1]", "[t2]")
          ZKFARM_MONT_REDUCE4("[t3]", "[t4]", "[t0]", "[t1]", "[t2]")
          : [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3), [t4] "=&r"(t4),
            [lo] "=&r"(lo), [hi] "=&r"(hi), "=&d"(rdx)
          : [a0] "m"(a[0]), [a1] "m"(a[1]), [a2] "m"(a[2]), [a3] "m"(a[3]),
            [b0] "m"(b[0]), [b1] "m"(b[1]), [b2] "m"(b[2]), [b3] "m"(b[3]),
            [p0] "m"(k[0]), [p1] "m"(k[1]), [p2] "m"(k[2]), [p3] "m"(k[3]), [inv] "m"(k[4])
          : "cc");
      Int t;
      t.limbs = {t4, t0, t1, t2};
      return reduce_once(t);
    }
  }
  ZKFARM_FIELD_NOINLINE static Int mul_mulx_adx6(const Int& x, const Int& y) {
    static_assert(N == 6);
    Limb t0, t1, t2, t3, t4, lo, hi, rdx;
    const auto& a = x.limbs;
    const auto& b = y.limbs;
    const auto& k = kMulxConstants;
    {
      Limb t5, t6;
      __asm__(
          ZKFARM_MONT_ROW0_HEAD("[t0]", "[t1]", "[t2]")
          ZKFARM_MONT_ROW0_STEP("%[a2]", "[t2]", "[t3]")
          ZKFARM_MONT_ROW0_STEP("%[a3]", "[t3]", "[t4]")
          ZKFARM_MONT_ROW0_STEP("%[a4]", "[t4]", "[t5]")
          ZKFARM_MONT_ROW0_STEP("%[a5]", "[t5]", "[t6]")
          ZKFARM_ADC0("[t6]")
          ZKFARM_MONT_REDUCE6("[t0]", "[t1]", "[t2]", "[t3]", "[t4]", "[t5]", "[t6]")
          ZKFARM_MONT_ROW6("%[b1]", "[t1]", "[t2]", "[t3]", "[t4]", "[t5]", "[t6]", "[t0]")
          ZKFARM_MONT_REDUCE6("[t1]", "[t2]", "[t3]", "[t4]", "[t5]", "[t6]", "[t0]")
          ZKFARM_MONT_ROW6("%[b2]", "[t2]", "[t3]", "[t4]", "[t5]", "[t6]", "[t0]", "[t1]")
          ZKFARM_MONT_REDUCE6("[t2]", "[t3]", "[t4]", "[t5]", "[t6]", "[t0]", "[t1]")
          ZKFARM_MONT_ROW6("%[b3]", "[t3]", "[t4]", "[t5]", "[t6]", "[t0]", "[t1]", "[t2]")
          ZKFARM_MONT_REDUCE6("[t3]", "[t4]", "[t5]", "[t6]", "[t0]", "[t1]", "[t2]")
          ZKFARM_MONT_ROW6("%[b4]", "[t4]", "[t5]", "[t6]", "[t0]", "[t1]", "[t2]", "[t3]")
          ZKFARM_MONT_REDUCE6("[t4]", "[t5]", "[t6]", "[t0]", "[t1]", "[t2]", "[t3]")
          ZKFARM_MONT_ROW6("%[b5]", "[t5]", "[t6]", "[t0]", "[t1]", "[t2]", "[t3]", "[t4]")
          ZKFARM_MONT_REDUCE6("[t5]", "[t6]", "[t0]", "[t1]", "[t2]", "[t3]", "[t4]")
          : [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3), [t4] "=&r"(t4),
            [t5] "=&r"(t5), [t6] "=&r"(t6), [lo] "=&r"(lo), [hi] "=&r"(hi), "=&d"(rdx)
          : [a0] "m"(a[0]), [a1] "m"(a[1]), [a2] "m"(a[2]), [a3] "m"(a[3]), [a4] "m"(a[4]),
            [a5] "m"(a[5]), [b0] "m"(b[0]), [b1] "m"(b[1]), [b2] "m"(b[2]), [b3] "m"(b[3]),
            [b4] "m"(b[4]), [b5] "m"(b[5]), [p0] "m"(k[0]), [p1] "m"(k[1]), [p2] "m"(k[2]),
            [p3] "m"(k[3]), [p4] "m"(k[4]), [p5] "m"(k[5]), [inv] "m"(k[6])
          : "cc");
      Int t;
      t.limbs = {t6, t0, t1, t2, t3, t4};
      return reduce_once(t);
    }
  }

  // 4-limb squaring in MULX/ADCX/ADOX: the full square first (6 products
  // off the diagonal, doubled, plus the 4 squares: 10 multiplications
  // instead of 16), then 4 Montgomery reduction rounds on its low half only
  // (the "+ m p" of each round fits in 5 words, so no carry runs into the
  // high half), and finally the high half added in: (lo + M p) / R + hi =
  // (a^2 + M p) / R < 2p, so one conditional subtraction still suffices.
  // Measured: same latency as mul_mulx_adx(x, x) (~27 ns on the 2-core dev
  // VM), ~9% higher throughput with 8 independent squarings in flight. (No
  // 6-limb version: its 12-word square plus scratch does not fit in the
  // registers left with a frame pointer.)
  ZKFARM_FIELD_ALWAYS_INLINE static Int square_mulx_adx4(const Int& x) {
    static_assert(N == 4);
    Limb t0, t1, t2, t3, t4, t5, t6, t7, u, lo, hi, rdx;
    const auto& a = x.limbs;
    const auto& k = kMulxConstants;
    __asm__(
        // Off-diagonal products a_i a_j (i < j) into t1..t6.
        "movq %[a0], %%rdx\n\t"
        "mulxq %[a1], %[t1], %[t2]\n\t"
        "mulxq %[a2], %[lo], %[t3]\n\t"
        "addq %[lo], %[t2]\n\t"
        "mulxq %[a3], %[lo], %[t4]\n\t"
        "adcq %[lo], %[t3]\n\t"
        "adcq $0, %[t4]\n\t"
        "movq %[a1], %%rdx\n\t"
        "xorl %k[t5], %k[t5]\n\t"
        ZKFARM_MULX_STEP("%[a2]", "[t3]", "[t4]")
        ZKFARM_MULX_STEP("%[a3]", "[t4]", "[t5]")
        "adcq $0, %[t5]\n\t"
        "movq %[a2], %%rdx\n\t"
        "mulxq %[a3], %[lo], %[t6]\n\t"
        "addq %[lo], %[t5]\n\t"
        "adcq $0, %[t6]\n\t"
        // Double them (CF chain) and add the squares a_i^2 (OF chain).
        "xorl %k[t7], %k[t7]\n\t"
        "movq %[a0], %%rdx\n\t"
        "mulxq %%rdx, %[t0], %[hi]\n\t"
        "adcxq %[t1], %[t1]\n\t"
        "adoxq %[hi], %[t1]\n\t"
        "movq %[a1], %%rdx\n\t"
        "mulxq %%rdx, %[lo], %[hi]\n\t"
        "adcxq %[t2], %[t2]\n\t"
        "adoxq %[lo], %[t2]\n\t"
        "adcxq %[t3], %[t3]\n\t"
        "adoxq %[hi], %[t3]\n\t"
        "movq %[a2], %%rdx\n\t"
        "mulxq %%rdx, %[lo], %[hi]\n\t"
        "adcxq %[t4], %[t4]\n\t"
        "adoxq %[lo], %[t4]\n\t"
        "adcxq %[t5], %[t5]\n\t"
        "adoxq %[hi], %[t5]\n\t"
        "movq %[a3], %%rdx\n\t"
        "mulxq %%rdx, %[lo], %[hi]\n\t"
        "adcxq %[t6], %[t6]\n\t"
        "adoxq %[lo], %[t6]\n\t"
        "adcxq %[t7], %[t7]\n\t"
        "adoxq %[hi], %[t7]\n\t"
        // Reduce t0..t3 (top word of each round starts at zero).
        "xorl %k[u], %k[u]\n\t"
        ZKFARM_MONT_REDUCE4("[t0]", "[t1]", "[t2]", "[t3]", "[u]")
        "xorl %k[t0], %k[t0]\n\t"
        ZKFARM_MONT_REDUCE4("[t1]", "[t2]", "[t3]", "[u]", "[t0]")
        "xorl %k[t1], %k[t1]\n\t"
        ZKFARM_MONT_REDUCE4("[t2]", "[t3]", "[u]", "[t0]", "[t1]")
        "xorl %k[t2], %k[t2]\n\t"
        ZKFARM_MONT_REDUCE4("[t3]", "[u]", "[t0]", "[t1]", "[t2]")
        // Plus the high half.
        "addq %[t4], %[u]\n\t"
        "adcq %[t5], %[t0]\n\t"
        "adcq %[t6], %[t1]\n\t"
        "adcq %[t7], %[t2]\n\t"
        : [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3), [t4] "=&r"(t4),
          [t5] "=&r"(t5), [t6] "=&r"(t6), [t7] "=&r"(t7), [u] "=&r"(u), [lo] "=&r"(lo), [hi] "=&r"(hi),
          "=&d"(rdx)
        : [a0] "m"(a[0]), [a1] "m"(a[1]), [a2] "m"(a[2]), [a3] "m"(a[3]), [p0] "m"(k[0]),
          [p1] "m"(k[1]), [p2] "m"(k[2]), [p3] "m"(k[3]), [inv] "m"(k[4])
        : "cc");
    Int t;
    t.limbs = {u, t0, t1, t2};
    return reduce_once(t);
  }
  static constexpr bool kHasMulxAsm = N == 4 || N == 6;
#else
  static constexpr bool kHasMulxAsm = false;
#endif

  // Out-of-line copies of the portable code for the CPUs without ADX, so
  // that the call sites, which inline the assembly, stay small.
  ZKFARM_FIELD_NOINLINE static Int mul_portable_call(const Int& x, const Int& y) { return mul_portable(x, y); }
  ZKFARM_FIELD_NOINLINE static Int square_portable_call(const Int& x) { return square_portable(x); }

  ZKFARM_FIELD_ALWAYS_INLINE static Int mul_runtime(const Int& x, const Int& y) {
#if defined(ZKFARM_FIELD_MULX_ASM)
    if constexpr (kHasMulxAsm) {
      if (field_detail::use_mulx_adx) [[likely]]
        return mul_mulx_adx(x, y);
      return mul_portable_call(x, y);
    }
#endif
    return mul_portable(x, y);
  }
  ZKFARM_FIELD_ALWAYS_INLINE static Int square_runtime(const Int& x) {
#if defined(ZKFARM_FIELD_MULX_ASM)
    if constexpr (kHasMulxAsm) {
      if (field_detail::use_mulx_adx) [[likely]] {
        if constexpr (N == 4) return square_mulx_adx4(x);
        return mul_mulx_adx(x, x);
      }
      return square_portable_call(x);
    }
#endif
    return square_portable(x);
  }

  // R^3 mod p (the Montgomery form of R^2), for inverse().
  static Int r_cubed() {
    static constexpr Int kR3 = mul_portable(kR2, kR2);
    return kR3;
  }

  // ---- inverse: optimized binary GCD ----
  //
  // Binary extended GCD on (a, b) = (x, p) keeps a = u * x and b = v * x
  // (mod p) and ends with a = 0, b = 1, so v = x^-1. Each step halves a
  // (after subtracting b, swapping first if a < b). 31 steps are decided on
  // 64-bit approximations of a and b (their low 31 bits, exact for 31 steps,
  // and their top 33 bits, which decide the comparisons), collected as a
  // matrix [f0 g0; f1 g1] with |entries| <= 2^31, and then applied once to
  // the full-width a, b (and, divided by 2^31 mod p, to u, v). A wrong
  // comparison on the approximations can only make a or b negative, which is
  // fixed by negating it and its row. See Pornin, eprint 2020/972.
  // Measured (field_benchmark BM_Inverse): BN254 ~2 us vs ~18 us for
  // Fermat, BLS12-381 Fq ~3.5 us vs ~60 us. Variable time: the number of
  // rounds depends on the value; where timing must not depend on a secret,
  // use pow(p - 2) instead.

  // Sets *mag = |x * f + y * g| (N+1 limbs) and returns true if negative.
  static bool lincomb(Limb (&mag)[N + 1], const Int& x, std::int64_t f, const Int& y, std::int64_t g) {
    using bigint_detail::addc;
    using bigint_detail::mac;
    using bigint_detail::subb;
    const bool fneg = f < 0, gneg = g < 0;
    const Limb fa = fneg ? 0 - Limb(f) : Limb(f), ga = gneg ? 0 - Limb(g) : Limb(g);
    Limb X[N + 1], Y[N + 1], cx = 0, cy = 0;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) {
      X[i] = mac(0, x.limbs[i], fa, cx);
      Y[i] = mac(0, y.limbs[i], ga, cy);
    }
    X[N] = cx;
    Y[N] = cy;
    if (fneg == gneg) {
      Limb c = 0;
      ZKFARM_UNROLL
      for (std::size_t i = 0; i <= N; ++i) mag[i] = addc(X[i], Y[i], c);
      return fneg;
    }
    Limb borrow = 0;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i <= N; ++i) mag[i] = subb(X[i], Y[i], borrow);
    if (!borrow) return fneg;
    borrow = 0;  // |X - Y| = Y - X = 0 - (X - Y)
    ZKFARM_UNROLL
    for (std::size_t i = 0; i <= N; ++i) mag[i] = subb(0, mag[i], borrow);
    return gneg;
  }

  // (x * f + y * g) / 2^31 for a combination known to be divisible by 2^31;
  // returns true if it is negative (*out gets the absolute value).
  static bool lincomb_shift31(Int& out, const Int& x, std::int64_t f, const Int& y, std::int64_t g) {
    Limb mag[N + 1];
    const bool neg = lincomb(mag, x, f, y, g);
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) out.limbs[i] = (mag[i] >> 31) | (mag[i + 1] << 33);
    return neg;
  }

  // (x * f + y * g) / 2^31 mod p, for x, y < p.
  static Int lincomb_mod(const Int& x, std::int64_t f, const Int& y, std::int64_t g) {
    using bigint_detail::addc;
    using bigint_detail::mac;
    using bigint_detail::subb;
    Limb mag[N + 1];
    const bool neg = lincomb(mag, x, f, y, g);  // mag < 2^32 p
    // Exact division by 2^31 mod p (Montgomery style): add k * p with
    // k = -mag * p^-1 mod 2^31, which clears the low 31 bits.
    const Limb k = (mag[0] * kInv) & 0x7fffffff;
    Limb c = 0, c2 = 0;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) mag[i] = addc(mac(0, kModulus.limbs[i], k, c), mag[i], c2);
    mag[N] = mag[N] + c + c2;
    Limb r[N + 1];
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) r[i] = (mag[i] >> 31) | (mag[i + 1] << 33);
    r[N] = mag[N] >> 31;
    // r < 3p: subtract p at most twice.
    for (int round = 0; round < 2; ++round) {
      Limb d[N + 1], borrow = 0;
      ZKFARM_UNROLL
      for (std::size_t i = 0; i < N; ++i) d[i] = subb(r[i], kModulus.limbs[i], borrow);
      d[N] = subb(r[N], 0, borrow);
      if (borrow) break;
      ZKFARM_UNROLL
      for (std::size_t i = 0; i <= N; ++i) r[i] = d[i];
    }
    Int out;
    ZKFARM_UNROLL
    for (std::size_t i = 0; i < N; ++i) out.limbs[i] = r[i];
    if (neg && !out.is_zero()) {
      Int q = kModulus;
      q.sub_in_place(out);
      out = q;
    }
    return out;
  }

  // Bits [s, s + 33) of x (s + 33 <= 64 N).
  static Limb top33(const Int& x, std::size_t s) {
    const std::size_t w = s / 64, sh = s % 64;
    Limb v = x.limbs[w] >> sh;
    if (sh > 31 && w + 1 < N) v |= x.limbs[w + 1] << (64 - sh);
    return v & ((Limb(1) << 33) - 1);
  }

  // Sets out = x^-1 mod p for x in [1, p). Returns false if the iteration
  // bound was hit (never observed; the caller then falls back to Fermat).
  static bool inverse_bingcd(const Int& x, Int& out) {
    Int a = x, b = kModulus, u, v;
    u.limbs[0] = 1;
    // Each round shrinks len(a) + len(b) (2 * kBits at the start) by about
    // 31 bits: at most ceil((2 kBits - 1) / 31) rounds were seen over 300k
    // random and edge-case inputs per field (17 for 254/255 bits, 25 for
    // 381), matching the paper's bound. Twice that plus slack is the cap.
    constexpr int kMaxRounds = int(4 * kBits / 31) + 8;
    for (int round = 0; !a.is_zero(); ++round) {
      if (round == kMaxRounds) return false;
      // n = max(len(a), len(b)); when both fit in 64 bits the
      // "approximations" are the exact values.
      std::size_t n = 0;
      for (std::size_t i = N; i-- > 0;) {
        const Limb w = a.limbs[i] | b.limbs[i];
        if (w) {
          n = 64 * i + 64 - std::size_t(std::countl_zero(w));
          break;
        }
      }
      Limb a_ = a.limbs[0], b_ = b.limbs[0];
      if (n > 64) {
        a_ = (top33(a, n - 33) << 31) | (a_ & 0x7fffffff);
        b_ = (top33(b, n - 33) << 31) | (b_ & 0x7fffffff);
      }
      // 31 branchless steps; f, g are two's complement in unsigned words.
      Limb f0 = 1, g0 = 0, f1 = 0, g1 = 1;
      for (int j = 0; j < 31; ++j) {
        const Limb odd = 0 - (a_ & 1);
        const Limb swap = odd & (0 - Limb(a_ < b_));
        Limb t = (a_ ^ b_) & swap;
        a_ ^= t;
        b_ ^= t;
        t = (f0 ^ f1) & swap;
        f0 ^= t;
        f1 ^= t;
        t = (g0 ^ g1) & swap;
        g0 ^= t;
        g1 ^= t;
        a_ -= b_ & odd;
        f0 -= f1 & odd;
        g0 -= g1 & odd;
        a_ >>= 1;
        f1 <<= 1;
        g1 <<= 1;
      }
      std::int64_t F0 = std::int64_t(f0), G0 = std::int64_t(g0), F1 = std::int64_t(f1), G1 = std::int64_t(g1);
      Int na, nb;
      if (lincomb_shift31(na, a, F0, b, G0)) F0 = -F0, G0 = -G0;
      if (lincomb_shift31(nb, a, F1, b, G1)) F1 = -F1, G1 = -G1;
      const Int nu = lincomb_mod(u, F0, v, G0);
      const Int nv = lincomb_mod(u, F1, v, G1);
      a = na;
      b = nb;
      u = nu;
      v = nv;
    }
    Int one_int;
    one_int.limbs[0] = 1;
    if (!(b == one_int)) return false;
    out = v;
    return true;
  }
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
