// zkey_test.cc -- snarkjs Groth16 .zkey reader/writer: snarkjs-made fixtures
// (fresh setup and after one contribution, both curves), agreement with the
// .r1cs and the exported verification key, round trips, malformed inputs.
#include "formats/zkey.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "formats/r1cs.h"
#include "formats/snarkjs_json.h"
#include "formats/test_util.h"

namespace zkfarm {
namespace {

using testing::fixture;
using testing::fixture_bytes;
using testing::format_error_of;
using testing::in_memory;

template <class Curve>
void expect_same_key(const Zkey<Curve>& x, const Zkey<Curve>& y) {
  EXPECT_EQ(x.num_vars, y.num_vars);
  EXPECT_EQ(x.num_public, y.num_public);
  EXPECT_EQ(x.domain_size, y.domain_size);
  EXPECT_TRUE(x.alpha1 == y.alpha1 && x.beta1 == y.beta1 && x.delta1 == y.delta1);
  EXPECT_TRUE(x.beta2 == y.beta2 && x.gamma2 == y.gamma2 && x.delta2 == y.delta2);
  auto same = [](auto s, auto t) { return std::equal(s.begin(), s.end(), t.begin(), t.end()); };
  EXPECT_TRUE(same(x.ic.span(), y.ic.span()));
  EXPECT_TRUE(same(x.a.span(), y.a.span()));
  EXPECT_TRUE(same(x.b1.span(), y.b1.span()));
  EXPECT_TRUE(same(x.b2.span(), y.b2.span()));
  EXPECT_TRUE(same(x.c.span(), y.c.span()));
  EXPECT_TRUE(same(x.h.span(), y.h.span()));
  ASSERT_EQ(x.coefficients.size(), y.coefficients.size());
  for (std::size_t i = 0; i < x.coefficients.size(); ++i) {
    auto p = x.coefficients[i], q = y.coefficients[i];
    EXPECT_TRUE(p.matrix == q.matrix && p.constraint == q.constraint && p.signal == q.signal &&
                p.value == q.value);
  }
  EXPECT_EQ(x.circuit_hash, y.circuit_hash);
}

template <class Curve>
void check_fixture(const std::string& prefix) {
  using Fr = typename Curve::Fr;
  for (const std::string& name : {prefix + "_mul_0000.zkey", prefix + "_mul.zkey"}) {
    SCOPED_TRACE(name);
    auto z = read_zkey<Curve>(fixture(name), {.validate_coefficients = true, .validate_points = true});
    EXPECT_EQ(z.num_vars, 7u);
    EXPECT_EQ(z.num_public, 3u);
    EXPECT_EQ(z.domain_size, 8u);  // smallest power of two > 3 constraints + 3 public
    EXPECT_EQ(z.ic.size(), 4u);
    EXPECT_EQ(z.c.size(), 3u);
    EXPECT_EQ(z.h.size(), 8u);
    EXPECT_EQ(z.num_contributions, name.find("0000") != std::string::npos ? 0u : 1u);
    EXPECT_FALSE(std::all_of(z.circuit_hash.begin(), z.circuit_hash.end(), [](auto b) { return b == 0; }));

    // The coefficients are exactly the r1cs's A and B plus the appended rows.
    auto r1cs = read_r1cs<Fr>(fixture(prefix + "_mul.r1cs"));
    std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::string>> from_zkey, from_r1cs;
    for (std::size_t i = 0; i < z.coefficients.size(); ++i) {
      auto e = z.coefficients[i];
      from_zkey.emplace_back(e.matrix, e.constraint, e.signal, e.value.to_decimal());
    }
    const SparseMatrix<Fr>* ms[2] = {&r1cs.a, &r1cs.b};
    for (std::uint32_t k = 0; k < 2; ++k)
      for (std::uint32_t row = 0; row < r1cs.num_constraints; ++row)
        for (auto i = ms[k]->row_offsets[row]; i < ms[k]->row_offsets[row + 1]; ++i)
          from_r1cs.emplace_back(k, row, ms[k]->cols[i], ms[k]->values[i].to_decimal());
    for (std::uint32_t s = 0; s <= r1cs.num_public(); ++s)
      from_r1cs.emplace_back(0, r1cs.num_constraints + s, s, "1");
    std::sort(from_zkey.begin(), from_zkey.end());
    std::sort(from_r1cs.begin(), from_r1cs.end());
    EXPECT_EQ(from_zkey, from_r1cs);
  }
  // The final key's verifying part equals snarkjs's exported verification key.
  auto z = read_zkey<Curve>(fixture(prefix + "_mul.zkey"));
  auto vk = read_verification_key<Curve>(fixture(prefix + "_verification_key.json"));
  auto mine = z.verifying_key();
  EXPECT_TRUE(mine.alpha1 == vk.alpha1 && mine.beta2 == vk.beta2 && mine.gamma2 == vk.gamma2 &&
              mine.delta2 == vk.delta2);
  EXPECT_TRUE(mine.ic == vk.ic);
}

TEST(Zkey, ReadsSnarkjsFixturesBn254) { check_fixture<Bn254>("bn128"); }
TEST(Zkey, ReadsSnarkjsFixturesBls12381) { check_fixture<Bls12381>("bls12381"); }

TEST(Zkey, DetectsCurve) {
  EXPECT_EQ(zkey_curve(FileBytes::map(fixture("bn128_mul.zkey"))), CurveId::kBn254);
  EXPECT_EQ(zkey_curve(FileBytes::map(fixture("bls12381_mul.zkey"))), CurveId::kBls12381);
  std::string msg = format_error_of([] { read_zkey<Bn254>(fixture("bls12381_mul.zkey")); });
  EXPECT_NE(msg.find("the key is for BLS12-381, expected BN254"), std::string::npos) << msg;
}

template <class Curve>
void check_round_trip(const std::string& name) {
  auto z = read_zkey<Curve>(fixture(name));
  std::vector<ZkeyCoefficient<typename Curve::Fr>> storage;
  auto input = rewrite_input(z, storage);
  auto bytes = serialize_zkey(input);
  auto back = parse_zkey<Curve>(in_memory(bytes, "rt.zkey"));
  expect_same_key(z, back);
  // Our section order keeps every point section aligned: zero copy.
  EXPECT_TRUE(back.ic.zero_copy() && back.a.zero_copy() && back.b1.zero_copy() &&
              back.b2.zero_copy() && back.c.zero_copy() && back.h.zero_copy());
  EXPECT_EQ(back.num_contributions, 0u);
  std::string path = testing::temp_path("rt.zkey");
  write_zkey(path, input);
  EXPECT_EQ(testing::read_file(path), bytes);
  auto mapped = read_zkey<Curve>(path);
  expect_same_key(z, mapped);
  EXPECT_TRUE(mapped.a.zero_copy());
  std::remove(path.c_str());
}

TEST(Zkey, RoundTrip) {
  check_round_trip<Bn254>("bn128_mul.zkey");
  check_round_trip<Bn254>("bn128_mul_0000.zkey");
  check_round_trip<Bls12381>("bls12381_mul.zkey");
}

TEST(Zkey, WriterRejectsInconsistentInput) {
  auto z = read_zkey<Bn254>(fixture("bn128_mul.zkey"));
  std::vector<ZkeyCoefficient<Bn254Fr>> storage;
  auto input = rewrite_input(z, storage);
  auto bad = input;
  bad.h = bad.h.first(7);
  EXPECT_THROW(serialize_zkey(bad), std::invalid_argument);
  bad = input;
  bad.domain_size = 12;
  EXPECT_THROW(serialize_zkey(bad), std::invalid_argument);
  storage[0].signal = 7;
  EXPECT_THROW(serialize_zkey(input), std::invalid_argument);
}

TEST(Zkey, TruncatedAtEveryByte) {
  auto bytes = fixture_bytes("bn128_mul.zkey");
  testing::expect_every_prefix_fails(bytes, [](std::vector<std::uint8_t> b) {
    parse_zkey<Bn254>(in_memory(b));
  });
}

TEST(Zkey, ByteFlipsFailCleanly) {
  auto bytes = fixture_bytes("bls12381_mul.zkey");
  testing::expect_byte_flips_safe(bytes, [](std::vector<std::uint8_t> b) {
    parse_zkey<Bls12381>(in_memory(b), {.validate_coefficients = true, .validate_points = true});
  });
}

TEST(Zkey, SectionSizeMismatchMessage) {
  // Drop the last H point: the message must name file, section, expected and found.
  auto b = fixture_bytes("bn128_mul.zkey");
  std::size_t h = testing::section_header_offset(b, 9);
  std::uint64_t size = load_u64le(b.data() + h + 4);
  b.erase(b.begin() + h + 12 + size - 64, b.begin() + h + 12 + size);
  testing::put_u64(b, h + 4, size - 64);
  std::string msg = format_error_of([&] { parse_zkey<Bn254>(in_memory(b, "proof.zkey")); });
  EXPECT_EQ(msg, "proof.zkey: section 9 (H): expected 8 points of 64 bytes = 512 bytes, found 448");
}

TEST(Zkey, HeaderChecks) {
  auto bytes = fixture_bytes("bn128_mul.zkey");
  const std::size_t hdr = testing::section_body_offset(bytes, 2);
  const std::size_t counts = hdr + 4 + 32 + 4 + 32;  // nVars, nPublic, domainSize
  auto b = bytes;
  testing::put_u32(b, counts + 8, 12);
  EXPECT_NE(format_error_of([&] { parse_zkey<Bn254>(in_memory(b)); }).find("domainSize 12 is not a power of two"),
            std::string::npos);
  b = bytes;
  testing::put_u32(b, counts + 4, 7);
  EXPECT_NE(format_error_of([&] { parse_zkey<Bn254>(in_memory(b)); }).find("nPublic + 1 = 8 exceeds nVars = 7"),
            std::string::npos);
  b = bytes;
  testing::put_u32(b, counts, 0xffffffff);  // nVars: sections must then be huge
  EXPECT_NE(format_error_of([&] { parse_zkey<Bn254>(in_memory(b)); })
                .find("section 5 (A): expected 4294967295 points of 64 bytes"),
            std::string::npos);
  b = bytes;
  b[counts + 12] ^= 1;  // alpha1.x no longer on the curve
  EXPECT_NE(format_error_of([&] { parse_zkey<Bn254>(in_memory(b)); }).find("alpha1 is not on the curve"),
            std::string::npos);
  b = bytes;
  for (int i = 0; i < 32; ++i) b[counts + 12 + i] = 0xff;
  EXPECT_NE(format_error_of([&] { parse_zkey<Bn254>(in_memory(b)); })
                .find("alpha1: a coordinate is not below the base field prime q"),
            std::string::npos);
  b = bytes;
  b[hdr + 4] ^= 2;  // q
  EXPECT_NE(format_error_of([&] { parse_zkey<Bn254>(in_memory(b)); }).find("unsupported prime q"),
            std::string::npos);
  b = bytes;
  testing::put_u32(b, testing::section_body_offset(b, 1), 2);
  EXPECT_NE(format_error_of([&] { parse_zkey<Bn254>(in_memory(b)); })
                .find("section 1 (protocol): protocol id 2 (PLONK), expected 1 (Groth16)"),
            std::string::npos);
}

TEST(Zkey, CoefficientChecks) {
  auto bytes = fixture_bytes("bn128_mul.zkey");
  const std::size_t coef = testing::section_body_offset(bytes, 4);
  auto b = bytes;
  testing::put_u32(b, coef + 4, 2);  // matrix of the first entry
  std::string msg = format_error_of([&] { parse_zkey<Bn254>(in_memory(b, "k.zkey")); });
  EXPECT_EQ(msg, "k.zkey: section 4 (coefficients): coefficient 0: matrix 2, expected 0 (A) or 1 (B)");
  b = bytes;
  testing::put_u32(b, coef + 8, 8);  // constraint = domainSize
  EXPECT_NE(format_error_of([&] { parse_zkey<Bn254>(in_memory(b)); })
                .find("constraint 8 is not below the domain size 8"),
            std::string::npos);
  b = bytes;
  testing::put_u32(b, coef + 12, 9);
  EXPECT_NE(format_error_of([&] { parse_zkey<Bn254>(in_memory(b)); }).find("signal 9 is not below nVars = 7"),
            std::string::npos);
  b = bytes;
  testing::put_u32(b, coef, 0x7fffffff);  // count
  EXPECT_NE(format_error_of([&] { parse_zkey<Bn254>(in_memory(b)); })
                .find("2147483647 entries of 44 bytes need more than"),
            std::string::npos);
  // Without validation the bad entry parses; validate() then reports it.
  b = bytes;
  testing::put_u32(b, coef + 4, 3);
  auto z = parse_zkey<Bn254>(in_memory(b), {.validate_coefficients = false});
  EXPECT_THROW(z.coefficients.validate(), FormatError);
}

TEST(Zkey, PointValidation) {
  auto bytes = fixture_bytes("bn128_mul.zkey");
  auto b = bytes;
  b[testing::section_body_offset(b, 6) + 64 * 2 + 5] ^= 1;  // B1[2]
  auto z = parse_zkey<Bn254>(in_memory(b, "p.zkey"));
  std::string msg = format_error_of([&] { validate_zkey_points(z); });
  EXPECT_EQ(msg, "p.zkey: section 6 (B1): point 2 is not on the curve");
}

TEST(Zkey, MisalignedSectionsAreCopied) {
  // An extra empty section (12 bytes) in front shifts every section by 4 mod
  // 8: whichever sections were aligned are now misaligned and vice versa.
  auto bytes = fixture_bytes("bn128_mul.zkey");
  std::vector<std::uint8_t> b(bytes.begin(), bytes.begin() + 12);
  testing::put_u32(b, 8, load_u32le(bytes.data() + 8) + 1);
  for (std::uint8_t x : {99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) b.push_back(x);
  b.insert(b.end(), bytes.begin() + 12, bytes.end());
  auto original = parse_zkey<Bn254>(in_memory(bytes));
  auto shifted = parse_zkey<Bn254>(in_memory(b));
  expect_same_key(original, shifted);
  EXPECT_NE(original.a.zero_copy(), shifted.a.zero_copy());
}

}  // namespace
}  // namespace zkfarm
