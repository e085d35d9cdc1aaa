// pce.h -- the pre-compiled constraint evaluator (PCE): the circuit's A, B
// (and, when built from .r1cs, C) matrices in a form made for A*w, B*w, C*w.
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
// Built once per circuit (from the zkey's coefficient section or the .r1cs),
// saved beside the key in a versioned binary file and loaded by workers:
//
//   offset 0   header, 64 bytes: magic "ZKPCE\0\0\0", u32 version (1), u32
//              curve (CurveId), u32 flags (bit 0: has C), u32 num_rows, u32
//              num_cols, u32 num_public, u32 domain_size, u32 num_arrays
//              (10, or 15 with C), 24 zero bytes
//   offset 64  array table: num_arrays x (u64 offset, u64 byte length), in
//              order A, B[, C] x (row_offsets, general_offsets, cols,
//              values, column_bitmap); arrays follow contiguously in that
//              order, integers little-endian, values in Montgomery form
//   end - 32   checksum: SHA-256(header || table || D_0 || ... ), where D_i
//              = SHA-256 of the concatenated SHA-256s of array i's 16 MiB
//              chunks.
//
// Why SHA-256 (OpenSSL libcrypto) and chunks: artifacts sit on shared
// storage (NFS) and circuit ids are already SHA-256 of the zkey, so a
// cryptographic digest costs nothing in trust reasoning. With SHA-NI one core
// hashes ~1-2 GB/s (`openssl speed -evp sha256`: 1.1 GB/s on a busy dev core),
// so a serial hash of a 26 GB PoRep PCE would take ~15-25 s; hashing 16 MiB
// chunks on all cores keeps the load at disk speed. A non-cryptographic
// 64-bit hash would be faster still but would only catch accidents.
// Loading reads each array straight into its vector (pread, no staging copy)
// after checking every size against the header and the file length, then
// verifies the checksum and the structure (monotone offsets, columns in
// range, values < r, bitmap equal to the columns), all on all cores.
//
// Thread safety: a built Pce is immutable; multiply_* and first_unsatisfied
// may run concurrently from several threads (they share the global pool).
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/binfile.h"
#include "formats/curve_id.h"
#include "formats/r1cs.h"
#include "formats/zkey_coefficients.h"
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

// out[r] = sum over row r of coefficient * witness[col]. Multi-threaded.
// Throws std::invalid_argument unless witness.size() == m.num_cols and
// out.size() == m.num_rows.
template <class Fr>
void spmv(const Csr<Fr>& m, std::span<const Fr> witness, std::span<Fr> out);

template <class Fr>
class Pce {
 public:
  static constexpr std::uint32_t kVersion = 1;

  Pce() = default;

  // Builds A and B from a zkey's coefficient section. Rows = 1 + the largest
  // constraint index (the last appended public row), columns = nVars.
  // Validates every coefficient first (FormatError naming the first bad
  // entry). Throws std::invalid_argument if num_public + 1 > num_vars.
  static Pce from_zkey(const ZkeyCoefficients<Fr>& coefficients, std::uint32_t num_public);

  // Builds A, B and C from an .r1cs: rows = nConstraints + nPublic + 1 (the
  // appended public rows exactly as snarkjs's setup adds them to A), domain
  // size = the smallest power of two > nConstraints + nPublic (snarkjs's).
  // Throws std::invalid_argument if the r1cs is inconsistent or its domain
  // would exceed 2^31.
  static Pce from_r1cs(const R1cs<Fr>& r1cs);

  // Saves to path atomically (temp + rename). Throws std::system_error.
  void save(const std::string& path) const;
  // Loads a file written by save(). Throws FormatError (naming the path and
  // what is wrong: magic, version, curve, sizes vs header, checksum,
  // structure) and std::system_error on I/O errors.
  static Pce load(const std::string& path);
  // As load(), from bytes in memory; name is for messages. verify_checksum =
  // false is for fuzzing only (so mutated inputs reach the structure checks,
  // which always run).
  static Pce parse(std::span<const std::uint8_t> bytes, const std::string& name,
                   bool verify_checksum = true);
  // The file image save() writes.
  std::vector<std::uint8_t> serialize() const;

  std::size_t num_rows() const { return num_rows_; }
  std::size_t num_cols() const { return num_cols_; }
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
  // Wraps validated parts read by load()/parse().
  static Pce assemble_loaded(std::uint32_t rows, std::uint32_t cols, std::uint32_t pub,
                             std::uint32_t domain, bool has_c, Csr<Fr>* parts);

  std::uint32_t num_rows_ = 0;
  std::uint32_t num_cols_ = 0;
  std::uint32_t num_public_ = 0;
  std::uint32_t domain_size_ = 0;
  bool has_c_ = false;
  Csr<Fr> a_, b_, c_;
};

extern template class Pce<Bn254Fr>;
extern template class Pce<Bls12381Fr>;
extern template void spmv<Bn254Fr>(const Csr<Bn254Fr>&, std::span<const Bn254Fr>,
                                   std::span<Bn254Fr>);
extern template void spmv<Bls12381Fr>(const Csr<Bls12381Fr>&, std::span<const Bls12381Fr>,
                                      std::span<Bls12381Fr>);

}  // namespace zkfarm
