// r1cs.cc -- .r1cs reader and writer (see r1cs.h for the layout).
#include "formats/r1cs.h"

#include <stdexcept>

namespace zkfarm {

namespace {

const char* r1cs_section_name(std::uint32_t type) {
  switch (type) {
    case 1: return "header";
    case 2: return "constraints";
    case 3: return "wire-to-label map";
    case 4: return "custom gates list";
    case 5: return "custom gates uses";
    default: return nullptr;
  }
}

constexpr BinFile::Spec kR1csSpec{"r1cs", 1, 1, r1cs_section_name};

struct R1csHeader {
  CurveId curve;
  std::uint32_t n8;
  std::uint32_t num_wires, num_pub_out, num_pub_in, num_prv_in;
  std::uint64_t num_labels;
  std::uint32_t num_constraints;
};

R1csHeader parse_header(const BinFile& bin) {
  SectionReader in = bin.reader(kR1csHeaderSection);
  R1csHeader h;
  h.curve = read_scalar_field(in);
  h.n8 = 32;
  h.num_wires = in.u32("nWires");
  h.num_pub_out = in.u32("nPubOut");
  h.num_pub_in = in.u32("nPubIn");
  h.num_prv_in = in.u32("nPrvIn");
  h.num_labels = in.u64("nLabels");
  h.num_constraints = in.u32("nConstraints");
  in.expect_end("n8, prime, 4 x u32, u64, u32");
  const std::uint64_t inputs =
      1ull + h.num_pub_out + std::uint64_t(h.num_pub_in) + std::uint64_t(h.num_prv_in);
  if (h.num_wires < inputs)
    in.fail("nWires = " + std::to_string(h.num_wires) + " is less than 1 + nPubOut + nPubIn + " +
            "nPrvIn = " + std::to_string(inputs));
  return h;
}

template <class Fr>
void parse_constraints(const BinFile& bin, const R1csHeader& h, R1cs<Fr>& out) {
  SectionReader in = bin.reader(kR1csConstraintsSection);
  // Each constraint holds at least three u32 counts.
  if (h.num_constraints > in.remaining() / 12)
    in.fail("header announces " + std::to_string(h.num_constraints) +
            " constraints, which need at least " + std::to_string(12ull * h.num_constraints) +
            " bytes, found " + std::to_string(in.remaining()));
  SparseMatrix<Fr>* matrices[3] = {&out.a, &out.b, &out.c};
  const char* names[3] = {"A", "B", "C"};
  for (auto* m : matrices) {
    m->row_offsets.clear();
    m->row_offsets.reserve(std::size_t(h.num_constraints) + 1);
    m->row_offsets.push_back(0);
  }
  constexpr std::size_t kTerm = 4 + Fr::kBytes;
  for (std::uint32_t row = 0; row < h.num_constraints; ++row) {
    for (int k = 0; k < 3; ++k) {
      auto what = [&](const char* field) {
        return std::string(field) + " of " + names[k] + " in constraint " + std::to_string(row);
      };
      const std::uint32_t count = in.u32(what("the term count"));
      auto terms = in.array(count, kTerm, what("the terms"));
      SparseMatrix<Fr>& m = *matrices[k];
      for (std::uint32_t t = 0; t < count; ++t) {
        const std::uint8_t* term = terms.data() + std::size_t(t) * kTerm;
        const std::uint32_t wire = load_u32le(term);
        if (wire >= h.num_wires)
          in.fail("constraint " + std::to_string(row) + ", " + names[k] + " term " +
                  std::to_string(t) + ": wire " + std::to_string(wire) + " is not below nWires = " +
                  std::to_string(h.num_wires));
        auto value = Fr::from_le_bytes(term + 4);
        if (!value)
          in.fail("constraint " + std::to_string(row) + ", " + names[k] + " term " +
                  std::to_string(t) + ": coefficient is not below the prime");
        m.cols.push_back(wire);
        m.values.push_back(*value);
      }
      m.row_offsets.push_back(m.cols.size());
    }
  }
  in.expect_end(std::to_string(h.num_constraints) + " constraints");
}

void parse_wire_map(const BinFile& bin, const R1csHeader& h, std::vector<std::uint64_t>& out) {
  auto body = bin.optional(kR1csWireMapSection);
  if (!body) return;
  SectionReader in(*body, bin.describe(kR1csWireMapSection));
  if (body->size() != std::uint64_t(h.num_wires) * 8)
    in.fail("expected " + std::to_string(h.num_wires) + " labels of 8 bytes = " +
            std::to_string(std::uint64_t(h.num_wires) * 8) + " bytes, found " +
            std::to_string(body->size()));
  out.resize(h.num_wires);
  for (std::uint32_t w = 0; w < h.num_wires; ++w) {
    out[w] = in.u64("a label");
    if (out[w] >= h.num_labels)
      in.fail("wire " + std::to_string(w) + " maps to label " + std::to_string(out[w]) +
              ", not below nLabels = " + std::to_string(h.num_labels));
  }
}

void reject_custom_gates(const BinFile& bin) {
  for (std::uint32_t type : {4u, 5u})
    if (bin.count(type) != 0)
      bin.fail(type, "the circuit uses custom gates (PLONK only); Groth16 cannot prove it");
}

template <class Fr>
void check_consistent(const R1cs<Fr>& r) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("R1cs: " + what); };
  const std::uint64_t inputs =
      1ull + r.num_pub_out + std::uint64_t(r.num_pub_in) + std::uint64_t(r.num_prv_in);
  if (r.num_wires < inputs) bad("num_wires is less than 1 + outputs + inputs");
  const SparseMatrix<Fr>* ms[3] = {&r.a, &r.b, &r.c};
  for (const auto* m : ms) {
    if (m->row_offsets.empty() || m->num_rows() != r.num_constraints)
      bad("each matrix needs num_constraints = " + std::to_string(r.num_constraints) + " rows");
    if (m->row_offsets.front() != 0 || m->row_offsets.back() != m->cols.size() ||
        m->cols.size() != m->values.size())
      bad("row_offsets, cols and values disagree");
    for (std::size_t row = 0; row < m->num_rows(); ++row) {
      if (m->row_offsets[row] > m->row_offsets[row + 1]) bad("row_offsets must not decrease");
      if (m->row_offsets[row + 1] - m->row_offsets[row] > 0xffffffffull)
        bad("a row has more than 2^32-1 terms");
    }
    for (auto col : m->cols)
      if (col >= r.num_wires) bad("wire " + std::to_string(col) + " >= num_wires");
  }
  if (!r.wire_to_label.empty() && r.wire_to_label.size() != r.num_wires)
    bad("wire_to_label must be empty or have num_wires entries");
  for (auto label : r.wire_to_label)
    if (label >= r.num_labels) bad("label " + std::to_string(label) + " >= num_labels");
}

