// wtns_fuzz.cc -- libFuzzer target for the .wtns reader.
//
// Any input must either parse or throw FormatError; inputs that parse must
// re-encode to the same witness. The summary reader (read_wtns_summary) must
// agree with the full parse, and every prefix must give nothing or the
// summary of the whole file.
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

// The summary of the whole file (num_public from the first byte), then of
// prefixes: each is nothing or the same summary, or throws FormatError.
void summaries(const std::uint8_t* data, std::size_t size) {
  const std::uint32_t num_public = size > 0 ? data[0] % 8 : 0;
  std::optional<zkfarm::WtnsSummary> whole;
  try {
    whole = zkfarm::read_wtns_summary({data, size}, size, num_public, "fuzz.wtns");
    if (size > 0 && !whole) std::abort();  // the whole file always decides
  } catch (const zkfarm::FormatError&) {
  }
  if (whole) {
    try {
      auto values = zkfarm::parse_wtns<zkfarm::Bn254Fr>(zkfarm::FileBytes::copy({data, size}, "fuzz.wtns"));
      if (whole->curve != zkfarm::CurveId::kBn254 || values.size() != whole->num_values) std::abort();
    } catch (const zkfarm::FormatError&) {
    }
  }
  for (std::size_t n : {size / 2, size / 3, std::size_t(64), std::size_t(200)}) {
    if (n > size) continue;
    try {
      auto part = zkfarm::read_wtns_summary({data, n}, size, num_public, "fuzz.wtns");
      if (part && (!whole || part->public_inputs != whole->public_inputs || part->num_values != whole->num_values))
        std::abort();
    } catch (const zkfarm::FormatError&) {
      // A prefix may fail where the whole file fails later checks too, but never when it is sound.
      if (whole) std::abort();
    }
  }
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  summaries(data, size);
  auto file = zkfarm::FileBytes::copy({data, size}, "fuzz.wtns");
  try {
    zkfarm::wtns_curve(file);
  } catch (const zkfarm::FormatError&) {
  }
  run<zkfarm::Bn254Fr>(file);
  run<zkfarm::Bls12381Fr>(file);
  return 0;
}
