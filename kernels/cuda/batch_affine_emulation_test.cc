// batch_affine_emulation_test -- batch_affine.cuh's per-thread code (field
// inversion, batched affine additions, pairwise bucket rounds) run on the
// CPU against the host curve arithmetic (kernels/curve.h), on both curves'
// G1 and G2, including every special case: points at infinity, equal
// points, opposite points; and whole MSMs whose buckets are summed by the
// rounds (msm_kernels.cuh's digits), against kernels/msm.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <numeric>
#include <span>
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

// One bucket summed by pairwise rounds until one point, against its sum
// on the host: runs of 1 to 9 points, with repeats and opposites
// inside a run so that the rounds meet equal and opposite partial sums.
template <class Cfg>
void check_rounds(const AffinePoint<Cfg>& generator) {
  using Affine = typename Dev<Cfg>::Affine;
  using F = typename Dev<Cfg>::Field;
  using Jac = JacobianPoint<Cfg>;
  Xoshiro256 rng(13);
  const auto pool = random_points<Cfg>(6, generator, rng);
  for (std::uint32_t len = 1; len <= 9; ++len)
    for (int variant = 0; variant < 3; ++variant) {
      std::vector<AffinePoint<Cfg>> run;
      for (std::uint32_t k = 0; k < len; ++k) {
        AffinePoint<Cfg> p = pool[rng.below(pool.size())];
        if (variant == 1 && k % 2 == 1) p = run.back();             // repeats: doublings
        if (variant == 2 && k % 2 == 1) p = negate(run.back());     // opposites: infinity
        run.push_back(p);
      }
      Jac expected = Jac::identity();
      for (const auto& p : run) expected += Jac::from_affine(p);
      // One bucket, its run [0, count): round_thread's pairs in batches of 4.
      std::vector<Affine> points(len);
      for (std::uint32_t k = 0; k < len; ++k) points[k] = to_device<Cfg>(run[k]);
      std::uint32_t count = len;
      int rounds = 0;
      while (count > 1) {
        const std::uint32_t starts[2] = {0, count}, next[2] = {0, halved(count)};
        std::vector<Affine> out(next[1]);
        for (std::uint64_t t = 0; t * 4 < next[1]; ++t)
          round_thread<F, 4>(t, points.data(), starts, next, 1, out.data());
        points = std::move(out);
        count = next[1];
        ++rounds;
      }
      EXPECT_TRUE(to_host<Cfg>(points[0]) == expected.to_affine())
          << "run of " << len << ", variant " << variant << ", " << rounds << " rounds";
    }
}

// An MSM whose buckets are summed by pairwise rounds (round_thread, batches
// of kBatch): msm_kernels.cuh's signed digits sorted per window, every
// window's buckets in one array of runs, rounds until each bucket holds at
// most one point; then sum_b (b + 1) B_b per window and Horner on the host.
template <class Curve, class G, std::uint32_t kBatch>
G rounds_msm(std::span<const typename G::Affine> bases, std::span<const typename Curve::Fr> scalars,
             unsigned window_bits, int* rounds_out) {
  using Cfg = typename G::Config;
  using Pts = Dev<Cfg>;
  using Affine = typename Pts::Affine;
  using FrDev = typename DeviceFieldOf<typename Curve::Fr>::type;
  namespace mk = msm_kernels;
  const std::uint64_t n = bases.size();
  const mk::Layout layout = mk::choose_layout(n, 256, window_bits, 0.05, sizeof(typename Pts::Xyzz), ~0ULL);
  std::vector<std::uint32_t> index(n), keys(layout.windows * n), values(layout.windows * n);
  std::iota(index.begin(), index.end(), 0u);
  const auto* dev_scalars = reinterpret_cast<const FrDev*>(scalars.data());
  for (std::uint64_t j = 0; j < n; ++j)
    mk::make_digits(j, n, index.data(), dev_scalars, layout, keys.data(), values.data());
  // Runs: slot w * (B + 1) + key, the EMPTY key (digit 0) dropped.
  const std::uint32_t slots = static_cast<std::uint32_t>(layout.bucket_slots());
  std::vector<std::vector<Affine>> runs(slots);
  for (std::uint64_t w = 0; w < layout.windows; ++w)
    for (std::uint64_t j = 0; j < n; ++j) {
      const std::uint32_t key = keys[w * n + j], v = values[w * n + j];
      if (key == layout.buckets) continue;
      Affine p = to_device<Cfg>(bases[v & mk::kIndexMask]);
      p.y = p.y.cneg((v & mk::kSignBit) != 0);
      runs[w * (layout.buckets + 1) + key].push_back(p);
    }
  std::vector<std::uint32_t> starts(slots + 1, 0);
  std::vector<Affine> points;
  for (std::uint32_t b = 0; b < slots; ++b) {
    starts[b + 1] = starts[b] + static_cast<std::uint32_t>(runs[b].size());
    points.insert(points.end(), runs[b].begin(), runs[b].end());
  }
  int rounds = 0;
  for (;;) {
    std::uint32_t longest = 0;
    for (std::uint32_t b = 0; b < slots; ++b) longest = std::max(longest, starts[b + 1] - starts[b]);
    if (longest <= 1) break;
    std::vector<std::uint32_t> next(slots + 1, 0);
    for (std::uint32_t b = 0; b < slots; ++b) next[b + 1] = next[b] + halved(starts[b + 1] - starts[b]);
    std::vector<Affine> out(next[slots]);
    for (std::uint64_t t = 0; t * kBatch < next[slots]; ++t)
      round_thread<typename Pts::Field, kBatch>(t, points.data(), starts.data(), next.data(), slots, out.data());
    points = std::move(out);
    starts = std::move(next);
    ++rounds;
  }
  if (rounds_out) *rounds_out = rounds;
  using Jac = JacobianPoint<Cfg>;
  G result = G::identity();
  for (unsigned w = layout.windows; w-- > 0;) {
    Jac running = Jac::identity(), window = Jac::identity();
    for (std::uint32_t b = layout.buckets; b-- > 0;) {
      const std::uint32_t slot = w * (layout.buckets + 1) + b;
      if (starts[slot + 1] > starts[slot]) running += Jac::from_affine(to_host<Cfg>(points[starts[slot]]));
      window += running;
    }
    for (unsigned d = 0; d < layout.window_bits; ++d) result = result.dbl();
    result += window;
  }
  return result;
}

