// snarkjs_json_test.cc -- snarkjs JSON: byte-exact re-encoding of
// snarkjs-made verification keys, proofs and public inputs on both curves,
// and clear errors for malformed or hostile JSON.
#include "formats/snarkjs_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "formats/test_util.h"

namespace zkfarm {
namespace {

using testing::fixture;
using testing::format_error_of;

std::string text_of(const std::string& name) {
  auto b = testing::fixture_bytes(name);
  return std::string(b.begin(), b.end());
}

template <class Curve>
void check_round_trip(const std::string& prefix) {
  using Fr = typename Curve::Fr;
  const std::string vk_text = text_of(prefix + "_verification_key.json");
  const std::string proof_text = text_of(prefix + "_proof.json");
  const std::string public_text = text_of(prefix + "_public.json");
  auto vk = verification_key_from_json<Curve>(vk_text, "vk.json");
  auto proof = proof_from_json<Curve>(proof_text, "proof.json");
  auto pub = public_signals_from_json<Fr>(public_text, "public.json");
  EXPECT_EQ(vk.num_public(), 3u);
  EXPECT_EQ(pub.size(), 3u);
  EXPECT_EQ(pub[0].to_decimal(), "3822");
  // Byte-identical to what snarkjs wrote, vk_alphabeta_12 included.
  EXPECT_EQ(verification_key_to_json(vk), vk_text);
  EXPECT_EQ(proof_to_json(proof), proof_text);
  EXPECT_EQ(public_signals_to_json<Fr>(pub), public_text);
  EXPECT_EQ(snarkjs_json_curve(vk_text, "vk.json"), curve_id_of<Curve>());
  EXPECT_EQ(snarkjs_json_curve(proof_text, "proof.json"), curve_id_of<Curve>());
  // Files.
  std::string path = testing::temp_path("vk.json");
  write_verification_key(path, vk);
  auto back = read_verification_key<Curve>(path);
  EXPECT_TRUE(back.ic == vk.ic && back.alpha1 == vk.alpha1);
  std::remove(path.c_str());
  path = testing::temp_path("proof.json");
  write_proof(path, proof);
  EXPECT_EQ(read_proof<Curve>(path), proof);
  std::remove(path.c_str());
  path = testing::temp_path("public.json");
  write_public_signals<Fr>(path, pub);
  EXPECT_EQ(read_public_signals<Fr>(path), pub);
  std::remove(path.c_str());
}

TEST(SnarkjsJson, RoundTripBn254) { check_round_trip<Bn254>("bn128"); }
TEST(SnarkjsJson, RoundTripBls12381) { check_round_trip<Bls12381>("bls12381"); }

TEST(SnarkjsJson, IdentityPoints) {
  auto vk = verification_key_from_json<Bn254>(text_of("bn128_verification_key.json"), "vk");
  vk.ic[2] = Bn254::G1Affine::identity();
  const std::string text = verification_key_to_json(vk);
  EXPECT_NE(text.find("[\n   \"0\",\n   \"1\",\n   \"0\"\n  ]"), std::string::npos);
  auto back = verification_key_from_json<Bn254>(text, "vk");
  EXPECT_TRUE(back.ic[2].is_identity());
  Groth16Proof<Bn254> proof{Bn254::G1Affine::identity(), Bn254::G2Affine::identity(),
                            Bn254::g1_generator()};
  EXPECT_EQ(proof_from_json<Bn254>(proof_to_json(proof), "p"), proof);
}

using Json = nlohmann::ordered_json;

// Applies edit to the parsed fixture and returns the error for parsing it back.
template <class F>
std::string vk_error(F edit) {
  Json j = Json::parse(text_of("bn128_verification_key.json"));
  edit(j);
  return format_error_of([&] { verification_key_from_json<Bn254>(j.dump(1), "vk.json"); });
}
template <class F>
std::string proof_error(F edit) {
  Json j = Json::parse(text_of("bn128_proof.json"));
  edit(j);
  return format_error_of([&] { proof_from_json<Bn254>(j.dump(1), "proof.json"); });
}

TEST(SnarkjsJson, VkErrorsNameFileAndKey) {
  EXPECT_EQ(vk_error([](Json& j) { j["IC"][3][0] = "5"; }), "vk.json: IC[3]: point is not on the bn128 curve");
  EXPECT_EQ(vk_error([](Json& j) { j.erase("vk_beta_2"); }), "vk.json: vk_beta_2: missing");
  EXPECT_EQ(vk_error([](Json& j) { j["curve"] = "bls12381"; }),
            "vk.json: curve: expected \"bn128\", found \"bls12381\"");
  EXPECT_EQ(vk_error([](Json& j) { j["protocol"] = "plonk"; }),
            "vk.json: protocol: expected \"groth16\", found \"plonk\"");
  EXPECT_EQ(vk_error([](Json& j) { j["nPublic"] = 4; }),
            "vk.json: nPublic: expected 3 (IC has 4 points), found 4");
  EXPECT_EQ(vk_error([](Json& j) { j["vk_alphabeta_12"][1][2][0] = "7"; }),
            "vk.json: vk_alphabeta_12: does not equal e(vk_alpha_1, vk_beta_2)");
  EXPECT_EQ(vk_error([](Json& j) { j["vk_alpha_1"][0] = 5; }),
            "vk.json: vk_alpha_1[0]: expected a decimal string");
  EXPECT_EQ(vk_error([](Json& j) {
              j["vk_alpha_1"][1] = "21888242871839275222246405745257275088696311157297823662689037894645226208583";
            }),
            "vk.json: vk_alpha_1[1]: \"21888242871839275222246405745257275088696311157297823662689037894645226208583\" "
            "is not a decimal number below the BN254 Fq modulus");
  EXPECT_EQ(vk_error([](Json& j) { j["vk_gamma_2"][2] = Json::array({"2", "0"}); }),
            "vk.json: vk_gamma_2: expected an affine point (last coordinate 1 or 0)");
  EXPECT_EQ(vk_error([](Json& j) { j["vk_delta_2"][0] = Json::array({"1"}); }),
            "vk.json: vk_delta_2[0]: expected an array of 2 elements");
  EXPECT_EQ(vk_error([](Json& j) { j["IC"] = Json::array(); }),
            "vk.json: IC: expected a non-empty array of G1 points");
  EXPECT_EQ(vk_error([](Json& j) { j["vk_alpha_1"][0] = "-1"; }).find("vk.json: vk_alpha_1[0]: \"-1\" is not"), 0u);
}

TEST(SnarkjsJson, ProofErrors) {
  EXPECT_EQ(proof_error([](Json& j) { j["pi_c"][1] = "1"; }), "proof.json: pi_c: point is not on the bn128 curve");
  EXPECT_EQ(proof_error([](Json& j) { j["pi_b"][0][1] = "0"; }), "proof.json: pi_b: point is not on the bn128 curve");
  EXPECT_EQ(proof_error([](Json& j) { j.erase("pi_a"); }), "proof.json: pi_a: missing");
  EXPECT_EQ(proof_error([](Json& j) { j["curve"] = "bn254"; }),
            "proof.json: curve: expected \"bn128\", found \"bn254\"");
  // A point of the BN254 twist outside the r-torsion subgroup: (x, y) on
  // E'(Fq2) found by trying x = 1, 2, ... (the cofactor is not 1).
  std::string msg;
  using Fq2 = Bn254::Fq2;
  for (std::uint64_t x = 1; x < 100 && msg.empty(); ++x) {
    Fq2 fx{Bn254::Fq::from_u64(x), Bn254::Fq::zero()};
    auto y = (fx.square() * fx + Bn254G2Config::kB).sqrt();
    if (!y) continue;
    Bn254::G2Affine p{fx, *y};
    if (p.is_in_subgroup()) continue;
    msg = proof_error([&](Json& j) {
      j["pi_b"] = Json::array({Json::array({p.x.c0.to_decimal(), p.x.c1.to_decimal()}),
                               Json::array({p.y.c0.to_decimal(), p.y.c1.to_decimal()}),
                               Json::array({"1", "0"})});
    });
  }
  EXPECT_EQ(msg, "proof.json: pi_b: point is not in the bn128 prime-order subgroup");
  // Old snarkjs proofs without "curve"/"protocol" still parse.
  Json j = Json::parse(text_of("bn128_proof.json"));
  j.erase("curve");
  j.erase("protocol");
  EXPECT_NO_THROW(proof_from_json<Bn254>(j.dump(), "p"));
}

TEST(SnarkjsJson, NotJsonAndWrongShapes) {
  EXPECT_EQ(format_error_of([] { proof_from_json<Bn254>("{\"pi_a\": [", "p.json"); }).find("p.json: invalid JSON"), 0u);
  EXPECT_EQ(format_error_of([] { proof_from_json<Bn254>("[1,2]", "p.json"); }),
            "p.json: expected a JSON object at the top level");
  EXPECT_EQ(format_error_of([] { public_signals_from_json<Bn254Fr>("{\"a\":1}", "pub.json"); }),
            "pub.json: expected a JSON array of decimal strings");
  EXPECT_EQ(format_error_of([] { public_signals_from_json<Bn254Fr>("[\"1\", 2]", "pub.json"); }),
            "pub.json: [1]: expected a decimal string");
  EXPECT_EQ(format_error_of([] { snarkjs_json_curve("{\"curve\":\"bn254\"}", "x.json"); }),
            "x.json: curve: expected \"bn128\" or \"bls12381\", found \"bn254\"");
  // Deep nesting must not crash.
  std::string deep(100000, '[');
  EXPECT_EQ(format_error_of([&] { public_signals_from_json<Bn254Fr>(deep, "d.json"); }).find("d.json: invalid JSON"), 0u);
  EXPECT_THROW(read_proof<Bn254>("/nonexistent/proof.json"), FormatError);
}

}  // namespace
}  // namespace zkfarm
