// synthetic_circuit.h -- satisfiable synthetic R1CS circuits with the shape of
// a Filecoin PoRep-32G partition, for tests and benchmarks.
//
// A real partition (130M constraints) cannot be shipped with the repository,
// so benchmarks run on circuits that have its statistics instead:
//   * 328 public inputs (nPubIn = 328, nPubOut = 0, nPrvIn = 0);
//   * non-zeros per constraint: A ~ 2.4, B = 1.0, C ~ 2.2;
//   * about 25% of the auxiliary signals appear in B (this is what makes the
//     B-side MSMs ~4x smaller than the A side);
//   * most witness values are 0 or 1 (SHA-256-style bit gadgets), a few are
//     packed words and a few are random full-field values.
//
// Structure. Wire 0 is the constant 1, wires 1..P the public inputs, then P
// private copies of them (one constraint each: pub * 1 = copy), then blocks
// of kBlockConstraints constraints and kBlockWires fresh wires each. A block is
// a fixed mix of gadgets in a per-block random order:
//   bool   (1 - b) * b = 0                 A 2  B 1  C 0   (b is a fresh bit)
//   xor    (2a) * b = a + b - c            A 1  B 1  C 3
//   and    a * b = c                       A 1  B 1  C 1
//   ch     (y - z) * x = ch - z            A 2  B 1  C 2   ch = x ? y : z
//   maj    (y + z - 2yz) * x = maj - yz    A 3  B 1  C 2   (yz from an and)
//   lin3   (a + b + c) * 1 = d             A 3  B 1  C 1
//   pack   (sum 2^i b_i) * 1 = x           A k  B 1  C 1   (k = 32, 32, 27)
//   unpack x * 1 = sum 2^i b_i             A 1  B 1  C 32
//   fmul   x * y = z                       A 1  B 1  C 1   (x, y random in Fr)
// B operands are drawn from the block's boolean-constrained bits (which sit in
// B through their own bool constraint) plus kFreshBOperands other bits, which
// puts ~25% of the wires in B. Operands never leave their block, so every
// block is a pure function of (seed, block index): blocks are generated in
// parallel and streamed to disk, and no structure of the size of the circuit
// is ever held in memory (a 130M-constraint .r1cs is ~28 GB).
//
// Measured at 2^20 constraints (seed 7): A 2.400, B 1.000, C 2.190 non-zeros
// per row, 25.4% of the auxiliary wires in B, 91.7% of witness values 0 or 1,
// 1.02 wires per constraint. Generation + writing both files runs at ~0.5M
// constraints/s on the shared 2-core VM (2^22 BN254: 8.4 s, 0.93 GB .r1cs).
//
// The last block may be cut short to hit the requested constraint count
// exactly; its wires all exist (those of cut gadgets are simply unconstrained)
// so nVars depends only on the number of blocks.
//
// Determinism: xoshiro256** seeded through splitmix64 from (seed, block); the
// same options give byte-identical files on every machine and thread count.
//
// Thread safety: SyntheticCircuit is immutable after construction; all const
// members may be called concurrently.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "formats/binfile.h"
#include "formats/curve_id.h"
#include "formats/r1cs.h"
#include "formats/wtns.h"
#include "kernels/curves.h"
#include "kernels/field.h"
#include "kernels/parallel.h"
#include "kernels/prng.h"

namespace zkfarm {

struct SyntheticCircuitOptions {
  std::uint64_t num_constraints = std::uint64_t(1) << 16;
  std::uint32_t num_public = 328;  // PoRep-32G partition
  std::uint64_t seed = 1;
};

// One non-zero of a linear combination.
template <class Fr>
struct SyntheticTerm {
  std::uint32_t wire;
  Fr coeff;
};

// The constraints of one block and the values of the wires it introduces.
template <class Fr>
struct SyntheticBlock {
  std::uint64_t first_constraint = 0;
  std::uint32_t first_wire = 0;
  std::vector<SyntheticTerm<Fr>> terms;
  // lc_starts[3*k + m] .. lc_starts[3*k + m + 1] are the terms of matrix m
  // (0 = A, 1 = B, 2 = C) of the block's k-th constraint.
  std::vector<std::uint32_t> lc_starts;
  // Witness values of wires first_wire, first_wire + 1, ...
  std::vector<Fr> values;

