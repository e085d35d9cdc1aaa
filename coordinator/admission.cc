// admission.cc -- see admission.h.
#include "coordinator/admission.h"

#include <algorithm>
#include <cmath>

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

std::vector<std::uint32_t> intake_slot_caps(std::uint32_t slots, const std::vector<TenantSlots>& tenants) {
  std::vector<std::uint32_t> caps(tenants.size(), slots);
  std::vector<std::size_t> busy;
  std::uint32_t idle = 0;
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    if (tenants[i].held > 0 || tenants[i].queued) busy.push_back(i);
    else ++idle;
  }
  // One slot kept for each idle tenant (a bounded number of them): its
  // first job is taken as soon as it comes.
  const std::uint32_t kept = std::min(idle, slots / kIdleTenantSlotsDivisor);
  // An idle tenant may take that one slot; then it is busy, with a share.
  for (std::size_t i = 0; i < tenants.size(); ++i)
    if (tenants[i].held == 0 && !tenants[i].queued) caps[i] = 1;
  double remaining = slots - kept;
  if (busy.size() == 1) {
    caps[busy[0]] = std::max<std::uint32_t>(1, slots - kept);
    return caps;
  }
  auto weight = [&](std::size_t i) { return std::isfinite(tenants[i].weight) ? std::max(tenants[i].weight, 0.0) : 0.0; };
  // Water-filling: a busy tenant with nothing queued that holds less than
  // its share keeps what it holds and leaves the rest to the others.
  std::vector<std::size_t> open = busy;
  for (bool changed = true; changed;) {
    changed = false;
    double sum = 0;
    for (std::size_t i : open) sum += weight(i);
    for (auto it = open.begin(); it != open.end(); ++it) {
      const std::size_t i = *it;
      const double share = sum > 0 ? remaining * weight(i) / sum : remaining / double(open.size());
      if (!tenants[i].queued && tenants[i].held <= share) {
        caps[i] = tenants[i].held;
        remaining -= tenants[i].held;
        open.erase(it);
        changed = true;
        break;
      }
    }
  }
  double sum = 0;
  for (std::size_t i : open) sum += weight(i);
  for (std::size_t i : open) {
    const double share = sum > 0 ? remaining * weight(i) / sum : remaining / double(open.size());
    // Rounded down, so the caps never add up past the slots (a slot or two
    // may stay free); at least one, so no tenant with work is shut out
    // (the scheduler's weights decide its worker time).
    caps[i] = tenants[i].queued ? std::max<std::uint32_t>(1, static_cast<std::uint32_t>(std::floor(share + 1e-9)))
                                : tenants[i].held;
  }
  return caps;
}

void TenantLoad::delivered(const std::string& tenant, std::uint64_t partitions) {
  std::lock_guard<std::mutex> lock(mutex_);
  Counts& c = tenants_[tenant];
  ++c.jobs;
  c.in_transit += partitions;
}

void TenantLoad::received(const std::string& tenant, std::uint64_t partitions, std::uint64_t active_now) {
  std::lock_guard<std::mutex> lock(mutex_);
  Counts& c = tenants_[tenant];
  c.in_transit -= std::min(c.in_transit, partitions);
  c.scheduled = active_now;
}

void TenantLoad::ended(const std::string& tenant) {
  std::lock_guard<std::mutex> lock(mutex_);
  Counts& c = tenants_[tenant];
  if (c.jobs > 0) --c.jobs;
}

void TenantLoad::publish(const std::map<std::string, std::uint64_t>& active) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [tenant, partitions] : active) tenants_[tenant].scheduled = partitions;
}

TenantLoad::Usage TenantLoad::usage(const std::string& tenant) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return {};
  return Usage{it->second.jobs, it->second.scheduled + it->second.in_transit};
}

}  // namespace zkfarm
