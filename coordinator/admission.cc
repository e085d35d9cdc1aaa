// admission.cc -- see admission.h.
#include "coordinator/admission.h"

namespace zkfarm {
namespace {

std::string who(const std::string& tenant) { return tenant.empty() ? "the default tenant" : "tenant " + tenant; }

AdmissionVerdict verdict(AdmissionVerdict::Kind kind, std::string message) {
  AdmissionVerdict v;
  v.kind = kind;
  v.message = std::move(message);
  return v;
}

}  // namespace

AdmissionVerdict admit_job(const std::string& tenant, const TenantQuota& quota, const TenantUsage& usage,
                           const JobDemand& demand) {
  using Kind = AdmissionVerdict::Kind;
  if (quota.max_job_bytes > 0 && demand.bytes > quota.max_job_bytes)
    return verdict(Kind::kRefuse, who(tenant) + ": a job of " + std::to_string(demand.bytes) + " bytes, max-job-bytes " +
                                      std::to_string(quota.max_job_bytes));
  // This job is the (queued_ahead + 1)-th of the tenant's queued jobs.
  if (quota.max_queued_jobs > 0 && usage.queued_ahead >= quota.max_queued_jobs)
    return verdict(Kind::kRefuse, who(tenant) + ": " + std::to_string(usage.queued_ahead + 1) +
                                      " queued jobs, max-queued-jobs " + std::to_string(quota.max_queued_jobs));
  if (quota.max_active_partitions > 0) {
    if (demand.partitions > quota.max_active_partitions)
      return verdict(Kind::kRefuse, who(tenant) + ": a job of " + std::to_string(demand.partitions) +
                                        " partitions, max-active-partitions " +
                                        std::to_string(quota.max_active_partitions));
    // Compared without a sum that could wrap (usage comes from Redis).
    if (usage.active_partitions > quota.max_active_partitions - demand.partitions)
      return verdict(Kind::kHold, who(tenant) + ": " + std::to_string(usage.active_partitions) +
                                      " active partitions and " + std::to_string(demand.partitions) +
                                      " of this job, max-active-partitions " +
                                      std::to_string(quota.max_active_partitions) + " (held in its queue)");
  }
  return {};
}

}  // namespace zkfarm