  std::size_t num_constraints() const { return lc_starts.empty() ? 0 : (lc_starts.size() - 1) / 3; }
  std::span<const SyntheticTerm<Fr>> lc(std::size_t constraint, int matrix) const {
    std::size_t k = 3 * constraint + std::size_t(matrix);
    return std::span<const SyntheticTerm<Fr>>(terms.data() + lc_starts[k], lc_starts[k + 1] - lc_starts[k]);
  }
};

// Non-zero counts of a circuit (for profile checks and reports).
struct R1csProfile {
  std::uint64_t num_constraints = 0;
  std::uint64_t num_aux = 0;          // wires after the public ones
  std::uint64_t nnz[3] = {0, 0, 0};   // A, B, C
  std::uint64_t aux_in_b = 0;         // distinct auxiliary wires with a B non-zero
  std::uint64_t witness_zero_or_one = 0;
  std::uint64_t num_wires = 0;
  double per_row(int matrix) const { return num_constraints ? double(nnz[matrix]) / double(num_constraints) : 0; }
  double aux_in_b_fraction() const { return num_aux ? double(aux_in_b) / double(num_aux) : 0; }
  double binary_witness_fraction() const { return num_wires ? double(witness_zero_or_one) / double(num_wires) : 0; }
};

template <class Fr>
class SyntheticCircuit {
 public:
  using Term = SyntheticTerm<Fr>;
  using Block = SyntheticBlock<Fr>;

  // The fixed gadget mix of one block (see the file comment).
  static constexpr int kBools = 22, kXors = 47, kAnds = 7, kChs = 8, kMajs = 8, kLin3s = 3, kFmuls = 1;
  static constexpr int kPackWidths[3] = {32, 32, 27};
  static constexpr int kUnpackWidth = 32;
  static constexpr int kFreshBOperands = 3;
  static constexpr std::uint32_t kBlockConstraints =
      kBools + kXors + kAnds + kChs + kMajs + kLin3s + kFmuls + 3 + 1;  // 100
  static constexpr std::uint32_t kBlockWires = kBlockConstraints + 2 * kFmuls;  // fmul adds x, y, z

  // Throws std::invalid_argument when the circuit would not fit the formats'
  // 32-bit wire and constraint indices.
  explicit SyntheticCircuit(const SyntheticCircuitOptions& options) : options_(options) {
    if (options.num_constraints == 0) throw std::invalid_argument("synthetic circuit needs at least one constraint");
    num_public_constraints_ = std::min<std::uint64_t>(options.num_constraints, options.num_public);
    std::uint64_t rest = options.num_constraints - num_public_constraints_;
    num_blocks_ = 1 + (rest + kBlockConstraints - 1) / kBlockConstraints;
    std::uint64_t wires = 1 + 2 * std::uint64_t(options.num_public) + (num_blocks_ - 1) * kBlockWires;
    // Leave room below 2^32 for the setup's extra rows (nConstraints + nPublic + 1).
    if (wires >= (std::uint64_t(1) << 32) ||
        options.num_constraints + options.num_public + 1 >= (std::uint64_t(1) << 32))
      throw std::invalid_argument("synthetic circuit of " + std::to_string(options.num_constraints) +
                                  " constraints exceeds 32-bit indices");
    num_wires_ = std::uint32_t(wires);
    one_ = Fr::one();
    minus_one_ = -one_;
    Fr p = one_;
    for (auto& c : pow2_) {
      c = p;
      p = p + p;
    }
    minus_two_ = -pow2_[1];
  }

  const SyntheticCircuitOptions& options() const { return options_; }
  std::uint64_t num_constraints() const { return options_.num_constraints; }
  std::uint32_t num_public() const { return options_.num_public; }
  std::uint32_t num_wires() const { return num_wires_; }  // nVars, wire 0 included
  std::uint64_t num_blocks() const { return num_blocks_; }

