// zkey.cc -- snarkjs Groth16 .zkey reader and writer (see zkey.h).
#include "formats/zkey.h"

#include <atomic>
#include <limits>
#include <stdexcept>

#include "kernels/parallel.h"

namespace zkfarm {

namespace {

const char* zkey_section_name(std::uint32_t type) {
  switch (type) {
    case 1: return "protocol";
    case 2: return "header";
    case 3: return "IC";
    case 4: return "coefficients";
    case 5: return "A";
    case 6: return "B1";
    case 7: return "B2";
    case 8: return "C";
    case 9: return "H";
    case 10: return "contributions";
    default: return nullptr;
  }
}

constexpr BinFile::Spec kZkeySpec{"zkey", 1, 1, zkey_section_name};

// True if every base-field coordinate of the point is reduced (< q).
template <class F>
bool coordinate_reduced(const F& f) {
  if constexpr (requires { f.c0; }) {
    return coordinate_reduced(f.c0) && coordinate_reduced(f.c1);
  } else {
    return f.mont < F::kModulus;
  }
}

template <class Affine>
bool point_ok(const Affine& p) {
  return coordinate_reduced(p.x) && coordinate_reduced(p.y) && p.is_on_curve();
}

template <class Affine>
Affine point_from_bytes(std::span<const std::uint8_t> bytes) {
  static_assert(std::is_trivially_copyable_v<Affine>);
  Affine p;
  std::memcpy(&p, bytes.data(), sizeof(Affine));
  return p;
}

template <class Affine>
void write_point(BinFileWriter& out, const Affine& p) {
  out.write(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&p), sizeof(Affine)));
}

template <class Affine>
void write_points(BinFileWriter& out, std::span<const Affine> points) {
  out.write(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(points.data()),
                                          points.size_bytes()));
}

// Reads one header point and checks it.
template <class Affine>
Affine header_point(SectionReader& in, const char* name) {
  Affine p = point_from_bytes<Affine>(in.bytes(sizeof(Affine), name));
  if (!coordinate_reduced(p.x) || !coordinate_reduced(p.y))
    in.fail(std::string(name) + ": a coordinate is not below the base field prime q");
  if (!p.is_on_curve()) in.fail(std::string(name) + " is not on the curve");
  return p;
}

void check_protocol(const BinFile& bin) {
  SectionReader in = bin.reader(kZkeyProtocolSection);
  const std::uint32_t protocol = in.u32("the protocol id");
  in.expect_end("u32 protocol id");
  if (protocol != kZkeyGroth16Protocol)
    in.fail("protocol id " + std::to_string(protocol) +
            (protocol == 2 ? " (PLONK)" : protocol == 10 ? " (FFLONK)" : "") +
            ", expected 1 (Groth16)");
}

// Reads n8q, q, n8r, r and identifies the curve.
CurveId read_primes(SectionReader& in) {
  const std::uint32_t n8q = in.u32("n8q");
  if (n8q == 0 || n8q % 8 != 0 || n8q > 64)
    in.fail("n8q must be a positive multiple of 8 up to 64, found " + std::to_string(n8q));
  auto q = in.bytes(n8q, "the prime q");
  auto curve = curve_from_base_prime(q);
  if (!curve) in.fail(unsupported_base_prime_message(q));
  const std::size_t want_n8q = base_field_bytes(*curve);
  if (n8q != want_n8q)
    in.fail("n8q for " + std::string(curve_display_name(*curve)) + " must be " +
            std::to_string(want_n8q) + ", found " + std::to_string(n8q));
  const std::uint32_t n8r = in.u32("n8r");
  if (n8r != 32) in.fail("n8r must be 32, found " + std::to_string(n8r));
  auto r = in.bytes(n8r, "the prime r");
  auto r_curve = curve_from_scalar_prime(r);
  if (!r_curve) in.fail(unsupported_scalar_prime_message(r));
  if (*r_curve != *curve)
    in.fail(std::string("q is the ") + curve_display_name(*curve) + " base field but r is the " +
            curve_display_name(*r_curve) + " scalar field");
  return *curve;
}

