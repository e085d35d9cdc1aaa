// msm.h -- multi-scalar multiplication (Pippenger) and fixed-base tables.
//
// CPU reference for the GPU MSM and the CI backend of the prover and setup.
// Generic over the group: msm<Curve, G> with G = Curve::G1 or Curve::G2.
//
// msm(bases, scalars) = sum_i scalars[i] * bases[i], in four passes:
//  1. Classify (parallel, on Montgomery form, no conversion): skip scalar 0
//     and bases at infinity (0, 0); sum the bases of scalar 1 directly, per
//     chunk by a pairwise tree of batch-affine additions (Filecoin witnesses
//     are mostly 0/1, so this removes most points from Pippenger at one
//     cheap addition each).
//  2. Compact the remaining "dense" points: base index, canonical scalar
//     (converted from Montgomery once) and a bit mask of signed-digit carries.
//     The largest dense scalar's bit length bounds the number of windows, so
//     small witness values (bits, bytes, u64s) need proportionally fewer.
//  3. Pippenger on the dense points with signed c-bit digits
//     d in [-2^(c-1), 2^(c-1)) (top window: [0, 2^(c-1)]), hence 2^(c-1)
//     buckets per window and a negated base for negative digits. Work is
//     cut into tasks (window, point range); each task fills its own buckets
//     and reduces them by running sums (sum_b b*B_b = sum of the suffix
//     sums). Buckets are XYZZ (mixed addition 8M+2S) for c < 12; for c >= 12
//     they are affine and filled by batch-affine additions (~5M+1S plus a
//     3M share of one inversion per batch), with XYZZ overflow buckets for
//     the few points whose bucket is already busy in the current batch.
//     A small MSM of full-width scalars first splits each dense point by
//     the curve's endomorphism (glv.h: P and phi(P), scalars of <= 128
//     bits), which halves the windows and so the bucket sums, most of a
//     small MSM's work (MsmConfig::glv).
//  4. Combine windows from the top by c Jacobian doublings each (serial, ~c*W
//     doublings: negligible), and add the ones sum.
// Window size and the number of point ranges per window come from a cost
// model (MsmPlan::choose) that minimises the makespan on the pool's threads;
// MsmConfig can force them. msm_sum(bases, scalars, more_bases,
// more_scalars) runs the same passes over two point sets read as one (their
// MSMs' sum with one bucket reduction).
//
// FixedBaseTable: [k]G for many k with one G (trusted setup). Precomputes
// table[w][j] = (j+1) * 2^(c*w) * G (affine), so [k]G is W additions and no
// doublings; mul_many runs a chunk of scalars in lockstep with batch-affine
// additions (one inversion per chunk and window, outputs already affine).
//
// Thread safety: functions are reentrant; work is split with parallel_for.
// Not constant-time (see curve.h): no secret scalars go through here except
// blinding factors in a batch prover.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/curve.h"
#include "kernels/glv.h"
#include "kernels/parallel.h"

namespace zkfarm {

// Tuning knobs for msm() and FixedBaseTable.
struct MsmConfig {
  // Pippenger window bits; 0 = chosen by MsmPlan::choose from the number of
  // dense points and threads. Forced values must lie in [kMinWindowBits,
  // kMaxWindowBits].
  unsigned window_bits = 0;
  // Point ranges per window (>= 1); 0 = chosen by the cost model.
  std::size_t ranges_per_window = 0;

  // c >= 4 keeps the window count <= 64 for 255-bit scalars (carry mask in a
  // u64). c <= 16: 2^15 buckets, 12.6 MB per thread for BLS12-381 G2 XYZZ;
  // larger windows stop paying off below ~2^26 points anyway.
  static constexpr unsigned kMinWindowBits = 4;
  static constexpr unsigned kMaxWindowBits = 16;
  // Cost of a full XYZZ addition (12M+2S) relative to a mixed one (8M+2S),
  // used to weigh bucket reduction against bucket filling.
  static constexpr double kFullAddWeight = 1.4;
  // Points per classification chunk: big enough that the ones tree's 14
  // inversions per chunk and the bookkeeping vanish, small enough to balance
  // 128 threads at 2^22 points.
  static constexpr std::size_t kClassifyChunk = std::size_t(1) << 14;
  // Smallest classification chunk: below kClassifyChunk * threads points the
  // chunks shrink so that every thread gets some (a circom key of 8k signals
  // was one chunk, its ones sum on one core while the other waited); 512
  // still spreads a chunk's ~10 tree inversions over >= 500 additions.
  static constexpr std::size_t kClassifyMinChunk = 512;

