// batch_affine.cuh -- affine point additions that share one field
// inversion (Montgomery's trick), the building block of batch-affine bucket
// accumulation (kernels/cuda/NOTES.md, "Next"): a bucket's points summed
// pairwise in rounds, each round's additions batched so that one inversion
// serves many of them.
//
// Per addition: 3 multiplications for the trick (the prefix product, and
// two on the way back), 1 for the slope, 1 squaring and 1 multiplication
// for the result: 6, plus the batch's share of one inversion (~1.5 log2 p
// multiplications by Fermat), against 10 for the XYZZ mixed addition the
// MSM uses now (curve.cuh). Exact in every case: either point at infinity
// ((0, 0), the .zkey layout), equal points (doubled), opposite points and
// a doubled point of order two (infinity).
//
// ZKFARM_HD code over any device field (DevFp for G1, DevFq2 for G2): a
// thread's batch on the device; batch_affine_emulation_test runs it on the
// CPU against the host curve arithmetic.
#pragma once

#include <cstdint>

#include "kernels/cuda/curve.cuh"
#include "kernels/cuda/fp.cuh"

namespace zkfarm::cuda {

// a^-1 by Fermat (a^(p - 2), square-and-multiply from the top bit of the
// modulus); 0 for 0.
template <class Params>
ZKFARM_HD DevFp<Params> inverse(const DevFp<Params>& a) {
  using F = DevFp<Params>;
  const auto& c = field_constants<Params>();
  std::uint32_t e[F::kLimbs];
  std::uint32_t borrow = 2;
  ZKFARM_DEVICE_UNROLL
  for (int j = 0; j < F::kLimbs; ++j) {
    e[j] = c.modulus[j] - borrow;
    borrow = c.modulus[j] < borrow ? 1u : 0u;
  }
  F r = F::one();
  for (int i = F::kLimbs * 32 - 1; i >= 0; --i) {
    r = r.sqr();
    if ((e[i / 32] >> (i % 32)) & 1u) r *= a;
  }
  return r;
}

// Fq2 = Fq[u] / (u^2 + 1): (c0 + c1 u)^-1 = (c0 - c1 u) / (c0^2 + c1^2).
template <class Base>
ZKFARM_HD DevFq2<Base> inverse(const DevFq2<Base>& a) {
  const Base t = inverse(a.c0.sqr() + a.c1.sqr());
  return DevFq2<Base>{a.c0 * t, -(a.c1 * t)};
}

namespace batch_affine_detail {

// How left + right is formed: from either point alone, from the chord's or
// the tangent's slope, or as infinity.
enum class Sum : std::uint8_t { kLeft, kRight, kChord, kTangent, kInfinity };

template <class F>
ZKFARM_HD Sum kind(const DevAffine<F>& left, const DevAffine<F>& right) {
  if (right.is_identity()) return Sum::kLeft;
  if (left.is_identity()) return Sum::kRight;
  if (left.x != right.x) return Sum::kChord;
  if (left.y == right.y && !left.y.is_zero()) return Sum::kTangent;
  return Sum::kInfinity;  // opposite points, or a point of order two doubled
}

// The slope's denominator (1 where no slope is needed).
template <class F>
ZKFARM_HD F denominator(Sum sum, const DevAffine<F>& left, const DevAffine<F>& right) {
  switch (sum) {
    case Sum::kChord: return right.x - left.x;
    case Sum::kTangent: return left.y.dbl();
    default: return F::one();
  }
}

}  // namespace batch_affine_detail

// out[i] = left[i * stride] + right[i * stride] for i < count, with one
// inversion for the whole batch. scratch: room for count field elements.
// out may be left or right when stride is 1 (each i is read before out[i]
// is written); with a larger stride it must not overlap them.
template <class F>
ZKFARM_HD void batch_affine_add(const DevAffine<F>* left, const DevAffine<F>* right, std::uint32_t stride,
                                DevAffine<F>* out, std::uint32_t count, F* scratch) {
  namespace bd = batch_affine_detail;
  if (count == 0) return;
  // 1. The denominators' prefix products.
  F product = F::one();
  for (std::uint32_t i = 0; i < count; ++i) {
    const DevAffine<F>& a = left[i * stride];
    const DevAffine<F>& b = right[i * stride];
    product *= bd::denominator(bd::kind(a, b), a, b);
    scratch[i] = product;
  }
  // 2. One inversion; 3. back down the batch, each denominator's inverse
  // peeled off the running one.
  F running = inverse(product);
  for (std::uint32_t i = count; i-- > 0;) {
    const DevAffine<F> a = left[i * stride], b = right[i * stride];
    const bd::Sum sum = bd::kind(a, b);
    const F d = bd::denominator(sum, a, b);
    const F inv = i > 0 ? running * scratch[i - 1] : running;
    running *= d;
    DevAffine<F> r{F::zero(), F::zero()};
    switch (sum) {
      case bd::Sum::kLeft: r = a; break;
      case bd::Sum::kRight: r = b; break;
      case bd::Sum::kInfinity: break;
      case bd::Sum::kChord:
      case bd::Sum::kTangent: {
        const F x2 = a.x.sqr();
        const F slope = (sum == bd::Sum::kChord ? b.y - a.y : x2.dbl() + x2) * inv;
        r.x = slope.sqr() - a.x - b.x;  // b.x == a.x for the tangent
        r.y = slope * (a.x - r.x) - a.y;
        break;
      }
    }
    out[i] = r;
  }
}

// ---------------------------------------------------------------------------
// Pairwise rounds over many buckets at once (the layout a device version
// would use): bucket b's points are points[starts[b], starts[b + 1]), all
// windows' buckets in one array. A round writes bucket b's ceil(len / 2)
// sums (its last point carried when len is odd, a lone point carried as
// is) to out[next[b], next[b + 1]), next being the exclusive scan of the
// halved lengths (next[buckets] = the round's output size). Rounds repeat
// until no bucket holds more than one point: ceil(log2) of the largest.

ZKFARM_HD std::uint32_t halved(std::uint32_t len) { return (len + 1) / 2; }

// The bucket that output position o belongs to: the last b with next[b] <=
// o (next non-decreasing, buckets + 1 entries, o < next[buckets]).
ZKFARM_HD std::uint32_t bucket_at(const std::uint32_t* next, std::uint32_t buckets, std::uint32_t o) {
  std::uint32_t lo = 0, hi = buckets - 1;
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo + 1) / 2;
    if (next[mid] <= o) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// Thread t of a round: outputs [t * kBatch, (t + 1) * kBatch), its pairs in
// one batch (one inversion for up to kBatch additions). A device version
// would share the inversion across a warp's batches instead of holding
// kBatch points per thread.
template <class F, std::uint32_t kBatch>
ZKFARM_HD void round_thread(std::uint64_t t, const DevAffine<F>* points, const std::uint32_t* starts,
                            const std::uint32_t* next, std::uint32_t buckets, DevAffine<F>* out) {
  const std::uint32_t total = next[buckets];
  const std::uint64_t first_out = t * kBatch;
  if (first_out >= total) return;
  const std::uint32_t o0 = static_cast<std::uint32_t>(first_out);
  const std::uint32_t o1 = total - o0 < kBatch ? total : o0 + kBatch;
  DevAffine<F> left[kBatch] = {}, right[kBatch] = {};
  std::uint32_t where[kBatch];
  F scratch[kBatch];
  std::uint32_t pairs = 0;
  std::uint32_t b = bucket_at(next, buckets, o0);
  for (std::uint32_t o = o0; o < o1; ++o) {
    while (next[b + 1] <= o) ++b;
    const std::uint32_t first = starts[b] + 2 * (o - next[b]);
    if (first + 1 < starts[b + 1]) {
      left[pairs] = points[first];
      right[pairs] = points[first + 1];
      where[pairs++] = o;
    } else {
      out[o] = points[first];  // the odd point, carried
    }
  }
  batch_affine_add(left, right, 1, left, pairs, scratch);
  for (std::uint32_t i = 0; i < pairs; ++i) out[where[i]] = left[i];
}

}  // namespace zkfarm::cuda