  // Generates block k (0 = the public inputs and their copies) into out,
  // reusing out's storage. Throws std::out_of_range if k >= num_blocks().
  void generate_block(std::uint64_t k, Block& out) const {
    if (k >= num_blocks_) throw std::out_of_range("synthetic block index out of range");
    out.terms.clear();
    out.lc_starts.assign(1, 0);
    out.values.clear();
    if (k == 0) {
      public_block(out);
    } else {
      gadget_block(k, out);
    }
  }

  // Calls visit(constraint_index, a, b, c) for every constraint in order, each
  // LC a span<const Term>. Single-threaded; the spans die after the call.
  template <class Visit>
  void for_each_constraint(Visit&& visit) const {
    Block block;
    for (std::uint64_t k = 0; k < num_blocks_; ++k) {
      generate_block(k, block);
      for (std::size_t i = 0; i < block.num_constraints(); ++i)
        visit(block.first_constraint + i, block.lc(i, 0), block.lc(i, 1), block.lc(i, 2));
    }
  }

  // The full witness (num_wires() values, witness[0] = 1), computed in parallel.
  std::vector<Fr> witness() const {
    std::vector<Fr> w(num_wires_);
    parallel_for(num_blocks_, [&](std::size_t begin, std::size_t end) {
      Block block;
      for (std::size_t k = begin; k < end; ++k) {
        generate_block(k, block);
        std::copy(block.values.begin(), block.values.end(), w.begin() + block.first_wire);
      }
    });
    return w;
  }

  // Returns the index of the first constraint the witness violates, or nullopt
  // when all hold. Throws std::invalid_argument on a witness of wrong length.
  std::optional<std::uint64_t> first_unsatisfied(std::span<const Fr> witness) const {
    if (witness.size() != num_wires_)
      throw std::invalid_argument("witness has " + std::to_string(witness.size()) + " values, circuit has " +
                                  std::to_string(num_wires_) + " wires");
    std::vector<std::uint64_t> first(num_blocks_, kNone);
    parallel_for(num_blocks_, [&](std::size_t begin, std::size_t end) {
      Block block;
      for (std::size_t k = begin; k < end; ++k) {
        generate_block(k, block);
        for (std::size_t i = 0; i < block.num_constraints(); ++i) {
          Fr a = eval(block.lc(i, 0), witness), b = eval(block.lc(i, 1), witness), c = eval(block.lc(i, 2), witness);
          if (a * b != c) {
            first[k] = block.first_constraint + i;
            break;
          }
        }
      }
    });
    for (auto f : first)
      if (f != kNone) return f;
    return std::nullopt;
  }

  // Measures the non-zero profile (and, given the witness, the share of 0/1
  // values). Memory: one bit per wire.
  R1csProfile profile(std::span<const Fr> witness = {}) const {
    R1csProfile p;
    p.num_constraints = num_constraints();
    p.num_wires = num_wires_;
    p.num_aux = num_wires_ - 1 - options_.num_public;
    std::vector<bool> in_b(num_wires_, false);
    for_each_constraint([&](std::uint64_t, auto a, auto b, auto c) {
      p.nnz[0] += a.size();
      p.nnz[1] += b.size();
      p.nnz[2] += c.size();
      for (const Term& t : b) in_b[t.wire] = true;
    });
    for (std::uint32_t i = 1 + options_.num_public; i < num_wires_; ++i) p.aux_in_b += in_b[i];
    for (const Fr& v : witness) p.witness_zero_or_one += (v.is_zero() || v.is_one());
    return p;
  }

  // The whole circuit as an in-memory R1cs (for tests and small circuits:
  // ~36 bytes per non-zero).
  R1cs<Fr> to_r1cs() const {
    R1cs<Fr> r;
    r.num_wires = num_wires_;
    r.num_pub_in = options_.num_public;
    r.num_labels = num_wires_;
    r.num_constraints = std::uint32_t(options_.num_constraints);
    SparseMatrix<Fr>* ms[3] = {&r.a, &r.b, &r.c};
    std::vector<std::uint32_t> cols;
    std::vector<Fr> values;
    for_each_constraint([&](std::uint64_t, auto a, auto b, auto c) {
      const std::span<const Term> lcs[3] = {a, b, c};
      for (int m = 0; m < 3; ++m) {
        cols.clear();
        values.clear();
        for (const Term& t : lcs[m]) {
          cols.push_back(t.wire);
          values.push_back(t.coeff);
        }
        ms[m]->add_row(cols, values);
      }
    });
    return r;
  }