  // FixedBaseTable window bits: 10 gives 26 windows x 512 entries for
  // 254/255-bit scalars (0.85 MB for BN254 G1, 2.5 MB for BLS12-381 G2), so
  // [k]G costs 26 additions against 32 with c = 8, while the table stays in
  // L2/L3.
  static constexpr unsigned kFixedBaseWindowBits = 10;
  // Pippenger tasks with c >= kBatchAffineMinWindowBits keep affine buckets
  // and add points in batches of min(kBatchAffineMax, buckets / 8) with one
  // shared inversion (batch_add_affine_by); below that the batches would be
  // too small to amortise the inversion (~380M for 254-bit Fq) and XYZZ
  // buckets are used. buckets / 8 keeps bucket collisions inside a batch
  // near 6%; 1024 caps the inversion share at ~0.4M per addition.
  static constexpr unsigned kBatchAffineMinWindowBits = 12;
  static constexpr std::size_t kBatchAffineMax = 1024;
  // Scalars per fixed-base chunk, which shares one inversion per window:
  // 2048 makes the inversion (~1.5 multiplications per bit) < 0.2M per
  // addition while the chunk's working set (accumulators, addends, two
  // field buffers: ~400 KB for BN254 G1) stays near L2.
  static constexpr std::size_t kFixedBaseChunk = 2048;

  // The GLV split (glv.h): each dense point P with scalar k becomes P and
  // phi(P) with scalars of at most 128 bits, so the bucket sums are paid
  // for half as many windows. kAuto splits up to kGlvMaxPoints dense points
  // whose widest scalar has more than kGlvMinScalarBits; kOff and kOn force
  // it (tests, benchmarks). Only groups with an endomorphism (a kGlvBeta in
  // their config) split; the others ignore this.
  enum class Glv : std::uint8_t { kAuto, kOff, kOn };
  Glv glv = Glv::kAuto;
  // Measured on the 2-core development VM (msm_benchmark BM_MsmGlv, random
  // scalars): split against unsplit G1 0.91-0.95x at 2^8-2^13 points on
  // both curves, 0.97-1.02x at 2^14, 1.01-1.07x at 2^16; G2 0.85-0.98x at
  // 2^8-2^13, 0.95-0.99x at 2^14-2^16. The cost model (MsmPlan) counts the
  // halved bucket sums but not what the split loses at large windows, so a
  // size bound decides, not the model.
  static constexpr std::size_t kGlvMaxPoints = std::size_t(1) << 13;
  // Scalars of up to ~192 bits (witness values of 64-bit limbs, say) need
  // fewer windows already; the split is for full-width ones.
  static constexpr std::size_t kGlvMinScalarBits = 192;

  // Throws std::invalid_argument unless window_bits is 0 or within
  // [kMinWindowBits, kMaxWindowBits].
  void validate() const {
    if (window_bits != 0 && (window_bits < kMinWindowBits || window_bits > kMaxWindowBits))
      throw std::invalid_argument("MsmConfig::window_bits must be 0 or in [" + std::to_string(kMinWindowBits) +
                                  ", " + std::to_string(kMaxWindowBits) + "], got " +
                                  std::to_string(window_bits));
  }
};

// The window layout Pippenger uses for one call (exposed for tests and the
// benchmark's report).
struct MsmPlan {
  unsigned window_bits = 0;   // c
  std::size_t windows = 0;    // W = floor(scalar_bits / c) + 1
  std::size_t ranges = 1;     // point ranges per window (tasks = W * ranges)

  static std::size_t windows_for(std::size_t scalar_bits, unsigned c) { return scalar_bits / c + 1; }

