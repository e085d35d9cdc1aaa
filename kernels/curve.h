// curve.h -- short Weierstrass curves y^2 = x^3 + b (a = 0) in three
// coordinate systems:
//   AffinePoint<Cfg>   {x, y}; the point at infinity is (0, 0). This is the
//                      .zkey point layout, so key sections are used in place.
//   JacobianPoint<Cfg> (X, Y, Z) with x = X/Z^2, y = Y/Z^3; identity Z = 0.
//                      General-purpose arithmetic.
//   XyzzPoint<Cfg>     (X, Y, ZZ, ZZZ) with x = X/ZZ, y = Y/ZZZ; identity
//                      ZZ = 0. Cheapest mixed addition (8M + 2S): MSM buckets.
//
// Generic over the group by a config struct Cfg providing
//   using Field;                       // coordinate field (Fq or Fq2)
//   using Scalar;                      // the prime-order scalar field Fr
//   static constexpr Field kB;         // the curve constant b
//   static constexpr bool kPrimeOrder; // cofactor 1: on-curve => in subgroup
// Formulas are the a = 0 ones of the Explicit-Formulas Database (cited per
// function). Not constant-time: the formulas branch on identity and equal
// points and scalar_mul branches on scalar bits; the prover's secrets
// (witness, blinding factors) only meet this code on machines the operator
// controls, so no remote timing channel is assumed.
//
// Thread safety: values are plain data; all functions are pure.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "kernels/bigint.h"
#include "kernels/field.h"

namespace zkfarm {

template <class Cfg>
struct JacobianPoint;
template <class Cfg>
struct XyzzPoint;

template <class Cfg>
struct AffinePoint {
  using Config = Cfg;
  using Field = typename Cfg::Field;
  using Scalar = typename Cfg::Scalar;

  Field x{};
  Field y{};

  static constexpr AffinePoint identity() { return AffinePoint(); }
  constexpr bool is_identity() const { return x.is_zero() && y.is_zero(); }

  // True if y^2 = x^3 + b, or for the point at infinity (a valid group
  // element). Does not check the subgroup.
  constexpr bool is_on_curve() const {
    if (is_identity()) return true;
    return y.square() == x.square() * x + Cfg::kB;
  }

  // True if the point lies in the prime-order subgroup: on the curve and,
  // unless the cofactor is 1, killed by the group order r. Off-curve points
  // return false. A config with an endomorphism test of the same answer
  // (Cfg::in_subgroup(p) for a point on the curve other than the identity,
  // 2-4x cheaper: curves.cc) is asked instead of multiplying by r.
  bool is_in_subgroup() const {
    if (!is_on_curve()) return false;
    if constexpr (Cfg::kPrimeOrder) {
      return true;
    } else if constexpr (requires(const AffinePoint& p) { Cfg::in_subgroup(p); }) {
      return is_identity() || Cfg::in_subgroup(*this);
    } else {
      return is_in_subgroup_by_order();
    }
  }

  // The definition itself: on the curve and [r] P = O (the reference the
  // configs' tests are checked against).
  bool is_in_subgroup_by_order() const {
    if (!is_on_curve()) return false;
    return JacobianPoint<Cfg>::from_affine(*this).scalar_mul(Scalar::kModulus).is_identity();
  }

  constexpr AffinePoint operator-() const { return AffinePoint{x, -y}; }
  constexpr bool operator==(const AffinePoint& o) const { return x == o.x && y == o.y; }
  constexpr bool operator!=(const AffinePoint& o) const { return !(*this == o); }
};

template <class Cfg>
struct JacobianPoint {
  using Config = Cfg;
  using Field = typename Cfg::Field;
  using Scalar = typename Cfg::Scalar;
  using Affine = AffinePoint<Cfg>;

  // Default-constructed points are the identity (Z = 0).
  Field X{}, Y{}, Z{};

  static constexpr JacobianPoint identity() { return JacobianPoint{Field::one(), Field::one(), Field::zero()}; }
  static constexpr JacobianPoint from_affine(const Affine& a) {
    if (a.is_identity()) return identity();
    return JacobianPoint{a.x, a.y, Field::one()};
  }
  constexpr bool is_identity() const { return Z.is_zero(); }

  // True if the point satisfies Y^2 = X^3 + b Z^6 (the identity counts).
  constexpr bool is_on_curve() const {
    if (is_identity()) return true;
    Field z2 = Z.square();
    Field z6 = z2.square() * z2;
    return Y.square() == X.square() * X + Cfg::kB * z6;
  }

  // Doubling, dbl-2009-l: 2M + 5S.
  constexpr JacobianPoint dbl() const {
    if (is_identity()) return *this;
    Field a = X.square();
    Field b = Y.square();
    Field c = b.square();
    Field d = ((X + b).square() - a - c).dbl();
    Field e = a.dbl() + a;
    Field f = e.square();
    JacobianPoint r;
    r.X = f - d.dbl();
    r.Y = e * (d - r.X) - c.dbl().dbl().dbl();
    r.Z = (Y * Z).dbl();
    return r;
  }

