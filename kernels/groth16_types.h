// groth16_types.h -- the plain data of Groth16: proofs and verifying keys.
//
// Shared by the prover, the verifier, the file formats (snarkjs JSON,
// Filecoin's 192-byte encoding) and, later, the wire protocol. Points are
// affine, infinity = (0, 0) as everywhere in kernels/.
#pragma once

#include <vector>

#include "kernels/curves.h"

namespace zkfarm {

template <class Curve>
struct Groth16Proof {
  typename Curve::G1Affine a;
  typename Curve::G2Affine b;
  typename Curve::G1Affine c;
  bool operator==(const Groth16Proof&) const = default;
};

template <class Curve>
struct Groth16VerifyingKey {
  typename Curve::G1Affine alpha1;
  typename Curve::G2Affine beta2;
  typename Curve::G2Affine gamma2;
  typename Curve::G2Affine delta2;
  // ic[0] is the constant term; ic.size() == number of public inputs + 1.
  std::vector<typename Curve::G1Affine> ic;
  std::size_t num_public() const { return ic.empty() ? 0 : ic.size() - 1; }
};

}  // namespace zkfarm
