// groth16_prover.h -- the CPU Groth16 prover, compatible with snarkjs keys.
//
// prove() reads top to bottom as the algorithm:
//   1. check the witness (length, w[0] = 1, and -- when the circuit's C matrix
//      is known -- every constraint, naming the first that fails);
//   2. a = A.w, b = B.w over the PCE (sparse matrix-vector products), c = a o b
//      on the evaluation domain (C's rows are implied, as in snarkjs);
//   3. h = a*b - c on the odd coset w_2n * D (three iNTT/NTT pairs): the key's
//      H points are the odd-index Lagrange points of the 2n domain, so they
//      absorb the division by Z and h needs no division;
//   4. MSMs over the key's points with blinding factors r, s (C.w and H as
//      one MSM over both point sets, since only their sum is used):
//        A = alpha + sum w_i A_i + r delta
//        B = beta + sum w_i B2_i + s delta          (G2; B1 the same in G1)
//        C = sum_{private i} w_i C_i + sum h_j H_j + s A + r B1 - r s delta.
// r and s come from the OS CSPRNG unless fixed through ProveOptions (tests).
//
// Errors: ProveError (std::runtime_error) with a message naming what was
// wrong: witness length, w[0]; UnsatisfiedConstraint (a ProveError) naming
// the failing constraint.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/pce.h"
#include "kernels/curves.h"
#include "kernels/groth16_types.h"
#include "kernels/msm.h"
#include "kernels/ntt.h"
#include "kernels/parallel.h"
#include "kernels/random.h"
#include "kernels/stopwatch.h"

namespace zkfarm {

class ProveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The witness fails constraint row: (A.w) * (B.w) != C.w. Thrown by the CPU
// and the device provers when they check constraints.
class UnsatisfiedConstraint : public ProveError {
 public:
  explicit UnsatisfiedConstraint(std::size_t row)
      : ProveError("witness does not satisfy constraint " + std::to_string(row) + ": (A.w) * (B.w) != C.w"),
        row_(row) {}
  std::size_t row() const { return row_; }

