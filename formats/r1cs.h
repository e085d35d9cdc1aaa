// r1cs.h -- circom's .r1cs constraint files (iden3 container, magic "r1cs", v1).
//
// Sections: 1 header (u32 n8, prime, u32 nWires, u32 nPubOut, u32 nPubIn,
// u32 nPrvIn, u64 nLabels, u32 nConstraints); 2 constraints: for each
// constraint three linear combinations A, B, C, each a u32 count followed by
// (u32 wire, n8-byte value) pairs, values canonical little-endian; 3 the
// wire-to-label map (u64 per wire). Sections 4/5 (PLONK custom gates) are
// rejected: Groth16 cannot prove such circuits. Wire 0 is the constant 1,
// then outputs, public inputs, private inputs, internal wires.
//
// The reader converts everything into an R1cs<Fr> (CSR matrices, row =
// constraint, values in our Montgomery form). The writer produces files that
// snarkjs reads (`snarkjs r1cs info`, `snarkjs groth16 setup`).
//
// Memory: a parse holds the file (mmap) plus ~36 bytes per non-zero.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "formats/binfile.h"
#include "formats/curve_id.h"
#include "kernels/field.h"

namespace zkfarm {

// Compressed sparse rows: row r has entries [row_offsets[r], row_offsets[r+1]).
template <class Fr>
struct SparseMatrix {
  std::vector<std::uint64_t> row_offsets{0};
  std::vector<std::uint32_t> cols;
  std::vector<Fr> values;

  std::size_t num_rows() const { return row_offsets.size() - 1; }
  std::size_t nnz() const { return cols.size(); }
  // Appends a row with the given entries.
  void add_row(std::span<const std::uint32_t> row_cols, std::span<const Fr> row_values) {
    cols.insert(cols.end(), row_cols.begin(), row_cols.end());
    values.insert(values.end(), row_values.begin(), row_values.end());
    row_offsets.push_back(cols.size());
  }
  bool operator==(const SparseMatrix&) const = default;
};

template <class Fr>
struct R1cs {
  std::uint32_t num_wires = 0;       // nWires, including wire 0 (= 1)
  std::uint32_t num_pub_out = 0;     // nPubOut
  std::uint32_t num_pub_in = 0;      // nPubIn
  std::uint32_t num_prv_in = 0;      // nPrvIn
  std::uint64_t num_labels = 0;      // nLabels
  std::uint32_t num_constraints = 0;
  SparseMatrix<Fr> a, b, c;          // num_constraints rows each, columns = wires
  // Label of each wire (section 3), or empty when the file had none (the
  // writer then writes the identity map if num_labels >= num_wires, else no
  // map).
  std::vector<std::uint64_t> wire_to_label;

  // Public signals excluding wire 0: outputs, then public inputs.
  std::uint32_t num_public() const { return num_pub_out + num_pub_in; }
  bool operator==(const R1cs&) const = default;
};

// Section ids.
inline constexpr std::uint32_t kR1csHeaderSection = 1;
inline constexpr std::uint32_t kR1csConstraintsSection = 2;
inline constexpr std::uint32_t kR1csWireMapSection = 3;

// Returns the curve of an .r1cs file from its header prime. Throws
// FormatError for a malformed container or header, or an unsupported prime.
CurveId r1cs_curve(std::shared_ptr<const FileBytes> file);

// Parses an .r1cs held in memory or mapped. Returns the constraint system;
// throws FormatError (naming file, section, expected vs found) for a bad
// container, a header prime other than Fr's, inconsistent counts, truncated
// or oversized sections, a wire >= nWires, a value >= r, custom gates.
// Nothing is allocated from a count before the bytes it implies are checked.
template <class Fr>
R1cs<Fr> parse_r1cs(std::shared_ptr<const FileBytes> file);

// Maps path and parses it (as parse_r1cs).
template <class Fr>
R1cs<Fr> read_r1cs(const std::string& path);

// Encodes r1cs as an .r1cs v1 file image (sections 1, 2, 3 in that order;
// see R1cs::wire_to_label for when 3 is left out).
// Throws std::invalid_argument if r1cs is inconsistent (row counts,
// wire >= num_wires, num_wires too small for its inputs, map size).
template <class Fr>
std::vector<std::uint8_t> serialize_r1cs(const R1cs<Fr>& r1cs);

// Writes serialize_r1cs(r1cs) to path atomically (temp file + rename).
// Throws std::invalid_argument as serialize_r1cs, std::system_error on I/O.
template <class Fr>
void write_r1cs(const std::string& path, const R1cs<Fr>& r1cs);

extern template R1cs<Bn254Fr> parse_r1cs<Bn254Fr>(std::shared_ptr<const FileBytes>);
extern template R1cs<Bls12381Fr> parse_r1cs<Bls12381Fr>(std::shared_ptr<const FileBytes>);
extern template R1cs<Bn254Fr> read_r1cs<Bn254Fr>(const std::string&);
extern template R1cs<Bls12381Fr> read_r1cs<Bls12381Fr>(const std::string&);
extern template std::vector<std::uint8_t> serialize_r1cs<Bn254Fr>(const R1cs<Bn254Fr>&);
extern template std::vector<std::uint8_t> serialize_r1cs<Bls12381Fr>(const R1cs<Bls12381Fr>&);
extern template void write_r1cs<Bn254Fr>(const std::string&, const R1cs<Bn254Fr>&);
extern template void write_r1cs<Bls12381Fr>(const std::string&, const R1cs<Bls12381Fr>&);

}  // namespace zkfarm
