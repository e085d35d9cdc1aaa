// wtns_test.cc -- .wtns reader/writer: snarkjs-made fixtures, round trips,
// wrong prime / count, truncation and corruption.
#include "formats/wtns.h"

#include <gtest/gtest.h>

#include "formats/test_util.h"

namespace zkfarm {
namespace {

using testing::fixture;
using testing::fixture_bytes;
using testing::format_error_of;
using testing::in_memory;

TEST(Wtns, ReadsSnarkjsFixtures) {
  auto w = read_wtns<Bn254Fr>(fixture("bn128_mul.wtns"));
  ASSERT_EQ(w.size(), 7u);
  EXPECT_EQ(w[0], Bn254Fr::one());
  EXPECT_EQ(w[1].to_decimal(), "3822");  // output c
  EXPECT_EQ(w[2].to_decimal(), "11");    // public input b
  EXPECT_EQ(w[3], -Bn254Fr::one());      // public input k = r - 1
  EXPECT_EQ(w[4].to_decimal(), "3");     // private input a
  auto v = read_wtns<Bls12381Fr>(fixture("bls12381_mul.wtns"), 7);
  EXPECT_EQ(v[3], -Bls12381Fr::one());
  EXPECT_EQ(wtns_curve(FileBytes::map(fixture("bls12381_mul.wtns"))), CurveId::kBls12381);
  EXPECT_EQ(wtns_curve(FileBytes::map(fixture("bn128_mul.wtns"))), CurveId::kBn254);
}

TEST(Wtns, RoundTripIsByteExact) {
  auto bytes = fixture_bytes("bn128_mul.wtns");
  auto w = parse_wtns<Bn254Fr>(in_memory(bytes));
  EXPECT_EQ(serialize_wtns<Bn254Fr>(w), bytes);
  std::string path = testing::temp_path("rt.wtns");
  write_wtns<Bn254Fr>(path, w);
  EXPECT_EQ(testing::read_file(path), bytes);
  std::remove(path.c_str());
  auto bls = fixture_bytes("bls12381_mul.wtns");
  EXPECT_EQ(serialize_wtns<Bls12381Fr>(parse_wtns<Bls12381Fr>(in_memory(bls))), bls);
}

TEST(Wtns, LargeWitnessRoundTrip) {
  std::vector<Bn254Fr> w(100000);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = Bn254Fr::from_u64(i * 7919 + 1).square();
  EXPECT_EQ(parse_wtns<Bn254Fr>(in_memory(serialize_wtns<Bn254Fr>(w))), w);
}

TEST(Wtns, WrongCountNamesBoth) {
  std::string msg = format_error_of([] { read_wtns<Bn254Fr>(fixture("bn128_mul.wtns"), 9); });
  EXPECT_NE(msg.find("bn128_mul.wtns: section 1 (header): witness has 7 values, the circuit expects 9"),
            std::string::npos)
      << msg;
}

TEST(Wtns, ParsesIntoCallersMemory) {
  auto file = in_memory(fixture_bytes("bn128_mul.wtns"));
  EXPECT_EQ(wtns_count(file), 7u);
  std::vector<Bn254Fr> out(7);
  parse_wtns_into<Bn254Fr>(file, std::span<Bn254Fr>(out));
  EXPECT_EQ(out, parse_wtns<Bn254Fr>(file));
  std::vector<Bn254Fr> small(6);
  auto msg = format_error_of([&] { parse_wtns_into<Bn254Fr>(file, std::span<Bn254Fr>(small)); });
  EXPECT_NE(msg.find("witness has 7 values, the circuit expects 6"), std::string::npos) << msg;
  std::vector<Bls12381Fr> other(7);
  msg = format_error_of([&] { parse_wtns_into<Bls12381Fr>(file, std::span<Bls12381Fr>(other)); });
  EXPECT_NE(msg.find("expected BLS12-381"), std::string::npos) << msg;
}

TEST(Wtns, WrongPrimeNamesBoth) {
  std::string msg = format_error_of([] { read_wtns<Bn254Fr>(fixture("bls12381_mul.wtns")); });
  EXPECT_NE(msg.find("prime is the BLS12-381 scalar field (5243"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected BN254 (2188"), std::string::npos) << msg;
  auto b = fixture_bytes("bn128_mul.wtns");
  b[testing::section_body_offset(b, 1) + 10] ^= 0x40;
  msg = format_error_of([&] { parse_wtns<Bn254Fr>(in_memory(b)); });
  EXPECT_NE(msg.find("unsupported prime"), std::string::npos) << msg;
}

TEST(Wtns, ValuesSectionSizeAndRange) {
  auto bytes = fixture_bytes("bn128_mul.wtns");
  auto b = bytes;
  testing::put_u32(b, testing::section_body_offset(b, 1) + 4 + 32, 0xffffffff);  // nWitness
  std::string msg = format_error_of([&] { parse_wtns<Bn254Fr>(in_memory(b)); });
  EXPECT_NE(msg.find("section 2 (values): expected 4294967295 values of 32 bytes = 137438953440 "
                     "bytes, found 224"),
            std::string::npos)
      << msg;
  b = bytes;
  std::size_t v = testing::section_body_offset(b, 2);
  for (int i = 0; i < 32; ++i) b[v + 5 * 32 + i] = 0xff;
  msg = format_error_of([&] { parse_wtns<Bn254Fr>(in_memory(b)); });
  EXPECT_NE(msg.find("value 5 is not below the prime"), std::string::npos) << msg;
}

TEST(Wtns, VersionAndMagic) {
  auto bytes = fixture_bytes("bn128_mul.wtns");
  auto b = bytes;
  testing::put_u32(b, 4, 1);
  EXPECT_NE(format_error_of([&] { parse_wtns<Bn254Fr>(in_memory(b)); })
                .find("unsupported wtns version: expected 2, found 1"),
            std::string::npos);
  b = bytes;
  b[3] = 'x';
  EXPECT_NE(format_error_of([&] { parse_wtns<Bn254Fr>(in_memory(b)); }).find("wrong magic"),
            std::string::npos);
}

TEST(Wtns, TruncatedAndFlipped) {
  auto bytes = fixture_bytes("bls12381_mul.wtns");
  testing::expect_every_prefix_fails(bytes, [](std::vector<std::uint8_t> b) {
    parse_wtns<Bls12381Fr>(in_memory(b));
  });
  testing::expect_byte_flips_safe(bytes, [](std::vector<std::uint8_t> b) {
    parse_wtns<Bls12381Fr>(in_memory(b), 7);
  });
}

}  // namespace
}  // namespace zkfarm
