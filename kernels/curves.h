// curves.h -- every curve zkfarm proves on: Bn254 ("bn128") and Bls12381
// ("bls12381"). Code generic over the curve takes one of these traits
// structs as a template parameter (see docs/INTERFACES.md).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "kernels/bls12_381.h"
#include "kernels/bn254.h"
#include "kernels/curve_id.h"

namespace zkfarm {

// Calls fn(Bn254{}) or fn(Bls12381{}) and returns what it returns; the one
// place a CurveId becomes a curve type. Throws std::invalid_argument on an id
// that is neither.
template <class Fn>
auto dispatch_curve(CurveId id, Fn&& fn) {
  if (id == CurveId::kBn254) return fn(Bn254{});
  if (id == CurveId::kBls12381) return fn(Bls12381{});
  throw std::invalid_argument("unsupported curve id " + std::to_string(static_cast<unsigned>(id)));
}

// Bytes of one scalar field element (Fr) of curve id: n8r of the iden3 files,
// the size of a witness value. Throws as dispatch_curve.
inline std::size_t scalar_field_bytes(CurveId id) {
  return dispatch_curve(id, [](auto curve) { return decltype(curve)::Fr::kBytes; });
}

// Bytes of one base field element (Fq) of curve id: n8q of a .zkey, half an
// uncompressed G1 point. Throws as dispatch_curve.
inline std::size_t base_field_bytes(CurveId id) {
  return dispatch_curve(id, [](auto curve) { return decltype(curve)::Fq::kBytes; });
}

}  // namespace zkfarm
