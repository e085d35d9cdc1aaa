// bls12_381_compress_test.cc -- the zcash/Filecoin compressed encoding:
// published generator encodings, encodings from @noble/curves
// (tests/vectors), round trips of random points (both signs of y), and
// rejection of every kind of malformed input.
#include "kernels/bls12_381_compress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "base/hex.h"
#include "kernels/curve_vectors_testutil.h"
#include "kernels/seeded_random_testutil.h"

namespace zkfarm::bls12_381 {
namespace {


// The message of the std::invalid_argument thrown by f, or "" if none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Bls12381Compress, Generators) {
  // The generators' encodings as published with the curve (zcash, IETF).
  EXPECT_EQ(to_hex(compress_g1(Bls12381::g1_generator())),
            "97f1d3a73197d7942695638c4fa9ac0fc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb");
  EXPECT_EQ(to_hex(compress_g2(Bls12381::g2_generator())),
            "93e02b6052719f607dacd3a088274f65596bd0d09920b61ab5da61bbdc7f5049334cf11213945d57e5ac7d055d042b7e"
            "024aa2b2f08f0a91260805272dc51051c6e47ad4fa403b02b4510b647ae3d1770bac0326a805bbefd48056c8c121bdb8");
  EXPECT_EQ(decompress_g1(compress_g1(Bls12381::g1_generator())), Bls12381::g1_generator());
  EXPECT_EQ(decompress_g2(compress_g2(Bls12381::g2_generator())), Bls12381::g2_generator());
}

TEST(Bls12381Compress, Identity) {
  auto g1 = compress_g1(Bls12381::G1Affine::identity());
  auto g2 = compress_g2(Bls12381::G2Affine::identity());
  EXPECT_EQ(to_hex(g1), "c0" + std::string(94, '0'));
  EXPECT_EQ(to_hex(g2), "c0" + std::string(190, '0'));
  EXPECT_TRUE(decompress_g1(g1).is_identity());
  EXPECT_TRUE(decompress_g2(g2).is_identity());
}

TEST(Bls12381Compress, RoundTripBothSigns) {
  std::mt19937_64 rng(1);
  int largest_g1 = 0, largest_g2 = 0;
  for (int i = 0; i < 8; ++i) {
    auto s = seeded_element<Bls12381::Fr>(rng);
    auto p = Bls12381::G1::from_affine(Bls12381::g1_generator()).scalar_mul(s).to_affine();
    auto q = Bls12381::G2::from_affine(Bls12381::g2_generator()).scalar_mul(s).to_affine();
    for (auto pp : {p, -p}) {
      auto bytes = compress_g1(pp);
      largest_g1 += (bytes[0] & 0x20) != 0;
      EXPECT_EQ(decompress_g1(bytes), pp);
    }
    for (auto qq : {q, -q}) {
      auto bytes = compress_g2(qq);
      largest_g2 += (bytes[0] & 0x20) != 0;
      EXPECT_EQ(decompress_g2(bytes), qq);
    }
  }
  EXPECT_EQ(largest_g1, 8);  // exactly one of y, -y is the largest
  EXPECT_EQ(largest_g2, 8);
}

TEST(Bls12381Compress, ProofRoundTrip) {
  std::mt19937_64 rng(2);
  const auto g1 = Bls12381::G1::from_affine(Bls12381::g1_generator());
  const auto g2 = Bls12381::G2::from_affine(Bls12381::g2_generator());
  Groth16Proof<Bls12381> proof;
  proof.a = g1.scalar_mul(seeded_element<Bls12381::Fr>(rng)).to_affine();
  proof.b = g2.scalar_mul(seeded_element<Bls12381::Fr>(rng)).to_affine();
  proof.c = g1.scalar_mul(seeded_element<Bls12381::Fr>(rng)).to_affine();
  const auto bytes = compress_proof(proof);
  const auto a = compress_g1(proof.a);
  const auto b = compress_g2(proof.b);
  const auto c = compress_g1(proof.c);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), bytes.begin()));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), bytes.begin() + 48));
  EXPECT_TRUE(std::equal(c.begin(), c.end(), bytes.begin() + 144));
  EXPECT_EQ(decompress_proof(bytes), proof);
  EXPECT_EQ(error_of([&] { decompress_proof(std::span<const std::uint8_t>(bytes).first(191)); }),
            "proof: expected 192 bytes, found 191");
}

