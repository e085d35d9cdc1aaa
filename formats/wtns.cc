// wtns.cc -- .wtns reader and writer (see wtns.h for the layout).
#include "formats/wtns.h"

#include <atomic>
#include <limits>
#include <stdexcept>

#include "kernels/parallel.h"

namespace zkfarm {

namespace {

const char* wtns_section_name(std::uint32_t type) {
  switch (type) {
    case 1: return "header";
    case 2: return "values";
    default: return nullptr;
  }
}

constexpr BinFile::Spec kWtnsSpec{"wtns", 2, 2, wtns_section_name};

struct WtnsHeader {
  CurveId curve;
  std::uint32_t n8;
  std::uint32_t count;
};

WtnsHeader parse_header(const BinFile& bin) {
  SectionReader in = bin.reader(kWtnsHeaderSection);
  WtnsHeader h;
  h.curve = read_scalar_field(in);
  h.n8 = 32;
  h.count = in.u32("nWitness");
  in.expect_end("n8, prime, nWitness");
  return h;
}

template <class Fr>
void emit_wtns(BinFileWriter& out, std::span<const Fr> values) {
  out.begin_section(kWtnsHeaderSection);
  out.write_u32(Fr::kBytes);
  std::uint8_t buf[Fr::kBytes];
  Fr::kModulus.to_le_bytes(buf, Fr::kBytes);
  out.write(buf);
  out.write_u32(static_cast<std::uint32_t>(values.size()));
  out.end_section();
  out.begin_section(kWtnsValuesSection);
  // Convert in blocks so the writer sees large writes.
  constexpr std::size_t kBlock = 1 << 14;
  std::vector<std::uint8_t> block(kBlock * Fr::kBytes);
  for (std::size_t begin = 0; begin < values.size(); begin += kBlock) {
    const std::size_t n = std::min(kBlock, values.size() - begin);
    for (std::size_t i = 0; i < n; ++i) values[begin + i].to_le_bytes(block.data() + i * Fr::kBytes);
    out.write(std::span<const std::uint8_t>(block.data(), n * Fr::kBytes));
  }
  out.end_section();
}

template <class Fr>
void check_size(std::span<const Fr> values) {
  if (values.size() > std::numeric_limits<std::uint32_t>::max())
    throw std::invalid_argument("a .wtns file holds at most 2^32-1 values, got " +
                                std::to_string(values.size()));
}

}  // namespace

CurveId wtns_curve(std::shared_ptr<const FileBytes> file) {
  BinFile bin(std::move(file), kWtnsSpec);
  return parse_header(bin).curve;
}

namespace {

// parse_wtns into *grow (resized) or, when grow is null, into `into`.
template <class Fr>
void parse_wtns_values(std::shared_ptr<const FileBytes> file, std::optional<std::size_t> expected_count,
                       std::vector<Fr>* grow, std::span<Fr> into) {
  BinFile bin(std::move(file), kWtnsSpec);
  const WtnsHeader h = parse_header(bin);
  constexpr CurveId want = curve_of_scalar_field<Fr>();
  if (h.curve != want)
    bin.fail(kWtnsHeaderSection,
             std::string("prime is the ") + curve_display_name(h.curve) + " scalar field (" +
                 scalar_prime_decimal(h.curve) + "), expected " + curve_display_name(want) + " (" +
                 scalar_prime_decimal(want) + ")");
  if (expected_count && h.count != *expected_count)
    bin.fail(kWtnsHeaderSection, "witness has " + std::to_string(h.count) +
                                     " values, the circuit expects " +
                                     std::to_string(*expected_count));
  auto body = bin.unique(kWtnsValuesSection);
  const std::uint64_t need = std::uint64_t(h.count) * Fr::kBytes;
  if (body.size() != need)
    bin.fail(kWtnsValuesSection, "expected " + std::to_string(h.count) + " values of " +
                                     std::to_string(Fr::kBytes) + " bytes = " +
                                     std::to_string(need) + " bytes, found " +
                                     std::to_string(body.size()));
  if (grow) {
    grow->resize(h.count);
    into = std::span<Fr>(*grow);
  }
  Fr* values = into.data();
  std::atomic<std::size_t> first_bad{std::numeric_limits<std::size_t>::max()};
  parallel_for(h.count, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      auto v = Fr::from_le_bytes(body.data() + i * Fr::kBytes);
      if (!v) {
        std::size_t cur = first_bad.load();
        while (i < cur && !first_bad.compare_exchange_weak(cur, i)) {
        }
        return;
      }
      values[i] = *v;
    }
  });
  if (first_bad.load() != std::numeric_limits<std::size_t>::max())
    bin.fail(kWtnsValuesSection, "value " + std::to_string(first_bad.load()) +
                                     " is not below the prime " + scalar_prime_decimal(want));
}

}  // namespace

std::uint32_t wtns_count(std::shared_ptr<const FileBytes> file) {
  BinFile bin(std::move(file), kWtnsSpec);
  return parse_header(bin).count;
}

template <class Fr>
std::vector<Fr> parse_wtns(std::shared_ptr<const FileBytes> file,
                           std::optional<std::size_t> expected_count) {
  std::vector<Fr> values;
  parse_wtns_values<Fr>(std::move(file), expected_count, &values, {});
  return values;
}

template <class Fr>
void parse_wtns_into(std::shared_ptr<const FileBytes> file, std::span<Fr> out) {
  parse_wtns_values<Fr>(std::move(file), out.size(), nullptr, out);
}

template <class Fr>
std::vector<Fr> read_wtns(const std::string& path, std::optional<std::size_t> expected_count) {
  return parse_wtns<Fr>(FileBytes::map(path), expected_count);
}

template <class Fr>
std::vector<std::uint8_t> serialize_wtns(std::span<const Fr> values) {
  check_size(values);
  std::vector<std::uint8_t> out;
  BinFileWriter writer(&out, "wtns", 2);
  emit_wtns(writer, values);
  writer.commit();
  return out;
}

template <class Fr>
void write_wtns(const std::string& path, std::span<const Fr> values) {
  check_size(values);
  BinFileWriter writer(path, "wtns", 2);
  emit_wtns(writer, values);
  writer.commit();
}

#define ZKFARM_WTNS_INSTANTIATE(Fr)                                                               \
  template std::vector<Fr> parse_wtns<Fr>(std::shared_ptr<const FileBytes>,                       \
                                          std::optional<std::size_t>);                            \
  template std::vector<Fr> read_wtns<Fr>(const std::string&, std::optional<std::size_t>);         \
  template void parse_wtns_into<Fr>(std::shared_ptr<const FileBytes>, std::span<Fr>);              \
  template std::vector<std::uint8_t> serialize_wtns<Fr>(std::span<const Fr>);                     \
  template void write_wtns<Fr>(const std::string&, std::span<const Fr>);
ZKFARM_WTNS_INSTANTIATE(Bn254Fr)
ZKFARM_WTNS_INSTANTIATE(Bls12381Fr)

}  // namespace zkfarm
