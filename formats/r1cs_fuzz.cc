// r1cs_fuzz.cc -- libFuzzer target for the .r1cs reader.
//
// Any input must either parse or throw FormatError; anything else (another
// exception, a sanitizer report, a crash) is a bug. Inputs that parse must
// survive a write/read round trip unchanged (up to the identity wire map the
// writer adds when the input had none).
#include <cstdint>
#include <cstdlib>

#include "formats/r1cs.h"

namespace {

template <class Fr>
void run(const std::shared_ptr<const zkfarm::FileBytes>& file) {
  try {
    auto r1cs = zkfarm::parse_r1cs<Fr>(file);
    // nWires is only backed by input bytes when the wire map is present; a
    // tiny file may legitimately declare 4 billion unused wires, whose
    // identity map the writer would spell out (32 GB). Round-trip only
    // what fits in memory.
    if (r1cs.wire_to_label.empty() && r1cs.num_wires > (1u << 20)) return;
    auto again = zkfarm::parse_r1cs<Fr>(zkfarm::FileBytes::adopt(zkfarm::serialize_r1cs(r1cs), "rt"));
    // Without a wire map in the input the writer emits the identity map.
    if (r1cs.wire_to_label.empty()) again.wire_to_label.clear();
    if (!(again == r1cs)) std::abort();
  } catch (const zkfarm::FormatError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto file = zkfarm::FileBytes::copy({data, size}, "fuzz.r1cs");
  try {
    zkfarm::r1cs_curve(file);
  } catch (const zkfarm::FormatError&) {
  }
  run<zkfarm::Bn254Fr>(file);
  run<zkfarm::Bls12381Fr>(file);
  return 0;
}
