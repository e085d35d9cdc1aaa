// groth16_setup.h -- a single-party Groth16 trusted setup that writes
// snarkjs-compatible .zkey files. FOR TESTS AND BENCHMARKS ONLY.
//
// One process samples all the toxic waste (tau, alpha, beta, gamma, delta)
// and could forge proofs with it: never use these keys for anything of value.
// Production keys come from a ceremony (`snarkjs groth16 setup` plus
// contributions); zkfarm only reads them.
//
// What it computes, for an R1CS with nC constraints, nPublic public signals
// and nVars signals (wire 0 = 1), exactly as `snarkjs groth16 setup` lays it
// out (checked against snarkjs 0.7.6 src/zkey_new.js):
//   * domain n = the smallest power of two > nC + nPublic, w = Fr.w[log n];
//   * A gets one extra row per public signal s = 0..nPublic (row nC + s has a
//     1 at column s); these rows are also in the coefficient section;
//   * L_i(tau) = (tau^n - 1)/n * w^i/(tau - w^i) for every row i (one batch
//     inversion per chunk);
//   * u_s, v_s, w_s = sum over the A, B, C non-zeros of column s of
//     coefficient * L_row(tau);
//   * A_s = u_s G1, B1_s = v_s G1, B2_s = v_s G2,
//     IC_s = (beta u_s + alpha v_s + w_s)/gamma G1 for s <= nPublic,
//     C_s  = (beta u_s + alpha v_s + w_s)/delta G1 for s > nPublic;
//   * H_i = (tau^n - 1)/(g^n - 1) * L_i(tau/g) / delta G1 for i < n, where
//     g = odd_coset_generator (w_2n, or Fr.shift at the two-adicity): the
//     prover evaluates h = a*b - c on g<w>, where Z = x^n - 1 is the constant
//     g^n - 1, so these points absorb Z. For g = w_2n they are snarkjs's
//     "odd-index Lagrange points of the 2n domain", L^(2n)_(2i+1)(tau)/delta;
//   * coefficients stored as c*R^2 mod r (ZkeyCoefficients::encode_value).
// The scalars (groth16_setup_scalars) are computed first and are shared with
// the GPU setup (circuits/setup_device.h); here every point then goes
// through a FixedBaseTable (msm.h), on all cores.
// Section 10 holds a zero circuit hash and no contributions (the hash is a
// transcript of a powers-of-tau phase we do not have; snarkjs's prover and
// `zkey export verificationkey` do not read it).
//
// Measured on the shared 2-core dev VM (load average ~7 from other builds, so
// wall times are ~2x what an idle machine gives), PoRep-profile synthetic
// circuits, wall (process CPU):
//   2^16 constraints (domain 2^17):  BN254 9 s,            BLS12-381 18 s
//   2^20 constraints (domain 2^21):  BN254 83 s (48 s CPU), BLS12-381 175 s (74 s CPU)
// ~70% of it in the G1 fixed-base products (A, B1, IC/C, H: ~4.4M non-zero
// at 2^20) and ~25% in the 0.27M B2 products (G2 costs ~5x G1 per point).
//
// Thread safety: functions are reentrant; work is split with parallel_for.
#pragma once

#include <bit>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "circuits/synthetic_circuit.h"
#include "formats/binfile.h"
#include "formats/curve_id.h"
#include "formats/r1cs.h"
#include "formats/zkey.h"
#include "formats/zkey_coefficients.h"
#include "kernels/curves.h"
#include "kernels/groth16_prover.h"
#include "kernels/groth16_types.h"
#include "kernels/msm.h"
#include "kernels/ntt.h"
#include "kernels/parallel.h"
#include "kernels/random.h"
#include "kernels/stopwatch.h"

