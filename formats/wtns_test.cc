// wtns_test.cc -- .wtns reader/writer: snarkjs-made fixtures, round trips,
// wrong prime / count, truncation and corruption; the summary reader over
// a prefix (header and public inputs only).
#include "formats/wtns.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <functional>

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
  EXPECT_NE(msg.find("unsupported prime: its 32 bytes are neither"), std::string::npos) << msg;
  // The file's own prime is not quoted: once the two known primes are taken
  // out, no long number is left.
  for (const std::string& known : {Bn254Fr::kModulus.to_decimal(), Bls12381Fr::kModulus.to_decimal()})
    for (std::size_t at = msg.find(known); at != std::string::npos; at = msg.find(known)) msg.erase(at, known.size());
  std::size_t run = 0, longest = 0;
  for (char c : msg) longest = std::max(longest, run = std::isdigit(static_cast<unsigned char>(c)) ? run + 1 : 0);
  EXPECT_LT(longest, 10u) << "a number from the file in: " << msg;
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


// The summary intake makes of a witness from its first bytes only.
TEST(WtnsSummary, FromTheFirstBytesAsFromTheWholeFile) {
  const auto whole = fixture_bytes("bn128_mul.wtns");
  const std::span<const std::uint8_t> bytes(whole);
  const std::uint32_t num_public = 3;
  const WtnsSummary full = read_wtns_summary(*in_memory(whole), num_public);
  EXPECT_EQ(full.curve, CurveId::kBn254);
  EXPECT_EQ(full.n8, 32u);
  EXPECT_EQ(full.num_values, 7u);
  EXPECT_EQ(full.values_offset, testing::section_body_offset(whole, 2));
  // witness[1..3] = 3822, 11, r - 1.
  const auto values = parse_wtns<Bn254Fr>(in_memory(whole));
  std::vector<std::uint8_t> expected(3 * 32);
  for (int i = 0; i < 3; ++i) values[1 + i].to_le_bytes(expected.data() + 32 * i);
  EXPECT_EQ(full.public_inputs, expected);
  const std::size_t need = static_cast<std::size_t>(wtns_prefix_bytes(num_public));
  ASSERT_LT(need, whole.size());
  // Every prefix gives nothing (read more) or the same summary, from `need` on.
  for (std::size_t n = 0; n <= whole.size(); ++n) {
    for (std::uint64_t total : {std::uint64_t(whole.size()), std::uint64_t(0)}) {
      const auto summary = read_wtns_summary(bytes.first(n), total, num_public, "w.wtns");
      EXPECT_EQ(summary.has_value(), n >= need) << n << " of " << total;
      if (!summary) continue;
      EXPECT_EQ(summary->curve, full.curve);
      EXPECT_EQ(summary->num_values, full.num_values);
      EXPECT_EQ(summary->public_inputs, full.public_inputs);
    }
  }
  // The BLS12-381 fixture too.
  const auto bls = read_wtns_summary(*in_memory(fixture_bytes("bls12381_mul.wtns")), num_public);
  EXPECT_EQ(bls.curve, CurveId::kBls12381);
  EXPECT_EQ(bls.num_values, 7u);
}

