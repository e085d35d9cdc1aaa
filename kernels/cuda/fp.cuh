// fp.cuh -- prime fields on the GPU: Montgomery form on 32-bit limbs.
//
// DevFp<Params> is the device twin of field.h's Fp<Params>: the same Params
// struct, the same modulus, the same R (2^256 for 4x64-bit-limb fields,
// 2^384 for 6x64), hence the same bytes. A host array of Fp (or of curve
// points made of Fp) is copied to the device and read as DevFp with no
// conversion, and results come back the same way. All constants (p, R mod p,
// -p^-1 mod 2^32) are derived at compile time from Fp<Params>; nothing is
// typed twice.
//
// Limb layout: 2N limbs of 32 bits (8 for the 256-bit fields, 12 for
// BLS12-381 Fq). The GPU multiplies 32x32 bits natively (IMAD / IMAD.HI);
// a 64x64 multiplication is emulated by four of them plus carry handling, so
// 64-bit limbs only add work. tests/gpu/field_benchmark measures both
// layouts on the device (the 64-bit variant is field64.cuh).
//
// Multiplication: CIOS Montgomery (Koc et al. 1996) with the products split
// into an "even" and an "odd" accumulator (the idea of Emmart, Zheng, Weems,
// "Faster modular exponentiation using double precision floating point
// arithmetic on the GPU", and of sppark, written from the math here):
//   a_i * b for even i has its low word in column i and its high word in
//   column i + 1, so all even products of a row land in *distinct* columns
//   and one carry chain of mad.lo.cc / madc.hi.cc adds them (lo, hi, lo, hi,
//   ...) with no separate carry propagation. The odd products do the same in
//   a second accumulator shifted by one column. Per row: two chains for
//   a * b_i, m = x_0 * (-p^-1), two chains for m * p, then a shift by one
//   limb that is only a renaming of registers. The invariant (proof in
//   mont_mul's comment) keeps both accumulators below 2p, so nothing
//   overflows and a single conditional subtraction ends the multiplication.
// Cost: 4n^2 multiply-adds + ~6n additions (n = 2N limbs).
//
// PTX carry chains: add.cc / addc / mad.lo.cc / madc.hi.cc read and write
// the carry flag CC.CF. Each instruction is its own `asm volatile`: volatile
// statements keep their order, so the compiler cannot move one chain into
// the middle of another, and ptxas tracks CC.CF as a real dependency.
//
// Host build (no __CUDA_ARCH__): the same functions run on the CPU with the
// carry flag emulated, so the arithmetic (and every kernel body written as a
// __host__ __device__ function) is tested without a GPU; see
// kernels/cuda/fp_emulation_test.cc.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/field.h"

#if defined(__CUDACC__)
#define ZKFARM_HD __host__ __device__ __forceinline__
#else
#define ZKFARM_HD inline
#endif
// Unrolled on the device (register arrays must be indexed by constants);
// the host compiler unrolls as it sees fit.
#if defined(__CUDA_ARCH__)
#define ZKFARM_DEVICE_UNROLL _Pragma("unroll")
#else
#define ZKFARM_DEVICE_UNROLL
#endif