  // Returns the (c, ranges) minimising the estimated makespan, in mixed-add
  // units, of m dense points with scalar_bits-bit scalars on `threads`
  // threads:  ceil(W*R / T) * (ceil(m/R) + kFullAddWeight * 2^c)
  //           + c*W doublings + W*R window additions (serial combine).
  // Examples (254-bit scalars): T = 2: m = 2^10 -> c = 8, 2^16 -> 13,
  // 2^20 and up -> 16 (R = 1). T = 64: 2^16 -> c = 11, R = 5; 2^20 -> c = 16,
  // R = 4. Throws as MsmConfig::validate.
  static MsmPlan choose(std::size_t m, std::size_t scalar_bits, std::size_t threads, const MsmConfig& config) {
    config.validate();
    const unsigned c_lo = config.window_bits ? config.window_bits : MsmConfig::kMinWindowBits;
    const unsigned c_hi = config.window_bits ? config.window_bits : MsmConfig::kMaxWindowBits;
    threads = std::max<std::size_t>(threads, 1);
    scalar_bits = std::max<std::size_t>(scalar_bits, 1);
    MsmPlan best;
    double best_cost = std::numeric_limits<double>::infinity();
    for (unsigned c = c_lo; c <= c_hi; ++c) {
      const std::size_t w = windows_for(scalar_bits, c);
      const std::size_t r_hi = config.ranges_per_window ? config.ranges_per_window
                                                        : std::max<std::size_t>(1, std::min(m, 4 * threads));
      const std::size_t r_lo = config.ranges_per_window ? config.ranges_per_window : 1;
      for (std::size_t r = r_lo; r <= r_hi; ++r) {
        const double rounds = double((w * r + threads - 1) / threads);
        const double task = double((m + r - 1) / r) + MsmConfig::kFullAddWeight * double(std::size_t(1) << c);
        const double cost = rounds * task + double(c * w) + MsmConfig::kFullAddWeight * double(w * r);
        if (cost < best_cost) {
          best_cost = cost;
          best = MsmPlan{c, w, r};
        }
      }
    }
    return best;
  }
};

namespace msm_detail {

// Bits [pos, pos + c) of k (c <= 32); bits beyond the integer read as 0.
template <std::size_t N>
inline std::uint32_t window_bits(const BigInt<N>& k, std::size_t pos, unsigned c) {
  const std::size_t limb = pos / 64, shift = pos % 64;
  if (limb >= N) return 0;
  std::uint64_t v = k.limbs[limb] >> shift;
  if (shift + c > 64 && limb + 1 < N) v |= k.limbs[limb + 1] << (64 - shift);
  return std::uint32_t(v & ((std::uint64_t(1) << c) - 1));
}

// Bit w of the result is the carry into window w of the signed-digit
// recoding of k: d_w = raw_w + carry_w, and if w is not the top window and
// d_w >= 2^(c-1) then d_w -= 2^c and carry_(w+1) = 1. The top window keeps
// d in [0, 2^(c-1)]: it holds at most scalar_bits - c*(W-1) <= c-1 bits.
template <std::size_t N>
inline std::uint64_t carry_mask(const BigInt<N>& k, unsigned c, std::size_t windows) {
  std::uint64_t mask = 0, carry = 0;
  const std::uint32_t half = std::uint32_t(1) << (c - 1);
  for (std::size_t w = 0; w + 1 < windows; ++w) {
    std::uint32_t d = window_bits(k, w * c, c) + std::uint32_t(carry);
    carry = d >= half ? 1 : 0;
    mask |= carry << (w + 1);
  }
  return mask;
}

// Signed digit of window w given k's carry mask (see carry_mask).
template <std::size_t N>
inline std::int32_t signed_digit(const BigInt<N>& k, std::uint64_t carries, unsigned c, std::size_t w) {
  std::int32_t d = std::int32_t(window_bits(k, w * c, c)) + std::int32_t((carries >> w) & 1);
  if (w + 1 < 64) d -= std::int32_t((carries >> (w + 1)) & 1) << c;
  return d;
}

// acc(i) += addend(i) for i < n, all in affine coordinates, with one field
// inversion for the whole batch (Montgomery's trick): 5M + 1S per addition
// plus 3M for the shared inversion, against 8M + 2S for an XYZZ mixed
// addition that still needs converting back. acc(i) returns Affine&,
// addend(i) const Affine&; the acc(i) must be distinct objects. Handles the
// identity on either side, equal points (doubling) and opposite points. den
// and scratch are caller-owned buffers (resized here) so repeated calls do
// not allocate.
template <class Affine, class AccAt, class AddendAt, class Field = typename Affine::Field>
void batch_add_affine_by(std::size_t n, AccAt&& acc, AddendAt&& addend, std::vector<Field>& den,
                         std::vector<Field>& scratch) {
  den.resize(n);
  scratch.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Affine& p = acc(i);
    const Affine& q = addend(i);
    if (p.is_identity() || q.is_identity()) den[i] = Field::zero();
    else if (p.x != q.x) den[i] = q.x - p.x;
    else if (p.y == q.y) den[i] = p.y.dbl();  // doubling: y != 0 in prime-order groups
    else den[i] = Field::zero();              // p = -q
  }
  batch_inverse<Field>(den, scratch);
  for (std::size_t i = 0; i < n; ++i) {
    Affine& p = acc(i);
    const Affine& q = addend(i);
    if (q.is_identity()) continue;
    if (p.is_identity()) {
      p = q;
      continue;
    }
    if (den[i].is_zero()) {
      p = Affine::identity();
      continue;
    }
    Field lambda;
    if (p.x != q.x) {
      lambda = (q.y - p.y) * den[i];
    } else {
      Field xx = p.x.square();
      lambda = (xx.dbl() + xx) * den[i];
    }
    Field x3 = lambda.square() - p.x - q.x;
    p.y = lambda * (p.x - x3) - p.y;
    p.x = x3;
  }
}

// acc[i] += addend[i] for every i (spans of equal length); see above.
template <class Affine, class Field = typename Affine::Field>
void batch_add_affine(std::span<Affine> acc, std::span<const Affine> addend, std::vector<Field>& den,
                      std::vector<Field>& scratch) {
  batch_add_affine_by<Affine>(
      acc.size(), [&](std::size_t i) -> Affine& { return acc[i]; },
      [&](std::size_t i) -> const Affine& { return addend[i]; }, den, scratch);
}

// One Pippenger task: the window-w sum over dense points [begin, end),
// sum_b (b+1) * bucket_b. Holds its buffers so a thread reuses them across
// tasks.
template <class G>
class WindowTask {
 public:
  using Affine = typename G::Affine;
  using Field = typename Affine::Field;
  using Xyzz = XyzzPoint<typename G::Config>;