TEST(WtnsSummary, ErrorsSayExpectedAndFound) {
  const auto whole = fixture_bytes("bn128_mul.wtns");
  const std::span<const std::uint8_t> bytes(whole);
  const std::size_t need = static_cast<std::size_t>(wtns_prefix_bytes(3));
  const auto error_of = [](const std::function<void()>& f) { return format_error_of(f); };
  // A values section longer than the file.
  std::string msg = error_of([&] { read_wtns_summary(bytes.first(need), whole.size() - 1, 3, "w.wtns"); });
  EXPECT_NE(msg.find("w.wtns: section 2 (values): runs past the end of the file"), std::string::npos) << msg;
  // The whole file, one byte short or long.
  msg = error_of([&] { read_wtns_summary(bytes.first(whole.size() - 1), whole.size() - 1, 3, "w.wtns"); });
  EXPECT_NE(msg.find("runs past the end"), std::string::npos) << msg;
  auto longer = whole;
  longer.push_back(0);
  msg = error_of([&] { read_wtns_summary(*in_memory(longer), 3); });
  EXPECT_NE(msg.find("1 bytes after the last section, expected none"), std::string::npos) << msg;
  // Magic, version, prime, too few values, a values size that is not nWitness * 32.
  auto b = whole;
  b[0] = 'x';
  msg = error_of([&] { read_wtns_summary(*in_memory(b), 3); });
  EXPECT_NE(msg.find("wrong magic: expected \"wtns\""), std::string::npos) << msg;
  b = whole;
  testing::put_u32(b, 4, 1);
  msg = error_of([&] { read_wtns_summary(*in_memory(b), 3); });
  EXPECT_NE(msg.find("unsupported wtns version: expected 2, found 1"), std::string::npos) << msg;
  b = whole;
  b[testing::section_body_offset(b, 1) + 10] ^= 0x40;
  msg = error_of([&] { read_wtns_summary(*in_memory(b), 3); });
  EXPECT_NE(msg.find("unsupported prime"), std::string::npos) << msg;
  msg = error_of([&] { read_wtns_summary(*in_memory(whole), 7); });
  EXPECT_NE(msg.find("section 2 (values): has 7 values, fewer than the 8 (constant + public signals)"),
            std::string::npos)
      << msg;
  b = whole;
  testing::put_u32(b, testing::section_body_offset(b, 1) + 4 + 32, 8);  // nWitness
  msg = error_of([&] { read_wtns_summary(*in_memory(b), 3); });
  EXPECT_NE(msg.find("section 2 (values): expected 8 values of 32 bytes = 256 bytes, found 224"), std::string::npos)
      << msg;
  msg = error_of([&] { read_wtns_summary(bytes.first(5), 5, 3, "w.wtns"); });
  EXPECT_NE(msg.find("w.wtns: file too short for an iden3 header: expected at least 12 bytes, found 5"),
            std::string::npos)
      << msg;
}

TEST(WtnsSummary, HeaderAfterTheValuesNeedsTheWholeFile) {
  // The same witness with its sections swapped: legal, and read whole.
  const auto whole = fixture_bytes("bn128_mul.wtns");
  const std::size_t h = testing::section_header_offset(whole, 1), v = testing::section_header_offset(whole, 2);
  ASSERT_LT(h, v);
  std::vector<std::uint8_t> swapped(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(h));
  swapped.insert(swapped.end(), whole.begin() + static_cast<std::ptrdiff_t>(v), whole.end());
  swapped.insert(swapped.end(), whole.begin() + static_cast<std::ptrdiff_t>(h), whole.begin() + static_cast<std::ptrdiff_t>(v));
  EXPECT_EQ(parse_wtns<Bn254Fr>(in_memory(swapped)), parse_wtns<Bn254Fr>(in_memory(whole)));
  const std::span<const std::uint8_t> bytes(swapped);
  EXPECT_FALSE(read_wtns_summary(bytes.first(wtns_prefix_bytes(3)), swapped.size(), 3, "w.wtns"));
  EXPECT_EQ(read_wtns_summary(*in_memory(swapped), 3).public_inputs,
            read_wtns_summary(*in_memory(whole), 3).public_inputs);
}

TEST(WtnsSummary, TruncatedAndFlipped) {
  auto bytes = fixture_bytes("bls12381_mul.wtns");
  testing::expect_every_prefix_fails(bytes, [](std::vector<std::uint8_t> b) { read_wtns_summary(*in_memory(b), 3); });
  testing::expect_byte_flips_safe(bytes, [](std::vector<std::uint8_t> b) { read_wtns_summary(*in_memory(b), 3); });
}

}  // namespace
}  // namespace zkfarm
