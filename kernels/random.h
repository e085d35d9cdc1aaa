// random.h -- field elements from the operating system's CSPRNG.
//
// Groth16's blinding factors r, s and the batch-verification weights must be
// unpredictable: they come from getrandom(2), never from a seeded PRNG.
// (Tests fix r and s explicitly through the prover's options instead.)
#pragma once

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace zkfarm {

// Fills out with len bytes from getrandom(2). Throws std::runtime_error if the
// kernel cannot supply them.
inline void os_random_bytes(void* out, std::size_t len) {
  auto* p = static_cast<std::uint8_t*>(out);
  while (len > 0) {
    ssize_t got = getrandom(p, len, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("getrandom failed: ") + std::strerror(errno));
    }
    p += got;
    len -= std::size_t(got);
  }
}

// A uniformly random element of F (bias below 2^-128: 2*kBytes random bytes
// reduced modulo p as lo + hi * 2^(64N)).
template <class F>
F random_field_element() {
  typename F::Int lo, hi;
  os_random_bytes(lo.limbs.data(), sizeof(lo.limbs));
  os_random_bytes(hi.limbs.data(), sizeof(hi.limbs));
  // from_canonical reduces by repeated subtraction: clear the top bits first
  // so that at most a few subtractions are needed, keeping 64 extra bits.
  auto clamp = [](typename F::Int& v) {
    std::size_t bits = F::kBits;
    for (std::size_t i = 0; i < F::N; ++i) {
      std::size_t lo_bit = 64 * i;
      if (lo_bit >= bits) v.limbs[i] = 0;
      else if (bits - lo_bit < 64) v.limbs[i] &= (std::uint64_t(1) << (bits - lo_bit)) - 1;
    }
  };
  clamp(lo);
  clamp(hi);
  // hi * R: from_mont(hi) has value hi * R^-1; times R^2 (from_mont(kR2)) ... we
  // want hi * 2^(64N) = hi * R, i.e. the element whose Montgomery form is hi * R^2.
  F hi_times_r = F::from_canonical(hi) * F::from_mont(F::kR2);
  return F::from_canonical(lo) + hi_times_r;
}

// A uniformly random non-zero element below 2^bits (bits <= 64 * F::N and
// below the modulus' bit length).
template <class F>
F random_field_element_bits(std::size_t bits) {
  for (;;) {
    typename F::Int v;
    os_random_bytes(v.limbs.data(), sizeof(v.limbs));
    for (std::size_t i = 0; i < F::N; ++i) {
      std::size_t lo_bit = 64 * i;
      if (lo_bit >= bits) v.limbs[i] = 0;
      else if (bits - lo_bit < 64) v.limbs[i] &= (std::uint64_t(1) << (bits - lo_bit)) - 1;
    }
    if (!v.is_zero()) return F::from_canonical(v);
  }
}

}  // namespace zkfarm
