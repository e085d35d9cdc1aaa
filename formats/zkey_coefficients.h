// zkey_coefficients.h -- the coefficient section (4) of a snarkjs Groth16 .zkey.
//
// Layout: u32 count, then count entries of (u32 matrix 0=A/1=B, u32
// constraint, u32 signal, value). The value is the coefficient c stored as the
// integer c*R^2 mod r in n8r little-endian bytes: reading those bytes as our
// Montgomery representation gives the element c*R, and one Montgomery
// multiplication by the integer 1 (R^-1) yields c.
//
// This is a curve-independent view (it only needs Fr) so that the PCE builder
// can consume it without the curve templates. It decodes entries on demand,
// straight from the mapped file; validate() checks every entry once, on all
// cores.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>

#include "formats/binfile.h"
#include "kernels/field.h"
#include "kernels/parallel.h"

namespace zkfarm {

template <class Fr>
struct ZkeyCoefficient {
  std::uint32_t matrix = 0;      // 0 = A, 1 = B
  std::uint32_t constraint = 0;  // row, < domain size
  std::uint32_t signal = 0;      // column, < nVars
  Fr value;
};

template <class Fr>
class ZkeyCoefficients {
 public:
  static constexpr std::size_t kEntryBytes = 12 + Fr::kBytes;

  ZkeyCoefficients() = default;

  // Checks that body is exactly u32 count + count entries (before anything
  // is read from the entries). Throws FormatError prefixed by `where`
  // ("k.zkey: section 4 (coefficients)"). Entries are not validated here.
  ZkeyCoefficients(std::shared_ptr<const FileBytes> file, std::span<const std::uint8_t> body,
                   std::string where, std::uint32_t num_vars, std::uint32_t domain_size)
      : file_(std::move(file)), where_(std::move(where)), num_vars_(num_vars),
        domain_size_(domain_size) {
    SectionReader in(body, where_);
    count_ = in.u32("the coefficient count");
    entries_ = in.array(count_, kEntryBytes, "the coefficients");
    in.expect_end("u32 count + " + std::to_string(count_) + " coefficients of " +
                  std::to_string(kEntryBytes) + " bytes");
  }

  std::size_t size() const { return count_; }
  std::uint32_t num_vars() const { return num_vars_; }
  std::uint32_t domain_size() const { return domain_size_; }
  const std::string& where() const { return where_; }

  // Entry i, decoded (no range checks beyond i < size(); call validate()
  // first or check the fields yourself).
  ZkeyCoefficient<Fr> operator[](std::size_t i) const {
    const std::uint8_t* p = entries_.data() + i * kEntryBytes;
    ZkeyCoefficient<Fr> out;
    out.matrix = load_u32le(p);
    out.constraint = load_u32le(p + 4);
    out.signal = load_u32le(p + 8);
    out.value = decode_value(p + 12);
    return out;
  }

  // The fields of entry i without decoding its value (cheap: no field
  // multiplication), for passes that only need positions.
  std::uint32_t matrix_of(std::size_t i) const { return load_u32le(entry(i)); }
  std::uint32_t constraint_of(std::size_t i) const { return load_u32le(entry(i) + 4); }
  std::uint32_t signal_of(std::size_t i) const { return load_u32le(entry(i) + 8); }

  // True if entry i's stored value is exactly 1*R^2 mod r (coefficient 1),
  // without a multiplication.
  bool is_one(std::size_t i) const {
    const std::uint8_t* p = entries_.data() + i * kEntryBytes + 12;
    return Fr::Int::from_le_bytes(p, Fr::kBytes) == Fr::kR2;
  }
  bool is_zero(std::size_t i) const {
    const std::uint8_t* p = entries_.data() + i * kEntryBytes + 12;
    return std::all_of(p, p + Fr::kBytes, [](std::uint8_t b) { return b == 0; });
  }

  // Checks every entry: matrix in {0, 1}, constraint < domain size, signal <
  // nVars, stored value < r. Returns normally if all are fine; throws
  // FormatError naming the first bad entry otherwise.
  void validate() const {
    std::atomic<std::size_t> first_bad{kNone};
    parallel_for(count_, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end && i < first_bad.load(std::memory_order_relaxed); ++i) {
        if (!entry_ok(i)) {
          std::size_t cur = first_bad.load();
          while (i < cur && !first_bad.compare_exchange_weak(cur, i)) {
          }
          return;
        }
      }
    });
    if (first_bad.load() != kNone) fail_entry(first_bad.load());
  }

  // Throws FormatError describing what is wrong with entry i (which must be bad).
  [[noreturn]] void fail_entry(std::size_t i) const {
    const std::uint8_t* p = entries_.data() + i * kEntryBytes;
    const std::uint32_t matrix = load_u32le(p), constraint = load_u32le(p + 4),
                        signal = load_u32le(p + 8);
    std::string what;
    if (matrix > 1)
      what = "matrix " + std::to_string(matrix) + ", expected 0 (A) or 1 (B)";
    else if (constraint >= domain_size_)
      what = "constraint " + std::to_string(constraint) + " is not below the domain size " +
             std::to_string(domain_size_);
    else if (signal >= num_vars_)
      what = "signal " + std::to_string(signal) + " is not below nVars = " +
             std::to_string(num_vars_);
    else
      what = "value is not below the prime r";
    throw FormatError(where_ + ": coefficient " + std::to_string(i) + ": " + what);
  }

  bool entry_ok(std::size_t i) const {
    const std::uint8_t* p = entries_.data() + i * kEntryBytes;
    return load_u32le(p) <= 1 && load_u32le(p + 4) < domain_size_ &&
           load_u32le(p + 8) < num_vars_ &&
           Fr::Int::from_le_bytes(p + 12, Fr::kBytes) < Fr::kModulus;
  }

  // c from the stored c*R^2 (see the file comment).
  static Fr decode_value(const std::uint8_t* p) {
    typename Fr::Int one_int;
    one_int.limbs[0] = 1;
    return Fr::from_mont(Fr::Int::from_le_bytes(p, Fr::kBytes)) * Fr::from_mont(one_int);
  }
  // The stored bytes for coefficient c: c*R^2 mod r = the Montgomery form of c*R.
  static void encode_value(const Fr& c, std::uint8_t* out) {
    (c * Fr::from_mont(Fr::kR2)).to_mont_le_bytes(out);
  }

 private:
  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

  const std::uint8_t* entry(std::size_t i) const { return entries_.data() + i * kEntryBytes; }

  std::shared_ptr<const FileBytes> file_;  // keeps entries_ alive
  std::span<const std::uint8_t> entries_;
  std::string where_;
  std::uint32_t count_ = 0;
  std::uint32_t num_vars_ = 0;
  std::uint32_t domain_size_ = 0;
};

}  // namespace zkfarm
