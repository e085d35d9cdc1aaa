// msm_emulation_test -- the GPU MSM's per-thread code (msm_kernels.cuh) run
// on the CPU against kernels/msm.h.
//
// Plain C++ (no CUDA needed). run_emulated() below issues the same steps as
// msm_device() in msm.cuh, with std::sort standing in for CUB's radix sort
// and a loop over thread indices for each kernel launch, so the digit
// recoding, the segmented bucket accumulation (all record levels), the
// bucket reduction and the host combination are checked in CI, including
// skewed inputs (all scalars equal) and tiny segments that force many levels,
// and the MSM over shifted bases (one bucket set, the ones in it or apart).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cuda/msm_kernels.cuh"
#include "kernels/curves.h"
#include "kernels/msm.h"

namespace zkfarm::cuda {
namespace {

namespace mk = msm_kernels;

struct EmulationConfig {
  unsigned window_bits = 0;
  std::uint64_t target_threads = 64;
  std::uint64_t min_segment = 1;
  std::uint64_t record_segment = 4;  // >= 4 (see GpuMsmConfig)
  // Shifted bases (msm.h's shifted_bases; the table built here on the
  // host, its rows the layout's windows at c = window_bits): one bucket set
  // for every window, the digits of row w pointing into row w. With
  // ones_in_buckets the ones join that set as digit 1 of row 0 instead of
  // being summed first (GpuMsmConfig::ones_in_buckets).
  bool shifted = false;
  bool ones_in_buckets = false;
};

template <class Curve, class G>
G run_emulated(std::span<const typename G::Affine> host_bases, std::span<const typename Curve::Fr> host_scalars,
               const EmulationConfig& config, unsigned* levels_out = nullptr) {
  using Cfg = typename G::Config;
  using Pts = DevicePointsOf<Cfg>;
  using Xyzz = typename Pts::Xyzz;
  using DeviceAffine = typename Pts::Affine;
  using FrDev = typename DeviceFieldOf<typename Curve::Fr>::type;
  using HostXyzz = XyzzPoint<Cfg>;
  const std::uint64_t n = host_bases.size();
  const auto* bases = reinterpret_cast<const DeviceAffine*>(host_bases.data());
  const auto* scalars = reinterpret_cast<const FrDev*>(host_scalars.data());
  auto to_host = [](const Xyzz& x) {
    HostXyzz h;
    std::memcpy(static_cast<void*>(&h), &x, sizeof(h));
    return h;
  };

  // 1. classify + compact
  std::vector<std::uint32_t> dense_flag(n), one_flag(n), dense_position(n), one_position(n);
  unsigned max_bits = 0;
  for (std::uint64_t i = 0; i < n; ++i)
    max_bits = std::max(max_bits, mk::classify(i, bases, scalars, dense_flag.data(), one_flag.data()));
  std::exclusive_scan(dense_flag.begin(), dense_flag.end(), dense_position.begin(), 0u);
  std::exclusive_scan(one_flag.begin(), one_flag.end(), one_position.begin(), 0u);
  const std::uint64_t m = n ? dense_position[n - 1] + dense_flag[n - 1] : 0;
  const std::uint64_t ones = n ? one_position[n - 1] + one_flag[n - 1] : 0;
  std::vector<std::uint32_t> dense_index(n), ones_index(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    mk::scatter_flagged(i, dense_flag.data(), dense_position.data(), dense_index.data());
    mk::scatter_flagged(i, one_flag.data(), one_position.data(), ones_index.data());
  }
  G result = G::identity();

  auto reduce_all = [&](std::vector<Xyzz> values) {
    while (values.size() > 1) {
      const std::uint64_t group = 4, outputs = (values.size() + group - 1) / group;
      std::vector<Xyzz> next(outputs);
      for (std::uint64_t i = 0; i < outputs; ++i) mk::reduce_group(i, group, values.size(), values.data(), next.data());
      values = std::move(next);
    }
    return values[0];
  };

  // 2. ones (unless they go to the buckets)
  const std::uint64_t bucket_ones = config.shifted && config.ones_in_buckets ? ones : 0;
  if (ones > 0 && bucket_ones == 0) {
    const std::uint64_t length = mk::segment_length(ones, config.target_threads, 2);
    const std::uint64_t threads = (ones + length - 1) / length;
    std::vector<Xyzz> partial(threads);
    for (std::uint64_t t = 0; t < threads; ++t) mk::sum_ones<Pts>(t, length, ones, ones_index.data(), bases, partial.data());
    result = to_host(reduce_all(partial)).to_jacobian();
  }
  if (m + bucket_ones == 0) return result;

  // 3-4. digits, sorted per bucket set (stable sort by key = radix sort)
  const bool shifted = config.shifted;
  const mk::Layout layout = shifted ? mk::choose_layout(m, max_bits, config.window_bits, 0.05, 0, 0, true)
                                    : mk::choose_layout(m, max_bits, config.window_bits, 0.05, sizeof(Xyzz), ~0ULL);
  std::vector<DeviceAffine> table;  // row w: 2^(c w) times the bases
  if (shifted) {
    using Jac = JacobianPoint<Cfg>;
    std::vector<Jac> row(n);
    std::vector<typename G::Affine> affine(n);
    for (std::uint64_t i = 0; i < n; ++i) row[i] = Jac::from_affine(host_bases[i]);
    table.resize(std::size_t(layout.windows) * n);
    for (unsigned w = 0; w < layout.windows; ++w) {
      if (w > 0)
        for (auto& p : row)
          for (unsigned d = 0; d < layout.window_bits; ++d) p = p.dbl();
      Jac::batch_to_affine(row, affine);
      if (n) std::memcpy(static_cast<void*>(table.data() + w * n), affine.data(), n * sizeof(DeviceAffine));
    }
  }
  const std::uint64_t sets = shifted ? 1 : layout.windows;
  const std::uint64_t total = std::uint64_t(layout.windows) * m + bucket_ones;
  const std::uint64_t set_m = shifted ? total : m;
  std::vector<std::uint32_t> keys(total), values(total);
  for (std::uint64_t j = 0; j < m; ++j)
    mk::make_digits(j, m, dense_index.data(), scalars, layout, keys.data(), values.data(), shifted ? n : 0);
  for (std::uint64_t k = 0; k < bucket_ones; ++k) {  // digit 1 of row 0: the base itself
    keys[layout.windows * m + k] = 0;
    values[layout.windows * m + k] = ones_index[k];
  }
  for (std::uint64_t set = 0; set < sets; ++set) {
    std::vector<std::uint64_t> order(set_m);
    std::iota(order.begin(), order.end(), 0);
    const std::uint64_t at = set * set_m;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint64_t a, std::uint64_t b) { return keys[at + a] < keys[at + b]; });
    std::vector<std::uint32_t> k(set_m), v(set_m);
    for (std::uint64_t j = 0; j < set_m; ++j) {
      k[j] = keys[at + order[j]];
      v[j] = values[at + order[j]];
    }
    std::copy(k.begin(), k.end(), keys.begin() + at);
    std::copy(v.begin(), v.end(), values.begin() + at);
  }

