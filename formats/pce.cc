// pce.cc -- building, saving and loading the PCE (see pce.h).
#include "formats/pce.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <limits>
#include <stdexcept>
#include <system_error>

#include "base/digest.h"
#include "kernels/parallel.h"

namespace zkfarm {

static_assert(std::endian::native == std::endian::little,
              "the PCE file stores arrays in host order, which must be little-endian");

namespace {

constexpr char kMagic[8] = {'Z', 'K', 'P', 'C', 'E', 0, 0, 0};
constexpr std::size_t kHeaderBytes = 64;
constexpr std::size_t kTableEntryBytes = 16;
constexpr std::size_t kArraysPerMatrix = 5;
constexpr std::size_t kDigestBytes = 32;
constexpr std::size_t kHashChunk = std::size_t(16) << 20;
constexpr std::uint32_t kFlagHasC = 1;
constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

using Digest = Sha256Digest;
static_assert(sizeof(Digest) == kDigestBytes);

// SHA-256 of the concatenated SHA-256s of data's 16 MiB chunks, hashed on all cores.
Digest chunked_digest(std::span<const std::uint8_t> data) {
  const std::size_t chunks = (data.size() + kHashChunk - 1) / kHashChunk;
  std::vector<std::uint8_t> digests(chunks * kDigestBytes);
  parallel_for(
      chunks,
      [&](std::size_t begin, std::size_t end) {
        for (std::size_t c = begin; c < end; ++c) {
          auto piece = data.subspan(c * kHashChunk, std::min(kHashChunk, data.size() - c * kHashChunk));
          Digest d = sha256(piece);
          std::memcpy(digests.data() + c * kDigestBytes, d.data(), kDigestBytes);
        }
      },
      chunks);
  return sha256(digests);
}

template <class T>
std::span<const std::uint8_t> as_bytes_of(const std::vector<T>& v) {
  return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * sizeof(T)};
}
template <class T>
std::span<std::uint8_t> as_writable_bytes_of(std::vector<T>& v) {
  return {reinterpret_cast<std::uint8_t*>(v.data()), v.size() * sizeof(T)};
}

// Lowers *target to value if value is smaller (first-failure tracking).
void record_min(std::atomic<std::size_t>& target, std::size_t value) {
  std::size_t cur = target.load();
  while (value < cur && !target.compare_exchange_weak(cur, value)) {
  }
}

std::uint64_t bitmap_words(std::uint32_t num_cols) { return (std::uint64_t(num_cols) + 63) / 64; }

template <class Fr>
void compute_bitmap(Csr<Fr>& m) {
  m.column_bitmap = column_bitmap_of(m.cols, m.num_cols);
}

// Per-row counts -> offsets. unit_count/general_count are reset to zero so
// they can serve as fill cursors.
template <class Fr>
void allocate_from_counts(Csr<Fr>& m, std::vector<std::uint32_t>& unit_count,
                          std::vector<std::uint32_t>& general_count) {
  m.row_offsets.assign(std::size_t(m.num_rows) + 1, 0);
  m.general_offsets.assign(std::size_t(m.num_rows) + 1, 0);
  for (std::uint32_t r = 0; r < m.num_rows; ++r) {
    m.row_offsets[r + 1] = m.row_offsets[r] + unit_count[r] + general_count[r];
    m.general_offsets[r + 1] = m.general_offsets[r] + general_count[r];
  }
  m.cols.assign(m.row_offsets.back(), 0);
  m.values.assign(m.general_offsets.back(), Fr::zero());
  std::fill(unit_count.begin(), unit_count.end(), 0);
  std::fill(general_count.begin(), general_count.end(), 0);
}

// Places one entry of row r using the fill cursors.
template <class Fr>
void place(Csr<Fr>& m, std::uint32_t r, std::uint32_t col, const Fr* general_value,
           std::vector<std::uint32_t>& unit_fill, std::vector<std::uint32_t>& general_fill) {
  if (!general_value) {
    m.cols[m.row_offsets[r] + unit_fill[r]++] = col;
  } else {
    const std::uint32_t k = general_fill[r]++;
    m.cols[m.unit_end(r) + k] = col;
    m.values[m.general_offsets[r] + k] = *general_value;
  }
}

// ---------------------------------------------------------------------------
// File I/O sources: the same parser reads a file (pread) or memory.

class Source {
 public:
  virtual ~Source() = default;
  virtual std::uint64_t size() const = 0;
  // Reads n bytes at offset (offset + n <= size() checked by the caller).
  virtual void read(std::uint64_t offset, std::uint8_t* out, std::size_t n) const = 0;
};

class MemorySource : public Source {
 public:
  explicit MemorySource(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  std::uint64_t size() const override { return bytes_.size(); }
  void read(std::uint64_t offset, std::uint8_t* out, std::size_t n) const override {
    if (n) std::memcpy(out, bytes_.data() + offset, n);
  }

 private:
  std::span<const std::uint8_t> bytes_;
};

class FdSource : public Source {
 public:
  explicit FdSource(const std::string& path) : path_(path) {
    fd_ = open_regular_file(path, &size_);
  }
  ~FdSource() override { ::close(fd_); }
  FdSource(const FdSource&) = delete;
  FdSource& operator=(const FdSource&) = delete;
  std::uint64_t size() const override { return size_; }
  // Big arrays are read in 64 MiB pieces on all cores (NVMe and NFS both
  // reach full bandwidth only with several requests in flight).
  void read(std::uint64_t offset, std::uint8_t* out, std::size_t n) const override {
    constexpr std::size_t kPiece = std::size_t(64) << 20;
    const std::size_t pieces = (n + kPiece - 1) / kPiece;
    parallel_for(
        pieces,
        [&](std::size_t begin, std::size_t end) {
          for (std::size_t p = begin; p < end; ++p) {
            const std::size_t len = std::min(kPiece, n - p * kPiece);
            read_exact(fd_, offset + p * kPiece, out + p * kPiece, len, path_);
          }
        },
        pieces);
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

struct ArrayEntry {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

}  // namespace

// ---------------------------------------------------------------------------
// Builders

template <class Fr>
Pce<Fr> pce_from_zkey(const ZkeyCoefficients<Fr>& coefficients, std::uint32_t num_public) {
  if (std::uint64_t(num_public) + 1 > coefficients.num_vars())
    throw std::invalid_argument("nPublic + 1 = " + std::to_string(std::uint64_t(num_public) + 1) +
                                " exceeds nVars = " + std::to_string(coefficients.num_vars()));
  coefficients.validate();
  const std::size_t n = coefficients.size();

  // Pass 1: number of rows and whether entries are sorted by constraint.
  std::atomic<std::uint32_t> max_row{0};
  std::atomic<bool> sorted{true};
  parallel_for(n, [&](std::size_t begin, std::size_t end) {
    std::uint32_t local_max = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint32_t row = coefficients.constraint_of(i);
      local_max = std::max(local_max, row + 1);
      if (i > 0 && coefficients.constraint_of(i - 1) > row) sorted.store(false, std::memory_order_relaxed);
    }
    std::uint32_t cur = max_row.load();
    while (local_max > cur && !max_row.compare_exchange_weak(cur, local_max)) {
    }
  });

  const std::uint32_t num_rows = max_row.load();
  Csr<Fr> a, b;
  Csr<Fr>* ms[2] = {&a, &b};
  for (auto* m : ms) {
    m->num_rows = num_rows;
    m->num_cols = coefficients.num_vars();
  }

  // Pass 2: per-row counts (atomic: rows are shared between chunks).
  std::vector<std::uint32_t> units[2], generals[2];
  for (int k = 0; k < 2; ++k) {
    units[k].assign(num_rows, 0);
    generals[k].assign(num_rows, 0);
  }
  parallel_for(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      if (coefficients.is_zero(i)) continue;
      const std::uint32_t matrix = coefficients.matrix_of(i);
      auto& counter = coefficients.is_one(i) ? units[matrix] : generals[matrix];
      std::atomic_ref<std::uint32_t>(counter[coefficients.constraint_of(i)])
          .fetch_add(1, std::memory_order_relaxed);
    }
  });
  for (int k = 0; k < 2; ++k) allocate_from_counts(*ms[k], units[k], generals[k]);

