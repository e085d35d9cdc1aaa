// groth16_types.h -- the plain data of Groth16: proofs, verifying keys and
// the header every proving key shares.
//
// Shared by the prover, the verifier, the file formats (snarkjs JSON,
// Filecoin's 192-byte encoding, the .zkey), the setup and the device key.
// Points are affine, infinity = (0, 0) as everywhere in kernels/.
#pragma once

#include <cstdint>
#include <span>
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

// The sizes of a circuit's Groth16 key, as a .zkey's header states them.
// Curve-independent, so records that know a circuit only by its sizes (the
// circuit record in Redis, a setup report) hold the same struct.
struct Groth16KeySizes {
  std::uint32_t num_vars = 0;     // witness length, w[0] = 1 included
  std::uint32_t num_public = 0;   // public signals, w[0] excluded
  std::uint32_t domain_size = 0;  // power of two

  Groth16KeySizes& sizes() { return *this; }
  const Groth16KeySizes& sizes() const { return *this; }
};

// A key's header: its sizes and its six single points (section 2 of a
// .zkey). Every proving-key type derives from it (Zkey, ZkeyWriteInput,
// Groth16ProvingKey, Groth16SetupKey, cuda::DeviceProvingKey), so one key
// takes another's header as one value: `key.header() = zkey.header()`.
template <class Curve>
struct Groth16KeyHeader : Groth16KeySizes {
  using G1Affine = typename Curve::G1Affine;
  using G2Affine = typename Curve::G2Affine;

  G1Affine alpha1{}, beta1{}, delta1{};
  G2Affine beta2{}, gamma2{}, delta2{};

  Groth16KeyHeader& header() { return *this; }
  const Groth16KeyHeader& header() const { return *this; }

  // The verifying key of this header with its IC points ic (num_public + 1),
  // copied. Does not check ic's size: the key's reader did.
  Groth16VerifyingKey<Curve> verifying_key(std::span<const G1Affine> ic) const {
    Groth16VerifyingKey<Curve> vk;
    vk.alpha1 = alpha1;
    vk.beta2 = beta2;
    vk.gamma2 = gamma2;
    vk.delta2 = delta2;
    vk.ic.assign(ic.begin(), ic.end());
    return vk;
  }
};

}  // namespace zkfarm