  // 5. accumulation
  std::vector<Xyzz> bucket_sums(sets * (std::uint64_t(layout.buckets) + 1), Xyzz::identity());
  const std::uint64_t length = mk::segment_length(total, config.target_threads, config.min_segment);
  std::uint64_t threads = (total + length - 1) / length;
  bool last = threads == 1;
  std::vector<std::uint32_t> record_ids(last ? 0 : 2 * threads);
  std::vector<Xyzz> record_sums(last ? 0 : 2 * threads);
  const mk::PointSource<Pts> points{keys.data(), values.data(), shifted ? table.data() : bases, set_m,
                                    layout.buckets};
  for (std::uint64_t t = 0; t < threads; ++t)
    mk::segment_reduce<Pts>(t, length, total, points, layout.buckets, last, bucket_sums.data(), record_ids.data(),
                            record_sums.data());
  std::uint64_t records = 2 * threads;
  unsigned levels = 0;
  while (!last) {
    ++levels;
    threads = (records + config.record_segment - 1) / config.record_segment;
    last = threads == 1;
    std::vector<std::uint32_t> next_ids(last ? 0 : 2 * threads);
    std::vector<Xyzz> next_sums(last ? 0 : 2 * threads);
    const mk::RecordSource<Pts> source{record_ids.data(), record_sums.data()};
    for (std::uint64_t t = 0; t < threads; ++t)
      mk::segment_reduce<Pts>(t, config.record_segment, records, source, layout.buckets, last, bucket_sums.data(),
                              next_ids.data(), next_sums.data());
    record_ids = std::move(next_ids);
    record_sums = std::move(next_sums);
    records = 2 * threads;
  }
  if (levels_out) *levels_out = levels;