template <class Fr>
void emit_r1cs(BinFileWriter& out, const R1cs<Fr>& r) {
  out.begin_section(kR1csHeaderSection);
  out.write_u32(Fr::kBytes);
  std::uint8_t prime[Fr::kBytes];
  Fr::kModulus.to_le_bytes(prime, Fr::kBytes);
  out.write(prime);
  out.write_u32(r.num_wires);
  out.write_u32(r.num_pub_out);
  out.write_u32(r.num_pub_in);
  out.write_u32(r.num_prv_in);
  out.write_u64(r.num_labels);
  out.write_u32(r.num_constraints);
  out.end_section();

  out.begin_section(kR1csConstraintsSection);
  const SparseMatrix<Fr>* ms[3] = {&r.a, &r.b, &r.c};
  std::uint8_t term[4 + Fr::kBytes];
  for (std::uint32_t row = 0; row < r.num_constraints; ++row) {
    for (const auto* m : ms) {
      const std::uint64_t begin = m->row_offsets[row], end = m->row_offsets[row + 1];
      out.write_u32(static_cast<std::uint32_t>(end - begin));
      for (std::uint64_t i = begin; i < end; ++i) {
        store_u32le(term, m->cols[i]);
        m->values[i].to_le_bytes(term + 4);
        out.write(term);
      }
    }
  }
  out.end_section();

  // Section 3: the given map, else the identity map when the labels allow it
  // (snarkjs reads the map only for debugging; without one, none is written).
  if (!r.wire_to_label.empty() || r.num_labels >= r.num_wires) {
    out.begin_section(kR1csWireMapSection);
    for (std::uint32_t w = 0; w < r.num_wires; ++w)
      out.write_u64(r.wire_to_label.empty() ? w : r.wire_to_label[w]);
    out.end_section();
  }
}

}  // namespace

