// zkey.h -- snarkjs Groth16 proving keys (.zkey: iden3 container, magic "zkey", v1).
//
// Sections: 1 protocol (u32, 1 = Groth16); 2 header (u32 n8q, q, u32 n8r, r,
// u32 nVars, u32 nPublic, u32 domainSize, alpha1, beta1, beta2, gamma2,
// delta1, delta2); 3 IC (nPublic+1 G1); 4 coefficients (zkey_coefficients.h);
// 5 A (nVars G1); 6 B1 (nVars G1); 7 B2 (nVars G2); 8 C (nVars-nPublic-1 G1);
// 9 H (domainSize G1); 10 MPC parameters (64-byte circuit hash, u32 count,
// contributions). Points are affine x||y, Montgomery, little-endian, G2
// coordinates c0||c1, infinity all zeros -- exactly our AffinePoint layout, so
// point sections are exposed as spans over the memory-mapped file (zero copy;
// a section that snarkjs happened to place at an offset not 8-byte aligned is
// copied once into aligned memory, see ArrayView).
//
// Parsing checks the container, the protocol, both primes against Curve, the
// counts (nPublic + 1 <= nVars, domainSize a power of two), the header points
// (on the curve, coordinates < q), every section's exact size, the
// contributions' structure and, by default, every coefficient. Checking every
// key point is a separate, parallel pass (validate_zkey_points) because it
// reads the whole 47 GB of a PoRep key.
//
// write_zkey produces files that snarkjs 0.7.6 accepts for `zkey export
// verificationkey` and `groth16 prove`. Its section 10 is that of a fresh
// `groth16 setup` key: the caller's 64-byte circuit hash and no
// contributions (`snarkjs zkey verify` cannot apply: our setup has no
// powers-of-tau transcript).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "formats/binfile.h"
#include "formats/curve_id.h"
#include "formats/zkey_coefficients.h"
#include "kernels/curves.h"
#include "kernels/groth16_types.h"

namespace zkfarm {

inline constexpr std::uint32_t kZkeyProtocolSection = 1;
inline constexpr std::uint32_t kZkeyHeaderSection = 2;
inline constexpr std::uint32_t kZkeyIcSection = 3;
inline constexpr std::uint32_t kZkeyCoefficientsSection = 4;
inline constexpr std::uint32_t kZkeyASection = 5;
inline constexpr std::uint32_t kZkeyB1Section = 6;
inline constexpr std::uint32_t kZkeyB2Section = 7;
inline constexpr std::uint32_t kZkeyCSection = 8;
inline constexpr std::uint32_t kZkeyHSection = 9;
inline constexpr std::uint32_t kZkeyContributionsSection = 10;
inline constexpr std::uint32_t kZkeyGroth16Protocol = 1;

// A parsed .zkey: section 2 as its header (kernels/groth16_types.h), the
// point sections as views into the mapped file.
template <class Curve>
struct Zkey : Groth16KeyHeader<Curve> {
  using Fr = typename Curve::Fr;
  using G1Affine = typename Curve::G1Affine;
  using G2Affine = typename Curve::G2Affine;

  ArrayView<G1Affine> ic;  // num_public + 1
  ArrayView<G1Affine> a;   // num_vars
  ArrayView<G1Affine> b1;  // num_vars
  ArrayView<G2Affine> b2;  // num_vars
  ArrayView<G1Affine> c;   // num_vars - num_public - 1 (private signals)
  ArrayView<G1Affine> h;   // domain_size
  ZkeyCoefficients<Fr> coefficients;
  std::array<std::uint8_t, 64> circuit_hash{};  // section 10's csHash (zeros if absent)
  std::uint32_t num_contributions = 0;
  std::shared_ptr<const FileBytes> file;  // keeps the views alive