namespace zkfarm {

struct Groth16SetupOptions {
  // Derive the toxic waste from this seed (xoshiro256**, NOT secure) so that
  // tests and benchmarks are reproducible. Unset: the OS CSPRNG (getrandom).
  std::optional<std::uint64_t> seed;
};

// The secrets of a setup. Exposed so that tests can check the key against
// them; real ceremonies destroy them.
template <class Fr>
struct ToxicWaste {
  Fr tau, alpha, beta, gamma, delta;
};

// Wall-clock seconds per stage.
struct Groth16SetupTimings {
  double lagrange = 0;  // L_i(tau) over the domain
  double columns = 0;   // u, v, w per signal and the coefficient list
  double tables = 0;    // fixed-base tables for G1 and G2
  double g1 = 0;        // A, B1, IC, C, H points
  double g2 = 0;        // B2 points
  double total = 0;
};

// The size of an R1CS as the setup needs it.
struct R1csShape {
  std::uint64_t num_constraints = 0;
  std::uint32_t num_wires = 0;   // nVars, wire 0 included
  std::uint32_t num_public = 0;  // nPubOut + nPubIn (wire 0 excluded)
};

// snarkjs's domain size: the smallest power of two > nConstraints + nPublic.
// Throws std::invalid_argument if it exceeds 2^31 (32-bit file fields).
inline std::uint32_t groth16_domain_size(std::uint64_t num_constraints, std::uint32_t num_public) {
  const std::uint64_t rows = num_constraints + num_public + 1;  // incl. the appended public rows
  std::uint64_t n = 1;
  while (n < rows) n <<= 1;
  if (n > (std::uint64_t(1) << 31))
    throw std::invalid_argument("Groth16 domain of " + std::to_string(rows) + " rows exceeds 2^31");
  return std::uint32_t(n);
}

// A generated key: its header (kernels/groth16_types.h), owning its arrays.
template <class Curve>
struct Groth16SetupKey : Groth16KeyHeader<Curve> {
  using Fr = typename Curve::Fr;
  using G1Affine = typename Curve::G1Affine;
  using G2Affine = typename Curve::G2Affine;

  std::vector<ZkeyCoefficient<Fr>> coefficients;  // A then B per constraint, then the public rows
  std::vector<G1Affine> ic, a, b1, c, h;
  std::vector<G2Affine> b2;