  // 6. per-window sums in two levels (msm.cuh): level 1 per segment acc_s
  // and R_s; level 2 V = sum_s (s + 1) R_s over the R_s in place; A = sum
  // acc_s and R = sum R_s per window; the window is A + 2^segment_log (V - R).
  const unsigned segment_log = std::min(2u, layout.window_bits - 1);
  const std::uint64_t segments = layout.buckets >> segment_log;
  const std::uint64_t segment_threads = sets * segments;
  std::vector<Xyzz> shares(2 * segment_threads);
  for (std::uint64_t t = 0; t < segment_threads; ++t)
    mk::bucket_segment<Pts>(t, layout.buckets, segment_log, bucket_sums.data(), layout.buckets + 1, shares.data());
  unsigned segment_log2 = 0;
  while (segment_log2 < 1 && (std::uint64_t(2) << segment_log2) <= segments) ++segment_log2;
  const std::uint64_t segments2 = segments >> segment_log2;
  const std::uint64_t segment_threads2 = sets * segments2;
  std::vector<Xyzz> shares2(2 * segment_threads2);
  for (std::uint64_t t = 0; t < segment_threads2; ++t)
    mk::bucket_segment<Pts>(t, std::uint32_t(segments), segment_log2, shares.data() + segments, 2 * segments,
                            shares2.data());
  std::vector<Xyzz> scale_scratch(segment_threads2);
  for (std::uint64_t t = 0; t < segment_threads2; ++t)
    mk::segment_scale<Pts>(t, std::uint32_t(segments), segment_log2, shares2.data(), scale_scratch.data());
  // Sums of consecutive runs, by groups of up to 4 (reduce_runs in msm.cuh).
  auto reduce_runs = [](std::vector<Xyzz> values, std::uint64_t runs, std::uint64_t per_run) {
    std::uint64_t count = runs * per_run;
    while (per_run > 1) {
      const std::uint64_t group = std::min<std::uint64_t>(per_run, 4);
      const std::uint64_t per_next = (per_run + group - 1) / group;
      std::vector<Xyzz> next(runs * per_next);
      for (std::uint64_t i = 0; i < next.size(); ++i) mk::reduce_group(i, group, count, values.data(), next.data());
      values = std::move(next);
      count = values.size();
      per_run = per_next;
    }
    return values;
  };
  const std::vector<Xyzz> level1 = reduce_runs(std::move(shares), 2 * sets, segments);
  const std::vector<Xyzz> level2 = reduce_runs(std::move(shares2), sets, 2 * segments2);
  // 7. Horner (over one set with shifted bases: the table did the doublings)
  G acc = G::identity();
  for (std::uint64_t w = sets; w-- > 0;) {
    for (unsigned d = 0; d < layout.window_bits; ++d) acc = acc.dbl();
    G offsets = to_host(level2[w]).to_jacobian() - to_host(level1[2 * w + 1]).to_jacobian();
    for (unsigned d = 0; d < segment_log; ++d) offsets = offsets.dbl();
    acc += to_host(level1[2 * w]).to_jacobian() + offsets;
  }
  return result + acc;
}

template <class Affine>
std::vector<Affine> make_points(std::size_t n, const Affine& generator, std::mt19937_64& rng) {
  using Jac = JacobianPoint<typename Affine::Config>;
  std::vector<Jac> jac(n);
  Jac p = Jac::from_affine(generator).scalar_mul(BigInt<1>{{rng() | 1}});
  const Jac step = Jac::from_affine(generator).scalar_mul(BigInt<1>{{rng() | 1}});
  for (auto& x : jac) {
    x = p;
    p += step;
  }
  std::vector<Affine> out(n);
  Jac::batch_to_affine(jac, out);
  return out;
}

template <class Fr>
Fr random_scalar(std::mt19937_64& rng) {
  typename Fr::Int i;
  for (auto& l : i.limbs) l = rng();
  i.limbs[Fr::N - 1] &= (~std::uint64_t(0)) >> 2;
  while (i >= Fr::kModulus) i.sub_in_place(Fr::kModulus);
  return Fr::from_mont(i);
}

