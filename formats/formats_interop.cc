// formats_interop.cc -- re-encodes files through our readers and writers so
// that snarkjs can be run on what our writers produce (see
// formats/testdata/check_snarkjs_interop.sh). Not part of the product.
//
//   formats_interop r1cs|wtns|zkey|vk|proof|public bn128|bls12381 IN OUT
//   formats_interop pce-from-r1cs|pce-from-zkey bn128|bls12381 IN OUT
//
// Reads IN with our parser and writes OUT with our writer (the pce-* kinds
// build a PCE and save it; used for fuzzing seeds). Exit status 0 on
// success; 1 with the error on stderr otherwise.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "formats/pce.h"
#include "formats/r1cs.h"
#include "formats/snarkjs_json.h"
#include "formats/wtns.h"
#include "formats/zkey.h"

namespace zkfarm {
namespace {

template <class Curve>
void rewrite(const std::string& kind, const std::string& in, const std::string& out) {
  using Fr = typename Curve::Fr;
  if (kind == "r1cs") {
    write_r1cs(out, read_r1cs<Fr>(in));
  } else if (kind == "wtns") {
    auto w = read_wtns<Fr>(in);
    write_wtns<Fr>(out, w);
  } else if (kind == "zkey") {
    auto z = read_zkey<Curve>(in, {.validate_coefficients = true, .validate_points = true});
    std::vector<ZkeyCoefficient<Fr>> coefficients;
    write_zkey(out, rewrite_input(z, coefficients));
  } else if (kind == "pce-from-r1cs") {
    save_pce(pce_from_r1cs(read_r1cs<Fr>(in)), out);
  } else if (kind == "pce-from-zkey") {
    auto z = read_zkey<Curve>(in);
    save_pce(pce_from_zkey(z.coefficients, z.num_public), out);
  } else if (kind == "vk") {
    write_verification_key(out, read_verification_key<Curve>(in));
  } else if (kind == "proof") {
    write_proof(out, read_proof<Curve>(in));
  } else if (kind == "public") {
    auto p = read_public_signals<Fr>(in);
    write_public_signals<Fr>(out, p);
  } else {
    throw std::invalid_argument("unknown kind " + kind);
  }
}

}  // namespace
}  // namespace zkfarm

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr,
                 "usage: %s r1cs|wtns|zkey|vk|proof|public|pce-from-r1cs|pce-from-zkey "
                 "bn128|bls12381 IN OUT\n",
                 argv[0]);
    return 2;
  }
  try {
    if (std::strcmp(argv[2], "bn128") == 0) {
      zkfarm::rewrite<zkfarm::Bn254>(argv[1], argv[3], argv[4]);
    } else if (std::strcmp(argv[2], "bls12381") == 0) {
      zkfarm::rewrite<zkfarm::Bls12381>(argv[1], argv[3], argv[4]);
    } else {
      std::fprintf(stderr, "unknown curve %s\n", argv[2]);
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
