// admission_test.cc -- admit_job's verdicts: each quota at, below and over
// its limit, the order of the checks, no limit at 0, the messages' figures;
// intake_slot_caps (the intake's slots between tenants) and TenantLoad's
// counts.
#include "coordinator/admission.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

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

TEST(SlotCaps, OneTenantGetsEverySlotAsBefore) {
  // A farm without tenants: the default tenant alone, busy or not.
  EXPECT_EQ(intake_slot_caps(64, {TenantSlots{1, 10, true}}), std::vector<std::uint32_t>{64});
  EXPECT_EQ(intake_slot_caps(64, {TenantSlots{1, 64, false}}), std::vector<std::uint32_t>{64});
  EXPECT_EQ(intake_slot_caps(1, {TenantSlots{1, 0, true}}), std::vector<std::uint32_t>{1});
}

TEST(SlotCaps, ABurstLeavesASlotForEachIdleTenant) {
  // default (idle), A (200 queued, holding 10), B (idle).
  const auto caps = intake_slot_caps(64, {TenantSlots{1, 0, false}, TenantSlots{1, 10, true}, TenantSlots{1, 0, false}});
  EXPECT_EQ(caps, (std::vector<std::uint32_t>{1, 62, 1}));
  // Kept slots are bounded: 40 idle tenants keep 64 / 4 = 16.
  std::vector<TenantSlots> many(41, TenantSlots{1, 0, false});
  many[0] = TenantSlots{1, 5, true};
  EXPECT_EQ(intake_slot_caps(64, many)[0], 48u);
}

TEST(SlotCaps, BusyTenantsShareByWeight) {
  // default idle (one slot kept), A and B queued: 63 by weight, rounded down.
  EXPECT_EQ(intake_slot_caps(64, {TenantSlots{1, 0, false}, TenantSlots{1, 62, true}, TenantSlots{1, 1, true}}),
            (std::vector<std::uint32_t>{1, 31, 31}));
  EXPECT_EQ(intake_slot_caps(64, {TenantSlots{1, 0, false}, TenantSlots{3, 40, true}, TenantSlots{1, 1, true}}),
            (std::vector<std::uint32_t>{1, 47, 15}));
  // A holding more than its share keeps them (cap below what it holds: it
  // takes no more until its jobs end below it).
  const auto caps = intake_slot_caps(8, {TenantSlots{1, 7, true}, TenantSlots{1, 1, true}});
  EXPECT_EQ(caps, (std::vector<std::uint32_t>{4, 4}));
}

TEST(SlotCaps, TheIdlePartOfAShareIsUsable) {
  // B holds 2 and has nothing queued: A may use the rest of B's share.
  EXPECT_EQ(intake_slot_caps(64, {TenantSlots{1, 20, true}, TenantSlots{1, 2, false}}),
            (std::vector<std::uint32_t>{62, 2}));
  // Weight 0 (what others leave) still gets one slot to start a job.
  EXPECT_EQ(intake_slot_caps(10, {TenantSlots{1, 3, true}, TenantSlots{0, 0, true}}),
            (std::vector<std::uint32_t>{10, 1}));
  // Nonsense weights count as 0 and never throw.
  EXPECT_EQ(intake_slot_caps(10, {TenantSlots{-1, 3, true}, TenantSlots{std::nan(""), 0, true}}),
            (std::vector<std::uint32_t>{5, 5}));
}

TEST(TenantLoadCounts, JobsAndPartitionsFromDeliveryToEnd) {
  TenantLoad load;
  load.delivered("a", 4);
  EXPECT_EQ(load.usage("a").jobs, 1u);
  EXPECT_EQ(load.usage("a").active_partitions, 4u);  // in transit
  load.received("a", 4, 4);                          // the scheduler has them now
  EXPECT_EQ(load.usage("a").active_partitions, 4u);
  load.publish({{"a", 1}});                          // three proved
  EXPECT_EQ(load.usage("a").active_partitions, 1u);
  EXPECT_EQ(load.usage("b").jobs, 0u);
  load.ended("a");
  load.ended("a");  // never below zero
  EXPECT_EQ(load.usage("a").jobs, 0u);
  // The intake thread counting while another reads.
  std::thread intake([&] {
    for (int i = 0; i < 1000; ++i) load.delivered("b", 1);
  });
  for (int i = 0; i < 1000; ++i) load.usage("b");
  intake.join();
  EXPECT_EQ(load.usage("b").jobs, 1000u);
}

}  // namespace
}  // namespace zkfarm