// sizes: emulated arithmetic is slow (G2 most), so they stay small.
template <class Curve, class G>
void check_msm(const typename G::Affine& generator, std::initializer_list<std::size_t> sizes) {
  using Fr = typename Curve::Fr;
  Xoshiro256 rng(17);
  for (std::size_t n : sizes) {
    const auto bases = random_points<typename G::Config>(n, generator, rng);
    // Random scalars; then skewed ones: zeros, ones, all equal (one bucket
    // per window holds every point: many rounds, many doublings).
    std::vector<std::vector<Fr>> cases(3, std::vector<Fr>(n));
    const Fr same = rng.field_element<Fr>();
    for (std::size_t i = 0; i < n; ++i) {
      cases[0][i] = rng.field_element<Fr>();
      cases[1][i] = i % 3 == 0 ? Fr::zero() : i % 3 == 1 ? Fr::one() : rng.field_element<Fr>();
      cases[2][i] = same;
    }
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const G expected = msm<Curve, G>(bases, cases[c]);
      for (unsigned window_bits : {3u, 6u}) {
        int rounds = 0;
        const G small = rounds_msm<Curve, G, 4>(bases, cases[c], window_bits, &rounds);
        EXPECT_TRUE(small == expected) << "n=" << n << " case " << c << " c=" << window_bits << " batches of 4";
        const G large = rounds_msm<Curve, G, 32>(bases, cases[c], window_bits, nullptr);
        EXPECT_TRUE(large == expected) << "n=" << n << " case " << c << " c=" << window_bits << " batches of 32";
        if (c == 2 && n >= 32) {
          EXPECT_GE(rounds, 5) << "equal scalars put every point in one bucket per window";
        }
      }
    }
  }
}

TEST(BatchAffineEmulation, MsmBn254) {
  check_msm<Bn254, Bn254::G1>(Bn254::g1_generator(), {1, 5, 40, 100});
  check_msm<Bn254, Bn254::G2>(Bn254::g2_generator(), {1, 5, 32});
}
TEST(BatchAffineEmulation, MsmBls12381) {
  check_msm<Bls12381, Bls12381::G1>(Bls12381::g1_generator(), {1, 5, 40, 100});
  check_msm<Bls12381, Bls12381::G2>(Bls12381::g2_generator(), {1, 5, 32});
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
TEST(BatchAffineEmulation, RoundsBn254) { check_rounds<Bn254G1Config>(Bn254::g1_generator()); }
TEST(BatchAffineEmulation, RoundsBls12381) {
  check_rounds<Bls12381G1Config>(Bls12381::g1_generator());
  check_rounds<Bls12381G2Config>(Bls12381::g2_generator());
}

}  // namespace
}  // namespace zkfarm::cuda