template <class Curve, class G>
void check_case(const char* name, std::vector<typename G::Affine> bases, std::vector<typename Curve::Fr> scalars,
                const EmulationConfig& config) {
  const G expected = msm<Curve, G>(bases, scalars);
  unsigned levels = 0;
  const G got = run_emulated<Curve, G>(bases, scalars, config, &levels);
  ASSERT_TRUE(got == expected) << name << " n=" << bases.size() << " c=" << config.window_bits
                               << " levels=" << levels;
}

template <class Curve, class G>
void check_curve(const typename G::Affine& generator) {
  using Fr = typename Curve::Fr;
  std::mt19937_64 rng(1234);
  // Emulated arithmetic is slow (~5 us per BN254 addition), so sizes stay
  // small; the GPU test covers large ones.
  for (std::size_t n : {1, 2, 3, 17, 100, 257}) {
    auto bases = make_points(n, generator, rng);
    std::vector<Fr> scalars(n);
    for (auto& s : scalars) s = random_scalar<Fr>(rng);
    for (unsigned c : {0u, 2u, 5u, 9u, 13u})
      for (std::uint64_t record_segment : {4u, 16u}) {
        EmulationConfig config;
        config.window_bits = c;
        config.record_segment = record_segment;
        check_case<Curve, G>("random", bases, scalars, config);
      }
  }
  const std::size_t n = 120;
  auto bases = make_points(n, generator, rng);
  EmulationConfig config;
  config.window_bits = 6;
  // Zeros, ones, infinity, small scalars, a mix.
  {
    std::vector<Fr> scalars(n);
    for (std::size_t i = 0; i < n; ++i) {
      switch (i % 5) {
        case 0: scalars[i] = Fr::zero(); break;
        case 1: scalars[i] = Fr::one(); break;
        case 2: scalars[i] = Fr::from_u64(rng() % 1000); break;
        case 3: scalars[i] = -Fr::one(); break;
        default: scalars[i] = random_scalar<Fr>(rng);
      }
    }
    auto with_infinity = bases;
    for (std::size_t i = 0; i < n; i += 7) with_infinity[i] = G::Affine::identity();
    check_case<Curve, G>("mixed", with_infinity, scalars, config);
  }
  // All scalars equal: one bucket per window holds every point.
  {
    std::vector<Fr> scalars(n, random_scalar<Fr>(rng));
    check_case<Curve, G>("equal", bases, scalars, config);
    config.window_bits = 0;
    check_case<Curve, G>("equal auto", bases, scalars, config);
  }
  // Only zeros and ones; empty.
  {
    std::vector<Fr> scalars(n);
    for (std::size_t i = 0; i < n; ++i) scalars[i] = i % 3 ? Fr::one() : Fr::zero();
    check_case<Curve, G>("zeros and ones", bases, scalars, config);
    check_case<Curve, G>("empty", {}, {}, config);
  }
  // Repeated bases (doubling inside buckets) and P, -P pairs (cancellation).
  {
    std::vector<typename G::Affine> repeated(n, bases[0]);
    for (std::size_t i = 0; i < n; i += 2) repeated[i] = -bases[0];
    std::vector<Fr> scalars(n, Fr::from_u64(5));
    for (std::size_t i = 0; i < n; i += 3) scalars[i] = Fr::from_u64(6);
    check_case<Curve, G>("repeated", repeated, scalars, config);
  }
}

