// zkey_fuzz.cc -- libFuzzer target for the .zkey reader (and the PCE builder
// that consumes its coefficient section).
//
// Any input must either parse or throw FormatError. Keys that parse (all
// checks on, points included) must re-encode to an equal key and yield a PCE.
#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "formats/pce.h"
#include "formats/zkey.h"

namespace {

template <class Curve>
void run(const std::shared_ptr<const zkfarm::FileBytes>& file) {
  using Fr = typename Curve::Fr;
  try {
    auto z = zkfarm::parse_zkey<Curve>(file, {.validate_coefficients = true, .validate_points = true});
    auto pce = pce_from_zkey(z.coefficients, z.num_public);
    if (pce.num_rows() > z.domain_size) std::abort();
    std::vector<zkfarm::ZkeyCoefficient<Fr>> coefficients;
    const auto in = zkfarm::rewrite_input(z, coefficients);
    auto again = zkfarm::parse_zkey<Curve>(zkfarm::FileBytes::adopt(zkfarm::serialize_zkey(in), "rt"));
    auto same = [](auto a, auto b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); };
    if (again.num_vars != z.num_vars || !same(again.a.span(), z.a.span()) ||
        !same(again.b2.span(), z.b2.span()) || !same(again.h.span(), z.h.span()) ||
        again.coefficients.size() != z.coefficients.size())
      std::abort();
  } catch (const zkfarm::FormatError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto file = zkfarm::FileBytes::copy({data, size}, "fuzz.zkey");
  try {
    zkfarm::zkey_curve(file);
  } catch (const zkfarm::FormatError&) {
  }
  run<zkfarm::Bn254>(file);
  run<zkfarm::Bls12381>(file);
  return 0;
}