  // Pass 3: fill. Entries of one row keep their file order (units first).
  // snarkjs writes coefficients sorted by constraint; then chunks cut at row
  // boundaries own their rows and fill in parallel. Otherwise fill serially.
  auto fill = [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      if (coefficients.is_zero(i)) continue;
      const std::uint32_t matrix = coefficients.matrix_of(i);
      const std::uint32_t row = coefficients.constraint_of(i);
      const std::uint32_t col = coefficients.signal_of(i);
      if (coefficients.is_one(i)) {
        place<Fr>(*ms[matrix], row, col, nullptr, units[matrix], generals[matrix]);
      } else {
        const Fr value = coefficients[i].value;
        place<Fr>(*ms[matrix], row, col, &value, units[matrix], generals[matrix]);
      }
    }
  };
  if (sorted.load() && n > 0) {
    const std::size_t pieces = std::min<std::size_t>(n, parallel_threads() * 8);
    std::vector<std::size_t> cuts(pieces + 1);
    for (std::size_t p = 0; p <= pieces; ++p) {
      std::size_t at = static_cast<std::size_t>((static_cast<unsigned __int128>(n) * p) / pieces);
      // Move the cut forward to the first entry of a new row (cuts stay
      // non-decreasing, so pieces are disjoint and cover [0, n)).
      while (at > 0 && at < n && coefficients.constraint_of(at) == coefficients.constraint_of(at - 1)) ++at;
      cuts[p] = at;
    }
    parallel_for(
        pieces,
        [&](std::size_t begin, std::size_t end) {
          for (std::size_t p = begin; p < end; ++p) fill(cuts[p], cuts[p + 1]);
        },
        pieces);
  } else {
    fill(0, n);
  }
  for (auto* m : ms) compute_bitmap(*m);
  return Pce<Fr>(num_public, coefficients.domain_size(), std::move(a), std::move(b), std::nullopt);
}

