// wtns_fuzz.cc -- libFuzzer target for the .wtns reader.
//
// Any input must either parse or throw FormatError; inputs that parse must
// re-encode to the same witness.
#include <cstdint>
#include <cstdlib>

#include "formats/wtns.h"

namespace {

template <class Fr>
void run(const std::shared_ptr<const zkfarm::FileBytes>& file) {
  try {
    auto w = zkfarm::parse_wtns<Fr>(file);
    auto again = zkfarm::parse_wtns<Fr>(
        zkfarm::FileBytes::adopt(zkfarm::serialize_wtns<Fr>(w), "rt"), w.size());
    if (again != w) std::abort();
  } catch (const zkfarm::FormatError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto file = zkfarm::FileBytes::copy({data, size}, "fuzz.wtns");
  try {
    zkfarm::wtns_curve(file);
  } catch (const zkfarm::FormatError&) {
  }
  run<zkfarm::Bn254Fr>(file);
  run<zkfarm::Bls12381Fr>(file);
  return 0;
}