// Checks that a point section holds exactly `count` points and returns a view.
template <class Affine>
ArrayView<Affine> point_section(const BinFile& bin, std::uint32_t type, std::uint64_t count) {
  auto body = bin.unique(type);
  const std::uint64_t need = count * sizeof(Affine);
  if (body.size() != need)
    bin.fail(type, "expected " + std::to_string(count) + " points of " +
                       std::to_string(sizeof(Affine)) + " bytes = " + std::to_string(need) +
                       " bytes, found " + std::to_string(body.size()));
  return ArrayView<Affine>(bin.file(), body);
}

template <class Curve>
void parse_contributions(const BinFile& bin, Zkey<Curve>& out) {
  auto body = bin.optional(kZkeyContributionsSection);
  if (!body) return;
  SectionReader in(*body, bin.describe(kZkeyContributionsSection));
  auto hash = in.bytes(64, "the circuit hash");
  std::memcpy(out.circuit_hash.data(), hash.data(), 64);
  out.num_contributions = in.u32("the contribution count");
  constexpr std::size_t kG1 = sizeof(typename Curve::G1Affine);
  constexpr std::size_t kG2 = sizeof(typename Curve::G2Affine);
  constexpr std::size_t kFixed = 3 * kG1 + kG2 + 64 + 4 + 4;
  if (out.num_contributions > in.remaining() / kFixed)
    in.fail(std::to_string(out.num_contributions) + " contributions need at least " +
            std::to_string(std::uint64_t(out.num_contributions) * kFixed) + " bytes, found " +
            std::to_string(in.remaining()));
  for (std::uint32_t i = 0; i < out.num_contributions; ++i) {
    const std::string what = "contribution " + std::to_string(i);
    in.bytes(3 * kG1 + kG2 + 64, what + " keys and transcript");
    in.u32(what + " type");
    const std::uint32_t param_length = in.u32(what + " parameter length");
    in.bytes(param_length, what + " parameters");
  }
  in.expect_end("circuit hash, count and " + std::to_string(out.num_contributions) +
                " contributions");
}

}  // namespace

CurveId zkey_curve(std::shared_ptr<const FileBytes> file) {
  BinFile bin(std::move(file), kZkeySpec);
  check_protocol(bin);
  SectionReader in = bin.reader(kZkeyHeaderSection);
  return read_primes(in);
}

template <class Curve>
Zkey<Curve> parse_zkey(std::shared_ptr<const FileBytes> file, const ZkeyReadOptions& options) {
  using G1Affine = typename Curve::G1Affine;
  using G2Affine = typename Curve::G2Affine;
  using Fr = typename Curve::Fr;
  static_assert(sizeof(G1Affine) == 2 * Curve::Fq::kBytes, "AffinePoint must be exactly {x, y}");
  static_assert(sizeof(G2Affine) == 4 * Curve::Fq::kBytes, "G2 AffinePoint must be exactly {x, y}");

  BinFile bin(std::move(file), kZkeySpec);
  check_protocol(bin);
  Zkey<Curve> out;
  out.file = bin.file();
  {
    SectionReader in = bin.reader(kZkeyHeaderSection);
    const CurveId curve = read_primes(in);
    constexpr CurveId want = curve_id_of<Curve>();
    if (curve != want)
      in.fail(std::string("the key is for ") + curve_display_name(curve) + ", expected " +
              curve_display_name(want));
    out.num_vars = in.u32("nVars");
    out.num_public = in.u32("nPublic");
    out.domain_size = in.u32("domainSize");
    if (std::uint64_t(out.num_public) + 1 > out.num_vars)
      in.fail("nPublic + 1 = " + std::to_string(std::uint64_t(out.num_public) + 1) +
              " exceeds nVars = " + std::to_string(out.num_vars));
    if (out.domain_size == 0 || (out.domain_size & (out.domain_size - 1)) != 0)
      in.fail("domainSize " + std::to_string(out.domain_size) + " is not a power of two");
    out.alpha1 = header_point<G1Affine>(in, "alpha1");
    out.beta1 = header_point<G1Affine>(in, "beta1");
    out.beta2 = header_point<G2Affine>(in, "beta2");
    out.gamma2 = header_point<G2Affine>(in, "gamma2");
    out.delta1 = header_point<G1Affine>(in, "delta1");
    out.delta2 = header_point<G2Affine>(in, "delta2");
    in.expect_end("primes, nVars, nPublic, domainSize and six points");
  }
  out.ic = point_section<G1Affine>(bin, kZkeyIcSection, std::uint64_t(out.num_public) + 1);
  out.a = point_section<G1Affine>(bin, kZkeyASection, out.num_vars);
  out.b1 = point_section<G1Affine>(bin, kZkeyB1Section, out.num_vars);
  out.b2 = point_section<G2Affine>(bin, kZkeyB2Section, out.num_vars);
  out.c = point_section<G1Affine>(bin, kZkeyCSection,
                                  std::uint64_t(out.num_vars) - out.num_public - 1);
  out.h = point_section<G1Affine>(bin, kZkeyHSection, out.domain_size);
  out.coefficients = ZkeyCoefficients<Fr>(bin.file(), bin.unique(kZkeyCoefficientsSection),
                                          bin.describe(kZkeyCoefficientsSection), out.num_vars,
                                          out.domain_size);
  parse_contributions(bin, out);
  if (options.validate_coefficients) out.coefficients.validate();
  if (options.validate_points) validate_zkey_points(out);
  return out;
}