template <class Fr>
Pce<Fr> pce_from_r1cs(const R1cs<Fr>& r1cs) {
  const std::uint64_t used = std::uint64_t(r1cs.num_constraints) + r1cs.num_public();
  std::uint64_t domain = 1;
  while (domain <= used) domain <<= 1;
  if (domain > (std::uint64_t(1) << 31))
    throw std::invalid_argument("circuit needs a domain of " + std::to_string(domain) +
                                " > 2^31 rows");
  if (std::uint64_t(r1cs.num_public()) + 1 > r1cs.num_wires)
    throw std::invalid_argument("R1cs: num_wires is less than 1 + public signals");
  const SparseMatrix<Fr>* src[3] = {&r1cs.a, &r1cs.b, &r1cs.c};
  for (const auto* m : src)
    if (m->num_rows() != r1cs.num_constraints || m->cols.size() != m->values.size() ||
        m->row_offsets.back() != m->cols.size())
      throw std::invalid_argument("R1cs: matrices disagree with num_constraints");

  Csr<Fr> built[3];
  Csr<Fr>* dst[3] = {&built[0], &built[1], &built[2]};
  for (int k = 0; k < 3; ++k) {
    Csr<Fr>& m = *dst[k];
    const SparseMatrix<Fr>& s = *src[k];
    m.num_rows = static_cast<std::uint32_t>(used + 1);
    m.num_cols = r1cs.num_wires;
    std::vector<std::uint32_t> units(m.num_rows, 0), generals(m.num_rows, 0);
    for (std::uint32_t r = 0; r < r1cs.num_constraints; ++r)
      for (std::uint64_t i = s.row_offsets[r]; i < s.row_offsets[r + 1]; ++i) {
        if (s.cols[i] >= r1cs.num_wires)
          throw std::invalid_argument("R1cs: wire " + std::to_string(s.cols[i]) + " >= num_wires");
        if (s.values[i].is_zero()) continue;
        ++(s.values[i].is_one() ? units : generals)[r];
      }
    // snarkjs's setup appends row nConstraints + j = signal j (coefficient 1) to A.
    if (k == 0)
      for (std::uint32_t j = 0; j <= r1cs.num_public(); ++j) ++units[r1cs.num_constraints + j];
    allocate_from_counts(m, units, generals);
    for (std::uint32_t r = 0; r < r1cs.num_constraints; ++r)
      for (std::uint64_t i = s.row_offsets[r]; i < s.row_offsets[r + 1]; ++i) {
        if (s.values[i].is_zero()) continue;
        place(m, r, s.cols[i], s.values[i].is_one() ? nullptr : &s.values[i], units, generals);
      }
    if (k == 0)
      for (std::uint32_t j = 0; j <= r1cs.num_public(); ++j)
        place<Fr>(m, r1cs.num_constraints + j, j, nullptr, units, generals);
    compute_bitmap(m);
  }
  return Pce<Fr>(r1cs.num_public(), static_cast<std::uint32_t>(domain), std::move(built[0]), std::move(built[1]),
                 std::move(built[2]));
}

