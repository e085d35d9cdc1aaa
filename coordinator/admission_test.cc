// admission_test.cc -- admit_job's verdicts: each quota at, below and over
// its limit, the order of the checks, no limit at 0, the messages' figures.
#include "coordinator/admission.h"

#include <gtest/gtest.h>

#include <limits>

namespace zkfarm {
namespace {

using Kind = AdmissionVerdict::Kind;

TEST(Admission, NoQuotaAdmitsEverything) {
  const auto v = admit_job("acme", TenantQuota{}, TenantUsage{1'000'000, 1'000'000}, JobDemand{1ull << 40, 100'000});
  EXPECT_TRUE(v.admitted());
  EXPECT_EQ(v.message, "");
}

TEST(Admission, MaxQueuedJobsRefusesTheNewestWithTheFigures) {
  const TenantQuota quota{50, 0, 0};
  EXPECT_TRUE(admit_job("acme", quota, TenantUsage{49, 0}, JobDemand{100, 1}).admitted()) << "the 50th";
  const auto v = admit_job("acme", quota, TenantUsage{50, 0}, JobDemand{100, 1});
  EXPECT_EQ(v.kind, Kind::kRefuse);
  EXPECT_EQ(v.code, ErrorCode::kQuotaExceeded);
  EXPECT_EQ(v.message, "tenant acme: 51 queued jobs, max-queued-jobs 50");
}

TEST(Admission, MaxJobBytesRefuses) {
  const TenantQuota quota{0, 0, 8 << 20};
  EXPECT_TRUE(admit_job("acme", quota, {}, JobDemand{8 << 20, 1}).admitted()) << "at the limit";
  const auto v = admit_job("acme", quota, {}, JobDemand{(8 << 20) + 1, 1});
  EXPECT_EQ(v.kind, Kind::kRefuse);
  EXPECT_EQ(v.message, "tenant acme: a job of 8388609 bytes, max-job-bytes 8388608");
}

TEST(Admission, MaxActivePartitionsHoldsUntilTheTenantsWorkDrains) {
  const TenantQuota quota{0, 64, 0};
  EXPECT_TRUE(admit_job("acme", quota, TenantUsage{0, 56}, JobDemand{100, 8}).admitted()) << "exactly 64";
  const auto held = admit_job("acme", quota, TenantUsage{0, 57}, JobDemand{100, 8});
  EXPECT_EQ(held.kind, Kind::kHold);
  EXPECT_EQ(held.message, "tenant acme: 57 active partitions and 8 of this job, max-active-partitions 64 (held in its queue)");
  // Once the tenant's jobs end, the same job is admitted.
  EXPECT_TRUE(admit_job("acme", quota, TenantUsage{0, 0}, JobDemand{100, 8}).admitted());
  // A job that could never fit is refused, not held for ever.
  const auto never = admit_job("acme", quota, TenantUsage{0, 0}, JobDemand{100, 65});
  EXPECT_EQ(never.kind, Kind::kRefuse);
  EXPECT_EQ(never.message, "tenant acme: a job of 65 partitions, max-active-partitions 64");
  // Figures from Redis as large as they come do not wrap into an admit.
  EXPECT_EQ(admit_job("acme", quota, TenantUsage{0, std::numeric_limits<std::uint64_t>::max()}, JobDemand{100, 1}).kind,
            Kind::kHold);
}

TEST(Admission, RefusalsComeBeforeTheHold) {
  // Over every limit: the bytes are named first, then the queue; never a
  // hold for a job that would be refused anyway.
  const TenantQuota quota{10, 64, 1000};
  EXPECT_NE(admit_job("acme", quota, TenantUsage{10, 64}, JobDemand{1001, 8}).message.find("max-job-bytes"),
            std::string::npos);
  const auto queued = admit_job("acme", quota, TenantUsage{10, 64}, JobDemand{10, 8});
  EXPECT_EQ(queued.kind, Kind::kRefuse);
  EXPECT_NE(queued.message.find("max-queued-jobs"), std::string::npos);
  EXPECT_EQ(admit_job("acme", quota, TenantUsage{9, 64}, JobDemand{10, 8}).kind, Kind::kHold);
}

TEST(Admission, TheDefaultTenantIsNamedSo) {
  EXPECT_EQ(admit_job("", TenantQuota{1, 0, 0}, TenantUsage{1, 0}, JobDemand{1, 1}).message,
            "the default tenant: 2 queued jobs, max-queued-jobs 1");
}

}  // namespace
}  // namespace zkfarm
