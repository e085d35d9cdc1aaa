// nonzero_bitmap_test -- NonzeroBitmap's counts and gathers against plain
// loops: field elements with zeros at many densities, ranges that start
// and end off 64-bit words, every record size the streamed MSMs use and
// one other, one to many threads, and ranges outside the values refused.
#include "kernels/nonzero_bitmap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <stdexcept>
#include <vector>

#include "kernels/field.h"

namespace zkfarm {
namespace {

std::vector<Bn254Fr> values_with_zeros(std::size_t n, unsigned zero_percent, std::mt19937_64& rng) {
  std::vector<Bn254Fr> out(n);
  for (auto& v : out) v = rng() % 100 < zero_percent ? Bn254Fr::zero() : Bn254Fr::from_u64(rng() % 5 + 1);
  return out;
}

TEST(NonzeroBitmap, CountsMatchALoop) {
  std::mt19937_64 rng(3);
  for (unsigned zeros : {0u, 45u, 100u}) {
    const auto values = values_with_zeros(1000, zeros, rng);
    NonzeroBitmap bits;
    bits.build(std::span<const Bn254Fr>(values), 3);
    ASSERT_EQ(bits.size(), values.size());
    for (auto [begin, end] : {std::pair<std::size_t, std::size_t>{0, 1000}, {0, 0}, {1, 64}, {63, 65}, {64, 128},
                              {5, 997}, {999, 1000}, {130, 131}}) {
      std::size_t expected = 0;
      for (std::size_t i = begin; i < end; ++i) expected += !values[i].is_zero();
      EXPECT_EQ(bits.count(begin, end), expected) << "[" << begin << ", " << end << ") with " << zeros << "% zeros";
    }
  }
}

TEST(NonzeroBitmap, GathersTheRecordsOfNonzeroValuesInOrder) {
  std::mt19937_64 rng(5);
  const auto values = values_with_zeros(777, 45, rng);
  NonzeroBitmap bits;
  bits.build(std::span<const Bn254Fr>(values), 4);
  for (std::size_t record : {64u, 96u, 128u, 192u, 40u}) {
    for (auto [first, n] : {std::pair<std::size_t, std::size_t>{0, 777}, {13, 500}, {64, 64}, {700, 77}, {5, 0}}) {
      // Record i of the range holds bytes derived from its position.
      std::vector<std::uint8_t> records(n * record);
      for (std::size_t i = 0; i < records.size(); ++i) records[i] = std::uint8_t(i * 131 + 7);
      std::vector<std::uint8_t> expected;
      for (std::size_t i = 0; i < n; ++i)
        if (!values[first + i].is_zero())
          expected.insert(expected.end(), records.begin() + i * record, records.begin() + (i + 1) * record);
      for (unsigned threads : {1u, 3u, 16u}) {
        std::vector<std::uint8_t> out(expected.size() + record, 0xee);  // one record of slack, untouched
        const std::size_t copied = bits.gather(records.data(), record, first, n, out.data(), threads);
        EXPECT_EQ(copied, bits.count(first, first + n));
        EXPECT_EQ(copied * record, expected.size());
        EXPECT_TRUE(std::equal(expected.begin(), expected.end(), out.begin()))
            << record << "-byte records, [" << first << ", +" << n << "), " << threads << " threads";
        EXPECT_TRUE(std::all_of(out.begin() + std::ptrdiff_t(expected.size()), out.end(),
                                [](std::uint8_t b) { return b == 0xee; }))
            << "wrote past its records";
      }
    }
  }
}

TEST(NonzeroBitmap, RefusesRangesOutsideItsValues) {
  std::vector<Bn254Fr> values(10, Bn254Fr::one());
  NonzeroBitmap bits;
  bits.build(std::span<const Bn254Fr>(values), 2);
  EXPECT_THROW(bits.count(0, 11), std::out_of_range);
  EXPECT_THROW(bits.count(5, 4), std::out_of_range);
  std::uint8_t out[16];
  EXPECT_THROW(bits.gather(out, 1, 8, 3, out, 1), std::out_of_range);
  EXPECT_EQ(bits.count(0, 10), 10u);
}

}  // namespace
}  // namespace zkfarm
