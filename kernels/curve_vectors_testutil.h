// curve_vectors_testutil.h -- test-only loader for tests/vectors/curve_vectors.json,
// the curve, pairing and compression vectors printed by @noble/curves
// (tests/vectors/gen_curve_vectors.mjs), an implementation independent of ours.
//
// Points are affine canonical decimal strings (G2 coordinates [c0, c1]), the
// identity is null; Fq12 values are 12 decimal strings in tower order
// c0.c0.c0, c0.c0.c1, c0.c1.c0, ..., c1.c2.c1.
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>
#include <string>

namespace zkfarm::curve_vectors {

// The whole vector file. Throws std::runtime_error if it cannot be opened
// (tests run from the repository root, or Bazel's runfiles root).
inline const nlohmann::json& load() {
  static const nlohmann::json vectors = [] {
    const char* path = "tests/vectors/curve_vectors.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error(std::string("cannot open ") + path + " (run from the repo root)");
    return nlohmann::json::parse(in);
  }();
  return vectors;
}

// The section of one curve, keyed by its snarkjs name (Curve::kName).
template <class Curve>
const nlohmann::json& for_curve() {
  return load().at(Curve::kName);
}

template <class Curve>
typename Curve::Fq parse_fq(const nlohmann::json& j) {
  return Curve::Fq::from_decimal(j.get<std::string>());
}
template <class Curve>
typename Curve::Fq2 parse_fq2(const nlohmann::json& j) {
  return typename Curve::Fq2{parse_fq<Curve>(j.at(0)), parse_fq<Curve>(j.at(1))};
}
template <class Curve>
typename Curve::G1Affine parse_g1(const nlohmann::json& j) {
  if (j.is_null()) return Curve::G1Affine::identity();
  return typename Curve::G1Affine{parse_fq<Curve>(j.at("x")), parse_fq<Curve>(j.at("y"))};
}
template <class Curve>
typename Curve::G2Affine parse_g2(const nlohmann::json& j) {
  if (j.is_null()) return Curve::G2Affine::identity();
  return typename Curve::G2Affine{parse_fq2<Curve>(j.at("x")), parse_fq2<Curve>(j.at("y"))};
}
template <class Curve>
typename Curve::Fq12 parse_fq12(const nlohmann::json& j) {
  typename Curve::Fq12 f;
  int i = 0;
  for (auto* c : {&f.c0, &f.c1})
    for (auto* d : {&c->c0, &c->c1, &c->c2}) {
      d->c0 = parse_fq<Curve>(j.at(i++));
      d->c1 = parse_fq<Curve>(j.at(i++));
    }
  return f;
}
template <class Curve>
typename Curve::Fr parse_fr(const nlohmann::json& j) {
  return Curve::Fr::from_decimal(j.get<std::string>());
}

}  // namespace zkfarm::curve_vectors
