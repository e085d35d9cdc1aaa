// wtns.cc -- .wtns reader and writer (see wtns.h for the layout).
#include "formats/wtns.h"

#include <atomic>
#include <cstring>
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

// The header section's body: n8, the prime, nWitness (the one reader of it,
// for whole files and prefixes alike).
WtnsHeader read_header(SectionReader& in) {
  WtnsHeader h;
  h.curve = read_scalar_field(in);
  h.n8 = 32;
  h.count = in.u32("nWitness");
  in.expect_end("n8, prime, nWitness");
  return h;
}

WtnsHeader parse_header(const BinFile& bin) {
  SectionReader in = bin.reader(kWtnsHeaderSection);
  return read_header(in);
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

std::optional<WtnsSummary> read_wtns_summary(std::span<const std::uint8_t> prefix, std::uint64_t total,
                                             std::uint32_t num_public, const std::string& name) {
  constexpr std::uint64_t kFileHeader = 12, kSectionHeader = 12;
  const bool whole = total != 0 && prefix.size() >= total;
  if (whole) prefix = prefix.first(static_cast<std::size_t>(total));
  const auto fail = [&](const std::string& what) { return FormatError(name + ": " + what); };
  const auto section_fail = [&](std::uint32_t type, const std::string& what) {
    const char* section = wtns_section_name(type);
    return fail("section " + std::to_string(type) + (section ? std::string(" (") + section + ")" : "") + ": " + what);
  };
  if (prefix.size() < kFileHeader) {
    if (whole || (total != 0 && total < kFileHeader))
      throw fail("file too short for an iden3 header: expected at least 12 bytes, found " +
                 std::to_string(whole ? prefix.size() : total));
    return std::nullopt;
  }
  if (std::memcmp(prefix.data(), kWtnsSpec.magic.data(), 4) != 0) {
    // Never echoes the bytes (a daemon reports this to whoever named the file).
    std::string found = "something else";
    for (const char* known : {"r1cs", "zkey"})
      if (std::memcmp(prefix.data(), known, 4) == 0) found = std::string("a .") + known + " file";
    throw fail("wrong magic: expected \"wtns\" (a .wtns file), found " + found);
  }
  const std::uint32_t version = load_u32le(prefix.data() + 4);
  if (version != kWtnsSpec.min_version)
    throw fail("unsupported wtns version: expected 2, found " + std::to_string(version));
  const std::uint32_t sections = load_u32le(prefix.data() + 8);
  std::optional<WtnsHeader> header;
  std::optional<Section> values;
  std::uint64_t at = kFileHeader;
  // Walks the section table as far as the prefix reaches; stops as soon as
  // the header and values 0..num_public are known.
  for (std::uint32_t i = 0; i < sections; ++i) {
    if (at + kSectionHeader > prefix.size()) {
      if (whole)
        throw fail("section table entry " + std::to_string(i) + " at offset " + std::to_string(at) +
                   " is truncated: need 12 bytes, file has " + std::to_string(prefix.size() - at) + " left");
      return std::nullopt;
    }
    Section s;
    s.type = load_u32le(prefix.data() + at);
    s.size = load_u64le(prefix.data() + at + 4);
    s.offset = at + kSectionHeader;
    if (total != 0 && s.size > total - s.offset)
      throw section_fail(s.type, "runs past the end of the file: " + std::to_string(s.size) + " bytes at offset " +
                                     std::to_string(s.offset) + ", the file has " + std::to_string(total) + " bytes");
    if (s.type == kWtnsHeaderSection) {
      if (header) throw section_fail(s.type, "appears twice, expected once");
      if (s.offset + s.size > prefix.size()) return std::nullopt;
      SectionReader in(prefix.subspan(static_cast<std::size_t>(s.offset), static_cast<std::size_t>(s.size)),
                       name + ": section 1 (header)");
      header = read_header(in);
    } else if (s.type == kWtnsValuesSection) {
      if (values) throw section_fail(s.type, "appears twice, expected once");
      values = s;
    }
    if (header && values) {
      const std::uint64_t need = std::uint64_t(header->count) * header->n8;
      if (values->size != need)
        throw section_fail(kWtnsValuesSection, "expected " + std::to_string(header->count) + " values of " +
                                                   std::to_string(header->n8) + " bytes = " + std::to_string(need) +
                                                   " bytes, found " + std::to_string(values->size));
      if (header->count < std::uint64_t(num_public) + 1)
        throw section_fail(kWtnsValuesSection,
                           "has " + std::to_string(header->count) + " values, fewer than the " +
                               std::to_string(std::uint64_t(num_public) + 1) +
                               " (constant + public signals) the circuit needs");
      const std::uint64_t end = values->offset + (std::uint64_t(num_public) + 1) * header->n8;
      if (end > prefix.size()) return std::nullopt;
      if (whole) {
        // The rest of the table must still be sound: nothing after the last section.
        std::uint64_t next = s.offset + s.size;
        for (std::uint32_t j = i + 1; j < sections; ++j) {
          if (next + kSectionHeader > prefix.size())
            throw fail("section table entry " + std::to_string(j) + " at offset " + std::to_string(next) +
                       " is truncated: need 12 bytes, file has " + std::to_string(prefix.size() - next) + " left");
          const std::uint32_t type = load_u32le(prefix.data() + next);
          const std::uint64_t size = load_u64le(prefix.data() + next + 4);
          if (size > total - next - kSectionHeader)
            throw section_fail(type, "runs past the end of the file: " + std::to_string(size) + " bytes at offset " +
                                         std::to_string(next + kSectionHeader) + ", the file has " +
                                         std::to_string(total) + " bytes");
          if (type == kWtnsHeaderSection || type == kWtnsValuesSection)
            throw section_fail(type, "appears twice, expected once");
          next += kSectionHeader + size;
        }
        if (next != total)
          throw fail(std::to_string(total - next) + " bytes after the last section, expected none");
      }
      WtnsSummary out;
      out.curve = header->curve;
      out.n8 = header->n8;
      out.num_values = header->count;
      out.values_offset = values->offset;
      out.public_inputs.assign(prefix.begin() + static_cast<std::ptrdiff_t>(values->offset + header->n8),
                               prefix.begin() + static_cast<std::ptrdiff_t>(end));
      return out;
    }
    at = s.offset + s.size;
  }
  // The whole table was read: a section is missing.
  if (!header) throw fail("missing section 1 (header)");
  throw fail("missing section 2 (values)");
}

WtnsSummary read_wtns_summary(const FileBytes& file, std::uint32_t num_public) {
  const auto bytes = file.bytes();
  if (bytes.empty()) throw FormatError(file.name() + ": file too short for an iden3 header: expected at least 12 bytes, found 0");
  return *read_wtns_summary(bytes, bytes.size(), num_public, file.name());
}

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