  // General addition, add-2007-bl: 11M + 5S. Handles identity, equal and
  // opposite points.
  constexpr JacobianPoint operator+(const JacobianPoint& o) const {
    if (is_identity()) return o;
    if (o.is_identity()) return *this;
    Field z1z1 = Z.square();
    Field z2z2 = o.Z.square();
    Field u1 = X * z2z2;
    Field u2 = o.X * z1z1;
    Field s1 = Y * o.Z * z2z2;
    Field s2 = o.Y * Z * z1z1;
    Field h = u2 - u1;
    Field r = (s2 - s1).dbl();
    if (h.is_zero()) return r.is_zero() ? dbl() : identity();
    Field i = h.dbl().square();
    Field j = h * i;
    Field v = u1 * i;
    JacobianPoint out;
    out.X = r.square() - j - v.dbl();
    out.Y = r * (v - out.X) - (s1 * j).dbl();
    out.Z = ((Z + o.Z).square() - z1z1 - z2z2) * h;
    return out;
  }
  constexpr JacobianPoint& operator+=(const JacobianPoint& o) { return *this = *this + o; }
  constexpr JacobianPoint operator-(const JacobianPoint& o) const { return *this + (-o); }
  constexpr JacobianPoint& operator-=(const JacobianPoint& o) { return *this = *this + (-o); }

  // Mixed addition with an affine point, madd-2007-bl: 7M + 4S. Handles
  // identity, equal and opposite points.
  constexpr JacobianPoint add_mixed(const Affine& a) const {
    if (a.is_identity()) return *this;
    if (is_identity()) return from_affine(a);
    Field z1z1 = Z.square();
    Field u2 = a.x * z1z1;
    Field s2 = a.y * Z * z1z1;
    Field h = u2 - X;
    Field r = (s2 - Y).dbl();
    if (h.is_zero()) return r.is_zero() ? dbl() : identity();
    Field hh = h.square();
    Field i = hh.dbl().dbl();
    Field j = h * i;
    Field v = X * i;
    JacobianPoint out;
    out.X = r.square() - j - v.dbl();
    out.Y = r * (v - out.X) - (Y * j).dbl();
    out.Z = (Z + h).square() - z1z1 - hh;
    return out;
  }

  constexpr JacobianPoint operator-() const { return JacobianPoint{X, -Y, Z}; }

  // Equality of the represented points (projective comparison).
  constexpr bool operator==(const JacobianPoint& o) const {
    if (is_identity() || o.is_identity()) return is_identity() == o.is_identity();
    Field z1z1 = Z.square();
    Field z2z2 = o.Z.square();
    if (X * z2z2 != o.X * z1z1) return false;
    return Y * (z2z2 * o.Z) == o.Y * (z1z1 * Z);
  }
  constexpr bool operator!=(const JacobianPoint& o) const { return !(*this == o); }

  // The affine form (one field inversion); the identity maps to (0, 0).
  constexpr Affine to_affine() const {
    if (is_identity()) return Affine::identity();
    Field z_inv = Z.inverse();
    Field z_inv2 = z_inv.square();
    return Affine{X * z_inv2, Y * z_inv2 * z_inv};
  }

  // Converts points to affine with a single inversion (Montgomery's trick).
  // Throws std::invalid_argument if the spans differ in size.
  static void batch_to_affine(std::span<const JacobianPoint> points, std::span<Affine> out) {
    if (points.size() != out.size())
      throw std::invalid_argument("batch_to_affine: input and output sizes differ");
    std::vector<Field> prefix(points.size());
    Field acc = Field::one();
    for (std::size_t i = 0; i < points.size(); ++i) {
      prefix[i] = acc;
      if (!points[i].is_identity()) acc *= points[i].Z;
    }
    acc = acc.inverse();
    for (std::size_t i = points.size(); i-- > 0;) {
      const JacobianPoint& p = points[i];
      if (p.is_identity()) {
        out[i] = Affine::identity();
        continue;
      }
      Field z_inv = acc * prefix[i];
      acc *= p.Z;
      Field z_inv2 = z_inv.square();
      out[i] = Affine{p.X * z_inv2, p.Y * z_inv2 * z_inv};
    }
  }

