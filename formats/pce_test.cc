// pce_test.cc -- the PCE: built from .r1cs and from .zkey agree, SpMV matches
// a naive product, the constraint check finds the failing row, save/load
// round trips, and corrupt/truncated/hostile files fail with FormatError.
#include "formats/pce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "formats/r1cs.h"
#include "formats/test_util.h"
#include "formats/wtns.h"
#include "formats/zkey.h"

namespace zkfarm {
namespace {

using testing::fixture;
using testing::format_error_of;

// Naive dense-ish reference: out[r] = sum coefficient * w[col].
template <class Fr>
std::vector<Fr> reference_product(const Csr<Fr>& m, const std::vector<Fr>& w) {
  std::vector<Fr> out(m.num_rows, Fr::zero());
  for (std::uint32_t r = 0; r < m.num_rows; ++r) {
    const auto unit_end = m.unit_end(r);
    for (auto i = m.row_offsets[r]; i < m.row_offsets[r + 1]; ++i) {
      Fr coefficient = i < unit_end ? Fr::one() : m.values[m.general_offsets[r] + (i - unit_end)];
      out[r] += coefficient * w[m.cols[i]];
    }
  }
  return out;
}

// Row-wise multiset of (col, coefficient) for comparing matrices built in
// different entry orders.
template <class Fr>
std::vector<std::tuple<std::uint32_t, std::uint32_t, std::string>> entries(const Csr<Fr>& m) {
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::string>> out;
  for (std::uint32_t r = 0; r < m.num_rows; ++r) {
    const auto unit_end = m.unit_end(r);
    for (auto i = m.row_offsets[r]; i < m.row_offsets[r + 1]; ++i)
      out.emplace_back(r, m.cols[i],
                       i < unit_end ? "1" : m.values[m.general_offsets[r] + (i - unit_end)].to_decimal());
  }
  std::sort(out.begin(), out.end());
  return out;
}

template <class Curve>
void check_fixture(const std::string& prefix) {
  using Fr = typename Curve::Fr;
  auto r1cs = read_r1cs<Fr>(fixture(prefix + "_mul.r1cs"));
  auto zkey = read_zkey<Curve>(fixture(prefix + "_mul.zkey"));
  auto witness = read_wtns<Fr>(fixture(prefix + "_mul.wtns"), r1cs.num_wires);

  auto from_r1cs = pce_from_r1cs(r1cs);
  auto from_zkey = pce_from_zkey(zkey.coefficients, zkey.num_public);
  EXPECT_EQ(from_r1cs.num_rows(), 3u + 3u + 1u);
  EXPECT_EQ(from_r1cs.num_cols(), 7u);
  EXPECT_EQ(from_r1cs.domain_size(), zkey.domain_size);
  EXPECT_TRUE(from_r1cs.has_c());
  EXPECT_FALSE(from_zkey.has_c());
  EXPECT_EQ(from_zkey.num_rows(), from_r1cs.num_rows());
  EXPECT_EQ(from_zkey.num_cols(), from_r1cs.num_cols());
  EXPECT_EQ(from_zkey.domain_size(), from_r1cs.domain_size());
  EXPECT_EQ(entries(from_zkey.a()), entries(from_r1cs.a()));
  EXPECT_EQ(entries(from_zkey.b()), entries(from_r1cs.b()));
  EXPECT_EQ(from_zkey.a().column_bitmap, from_r1cs.a().column_bitmap);
  EXPECT_EQ(from_zkey.b().column_bitmap, from_r1cs.b().column_bitmap);
  EXPECT_THROW(from_zkey.c(), std::logic_error);

  // SpMV equals the reference, and A*w o B*w = C*w on every row.
  std::vector<Fr> a(from_r1cs.num_rows()), b(a.size()), c(a.size());
  from_r1cs.multiply_a(witness, a);
  from_r1cs.multiply_b(witness, b);
  from_r1cs.multiply_c(witness, c);
  EXPECT_EQ(a, reference_product(from_r1cs.a(), witness));
  for (std::size_t r = 0; r < a.size(); ++r) EXPECT_EQ(a[r] * b[r], c[r]) << r;
  // The appended rows copy the public signals into A.
  for (std::uint32_t s = 0; s <= 3; ++s) EXPECT_EQ(a[3 + s], witness[s]);
  EXPECT_EQ(from_r1cs.first_unsatisfied(witness), std::nullopt);
  auto bad = witness;
  bad[6] += Fr::one();  // u: breaks the constraints that use it
  auto first = from_r1cs.first_unsatisfied(bad);
  ASSERT_TRUE(first.has_value());
  EXPECT_LT(*first, 3u);
  EXPECT_THROW(from_zkey.first_unsatisfied(witness), std::logic_error);
  EXPECT_THROW(from_r1cs.first_unsatisfied(std::span<const Fr>(witness).first(6)), std::invalid_argument);
  EXPECT_THROW(from_r1cs.multiply_a(witness, std::span<Fr>(a).first(2)), std::invalid_argument);

  // Save / load / parse round trips, for both builds.
  for (const auto* pce : {&from_r1cs, &from_zkey}) {
    std::string path = testing::temp_path("x.pce");
    save_pce(*pce, path);
    EXPECT_EQ(load_pce<Fr>(path), *pce);
    auto bytes = testing::read_file(path);
    EXPECT_EQ(bytes, serialize_pce(*pce));
    EXPECT_EQ(parse_pce<Fr>(bytes, "mem"), *pce);
    std::remove(path.c_str());
  }
}

TEST(Pce, Bn254Fixture) { check_fixture<Bn254>("bn128"); }
TEST(Pce, Bls12381Fixture) { check_fixture<Bls12381>("bls12381"); }

TEST(Pce, UnitCoefficientsStoreNoValue) {
  auto pce = pce_from_r1cs(read_r1cs<Bn254Fr>(fixture("bn128_mul.r1cs")));
  const auto& a = pce.a();
  EXPECT_GT(a.num_units(), 0u);
  EXPECT_EQ(a.num_units() + a.values.size(), a.nnz());
  for (const auto& v : a.values) {
    EXPECT_FALSE(v.is_one());
    EXPECT_FALSE(v.is_zero());
  }
  // Column density: the bitmap says exactly which columns appear; B uses
  // only some signals.
  for (const Csr<Bn254Fr>* m : {&pce.a(), &pce.b(), &pce.c()})
    for (std::uint32_t col = 0; col < pce.num_cols(); ++col)
      EXPECT_EQ(m->has_column(col), std::find(m->cols.begin(), m->cols.end(), col) != m->cols.end());
  EXPECT_LT(pce.b().num_used_columns(), pce.num_cols());
}

// A random circuit large enough to exercise the parallel paths.
R1cs<Bn254Fr> random_r1cs(std::uint32_t constraints, std::uint32_t wires, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  R1cs<Bn254Fr> r;
  r.num_wires = wires;
  r.num_pub_out = 2;
  r.num_pub_in = 3;
  r.num_prv_in = 4;
  r.num_labels = wires;
  r.num_constraints = constraints;
  for (auto* m : {&r.a, &r.b, &r.c}) {
    for (std::uint32_t row = 0; row < constraints; ++row) {
      std::vector<std::uint32_t> cols;
      std::vector<Bn254Fr> vals;
      const int n = int(rng() % 6);
      for (int k = 0; k < n; ++k) {
        cols.push_back(std::uint32_t(rng() % wires));
        const auto kind = rng() % 4;
        vals.push_back(kind == 0 ? Bn254Fr::one()
                       : kind == 1 ? -Bn254Fr::one()
                       : kind == 2 ? Bn254Fr::zero()
                                   : Bn254Fr::from_u64(rng()));
      }
      m->add_row(cols, vals);
    }
  }
  return r;
}

TEST(Pce, LargeRandomMatchesReferenceAndZkeyOrder) {
  const auto r1cs = random_r1cs(20000, 5000, 7);
  const auto pce = pce_from_r1cs(r1cs);
  std::mt19937_64 rng(11);
  std::vector<Bn254Fr> w(r1cs.num_wires);
  for (auto& x : w) x = Bn254Fr::from_u64(rng());
  for (const Csr<Bn254Fr>* m : {&pce.a(), &pce.b(), &pce.c()}) {
    std::vector<Bn254Fr> out(pce.num_rows());
    spmv(*m, std::span<const Bn254Fr>(w), std::span<Bn254Fr>(out));
    EXPECT_EQ(out, reference_product(*m, w));
  }

  // The same A/B through a zkey coefficient section, sorted (parallel fill)
  // and shuffled (serial fill): identical matrices.
  std::vector<ZkeyCoefficient<Bn254Fr>> coefficients;
  const SparseMatrix<Bn254Fr>* ms[2] = {&r1cs.a, &r1cs.b};
  for (std::uint32_t row = 0; row < r1cs.num_constraints; ++row)
    for (std::uint32_t k = 0; k < 2; ++k)
      for (auto i = ms[k]->row_offsets[row]; i < ms[k]->row_offsets[row + 1]; ++i)
        coefficients.push_back({k, row, ms[k]->cols[i], ms[k]->values[i]});
  for (std::uint32_t s = 0; s <= r1cs.num_public(); ++s)
    coefficients.push_back({0, r1cs.num_constraints + s, s, Bn254Fr::one()});
  auto build = [&](const std::vector<ZkeyCoefficient<Bn254Fr>>& list) {
    // A minimal section-4 image.
    std::vector<std::uint8_t> body(4 + list.size() * ZkeyCoefficients<Bn254Fr>::kEntryBytes);
    store_u32le(body.data(), std::uint32_t(list.size()));
    for (std::size_t i = 0; i < list.size(); ++i) {
      std::uint8_t* p = body.data() + 4 + i * ZkeyCoefficients<Bn254Fr>::kEntryBytes;
      store_u32le(p, list[i].matrix);
      store_u32le(p + 4, list[i].constraint);
      store_u32le(p + 8, list[i].signal);
      ZkeyCoefficients<Bn254Fr>::encode_value(list[i].value, p + 12);
    }
    auto file = FileBytes::adopt(std::move(body), "coefficients");
    ZkeyCoefficients<Bn254Fr> view(file, file->bytes(), "coefficients", r1cs.num_wires, pce.domain_size());
    return pce_from_zkey(view, r1cs.num_public());
  };
  auto sorted = build(coefficients);
  EXPECT_EQ(sorted.a().row_offsets, pce.a().row_offsets);
  EXPECT_EQ(sorted.a().cols, pce.a().cols);
  EXPECT_EQ(sorted.a().values, pce.a().values);
  EXPECT_EQ(sorted.b().cols, pce.b().cols);
  EXPECT_EQ(sorted.b().values, pce.b().values);
  auto shuffled_list = coefficients;
  std::shuffle(shuffled_list.begin(), shuffled_list.end(), rng);
  auto shuffled = build(shuffled_list);
  EXPECT_EQ(entries(shuffled.a()), entries(pce.a()));
  EXPECT_EQ(entries(shuffled.b()), entries(pce.b()));

  auto bytes = serialize_pce(pce);
  EXPECT_EQ(parse_pce<Bn254Fr>(bytes, "big"), pce);
}

TEST(Pce, CorruptFilesFail) {
  const auto pce = pce_from_r1cs(random_r1cs(300, 100, 3));
  const auto bytes = serialize_pce(pce);
  // Every prefix.
  for (std::size_t n = 0; n < bytes.size(); n += 7) {
    std::vector<std::uint8_t> prefix(bytes.begin(), bytes.begin() + n);
    EXPECT_THROW(parse_pce<Bn254Fr>(prefix, "t"), FormatError) << n;
  }
  // Any flipped byte breaks the checksum (or an earlier check).
  for (std::size_t i = 0; i < bytes.size(); i += 13) {
    auto b = bytes;
    b[i] ^= 0x20;
    EXPECT_THROW(parse_pce<Bn254Fr>(b, "t"), FormatError) << i;
    // With the checksum off, structure checks still hold: never anything but FormatError.
    try {
      parse_pce<Bn254Fr>(b, "t", false);
    } catch (const FormatError&) {
    }
  }
  auto b = bytes;
  b[bytes.size() - 100] ^= 1;
  std::string msg = format_error_of([&] { parse_pce<Bn254Fr>(b, "c.pce"); });
  EXPECT_NE(msg.find("c.pce: checksum mismatch"), std::string::npos) << msg;
  msg = format_error_of([&] { parse_pce<Bls12381Fr>(bytes, "c.pce"); });
  EXPECT_NE(msg.find("PCE is for curve id 1 (BN254), expected 2 (BLS12-381)"), std::string::npos) << msg;
  b = bytes;
  b[8] = 2;
  msg = format_error_of([&] { parse_pce<Bn254Fr>(b, "c.pce"); });
  EXPECT_NE(msg.find("unsupported PCE version: expected 1, found 2"), std::string::npos) << msg;
  b = bytes;
  b[0] = 'X';
  EXPECT_NE(format_error_of([&] { parse_pce<Bn254Fr>(b, "c.pce"); }).find("wrong magic"), std::string::npos);
  // A lying array length (A.cols claims 2^40 bytes).
  b = bytes;
  store_u64le(b.data() + 64 + 2 * 16 + 8, std::uint64_t(1) << 40);
  msg = format_error_of([&] { parse_pce<Bn254Fr>(b, "c.pce"); });
  EXPECT_NE(msg.find("A.cols: 1099511627776 bytes"), std::string::npos) << msg;
  // num_rows huge: row_offsets length no longer matches.
  b = bytes;
  store_u32le(b.data() + 20, 0x7fffffff);
  store_u32le(b.data() + 32, 0x80000000);
  msg = format_error_of([&] { parse_pce<Bn254Fr>(b, "c.pce"); });
  EXPECT_NE(msg.find("A.row_offsets: expected 17179869184 bytes"), std::string::npos) << msg;
  // A column out of range with a recomputed checksum is caught by the structure check.
  b = bytes;
  const std::uint64_t cols_at = load_u64le(b.data() + 64 + 2 * 16);
  store_u32le(b.data() + cols_at, 100);
  msg = format_error_of([&] { parse_pce<Bn254Fr>(b, "c.pce", false); });
  EXPECT_NE(msg.find("A: entry 0 has column 100, not below num_cols = 100"), std::string::npos) << msg;
  EXPECT_THROW(load_pce<Bn254Fr>("/nonexistent/x.pce"), FormatError);
}

}  // namespace
}  // namespace zkfarm
