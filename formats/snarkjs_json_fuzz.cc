// snarkjs_json_fuzz.cc -- libFuzzer target for the snarkjs JSON readers.
//
// The input is tried as a verification key, a proof and public signals on
// both curves. Each must parse or throw FormatError; what parses must
// re-encode and parse back to the same value.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "formats/snarkjs_json.h"

namespace {

template <class Curve>
void run(std::string_view text) {
  using Fr = typename Curve::Fr;
  try {
    auto vk = zkfarm::verification_key_from_json<Curve>(text, "fuzz.json");
    auto again = zkfarm::verification_key_from_json<Curve>(zkfarm::verification_key_to_json(vk), "rt");
    if (!(again.ic == vk.ic) || !(again.alpha1 == vk.alpha1) || !(again.delta2 == vk.delta2)) std::abort();
  } catch (const zkfarm::FormatError&) {
  }
  try {
    auto proof = zkfarm::proof_from_json<Curve>(text, "fuzz.json");
    if (!(zkfarm::proof_from_json<Curve>(zkfarm::proof_to_json(proof), "rt") == proof)) std::abort();
  } catch (const zkfarm::FormatError&) {
  }
  try {
    auto pub = zkfarm::public_signals_from_json<Fr>(text, "fuzz.json");
    if (zkfarm::public_signals_from_json<Fr>(zkfarm::public_signals_to_json<Fr>(pub), "rt") != pub)
      std::abort();
  } catch (const zkfarm::FormatError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    zkfarm::snarkjs_json_curve(text, "fuzz.json");
  } catch (const zkfarm::FormatError&) {
  }
  run<zkfarm::Bn254>(text);
  run<zkfarm::Bls12381>(text);
  return 0;
}