  explicit WindowTask(unsigned c) : c_(c), buckets_(std::size_t(1) << (c - 1)) {}

  // bases[i] is the i-th point (a span, or a Segments view of two); dense
  // point j is bases[index[j]] (index: an array, or Identity).
  template <class Bases, class Index, class Int>
  Xyzz run(const Bases& bases, Index index, const Int* scalar, const std::uint64_t* carries,
           std::size_t w, std::size_t begin, std::size_t end) {
    if (c_ >= MsmConfig::kBatchAffineMinWindowBits)
      return run_batch_affine(bases, index, scalar, carries, w, begin, end);
    std::vector<Xyzz>& buckets = xyzz_;
    buckets.assign(buckets_, Xyzz::identity());
    for (std::size_t j = begin; j < end; ++j) {
      const std::int32_t d = signed_digit(scalar[j], carries[j], c_, w);
      if (d > 0) buckets[std::size_t(d - 1)].add_mixed(bases[index[j]]);
      else if (d < 0) buckets[std::size_t(-d - 1)].add_mixed(-bases[index[j]]);
    }
    // sum_b (b+1) * buckets[b] as the sum of suffix sums.
    Xyzz running = Xyzz::identity(), sum = Xyzz::identity();
    for (std::size_t b = buckets_; b-- > 0;) {
      running.add(buckets[b]);
      sum.add(running);
    }
    return sum;
  }

 private:
  // Affine buckets filled by batch-affine additions of up to `batch` points
  // that hit distinct buckets; a point whose bucket already has an addition
  // pending in the current batch goes to an XYZZ overflow bucket instead
  // (rare: ~batch / (2 * buckets) of points), which keeps the batch size
  // and the cost bounded whatever the digit distribution.
  template <class Bases, class Index, class Int>
  Xyzz run_batch_affine(const Bases& bases, Index index, const Int* scalar,
                        const std::uint64_t* carries, std::size_t w, std::size_t begin, std::size_t end) {
    const std::size_t batch = std::min(MsmConfig::kBatchAffineMax, buckets_ / 8);
    affine_.assign(buckets_, Affine::identity());
    stamp_.assign(buckets_, 0);
    overflow_.clear();
    op_bucket_.clear();
    op_point_.clear();
    std::uint32_t current = 1;
    auto flush = [&] {
      batch_add_affine_by<Affine>(
          op_bucket_.size(), [&](std::size_t i) -> Affine& { return affine_[op_bucket_[i]]; },
          [&](std::size_t i) -> const Affine& { return op_point_[i]; }, den_, scratch_);
      op_bucket_.clear();
      op_point_.clear();
      ++current;
    };
    for (std::size_t j = begin; j < end; ++j) {
      const std::int32_t d = signed_digit(scalar[j], carries[j], c_, w);
      if (d == 0) continue;
      const std::uint32_t b = std::uint32_t(d > 0 ? d - 1 : -d - 1);
      const Affine& base = bases[index[j]];
      if (stamp_[b] == current) {
        if (overflow_.empty()) overflow_.assign(buckets_, Xyzz::identity());
        overflow_[b].add_mixed(d > 0 ? base : -base);
        continue;
      }
      stamp_[b] = current;
      op_bucket_.push_back(b);
      op_point_.push_back(d > 0 ? base : -base);
      if (op_bucket_.size() == batch) flush();
    }
    flush();
    Xyzz running = Xyzz::identity(), sum = Xyzz::identity();
    for (std::size_t b = buckets_; b-- > 0;) {
      running.add_mixed(affine_[b]);
      if (!overflow_.empty()) running.add(overflow_[b]);
      sum.add(running);
    }
    return sum;
  }