template <class Curve>
Zkey<Curve> read_zkey(const std::string& path, const ZkeyReadOptions& options) {
  return parse_zkey<Curve>(FileBytes::map(path), options);
}

template <class Curve>
void validate_zkey_points(const Zkey<Curve>& zkey) {
  auto check = [&](auto points, std::uint32_t section) {
    constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
    std::atomic<std::size_t> first_bad{kNone};
    parallel_for(points.size(), [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end && i < first_bad.load(std::memory_order_relaxed); ++i)
        if (!point_ok(points[i])) {
          std::size_t cur = first_bad.load();
          while (i < cur && !first_bad.compare_exchange_weak(cur, i)) {
          }
          return;
        }
    });
    if (first_bad.load() != kNone) {
      const auto& p = points[first_bad.load()];
      const bool reduced = coordinate_reduced(p.x) && coordinate_reduced(p.y);
      throw FormatError(zkey.file->name() + ": section " + std::to_string(section) + " (" +
                        zkey_section_name(section) + "): point " +
                        std::to_string(first_bad.load()) +
                        (reduced ? " is not on the curve"
                                 : ": a coordinate is not below the base field prime q"));
    }
  };
  check(zkey.ic.span(), kZkeyIcSection);
  check(zkey.a.span(), kZkeyASection);
  check(zkey.b1.span(), kZkeyB1Section);
  check(zkey.b2.span(), kZkeyB2Section);
  check(zkey.c.span(), kZkeyCSection);
  check(zkey.h.span(), kZkeyHSection);
}

namespace {

template <class Curve>
void check_write_input(const ZkeyWriteInput<Curve>& in) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("write_zkey: " + what); };
  if (std::uint64_t(in.num_public) + 1 > in.num_vars) bad("num_public + 1 exceeds num_vars");
  if (in.domain_size == 0 || (in.domain_size & (in.domain_size - 1)) != 0)
    bad("domain_size " + std::to_string(in.domain_size) + " is not a power of two");
  auto size = [&](std::size_t got, std::uint64_t want, const char* name) {
    if (got != want)
      bad(std::string(name) + " has " + std::to_string(got) + " points, expected " +
          std::to_string(want));
  };
  size(in.ic.size(), std::uint64_t(in.num_public) + 1, "ic");
  size(in.a.size(), in.num_vars, "a");
  size(in.b1.size(), in.num_vars, "b1");
  size(in.b2.size(), in.num_vars, "b2");
  size(in.c.size(), std::uint64_t(in.num_vars) - in.num_public - 1, "c");
  size(in.h.size(), in.domain_size, "h");
  if (in.coefficients.size() > std::numeric_limits<std::uint32_t>::max())
    bad("more than 2^32-1 coefficients");
  for (std::size_t i = 0; i < in.coefficients.size(); ++i) {
    const auto& c = in.coefficients[i];
    if (c.matrix > 1 || c.constraint >= in.domain_size || c.signal >= in.num_vars)
      bad("coefficient " + std::to_string(i) + " out of range (matrix " +
          std::to_string(c.matrix) + ", constraint " + std::to_string(c.constraint) +
          ", signal " + std::to_string(c.signal) + ")");
  }
}

