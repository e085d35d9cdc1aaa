// curve_id.h -- the names of the curves zkfarm proves on, as a value.
//
// CurveId is how files, Redis records and wire messages say which curve they
// are for; kernels/curves.h turns one back into the curve's traits type
// (dispatch_curve). The values are part of the PCE file format: never renumber.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/field.h"

namespace zkfarm {

enum class CurveId : std::uint32_t {
  kBn254 = 1,
  kBls12381 = 2,
};

// snarkjs's name for the curve ("bn128", "bls12381").
inline const char* curve_name(CurveId id) {
  return id == CurveId::kBn254 ? "bn128" : id == CurveId::kBls12381 ? "bls12381" : "unknown";
}

// Human name for messages ("BN254", "BLS12-381").
inline const char* curve_display_name(CurveId id) {
  return id == CurveId::kBn254 ? "BN254" : id == CurveId::kBls12381 ? "BLS12-381" : "unknown";
}

// The curve whose scalar field is Fr (compile-time).
template <class Fr>
constexpr CurveId curve_of_scalar_field() {
  if constexpr (std::is_same_v<Fr, Bn254Fr>) {
    return CurveId::kBn254;
  } else {
    static_assert(std::is_same_v<Fr, Bls12381Fr>, "Fr must be Bn254Fr or Bls12381Fr");
    return CurveId::kBls12381;
  }
}

// The CurveId of a curve traits type (Bn254, Bls12381 from kernels/curves.h).
template <class Curve>
constexpr CurveId curve_id_of() {
  return curve_of_scalar_field<typename Curve::Fr>();
}

}  // namespace zkfarm
