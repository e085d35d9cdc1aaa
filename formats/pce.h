// pce.h -- building the pre-compiled constraint evaluator (kernels/pce.h:
// the circuit's A, B and maybe C matrices, made for SpMV) from the files
// users have, and its own file format.
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
// Thread safety: every function here may run concurrently with others on
// different PCEs; each uses all cores through the global pool.
#pragma once

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
#include "kernels/pce.h"

namespace zkfarm {

// The version save_pce writes and load_pce accepts.
inline constexpr std::uint32_t kPceFileVersion = 1;

// Builds A and B from a zkey's coefficient section. Rows = 1 + the largest
// constraint index (the last appended public row), columns = nVars.
// Validates every coefficient first (FormatError naming the first bad
// entry). Throws std::invalid_argument if num_public + 1 > num_vars.
template <class Fr>
Pce<Fr> pce_from_zkey(const ZkeyCoefficients<Fr>& coefficients, std::uint32_t num_public);

// Builds A, B and C from an .r1cs: rows = nConstraints + nPublic + 1 (the
// appended public rows exactly as snarkjs's setup adds them to A), domain
// size = the smallest power of two > nConstraints + nPublic (snarkjs's).
// Throws std::invalid_argument if the r1cs is inconsistent or its domain
// would exceed 2^31.
template <class Fr>
Pce<Fr> pce_from_r1cs(const R1cs<Fr>& r1cs);

// Saves to path atomically (temp + rename). Throws std::system_error.
template <class Fr>
void save_pce(const Pce<Fr>& pce, const std::string& path);
// The file image save_pce writes.
template <class Fr>
std::vector<std::uint8_t> serialize_pce(const Pce<Fr>& pce);
// Loads a file written by save_pce(). Throws FormatError (naming the path and
// what is wrong: magic, version, curve, sizes vs header, checksum,
// structure) and std::system_error on I/O errors.
template <class Fr>
Pce<Fr> load_pce(const std::string& path);
// As load_pce(), from bytes in memory; name is for messages. verify_checksum
// = false is for fuzzing only (so mutated inputs reach the structure checks,
// which always run).
template <class Fr>
Pce<Fr> parse_pce(std::span<const std::uint8_t> bytes, const std::string& name, bool verify_checksum = true);

#define ZKFARM_PCE_FILE_DECLARE(Fr)                                                           \
  extern template Pce<Fr> pce_from_zkey<Fr>(const ZkeyCoefficients<Fr>&, std::uint32_t);     \
  extern template Pce<Fr> pce_from_r1cs<Fr>(const R1cs<Fr>&);                                \
  extern template void save_pce<Fr>(const Pce<Fr>&, const std::string&);                     \
  extern template std::vector<std::uint8_t> serialize_pce<Fr>(const Pce<Fr>&);               \
  extern template Pce<Fr> load_pce<Fr>(const std::string&);                                  \
  extern template Pce<Fr> parse_pce<Fr>(std::span<const std::uint8_t>, const std::string&, bool);
ZKFARM_PCE_FILE_DECLARE(Bn254Fr)
ZKFARM_PCE_FILE_DECLARE(Bls12381Fr)
#undef ZKFARM_PCE_FILE_DECLARE

}  // namespace zkfarm
