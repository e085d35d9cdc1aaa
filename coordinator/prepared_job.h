// prepared_job.h -- a job as the intake hands it to the scheduler: parsed,
// claimed in Redis, its circuit found and every witness's header and public
// inputs read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cluster/artifacts.h"
#include "schema/job.h"

namespace zkfarm {

// The id the scheduler knows a job by: the job's own for the default
// tenant, "<tenant>:<id>" for a tenant's (':' is in no job id), so two
// tenants' jobs of one id stay apart.
inline std::string scheduled_job_id(const std::string& tenant, const std::string& id) {
  return tenant.empty() ? id : tenant + ":" + id;
}

struct PreparedJob {
  std::string raw;  // the processing-list entry (removed when the job ends)
  // The tenant whose namespace holds the job ("" for the default tenant:
  // cluster/tenants.h); where a fair-share policy reads whose job it is.
  std::string tenant;
  std::string job_id;  // the id in its tenant's namespace (spec.id is scheduled_job_id)
  JobSpec spec;
  CircuitInfo circuit;
  // Every partition's public inputs, canonical LE, back to back: partition
  // p's are bytes [p * public_bytes, (p + 1) * public_bytes). One buffer per
  // job: 63 jobs x 4096 partitions x 328 inputs held 7056 MiB as a vector
  // per input (28.7 KB a partition), 64 jobs 2797 MiB like this (11.2 KB;
  // BENCHMARKS.md, "Coordinator memory").
  std::vector<std::uint8_t> public_inputs;
  std::size_t public_bytes = 0;  // per partition
  // Per public signal: true where an input partition's value comes from its
  // input (the circuit's public input map, parsed once at intake), so only
  // the others (the outputs) are taken from the worker's report. Empty for
  // circuits without a map.
  std::vector<bool> public_from_input;
  std::map<std::uint32_t, std::string> stored_proofs;  // resumed jobs: verified partitions
  double submitted_at = 0;  // unix seconds: the job's submitted_at, else intake time
  // What holding this job costs the coordinator, as counted against
  // --memory-budget-mib (estimate_held_bytes in intake.h).
  std::uint64_t held_bytes = 0;

  std::vector<std::uint8_t> partition_public_inputs(std::uint32_t partition) const {
    const auto begin = public_inputs.begin() + static_cast<std::ptrdiff_t>(partition * public_bytes);
    return std::vector<std::uint8_t>(begin, begin + static_cast<std::ptrdiff_t>(public_bytes));
  }
};

}  // namespace zkfarm