  // [k] * this for a non-negative integer k of any width (k need not be
  // reduced mod r, which is how subgroup membership is tested). Fixed 4-bit
  // windows: 15 precomputed multiples, then 4 doublings + 1 addition per
  // window.
  template <std::size_t M>
  constexpr JacobianPoint scalar_mul(const BigInt<M>& k) const {
    constexpr unsigned kWindow = 4;
    JacobianPoint table[1 << kWindow];
    table[0] = identity();
    for (unsigned i = 1; i < (1u << kWindow); ++i) table[i] = table[i - 1] + *this;
    JacobianPoint r = identity();
    std::size_t bits = k.num_bits();
    std::size_t windows = (bits + kWindow - 1) / kWindow;
    for (std::size_t w = windows; w-- > 0;) {
      for (unsigned d = 0; d < kWindow; ++d) r = r.dbl();
      unsigned digit = 0;
      for (unsigned b = kWindow; b-- > 0;) digit = (digit << 1) | unsigned(k.bit(w * kWindow + b));
      if (digit) r += table[digit];
    }
    return r;
  }
  // [s] * this for a scalar-field element.
  constexpr JacobianPoint scalar_mul(const Scalar& s) const { return scalar_mul(s.to_canonical()); }
};

template <class Cfg>
struct XyzzPoint {
  using Config = Cfg;
  using Field = typename Cfg::Field;
  using Affine = AffinePoint<Cfg>;
  using Jacobian = JacobianPoint<Cfg>;

  // Default-constructed points are the identity (ZZ = ZZZ = 0).
  Field X{}, Y{}, ZZ{}, ZZZ{};

  static constexpr XyzzPoint identity() { return XyzzPoint(); }
  constexpr bool is_identity() const { return ZZ.is_zero(); }
  static constexpr XyzzPoint from_affine(const Affine& a) {
    if (a.is_identity()) return identity();
    return XyzzPoint{a.x, a.y, Field::one(), Field::one()};
  }

  // this += a, madd-2008-s (8M + 2S); equal points use mdbl-2008-s-1.
  // Handles the identity on either side and opposite points.
  constexpr void add_mixed(const Affine& a) {
    if (a.is_identity()) return;
    if (is_identity()) {
      *this = from_affine(a);
      return;
    }
    Field u2 = a.x * ZZ;
    Field s2 = a.y * ZZZ;
    Field p = u2 - X;
    Field r = s2 - Y;
    if (p.is_zero()) {
      if (r.is_zero()) *this = double_affine(a);
      else *this = identity();
      return;
    }
    Field pp = p.square();
    Field ppp = p * pp;
    Field q = X * pp;
    X = r.square() - ppp - q.dbl();
    Y = r * (q - X) - Y * ppp;
    ZZ *= pp;
    ZZZ *= ppp;
  }

  // this += o, add-2008-s (12M + 2S); equal points use dbl-2008-s-1.
  // Returns *this.
  constexpr XyzzPoint& add(const XyzzPoint& o) {
    if (o.is_identity()) return *this;
    if (is_identity()) return *this = o;
    Field u1 = X * o.ZZ;
    Field u2 = o.X * ZZ;
    Field s1 = Y * o.ZZZ;
    Field s2 = o.Y * ZZZ;
    Field p = u2 - u1;
    Field r = s2 - s1;
    if (p.is_zero()) {
      if (r.is_zero()) *this = dbl();
      else *this = identity();
      return *this;
    }
    Field pp = p.square();
    Field ppp = p * pp;
    Field q = u1 * pp;
    X = r.square() - ppp - q.dbl();
    Y = r * (q - X) - s1 * ppp;
    ZZ = ZZ * o.ZZ * pp;
    ZZZ = ZZZ * o.ZZZ * ppp;
    return *this;
  }

  // 2 * this, dbl-2008-s-1 (6M + 3S).
  constexpr XyzzPoint dbl() const {
    if (is_identity()) return *this;
    Field u = Y.dbl();
    Field v = u.square();
    Field w = u * v;
    Field s = X * v;
    Field x2 = X.square();
    Field m = x2.dbl() + x2;
    XyzzPoint out;
    out.X = m.square() - s.dbl();
    out.Y = m * (s - out.X) - w * Y;
    out.ZZ = v * ZZ;
    out.ZZZ = w * ZZZ;
    return out;
  }

  // Jacobian form: since ZZ^3 = ZZZ^2, (X ZZ^2, Y ZZZ^2, ZZZ) represents
  // the same point (2M + 2S).
  constexpr Jacobian to_jacobian() const {
    if (is_identity()) return Jacobian::identity();
    return Jacobian{X * ZZ.square(), Y * ZZZ.square(), ZZZ};
  }

 private:
  // 2 * a for affine a, mdbl-2008-s-1 (ZZ = ZZZ = 1).
  static constexpr XyzzPoint double_affine(const Affine& a) {
    Field u = a.y.dbl();
    Field v = u.square();
    Field w = u * v;
    Field s = a.x * v;
    Field x2 = a.x.square();
    Field m = x2.dbl() + x2;
    XyzzPoint out;
    out.X = m.square() - s.dbl();
    out.Y = m * (s - out.X) - w * a.y;
    out.ZZ = v;
    out.ZZZ = w;
    return out;
  }
};

}  // namespace zkfarm
