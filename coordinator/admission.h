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
//    its queue, in its place, and is asked about again when one of the
//    tenant's jobs ends; a job with more partitions than the limit could
//    never start and is refused.
// Refusals are checked before the hold, in the order above, so a held job
// is one that will be admitted once the tenant's work drains. The message
// names the tenant, the figures and the limit (as the flag spells it),
// e.g. "tenant acme: 51 queued jobs, max-queued-jobs 50"; it becomes the
// job's error (job:<id> "error", `zkfarm status`) with the code
// quotaExceeded (schema/error_code.h).
//
// Wiring (waits for the tenant records): the intake, before it claims a
// job taken from tenant T's queue, reads T's quotas from T's record and
// asks admit_job with queued_ahead = the jobs ahead of it in T's queue
// (the intake takes the head, so 0 there; a job pushed behind
// max-queued-jobs others is refused by the push's own count, or by the
// intake reading the queue's tail), active_partitions = the scheduler's
// Scheduler::active_partitions(T) (published to the intake thread by the
// scheduler thread, as active_jobs is today) and the entry's length and
// partition count. kRefuse: the job fails at intake with code and message,
// as invalidJob does (Intake::fail_job). kHold: the entry goes back to the
// head of T's queue unclaimed, and the intake takes from the other
// tenants' queues until one of T's jobs ends.
#pragma once

#include <cstdint>
#include <string>

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

}  // namespace zkfarm