// The streamed witness MSMs' split (msm_device_split, MsmPipeline): chunk by
// chunk, zeros and points at infinity skipped and ones summed by the same
// bodies, the dense points collected in index order into a collection of
// bounded size, and one Pippenger (run_emulated) over the collection
// whenever the next chunk's dense points would not fit: the sum of it all is
// the whole MSM.
template <class Curve, class G>
void check_split(const typename G::Affine& generator) {
  using Fr = typename Curve::Fr;
  using Cfg = typename G::Config;
  using Pts = DevicePointsOf<Cfg>;
  using Xyzz = typename Pts::Xyzz;
  using DeviceAffine = typename Pts::Affine;
  using FrDev = typename DeviceFieldOf<Fr>::type;
  std::mt19937_64 rng(99);
  const std::size_t n = 150;
  auto bases = make_points(n, generator, rng);
  for (std::size_t i = 0; i < n; i += 11) bases[i] = G::Affine::identity();
  std::vector<Fr> scalars(n);
  for (std::size_t i = 0; i < n; ++i)
    scalars[i] = i % 4 == 0 ? Fr::zero() : i % 4 == 1 ? Fr::one() : i % 8 == 2 ? Fr::from_u64(rng() % 7 + 2)
                                                                               : random_scalar<Fr>(rng);
  const G expected = msm<Curve, G>(bases, scalars);
  for (std::size_t chunk : {std::size_t(7), std::size_t(16), n})
    for (std::size_t capacity : {std::size_t(12), std::size_t(40), n}) {
      G result = G::identity();
      std::vector<typename G::Affine> collected_bases;
      std::vector<Fr> collected_scalars;
      EmulationConfig config;
      auto flush = [&] {
        result += run_emulated<Curve, G>(collected_bases, collected_scalars, config);
        collected_bases.clear();
        collected_scalars.clear();
      };
      std::size_t flushes = 0;
      for (std::size_t at = 0; at < n; at += chunk) {
        const std::size_t count = std::min(chunk, n - at);
        const auto* chunk_bases = reinterpret_cast<const DeviceAffine*>(bases.data() + at);
        const auto* chunk_scalars = reinterpret_cast<const FrDev*>(scalars.data() + at);
        std::vector<std::uint32_t> dense_flag(count), one_flag(count), ones_index;
        std::vector<std::size_t> dense;
        for (std::size_t i = 0; i < count; ++i) {
          mk::classify(i, chunk_bases, chunk_scalars, dense_flag.data(), one_flag.data());
          if (one_flag[i]) ones_index.push_back(std::uint32_t(i));
          if (dense_flag[i]) dense.push_back(i);
        }
        if (!ones_index.empty()) {
          Xyzz sum;
          mk::sum_ones<Pts>(0, ones_index.size(), ones_index.size(), ones_index.data(), chunk_bases, &sum);
          XyzzPoint<Cfg> host;
          std::memcpy(static_cast<void*>(&host), &sum, sizeof(host));
          result += host.to_jacobian();
        }
        if (collected_bases.size() + dense.size() > capacity) {
          flush();
          ++flushes;
        }
        for (std::size_t i : dense) {
          collected_bases.push_back(bases[at + i]);
          collected_scalars.push_back(scalars[at + i]);
        }
      }
      flush();
      ASSERT_TRUE(result == expected) << "chunk " << chunk << ", collection of " << capacity;
      if (capacity < n / 4) {
        EXPECT_GT(flushes, 0u) << "chunk " << chunk;
      }
    }
}

// The MSM over shifted bases (a table of 2^(c w) P rows, one bucket set):
// a witness's profile (mostly zeros and ones, points at infinity among the
// bases, a base repeated so that a bucket doubles), the ones in the set as
// digit 1 of row 0 and apart, against kernels/msm.h.
template <class Curve, class G>
void check_shifted(const typename G::Affine& generator) {
  using Fr = typename Curve::Fr;
  std::mt19937_64 rng(4321);
  const std::size_t n = 90;
  auto bases = make_points(n, generator, rng);
  for (std::size_t i = 0; i < n; i += 13) bases[i] = G::Affine::identity();
  bases[4] = bases[3];  // both scalars 1: the ones' bucket adds P to P
  std::vector<Fr> scalars(n);
  for (std::size_t i = 0; i < n; ++i)
    scalars[i] = i % 10 < 4 ? Fr::zero() : i % 10 < 8 ? Fr::one() : random_scalar<Fr>(rng);
  scalars[3] = scalars[4] = Fr::one();
  scalars[5] = Fr::from_u64(1) + Fr::from_u64(1);  // digit 2 of row 0
  std::vector<Fr> ones_only(n, Fr::one());
  for (unsigned c : {2u, 5u, 8u})
    for (bool ones_in : {true, false})
      for (std::uint64_t record_segment : {4u, 16u}) {
        EmulationConfig config;
        config.window_bits = c;
        config.record_segment = record_segment;
        config.shifted = true;
        config.ones_in_buckets = ones_in;
        const std::string name = std::string("shifted, ones ") + (ones_in ? "in the buckets" : "apart");
        check_case<Curve, G>(name.c_str(), bases, scalars, config);
        check_case<Curve, G>((name + ", only ones").c_str(), bases, ones_only, config);
      }
}

TEST(MsmEmulation, ShiftedBasesOnesInBuckets) {
  check_shifted<Bn254, Bn254::G1>(Bn254::g1_generator());
  check_shifted<Bn254, Bn254::G2>(Bn254::g2_generator());
  check_shifted<Bls12381, Bls12381::G1>(Bls12381::g1_generator());
}