  static Fr eval(std::span<const Term> lc, std::span<const Fr> witness) {
    Fr acc = Fr::zero();
    for (const Term& t : lc) acc += t.coeff * witness[t.wire];
    return acc;
  }

 private:
  static constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();
  enum Gadget : std::uint8_t { kBool, kXor, kAnd, kCh, kMaj, kLin3, kFmul, kPack, kUnpack };

  static std::uint64_t block_seed(std::uint64_t seed, std::uint64_t k) {
    std::uint64_t s = seed ^ (k * 0xd1b54a32d192ed03ULL);
    return splitmix64(s);
  }

  // Emits one LC and closes it.
  struct Emitter {
    Block& out;
    void term(std::uint32_t wire, const Fr& coeff) { out.terms.push_back(Term{wire, coeff}); }
    void close() { out.lc_starts.push_back(std::uint32_t(out.terms.size())); }
  };

  void public_block(Block& out) const {
    const std::uint32_t np = options_.num_public;
    out.first_constraint = 0;
    out.first_wire = 0;
    out.values.resize(1 + 2 * std::size_t(np));
    out.values[0] = one_;
    Xoshiro256 rng(block_seed(options_.seed, 0));
    for (std::uint32_t j = 1; j <= np; ++j) {
      // Like PoRep's inputs: a few commitments (full field), many challenge
      // indices (small integers).
      Fr v = (j % 8 == 1) ? rng.field_element<Fr>() : Fr::from_u64(rng.below(std::uint64_t(1) << 27));
      out.values[j] = v;
      out.values[np + j] = v;
    }
    Emitter e{out};
    for (std::uint64_t j = 1; j <= num_public_constraints_; ++j) {
      e.term(std::uint32_t(j), one_);  // A: pub_j
      e.close();
      e.term(0, one_);  // B: 1
      e.close();
      e.term(std::uint32_t(np + j), one_);  // C: copy_j
      e.close();
    }
  }

