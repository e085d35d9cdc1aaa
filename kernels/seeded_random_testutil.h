// seeded_random_testutil.h -- field elements drawn from a seeded
// std::mt19937_64, for tests and benchmarks that need repeatable inputs.
// Not for secrets (kernels/random.h draws those from the OS).
#pragma once

#include <random>

namespace zkfarm {

// A field element of F (an Fp, or an Fq2 from two of them): random limbs
// reduced mod p by from_canonical (the bias is irrelevant for tests).
template <class F>
F seeded_element(std::mt19937_64& rng) {
  if constexpr (requires { F{}.c0; }) {
    using Base = decltype(F{}.c0);
    return F{seeded_element<Base>(rng), seeded_element<Base>(rng)};
  } else {
    typename F::Int v;
    for (auto& l : v.limbs) l = rng();
    return F::from_canonical(v);
  }
}

}  // namespace zkfarm