  unsigned c_;
  std::size_t buckets_;
  std::vector<Xyzz> xyzz_;
  std::vector<Affine> affine_;
  std::vector<Xyzz> overflow_;
  std::vector<std::uint32_t> stamp_;
  std::vector<std::uint32_t> op_bucket_;
  std::vector<Affine> op_point_;
  std::vector<Field> den_, scratch_;
};


// Two (bases, scalars) segments read as one sequence of points: index i
// below the first segment's size reads it, the rest the second. Lets one
// Pippenger run over points that lie in two arrays (the C and H queries of
// a Groth16 key) without copying them. Points are visited in index order
// within a chunk or task, so the segment test is a predictable branch.
template <class T>
struct Segments {
  std::span<const T> first, second;
  std::size_t size() const { return first.size() + second.size(); }
  const T& operator[](std::size_t i) const { return i < first.size() ? first[i] : second[i - first.size()]; }
};

// The index of points that are already dense and in order: j itself.
struct Identity {
  std::size_t operator[](std::size_t j) const { return j; }
};

// Passes 3 and 4 over the m dense points: bases[index[j]] with scalar[j].
template <class G, class Bases, class Index, class Int>
G pippenger(const Bases& bases, Index index, const Int* scalar, std::size_t m, const MsmPlan& plan) {
  using Xyzz = XyzzPoint<typename G::Config>;
  const unsigned c = plan.window_bits;
  const std::size_t windows = plan.windows, ranges = plan.ranges;

  std::vector<std::uint64_t> carries(m);
  parallel_for(m, [&](std::size_t begin, std::size_t end) {
    for (std::size_t j = begin; j < end; ++j) carries[j] = carry_mask(scalar[j], c, windows);
  });

  // Pass 3: one task per (window, range); window sums per task.
  std::vector<Xyzz> task_sum(windows * ranges);
  parallel_for(
      windows * ranges,
      [&](std::size_t first, std::size_t last) {
        WindowTask<G> task(c);
        for (std::size_t t = first; t < last; ++t) {
          const std::size_t w = t / ranges, r = t % ranges;
          task_sum[t] = task.run(bases, index, scalar, carries.data(), w, m * r / ranges, m * (r + 1) / ranges);
        }
      },
      windows * ranges);

  // Pass 4: Horner over windows from the top.
  G acc = G::identity();
  for (std::size_t w = windows; w-- > 0;) {
    for (unsigned i = 0; i < c; ++i) acc = acc.dbl();
    Xyzz window_sum = Xyzz::identity();
    for (std::size_t r = 0; r < ranges; ++r) window_sum.add(task_sum[w * ranges + r]);
    acc += window_sum.to_jacobian();
  }
  return acc;
}

// Whether m dense points whose widest scalar has scalar_bits bits are
// split (see MsmConfig::glv).
inline bool glv_pays(std::size_t m, std::size_t scalar_bits, const MsmConfig& config) {
  if (config.glv == MsmConfig::Glv::kOff || 2 * m > std::numeric_limits<std::uint32_t>::max()) return false;
  if (config.glv == MsmConfig::Glv::kOn) return true;
  return m <= MsmConfig::kGlvMaxPoints && scalar_bits > MsmConfig::kGlvMinScalarBits;
}

// Passes 3 and 4 after the GLV split: dense point j becomes +-P and
// +-phi(P) (the signs of k1 and k2 folded into the points), each with a
// scalar of at most ~128 bits.
template <class Curve, class G, class Bases, class Int>
G glv_pippenger(const Bases& bases, const std::vector<std::uint32_t>& index, const std::vector<Int>& scalar,
                std::size_t threads, const MsmConfig& config) {
  using Affine = typename G::Affine;
  const std::size_t m = index.size();
  std::vector<Affine> points(2 * m);
  std::vector<Int> halves(2 * m);
  parallel_for(m, [&](std::size_t begin, std::size_t end) {
    for (std::size_t j = begin; j < end; ++j) {
      const GlvSplit split = glv_split(scalar[j], Curve::kGlv);
      const Affine& p = bases[index[j]];
      const Affine q{glv_scale(p.x, G::Config::kGlvBeta), p.y};
      points[2 * j] = split.k1_negative ? -p : p;
      points[2 * j + 1] = split.k2_negative ? -q : q;
      halves[2 * j] = split.k1;
      halves[2 * j + 1] = split.k2;
    }
  });
  std::size_t bits = 1;
  for (const Int& h : halves) bits = std::max(bits, h.num_bits());
  const MsmPlan plan = MsmPlan::choose(2 * m, bits, threads, config);
  return pippenger<G>(std::span<const Affine>(points), Identity{}, halves.data(), 2 * m, plan);
}

// msm() over Segments: the four passes described at the top of this file.
template <class Curve, class G, class Bases, class Scalars>
G msm_segments(const Bases& bases, const Scalars& scalars, const MsmConfig& config) {
  using Affine = typename G::Affine;
  using Xyzz = XyzzPoint<typename G::Config>;
  using Int = typename Curve::Fr::Int;
  const std::size_t n = bases.size();
  if (n == 0) return G::identity();

  // Pass 1: ones sums and dense counts per chunk.
  const std::size_t per_thread = (n + parallel_threads() * ParallelConfig::kChunksPerThread - 1) /
                                 (parallel_threads() * ParallelConfig::kChunksPerThread);
  const std::size_t chunk =
      std::clamp(per_thread, MsmConfig::kClassifyMinChunk, MsmConfig::kClassifyChunk);
  const std::size_t chunks = (n + chunk - 1) / chunk;
  std::vector<Affine> ones(chunks);
  std::vector<std::size_t> dense_count(chunks + 1, 0);
  parallel_for(
      chunks,
      [&](std::size_t first, std::size_t last) {
        std::vector<Affine> pending;
        std::vector<typename Affine::Field> den, scratch;
        for (std::size_t c = first; c < last; ++c) {
          pending.clear();
          std::size_t count = 0;
          for (std::size_t i = c * chunk; i < std::min(n, (c + 1) * chunk); ++i) {
            if (scalars[i].is_zero() || bases[i].is_identity()) continue;
            if (scalars[i].is_one()) pending.push_back(bases[i]);
            else ++count;
          }
          // Pairwise tree sum with batch-affine additions: |pending| - 1
          // additions, one inversion per level (log2(kClassifyChunk) = 14).
          while (pending.size() > 1) {
            const std::size_t half = pending.size() / 2;
            msm_detail::batch_add_affine<Affine>(std::span<Affine>(pending.data(), half),
                                                 std::span<const Affine>(pending.data() + half, half), den, scratch);
            if (pending.size() % 2) pending[half] = pending.back();
            pending.resize(half + pending.size() % 2);
          }
          ones[c] = pending.empty() ? Affine::identity() : pending[0];
          dense_count[c + 1] = count;
        }
      },
      chunks);
  for (std::size_t c = 0; c < chunks; ++c) dense_count[c + 1] += dense_count[c];
  const std::size_t m = dense_count[chunks];
  Xyzz ones_sum = Xyzz::identity();
  for (const auto& o : ones) ones_sum.add_mixed(o);
  G result = ones_sum.to_jacobian();
  if (m == 0) return result;

  // Pass 2: compact dense points (index, canonical scalar), track max bits.
  std::vector<std::uint32_t> index(m);
  std::vector<Int> scalar(m);
  std::vector<std::size_t> chunk_bits(chunks, 0);
  parallel_for(
      chunks,
      [&](std::size_t first, std::size_t last) {
        for (std::size_t c = first; c < last; ++c) {
          std::size_t out = dense_count[c], bits = 0;
          for (std::size_t i = c * chunk; i < std::min(n, (c + 1) * chunk); ++i) {
            if (scalars[i].is_zero() || scalars[i].is_one() || bases[i].is_identity()) continue;
            index[out] = std::uint32_t(i);
            scalar[out] = scalars[i].to_canonical();
            bits = std::max(bits, scalar[out].num_bits());
            ++out;
          }
          chunk_bits[c] = bits;
        }
      },
      chunks);
  const std::size_t scalar_bits = *std::max_element(chunk_bits.begin(), chunk_bits.end());

  const std::size_t threads = parallel_threads();
  if constexpr (requires { G::Config::kGlvBeta; }) {
    if (glv_pays(m, scalar_bits, config)) return glv_pippenger<Curve, G>(bases, index, scalar, threads, config) + result;
  }
  return pippenger<G>(bases, index.data(), scalar.data(), m, MsmPlan::choose(m, scalar_bits, threads, config)) +
         result;
}

}  // namespace msm_detail

