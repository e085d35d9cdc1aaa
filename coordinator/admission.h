// admission.h -- whether a tenant's job may start now: its tenant's quotas
// against what the tenant already has, as a pure function (no Redis, no
// clock), for the intake to ask before it claims a job from a tenant's
// queue (issue 27 item 4).
//
// The quotas (a tenant's record: `zkfarm tenant add|set --max-queued-jobs
// --max-active-partitions --max-job-bytes`; 0 is no limit) and the verdicts:
//  - max-job-bytes: a job of more bytes is refused (quotaExceeded);
//  - max-queued-jobs: a job that finds the limit of its tenant's jobs
//    already waiting ahead of it is refused (quotaExceeded): the newest go,
//    never the ones queued first;
//  - max-active-partitions: a job whose partitions would take the tenant's
//    partitions pending or in flight past the limit is held: it stays in
//    its queue, in its place, and is asked about again as the tenant's
//    partitions are proved or its jobs end; a job with more partitions
//    than the limit could never start and is refused.
// Refusals are checked before the hold, in the order above, so a held job
// is one that will be admitted once the tenant's work drains. The message
// names the tenant, the figures and the limit (as the flag spells it),
// e.g. "tenant acme: 51 queued jobs, max-queued-jobs 50"; it becomes the
// job's error (job:<id> "error", `zkfarm status`) with the code
// quotaExceeded (schema/error_code.h).
//
// Where the figures come from (coordinator/intake.h):
//  - queued_ahead: the intake counts each registered tenant's queues (LLEN
//    of its four, one pipeline every --intake-poll-ms but at most every
//    kQueueCountMinPeriod, and before its first take). A push cannot count
//    them itself: a raw LPUSH runs no code of ours, and the submit function
//    runs with the tenant's ACL, which may not read its quotas. "Ahead" is
//    in the order the intake takes a tenant's jobs (priority, then age):
//    when a tenant has more than max-queued-jobs queued, the ones last in
//    that order -- the newest of its least urgent queue first -- are taken
//    off the queue's head (JobStore::take_newest_beyond) and fail; the k-th
//    taken so had (queued - k) jobs ahead of it. A job the intake is about
//    to take is the head of that order (0 ahead): it is never refused so.
//  - active_partitions: the scheduler's Scheduler::active_partitions(T),
//    published to the intake thread by the scheduler thread (TenantLoad
//    below), plus the partitions of T's jobs delivered by the intake and
//    not yet received by the scheduler, plus those of T's jobs the intake
//    is reading.
// kRefuse: the job fails at intake with code and message, as invalidJob
// does (Intake::fail_job), after its claim. kHold: asked before the claim;
// the entry goes back to the tail of its tenant's queue, the end the
// intake takes from (so it keeps its place), unclaimed, and the intake
// takes no job of that tenant -- while it takes from every other tenant's
// queues -- until the verdict with the published figures is no longer a
// hold.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "schema/error_code.h"

namespace zkfarm {

// A tenant's quotas, as its record holds them; 0: no limit.
struct TenantQuota {
  std::uint64_t max_queued_jobs = 0;
  std::uint64_t max_active_partitions = 0;
  std::uint64_t max_job_bytes = 0;
};

// What the tenant has now, as the intake counts it.
struct TenantUsage {
  // The tenant's jobs queued ahead of this one (submitted before it and not
  // yet started), not counting this one.
  std::uint64_t queued_ahead = 0;
  // The tenant's partitions pending or in flight in the farm (jobs started,
  // not ended), not counting this job's.
  std::uint64_t active_partitions = 0;
};

// What the job asks for.
struct JobDemand {
  std::uint64_t bytes = 0;       // its queue entry's length (inline witnesses included)
  std::uint64_t partitions = 0;  // its partitions (its unproved ones, for a resumed job)
};

struct AdmissionVerdict {
  enum class Kind { kAdmit, kHold, kRefuse };
  Kind kind = Kind::kAdmit;
  // kRefuse: kQuotaExceeded. kHold: why it waits (for its log line and
  // status), also kQuotaExceeded; the job does not fail.
  ErrorCode code = ErrorCode::kQuotaExceeded;
  std::string message;  // "" when admitted
  bool admitted() const { return kind == Kind::kAdmit; }
};

// The verdict for a job of `tenant` ("" the default tenant) that asks for
// `demand`, with the tenant's `quota` and `usage` (file comment). Never
// throws.
AdmissionVerdict admit_job(const std::string& tenant, const TenantQuota& quota, const TenantUsage& usage,
                           const JobDemand& demand);

// The intake's slots (--max-active-jobs) between tenants: what one tenant
// may hold of them (intake.h, "Slots per tenant", states the rule).
struct TenantSlots {
  double weight = 1.0;      // its weight (>= 0); the default tenant's is kDefaultTenantWeight
  std::uint32_t held = 0;   // its jobs held or being read by this coordinator
  bool queued = false;      // it has jobs in its queues
};
// One cap per entry of `tenants`, in order: the most jobs that tenant may
// hold of `slots` before the intake stops taking its jobs. A farm of one
// tenant (or one with work) gets every slot but those kept for the idle
// tenants. Never throws.
std::vector<std::uint32_t> intake_slot_caps(std::uint32_t slots, const std::vector<TenantSlots>& tenants);
// Of every idle tenant's slot kept free, at most slots / this many in all:
// a farm of many registered tenants keeps a quarter of its slots for the
// ones without work, not all of them.
inline constexpr std::uint32_t kIdleTenantSlotsDivisor = 4;

// Each tenant's jobs and partitions in this coordinator, shared between the
// intake thread and the scheduler thread (one mutex; a few entries, each
// call O(log tenants)). The intake counts a job when it delivers it; the
// scheduler thread, when the scheduler received (or dropped) it and when it
// ended, and publishes Scheduler::active_partitions after each batch of
// events. A job is so counted from its delivery to its end without a gap:
// `received` moves its partitions from the intake's count to the
// scheduler's under one lock.
class TenantLoad {
 public:
  struct Usage {
    std::uint32_t jobs = 0;               // delivered, not ended
    std::uint64_t active_partitions = 0;  // the scheduler's figure plus those delivered, not yet received
  };
  // Intake thread: a job of `partitions` partitions delivered.
  void delivered(const std::string& tenant, std::uint64_t partitions);
  // Scheduler thread: the job delivered with `partitions` reached the
  // scheduler (or was dropped there); `active_now` is the scheduler's
  // active_partitions(tenant) after it.
  void received(const std::string& tenant, std::uint64_t partitions, std::uint64_t active_now);
  // Scheduler thread: a delivered job ended (finished, or dropped).
  void ended(const std::string& tenant);
  // Scheduler thread: the scheduler's active_partitions of each tenant.
  void publish(const std::map<std::string, std::uint64_t>& active);
  Usage usage(const std::string& tenant) const;

 private:
  struct Counts {
    std::uint32_t jobs = 0;
    std::uint64_t in_transit = 0, scheduled = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Counts> tenants_;
};

}  // namespace zkfarm
