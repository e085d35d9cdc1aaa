// bls12_381_compress.h -- the zcash/Filecoin compressed encoding of
// BLS12-381 points (as in the zcash "pairing" crate, blst and Filecoin's
// 192-byte Groth16 proofs):
//   G1: 48 bytes, big-endian x.
//   G2: 96 bytes, big-endian x.c1 then x.c0.
// The three top bits of the first byte are flags: 0x80 compressed (always
// set here), 0x40 point at infinity (all other bits zero), 0x20 y is the
// lexicographically largest of {y, -y} (see Fq2::is_lexicographically_largest).
//
// Decompression validates everything: flags, x < p, x on the curve, and
// membership in the prime-order subgroup (a scalar multiplication by r, the
// dominant cost: about 0.2 ms for G1, 0.5 ms for G2).
//
// A Groth16 proof is 192 bytes: A (G1), B (G2), C (G1), in that order.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "kernels/bls12_381.h"
#include "kernels/groth16_types.h"

namespace zkfarm::bls12_381 {

inline constexpr std::size_t kG1CompressedBytes = 48;
inline constexpr std::size_t kG2CompressedBytes = 96;

namespace compress_detail {

constexpr std::uint8_t kCompressedFlag = 0x80;
constexpr std::uint8_t kInfinityFlag = 0x40;
constexpr std::uint8_t kSignFlag = 0x20;
constexpr std::uint8_t kFlagMask = 0xe0;

// Writes the canonical value of a as 48 big-endian bytes.
inline void write_be(const Bls12381::Fq& a, std::uint8_t* out) {
  std::uint8_t le[Bls12381::Fq::kBytes];
  a.to_le_bytes(le);
  for (std::size_t i = 0; i < Bls12381::Fq::kBytes; ++i) out[i] = le[Bls12381::Fq::kBytes - 1 - i];
}

// Reads 48 big-endian bytes (flags already cleared). Throws
// std::invalid_argument naming `what` if the value is not below p.
inline Bls12381::Fq read_be(const std::uint8_t* in, const char* what) {
  std::uint8_t le[Bls12381::Fq::kBytes];
  for (std::size_t i = 0; i < Bls12381::Fq::kBytes; ++i) le[i] = in[Bls12381::Fq::kBytes - 1 - i];
  auto v = Bls12381::Fq::from_le_bytes(le);
  if (!v) throw std::invalid_argument(std::string(what) + " is not below the BLS12-381 base field modulus");
  return *v;
}

// Checks the flags of a compressed encoding. Returns true for the
// point at infinity, false for a finite point; throws std::invalid_argument
// on an uncompressed or malformed encoding.
inline bool check_flags(std::span<const std::uint8_t> bytes, const char* group) {
  const std::uint8_t flags = bytes[0] & kFlagMask;
  if (!(flags & kCompressedFlag))
    throw std::invalid_argument(std::string(group) + " point: compression flag (0x80) not set");
  if (!(flags & kInfinityFlag)) return false;
  bool rest_zero = (bytes[0] & ~kFlagMask) == 0;
  for (std::size_t i = 1; i < bytes.size(); ++i) rest_zero = rest_zero && bytes[i] == 0;
  if ((flags & kSignFlag) || !rest_zero)
    throw std::invalid_argument(std::string(group) +
                                " point: infinity flag set but the sign flag or coordinate bits are not zero");
  return true;
}

// Recovers y from x for a compressed point and validates the result.
template <class Affine>
Affine finish_decompression(const typename Affine::Field& x, bool y_is_largest, const char* group) {
  using Field = typename Affine::Field;
  const Field rhs = x.square() * x + Affine::Config::kB;
  auto y = rhs.sqrt();
  if (!y) throw std::invalid_argument(std::string(group) + " point: x is not the x-coordinate of a curve point");
  if (y->is_lexicographically_largest() != y_is_largest) *y = -*y;
  Affine point{x, *y};
  if (!point.is_in_subgroup())
    throw std::invalid_argument(std::string(group) + " point: not in the prime-order subgroup");
  return point;
}

}  // namespace compress_detail

// The 48-byte compressed encoding of p (0xc0 then zeros for the identity).
// Never fails; p is trusted to be on the curve.
inline std::array<std::uint8_t, kG1CompressedBytes> compress_g1(const Bls12381::G1Affine& p) {
  using namespace compress_detail;
  std::array<std::uint8_t, kG1CompressedBytes> out{};
  if (p.is_identity()) {
    out[0] = kCompressedFlag | kInfinityFlag;
    return out;
  }
  write_be(p.x, out.data());
  out[0] |= kCompressedFlag;
  if (p.y.is_lexicographically_largest()) out[0] |= kSignFlag;
  return out;
}

// The 96-byte compressed encoding of p: x.c1 then x.c0, flags in byte 0.
// Never fails; p is trusted to be on the curve.
inline std::array<std::uint8_t, kG2CompressedBytes> compress_g2(const Bls12381::G2Affine& p) {
  using namespace compress_detail;
  std::array<std::uint8_t, kG2CompressedBytes> out{};
  if (p.is_identity()) {
    out[0] = kCompressedFlag | kInfinityFlag;
    return out;
  }
  write_be(p.x.c1, out.data());
  write_be(p.x.c0, out.data() + 48);
  out[0] |= kCompressedFlag;
  if (p.y.is_lexicographically_largest()) out[0] |= kSignFlag;
  return out;
}

// Decodes a compressed G1 point. Returns a point of the prime-order
// subgroup (possibly the identity). Throws std::invalid_argument with a
// message saying what is wrong: wrong length, compression flag missing,
// malformed infinity, x >= p, x not on the curve, or not in the subgroup.
inline Bls12381::G1Affine decompress_g1(std::span<const std::uint8_t> bytes) {
  using namespace compress_detail;
  if (bytes.size() != kG1CompressedBytes)
    throw std::invalid_argument("G1 point: expected 48 compressed bytes, got " + std::to_string(bytes.size()));
  if (check_flags(bytes, "G1")) return Bls12381::G1Affine::identity();
  std::array<std::uint8_t, kG1CompressedBytes> x_bytes;
  std::copy(bytes.begin(), bytes.end(), x_bytes.begin());
  x_bytes[0] &= ~kFlagMask;
  auto x = read_be(x_bytes.data(), "G1 point: x");
  return finish_decompression<Bls12381::G1Affine>(x, bytes[0] & kSignFlag, "G1");
}

// Decodes a compressed G2 point; contract as decompress_g1 (96 bytes).
inline Bls12381::G2Affine decompress_g2(std::span<const std::uint8_t> bytes) {
  using namespace compress_detail;
  if (bytes.size() != kG2CompressedBytes)
    throw std::invalid_argument("G2 point: expected 96 compressed bytes, got " + std::to_string(bytes.size()));
  if (check_flags(bytes, "G2")) return Bls12381::G2Affine::identity();
  std::array<std::uint8_t, kG2CompressedBytes> x_bytes;
  std::copy(bytes.begin(), bytes.end(), x_bytes.begin());
  x_bytes[0] &= ~kFlagMask;
  Bls12381::Fq2 x{read_be(x_bytes.data() + 48, "G2 point: x.c0"), read_be(x_bytes.data(), "G2 point: x.c1")};
  return finish_decompression<Bls12381::G2Affine>(x, bytes[0] & kSignFlag, "G2");
}

// A proof's bytes: 48 (A) + 96 (B) + 48 (C).
inline constexpr std::size_t kProofCompressedBytes = 2 * kG1CompressedBytes + kG2CompressedBytes;

// The 192-byte encoding of proof (Filecoin's): A, B, C compressed, in order.
inline std::array<std::uint8_t, kProofCompressedBytes> compress_proof(const Groth16Proof<Bls12381>& proof) {
  std::array<std::uint8_t, kProofCompressedBytes> out{};
  const auto a = compress_g1(proof.a);
  const auto b = compress_g2(proof.b);
  const auto c = compress_g1(proof.c);
  std::copy(a.begin(), a.end(), out.begin());
  std::copy(b.begin(), b.end(), out.begin() + kG1CompressedBytes);
  std::copy(c.begin(), c.end(), out.begin() + kG1CompressedBytes + kG2CompressedBytes);
  return out;
}

// The proof of a 192-byte encoding. Throws std::invalid_argument when bytes
// is not 192 bytes long, or as decompress_g1/decompress_g2 for a point.
inline Groth16Proof<Bls12381> decompress_proof(std::span<const std::uint8_t> bytes) {
  if (bytes.size() != kProofCompressedBytes)
    throw std::invalid_argument("proof: expected " + std::to_string(kProofCompressedBytes) + " bytes, found " +
                                std::to_string(bytes.size()));
  Groth16Proof<Bls12381> proof;
  proof.a = decompress_g1(bytes.first(kG1CompressedBytes));
  proof.b = decompress_g2(bytes.subspan(kG1CompressedBytes, kG2CompressedBytes));
  proof.c = decompress_g1(bytes.subspan(kG1CompressedBytes + kG2CompressedBytes));
  return proof;
}

}  // namespace zkfarm::bls12_381