// Returns msm(bases, scalars) + msm(more_bases, more_scalars), computed as
// one Pippenger over both point sets: one bucket reduction per window
// instead of two, and a window size chosen for the larger total. The Groth16
// prover's C and H MSMs go into one sum (C = C.w + H + ...): on a 525-signal
// circom circuit (1,024-point H) that is ~13% fewer G1 additions for the two
// (~70k -> ~61k by the cost model's count), ~5% at 2^14. Same result as the
// two calls. Throws as msm() (the total must stay below 2^32 points).
template <class Curve, class G>
G msm_sum(std::span<const typename G::Affine> bases, std::span<const typename Curve::Fr> scalars,
          std::span<const typename G::Affine> more_bases, std::span<const typename Curve::Fr> more_scalars,
          const MsmConfig& config = {}) {
  static_assert(std::is_same_v<typename G::Scalar, typename Curve::Fr>, "G must be a group of Curve");
  static_assert(std::is_same_v<G, JacobianPoint<typename G::Config>>, "G must be a Jacobian point type");
  if (scalars.size() != bases.size())
    throw std::invalid_argument("msm: " + std::to_string(bases.size()) + " bases but " +
                                std::to_string(scalars.size()) + " scalars");
  if (more_scalars.size() != more_bases.size())
    throw std::invalid_argument("msm: " + std::to_string(more_bases.size()) + " bases but " +
                                std::to_string(more_scalars.size()) + " scalars");
  config.validate();
  const std::size_t n = bases.size() + more_bases.size();
  if (n > std::numeric_limits<std::uint32_t>::max())
    throw std::invalid_argument("msm: at most 2^32 - 1 points per call, got " + std::to_string(n));
  return msm_detail::msm_segments<Curve, G>(msm_detail::Segments<typename G::Affine>{bases, more_bases},
                                            msm_detail::Segments<typename Curve::Fr>{scalars, more_scalars},
                                            config);
}

