// batch_affine_emulation_test -- batch_affine.cuh's per-thread code (field
// inversion, batched affine additions, the MSM's bucket rounds, shifted
// bases' doublings) run on the CPU against the host curve arithmetic
// (kernels/curve.h), on both curves' G1 and G2, including every special
// case: points at infinity, equal points, opposite points; and whole MSMs
// whose buckets are summed by the rounds exactly as msm.cuh drives them
// (msm_kernels.cuh's digits, with and without shifted bases), against
// kernels/msm.h.
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

// The device's rounds over one array of sorted (key, value) pairs holding
// `sets` windows of set_m entries each (msm.cuh's accumulate_batch_affine,
// one thread at a time): bucket_run per slot, ceil(log2(longest)) rounds
// of batch_round (the first over the sorted digits, then over each round's
// output), bucket_from_run. Returns the XYZZ bucket sums (slot order).
template <class Cfg>
std::vector<typename Dev<Cfg>::Xyzz> round_buckets(const std::vector<std::uint32_t>& keys,
                                                   const std::vector<std::uint32_t>& values,
                                                   const std::vector<typename Dev<Cfg>::Affine>& bases,
                                                   std::uint32_t sets, std::uint32_t set_m, std::uint32_t buckets,
                                                   std::uint32_t batch, int* rounds_out) {
  using Affine = typename Dev<Cfg>::Affine;
  using F = typename Dev<Cfg>::Field;
  const std::uint32_t slots = sets * (buckets + 1);
  std::vector<std::uint32_t> start(slots), length(slots), halves(slots + 1, 0);
  std::uint32_t longest = 0;
  for (std::uint32_t s = 0; s < slots; ++s)
    longest = std::max(longest, bucket_run(s, keys.data(), set_m, buckets, start.data(), length.data(), halves.data()));
  const SortedRuns sorted_runs{start.data(), length.data()};
  const SortedPoints<F> sorted_points{values.data(), bases.data()};
  std::vector<typename Dev<Cfg>::Xyzz> sums(slots, Dev<Cfg>::Xyzz::identity());
  int rounds = 0;
  std::vector<std::uint32_t> prev_next;
  std::vector<Affine> prev_points;
  while ((std::uint32_t(1) << rounds) < longest) {
    if (rounds > 0)
      for (std::uint32_t s = 0; s < slots; ++s) halves[s] = halved(prev_next[s + 1] - prev_next[s]);
    std::vector<std::uint32_t> next(slots + 1, 0);
    for (std::uint32_t s = 0; s < slots; ++s) next[s + 1] = next[s] + halves[s];
    const std::uint32_t total = next[slots];
    const std::uint64_t threads = (total + batch - 1) / batch;
    std::vector<Affine> points(total);
    std::vector<F> scratch(threads * batch);
    for (std::uint64_t t = 0; t < threads; ++t) {
      if (rounds == 0)
        batch_round<F>(t, threads, batch, sorted_points, sorted_runs, next.data(), slots, points.data(),
                       scratch.data());
      else
        batch_round<F>(t, threads, batch, ArrayPoints<F>{prev_points.data()}, ScannedRuns{prev_next.data()},
                       next.data(), slots, points.data(), scratch.data());
    }
    prev_points = std::move(points);
    prev_next = std::move(next);
    ++rounds;
  }
  for (std::uint32_t s = 0; s < slots; ++s) {
    if (rounds == 0) bucket_from_run<F>(s, sorted_runs, sorted_points, sums.data());
    else bucket_from_run<F>(s, ScannedRuns{prev_next.data()}, ArrayPoints<F>{prev_points.data()}, sums.data());
  }
  if (rounds_out) *rounds_out = rounds;
  return sums;
}

// One bucket summed by rounds, against its sum on the host: runs of 1 to 9
// points, with repeats and opposites inside a run so that the rounds meet
// equal and opposite partial sums, in batches of 1 to 4 pairs.
template <class Cfg>
void check_rounds(const AffinePoint<Cfg>& generator) {
  using Affine = typename Dev<Cfg>::Affine;
  using Jac = JacobianPoint<Cfg>;
  Xoshiro256 rng(13);
  const auto pool = random_points<Cfg>(6, generator, rng);
  for (std::uint32_t len = 1; len <= 9; ++len)
    for (int variant = 0; variant < 3; ++variant) {
      std::vector<AffinePoint<Cfg>> run;
      for (std::uint32_t k = 0; k < len; ++k) {
        AffinePoint<Cfg> p = pool[rng.below(pool.size())];
        if (variant == 1 && k % 2 == 1) p = run.back();          // repeats: doublings
        if (variant == 2 && k % 2 == 1) p = negate(run.back());  // opposites: infinity
        run.push_back(p);
      }
      Jac expected = Jac::identity();
      for (const auto& p : run) expected += Jac::from_affine(p);
      // One set with buckets = 1: key 0 holds the run, value k = point k.
      std::vector<Affine> points(len);
      for (std::uint32_t k = 0; k < len; ++k) points[k] = to_device<Cfg>(run[k]);
      std::vector<std::uint32_t> keys(len, 0), values(len);
      std::iota(values.begin(), values.end(), 0u);
      for (std::uint32_t batch : {1u, 2u, 4u}) {
        int rounds = 0;
        const auto sums = round_buckets<Cfg>(keys, values, points, 1, len, 1, batch, &rounds);
        EXPECT_TRUE(from_xyzz<Cfg>(sums[0]) == expected)
            << "run of " << len << ", variant " << variant << ", batch " << batch << ", " << rounds << " rounds";
        EXPECT_TRUE(sums[1].is_identity()) << "the EMPTY slot stays empty";
      }
    }
}

