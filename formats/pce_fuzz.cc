// pce_fuzz.cc -- libFuzzer target for the PCE file loader.
//
// The checksum is verified on one pass and skipped on another, so that
// mutated inputs reach the structure checks. Any input must either load or
// throw FormatError; a loaded PCE must re-serialize to a file that loads
// equal, and its SpMV must run.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "formats/pce.h"

namespace {

template <class Fr>
void run(std::span<const std::uint8_t> bytes) {
  for (bool checksum : {true, false}) {
    try {
      auto pce = zkfarm::parse_pce<Fr>(bytes, "fuzz.pce", checksum);
      auto again = zkfarm::parse_pce<Fr>(zkfarm::serialize_pce(pce), "rt");
      if (!(again == pce)) std::abort();
      std::vector<Fr> witness(pce.num_cols(), Fr::one()), out(pce.num_rows());
      pce.multiply_a(witness, out);
      pce.multiply_b(witness, out);
      if (pce.has_c()) pce.first_unsatisfied(witness);
    } catch (const zkfarm::FormatError&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  run<zkfarm::Bn254Fr>({data, size});
  run<zkfarm::Bls12381Fr>({data, size});
  return 0;
}