// ---------------------------------------------------------------------------
// Save / load

namespace {

template <class Fr>
std::vector<std::span<const std::uint8_t>> array_list(const Csr<Fr>* const* ms, std::size_t count) {
  std::vector<std::span<const std::uint8_t>> out;
  for (std::size_t k = 0; k < count; ++k) {
    out.push_back(as_bytes_of(ms[k]->row_offsets));
    out.push_back(as_bytes_of(ms[k]->general_offsets));
    out.push_back(as_bytes_of(ms[k]->cols));
    out.push_back(as_bytes_of(ms[k]->values));
    out.push_back(as_bytes_of(ms[k]->column_bitmap));
  }
  return out;
}

// Final checksum from the header+table bytes and the arrays.
Digest file_checksum(std::span<const std::uint8_t> header_and_table,
                     const std::vector<std::span<const std::uint8_t>>& arrays) {
  std::vector<std::uint8_t> all(header_and_table.begin(), header_and_table.end());
  for (const auto& a : arrays) {
    Digest d = chunked_digest(a);
    all.insert(all.end(), d.begin(), d.end());
  }
  return sha256(all);
}

}  // namespace

namespace {
template <class Fr>
std::vector<std::uint8_t> pce_header_and_table(const Pce<Fr>& pce,
                                               const std::vector<std::span<const std::uint8_t>>& arrays) {
  std::vector<std::uint8_t> out(kHeaderBytes + arrays.size() * kTableEntryBytes, 0);
  std::memcpy(out.data(), kMagic, 8);
  store_u32le(out.data() + 8, kPceFileVersion);
  store_u32le(out.data() + 12, static_cast<std::uint32_t>(curve_of_scalar_field<Fr>()));
  store_u32le(out.data() + 16, pce.has_c() ? kFlagHasC : 0);
  store_u32le(out.data() + 20, static_cast<std::uint32_t>(pce.num_rows()));
  store_u32le(out.data() + 24, static_cast<std::uint32_t>(pce.num_cols()));
  store_u32le(out.data() + 28, pce.num_public());
  store_u32le(out.data() + 32, pce.domain_size());
  store_u32le(out.data() + 36, static_cast<std::uint32_t>(arrays.size()));
  std::uint64_t offset = out.size();
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    store_u64le(out.data() + kHeaderBytes + i * kTableEntryBytes, offset);
    store_u64le(out.data() + kHeaderBytes + i * kTableEntryBytes + 8, arrays[i].size());
    offset += arrays[i].size();
  }
  return out;
}
}  // namespace