// An MSM whose buckets are summed by the device's rounds: msm_kernels.cuh's
// signed digits sorted per window (or, with shifted bases, every window's
// digits in one set over a table built by double_strided), round_buckets,
// then sum_b (b + 1) B_b per set and Horner on the host.
template <class Curve, class G>
G rounds_msm(std::span<const typename G::Affine> bases, std::span<const typename Curve::Fr> scalars,
             unsigned window_bits, std::uint32_t batch, bool shifted, int* rounds_out) {
  using Cfg = typename G::Config;
  using Pts = Dev<Cfg>;
  using Affine = typename Pts::Affine;
  using F = typename Pts::Field;
  using FrDev = typename DeviceFieldOf<typename Curve::Fr>::type;
  namespace mk = msm_kernels;
  const std::uint32_t n = static_cast<std::uint32_t>(bases.size());
  const mk::Layout layout = mk::choose_layout(n, 256, window_bits, 0.05, sizeof(typename Pts::Xyzz), ~0ULL);
  const std::uint32_t windows = layout.windows;
  // The table: row w = 2^(w c) * bases (rows of one when not shifted).
  std::vector<Affine> table(n);
  for (std::uint32_t i = 0; i < n; ++i) table[i] = to_device<Cfg>(bases[i]);
  if (shifted) {
    table.resize(std::size_t(windows) * n);
    const std::uint64_t threads = 3;  // strided runs of several points each
    std::vector<F> scratch(n);
    for (std::uint32_t w = 1; w < windows; ++w) {
      std::copy(table.begin() + (w - 1) * n, table.begin() + w * n, table.begin() + w * n);
      for (unsigned d = 0; d < layout.window_bits; ++d)
        for (std::uint64_t t = 0; t < threads; ++t) double_strided<F>(t, threads, n, table.data() + w * n, scratch.data());
    }
  }
  std::vector<std::uint32_t> index(n), keys(std::size_t(windows) * n), values(std::size_t(windows) * n);
  std::iota(index.begin(), index.end(), 0u);
  const auto* dev_scalars = reinterpret_cast<const FrDev*>(scalars.data());
  for (std::uint64_t j = 0; j < n; ++j)
    mk::make_digits(j, n, index.data(), dev_scalars, layout, keys.data(), values.data(), shifted ? n : 0);
  const std::uint32_t sets = shifted ? 1 : windows;
  const std::uint32_t set_m = shifted ? windows * n : n;
  for (std::uint32_t set = 0; set < sets; ++set) {  // the radix sort: stable, by key
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
    for (std::uint32_t k = 0; k < set_m; ++k) pairs.emplace_back(keys[set * set_m + k], values[set * set_m + k]);
    std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::uint32_t k = 0; k < set_m; ++k) std::tie(keys[set * set_m + k], values[set * set_m + k]) = pairs[k];
  }
  const auto sums = round_buckets<Cfg>(keys, values, table, sets, set_m, layout.buckets, batch, rounds_out);
  using Jac = JacobianPoint<Cfg>;
  G result = G::identity();
  for (std::uint32_t set = sets; set-- > 0;) {
    Jac running = Jac::identity(), window = Jac::identity();
    for (std::uint32_t b = layout.buckets; b-- > 0;) {
      running += from_xyzz<Cfg>(sums[set * (layout.buckets + 1) + b]);
      window += running;
    }
    for (unsigned d = 0; d < layout.window_bits; ++d) result = result.dbl();
    result += window;
  }
  return result;
}

// sizes: emulated arithmetic is slow (G2 most), so they stay small.
template <class Curve, class G>
void check_msm(const typename G::Affine& generator, std::initializer_list<std::size_t> sizes, bool shifted) {
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
        const G small = rounds_msm<Curve, G>(bases, cases[c], window_bits, 2, shifted, &rounds);
        EXPECT_TRUE(small == expected) << "n=" << n << " case " << c << " c=" << window_bits << " batches of 2"
                                       << (shifted ? " shifted" : "");
        const G large = rounds_msm<Curve, G>(bases, cases[c], window_bits, 32, shifted, nullptr);
        EXPECT_TRUE(large == expected) << "n=" << n << " case " << c << " c=" << window_bits << " batches of 32"
                                       << (shifted ? " shifted" : "");
        if (c == 2 && n >= 32) {
          EXPECT_GE(rounds, 5) << "equal scalars put every point in one bucket per window";
        }
      }
    }
  }
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

TEST(BatchAffineEmulation, MsmBn254) {
  check_msm<Bn254, Bn254::G1>(Bn254::g1_generator(), {1, 5, 40, 100}, false);
  check_msm<Bn254, Bn254::G2>(Bn254::g2_generator(), {1, 5, 32}, false);
}
TEST(BatchAffineEmulation, MsmBls12381) {
  check_msm<Bls12381, Bls12381::G1>(Bls12381::g1_generator(), {1, 5, 40, 100}, false);
  check_msm<Bls12381, Bls12381::G2>(Bls12381::g2_generator(), {1, 5, 32}, false);
}
TEST(BatchAffineEmulation, ShiftedBasesMsmBn254) {
  check_msm<Bn254, Bn254::G1>(Bn254::g1_generator(), {1, 5, 40}, true);
}
TEST(BatchAffineEmulation, ShiftedBasesMsmBls12381) {
  check_msm<Bls12381, Bls12381::G1>(Bls12381::g1_generator(), {1, 5, 40}, true);
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
TEST(BatchAffineEmulation, RoundsBn254) { check_rounds<Bn254G1Config>(Bn254::g1_generator()); }
TEST(BatchAffineEmulation, RoundsBls12381) {
  check_rounds<Bls12381G1Config>(Bls12381::g1_generator());
  check_rounds<Bls12381G2Config>(Bls12381::g2_generator());
}

}  // namespace
}  // namespace zkfarm::cuda
