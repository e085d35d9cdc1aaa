// wtns.h -- circom witness files (.wtns v2: iden3 container, magic "wtns").
//
// Section 1 header: u32 n8, prime (n8 bytes), u32 nWitness. Section 2: the
// nWitness values, n8 bytes each, canonical little-endian. The reader checks
// the prime against the expected field and, when the caller knows it, the
// count against the circuit, and converts to Montgomery form on all cores
// (a PoRep partition's witness is ~130M values, ~4.2 GB).
//
// read_wtns_summary() is the one reader of a witness's header and public
// inputs (the coordinator's intake, the artifact layer, the worker's checks):
// it needs only the first bytes of a file, so a multi-GB witness is never read
// whole to learn its field, its length and its public inputs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/binfile.h"
#include "formats/curve_id.h"
#include "kernels/field.h"

namespace zkfarm {

inline constexpr std::uint32_t kWtnsHeaderSection = 1;
inline constexpr std::uint32_t kWtnsValuesSection = 2;

// The size in bytes of a .wtns v2 file of `count` values of `n8` bytes
// each: the container's magic, version and section count (12), the header
// section (12 + n8 field + prime + nWitness) and the values section (12 +
// count * n8). What a witness generator of a circuit of `count` signals
// writes, checked before the file is read.
constexpr std::uint64_t wtns_file_bytes(std::uint64_t count, std::uint32_t n8 = 32) {
  return 12 + (12 + 4 + std::uint64_t{n8} + 4) + (12 + count * n8);
}

// What the first bytes of a .wtns say: its field, its length and its public
// inputs.
struct WtnsSummary {
  CurveId curve = CurveId::kBn254;
  std::uint32_t n8 = 32;          // bytes per value
  std::uint32_t num_values = 0;   // nWitness
  std::uint64_t values_offset = 0;  // where value 0 starts in the file
  // Values 1..num_public, canonical little-endian, back to back (n8 bytes
  // each): one allocation, where a vector per input cost 72 bytes for 32.
  std::vector<std::uint8_t> public_inputs;
};

// Bytes of a .wtns that hold its header and values 0..num_public when its
// sections are in the usual order (header first, 32-byte field elements).
inline std::uint64_t wtns_prefix_bytes(std::uint32_t num_public) {
  return 12 + 12 + 4 + 32 + 4 + 12 + (std::uint64_t(num_public) + 1) * 32;
}

// Reads the summary of a .wtns from its first bytes (`prefix`), the file
// being `total` bytes long (0: unknown; prefix.size() == total: the whole
// file). Returns nothing when the prefix ends before the header section and
// values 0..num_public (the caller reads more: a header after the values is
// legal), never for the whole file. Throws FormatError naming `name` and
// expected vs found: a wrong magic or version, a section running past
// `total`, a malformed header or an unsupported prime (as read_scalar_field),
// a second header or values section, a values section whose size is not
// nWitness * n8, fewer than num_public + 1 values, a missing header or values
// section, or (whole file) bytes after the last section.
std::optional<WtnsSummary> read_wtns_summary(std::span<const std::uint8_t> prefix, std::uint64_t total,
                                             std::uint32_t num_public, const std::string& name);

// The same from a whole file (its bytes are touched only as far as the
// header and the public inputs). Throws as above.
WtnsSummary read_wtns_summary(const FileBytes& file, std::uint32_t num_public);

// Returns the curve of a .wtns file from its header prime. Throws
// FormatError for a malformed container or header or an unsupported prime.
CurveId wtns_curve(std::shared_ptr<const FileBytes> file);

// Parses a witness. Returns the values (Montgomery form). Throws FormatError
// for a bad container, a prime other than Fr's ("prime is BLS12-381 ...,
// expected BN254 ..."), nWitness != expected_count when given ("witness has
// 5 values, the circuit expects 7"), a values section of the wrong size, or
// a value >= r (naming its index).
template <class Fr>
std::vector<Fr> parse_wtns(std::shared_ptr<const FileBytes> file,
                           std::optional<std::size_t> expected_count = std::nullopt);

// The number of values a witness's header declares. Throws FormatError as
// wtns_curve.
std::uint32_t wtns_count(std::shared_ptr<const FileBytes> file);

// Parses a witness into out (Montgomery form), memory the caller chose (the
// prover service's page-locked buffers): out.size() is the expected count.
// Throws as parse_wtns; out is unspecified after a throw.
template <class Fr>
void parse_wtns_into(std::shared_ptr<const FileBytes> file, std::span<Fr> out);

// Maps path and parses it (as parse_wtns).
template <class Fr>
std::vector<Fr> read_wtns(const std::string& path,
                          std::optional<std::size_t> expected_count = std::nullopt);

// Encodes values as a .wtns v2 image. Throws std::invalid_argument if there
// are 2^32 or more values.
template <class Fr>
std::vector<std::uint8_t> serialize_wtns(std::span<const Fr> values);

// Writes a .wtns v2 file atomically. Throws as serialize_wtns, and
// std::system_error on I/O errors.
template <class Fr>
void write_wtns(const std::string& path, std::span<const Fr> values);

#define ZKFARM_WTNS_EXTERN(Fr)                                                                   \
  extern template std::vector<Fr> parse_wtns<Fr>(std::shared_ptr<const FileBytes>,               \
                                                 std::optional<std::size_t>);                    \
  extern template std::vector<Fr> read_wtns<Fr>(const std::string&, std::optional<std::size_t>); \
  extern template void parse_wtns_into<Fr>(std::shared_ptr<const FileBytes>, std::span<Fr>);       \
  extern template std::vector<std::uint8_t> serialize_wtns<Fr>(std::span<const Fr>);             \
  extern template void write_wtns<Fr>(const std::string&, std::span<const Fr>);
ZKFARM_WTNS_EXTERN(Bn254Fr)
ZKFARM_WTNS_EXTERN(Bls12381Fr)
#undef ZKFARM_WTNS_EXTERN

}  // namespace zkfarm