  // Views for write_zkey / serialize_zkey (valid while *this lives).
  ZkeyWriteInput<Curve> write_input() const {
    ZkeyWriteInput<Curve> in;
    in.header() = this->header();
    in.coefficients = coefficients;
    in.ic = ic;
    in.a = a;
    in.b1 = b1;
    in.c = c;
    in.h = h;
    in.b2 = b2;
    return in;
  }
  // Views for groth16_prove (valid while *this lives).
  Groth16ProvingKey<Curve> proving_key() const {
    Groth16ProvingKey<Curve> pk;
    pk.header() = this->header();
    pk.a_points = a;
    pk.b1_points = b1;
    pk.b2_points = b2;
    pk.c_points = c;
    pk.h_points = h;
    return pk;
  }
  // The verifying key (copies).
  Groth16VerifyingKey<Curve> verifying_key() const { return this->header().verifying_key(ic); }
};

namespace groth16_setup_detail {

// out[i] = scale * x_i / (tau - x_i) with x_i = g * w^i, i < out.size(), in
// parallel (one inversion per chunk). The caller guarantees tau != x_i.
template <class Fr>
void scaled_coset_fractions(const Fr& g, const Fr& w, const Fr& tau, const Fr& scale, std::span<Fr> out) {
  constexpr std::size_t kChunk = 1 << 14;
  const std::size_t chunks = (out.size() + kChunk - 1) / kChunk;
  parallel_for(chunks, [&](std::size_t first, std::size_t last) {
    std::vector<Fr> x(kChunk), scratch(kChunk);
    for (std::size_t chunk = first; chunk < last; ++chunk) {
      const std::size_t begin = chunk * kChunk, end = std::min(out.size(), begin + kChunk);
      std::span<Fr> den = out.subspan(begin, end - begin);
      Fr xi = g * w.pow(std::uint64_t(begin));
      for (std::size_t i = 0; i < den.size(); ++i, xi *= w) {
        x[i] = xi;
        den[i] = tau - xi;
      }
      batch_inverse<Fr>(den, scratch);
      for (std::size_t i = 0; i < den.size(); ++i) den[i] = scale * x[i] * den[i];
    }
  });
}

// Window bits for a FixedBaseTable that will multiply `count` scalars:
// minimises windows * (count + 3 * 2^(c-1)): the mixed additions of the
// products plus the cost of building the table, where one entry costs about
// three product additions (measured CPU time, BN254 G1: 0.43 us per XYZZ
// mixed add, 1.1 us per table entry at c = 14). Tiny test circuits get small
// tables, 2^16 constraints c = 14, 2^20 and PoRep-scale setups c = 16.
template <class Fr>
unsigned fixed_base_window_bits(std::size_t count) {
  unsigned best = MsmConfig::kMinWindowBits;
  double best_cost = 0;
  for (unsigned c = MsmConfig::kMinWindowBits; c <= MsmConfig::kMaxWindowBits; ++c) {
    const double cost = double(Fr::kBits / c + 1) * (double(count) + 3.0 * double(std::size_t(1) << (c - 1)));
    if (c == MsmConfig::kMinWindowBits || cost < best_cost) {
      best = c;
      best_cost = cost;
    }
  }
  return best;
}

template <class Fr>
Fr sample_nonzero(std::optional<Xoshiro256>& rng) {
  for (;;) {
    Fr v = rng ? rng->template field_element<Fr>() : random_field_element<Fr>();
    if (!v.is_zero()) return v;
  }
}

}  // namespace groth16_setup_detail

// Samples toxic waste for a domain of size n: all five non-zero and tau
// outside both the domain and the prover's odd coset (so every Lagrange
// denominator is invertible). Seeded per options.seed, else from the OS.
template <class Fr>
ToxicWaste<Fr> sample_toxic_waste(std::uint32_t domain_size, const Groth16SetupOptions& options) {
  std::optional<Xoshiro256> rng;
  if (options.seed) rng.emplace(*options.seed);
  const unsigned log_n = unsigned(std::countr_zero(domain_size));
  const Fr g_n = odd_coset_generator<Fr>(log_n).pow(std::uint64_t(domain_size));
  ToxicWaste<Fr> t;
  for (;;) {
    t.tau = groth16_setup_detail::sample_nonzero<Fr>(rng);
    const Fr tau_n = t.tau.pow(std::uint64_t(domain_size));
    if (!tau_n.is_one() && tau_n != g_n) break;
  }
  t.alpha = groth16_setup_detail::sample_nonzero<Fr>(rng);
  t.beta = groth16_setup_detail::sample_nonzero<Fr>(rng);
  t.gamma = groth16_setup_detail::sample_nonzero<Fr>(rng);
  t.delta = groth16_setup_detail::sample_nonzero<Fr>(rng);
  return t;
}

// Every point of a key is [scalar] of a generator: these are the scalars,
// before any curve arithmetic. groth16_setup_from() multiplies them on the
// CPU, the GPU setup (circuits/setup_device.h) on the device; both start
// from the same Groth16SetupScalars, so their keys are byte-identical.
template <class Fr>
struct Groth16SetupScalars : Groth16KeySizes {
  ToxicWaste<Fr> toxic;
  // The coefficient section (A then B per constraint, then the public rows);
  // empty when not asked for (keys that never become a .zkey).
  std::vector<ZkeyCoefficient<Fr>> coefficients;
  std::vector<Fr> a;  // u_s: A_s = u_s G1                                  (num_vars)
  std::vector<Fr> b;  // v_s: B1_s = v_s G1, B2_s = v_s G2                  (num_vars)
  std::vector<Fr> k;  // (beta u_s + alpha v_s + w_s) / gamma for s <= nPublic (IC_s),
                      // / delta after (C_s)                               (num_vars)
  std::vector<Fr> h;  // H_i = h_i G1                                       (domain_size)