TEST(Bls12381Compress, RejectsMalformedInput) {
  auto g1 = compress_g1(Bls12381::g1_generator());
  auto g2 = compress_g2(Bls12381::g2_generator());
  auto check = [](auto bytes_copy, auto decode, const std::string& expected) {
    std::string message = error_of([&] { decode(std::span<const std::uint8_t>(bytes_copy)); });
    EXPECT_NE(message.find(expected), std::string::npos) << "got: '" << message << "'";
  };
  auto d1 = [](std::span<const std::uint8_t> b) { return decompress_g1(b); };
  auto d2 = [](std::span<const std::uint8_t> b) { return decompress_g2(b); };

  // Wrong length.
  check(std::vector<std::uint8_t>(g1.begin(), g1.end() - 1), d1, "expected 48");
  check(std::vector<std::uint8_t>(g2.begin(), g2.end() - 1), d2, "expected 96");
  // Compression flag missing.
  auto a = g1;
  a[0] &= 0x7f;
  check(a, d1, "compression flag");
  auto b = g2;
  b[0] &= 0x7f;
  check(b, d2, "compression flag");
  // Infinity with extra bits.
  auto inf = compress_g1(Bls12381::G1Affine::identity());
  inf[47] = 1;
  check(inf, d1, "infinity");
  auto inf_sign = compress_g2(Bls12381::G2Affine::identity());
  inf_sign[0] |= 0x20;
  check(inf_sign, d2, "infinity");
  // x >= p: p itself, with the compression flag.
  auto p_bytes = from_hex(
      "9a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab");
  check(p_bytes, d1, "not below");
  auto g2_big_c0 = g2;
  std::copy(p_bytes.begin(), p_bytes.end(), g2_big_c0.begin() + 48);
  g2_big_c0[48] &= 0x1f;
  check(g2_big_c0, d2, "x.c0 is not below");
  // x not on the curve: find the first small x with x^3 + 4 a non-square.
  for (std::uint64_t x = 1;; ++x) {
    auto fx = Bls12381::Fq::from_u64(x);
    if ((fx.square() * fx + Bls12381::Fq::from_u64(4)).sqrt()) continue;
    std::array<std::uint8_t, 48> enc{};
    enc[47] = std::uint8_t(x);
    enc[0] = 0x80;
    check(enc, d1, "not the x-coordinate");
    break;
  }
  for (std::uint64_t x = 1;; ++x) {
    auto fx = Bls12381::Fq2::from_u64(x);
    if ((fx.square() * fx + Bls12381G2Config::kB).sqrt()) continue;
    std::array<std::uint8_t, 96> enc{};
    enc[95] = std::uint8_t(x);
    enc[0] = 0x80;
    check(enc, d2, "not the x-coordinate");
    break;
  }
  // On the curve but outside the subgroup.
  for (std::uint64_t x = 1;; ++x) {
    auto fx = Bls12381::Fq::from_u64(x);
    if (!(fx.square() * fx + Bls12381::Fq::from_u64(4)).sqrt()) continue;
    std::array<std::uint8_t, 48> enc{};
    enc[47] = std::uint8_t(x);
    enc[0] = 0x80;
    check(enc, d1, "not in the prime-order subgroup");
    break;
  }
  for (std::uint64_t x = 1;; ++x) {
    auto fx = Bls12381::Fq2::from_u64(x);
    if (!(fx.square() * fx + Bls12381G2Config::kB).sqrt()) continue;
    std::array<std::uint8_t, 96> enc{};
    enc[95] = std::uint8_t(x);
    enc[0] = 0x80;
    check(enc, d2, "not in the prime-order subgroup");
    break;
  }
}

TEST(Bls12381Compress, MatchesNoble) {
  const auto& v = curve_vectors::for_curve<Bls12381>();
  const auto& g1 = v.at("g1");
  const auto& g2 = v.at("g2");
  const auto& g1_hex = v.at("g1_compressed");
  const auto& g2_hex = v.at("g2_compressed");
  ASSERT_EQ(g1.size(), g1_hex.size());
  ASSERT_EQ(g2.size(), g2_hex.size());
  for (std::size_t i = 0; i < g1.size(); ++i) {
    auto p = curve_vectors::parse_g1<Bls12381>(g1[i]);
    EXPECT_EQ(to_hex(compress_g1(p)), g1_hex[i].get<std::string>()) << i;
    EXPECT_EQ(decompress_g1(from_hex(g1_hex[i].get<std::string>())), p) << i;
  }
  for (std::size_t i = 0; i < g2.size(); ++i) {
    auto q = curve_vectors::parse_g2<Bls12381>(g2[i]);
    EXPECT_EQ(to_hex(compress_g2(q)), g2_hex[i].get<std::string>()) << i;
    EXPECT_EQ(decompress_g2(from_hex(g2_hex[i].get<std::string>())), q) << i;
  }
}

}  // namespace
}  // namespace zkfarm::bls12_381
