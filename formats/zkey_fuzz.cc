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
    for (std::size_t i = 0; i < z.coefficients.size(); ++i) coefficients.push_back(z.coefficients[i]);
    zkfarm::ZkeyWriteInput<Curve> in;
    in.num_vars = z.num_vars;
    in.num_public = z.num_public;
    in.domain_size = z.domain_size;
    in.alpha1 = z.alpha1;
    in.beta1 = z.beta1;
    in.delta1 = z.delta1;
    in.beta2 = z.beta2;
    in.gamma2 = z.gamma2;
    in.delta2 = z.delta2;
    in.coefficients = coefficients;
    in.ic = z.ic.span();
    in.a = z.a.span();
    in.b1 = z.b1.span();
    in.b2 = z.b2.span();
    in.c = z.c.span();
    in.h = z.h.span();
    in.circuit_hash = z.circuit_hash;
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