  std::span<const Fr> ic() const { return std::span<const Fr>(k).first(num_public + 1); }
  std::span<const Fr> c() const { return std::span<const Fr>(k).subspan(num_public + 1); }
  // Number of non-zero v_s (B1/B2 products that cost anything).
  std::size_t b_nonzero() const {
    std::size_t count = 0;
    for (const Fr& x : b) count += !x.is_zero();
    return count;
  }
};

namespace groth16_setup_detail {

// The whole scalar computation around a column step. accumulate(lagrange,
// out) must add coeff * lagrange[row] into out.a / out.b / out.k (A, B, C)
// for every non-zero of the circuit and, when with_coefficients, append the
// A and B non-zeros to out.coefficients in snarkjs's order. Validates the
// shape first (std::invalid_argument as groth16_setup_from).
template <class Fr, class Accumulate>
Groth16SetupScalars<Fr> setup_scalars_with(const R1csShape& shape, const ToxicWaste<Fr>& toxic,
                                           bool with_coefficients, Accumulate&& accumulate,
                                           Groth16SetupTimings* timings) {
  Stopwatch clock;
  if (std::uint64_t(shape.num_public) + 1 > shape.num_wires)
    throw std::invalid_argument("setup: " + std::to_string(shape.num_public) + " public signals need more than " +
                                std::to_string(shape.num_wires) + " wires");
  const std::uint32_t n = groth16_domain_size(shape.num_constraints, shape.num_public);
  const unsigned log_n = unsigned(std::countr_zero(n));
  if (log_n > two_adicity<Fr>())
    throw std::invalid_argument("setup: domain 2^" + std::to_string(log_n) + " exceeds the field's two-adicity");
  const Fr w = root_of_unity<Fr>(log_n);
  const Fr g = odd_coset_generator<Fr>(log_n);
  const Fr n_inv = Fr::from_u64(n).inverse();
  const Fr tau_n = toxic.tau.pow(std::uint64_t(n));
  const Fr g_n = g.pow(std::uint64_t(n));
  if (tau_n.is_one() || tau_n == g_n) throw std::invalid_argument("setup: tau lies in the domain or its coset");

  Groth16SetupScalars<Fr> out;
  out.num_vars = shape.num_wires;
  out.num_public = shape.num_public;
  out.domain_size = n;
  out.toxic = toxic;

  // 1. L_i(tau) for every row of the domain.
  std::vector<Fr> lagrange(n);
  scaled_coset_fractions(Fr::one(), w, toxic.tau, (tau_n - Fr::one()) * n_inv, std::span<Fr>(lagrange));
  const double lagrange_seconds = clock.lap();

  // 2. Column sums u, v, w and the coefficient list (A and B non-zeros),
  // then the public rows snarkjs appends to A.
  out.a.assign(shape.num_wires, Fr::zero());
  out.b.assign(shape.num_wires, Fr::zero());
  out.k.assign(shape.num_wires, Fr::zero());
  accumulate(std::span<const Fr>(lagrange), out);
  for (std::uint32_t s = 0; s <= shape.num_public; ++s) {
    const std::uint64_t row = shape.num_constraints + s;
    out.a[s] += lagrange[row];
    if (with_coefficients) out.coefficients.push_back({0, std::uint32_t(row), s, Fr::one()});
  }
  // k_s = (beta u_s + alpha v_s + w_s) / (gamma or delta).
  const Fr gamma_inv = toxic.gamma.inverse(), delta_inv = toxic.delta.inverse();
  parallel_for(shape.num_wires, [&](std::size_t begin, std::size_t end) {
    for (std::size_t s = begin; s < end; ++s)
      out.k[s] = (toxic.beta * out.a[s] + toxic.alpha * out.b[s] + out.k[s]) *
                 (s <= shape.num_public ? gamma_inv : delta_inv);
  });
  const double columns_seconds = clock.lap();

  // 3. H scalars, in the Lagrange buffer.
  const Fr h_scale = (tau_n - Fr::one()) * (tau_n - g_n) * ((g_n - Fr::one()) * g_n).inverse() * n_inv * delta_inv;
  scaled_coset_fractions(g, w, toxic.tau, h_scale, std::span<Fr>(lagrange));
  out.h = std::move(lagrange);
  if (timings) {
    timings->lagrange = lagrange_seconds + clock.lap();
    timings->columns = columns_seconds;
  }
  return out;
}

}  // namespace groth16_setup_detail

// The scalars of the circuit whose non-zeros for_each_nonzero enumerates.
// for_each_nonzero(f) must call f(constraint, matrix, wire, coeff) -- matrix
// 0 = A, 1 = B, 2 = C -- for every non-zero, constraints in increasing order
// and, within one, A before B (C anywhere): the coefficient section keeps
// that order, as snarkjs's does. Single-threaded over the non-zeros. Throws
// std::invalid_argument for a wire >= num_wires, a constraint >=
// num_constraints, num_public + 1 > num_wires, or a domain beyond the
// field's two-adicity. timings (if given) gets lagrange and columns.
template <class Fr, class ForEachNonzero>
Groth16SetupScalars<Fr> groth16_setup_scalars(const R1csShape& shape, ForEachNonzero&& for_each_nonzero,
                                              const ToxicWaste<Fr>& toxic, bool with_coefficients = true,
                                              Groth16SetupTimings* timings = nullptr) {
  auto accumulate = [&](std::span<const Fr> lagrange, Groth16SetupScalars<Fr>& out) {
    for_each_nonzero([&](std::uint64_t constraint, int matrix, std::uint32_t wire, const Fr& coeff) {
      if (wire >= shape.num_wires)
        throw std::invalid_argument("setup: constraint " + std::to_string(constraint) + " uses wire " +
                                    std::to_string(wire) + " >= nVars = " + std::to_string(shape.num_wires));
      if (constraint >= shape.num_constraints)
        throw std::invalid_argument("setup: constraint index " + std::to_string(constraint) + " >= " +
                                    std::to_string(shape.num_constraints));
      const Fr term = coeff.is_one() ? lagrange[constraint] : coeff * lagrange[constraint];
      std::vector<Fr>& column = matrix == 0 ? out.a : matrix == 1 ? out.b : out.k;
      column[wire] += term;
      if (with_coefficients && matrix < 2)
        out.coefficients.push_back({std::uint32_t(matrix), std::uint32_t(constraint), wire, coeff});
    });
  };
  return groth16_setup_detail::setup_scalars_with<Fr>(shape, toxic, with_coefficients, accumulate, timings);
}

// The scalars of a synthetic circuit, its blocks enumerated on all cores
// (the serial enumeration takes minutes at PoRep scale: ~0.5 us per
// constraint). A block's terms land in its own wires (written directly:
// blocks own disjoint wire ranges), in the public prefix (wire 0 and the
// public block's wires: per-chunk sums, added up afterwards) or, in a
// circuit that had other cross-block references, in a per-chunk spill list
// added serially. The result equals the generic groth16_setup_scalars() on
// the same circuit, coefficient order included (per-block lists are
// concatenated in block order).
template <class Fr>
Groth16SetupScalars<Fr> groth16_setup_scalars(const SyntheticCircuit<Fr>& circuit, const ToxicWaste<Fr>& toxic,
                                              bool with_coefficients = true,
                                              Groth16SetupTimings* timings = nullptr) {
  const R1csShape shape{circuit.num_constraints(), circuit.num_wires(), circuit.num_public()};
  auto accumulate = [&](std::span<const Fr> lagrange, Groth16SetupScalars<Fr>& out) {
    const std::uint64_t blocks = circuit.num_blocks();
    const std::uint32_t prefix = 1 + 2 * circuit.num_public();  // the public block's wires
    std::vector<std::vector<ZkeyCoefficient<Fr>>> block_coefficients(with_coefficients ? blocks : 0);
    struct Spill {
      int matrix;
      std::uint32_t wire;
      Fr term;
    };
    std::mutex merge_mutex;
    std::vector<Fr>* columns[3] = {&out.a, &out.b, &out.k};
    parallel_for(blocks, [&](std::size_t first, std::size_t last) {
      typename SyntheticCircuit<Fr>::Block block;
      std::vector<Fr> shared[3];
      for (auto& s : shared) s.assign(prefix, Fr::zero());
      std::vector<Spill> spills;
      for (std::size_t index = first; index < last; ++index) {
        circuit.generate_block(index, block);
        const std::uint64_t own_begin = block.first_wire, own_end = own_begin + block.values.size();
        for (std::size_t i = 0; i < block.num_constraints(); ++i) {
          const std::uint64_t row = block.first_constraint + i;
          for (int m = 0; m < 3; ++m)
            for (const auto& t : block.lc(i, m)) {
              const Fr term = t.coeff.is_one() ? lagrange[row] : t.coeff * lagrange[row];
              if (t.wire >= own_begin && t.wire < own_end) (*columns[m])[t.wire] += term;
              else if (t.wire < prefix) shared[m][t.wire] += term;
              else spills.push_back({m, t.wire, term});
              if (with_coefficients && m < 2)
                block_coefficients[index].push_back({std::uint32_t(m), std::uint32_t(row), t.wire, t.coeff});
            }
        }
      }
      std::lock_guard<std::mutex> lock(merge_mutex);
      for (int m = 0; m < 3; ++m)
        for (std::uint32_t wire = 0; wire < prefix; ++wire) (*columns[m])[wire] += shared[m][wire];
      for (const Spill& s : spills) (*columns[s.matrix])[s.wire] += s.term;
    });
    for (auto& list : block_coefficients) {
      out.coefficients.insert(out.coefficients.end(), list.begin(), list.end());
      list = {};
    }
  };
  return groth16_setup_detail::setup_scalars_with<Fr>(shape, toxic, with_coefficients, accumulate, timings);
}

// The core: builds the key from its scalars (groth16_setup_scalars) with
// fixed-base tables on all cores. Throws as groth16_setup_scalars.
template <class Curve>
Groth16SetupKey<Curve> groth16_setup_from_scalars(Groth16SetupScalars<typename Curve::Fr> scalars,
                                                  Groth16SetupTimings* timings = nullptr) {
  using Fr = typename Curve::Fr;
  using G1 = typename Curve::G1;
  using G2 = typename Curve::G2;
  Stopwatch clock;
  Groth16SetupKey<Curve> key;
  key.sizes() = scalars.sizes();
  key.coefficients = std::move(scalars.coefficients);
  const ToxicWaste<Fr>& toxic = scalars.toxic;

  // Fixed-base tables. Table sizes follow the number of non-trivial
  // products (a zero scalar costs no additions): G1 makes A and IC/C (one
  // per signal), B1 (non-zero v_s only) and H (n); G2 makes B2 (non-zero v_s
  // only) and three header points.
  const std::size_t v_nonzero = 3 + scalars.b_nonzero();
  const FixedBaseTable<Curve, G1> g1_table(
      Curve::g1_generator(), groth16_setup_detail::fixed_base_window_bits<Fr>(2 * std::size_t(scalars.num_vars) +
                                                                              v_nonzero + scalars.domain_size));
  const FixedBaseTable<Curve, G2> g2_table(Curve::g2_generator(),
                                           groth16_setup_detail::fixed_base_window_bits<Fr>(v_nonzero));
  const double tables = clock.lap();

  // G1 points.
  key.alpha1 = g1_table.mul(toxic.alpha).to_affine();
  key.beta1 = g1_table.mul(toxic.beta).to_affine();
  key.delta1 = g1_table.mul(toxic.delta).to_affine();
  key.a = g1_table.mul_many(std::span<const Fr>(scalars.a));
  key.b1 = g1_table.mul_many(std::span<const Fr>(scalars.b));
  key.ic = g1_table.mul_many(scalars.ic());
  key.c = g1_table.mul_many(scalars.c());
  scalars.a = {};
  scalars.k = {};
  key.h = g1_table.mul_many(std::span<const Fr>(scalars.h));
  scalars.h = {};
  const double g1 = clock.lap();

  // G2 points.
  key.beta2 = g2_table.mul(toxic.beta).to_affine();
  key.gamma2 = g2_table.mul(toxic.gamma).to_affine();
  key.delta2 = g2_table.mul(toxic.delta).to_affine();
  key.b2 = g2_table.mul_many(std::span<const Fr>(scalars.b));
  const double g2 = clock.lap();
  if (timings) {
    timings->tables = tables;
    timings->g1 = g1;
    timings->g2 = g2;
  }
  return key;
}

// Builds the key of the circuit whose non-zeros for_each_nonzero enumerates
// (contract and errors: groth16_setup_scalars).
template <class Curve, class ForEachNonzero>
Groth16SetupKey<Curve> groth16_setup_from(const R1csShape& shape, ForEachNonzero&& for_each_nonzero,
                                          const ToxicWaste<typename Curve::Fr>& toxic,
                                          Groth16SetupTimings* timings = nullptr) {
  Stopwatch total_clock;
  Groth16SetupTimings local;
  auto key = groth16_setup_from_scalars<Curve>(
      groth16_setup_scalars(shape, std::forward<ForEachNonzero>(for_each_nonzero), toxic, true, &local), &local);
  local.total = total_clock.lap();
  if (timings) *timings = local;
  return key;
}

// The scalars of an in-memory R1CS (e.g. from read_r1cs). Throws as
// groth16_setup_scalars, and std::invalid_argument for matrices whose row
// count is not num_constraints.
template <class Fr>
Groth16SetupScalars<Fr> groth16_setup_scalars(const R1cs<Fr>& r1cs, const ToxicWaste<Fr>& toxic,
                                              bool with_coefficients = true,
                                              Groth16SetupTimings* timings = nullptr) {
  const R1csShape shape{r1cs.num_constraints, r1cs.num_wires, r1cs.num_public()};
  const SparseMatrix<Fr>* ms[3] = {&r1cs.a, &r1cs.b, &r1cs.c};
  for (const auto* m : ms)
    if (m->num_rows() != r1cs.num_constraints)
      throw std::invalid_argument("setup: r1cs matrix has " + std::to_string(m->num_rows()) + " rows, expected " +
                                  std::to_string(r1cs.num_constraints));
  return groth16_setup_scalars(
      shape,
      [&](auto&& f) {
        for (std::uint32_t row = 0; row < r1cs.num_constraints; ++row)
          for (int m = 0; m < 3; ++m)
            for (std::uint64_t i = ms[m]->row_offsets[row]; i < ms[m]->row_offsets[row + 1]; ++i)
              f(row, m, ms[m]->cols[i], ms[m]->values[i]);
      },
      toxic, with_coefficients, timings);
}

// Setup for an in-memory R1CS (e.g. from read_r1cs). Throws as
// groth16_setup_scalars.
template <class Curve>
Groth16SetupKey<Curve> groth16_setup(const R1cs<typename Curve::Fr>& r1cs, const ToxicWaste<typename Curve::Fr>& toxic,
                                     Groth16SetupTimings* timings = nullptr) {
  Stopwatch total_clock;
  Groth16SetupTimings local;
  auto key = groth16_setup_from_scalars<Curve>(groth16_setup_scalars(r1cs, toxic, true, &local), &local);
  local.total = total_clock.lap();
  if (timings) *timings = local;
  return key;
}

// Setup straight from a synthetic circuit, without materialising its R1CS
// (benchmarks at PoRep scale; its blocks are enumerated on all cores).
// Throws as groth16_setup_from.
template <class Curve>
Groth16SetupKey<Curve> groth16_setup(const SyntheticCircuit<typename Curve::Fr>& circuit,
                                     const ToxicWaste<typename Curve::Fr>& toxic,
                                     Groth16SetupTimings* timings = nullptr) {
  Stopwatch total_clock;
  Groth16SetupTimings local;
  auto key = groth16_setup_from_scalars<Curve>(groth16_setup_scalars(circuit, toxic, true, &local), &local);
  local.total = total_clock.lap();
  if (timings) *timings = local;
  return key;
}

// What run_setup did.
struct Groth16SetupReport : Groth16KeySizes {  // the key's sizes
  CurveId curve = CurveId::kBn254;
  Groth16SetupTimings timings;
};

// The CLI's entry point: reads an .r1cs (BN254 or BLS12-381, from its
// prime), runs the setup with toxic waste per options and writes a snarkjs
// Groth16 .zkey to zkey_path atomically. Throws FormatError for a bad .r1cs,
// std::invalid_argument as groth16_setup_from, std::system_error on I/O.
inline Groth16SetupReport run_setup(const std::string& r1cs_path, const std::string& zkey_path,
                                    const Groth16SetupOptions& options = {}) {
  auto file = FileBytes::map(r1cs_path);
  Groth16SetupReport report;
  report.curve = r1cs_curve(file);
  auto run = [&](auto curve_tag) {
    using Curve = decltype(curve_tag);
    using Fr = typename Curve::Fr;
    const R1cs<Fr> r1cs = parse_r1cs<Fr>(file);
    const std::uint32_t n = groth16_domain_size(r1cs.num_constraints, r1cs.num_public());
    const auto key = groth16_setup<Curve>(r1cs, sample_toxic_waste<Fr>(n, options), &report.timings);
    write_zkey<Curve>(zkey_path, key.write_input());
    report.sizes() = key.sizes();
  };
  dispatch_curve(report.curve, run);
  return report;
}

}  // namespace zkfarm
