// nonzero_bitmap.h -- which values of a span are not zero, one bit each,
// and the gather of the records at those positions on several threads: the
// CPU's part of host compaction (kernels/cuda/msm_stream.h's
// HostCompaction), which moves only the bases of a witness chunk's
// non-zero scalars over PCIe. Plain C++ (no CUDA); nonzero_bitmap_test.
#ifndef ZKFARM_KERNELS_NONZERO_BITMAP_H_
#define ZKFARM_KERNELS_NONZERO_BITMAP_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace zkfarm {

class NonzeroBitmap {
 public:
  // Runs `threads` calls of f(t), t in [0, threads), at once (t = 0 on the
  // calling thread); returns when all are done. Threads of its own, not
  // kernels/parallel.h's pool: host compaction runs beside the worker's
  // other CPU work (the next witness's parse), and the pool takes one job
  // at a time, so either would wait for the other.
  template <class F>
  static void parallel(unsigned threads, F&& f) {
    std::vector<std::jthread> pool;
    pool.reserve(threads > 0 ? threads - 1 : 0);
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back([&f, t] { f(t); });
    f(0u);
  }

  // Bit i set when !values[i].is_zero(), on `threads` threads (>= 1).
  template <class T>
  void build(std::span<const T> values, unsigned threads) {
    threads = std::max(threads, 1u);
    size_ = values.size();
    const std::size_t words = (values.size() + 63) / 64;
    bits_.assign(words, 0);
    parallel(threads, [&](unsigned t) {
      for (std::size_t k = words * t / threads; k < words * (t + 1) / threads; ++k) {
        std::uint64_t word = 0;
        const std::size_t end = std::min(values.size(), k * 64 + 64);
        for (std::size_t i = k * 64; i < end; ++i) word |= std::uint64_t(!values[i].is_zero()) << (i - k * 64);
        bits_[k] = word;
      }
    });
  }

  std::size_t size() const { return size_; }

  // Set bits in [begin, end).
  std::size_t count(std::size_t begin, std::size_t end) const {
    check(begin, end);
    std::size_t total = 0;
    for (std::size_t i = begin; i < end;) {
      const std::size_t word = i / 64, bit = i % 64, take = std::min<std::size_t>(64 - bit, end - i);
      const std::uint64_t mask = take == 64 ? ~std::uint64_t(0) : ((std::uint64_t(1) << take) - 1) << bit;
      total += std::size_t(std::popcount(bits_[word] & mask));
      i += take;
    }
    return total;
  }

  // For i < n in order, where bit first + i is set: record i of `records`
  // (record_bytes each) copied to the next place of out, which must hold
  // count(first, first + n) records. `threads` threads (>= 1), each a
  // contiguous share of [0, n) written at its own offset. Returns how many
  // records it copied.
  std::size_t gather(const std::uint8_t* records, std::size_t record_bytes, std::size_t first, std::size_t n,
                     std::uint8_t* out, unsigned threads) const {
    check(first, first + n);
    threads = std::max(threads, 1u);
    std::vector<std::size_t> begin(threads + 1), at(threads + 1, 0);
    for (unsigned t = 0; t <= threads; ++t) begin[t] = n * t / threads;
    for (unsigned t = 0; t < threads; ++t) at[t + 1] = at[t] + count(first + begin[t], first + begin[t + 1]);
    parallel(threads, [&](unsigned t) {
      std::uint8_t* to = out + at[t] * record_bytes;
      // The two sizes streamed (G1 and G2 affine points of BLS12-381 and
      // BN254 share 96 / 192 and 64 / 128 bytes) as constants for memcpy.
      switch (record_bytes) {
        case 64: copy<64>(records, 64, first, begin[t], begin[t + 1], to); break;
        case 96: copy<96>(records, 96, first, begin[t], begin[t + 1], to); break;
        case 128: copy<128>(records, 128, first, begin[t], begin[t + 1], to); break;
        case 192: copy<192>(records, 192, first, begin[t], begin[t + 1], to); break;
        default: copy<0>(records, record_bytes, first, begin[t], begin[t + 1], to); break;
      }
    });
    return at[threads];
  }

 private:
  void check(std::size_t begin, std::size_t end) const {
    if (begin > end || end > size_)
      throw std::out_of_range("nonzero bitmap: range [" + std::to_string(begin) + ", " + std::to_string(end) +
                              ") outside its " + std::to_string(size_) + " values");
  }
  // kBytes: the record size as a constant, 0 for `bytes` at run time.
  template <std::size_t kBytes>
  void copy(const std::uint8_t* records, std::size_t bytes, std::size_t first, std::size_t begin, std::size_t end,
            std::uint8_t* out) const {
    const std::size_t size = kBytes ? kBytes : bytes;
    for (std::size_t i = begin; i < end;) {
      const std::size_t w = first + i, word = w / 64, bit = w % 64, take = std::min<std::size_t>(64 - bit, end - i);
      std::uint64_t set = bits_[word] >> bit;
      if (take < 64) set &= (std::uint64_t(1) << take) - 1;
      while (set) {
        const std::size_t k = std::size_t(std::countr_zero(set));
        set &= set - 1;
        std::memcpy(out, records + (i + k) * size, size);
        out += size;
      }
      i += take;
    }
  }

  std::size_t size_ = 0;
  std::vector<std::uint64_t> bits_;
};

}  // namespace zkfarm

#endif  // ZKFARM_KERNELS_NONZERO_BITMAP_H_