CurveId r1cs_curve(std::shared_ptr<const FileBytes> file) {
  BinFile bin(std::move(file), kR1csSpec);
  return parse_header(bin).curve;
}

template <class Fr>
R1cs<Fr> parse_r1cs(std::shared_ptr<const FileBytes> file) {
  BinFile bin(std::move(file), kR1csSpec);
  const R1csHeader h = parse_header(bin);
  constexpr CurveId want = curve_of_scalar_field<Fr>();
  if (h.curve != want)
    bin.fail(kR1csHeaderSection,
             std::string("prime is the ") + curve_display_name(h.curve) + " scalar field (" +
                 scalar_prime_decimal(h.curve) + "), expected " + curve_display_name(want) + " (" +
                 scalar_prime_decimal(want) + ")");
  reject_custom_gates(bin);
  R1cs<Fr> out;
  out.num_wires = h.num_wires;
  out.num_pub_out = h.num_pub_out;
  out.num_pub_in = h.num_pub_in;
  out.num_prv_in = h.num_prv_in;
  out.num_labels = h.num_labels;
  out.num_constraints = h.num_constraints;
  parse_wire_map(bin, h, out.wire_to_label);
  parse_constraints(bin, h, out);
  return out;
}

template <class Fr>
R1cs<Fr> read_r1cs(const std::string& path) {
  return parse_r1cs<Fr>(FileBytes::map(path));
}

template <class Fr>
std::vector<std::uint8_t> serialize_r1cs(const R1cs<Fr>& r1cs) {
  check_consistent(r1cs);
  std::vector<std::uint8_t> out;
  BinFileWriter writer(&out, "r1cs", 1);
  emit_r1cs(writer, r1cs);
  writer.commit();
  return out;
}

template <class Fr>
void write_r1cs(const std::string& path, const R1cs<Fr>& r1cs) {
  check_consistent(r1cs);
  BinFileWriter writer(path, "r1cs", 1);
  emit_r1cs(writer, r1cs);
  writer.commit();
}

template R1cs<Bn254Fr> parse_r1cs<Bn254Fr>(std::shared_ptr<const FileBytes>);
template R1cs<Bls12381Fr> parse_r1cs<Bls12381Fr>(std::shared_ptr<const FileBytes>);
template R1cs<Bn254Fr> read_r1cs<Bn254Fr>(const std::string&);
template R1cs<Bls12381Fr> read_r1cs<Bls12381Fr>(const std::string&);
template std::vector<std::uint8_t> serialize_r1cs<Bn254Fr>(const R1cs<Bn254Fr>&);
template std::vector<std::uint8_t> serialize_r1cs<Bls12381Fr>(const R1cs<Bls12381Fr>&);
template void write_r1cs<Bn254Fr>(const std::string&, const R1cs<Bn254Fr>&);
template void write_r1cs<Bls12381Fr>(const std::string&, const R1cs<Bls12381Fr>&);

}  // namespace zkfarm