  void gadget_block(std::uint64_t k, Block& out) const {
    const std::uint64_t first_constraint = num_public_constraints_ + (k - 1) * kBlockConstraints;
    const std::uint64_t count = std::min<std::uint64_t>(kBlockConstraints, options_.num_constraints - first_constraint);
    out.first_constraint = first_constraint;
    out.first_wire = std::uint32_t(1 + 2 * std::uint64_t(options_.num_public) + (k - 1) * kBlockWires);
    Xoshiro256 rng(block_seed(options_.seed, k));

    // Gadget order: bools, one and (so maj has a product to use), the middle
    // gadgets shuffled, then the packs (which need many distinct bits).
    std::array<Gadget, kBlockConstraints> order;
    std::size_t n = 0;
    for (int i = 0; i < kBools; ++i) order[n++] = kBool;
    order[n++] = kAnd;
    const std::size_t middle = n;
    for (int i = 0; i < kXors; ++i) order[n++] = kXor;
    for (int i = 1; i < kAnds; ++i) order[n++] = kAnd;
    for (int i = 0; i < kChs; ++i) order[n++] = kCh;
    for (int i = 0; i < kMajs; ++i) order[n++] = kMaj;
    for (int i = 0; i < kLin3s; ++i) order[n++] = kLin3;
    for (int i = 0; i < kFmuls; ++i) order[n++] = kFmul;
    const std::size_t middle_end = n;
    for (std::size_t i = middle_end - 1; i > middle; --i) std::swap(order[i], order[middle + rng.below(i - middle + 1)]);
    for (int i = 0; i < 3; ++i) order[n++] = kPack;
    order[n++] = kUnpack;
    // The last kFreshBOperands gadgets with a variable B operand take it from
    // bits that are not boolean-constrained (so not yet in B).
    std::array<bool, kBlockConstraints> fresh_b{};
    for (std::size_t i = middle_end, left = kFreshBOperands; i-- > middle && left > 0;)
      if (order[i] == kXor || order[i] == kAnd || order[i] == kCh || order[i] == kMaj) {
        fresh_b[i] = true;
        --left;
      }

    // Bits of this block: wires and values (all 0/1).
    std::array<std::uint32_t, kBlockWires> bits, bools, derived;
    std::array<std::uint8_t, kBlockWires> bit_value{};  // indexed by wire - first_wire
    std::size_t num_bits = 0, num_bools = 0, num_derived = 0;
    struct AndTriple {
      std::uint32_t y, z, yz;
    };
    std::array<AndTriple, kAnds> ands;
    std::size_t num_ands = 0;

    std::uint32_t next_wire = out.first_wire;
    out.values.reserve(kBlockWires);
    Emitter e{out};
    auto value_of = [&](std::uint32_t w) -> std::uint64_t { return bit_value[w - out.first_wire]; };
    auto new_bit = [&](std::uint64_t v, bool is_bool) {
      std::uint32_t w = next_wire++;
      bit_value[w - out.first_wire] = std::uint8_t(v);
      out.values.push_back(v ? one_ : Fr::zero());
      bits[num_bits++] = w;
      if (is_bool) bools[num_bools++] = w;
      else derived[num_derived++] = w;
      return w;
    };
    auto new_value = [&](const Fr& v) {
      out.values.push_back(v);
      return next_wire++;
    };
    auto any_bit = [&] { return bits[rng.below(num_bits)]; };
    auto any_bit_except = [&](std::uint32_t other) {
      for (;;) {
        std::uint32_t w = any_bit();
        if (w != other) return w;
      }
    };
    // B operands: boolean-constrained bits (already in B), or at the marked
    // positions a derived bit (which thereby joins B). Never equal to other.
    auto b_operand = [&](std::size_t position, std::uint32_t other) {
      const bool fresh = fresh_b[position] && num_derived >= 2;
      for (;;) {
        std::uint32_t w = fresh ? derived[rng.below(num_derived)] : bools[rng.below(num_bools)];
        if (w != other) return w;
      }
    };
    // Emits sum 2^i b_i over `width` distinct random bits; returns the value.
    auto packed_bits = [&](int width) {
      std::array<std::uint32_t, kBlockWires> pool;
      std::copy(bits.begin(), bits.begin() + num_bits, pool.begin());
      std::uint64_t value = 0;
      for (int i = 0; i < width; ++i) {
        std::size_t pick = i + rng.below(num_bits - i);
        std::swap(pool[i], pool[pick]);
        e.term(pool[i], pow2_[i]);
        value |= value_of(pool[i]) << i;
      }
      return value;
    };

    for (std::size_t pos = 0; pos < order.size(); ++pos) {
      switch (order[pos]) {
        case kBool: {  // (1 - b) * b = 0
          std::uint32_t b = new_bit(rng.next() & 1, true);
          e.term(0, one_), e.term(b, minus_one_), e.close();
          e.term(b, one_), e.close();
          e.close();
          break;
        }
        case kXor: {  // (2a) * b = a + b - c
          std::uint32_t a = any_bit();
          std::uint32_t b = b_operand(pos, a);
          std::uint32_t c = new_bit(value_of(a) ^ value_of(b), false);
          e.term(a, pow2_[1]), e.close();
          e.term(b, one_), e.close();
          e.term(a, one_), e.term(b, one_), e.term(c, minus_one_), e.close();
          break;
        }
        case kAnd: {  // a * b = c
          std::uint32_t a = any_bit();
          std::uint32_t b = b_operand(pos, a);
          std::uint32_t c = new_bit(value_of(a) & value_of(b), false);
          if (num_ands < ands.size()) ands[num_ands++] = AndTriple{a, b, c};
          e.term(a, one_), e.close();
          e.term(b, one_), e.close();
          e.term(c, one_), e.close();
          break;
        }
        case kCh: {  // (y - z) * x = ch - z
          std::uint32_t y = any_bit();
          std::uint32_t z = any_bit_except(y);
          std::uint32_t x = b_operand(pos, z);
          std::uint32_t ch = new_bit(value_of(x) ? value_of(y) : value_of(z), false);
          e.term(y, one_), e.term(z, minus_one_), e.close();
          e.term(x, one_), e.close();
          e.term(ch, one_), e.term(z, minus_one_), e.close();
          break;
        }
        case kMaj: {  // (y + z - 2yz) * x = maj - yz
          const AndTriple t = ands[rng.below(num_ands)];
          std::uint32_t x = b_operand(pos, t.yz);
          std::uint64_t vx = value_of(x), vy = value_of(t.y), vz = value_of(t.z);
          std::uint32_t maj = new_bit((vx & vy) | (vx & vz) | (vy & vz), false);
          e.term(t.y, one_), e.term(t.z, one_), e.term(t.yz, minus_two_), e.close();
          e.term(x, one_), e.close();
          e.term(maj, one_), e.term(t.yz, minus_one_), e.close();
          break;
        }
        case kLin3: {  // (a + b + c) * 1 = d
          std::uint32_t a = any_bit(), b = any_bit_except(a), c = a;
          while (c == a || c == b) c = any_bit();
          std::uint32_t d = new_value(Fr::from_u64(value_of(a) + value_of(b) + value_of(c)));
          e.term(a, one_), e.term(b, one_), e.term(c, one_), e.close();
          e.term(0, one_), e.close();
          e.term(d, one_), e.close();
          break;
        }
        case kFmul: {  // x * y = z over random field elements
          Fr vx = rng.field_element<Fr>(), vy = rng.field_element<Fr>();
          std::uint32_t x = new_value(vx), y = new_value(vy), z = new_value(vx * vy);
          e.term(x, one_), e.close();
          e.term(y, one_), e.close();
          e.term(z, one_), e.close();
          break;
        }
        case kPack: {  // (sum 2^i b_i) * 1 = x
          int width = kPackWidths[pos - (kBlockConstraints - 4)];
          std::uint64_t v = packed_bits(width);
          e.close();
          e.term(0, one_), e.close();
          e.term(new_value(Fr::from_u64(v)), one_), e.close();
          break;
        }
        case kUnpack: {  // x * 1 = sum 2^i b_i
          std::size_t a_start = out.terms.size();
          e.term(0, one_);  // placeholder for x, fixed below
          e.close();
          e.term(0, one_), e.close();
          std::uint64_t v = packed_bits(kUnpackWidth);
          e.close();
          out.terms[a_start].wire = new_value(Fr::from_u64(v));
          break;
        }
      }
    }
    // Cut the last block short (its wires all stay, see the file comment).
    if (count < kBlockConstraints) {
      out.lc_starts.resize(3 * count + 1);
      out.terms.resize(out.lc_starts.back());
    }
  }

