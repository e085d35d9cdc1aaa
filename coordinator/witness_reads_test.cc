// witness_reads_test.cc -- WitnessReads on its own: every witness partition
// read once (inputs skipped), in order, on the job's threads; a failed read
// stops the reads not yet started; settled() and idle() turn true, and the
// owner is woken when they do.
#include "coordinator/witness_reads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "formats/wtns.h"
#include "kernels/curves.h"

namespace zkfarm {
namespace {

using Fr = Bn254Fr;
constexpr std::uint32_t kNumPublic = 2;

WitnessRef inline_ref(std::uint32_t num_values) {
  std::vector<Fr> values(num_values);
  values[0] = Fr::one();
  for (std::uint32_t i = 1; i < num_values; ++i) values[i] = Fr::from_u64(i);
  WitnessRef ref;
  ref.kind = WitnessRef::Kind::kInline;
  ref.inline_bytes = serialize_wtns<Fr>(values);
  return ref;
}

WitnessRef input_ref() {
  WitnessRef ref;
  ref.kind = WitnessRef::Kind::kInput;
  ref.input_json = R"({"a":"3"})";
  return ref;
}

// A file outside every witness root: refused before anything is opened.
WitnessRef refused_ref() {
  WitnessRef ref;
  ref.kind = WitnessRef::Kind::kFile;
  ref.location = "/nowhere/w.wtns";
  return ref;
}

WitnessReads::Options options(std::size_t readers) {
  WitnessReads::Options o;
  o.num_public = kNumPublic;
  o.deadline = WitnessReads::Clock::now() + std::chrono::seconds(30);
  o.readers = readers;
  return o;
}

bool settle(const WitnessReads& reads) {
  for (int i = 0; i < 5000 && !(reads.settled() && reads.idle()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return reads.settled() && reads.idle();
}

TEST(WitnessReads, ReadsEveryWitnessPartitionAndSkipsInputs) {
  auto spec = std::make_shared<JobSpec>();
  for (int i = 0; i < 20; ++i) spec->partitions.push_back(i == 3 ? input_ref() : inline_ref(10 + i));
  std::atomic<int> wakes{0};
  WitnessReads reads(spec, options(4), [&] { ++wakes; });
  ASSERT_TRUE(settle(reads));
  EXPECT_EQ(reads.redis_error(), "");
  EXPECT_FALSE(reads.result(3)) << "an input is not read";
  for (std::size_t i = 0; i < 20; ++i) {
    if (i == 3) continue;
    auto result = reads.result(i);
    ASSERT_TRUE(result) << i;
    ASSERT_TRUE(std::holds_alternative<WtnsSummary>(*result)) << i << ": " << std::get<JobCheckFailure>(*result).message;
    EXPECT_EQ(std::get<WtnsSummary>(*result).num_values, 10 + i);
  }
  EXPECT_GE(wakes.load(), 1);
  EXPECT_LE(wakes.load(), 2) << "woken when the reads settle and when the readers end, not per witness";
}

TEST(WitnessReads, AFailedReadStopsTheReadsNotStarted) {
  auto spec = std::make_shared<JobSpec>();
  spec->partitions.push_back(refused_ref());
  for (int i = 0; i < 50; ++i) spec->partitions.push_back(inline_ref(10));
  WitnessReads reads(spec, options(1), [] {});
  ASSERT_TRUE(settle(reads));
  auto first = reads.result(0);
  ASSERT_TRUE(first);
  ASSERT_TRUE(std::holds_alternative<JobCheckFailure>(*first));
  EXPECT_EQ(std::get<JobCheckFailure>(*first).code, ErrorCode::kWitnessUnavailable);
  EXPECT_FALSE(reads.result(50)) << "one reader: nothing after the failed partition was started";
}

TEST(WitnessReads, AJobOfInputsOnlyIsSettledAtOnce) {
  auto spec = std::make_shared<JobSpec>();
  spec->partitions.push_back(input_ref());
  WitnessReads reads(spec, options(8), [] {});
  EXPECT_TRUE(reads.settled());
  EXPECT_TRUE(reads.idle());
}

}  // namespace
}  // namespace zkfarm