  // The verifying key part (alpha1, beta2, gamma2, delta2, IC), copied.
  Groth16VerifyingKey<Curve> verifying_key() const { return this->header().verifying_key(ic.span()); }
};

struct ZkeyReadOptions {
  // Check every coefficient of section 4 (parallel; ~32 GB for PoRep). Turn
  // off only when a verified PCE is used instead of the coefficients.
  bool validate_coefficients = true;
  // Also run validate_zkey_points (every point on the curve, < q).
  bool validate_points = false;
};

// Returns the curve of a .zkey from its header's q. Throws FormatError for a
// malformed container, a non-Groth16 protocol or an unsupported prime.
CurveId zkey_curve(std::shared_ptr<const FileBytes> file);

// Parses a Groth16 .zkey for Curve (see the file comment for what is
// checked). Returns views into file; throws FormatError naming the file, the
// section and expected vs found.
template <class Curve>
Zkey<Curve> parse_zkey(std::shared_ptr<const FileBytes> file, const ZkeyReadOptions& options = {});

// Maps path and parses it (as parse_zkey).
template <class Curve>
Zkey<Curve> read_zkey(const std::string& path, const ZkeyReadOptions& options = {});

// Checks every point of sections 3 and 5..9: coordinates below q and on the
// curve (identity allowed). Subgroup membership is not checked (G2 subgroup
// checks would cost a scalar multiplication per point). Throws FormatError
// naming the section and the point index.
template <class Curve>
void validate_zkey_points(const Zkey<Curve>& zkey);

// What write_zkey needs: the header, coefficients and point arrays.
template <class Curve>
struct ZkeyWriteInput : Groth16KeyHeader<Curve> {
  using Fr = typename Curve::Fr;
  using G1Affine = typename Curve::G1Affine;
  using G2Affine = typename Curve::G2Affine;

  std::span<const ZkeyCoefficient<Fr>> coefficients;  // A and B only (matrix 0 or 1)
  std::span<const G1Affine> ic, a, b1, c, h;
  std::span<const G2Affine> b2;
  std::array<std::uint8_t, 64> circuit_hash{};
};

// What write_zkey needs to write zkey again (tests, fuzzing, the interop
// tool): its header, circuit hash and point sections as views into it, and
// its coefficients decoded into storage (replaced). Valid while zkey and
// storage live and storage is not modified.
template <class Curve>
ZkeyWriteInput<Curve> rewrite_input(const Zkey<Curve>& zkey,
                                    std::vector<ZkeyCoefficient<typename Curve::Fr>>& storage) {
  storage.clear();
  storage.reserve(zkey.coefficients.size());
  for (std::size_t i = 0; i < zkey.coefficients.size(); ++i) storage.push_back(zkey.coefficients[i]);
  ZkeyWriteInput<Curve> in;
  in.header() = zkey.header();
  in.coefficients = storage;
  in.ic = zkey.ic.span();
  in.a = zkey.a.span();
  in.b1 = zkey.b1.span();
  in.b2 = zkey.b2.span();
  in.c = zkey.c.span();
  in.h = zkey.h.span();
  in.circuit_hash = zkey.circuit_hash;
  return in;
}

// Encodes a .zkey image: sections 1, 2, 3, 5, 6, 7, 8, 9, 4, 10, with an
// empty padding section (type 0, ignored by snarkjs and rapidsnark) before a
// point section whenever needed to start its body 8-byte aligned, so our
// reader uses every point section in place. Throws std::invalid_argument on inconsistent sizes, a
// domain size that is not a power of two, or a coefficient out of range.
template <class Curve>
std::vector<std::uint8_t> serialize_zkey(const ZkeyWriteInput<Curve>& input);

// Writes the same image to path atomically (temp + rename). Throws as
// serialize_zkey and std::system_error on I/O errors.
template <class Curve>
void write_zkey(const std::string& path, const ZkeyWriteInput<Curve>& input);

#define ZKFARM_ZKEY_EXTERN(Curve)                                                                  \
  extern template Zkey<Curve> parse_zkey<Curve>(std::shared_ptr<const FileBytes>,                  \
                                                const ZkeyReadOptions&);                           \
  extern template Zkey<Curve> read_zkey<Curve>(const std::string&, const ZkeyReadOptions&);        \
  extern template void validate_zkey_points<Curve>(const Zkey<Curve>&);                            \
  extern template std::vector<std::uint8_t> serialize_zkey<Curve>(const ZkeyWriteInput<Curve>&);   \
  extern template void write_zkey<Curve>(const std::string&, const ZkeyWriteInput<Curve>&);
ZKFARM_ZKEY_EXTERN(Bn254)
ZKFARM_ZKEY_EXTERN(Bls12381)
#undef ZKFARM_ZKEY_EXTERN

}  // namespace zkfarm