 private:
  std::size_t row_;
};

// The proving key: its header (sizes and single points,
// kernels/groth16_types.h) and its queries, typically views into an mmapped
// .zkey.
template <class Curve>
struct Groth16ProvingKey : Groth16KeyHeader<Curve> {
  using G1Affine = typename Curve::G1Affine;
  using G2Affine = typename Curve::G2Affine;
  std::span<const G1Affine> a_points;   // num_vars
  std::span<const G1Affine> b1_points;  // num_vars
  std::span<const G2Affine> b2_points;  // num_vars
  std::span<const G1Affine> c_points;   // num_vars - num_public - 1
  std::span<const G1Affine> h_points;   // domain_size
};

template <class Fr>
struct ProveOptions {
  std::optional<Fr> r;  // fixed blinding factors, for reproducible tests
  std::optional<Fr> s;
  // When set, every constraint is checked before proving and the first
  // failing one is named (needs the circuit's C matrix).
  bool check_constraints = true;
};

// Wall-clock seconds per stage of one proof.
struct ProveTimings {
  double witness_check = 0;
  double spmv = 0;
  double ntt = 0;
  double msm = 0;
  double total = 0;
};

// Proves that witness satisfies the circuit described by key and pce.
// Returns the proof; throws ProveError on a witness of the wrong length, with
// w[0] != 1, or that fails a constraint (when pce has C and the check is on),
// and std::invalid_argument when key and pce disagree in size.
namespace groth16_detail {

// [k0] p0 + [k1] p1 + [k2] p2 by one joint double-and-add (Straus): the 7
// sums of subsets of {p0, p1, p2} first, then per bit one doubling and one
// addition of the subset the three bits select. ~254 doublings and ~222
// additions for 254-bit scalars, against ~762 doublings and ~234 additions
// for three separate scalar_mul calls.
template <class G, std::size_t M>
G joint_scalar_mul(const G& p0, const G& p1, const G& p2, const BigInt<M>& k0, const BigInt<M>& k1,
                   const BigInt<M>& k2) {
  G subset[8];
  subset[0] = G::identity();
  subset[1] = p0;
  subset[2] = p1;
  subset[3] = p0 + p1;
  subset[4] = p2;
  subset[5] = p0 + p2;
  subset[6] = p1 + p2;
  subset[7] = subset[3] + p2;
  const std::size_t bits = std::max({k0.num_bits(), k1.num_bits(), k2.num_bits()});
  G acc = G::identity();
  for (std::size_t i = bits; i-- > 0;) {
    acc = acc.dbl();
    const unsigned pick = unsigned(k0.bit(i)) | unsigned(k1.bit(i)) << 1 | unsigned(k2.bit(i)) << 2;
    if (pick) acc += subset[pick];
  }
  return acc;
}

}  // namespace groth16_detail

// The proof from the MSMs and the blinding factors r, s (Groth16's
// A = alpha + A.w + r delta, B = beta + B.w + s delta, C = C.w + H + s A +
// r B1 - r s delta). Shared by the CPU prover and the device prover
// (kernels/cuda/groth16_device.h), so the two cannot drift apart. KeyPoints
// is anything with alpha1, beta1, delta1, beta2 and delta2 in affine form
// (a Groth16KeyHeader: Groth16ProvingKey, cuda::DeviceProvingKey).
// With A0 = alpha + A.w and B0 = beta + B1.w, the C terms expand to
//   s A + r B1 - r s delta = s A0 + r B0 + r s delta,
// taken as one joint double-and-add: two G1 scalar multiplications in all
// (r delta for A, the joint one for C) where the formula as written takes
// five; ~0.3 ms less CPU per proof on BN254.
template <class Curve, class KeyPoints>
Groth16Proof<Curve> groth16_assemble(const KeyPoints& key, const typename Curve::G1& msm_a,
                                     const typename Curve::G1& msm_b1, const typename Curve::G2& msm_b2,
                                     const typename Curve::G1& msm_c, const typename Curve::G1& msm_h,
                                     const typename Curve::Fr& r, const typename Curve::Fr& s) {
  using G1 = typename Curve::G1;
  using G2 = typename Curve::G2;
  const auto r_int = r.to_canonical();
  const auto s_int = s.to_canonical();
  const G1 delta1 = G1::from_affine(key.delta1);
  G1 a0 = msm_a;
  a0 += G1::from_affine(key.alpha1);
  G1 b0 = msm_b1;
  b0 += G1::from_affine(key.beta1);
  G1 proof_a = a0;
  proof_a += delta1.scalar_mul(r_int);
  G2 proof_b = msm_b2;
  proof_b += G2::from_affine(key.beta2);
  proof_b += G2::from_affine(key.delta2).scalar_mul(s_int);
  G1 proof_c = msm_c;
  proof_c += msm_h;
  proof_c += groth16_detail::joint_scalar_mul(a0, b0, delta1, s_int, r_int, (r * s).to_canonical());
  return {proof_a.to_affine(), proof_b.to_affine(), proof_c.to_affine()};
}

template <class Curve>
Groth16Proof<Curve> groth16_prove(const Groth16ProvingKey<Curve>& key,
                                  const Pce<typename Curve::Fr>& pce,
                                  std::span<const typename Curve::Fr> witness,
                                  const ProveOptions<typename Curve::Fr>& options = {},
                                  ProveTimings* timings = nullptr) {
  using Fr = typename Curve::Fr;
  using G1 = typename Curve::G1;
  using G2 = typename Curve::G2;
  Stopwatch clock, total_clock;
  ProveTimings local;

  // 1. Witness checks.
  if (witness.size() != key.num_vars)
    throw ProveError("witness has " + std::to_string(witness.size()) +
                     " values but the circuit has " + std::to_string(key.num_vars) + " signals");
  if (!witness[0].is_one()) throw ProveError("witness[0] must be 1 (the constant signal)");
  const std::size_t n = key.domain_size;
  if (pce.num_rows() > n)
    throw std::invalid_argument("PCE has " + std::to_string(pce.num_rows()) +
                                " rows, more than the domain size " + std::to_string(n));
  if (pce.num_cols() != key.num_vars)
    throw std::invalid_argument("PCE has " + std::to_string(pce.num_cols()) +
                                " columns but the key has " + std::to_string(key.num_vars) +
                                " signals");
  local.witness_check = clock.lap();

  // 2. a = A.w, b = B.w, c = a o b on the domain (rows past the PCE are zero).
  std::vector<Fr> a(n, Fr::zero()), b(n, Fr::zero()), c(n);
  const std::size_t rows = pce.num_rows();
  spmv(pce.a(), witness, std::span<Fr>(a.data(), rows));
  spmv(pce.b(), witness, std::span<Fr>(b.data(), rows));
  if (options.check_constraints && pce.has_c()) {
    // C.w must equal (A.w) o (B.w) row by row; name the first row that fails.
    spmv(pce.c(), witness, std::span<Fr>(c.data(), rows));
    for (std::size_t i = 0; i < rows; ++i)
      if (a[i] * b[i] != c[i])
        throw UnsatisfiedConstraint(i);
  }
  parallel_for(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) c[i] = a[i] * b[i];
  });
  local.spmv = clock.lap();

  // 3. h = a*b - c on the odd coset.
  evaluations_to_odd_coset(std::span<Fr>(a));
  evaluations_to_odd_coset(std::span<Fr>(b));
  evaluations_to_odd_coset(std::span<Fr>(c));
  std::vector<Fr>& h = a;  // reuse a's storage
  parallel_for(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) h[i] = a[i] * b[i] - c[i];
  });
  b.clear();
  b.shrink_to_fit();
  c.clear();
  c.shrink_to_fit();
  local.ntt = clock.lap();

  // 4. The MSMs.
  const Fr r = options.r ? *options.r : random_field_element<Fr>();
  const Fr s = options.s ? *options.s : random_field_element<Fr>();
  const auto private_witness = witness.subspan(key.num_public + 1);
  G1 msm_a = msm<Curve, G1>(key.a_points, witness);
  G1 msm_b1 = msm<Curve, G1>(key.b1_points, witness);
  G2 msm_b2 = msm<Curve, G2>(key.b2_points, witness);
  // C.w and H enter the proof only as their sum: one Pippenger over both
  // point sets (msm_sum: one bucket reduction per window, not two).
  G1 msm_c_h = msm_sum<Curve, G1>(key.c_points, private_witness, key.h_points.first(n), std::span<const Fr>(h));

  Groth16Proof<Curve> proof =
      groth16_assemble<Curve>(key, msm_a, msm_b1, msm_b2, msm_c_h, G1::identity(), r, s);
  local.msm = clock.lap();
  local.total = total_clock.lap();
  if (timings) *timings = local;
  return proof;
}

}  // namespace zkfarm