namespace zkfarm::cuda {

// ---------------------------------------------------------------------------
// Carry-chain primitives: PTX on the device, an emulated CC.CF on the host.
namespace ptx {

#if defined(__CUDA_ARCH__)

__device__ __forceinline__ std::uint32_t add_cc(std::uint32_t a, std::uint32_t b) {
  std::uint32_t r;
  asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
__device__ __forceinline__ std::uint32_t addc_cc(std::uint32_t a, std::uint32_t b) {
  std::uint32_t r;
  asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
__device__ __forceinline__ std::uint32_t addc(std::uint32_t a, std::uint32_t b) {
  std::uint32_t r;
  asm volatile("addc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
__device__ __forceinline__ std::uint32_t sub_cc(std::uint32_t a, std::uint32_t b) {
  std::uint32_t r;
  asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
__device__ __forceinline__ std::uint32_t subc_cc(std::uint32_t a, std::uint32_t b) {
  std::uint32_t r;
  asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
__device__ __forceinline__ std::uint32_t subc(std::uint32_t a, std::uint32_t b) {
  std::uint32_t r;
  asm volatile("subc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
// lo(a*b) + c, carry out.
__device__ __forceinline__ std::uint32_t mad_lo_cc(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint32_t r;
  asm volatile("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}
// lo(a*b) + c + carry, carry out.
__device__ __forceinline__ std::uint32_t madc_lo_cc(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint32_t r;
  asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}
// hi(a*b) + c + carry, carry out.
__device__ __forceinline__ std::uint32_t madc_hi_cc(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint32_t r;
  asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}
// hi(a*b) + c + carry, no carry out.
__device__ __forceinline__ std::uint32_t madc_hi(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint32_t r;
  asm volatile("madc.hi.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}

#else  // host emulation of CC.CF

inline thread_local std::uint32_t emulated_carry = 0;

inline std::uint32_t add_cc(std::uint32_t a, std::uint32_t b) {
  std::uint64_t s = std::uint64_t(a) + b;
  emulated_carry = std::uint32_t(s >> 32);
  return std::uint32_t(s);
}
inline std::uint32_t addc_cc(std::uint32_t a, std::uint32_t b) {
  std::uint64_t s = std::uint64_t(a) + b + emulated_carry;
  emulated_carry = std::uint32_t(s >> 32);
  return std::uint32_t(s);
}
inline std::uint32_t addc(std::uint32_t a, std::uint32_t b) { return a + b + emulated_carry; }
inline std::uint32_t sub_cc(std::uint32_t a, std::uint32_t b) {
  emulated_carry = a < b ? 1 : 0;  // CC.CF holds the borrow for subtraction
  return a - b;
}
inline std::uint32_t subc_cc(std::uint32_t a, std::uint32_t b) {
  std::uint64_t d = std::uint64_t(a) - b - emulated_carry;
  emulated_carry = std::uint32_t(d >> 63);
  return std::uint32_t(d);
}
inline std::uint32_t subc(std::uint32_t a, std::uint32_t b) { return a - b - emulated_carry; }
inline std::uint32_t mad_lo_cc(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  return add_cc(a * b, c);
}
inline std::uint32_t madc_lo_cc(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  return addc_cc(a * b, c);
}
inline std::uint32_t madc_hi_cc(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  return addc_cc(std::uint32_t((std::uint64_t(a) * b) >> 32), c);
}
inline std::uint32_t madc_hi(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  return addc(std::uint32_t((std::uint64_t(a) * b) >> 32), c);
}

#endif

ZKFARM_HD std::uint32_t mul_hi(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return std::uint32_t((std::uint64_t(a) * b) >> 32);
#endif
}

}  // namespace ptx

// ---------------------------------------------------------------------------
// Constants, from Fp<Params> at compile time.

template <class Params>
struct FieldConstants {
  static constexpr int kLimbs = int(2 * Params::kLimbs);
  std::uint32_t modulus[kLimbs];
  std::uint32_t one[kLimbs];  // R mod p (Montgomery form of 1)
  std::uint32_t inv;          // -p^-1 mod 2^32
};

template <class Params>
constexpr FieldConstants<Params> make_field_constants() {
  using Host = Fp<Params>;
  FieldConstants<Params> c{};
  for (std::size_t i = 0; i < Params::kLimbs; ++i) {
    c.modulus[2 * i] = std::uint32_t(Host::kModulus.limbs[i]);
    c.modulus[2 * i + 1] = std::uint32_t(Host::kModulus.limbs[i] >> 32);
    c.one[2 * i] = std::uint32_t(Host::kR.limbs[i]);
    c.one[2 * i + 1] = std::uint32_t(Host::kR.limbs[i] >> 32);
  }
  c.inv = std::uint32_t(Host::kInv);  // -p^-1 mod 2^64, hence also mod 2^32
  return c;
}

#if defined(__CUDACC__)
// In the constant bank: unrolled code reads p_j as an immediate-like operand
// (IMAD R, R, c[0x3][...]) at no register cost.
template <class Params>
__device__ __constant__ FieldConstants<Params> kDeviceFieldConstants = make_field_constants<Params>();
#endif
template <class Params>
inline constexpr FieldConstants<Params> kHostFieldConstants = make_field_constants<Params>();

template <class Params>
ZKFARM_HD const FieldConstants<Params>& field_constants() {
#if defined(__CUDA_ARCH__)
  return kDeviceFieldConstants<Params>;
#else
  return kHostFieldConstants<Params>;
#endif
}

// ---------------------------------------------------------------------------
// Multi-limb helpers on n 32-bit limbs.
namespace limbs {

// r = a + b; the caller guarantees no carry out.
template <int n>
ZKFARM_HD void add(std::uint32_t* r, const std::uint32_t* a, const std::uint32_t* b) {
  r[0] = ptx::add_cc(a[0], b[0]);
ZKFARM_DEVICE_UNROLL
  for (int j = 1; j < n - 1; ++j) r[j] = ptx::addc_cc(a[j], b[j]);
  r[n - 1] = ptx::addc(a[n - 1], b[n - 1]);
}

// r = a - p if a >= p else a, for a < 2p (a < 2^(32n)).
template <int n>
ZKFARM_HD void reduce_once(std::uint32_t* r, const std::uint32_t* a, const std::uint32_t* p) {
  std::uint32_t s[n];
  s[0] = ptx::sub_cc(a[0], p[0]);
ZKFARM_DEVICE_UNROLL
  for (int j = 1; j < n; ++j) s[j] = ptx::subc_cc(a[j], p[j]);
  const std::uint32_t borrow = ptx::subc(0, 0);  // 0xffffffff if a < p, else 0
ZKFARM_DEVICE_UNROLL
  for (int j = 0; j < n; ++j) r[j] = (a[j] & borrow) | (s[j] & ~borrow);
}

// x[0..n-1] += m * p_even (column pairs (j, j+1) for even j), carry into x[n].
// y[0..n-1] += m * p_odd / 2^32 (y starts at column 1); no carry out.
template <int n>
ZKFARM_HD void reduce_row(std::uint32_t* x, std::uint32_t* y, const std::uint32_t* p, std::uint32_t m) {
  y[0] = ptx::mad_lo_cc(m, p[1], y[0]);
ZKFARM_DEVICE_UNROLL
  for (int j = 1; j < n - 1; ++j)
    y[j] = (j % 2 == 0) ? ptx::madc_lo_cc(m, p[j + 1], y[j]) : ptx::madc_hi_cc(m, p[j], y[j]);
  y[n - 1] = ptx::madc_hi(m, p[n - 1], y[n - 1]);

  x[0] = ptx::mad_lo_cc(m, p[0], x[0]);
ZKFARM_DEVICE_UNROLL
  for (int j = 1; j < n; ++j)
    x[j] = (j % 2 == 0) ? ptx::madc_lo_cc(m, p[j], x[j]) : ptx::madc_hi_cc(m, p[j - 1], x[j]);
  x[n] = ptx::addc(x[n], 0);
}

// out = a * b * 2^(-32n) mod p for a, b < p < 2^(32n - 2); out < p.
//
// State between rows: T = U + V with U, V < 2p (n limbs each, both starting
// at column 0). Row i forms X (columns 0..n, starting at 0) and Y
// (columns 1..n) with X + 2^32 Y = T + a * b_i:
//   X = V + U_0 + sum_{even j} a_j b_i 2^(32j)          (chain over V)
//   Y = U_{1..n-1} + carry(V_0 + U_0) + sum_{odd j} a_j b_i 2^(32(j-1))
// then adds m * p (m = X_0 * (-p^-1) mod 2^32) split the same way, which
// zeroes column 0, and sets U = X / 2^32, V = Y. The textbook CIOS bound
// T' = (T + a b_i + m p) / 2^32 < (2p + 2p(2^32 - 1)) / 2^32 = 2p gives
// U, V < 2p for the next row; Y < U/2^32 + 1 + p + p < 2^(32n) along the way
// (p < 2^(32n)/4), so Y's top chain drops no carry. After n rows
// U + V < 2p < 2^(32n), and one conditional subtraction gives out < p.
template <int n>
ZKFARM_HD void mont_mul(std::uint32_t* out, const std::uint32_t* a, const std::uint32_t* b, const std::uint32_t* p,
                        std::uint32_t inv) {
  static_assert(n % 2 == 0 && n >= 4, "even limb count");
  std::uint32_t u[n], v[n], x[n + 1], y[n];
  // Row 0: the even (odd) products occupy disjoint column pairs, so X and Y
  // are plain concatenations of products.
  {
    const std::uint32_t bi = b[0];
ZKFARM_DEVICE_UNROLL
    for (int j = 0; j < n; j += 2) {
      x[j] = a[j] * bi;
      x[j + 1] = ptx::mul_hi(a[j], bi);
      y[j] = a[j + 1] * bi;
      y[j + 1] = ptx::mul_hi(a[j + 1], bi);
    }
    x[n] = 0;
    reduce_row<n>(x, y, p, x[0] * inv);
ZKFARM_DEVICE_UNROLL
    for (int j = 0; j < n; ++j) {
      u[j] = x[j + 1];
      v[j] = y[j];
    }
  }
ZKFARM_DEVICE_UNROLL
  for (int i = 1; i < n; ++i) {
    const std::uint32_t bi = b[i];
    // Column 0 of T is U_0 + V_0; its carry starts Y's chain at column 1.
    x[0] = ptx::add_cc(v[0], u[0]);
    y[0] = ptx::madc_lo_cc(a[1], bi, u[1]);
ZKFARM_DEVICE_UNROLL
    for (int j = 1; j < n - 1; ++j)
      y[j] = (j % 2 == 0) ? ptx::madc_lo_cc(a[j + 1], bi, u[j + 1]) : ptx::madc_hi_cc(a[j], bi, u[j + 1]);
    y[n - 1] = ptx::madc_hi(a[n - 1], bi, 0);
    // X chain over V (column 0 already holds U_0 + V_0).
    x[0] = ptx::mad_lo_cc(a[0], bi, x[0]);
ZKFARM_DEVICE_UNROLL
    for (int j = 1; j < n; ++j)
      x[j] = (j % 2 == 0) ? ptx::madc_lo_cc(a[j], bi, v[j]) : ptx::madc_hi_cc(a[j - 1], bi, v[j]);
    x[n] = ptx::addc(0, 0);
    reduce_row<n>(x, y, p, x[0] * inv);
ZKFARM_DEVICE_UNROLL
    for (int j = 0; j < n; ++j) {
      u[j] = x[j + 1];
      v[j] = y[j];
    }
  }
  std::uint32_t t[n];
  add<n>(t, u, v);
  reduce_once<n>(out, t, p);
}

}  // namespace limbs

// ---------------------------------------------------------------------------

template <class Params>
struct alignas(16) DevFp {
  static constexpr int kLimbs = int(2 * Params::kLimbs);
  using Host = Fp<Params>;
  using Int = typename Host::Int;

  std::uint32_t limb[kLimbs];

  static ZKFARM_HD DevFp zero() {
    DevFp r;
ZKFARM_DEVICE_UNROLL
    for (int j = 0; j < kLimbs; ++j) r.limb[j] = 0;
    return r;
  }
  static ZKFARM_HD DevFp one() {
    const auto& c = field_constants<Params>();
    DevFp r;
ZKFARM_DEVICE_UNROLL
    for (int j = 0; j < kLimbs; ++j) r.limb[j] = c.one[j];
    return r;
  }

  ZKFARM_HD bool is_zero() const {
    std::uint32_t acc = 0;
ZKFARM_DEVICE_UNROLL
    for (int j = 0; j < kLimbs; ++j) acc |= limb[j];
    return acc == 0;
  }
  ZKFARM_HD bool is_one() const {
    const auto& c = field_constants<Params>();
    std::uint32_t acc = 0;
ZKFARM_DEVICE_UNROLL
    for (int j = 0; j < kLimbs; ++j) acc |= limb[j] ^ c.one[j];
    return acc == 0;
  }
  ZKFARM_HD bool operator==(const DevFp& o) const {
    std::uint32_t acc = 0;
ZKFARM_DEVICE_UNROLL
    for (int j = 0; j < kLimbs; ++j) acc |= limb[j] ^ o.limb[j];
    return acc == 0;
  }
  ZKFARM_HD bool operator!=(const DevFp& o) const { return !(*this == o); }

  ZKFARM_HD DevFp operator+(const DevFp& o) const {
    // a + b < 2p < 2^(32n): no carry out, then one conditional subtraction.
    DevFp r;
    std::uint32_t t[kLimbs];
    limbs::add<kLimbs>(t, limb, o.limb);
    limbs::reduce_once<kLimbs>(r.limb, t, field_constants<Params>().modulus);
    return r;
  }
  ZKFARM_HD DevFp& operator+=(const DevFp& o) { return *this = *this + o; }

  ZKFARM_HD DevFp operator-(const DevFp& o) const {
    // a - b, plus p when it borrowed.
    const auto& c = field_constants<Params>();
    std::uint32_t t[kLimbs];
    t[0] = ptx::sub_cc(limb[0], o.limb[0]);
ZKFARM_DEVICE_UNROLL
    for (int j = 1; j < kLimbs; ++j) t[j] = ptx::subc_cc(limb[j], o.limb[j]);
    const std::uint32_t borrow = ptx::subc(0, 0);
    DevFp r;
    r.limb[0] = ptx::add_cc(t[0], c.modulus[0] & borrow);
ZKFARM_DEVICE_UNROLL
    for (int j = 1; j < kLimbs - 1; ++j) r.limb[j] = ptx::addc_cc(t[j], c.modulus[j] & borrow);
    r.limb[kLimbs - 1] = ptx::addc(t[kLimbs - 1], c.modulus[kLimbs - 1] & borrow);
    return r;
  }
  ZKFARM_HD DevFp& operator-=(const DevFp& o) { return *this = *this - o; }

  ZKFARM_HD DevFp operator-() const { return zero() - *this; }
  // -this when negate, else this (branch-free).
  ZKFARM_HD DevFp cneg(bool negate) const {
    DevFp n = -*this;
    const std::uint32_t mask = negate ? 0xffffffffu : 0u;
    DevFp r;
ZKFARM_DEVICE_UNROLL
    for (int j = 0; j < kLimbs; ++j) r.limb[j] = (n.limb[j] & mask) | (limb[j] & ~mask);
    return r;
  }
  ZKFARM_HD DevFp dbl() const { return *this + *this; }

  ZKFARM_HD DevFp operator*(const DevFp& o) const {
    const auto& c = field_constants<Params>();
    DevFp r;
    limbs::mont_mul<kLimbs>(r.limb, limb, o.limb, c.modulus, c.inv);
    return r;
  }
  ZKFARM_HD DevFp& operator*=(const DevFp& o) { return *this = *this * o; }
  // Squaring is a multiplication: a separated-operand-scanning square (22%
  // fewer multiply instructions for 12 limbs) measured 9% slower inside the
  // MSM on the H200 (its reduction chains are serial, so less instruction
  // overlap, and it needs more registers); see NOTES.md.
  ZKFARM_HD DevFp sqr() const { return *this * *this; }

  // this^e for a small exponent (square-and-multiply).
  ZKFARM_HD DevFp pow(std::uint64_t e) const {
    DevFp r = one(), b = *this;
    while (e) {
      if (e & 1) r *= b;
      e >>= 1;
      if (e) b = b.sqr();
    }
    return r;
  }

  // Canonical (non-Montgomery) value: this * 1 * R^-1.
  ZKFARM_HD DevFp from_montgomery() const {
    DevFp unit = zero();
    unit.limb[0] = 1;
    return *this * unit;
  }

  // Host-side conversions (same bytes).
  static DevFp from_host(const Host& h) {
    DevFp r;
    std::memcpy(r.limb, h.mont.limbs.data(), sizeof(r.limb));
    return r;
  }
  Host to_host() const {
    Host h;
    std::memcpy(h.mont.limbs.data(), limb, sizeof(limb));
    return h;
  }
};

// ---------------------------------------------------------------------------
// Fq2 = Fq[u] / (u^2 + 1) (both curves' towers), layout c0 || c1 as tower.h.

template <class Base>
struct DevFq2 {
  Base c0, c1;

  static ZKFARM_HD DevFq2 zero() { return DevFq2{Base::zero(), Base::zero()}; }
  static ZKFARM_HD DevFq2 one() { return DevFq2{Base::one(), Base::zero()}; }
  ZKFARM_HD bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
  ZKFARM_HD bool operator==(const DevFq2& o) const { return c0 == o.c0 && c1 == o.c1; }
  ZKFARM_HD bool operator!=(const DevFq2& o) const { return !(*this == o); }
  ZKFARM_HD DevFq2 operator+(const DevFq2& o) const { return DevFq2{c0 + o.c0, c1 + o.c1}; }
  ZKFARM_HD DevFq2 operator-(const DevFq2& o) const { return DevFq2{c0 - o.c0, c1 - o.c1}; }
  ZKFARM_HD DevFq2& operator+=(const DevFq2& o) { return *this = *this + o; }
  ZKFARM_HD DevFq2& operator-=(const DevFq2& o) { return *this = *this - o; }
  ZKFARM_HD DevFq2 operator-() const { return DevFq2{-c0, -c1}; }
  ZKFARM_HD DevFq2 cneg(bool negate) const { return DevFq2{c0.cneg(negate), c1.cneg(negate)}; }
  ZKFARM_HD DevFq2 dbl() const { return DevFq2{c0.dbl(), c1.dbl()}; }
  // Karatsuba, 3 base multiplications.
  ZKFARM_HD DevFq2 operator*(const DevFq2& o) const {
    Base t0 = c0 * o.c0;
    Base t1 = c1 * o.c1;
    Base t2 = (c0 + c1) * (o.c0 + o.c1);
    return DevFq2{t0 - t1, t2 - t0 - t1};
  }
  ZKFARM_HD DevFq2& operator*=(const DevFq2& o) { return *this = *this * o; }
  // (c0 + c1 u)^2 = (c0 + c1)(c0 - c1) + 2 c0 c1 u.
  ZKFARM_HD DevFq2 sqr() const {
    Base t = c0 * c1;
    return DevFq2{(c0 + c1) * (c0 - c1), t.dbl()};
  }
};

// a^-1 = a^(p - 2) (Fermat; 0 for 0): square-and-multiply over the
// exponent's bits from the top, limb by limb, loops kept rolled on the device
// (one multiplication inlined per call site). ~1.5 log2(p) multiplications:
// the fixed-base to-affine and batch-affine additions share one among many
// points (Montgomery's trick).
template <class Params>
ZKFARM_HD DevFp<Params> inverse(const DevFp<Params>& a) {
  using F = DevFp<Params>;
  const auto& c = field_constants<Params>();
  F r = F::one();
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
  for (int l = F::kLimbs - 1; l >= 0; --l) {
    // p is odd with a low limb far above 2: p - 2 changes limb 0 only.
    const std::uint32_t e = c.modulus[l] - (l == 0 ? 2u : 0u);
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
    for (int bit = 31; bit >= 0; --bit) {
      r = r.sqr();
      if ((e >> bit) & 1u) r *= a;
    }
  }
  return r;
}

// (c0 + c1 u)^-1 = (c0 - c1 u) / (c0^2 + c1^2), as u^2 = -1.
template <class Base>
ZKFARM_HD DevFq2<Base> inverse(const DevFq2<Base>& a) {
  const Base norm_inv = inverse(a.c0.sqr() + a.c1.sqr());
  return DevFq2<Base>{a.c0 * norm_inv, -(a.c1 * norm_inv)};
}

// Device type of a host field type (Fp<P> -> DevFp<P>, Fq2<Cfg> -> DevFq2).
template <class HostField>
struct DeviceFieldOf;
template <class P>
struct DeviceFieldOf<Fp<P>> {
  using type = DevFp<P>;
};

}  // namespace zkfarm::cuda