// Returns sum_i scalars[i] * bases[i] in G (= Curve::G1 or Curve::G2), the
// identity for empty input. bases are affine, (0, 0) = infinity (skipped);
// they must be on the curve (not checked: .zkey sections are validated by
// the loader). Throws std::invalid_argument if the spans differ in length,
// if there are 2^32 or more points, or if config forces an invalid window.
template <class Curve, class G>
G msm(std::span<const typename G::Affine> bases, std::span<const typename Curve::Fr> scalars,
      const MsmConfig& config = {}) {
  return msm_sum<Curve, G>(bases, scalars, {}, {}, config);
}

// Precomputed multiples of one base point for fast [k]G over many k
// (trusted setup: turning millions of scalars into key points).
template <class Curve, class G>
class FixedBaseTable {
 public:
  using Affine = typename G::Affine;
  using Fr = typename Curve::Fr;
  using Xyzz = XyzzPoint<typename G::Config>;

  // Builds table[w][j] = (j+1) * 2^(c*w) * base for j < 2^(c-1), c =
  // window_bits. Throws std::invalid_argument unless window_bits is in
  // [MsmConfig::kMinWindowBits, kMaxWindowBits]. base may be the identity
  // (every product is then the identity).
  explicit FixedBaseTable(const Affine& base, unsigned window_bits = MsmConfig::kFixedBaseWindowBits)
      : c_(window_bits) {
    if (window_bits < MsmConfig::kMinWindowBits || window_bits > MsmConfig::kMaxWindowBits)
      throw std::invalid_argument("FixedBaseTable: window_bits must be in [" +
                                  std::to_string(MsmConfig::kMinWindowBits) + ", " +
                                  std::to_string(MsmConfig::kMaxWindowBits) + "], got " +
                                  std::to_string(window_bits));
    windows_ = MsmPlan::windows_for(Fr::kBits, c_);
    entries_ = std::size_t(1) << (c_ - 1);
    // 2^(c*w) * base for every window (serial: W*c doublings).
    std::vector<G> window_base(windows_);
    G p = G::from_affine(base);
    for (std::size_t w = 0; w < windows_; ++w) {
      window_base[w] = p;
      for (unsigned i = 0; i < c_; ++i) p = p.dbl();
    }
    std::vector<Affine> window_base_affine(windows_);
    G::batch_to_affine(window_base, window_base_affine);
    std::vector<G> multiples(windows_ * entries_);
    parallel_for(windows_, [&](std::size_t first, std::size_t last) {
      for (std::size_t w = first; w < last; ++w) {
        G acc = window_base[w];
        for (std::size_t j = 0; j < entries_; ++j) {
          multiples[w * entries_ + j] = acc;
          acc = acc.add_mixed(window_base_affine[w]);
        }
      }
    });
    table_.resize(multiples.size());
    parallel_for(windows_, [&](std::size_t first, std::size_t last) {
      std::span<const G> in(multiples.data() + first * entries_, (last - first) * entries_);
      G::batch_to_affine(in, std::span<Affine>(table_.data() + first * entries_, in.size()));
    });
  }

