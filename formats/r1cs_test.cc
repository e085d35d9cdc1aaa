// r1cs_test.cc -- .r1cs reader/writer: circom-made fixtures, round trips and
// malformed inputs (truncation at every byte, lying sizes, huge counts,
// wrong magic/version/prime, custom gates).
#include "formats/r1cs.h"

#include <gtest/gtest.h>

#include "formats/test_util.h"
#include "formats/wtns.h"

namespace zkfarm {
namespace {

using testing::fixture;
using testing::fixture_bytes;
using testing::format_error_of;
using testing::in_memory;

template <class Fr>
Fr dot(const SparseMatrix<Fr>& m, std::size_t row, const std::vector<Fr>& w) {
  Fr acc = Fr::zero();
  for (auto i = m.row_offsets[row]; i < m.row_offsets[row + 1]; ++i) acc += m.values[i] * w[m.cols[i]];
  return acc;
}

template <class Fr>
void check_fixture(const std::string& prefix) {
  auto r1cs = read_r1cs<Fr>(fixture(prefix + "_mul.r1cs"));
  EXPECT_EQ(r1cs.num_wires, 7u);
  EXPECT_EQ(r1cs.num_pub_out, 1u);
  EXPECT_EQ(r1cs.num_pub_in, 2u);
  EXPECT_EQ(r1cs.num_prv_in, 1u);
  EXPECT_EQ(r1cs.num_labels, 7u);
  EXPECT_EQ(r1cs.num_constraints, 3u);
  EXPECT_EQ(r1cs.num_public(), 3u);
  EXPECT_EQ(r1cs.wire_to_label.size(), 7u);
  for (const auto* m : {&r1cs.a, &r1cs.b, &r1cs.c}) EXPECT_EQ(m->num_rows(), 3u);
  // The snarkjs-computed witness satisfies every constraint...
  auto w = read_wtns<Fr>(fixture(prefix + "_mul.wtns"), r1cs.num_wires);
  for (std::size_t row = 0; row < r1cs.num_constraints; ++row)
    EXPECT_EQ(dot(r1cs.a, row, w) * dot(r1cs.b, row, w), dot(r1cs.c, row, w)) << "row " << row;
  // ... and a changed output does not.
  w[1] += Fr::one();
  bool all = true;
  for (std::size_t row = 0; row < r1cs.num_constraints; ++row)
    all = all && dot(r1cs.a, row, w) * dot(r1cs.b, row, w) == dot(r1cs.c, row, w);
  EXPECT_FALSE(all);
}

TEST(R1cs, ReadsCircomFixtures) {
  check_fixture<Bn254Fr>("bn128");
  check_fixture<Bls12381Fr>("bls12381");
}

TEST(R1cs, DetectsCurve) {
  EXPECT_EQ(r1cs_curve(FileBytes::map(fixture("bn128_mul.r1cs"))), CurveId::kBn254);
  EXPECT_EQ(r1cs_curve(FileBytes::map(fixture("bls12381_mul.r1cs"))), CurveId::kBls12381);
}

TEST(R1cs, WrongCurveNamesBoth) {
  std::string msg = format_error_of([] { read_r1cs<Bls12381Fr>(fixture("bn128_mul.r1cs")); });
  EXPECT_NE(msg.find("bn128_mul.r1cs: section 1 (header)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("BN254"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected BLS12-381"), std::string::npos) << msg;
}

TEST(R1cs, UnsupportedPrime) {
  auto bytes = fixture_bytes("bn128_mul.r1cs");
  bytes[testing::section_body_offset(bytes, 1) + 4] ^= 0x01;  // first byte of the prime
  std::string msg = format_error_of([&] { parse_r1cs<Bn254Fr>(in_memory(bytes, "x.r1cs")); });
  EXPECT_NE(msg.find("unsupported prime"), std::string::npos) << msg;
  EXPECT_NE(msg.find("x.r1cs: section 1 (header)"), std::string::npos) << msg;
}

TEST(R1cs, RoundTrip) {
  for (const char* name : {"bn128_mul.r1cs"}) {
    auto r1cs = read_r1cs<Bn254Fr>(fixture(name));
    auto bytes = serialize_r1cs(r1cs);
    EXPECT_EQ(parse_r1cs<Bn254Fr>(in_memory(bytes)), r1cs);
    // File writer gives the same bytes.
    std::string path = testing::temp_path("rt.r1cs");
    write_r1cs(path, r1cs);
    EXPECT_EQ(testing::read_file(path), bytes);
    std::remove(path.c_str());
  }
  auto bls = read_r1cs<Bls12381Fr>(fixture("bls12381_mul.r1cs"));
  EXPECT_EQ(parse_r1cs<Bls12381Fr>(in_memory(serialize_r1cs(bls))), bls);
}

TEST(R1cs, WriterBuildsIdentityMapAndChecksInput) {
  R1cs<Bn254Fr> r;
  r.num_wires = 3;
  r.num_pub_in = 1;
  r.num_labels = 3;
  r.num_constraints = 1;
  std::uint32_t cols[] = {1, 2};
  Bn254Fr vals[] = {Bn254Fr::from_u64(5), Bn254Fr::one()};
  r.a.add_row(cols, vals);
  r.b.add_row(std::span<const std::uint32_t>(cols, 1), std::span<const Bn254Fr>(vals, 1));
  r.c.add_row({}, {});
  auto back = parse_r1cs<Bn254Fr>(in_memory(serialize_r1cs(r)));
  EXPECT_EQ(back.wire_to_label, (std::vector<std::uint64_t>{0, 1, 2}));
  back.wire_to_label.clear();
  EXPECT_EQ(back, r);

  // Fewer labels than wires and no map: no section 3 is written.
  auto few_labels = r;
  few_labels.num_labels = 1;
  auto parsed = parse_r1cs<Bn254Fr>(in_memory(serialize_r1cs(few_labels)));
  EXPECT_TRUE(parsed.wire_to_label.empty());
  EXPECT_EQ(parsed, few_labels);

  auto bad = r;
  bad.a.cols[0] = 3;  // wire out of range
  EXPECT_THROW(serialize_r1cs(bad), std::invalid_argument);
  bad = r;
  bad.num_constraints = 2;
  EXPECT_THROW(serialize_r1cs(bad), std::invalid_argument);
  bad = r;
  bad.num_wires = 1;
  EXPECT_THROW(serialize_r1cs(bad), std::invalid_argument);
}

TEST(R1cs, TruncatedAtEveryByte) {
  auto bytes = fixture_bytes("bn128_mul.r1cs");
  testing::expect_every_prefix_fails(bytes, [](std::vector<std::uint8_t> b) {
    parse_r1cs<Bn254Fr>(in_memory(b));
  });
}

TEST(R1cs, ByteFlipsFailCleanly) {
  auto bytes = fixture_bytes("bls12381_mul.r1cs");
  testing::expect_byte_flips_safe(bytes, [](std::vector<std::uint8_t> b) {
    parse_r1cs<Bls12381Fr>(in_memory(b));
  });
}

TEST(R1cs, WrongMagicAndVersion) {
  auto bytes = fixture_bytes("bn128_mul.r1cs");
  auto b = bytes;
  b[0] = 'x';
  std::string msg = format_error_of([&] { parse_r1cs<Bn254Fr>(in_memory(b, "m.r1cs")); });
  EXPECT_NE(msg.find("m.r1cs: wrong magic: expected \"r1cs\" (a .r1cs file), found something else"),
            std::string::npos)
      << msg;
  // The file's bytes are not echoed; a known container type is named.
  EXPECT_EQ(msg.find("x1cs"), std::string::npos) << msg;
  b = fixture_bytes("bn128_mul.wtns");
  msg = format_error_of([&] { parse_r1cs<Bn254Fr>(in_memory(b, "w.r1cs")); });
  EXPECT_NE(msg.find("w.r1cs: wrong magic: expected \"r1cs\" (a .r1cs file), found a .wtns file"), std::string::npos)
      << msg;
  b = bytes;
  testing::put_u32(b, 4, 2);
  msg = format_error_of([&] { parse_r1cs<Bn254Fr>(in_memory(b, "v.r1cs")); });
  EXPECT_NE(msg.find("unsupported r1cs version: expected 1, found 2"), std::string::npos) << msg;
}

TEST(R1cs, SectionSizeLies) {
  auto bytes = fixture_bytes("bn128_mul.r1cs");
  auto b = bytes;
  testing::put_u64(b, testing::section_header_offset(b, 2) + 4, 1ull << 60);
  std::string msg = format_error_of([&] { parse_r1cs<Bn254Fr>(in_memory(b, "s.r1cs")); });
  EXPECT_NE(msg.find("s.r1cs: section 2 (constraints): section size 1152921504606846976"),
            std::string::npos)
      << msg;
  // Too many sections announced.
  b = bytes;
  testing::put_u32(b, 8, 0xffffffff);
  msg = format_error_of([&] { parse_r1cs<Bn254Fr>(in_memory(b)); });
  EXPECT_NE(msg.find("4294967295 sections"), std::string::npos) << msg;
  // Header section one byte longer than its layout (steal it from nothing: append).
  b = bytes;
  std::size_t h = testing::section_header_offset(b, 1);
  testing::put_u64(b, h + 4, load_u64le(b.data() + h + 4) - 4);
  msg = format_error_of([&] { parse_r1cs<Bn254Fr>(in_memory(b)); });
  EXPECT_FALSE(msg.empty());
}

TEST(R1cs, HugeCountsDoNotAllocate) {
  auto bytes = fixture_bytes("bn128_mul.r1cs");
  auto b = bytes;
  // nConstraints is the last u32 of the header section body.
  std::size_t h = testing::section_body_offset(b, 1);
  testing::put_u32(b, h + 4 + 32 + 16 + 8, 0xffffffff);
  std::string msg = format_error_of([&] { parse_r1cs<Bn254Fr>(in_memory(b)); });
  EXPECT_NE(msg.find("4294967295 constraints"), std::string::npos) << msg;
  // A term count of 2^32-1 in the first linear combination.
  b = bytes;
  testing::put_u32(b, testing::section_body_offset(b, 2), 0xffffffff);
  msg = format_error_of([&] { parse_r1cs<Bn254Fr>(in_memory(b)); });
  EXPECT_NE(msg.find("4294967295 entries of 36 bytes"), std::string::npos) << msg;
  // nWires = 2^32-1 with a wire map section of 7 entries.
  b = bytes;
  testing::put_u32(b, h + 4 + 32, 0xffffffff);
  msg = format_error_of([&] { parse_r1cs<Bn254Fr>(in_memory(b)); });
  EXPECT_NE(msg.find("section 3 (wire-to-label map): expected 4294967295 labels"), std::string::npos)
      << msg;
}

TEST(R1cs, BadWireAndValue) {
  auto bytes = fixture_bytes("bn128_mul.r1cs");
  auto b = bytes;
  std::size_t c = testing::section_body_offset(b, 2);
  ASSERT_GE(load_u32le(b.data() + c), 1u);
  testing::put_u32(b, c + 4, 7);  // first term's wire = nWires
  std::string msg = format_error_of([&] { parse_r1cs<Bn254Fr>(in_memory(b)); });
  EXPECT_NE(msg.find("wire 7 is not below nWires = 7"), std::string::npos) << msg;
  b = bytes;
  for (int i = 0; i < 32; ++i) b[c + 8 + i] = 0xff;  // first term's value >= r
  msg = format_error_of([&] { parse_r1cs<Bn254Fr>(in_memory(b)); });
  EXPECT_NE(msg.find("coefficient is not below the prime"), std::string::npos) << msg;
}

TEST(R1cs, RejectsCustomGatesAndDuplicates) {
  auto bytes = fixture_bytes("bn128_mul.r1cs");
  // Append an empty section 4 and bump the count.
  auto b = bytes;
  testing::put_u32(b, 8, load_u32le(b.data() + 8) + 1);
  for (std::uint8_t x : {4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) b.push_back(x);
  std::string msg = format_error_of([&] { parse_r1cs<Bn254Fr>(in_memory(b)); });
  EXPECT_NE(msg.find("section 4 (custom gates list): the circuit uses custom gates"),
            std::string::npos)
      << msg;
  // A duplicated header section.
  b = bytes;
  std::size_t h = testing::section_header_offset(b, 1);
  std::vector<std::uint8_t> copy(b.begin() + h, b.begin() + h + 12 + load_u64le(b.data() + h + 4));
  b.insert(b.end(), copy.begin(), copy.end());
  testing::put_u32(b, 8, load_u32le(b.data() + 8) + 1);
  msg = format_error_of([&] { parse_r1cs<Bn254Fr>(in_memory(b)); });
  EXPECT_NE(msg.find("section 1 (header): section appears more than once"), std::string::npos) << msg;
}

TEST(R1cs, MissingFile) {
  std::string msg = format_error_of([] { read_r1cs<Bn254Fr>("/nonexistent/x.r1cs"); });
  EXPECT_NE(msg.find("/nonexistent/x.r1cs: cannot open"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zkfarm
