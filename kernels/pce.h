// pce.h -- the pre-compiled constraint evaluator (PCE): the circuit's A, B
// (and, when built from .r1cs, C) matrices in a form made for A*w, B*w, C*w,
// and the sparse matrix-vector product (SpMV) the provers run on them.
//
// Rows are constraints, including the nPublic+1 rows snarkjs's setup appends
// to A (row nConstraints+s has a single 1 at column s); columns are signals.
// Each matrix is CSR with one twist: within a row the entries whose
// coefficient is 1 come first and carry no value, so SpMV adds their witness
// values without a multiplication, and only the other coefficients are
// stored (most circom and Filecoin coefficients are 1: this saves both the
// multiplications and 32 bytes per entry). Zero coefficients are dropped.
// Each matrix also has a column bitmap (bit c set iff column c has an entry):
// MSM callers skip points whose column never appears (B is ~25% dense in
// PoRep).
//
// This header is the math only. Building a PCE from a .zkey or an .r1cs and
// its file format (save, load, checksum) are formats/pce.h; the device copy
// is kernels/cuda/groth16_device.h's DevicePce.
//
// Thread safety: a built Pce is immutable; multiply_* and first_unsatisfied
// may run concurrently from several threads (they share the global pool).
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kernels/field.h"

namespace zkfarm {

// One matrix. Row r's entries are cols[row_offsets[r] .. row_offsets[r+1]);
// its general (coefficient != 1) entries are the last
// general_offsets[r+1] - general_offsets[r] of them, with coefficients
// values[general_offsets[r] .. general_offsets[r+1]) in the same order; the
// entries before them have coefficient 1 and no stored value.
template <class Fr>
struct Csr {
  std::uint32_t num_rows = 0;
  std::uint32_t num_cols = 0;
  std::vector<std::uint64_t> row_offsets{0};      // num_rows + 1
  std::vector<std::uint64_t> general_offsets{0};  // num_rows + 1
  std::vector<std::uint32_t> cols;                // nnz
  std::vector<Fr> values;                         // general coefficients only
  std::vector<std::uint64_t> column_bitmap;       // (num_cols + 63) / 64 words

  std::uint64_t nnz() const { return cols.size(); }
  std::uint64_t num_units() const { return cols.size() - values.size(); }
  // End of row r's coefficient-1 entries (start of its general ones).
  std::uint64_t unit_end(std::size_t r) const {
    return row_offsets[r + 1] - (general_offsets[r + 1] - general_offsets[r]);
  }
  // True if column c has at least one entry.
  bool has_column(std::uint32_t c) const { return (column_bitmap[c / 64] >> (c % 64)) & 1; }
  // Number of columns with at least one entry.
  std::uint64_t num_used_columns() const {
    std::uint64_t n = 0;
    for (auto w : column_bitmap) n += std::popcount(w);
    return n;
  }
  bool operator==(const Csr&) const = default;
};

// The column bitmap of cols ((num_cols + 63) / 64 words; all cores).
std::vector<std::uint64_t> column_bitmap_of(std::span<const std::uint32_t> cols, std::uint32_t num_cols);

// out[r] = sum over row r of coefficient * witness[col]. Multi-threaded.
// Throws std::invalid_argument unless witness.size() == m.num_cols and
// out.size() == m.num_rows.
template <class Fr>
void spmv(const Csr<Fr>& m, std::span<const Fr> witness, std::span<Fr> out);

template <class Fr>
class Pce {
 public:
  Pce() = default;

  // Wraps built matrices (formats/pce.h builds and loads them). a, b and c
  // (when given) must all have a's shape; throws std::invalid_argument if not.
  Pce(std::uint32_t num_public, std::uint32_t domain_size, Csr<Fr> a, Csr<Fr> b,
      std::optional<Csr<Fr>> c);

  std::size_t num_rows() const { return a_.num_rows; }
  std::size_t num_cols() const { return a_.num_cols; }
  std::uint32_t num_public() const { return num_public_; }
  std::uint32_t domain_size() const { return domain_size_; }
  bool has_c() const { return has_c_; }
  const Csr<Fr>& a() const { return a_; }
  const Csr<Fr>& b() const { return b_; }
  // Throws std::logic_error if !has_c().
  const Csr<Fr>& c() const;

  // out = A*w (resp. B*w, C*w); out.size() == num_rows(), witness.size() ==
  // num_cols(), else std::invalid_argument. multiply_c throws
  // std::logic_error without C.
  void multiply_a(std::span<const Fr> witness, std::span<Fr> out) const { spmv(a_, witness, out); }
  void multiply_b(std::span<const Fr> witness, std::span<Fr> out) const { spmv(b_, witness, out); }
  void multiply_c(std::span<const Fr> witness, std::span<Fr> out) const { spmv(c(), witness, out); }

  // The first row r with (A*w)[r] * (B*w)[r] != (C*w)[r], or nullopt if all
  // hold. Throws std::logic_error without C, std::invalid_argument on a
  // witness of the wrong length.
  std::optional<std::size_t> first_unsatisfied(std::span<const Fr> witness) const;

  bool operator==(const Pce&) const = default;

 private:
  std::uint32_t num_public_ = 0;
  std::uint32_t domain_size_ = 0;
  bool has_c_ = false;
  Csr<Fr> a_, b_, c_;
};

extern template class Pce<Bn254Fr>;
extern template class Pce<Bls12381Fr>;
extern template void spmv<Bn254Fr>(const Csr<Bn254Fr>&, std::span<const Bn254Fr>, std::span<Bn254Fr>);
extern template void spmv<Bls12381Fr>(const Csr<Bls12381Fr>&, std::span<const Bls12381Fr>,
                                      std::span<Bls12381Fr>);

}  // namespace zkfarm