template <class Curve>
void emit_zkey(BinFileWriter& out, const ZkeyWriteInput<Curve>& in) {
  using Fq = typename Curve::Fq;
  using Fr = typename Curve::Fr;
  out.begin_section(kZkeyProtocolSection);
  out.write_u32(kZkeyGroth16Protocol);
  out.end_section();

  out.begin_section(kZkeyHeaderSection);
  std::uint8_t prime[64];
  out.write_u32(Fq::kBytes);
  Fq::kModulus.to_le_bytes(prime, Fq::kBytes);
  out.write(std::span<const std::uint8_t>(prime, Fq::kBytes));
  out.write_u32(Fr::kBytes);
  Fr::kModulus.to_le_bytes(prime, Fr::kBytes);
  out.write(std::span<const std::uint8_t>(prime, Fr::kBytes));
  out.write_u32(in.num_vars);
  out.write_u32(in.num_public);
  out.write_u32(in.domain_size);
  write_point(out, in.alpha1);
  write_point(out, in.beta1);
  write_point(out, in.beta2);
  write_point(out, in.gamma2);
  write_point(out, in.delta1);
  write_point(out, in.delta2);
  out.end_section();

  const std::pair<std::uint32_t, std::span<const typename Curve::G1Affine>> g1_sections[] = {
      {kZkeyIcSection, in.ic}, {kZkeyASection, in.a}, {kZkeyB1Section, in.b1}};
  for (const auto& [type, points] : g1_sections) {
    out.align_next_section_body();
    out.begin_section(type);
    write_points(out, points);
    out.end_section();
  }
  out.align_next_section_body();
  out.begin_section(kZkeyB2Section);
  write_points(out, in.b2);
  out.end_section();
  out.align_next_section_body();
  out.begin_section(kZkeyCSection);
  write_points(out, in.c);
  out.end_section();
  out.align_next_section_body();
  out.begin_section(kZkeyHSection);
  write_points(out, in.h);
  out.end_section();

  out.begin_section(kZkeyCoefficientsSection);
  out.write_u32(static_cast<std::uint32_t>(in.coefficients.size()));
  constexpr std::size_t kEntry = ZkeyCoefficients<Fr>::kEntryBytes;
  constexpr std::size_t kBlock = 1 << 14;
  std::vector<std::uint8_t> block(kBlock * kEntry);
  for (std::size_t begin = 0; begin < in.coefficients.size(); begin += kBlock) {
    const std::size_t n = std::min(kBlock, in.coefficients.size() - begin);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& c = in.coefficients[begin + i];
      std::uint8_t* p = block.data() + i * kEntry;
      store_u32le(p, c.matrix);
      store_u32le(p + 4, c.constraint);
      store_u32le(p + 8, c.signal);
      ZkeyCoefficients<Fr>::encode_value(c.value, p + 12);
    }
    out.write(std::span<const std::uint8_t>(block.data(), n * kEntry));
  }
  out.end_section();

  out.begin_section(kZkeyContributionsSection);
  out.write(in.circuit_hash);
  out.write_u32(0);
  out.end_section();
}

}  // namespace

template <class Curve>
std::vector<std::uint8_t> serialize_zkey(const ZkeyWriteInput<Curve>& input) {
  check_write_input(input);
  std::vector<std::uint8_t> out;
  BinFileWriter writer(&out, "zkey", 1);
  emit_zkey(writer, input);
  writer.commit();
  return out;
}

template <class Curve>
void write_zkey(const std::string& path, const ZkeyWriteInput<Curve>& input) {
  check_write_input(input);
  BinFileWriter writer(path, "zkey", 1);
  emit_zkey(writer, input);
  writer.commit();
}

#define ZKFARM_ZKEY_INSTANTIATE(Curve)                                                          \
  template Zkey<Curve> parse_zkey<Curve>(std::shared_ptr<const FileBytes>,                      \
                                         const ZkeyReadOptions&);                               \
  template Zkey<Curve> read_zkey<Curve>(const std::string&, const ZkeyReadOptions&);            \
  template void validate_zkey_points<Curve>(const Zkey<Curve>&);                                \
  template std::vector<std::uint8_t> serialize_zkey<Curve>(const ZkeyWriteInput<Curve>&);       \
  template void write_zkey<Curve>(const std::string&, const ZkeyWriteInput<Curve>&);
ZKFARM_ZKEY_INSTANTIATE(Bn254)
ZKFARM_ZKEY_INSTANTIATE(Bls12381)

}  // namespace zkfarm