  SyntheticCircuitOptions options_;
  std::uint64_t num_public_constraints_ = 0;
  std::uint64_t num_blocks_ = 0;
  std::uint32_t num_wires_ = 0;
  Fr one_, minus_one_, minus_two_;
  std::array<Fr, 64> pow2_;
};

// Writes circuit as an .r1cs v1 file (sections 1, 2, 3: byte-identical to
// write_r1cs(circuit.to_r1cs())) and its witness as a .wtns v2 file, either
// path empty to skip it. Streams: blocks are generated in parallel batches
// and appended in order, so memory stays a few MB whatever the size. Files
// appear atomically (temp + rename). Throws std::system_error on I/O errors.
template <class Fr>
void write_synthetic_circuit(const SyntheticCircuit<Fr>& circuit, const std::string& r1cs_path,
                             const std::string& wtns_path) {
  using Block = SyntheticBlock<Fr>;
  constexpr std::size_t n8 = Fr::kBytes;
  std::uint8_t prime[n8];
  Fr::kModulus.to_le_bytes(prime, n8);
  std::optional<BinFileWriter> r1cs, wtns;
  if (!r1cs_path.empty()) {
    r1cs.emplace(r1cs_path, "r1cs", 1);
    r1cs->begin_section(kR1csHeaderSection);
    r1cs->write_u32(n8);
    r1cs->write(prime);
    r1cs->write_u32(circuit.num_wires());
    r1cs->write_u32(0);                     // nPubOut
    r1cs->write_u32(circuit.num_public());  // nPubIn
    r1cs->write_u32(0);                     // nPrvIn
    r1cs->write_u64(circuit.num_wires());   // nLabels
    r1cs->write_u32(std::uint32_t(circuit.num_constraints()));
    r1cs->end_section();
    r1cs->begin_section(kR1csConstraintsSection);
  }
  if (!wtns_path.empty()) {
    wtns.emplace(wtns_path, "wtns", 2);
    wtns->begin_section(kWtnsHeaderSection);
    wtns->write_u32(n8);
    wtns->write(prime);
    wtns->write_u32(circuit.num_wires());
    wtns->end_section();
    wtns->begin_section(kWtnsValuesSection);
  }
  // Batches of blocks: generated and encoded in parallel, written in order.
  const std::size_t batch = std::max<std::size_t>(64, 64 * parallel_threads());
  std::vector<std::vector<std::uint8_t>> r1cs_bytes(batch), wtns_bytes(batch);
  for (std::uint64_t first = 0; first < circuit.num_blocks(); first += batch) {
    const std::size_t count = std::size_t(std::min<std::uint64_t>(batch, circuit.num_blocks() - first));
    parallel_for(count, [&](std::size_t begin, std::size_t end) {
      Block block;
      for (std::size_t i = begin; i < end; ++i) {
        circuit.generate_block(first + i, block);
        if (r1cs) {
          auto& out = r1cs_bytes[i];
          out.resize(block.num_constraints() * 12 + block.terms.size() * (4 + n8));
          std::uint8_t* p = out.data();
          for (std::size_t k = 0; k < block.num_constraints(); ++k)
            for (int m = 0; m < 3; ++m) {
              auto lc = block.lc(k, m);
              store_u32le(p, std::uint32_t(lc.size()));
              p += 4;
              for (const auto& t : lc) {
                store_u32le(p, t.wire);
                t.coeff.to_le_bytes(p + 4);
                p += 4 + n8;
              }
            }
        }
        if (wtns) {
          auto& out = wtns_bytes[i];
          out.resize(block.values.size() * n8);
          for (std::size_t k = 0; k < block.values.size(); ++k) block.values[k].to_le_bytes(out.data() + k * n8);
        }
      }
    });
    for (std::size_t i = 0; i < count; ++i) {
      if (r1cs) r1cs->write(r1cs_bytes[i]);
      if (wtns) wtns->write(wtns_bytes[i]);
    }
  }
  if (r1cs) {
    r1cs->end_section();
    r1cs->begin_section(kR1csWireMapSection);
    std::vector<std::uint8_t> labels(std::size_t(1) << 16);
    for (std::uint64_t w = 0; w < circuit.num_wires(); w += labels.size() / 8) {
      std::size_t n = std::size_t(std::min<std::uint64_t>(labels.size() / 8, circuit.num_wires() - w));
      for (std::size_t i = 0; i < n; ++i) store_u64le(labels.data() + 8 * i, w + i);
      r1cs->write(std::span<const std::uint8_t>(labels.data(), 8 * n));
    }
    r1cs->end_section();
    r1cs->commit();
  }
  if (wtns) {
    wtns->end_section();
    wtns->commit();
  }
}

// What generate_synthetic_circuit made.
struct SyntheticCircuitInfo {
  std::uint64_t num_constraints = 0;
  std::uint32_t num_wires = 0;
  std::uint32_t num_public = 0;
};

// Generates the circuit of `options` on `curve`'s scalar field and writes
// it (see write_synthetic_circuit; either path may be empty). This is the
// CLI's entry point. Throws std::invalid_argument for impossible options and
// std::system_error on I/O errors.
inline SyntheticCircuitInfo generate_synthetic_circuit(CurveId curve, const SyntheticCircuitOptions& options,
                                                       const std::string& r1cs_path, const std::string& wtns_path) {
  return dispatch_curve(curve, [&](auto curve_tag) {
    using Fr = typename decltype(curve_tag)::Fr;
    SyntheticCircuit<Fr> circuit(options);
    write_synthetic_circuit(circuit, r1cs_path, wtns_path);
    return SyntheticCircuitInfo{circuit.num_constraints(), circuit.num_wires(), circuit.num_public()};
  });
}

}  // namespace zkfarm
