// zkey_proving_key.h -- the prover's view of a parsed snarkjs .zkey.
//
// The prover (kernels/groth16_prover.h) takes plain spans of points so that it
// does not depend on any file format; this adapter points those spans into a
// parsed Zkey (itself views into the memory-mapped file). The Zkey must
// outlive the returned key.
#pragma once

#include "formats/zkey.h"
#include "kernels/groth16_prover.h"

namespace zkfarm {

template <class Curve>
Groth16ProvingKey<Curve> proving_key_from_zkey(const Zkey<Curve>& zkey) {
  Groth16ProvingKey<Curve> key;
  key.header() = zkey.header();
  key.a_points = zkey.a.span();
  key.b1_points = zkey.b1.span();
  key.b2_points = zkey.b2.span();
  key.c_points = zkey.c.span();
  key.h_points = zkey.h.span();
  return key;
}

}  // namespace zkfarm
