// batch_affine_emulation_test -- batch_affine.cuh's per-thread code (field
// inversion, batched affine additions, the shifted bases' doublings) run on
// the CPU against the host curve arithmetic (kernels/curve.h), on both
// curves' G1 and G2, including every special case: points at infinity,
// equal points, opposite points.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <numeric>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/cuda/batch_affine.cuh"
#include "kernels/cuda/msm_kernels.cuh"
#include "kernels/curves.h"
#include "kernels/msm.h"
#include "kernels/prng.h"

namespace zkfarm::cuda {
namespace {

template <class Cfg>
using Dev = DevicePointsOf<Cfg>;

template <class Cfg>
typename Dev<Cfg>::Affine to_device(const AffinePoint<Cfg>& p) {
  typename Dev<Cfg>::Affine d;
  std::memcpy(static_cast<void*>(&d), &p, sizeof(d));
  return d;
}
template <class Cfg>
AffinePoint<Cfg> to_host(const typename Dev<Cfg>::Affine& d) {
  AffinePoint<Cfg> p;
  std::memcpy(static_cast<void*>(&p), &d, sizeof(p));
  return p;
}

// n points k_i * generator for random odd k_i.
template <class Cfg>
std::vector<AffinePoint<Cfg>> random_points(std::size_t n, const AffinePoint<Cfg>& generator, Xoshiro256& rng) {
  using Jac = JacobianPoint<Cfg>;
  std::vector<AffinePoint<Cfg>> out;
  for (std::size_t i = 0; i < n; ++i)
    out.push_back(Jac::from_affine(generator).scalar_mul(BigInt<1>{{rng.next() | 1}}).to_affine());
  return out;
}

template <class Cfg>
AffinePoint<Cfg> host_sum(const AffinePoint<Cfg>& a, const AffinePoint<Cfg>& b) {
  using Jac = JacobianPoint<Cfg>;
  return (Jac::from_affine(a) + Jac::from_affine(b)).to_affine();
}

template <class Cfg>
AffinePoint<Cfg> negate(const AffinePoint<Cfg>& p) {
  return p.is_identity() ? p : AffinePoint<Cfg>{p.x, -p.y};
}

template <class Cfg>
void check_inverse(const AffinePoint<Cfg>& generator) {
  using F = typename Dev<Cfg>::Field;
  Xoshiro256 rng(7);
  for (const auto& p : random_points<Cfg>(8, generator, rng)) {
    const F x = to_device<Cfg>(p).x;
    EXPECT_TRUE(inverse(x) * x == F::one());
  }
  EXPECT_TRUE(inverse(F::one()) == F::one());
  EXPECT_TRUE(inverse(F::zero()).is_zero());
}

// Every kind of pair, in one batch (and again in batches of one): random,
// equal, opposite, infinity on either side or both, a point and its double.
template <class Cfg>
void check_batch(const AffinePoint<Cfg>& generator) {
  using Affine = typename Dev<Cfg>::Affine;
  using F = typename Dev<Cfg>::Field;
  Xoshiro256 rng(11);
  const auto pts = random_points<Cfg>(12, generator, rng);
  const AffinePoint<Cfg> inf = AffinePoint<Cfg>::identity();
  std::vector<AffinePoint<Cfg>> left, right;
  for (std::size_t i = 0; i + 1 < pts.size(); i += 2) {
    left.push_back(pts[i]);
    right.push_back(pts[i + 1]);
  }
  left.push_back(pts[0]), right.push_back(pts[0]);                // equal: doubled
  left.push_back(pts[1]), right.push_back(negate(pts[1]));        // opposite: infinity
  left.push_back(inf), right.push_back(pts[2]);                   // infinity + P
  left.push_back(pts[3]), right.push_back(inf);                   // P + infinity
  left.push_back(inf), right.push_back(inf);                      // infinity + infinity
  left.push_back(pts[4]), right.push_back(host_sum(pts[4], pts[4]));  // P + 2P
  left.push_back(negate(pts[5])), right.push_back(pts[5]);
  const std::uint32_t n = static_cast<std::uint32_t>(left.size());
  std::vector<Affine> l(n), r(n), out(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    l[i] = to_device<Cfg>(left[i]);
    r[i] = to_device<Cfg>(right[i]);
  }
  std::vector<F> scratch(n);
  batch_affine_add(l.data(), r.data(), 1, out.data(), n, scratch.data());
  for (std::uint32_t i = 0; i < n; ++i)
    EXPECT_TRUE(to_host<Cfg>(out[i]) == host_sum(left[i], right[i])) << "pair " << i << " of one batch";
  for (std::uint32_t i = 0; i < n; ++i) {  // batches of one
    batch_affine_add(l.data() + i, r.data() + i, 1, out.data() + i, 1, scratch.data());
    EXPECT_TRUE(to_host<Cfg>(out[i]) == host_sum(left[i], right[i])) << "pair " << i << " alone";
  }
  // In place: the sums over the left operands.
  std::vector<Affine> in_place = l;
  batch_affine_add(in_place.data(), r.data(), 1, in_place.data(), n, scratch.data());
  for (std::uint32_t i = 0; i < n; ++i)
    EXPECT_TRUE(to_host<Cfg>(in_place[i]) == host_sum(left[i], right[i])) << "pair " << i << " in place";
}

template <class Cfg>
JacobianPoint<Cfg> from_xyzz(const typename Dev<Cfg>::Xyzz& d) {
  XyzzPoint<Cfg> p;
  std::memcpy(static_cast<void*>(&p), &d, sizeof(p));
  return p.to_jacobian();
}

// The shifted bases' doublings: every point doubled five times (32 P) by
// double_strided over 1 to 16 threads (strided runs of several points, and
// threads with none); infinity stays infinity.
template <class Cfg>
void check_double_strided(const AffinePoint<Cfg>& generator) {
  using Affine = typename Dev<Cfg>::Affine;
  using F = typename Dev<Cfg>::Field;
  using Jac = JacobianPoint<Cfg>;
  Xoshiro256 rng(19);
  auto pts = random_points<Cfg>(10, generator, rng);
  pts[3] = AffinePoint<Cfg>::identity();
  std::vector<Affine> dev(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) dev[i] = to_device<Cfg>(pts[i]);
  for (std::uint64_t threads : {1u, 3u, 10u, 16u}) {
    std::vector<Affine> doubled = dev;
    std::vector<F> scratch(dev.size());
    for (int d = 0; d < 5; ++d)
      for (std::uint64_t t = 0; t < threads; ++t) double_strided<F>(t, threads, dev.size(), doubled.data(), scratch.data());
    for (std::size_t i = 0; i < pts.size(); ++i)
      EXPECT_TRUE(to_host<Cfg>(doubled[i]) == Jac::from_affine(pts[i]).scalar_mul(BigInt<1>{{32}}).to_affine())
          << "point " << i << ", " << threads << " threads";
  }
}

TEST(BatchAffineEmulation, DoubleStridedBn254) { check_double_strided<Bn254G1Config>(Bn254::g1_generator()); }
TEST(BatchAffineEmulation, DoubleStridedBls12381) {
  check_double_strided<Bls12381G1Config>(Bls12381::g1_generator());
}

TEST(BatchAffineEmulation, InverseBn254) {
  check_inverse<Bn254G1Config>(Bn254::g1_generator());
  check_inverse<Bn254G2Config>(Bn254::g2_generator());
}
TEST(BatchAffineEmulation, InverseBls12381) {
  check_inverse<Bls12381G1Config>(Bls12381::g1_generator());
  check_inverse<Bls12381G2Config>(Bls12381::g2_generator());
}
TEST(BatchAffineEmulation, BatchBn254) {
  check_batch<Bn254G1Config>(Bn254::g1_generator());
  check_batch<Bn254G2Config>(Bn254::g2_generator());
}
TEST(BatchAffineEmulation, BatchBls12381) {
  check_batch<Bls12381G1Config>(Bls12381::g1_generator());
  check_batch<Bls12381G2Config>(Bls12381::g2_generator());
}

}  // namespace
}  // namespace zkfarm::cuda
