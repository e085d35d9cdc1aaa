// curve.cuh -- short Weierstrass points (a = 0) for device code.
//
// Device twins of curve.h's AffinePoint and XyzzPoint, over any device field
// F (DevFp for G1, DevFq2 for G2), with the same memory layout:
//   DevAffine<F>  {x, y}, (0, 0) = infinity     == AffinePoint<Cfg>
//   DevXyzz<F>    {X, Y, ZZ, ZZZ}, ZZ = 0 = id  == XyzzPoint<Cfg>
// so bases upload as-is and bucket sums download as host XyzzPoint.
// Formulas are those of curve.h (EFD madd-2008-s, add-2008-s, dbl-2008-s-1),
// handling the identity, equal and opposite points. The curve constant b is
// not needed by any of them.
//
// PointTypes<F> bundles the device point types over a device field;
// DevicePointsOf<Cfg> maps a host point config (Bn254G1Config, ...) to them
// with layout checks. Kernels only need PointTypes, so .cu files need not
// include the curve headers (whose pairing constants nvcc's front end cannot
// fold at compile time).
#pragma once

#include "kernels/cuda/fp.cuh"
#include "kernels/curve.h"
#include "kernels/tower.h"

namespace zkfarm::cuda {

template <class Cfg>
struct DeviceFieldOf<Fq2<Cfg>> {
  using type = DevFq2<typename DeviceFieldOf<typename Cfg::Fq>::type>;
};

template <class F>
struct DevAffine {
  F x, y;
  ZKFARM_HD bool is_identity() const { return x.is_zero() && y.is_zero(); }
};

template <class F>
struct DevXyzz {
  F X, Y, ZZ, ZZZ;

  static ZKFARM_HD DevXyzz identity() { return DevXyzz{F::zero(), F::zero(), F::zero(), F::zero()}; }
  ZKFARM_HD bool is_identity() const { return ZZ.is_zero(); }
  static ZKFARM_HD DevXyzz from_affine(const DevAffine<F>& a) {
    if (a.is_identity()) return identity();
    return DevXyzz{a.x, a.y, F::one(), F::one()};
  }

  // this += (x, y) for an affine point that is not the identity (the caller
  // skips infinity), madd-2008-s: 8M + 2S. Equal points double, opposite
  // points give the identity.
  ZKFARM_HD void add_affine(const F& x, const F& y) {
    if (is_identity()) {
      X = x;
      Y = y;
      ZZ = F::one();
      ZZZ = F::one();
      return;
    }
    const F u2 = x * ZZ;
    const F s2 = y * ZZZ;
    const F p = u2 - X;
    const F r = s2 - Y;
    if (p.is_zero()) {
      if (r.is_zero()) *this = double_affine(x, y);
      else *this = identity();
      return;
    }
    const F pp = p.sqr();
    const F ppp = p * pp;
    const F q = X * pp;
    X = r.sqr() - ppp - q.dbl();
    Y = r * (q - X) - Y * ppp;
    ZZ = ZZ * pp;
    ZZZ = ZZZ * ppp;
  }
  // this += a (a may be the identity).
  ZKFARM_HD void add_mixed(const DevAffine<F>& a) {
    if (a.is_identity()) return;
    add_affine(a.x, a.y);
  }

  // this += o, add-2008-s: 12M + 2S; equal points double.
  ZKFARM_HD void add(const DevXyzz& o) {
    if (o.is_identity()) return;
    if (is_identity()) {
      *this = o;
      return;
    }
    const F u1 = X * o.ZZ;
    const F u2 = o.X * ZZ;
    const F s1 = Y * o.ZZZ;
    const F s2 = o.Y * ZZZ;
    const F p = u2 - u1;
    const F r = s2 - s1;
    if (p.is_zero()) {
      if (r.is_zero()) *this = dbl();
      else *this = identity();
      return;
    }
    const F pp = p.sqr();
    const F ppp = p * pp;
    const F q = u1 * pp;
    X = r.sqr() - ppp - q.dbl();
    Y = r * (q - X) - s1 * ppp;
    ZZ = ZZ * o.ZZ * pp;
    ZZZ = ZZZ * o.ZZZ * ppp;
  }

  // 2 * this, dbl-2008-s-1: 6M + 3S.
  ZKFARM_HD DevXyzz dbl() const {
    if (is_identity()) return *this;
    const F u = Y.dbl();
    const F v = u.sqr();
    const F w = u * v;
    const F s = X * v;
    const F x2 = X.sqr();
    const F m = x2.dbl() + x2;
    DevXyzz out;
    out.X = m.sqr() - s.dbl();
    out.Y = m * (s - out.X) - w * Y;
    out.ZZ = v * ZZ;
    out.ZZZ = w * ZZZ;
    return out;
  }

  // k * this for a small non-negative k (double-and-add from the top bit).
  // The doublings are additions of r to itself (add() doubles equal
  // points, with dbl()'s formula: the same result), so that the loop holds a
  // single inlined addition: a kernel's compile time grows with the
  // additions inlined into it (Fq2 for G2).
  ZKFARM_HD DevXyzz mul_small(std::uint32_t k) const {
    DevXyzz r = identity();
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
    for (int step = 63; step >= 0; --step) {
      const bool doubling = (step & 1) != 0;  // odd steps double, even steps add this if the bit is set
      if (!doubling && ((k >> (step >> 1)) & 1) == 0) continue;
      const DevXyzz rhs = doubling ? r : *this;
      r.add(rhs);
    }
    return r;
  }

 private:
  // 2 * (x, y), mdbl-2008-s-1.
  static ZKFARM_HD DevXyzz double_affine(const F& x, const F& y) {
    const F u = y.dbl();
    const F v = u.sqr();
    const F w = u * v;
    const F s = x * v;
    const F x2 = x.sqr();
    const F m = x2.dbl() + x2;
    DevXyzz out;
    out.X = m.sqr() - s.dbl();
    out.Y = m * (s - out.X) - w * y;
    out.ZZ = v;
    out.ZZZ = w;
    return out;
  }
};

// The device point types over a device field F (what kernels are
// instantiated with).
template <class F>
struct PointTypes {
  using Field = F;
  using Affine = DevAffine<F>;
  using Xyzz = DevXyzz<F>;
};

// Host point config -> device types, with layout checks against curve.h.
template <class Cfg>
struct DevicePointsOf : PointTypes<typename DeviceFieldOf<typename Cfg::Field>::type> {
  using HostField = typename Cfg::Field;
  using Field = typename DeviceFieldOf<HostField>::type;
  using Affine = DevAffine<Field>;
  using Xyzz = DevXyzz<Field>;
  static_assert(sizeof(Field) == sizeof(HostField), "device field must have the host field's bytes");
  static_assert(sizeof(Affine) == sizeof(AffinePoint<Cfg>), "affine layouts differ");
  static_assert(sizeof(Xyzz) == sizeof(XyzzPoint<Cfg>), "XYZZ layouts differ");
};

}  // namespace zkfarm::cuda