  // Returns [k] * base in Jacobian form.
  G mul(const Fr& k) const { return accumulate(k.to_canonical()).to_jacobian(); }

  // out[i] = [scalars[i]] * base in affine form ((0, 0) for the identity),
  // in parallel. Each chunk of kFixedBaseChunk scalars advances window by
  // window with batch-affine additions (one inversion per chunk and window),
  // so results come out affine without a final conversion.
  // Throws std::invalid_argument if the spans differ in length.
  void mul_many(std::span<const Fr> scalars, std::span<Affine> out) const {
    if (scalars.size() != out.size())
      throw std::invalid_argument("FixedBaseTable::mul_many: " + std::to_string(scalars.size()) +
                                  " scalars but " + std::to_string(out.size()) + " outputs");
    using Field = typename Affine::Field;
    const std::size_t chunk = MsmConfig::kFixedBaseChunk;
    const std::size_t chunks = (scalars.size() + chunk - 1) / chunk;
    parallel_for(
        chunks,
        [&](std::size_t first, std::size_t last) {
          std::vector<typename Fr::Int> k(chunk);
          std::vector<std::uint64_t> carries(chunk);
          std::vector<Affine> addend(chunk);
          std::vector<Field> den, scratch;
          for (std::size_t c = first; c < last; ++c) {
            const std::size_t begin = c * chunk, size = std::min(scalars.size(), begin + chunk) - begin;
            std::span<Affine> acc = out.subspan(begin, size);
            for (std::size_t i = 0; i < size; ++i) {
              k[i] = scalars[begin + i].to_canonical();
              carries[i] = msm_detail::carry_mask(k[i], c_, windows_);
              acc[i] = Affine::identity();
            }
            for (std::size_t w = 0; w < windows_; ++w) {
              for (std::size_t i = 0; i < size; ++i)
                addend[i] = entry(w, msm_detail::signed_digit(k[i], carries[i], c_, w));
              msm_detail::batch_add_affine(acc, std::span<const Affine>(addend.data(), size), den, scratch);
            }
          }
        },
        chunks);
  }

  // Convenience form returning a new vector; throws as mul_many above.
  std::vector<Affine> mul_many(std::span<const Fr> scalars) const {
    std::vector<Affine> out(scalars.size());
    mul_many(scalars, out);
    return out;
  }

  unsigned window_bits() const { return c_; }

 private:
  // d * 2^(c*w) * base for a signed digit d (identity for 0).
  Affine entry(std::size_t w, std::int32_t d) const {
    if (d > 0) return table_[w * entries_ + std::size_t(d - 1)];
    if (d < 0) return -table_[w * entries_ + std::size_t(-d - 1)];
    return Affine::identity();
  }

  Xyzz accumulate(const typename Fr::Int& k) const {
    const std::uint64_t carries = msm_detail::carry_mask(k, c_, windows_);
    Xyzz acc = Xyzz::identity();
    for (std::size_t w = 0; w < windows_; ++w) {
      const std::int32_t d = msm_detail::signed_digit(k, carries, c_, w);
      if (d > 0) acc.add_mixed(table_[w * entries_ + std::size_t(d - 1)]);
      else if (d < 0) acc.add_mixed(-table_[w * entries_ + std::size_t(-d - 1)]);
    }
    return acc;
  }

  unsigned c_;
  std::size_t windows_ = 0;
  std::size_t entries_ = 0;
  std::vector<Affine> table_;  // windows_ x entries_, row-major
};

}  // namespace zkfarm