// The matrices of pce in file order.
template <class Fr>
std::vector<std::span<const std::uint8_t>> pce_arrays(const Pce<Fr>& pce) {
  const Csr<Fr>* ms[3] = {&pce.a(), &pce.b(), pce.has_c() ? &pce.c() : nullptr};
  return array_list(ms, pce.has_c() ? 3 : 2);
}

template <class Fr>
std::vector<std::uint8_t> serialize_pce(const Pce<Fr>& pce) {
  auto arrays = pce_arrays(pce);
  auto head = pce_header_and_table(pce, arrays);
  Digest sum = file_checksum(head, arrays);
  std::vector<std::uint8_t> out = head;
  for (const auto& a : arrays) out.insert(out.end(), a.begin(), a.end());
  out.insert(out.end(), sum.begin(), sum.end());
  return out;
}

template <class Fr>
void save_pce(const Pce<Fr>& pce, const std::string& path) {
  auto arrays = pce_arrays(pce);
  auto head = pce_header_and_table(pce, arrays);
  Digest sum = file_checksum(head, arrays);
  AtomicFileWriter out(path);
  out.write(head);
  for (const auto& a : arrays) out.write(a);
  out.write(sum);
  out.commit();
}

namespace {

template <class Fr>
Pce<Fr> load_from(const Source& src, const std::string& name, bool verify_checksum) {
  auto fail = [&](const std::string& what) -> void { throw FormatError(name + ": " + what); };
  const std::uint64_t file_size = src.size();
  if (file_size < kHeaderBytes + kDigestBytes)
    fail("file too short for a PCE: expected at least " +
         std::to_string(kHeaderBytes + kDigestBytes) + " bytes, found " + std::to_string(file_size));
  std::vector<std::uint8_t> head(kHeaderBytes);
  src.read(0, head.data(), kHeaderBytes);
  if (std::memcmp(head.data(), kMagic, 8) != 0) fail("wrong magic: not a zkfarm PCE file");
  const std::uint32_t version = load_u32le(head.data() + 8);
  if (version != kPceFileVersion)
    fail("unsupported PCE version: expected " + std::to_string(kPceFileVersion) + ", found " +
         std::to_string(version));
  const std::uint32_t curve = load_u32le(head.data() + 12);
  constexpr CurveId want = curve_of_scalar_field<Fr>();
  if (curve != static_cast<std::uint32_t>(want))
    fail(std::string("PCE is for curve id ") + std::to_string(curve) + " (" +
         curve_display_name(static_cast<CurveId>(curve)) + "), expected " +
         std::to_string(static_cast<std::uint32_t>(want)) + " (" + curve_display_name(want) + ")");
  const std::uint32_t flags = load_u32le(head.data() + 16);
  if (flags & ~kFlagHasC) fail("unknown flags " + std::to_string(flags));
  const bool has_c = flags & kFlagHasC;
  const std::uint32_t num_rows = load_u32le(head.data() + 20);
  const std::uint32_t num_cols = load_u32le(head.data() + 24);
  const std::uint32_t num_public = load_u32le(head.data() + 28);
  const std::uint32_t domain_size = load_u32le(head.data() + 32);
  const std::uint32_t num_arrays = load_u32le(head.data() + 36);
  for (std::size_t i = 40; i < kHeaderBytes; ++i)
    if (head[i] != 0) fail("reserved header byte " + std::to_string(i) + " is not zero");
  const std::size_t n_matrices = has_c ? 3 : 2;
  if (num_arrays != n_matrices * kArraysPerMatrix)
    fail("expected " + std::to_string(n_matrices * kArraysPerMatrix) + " arrays, header says " +
         std::to_string(num_arrays));
  if (domain_size == 0 || (domain_size & (domain_size - 1)) != 0)
    fail("domain size " + std::to_string(domain_size) + " is not a power of two");
  if (num_rows > domain_size)
    fail("num_rows " + std::to_string(num_rows) + " exceeds the domain size " +
         std::to_string(domain_size));
  if (std::uint64_t(num_public) + 1 > num_cols)
    fail("num_public + 1 = " + std::to_string(std::uint64_t(num_public) + 1) +
         " exceeds num_cols = " + std::to_string(num_cols));

  const std::uint64_t table_end = kHeaderBytes + std::uint64_t(num_arrays) * kTableEntryBytes;
  if (table_end + kDigestBytes > file_size)
    fail("file too short for its array table: expected at least " +
         std::to_string(table_end + kDigestBytes) + " bytes, found " + std::to_string(file_size));
  head.resize(table_end);
  src.read(kHeaderBytes, head.data() + kHeaderBytes, table_end - kHeaderBytes);

  const char* array_names[kArraysPerMatrix] = {"row_offsets", "general_offsets", "cols", "values",
                                               "column_bitmap"};
  const char* matrix_names[3] = {"A", "B", "C"};
  std::vector<ArrayEntry> table(num_arrays);
  std::uint64_t expect_offset = table_end;
  for (std::size_t i = 0; i < num_arrays; ++i) {
    table[i].offset = load_u64le(head.data() + kHeaderBytes + i * kTableEntryBytes);
    table[i].length = load_u64le(head.data() + kHeaderBytes + i * kTableEntryBytes + 8);
    const std::string what = std::string(matrix_names[i / kArraysPerMatrix]) + "." +
                             array_names[i % kArraysPerMatrix];
    if (table[i].offset != expect_offset)
      fail(what + ": expected offset " + std::to_string(expect_offset) + ", found " +
           std::to_string(table[i].offset));
    if (table[i].length > file_size - kDigestBytes - expect_offset)
      fail(what + ": " + std::to_string(table[i].length) + " bytes at offset " +
           std::to_string(expect_offset) + " run past the data (file has " +
           std::to_string(file_size) + " bytes)");
    std::uint64_t want_len = 0;
    switch (i % kArraysPerMatrix) {
      case 0:
      case 1: want_len = (std::uint64_t(num_rows) + 1) * 8; break;
      case 2: want_len = table[i].length - table[i].length % 4; break;
      case 3: want_len = table[i].length - table[i].length % Fr::kBytes; break;
      case 4: want_len = bitmap_words(num_cols) * 8; break;
    }
    if (table[i].length != want_len)
      fail(what + ": expected " + std::to_string(want_len) + " bytes, found " +
           std::to_string(table[i].length));
    expect_offset += table[i].length;
  }
  if (expect_offset + kDigestBytes != file_size)
    fail("expected " + std::to_string(expect_offset + kDigestBytes) +
         " bytes (header, arrays, checksum), found " + std::to_string(file_size));

  // Every length is now bounded by the file size: allocate and read.
  Csr<Fr> ms[3];
  std::vector<std::span<const std::uint8_t>> arrays;
  for (std::size_t k = 0; k < n_matrices; ++k) {
    Csr<Fr>& m = ms[k];
    m.num_rows = num_rows;
    m.num_cols = num_cols;
    const ArrayEntry* t = &table[k * kArraysPerMatrix];
    m.row_offsets.resize(t[0].length / 8);
    m.general_offsets.resize(t[1].length / 8);
    m.cols.resize(t[2].length / 4);
    m.values.resize(t[3].length / Fr::kBytes);
    m.column_bitmap.resize(t[4].length / 8);
    src.read(t[0].offset, as_writable_bytes_of(m.row_offsets).data(), t[0].length);
    src.read(t[1].offset, as_writable_bytes_of(m.general_offsets).data(), t[1].length);
    src.read(t[2].offset, as_writable_bytes_of(m.cols).data(), t[2].length);
    src.read(t[3].offset, as_writable_bytes_of(m.values).data(), t[3].length);
    src.read(t[4].offset, as_writable_bytes_of(m.column_bitmap).data(), t[4].length);
    auto more = array_list<Fr>(std::array<const Csr<Fr>*, 1>{&m}.data(), 1);
    arrays.insert(arrays.end(), more.begin(), more.end());
  }
  if (verify_checksum) {
    Digest stored;
    src.read(file_size - kDigestBytes, stored.data(), kDigestBytes);
    if (file_checksum(head, arrays) != stored)
      fail("checksum mismatch: the file is corrupt (SHA-256 over header and arrays differs from "
           "the stored one)");
  }

  // Structure (even with a good checksum: the writer might be hostile).
  for (std::size_t k = 0; k < n_matrices; ++k) {
    const Csr<Fr>& m = ms[k];
    const std::string mname = matrix_names[k];
    if (m.row_offsets[0] != 0 || m.general_offsets[0] != 0)
      fail(mname + ": offsets must start at 0");
    for (std::uint32_t r = 0; r < num_rows; ++r) {
      if (m.row_offsets[r + 1] < m.row_offsets[r] || m.general_offsets[r + 1] < m.general_offsets[r])
        fail(mname + ": offsets decrease at row " + std::to_string(r));
      if (m.general_offsets[r + 1] - m.general_offsets[r] > m.row_offsets[r + 1] - m.row_offsets[r])
        fail(mname + ": row " + std::to_string(r) + " has more general coefficients than entries");
    }
    if (m.row_offsets.back() != m.cols.size())
      fail(mname + ": row offsets end at " + std::to_string(m.row_offsets.back()) + ", expected " +
           std::to_string(m.cols.size()) + " entries");
    if (m.general_offsets.back() != m.values.size())
      fail(mname + ": general offsets end at " + std::to_string(m.general_offsets.back()) +
           ", expected " + std::to_string(m.values.size()) + " values");
    std::atomic<std::size_t> bad_col{kNone}, bad_value{kNone};
    parallel_for(m.cols.size(), [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i)
        if (m.cols[i] >= num_cols) {
          record_min(bad_col, i);
          return;
        }
    });
    if (bad_col.load() != kNone)
      fail(mname + ": entry " + std::to_string(bad_col.load()) + " has column " +
           std::to_string(m.cols[bad_col.load()]) + ", not below num_cols = " +
           std::to_string(num_cols));
    parallel_for(m.values.size(), [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i)
        if (m.values[i].mont >= Fr::kModulus) {
          record_min(bad_value, i);
          return;
        }
    });
    if (bad_value.load() != kNone)
      fail(mname + ": value " + std::to_string(bad_value.load()) + " is not below the prime");
    if (column_bitmap_of(m.cols, num_cols) != m.column_bitmap)
      fail(mname + ": column bitmap does not match the columns");
  }
  std::optional<Csr<Fr>> c;
  if (has_c) c = std::move(ms[2]);
  return Pce<Fr>(num_public, domain_size, std::move(ms[0]), std::move(ms[1]), std::move(c));
}

}  // namespace

template <class Fr>
Pce<Fr> load_pce(const std::string& path) {
  FdSource src(path);
  return load_from<Fr>(src, path, true);
}

template <class Fr>
Pce<Fr> parse_pce(std::span<const std::uint8_t> bytes, const std::string& name, bool verify_checksum) {
  MemorySource src(bytes);
  return load_from<Fr>(src, name, verify_checksum);
}

#define ZKFARM_PCE_FILE_INSTANTIATE(Fr)                                          \
  template Pce<Fr> pce_from_zkey<Fr>(const ZkeyCoefficients<Fr>&, std::uint32_t); \
  template Pce<Fr> pce_from_r1cs<Fr>(const R1cs<Fr>&);                           \
  template void save_pce<Fr>(const Pce<Fr>&, const std::string&);                \
  template std::vector<std::uint8_t> serialize_pce<Fr>(const Pce<Fr>&);          \
  template Pce<Fr> load_pce<Fr>(const std::string&);                             \
  template Pce<Fr> parse_pce<Fr>(std::span<const std::uint8_t>, const std::string&, bool);
ZKFARM_PCE_FILE_INSTANTIATE(Bn254Fr)
ZKFARM_PCE_FILE_INSTANTIATE(Bls12381Fr)

}  // namespace zkfarm
