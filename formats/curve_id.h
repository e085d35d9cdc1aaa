// curve_id.h -- which of the two supported curves a file is for.
//
// iden3 files carry primes, not curve names: .r1cs and .wtns the scalar field
// prime r, .zkey both q and r. snarkjs supports exactly BN254 ("bn128") and
// BLS12-381 ("bls12381"); so do we. This header maps primes to a CurveId
// (kernels/curve_id.h) and formats the messages for unsupported or mismatched
// primes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/bigint.h"
#include "kernels/curve_id.h"
#include "kernels/curves.h"
#include "kernels/field.h"

namespace zkfarm {

namespace curve_id_detail {

// True if the n8 little-endian bytes equal modulus.
template <std::size_t N>
bool bytes_equal(std::span<const std::uint8_t> le, const BigInt<N>& modulus) {
  for (std::size_t i = 0; i < le.size(); ++i) {
    std::uint8_t expect = i / 8 < N ? std::uint8_t(modulus.limbs[i / 8] >> (8 * (i % 8))) : 0;
    if (le[i] != expect) return false;
  }
  return le.size() >= 8 * N || modulus.num_bits() <= 8 * le.size();
}

// Decimal rendering of an arbitrary-length little-endian integer (for
// messages; quadratic, fine for the <= 64-byte primes that appear here).
inline std::string le_to_decimal(std::span<const std::uint8_t> le) {
  std::vector<std::uint32_t> words((le.size() + 3) / 4, 0);
  for (std::size_t i = 0; i < le.size(); ++i) words[i / 4] |= std::uint32_t(le[i]) << (8 * (i % 4));
  std::string digits;
  for (;;) {
    bool zero = true;
    for (auto w : words) zero = zero && w == 0;
    if (zero) break;
    std::uint64_t rem = 0;
    for (std::size_t i = words.size(); i-- > 0;) {
      std::uint64_t cur = (rem << 32) | words[i];
      words[i] = std::uint32_t(cur / 10);
      rem = cur % 10;
    }
    digits.push_back(char('0' + rem));
  }
  if (digits.empty()) return "0";
  return std::string(digits.rbegin(), digits.rend());
}

}  // namespace curve_id_detail

// The curve whose scalar field prime r is the little-endian integer le.
inline std::optional<CurveId> curve_from_scalar_prime(std::span<const std::uint8_t> le) {
  if (curve_id_detail::bytes_equal(le, Bn254Fr::kModulus)) return CurveId::kBn254;
  if (curve_id_detail::bytes_equal(le, Bls12381Fr::kModulus)) return CurveId::kBls12381;
  return std::nullopt;
}

// The curve whose base field prime q is the little-endian integer le.
inline std::optional<CurveId> curve_from_base_prime(std::span<const std::uint8_t> le) {
  if (curve_id_detail::bytes_equal(le, Bn254Fq::kModulus)) return CurveId::kBn254;
  if (curve_id_detail::bytes_equal(le, Bls12381Fq::kModulus)) return CurveId::kBls12381;
  return std::nullopt;
}

// "unsupported prime: its 32 bytes are neither the scalar field prime of
// BN254 (2188...) nor that of BLS12-381 (5243...)". The file's own bytes are
// never quoted: a daemon reports this to whoever named the file (a witness
// is a client's), and a message is no channel for its contents.
inline std::string unsupported_scalar_prime_message(std::span<const std::uint8_t> le) {
  return "unsupported prime: its " + std::to_string(le.size()) + " bytes are neither the scalar field prime of BN254 (" +
         Bn254Fr::kModulus.to_decimal() + ") nor that of BLS12-381 (" + Bls12381Fr::kModulus.to_decimal() + ")";
}

inline std::string unsupported_base_prime_message(std::span<const std::uint8_t> le) {
  return "unsupported prime q: its " + std::to_string(le.size()) + " bytes are neither the base field prime of BN254 (" +
         Bn254Fq::kModulus.to_decimal() + ") nor that of BLS12-381 (" + Bls12381Fq::kModulus.to_decimal() + ")";
}

// Reads the field header that opens circom's .r1cs and .wtns header
// sections: n8 (u32) and the prime (n8 bytes), through a SectionReader
// (formats/binfile.h). Returns the curve whose scalar field the prime is;
// fails through the reader unless it is BN254's or BLS12-381's with n8 = 32.
template <class SectionReader>
CurveId read_scalar_field(SectionReader& in) {
  const std::uint32_t n8 = in.u32("n8");
  if (n8 == 0 || n8 % 8 != 0 || n8 > 64)
    in.fail("n8 must be a positive multiple of 8 up to 64, found " + std::to_string(n8));
  const auto prime = in.bytes(n8, "the prime");
  const auto curve = curve_from_scalar_prime(prime);
  if (!curve) in.fail(unsupported_scalar_prime_message(prime));
  if (n8 != 32)
    in.fail("n8 for the " + std::string(curve_display_name(*curve)) + " scalar field must be 32, found " +
            std::to_string(n8));
  return *curve;
}

// Scalar field prime of a curve, in decimal. Throws as dispatch_curve.
inline std::string scalar_prime_decimal(CurveId id) {
  return dispatch_curve(id, [](auto curve) { return decltype(curve)::Fr::kModulus.to_decimal(); });
}

}  // namespace zkfarm
