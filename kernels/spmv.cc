// spmv.cc -- SpMV and the constraint check over the PCE's matrices (see pce.h).
#include "kernels/pce.h"

#include <atomic>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/parallel.h"

namespace zkfarm {

namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

// Lowers *target to value if value is smaller (first-failure tracking).
void record_min(std::atomic<std::size_t>& target, std::size_t value) {
  std::size_t cur = target.load();
  while (value < cur && !target.compare_exchange_weak(cur, value)) {
  }
}

// Row r of m times the witness: coefficient-1 entries are plain additions.
template <class Fr>
Fr row_dot(const Csr<Fr>& m, std::size_t r, std::span<const Fr> witness) {
  Fr acc = Fr::zero();
  const std::uint64_t units_end = m.unit_end(r);
  for (std::uint64_t i = m.row_offsets[r]; i < units_end; ++i) acc += witness[m.cols[i]];
  const Fr* value = m.values.data() + m.general_offsets[r];
  for (std::uint64_t i = units_end; i < m.row_offsets[r + 1]; ++i, ++value) acc += *value * witness[m.cols[i]];
  return acc;
}

}  // namespace

std::vector<std::uint64_t> column_bitmap_of(std::span<const std::uint32_t> cols, std::uint32_t num_cols) {
  // Words shared across threads are updated with atomic ORs, skipped when the
  // bit is already set.
  std::vector<std::uint64_t> bitmap((std::uint64_t(num_cols) + 63) / 64, 0);
  parallel_for(cols.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint32_t c = cols[i];
      const std::uint64_t bit = std::uint64_t(1) << (c % 64);
      std::atomic_ref<std::uint64_t> word(bitmap[c / 64]);
      if (!(word.load(std::memory_order_relaxed) & bit)) word.fetch_or(bit, std::memory_order_relaxed);
    }
  });
  return bitmap;
}

template <class Fr>
void spmv(const Csr<Fr>& m, std::span<const Fr> witness, std::span<Fr> out) {
  if (witness.size() != m.num_cols)
    throw std::invalid_argument("spmv: witness has " + std::to_string(witness.size()) +
                                " values, the matrix has " + std::to_string(m.num_cols) + " columns");
  if (out.size() != m.num_rows)
    throw std::invalid_argument("spmv: output has " + std::to_string(out.size()) +
                                " slots, the matrix has " + std::to_string(m.num_rows) + " rows");
  parallel_for(m.num_rows, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) out[r] = row_dot(m, r, witness);
  });
}

template <class Fr>
Pce<Fr>::Pce(std::uint32_t num_public, std::uint32_t domain_size, Csr<Fr> a, Csr<Fr> b,
             std::optional<Csr<Fr>> c)
    : num_public_(num_public), domain_size_(domain_size), has_c_(c.has_value()), a_(std::move(a)),
      b_(std::move(b)) {
  auto check = [&](const Csr<Fr>& m, const char* name) {
    if (m.num_rows != a_.num_rows || m.num_cols != a_.num_cols)
      throw std::invalid_argument(std::string("PCE: matrix ") + name + " is " + std::to_string(m.num_rows) + "x" +
                                  std::to_string(m.num_cols) + ", A is " + std::to_string(a_.num_rows) + "x" +
                                  std::to_string(a_.num_cols));
  };
  check(b_, "B");
  if (c) {
    check(*c, "C");
    c_ = std::move(*c);
  }
}

template <class Fr>
const Csr<Fr>& Pce<Fr>::c() const {
  if (!has_c_) throw std::logic_error("this PCE has no C matrix (built from a zkey)");
  return c_;
}

template <class Fr>
std::optional<std::size_t> Pce<Fr>::first_unsatisfied(std::span<const Fr> witness) const {
  const Csr<Fr>& cm = c();
  if (witness.size() != num_cols())
    throw std::invalid_argument("witness has " + std::to_string(witness.size()) + " values, the circuit has " +
                                std::to_string(num_cols()) + " signals");
  std::atomic<std::size_t> first{kNone};
  parallel_for(num_rows(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end && r < first.load(std::memory_order_relaxed); ++r) {
      if (row_dot(a_, r, witness) * row_dot(b_, r, witness) != row_dot(cm, r, witness)) {
        record_min(first, r);
        return;
      }
    }
  });
  if (first.load() == kNone) return std::nullopt;
  return first.load();
}

template class Pce<Bn254Fr>;
template class Pce<Bls12381Fr>;
template void spmv<Bn254Fr>(const Csr<Bn254Fr>&, std::span<const Bn254Fr>, std::span<Bn254Fr>);
template void spmv<Bls12381Fr>(const Csr<Bls12381Fr>&, std::span<const Bls12381Fr>, std::span<Bls12381Fr>);

}  // namespace zkfarm