TEST(MsmEmulation, SplitChunksWithOnePippengerPerCollection) {
  check_split<Bn254, Bn254::G1>(Bn254::g1_generator());
  check_split<Bls12381, Bls12381::G2>(Bls12381::g2_generator());
}

TEST(MsmEmulation, Bn254G1) { check_curve<Bn254, Bn254::G1>(Bn254::g1_generator()); }
TEST(MsmEmulation, Bls12381G1) { check_curve<Bls12381, Bls12381::G1>(Bls12381::g1_generator()); }
TEST(MsmEmulation, Bn254G2) { check_curve<Bn254, Bn254::G2>(Bn254::g2_generator()); }
TEST(MsmEmulation, Bls12381G2) { check_curve<Bls12381, Bls12381::G2>(Bls12381::g2_generator()); }

TEST(MsmEmulation, AccumulationShares) {
  const std::uint64_t resident = 50688;  // 132 SMs x 3 blocks x 128 threads
  // Large: eight waves of equal shares.
  EXPECT_EQ(mk::accumulate_length(std::uint64_t(1) << 28, resident, 8, 128, 8), 662u);
  // Mid-size: shares no shorter than 128 while more than one wave is needed.
  EXPECT_EQ(mk::accumulate_length(std::uint64_t(16) << 20, resident, 8, 128, 8), 128u);
  // Small: one wave of short shares, but never under min_segment.
  EXPECT_EQ(mk::accumulate_length(1000000, resident, 8, 128, 8), 20u);
  EXPECT_EQ(mk::accumulate_length(1000, resident, 8, 128, 8), 8u);
  EXPECT_EQ(mk::accumulate_length(1000, resident, 8, 128, 1), 1u);
}

TEST(MsmEmulation, LayoutChoices) {
  EXPECT_EQ(mk::choose_layout(std::uint64_t(1) << 24, 255, 0, 0.05, 192, ~0ULL).window_bits, 20u);
  EXPECT_EQ(mk::choose_layout(std::uint64_t(1) << 24, 255, 0, 0.05, 192, ~0ULL).windows, 13u);
  EXPECT_EQ(mk::choose_layout(100, 255, 7, 0.05, 192, ~0ULL).window_bits, 7u);
  // The memory cap shrinks the window.
  EXPECT_LT(mk::choose_layout(std::uint64_t(1) << 24, 255, 0, 0.05, 192, 64ULL << 20).window_bits, 20u);
  // BN254 (8 limbs) too picks c = 22 at 2^24 with one set, 24 at 2^26.
  EXPECT_EQ(mk::choose_layout(std::uint64_t(1) << 24, 254, 0, mk::sort_cost(8, 1), 0, 0, true).window_bits, 22u);
  EXPECT_EQ(mk::choose_layout(std::uint64_t(1) << 26, 254, 0, mk::sort_cost(8, 1), 0, 0, true).window_bits, 24u);
  // One bucket set for all windows (shifted bases): larger windows pay.
  const mk::Layout shared24 = mk::choose_layout(std::uint64_t(1) << 24, 255, 0, mk::sort_cost(12, 1), 0, 0, true);
  EXPECT_EQ(shared24.window_bits, 22u);
  EXPECT_EQ(shared24.windows, 12u);
  const mk::Layout shared26 = mk::choose_layout(std::uint64_t(1) << 26, 255, 0, mk::sort_cost(12, 1), 0, 0, true);
  EXPECT_EQ(shared26.window_bits, 24u);
  EXPECT_EQ(shared26.windows, 11u);
  // A forced c with one set (a table's): W = bits / c + 1, B = 2^(c-1).
  const mk::Layout forced = mk::choose_layout(1000, 255, 16, mk::sort_cost(12, 1), 100, 0, true);
  EXPECT_EQ(forced.window_bits, 16u);
  EXPECT_EQ(forced.windows, 16u);
  EXPECT_EQ(forced.buckets, 1u << 15);
  // The memory cap counts one set then, W sets otherwise.
  EXPECT_EQ(mk::choose_layout(std::uint64_t(1) << 24, 255, 0, mk::sort_cost(12, 1), 100, 101ULL << 21, true)
                .window_bits,
            22u);
  EXPECT_LT(mk::choose_layout(std::uint64_t(1) << 24, 255, 0, mk::sort_cost(12, 1), 100, 101ULL << 21).window_bits,
            20u);
}

}  // namespace
}  // namespace zkfarm::cuda
