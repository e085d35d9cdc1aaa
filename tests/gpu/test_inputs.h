// test_inputs.h -- fast random inputs for the GPU tests and benchmark, and
// a cheap exact reference for MSMs too large for the CPU MSM.
//
// Scalars come from splitmix64 (seeded; reproducible), reduced below r: a
// uniformly random reduced integer is a uniformly random field element in
// Montgomery form, so no conversion is needed. Points for n up to ~2^27 are
// built as P_i = A_(i mod K) + B_(i / K) (K = ceil(sqrt n)) from 2K points
// of a random multiple chain, with batch-affine additions in parallel: about
// 1 us per point on one core instead of a scalar multiplication each. The
// same structure gives the exact MSM of any scalars cheaply:
//   sum_i s_i P_i = sum_k A_k (sum_{i mod K = k} s_i) + sum_j B_j (sum_{i/K = j} s_i),
// a CPU MSM over 2K points (GridPoints::reference_msm).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/curve.h"
#include "kernels/msm.h"
#include "kernels/parallel.h"

namespace zkfarm::cuda::testing {

inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A uniformly random element of F (rejection below the modulus).
template <class F>
F random_element(std::uint64_t& state) {
  for (;;) {
    typename F::Int v;
    for (auto& l : v.limbs) l = splitmix64(state);
    const std::size_t top_bits = F::kBits - 64 * (F::N - 1);
    if (top_bits < 64) v.limbs[F::N - 1] &= (std::uint64_t(1) << top_bits) - 1;
    if (v < F::kModulus) return F::from_mont(v);
  }
}

// n random field elements, generated in parallel chunks from `seed`.
template <class F>
std::vector<F> random_elements(std::size_t n, std::uint64_t seed) {
  std::vector<F> out(n);
  constexpr std::size_t kChunk = std::size_t(1) << 16;
  parallel_for((n + kChunk - 1) / kChunk, [&](std::size_t first, std::size_t last) {
    for (std::size_t c = first; c < last; ++c) {
      std::uint64_t state = seed * 0x2545f4914f6cdd1dULL + c;
      for (std::size_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i) out[i] = random_element<F>(state);
    }
  });
  return out;
}

// count affine points start, start + step, start + 2 step, ... with random
// 64-bit multiples of the generator as start and step.
template <class Affine>
std::vector<Affine> point_chain(std::size_t count, const Affine& generator, std::uint64_t seed) {
  using Jac = JacobianPoint<typename Affine::Config>;
  std::uint64_t state = seed;
  const Jac g = Jac::from_affine(generator);
  Jac p = g.scalar_mul(BigInt<1>{{splitmix64(state) | 1}});
  const Jac step = g.scalar_mul(BigInt<1>{{splitmix64(state) | 1}});
  std::vector<Jac> jac(count);
  for (auto& x : jac) {
    x = p;
    p += step;
  }
  std::vector<Affine> out(count);
  Jac::batch_to_affine(jac, out);
  return out;
}

// P_i = a[i mod K] + b[i / K] for i < n.
template <class Affine>
struct GridPoints {
  std::size_t k = 0;
  std::vector<Affine> a, b;
  std::vector<Affine> points;

  GridPoints(std::size_t n, const Affine& generator, std::uint64_t seed) {
    k = std::max<std::size_t>(1, std::size_t(std::ceil(std::sqrt(double(n)))));
    a = point_chain(k, generator, seed);
    b = point_chain((n + k - 1) / k, generator, seed ^ 0x5bd1e995ULL);
    points.resize(n);
    constexpr std::size_t kChunk = 4096;
    parallel_for((n + kChunk - 1) / kChunk, [&](std::size_t first, std::size_t last) {
      std::vector<typename Affine::Field> den, scratch;
      std::vector<Affine> addend;
      for (std::size_t c = first; c < last; ++c) {
        const std::size_t begin = c * kChunk, end = std::min(n, begin + kChunk);
        addend.resize(end - begin);
        for (std::size_t i = begin; i < end; ++i) {
          points[i] = a[i % k];
          addend[i - begin] = b[i / k];
        }
        zkfarm::msm_detail::batch_add_affine<Affine>(std::span<Affine>(points.data() + begin, end - begin),
                                                     std::span<const Affine>(addend), den, scratch);
      }
    });
  }

  // sum_i scalars[i] * points[i], exactly, via the grid structure.
  template <class Curve, class G>
  G reference_msm(std::span<const typename Curve::Fr> scalars) const {
    using Fr = typename Curve::Fr;
    std::vector<Fr> sa(a.size(), Fr::zero()), sb(b.size(), Fr::zero());
    for (std::size_t i = 0; i < scalars.size(); ++i) {
      sa[i % k] += scalars[i];
      sb[i / k] += scalars[i];
    }
    std::vector<Affine> bases(a);
    bases.insert(bases.end(), b.begin(), b.end());
    sa.insert(sa.end(), sb.begin(), sb.end());
    return msm<Curve, G>(bases, sa);
  }
};

}  // namespace zkfarm::cuda::testing
