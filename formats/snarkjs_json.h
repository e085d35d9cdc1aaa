// snarkjs_json.h -- snarkjs's JSON files for Groth16: verification_key.json,
// proof.json and public.json, byte-for-byte as snarkjs 0.7.6 writes them.
//
// snarkjs writes with JSON.stringify-style 1-space indentation, no trailing
// newline, keys in this order:
//   vk:    protocol, curve, nPublic, vk_alpha_1, vk_beta_2, vk_gamma_2,
//          vk_delta_2, vk_alphabeta_12, IC
//   proof: pi_a, pi_b, pi_c, protocol, curve
//   public: an array of decimal strings
// Field elements are canonical decimal strings. G1 points are [x, y, "1"],
// G2 points [[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]]; the identity is
// ["0", "1", "0"] (G2: [["0","0"], ["1","0"], ["0","0"]]). vk_alphabeta_12 is
// e(alpha1, beta2) in Fq12 = Fq6[w] as [[c0.c0, c0.c1, c0.c2], [c1.c0, c1.c1,
// c1.c2]] with each Fq2 as [c0, c1]; the writer computes it with kernels'
// pairing raised to snarkjs's fixed final-exponentiation multiple (see .cc).
// "curve" is "bn128" or "bls12381".
//
// Readers validate everything they return: protocol "groth16", the curve
// name (when present; old snarkjs omitted it), nPublic against IC, every
// number a decimal string below its modulus, every point on the curve and in
// the prime-order subgroup, vk_alphabeta_12 equal to e(alpha1, beta2). Errors
// are FormatError naming the file and the key ("vk.json: IC[3]: point is not
// on the bn128 curve").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/files.h"
#include "formats/binfile.h"
#include "formats/curve_id.h"
#include "kernels/curves.h"
#include "kernels/groth16_types.h"

namespace zkfarm {

// A well-formed coordinate pair that is not a point of the expected group
// (off the curve, or outside the prime-order subgroup). For a proof this
// means "invalid proof" rather than "malformed file": `zkfarm verify` exits 1
// on it, as snarkjs rejects such a proof.
class PointNotInGroupError : public FormatError {
 public:
  using FormatError::FormatError;
};

// The "curve" of a vk or proof JSON ("bn128" -> kBn254, "bls12381" ->
// kBls12381). Throws FormatError if the text is not a JSON object, has no
// "curve" string, or names another curve.
CurveId snarkjs_json_curve(std::string_view text, const std::string& name);

// Parse text (name is used in messages). Throw FormatError as described above.
template <class Curve>
Groth16VerifyingKey<Curve> verification_key_from_json(std::string_view text, const std::string& name);
template <class Curve>
Groth16Proof<Curve> proof_from_json(std::string_view text, const std::string& name);
template <class Fr>
std::vector<Fr> public_signals_from_json(std::string_view text, const std::string& name);

// Render exactly as snarkjs does. The vk writer computes vk_alphabeta_12.
template <class Curve>
std::string verification_key_to_json(const Groth16VerifyingKey<Curve>& vk);
template <class Curve>
std::string proof_to_json(const Groth16Proof<Curve>& proof);
template <class Fr>
std::string public_signals_to_json(std::span<const Fr> signals);

// Whole files. Readers throw FormatError (unreadable file, over 256 MiB, or
// as the parsers); writers write atomically (write_file_atomically,
// base/files.h) and throw std::system_error.
std::string read_text_file(const std::string& path);

template <class Curve>
Groth16VerifyingKey<Curve> read_verification_key(const std::string& path) {
  return verification_key_from_json<Curve>(read_text_file(path), path);
}
template <class Curve>
Groth16Proof<Curve> read_proof(const std::string& path) {
  return proof_from_json<Curve>(read_text_file(path), path);
}
template <class Fr>
std::vector<Fr> read_public_signals(const std::string& path) {
  return public_signals_from_json<Fr>(read_text_file(path), path);
}
template <class Curve>
void write_verification_key(const std::string& path, const Groth16VerifyingKey<Curve>& vk) {
  write_file_atomically(path, verification_key_to_json(vk));
}
template <class Curve>
void write_proof(const std::string& path, const Groth16Proof<Curve>& proof) {
  write_file_atomically(path, proof_to_json(proof));
}
template <class Fr>
void write_public_signals(const std::string& path, std::span<const Fr> signals) {
  write_file_atomically(path, public_signals_to_json(signals));
}

#define ZKFARM_JSON_EXTERN(Curve)                                                                  \
  extern template Groth16VerifyingKey<Curve> verification_key_from_json<Curve>(std::string_view,  \
                                                                               const std::string&); \
  extern template Groth16Proof<Curve> proof_from_json<Curve>(std::string_view, const std::string&); \
  extern template std::vector<Curve::Fr> public_signals_from_json<Curve::Fr>(std::string_view,     \
                                                                             const std::string&);  \
  extern template std::string verification_key_to_json<Curve>(const Groth16VerifyingKey<Curve>&);  \
  extern template std::string proof_to_json<Curve>(const Groth16Proof<Curve>&);                    \
  extern template std::string public_signals_to_json<Curve::Fr>(std::span<const Curve::Fr>);
ZKFARM_JSON_EXTERN(Bn254)
ZKFARM_JSON_EXTERN(Bls12381)
#undef ZKFARM_JSON_EXTERN

}  // namespace zkfarm
