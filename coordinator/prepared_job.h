// prepared_job.h -- a job as the intake hands it to the scheduler: parsed,
// claimed in Redis, its circuit found and every witness's header and public
// inputs read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cluster/artifacts.h"
#include "cluster/job.h"

namespace zkfarm {

struct PreparedJob {
  std::string raw;  // the processing-list entry (removed when the job ends)
  JobSpec spec;
  CircuitInfo circuit;
  std::vector<std::vector<std::vector<std::uint8_t>>> public_inputs;  // per partition, canonical LE
  std::map<std::uint32_t, std::string> stored_proofs;                 // resumed jobs: verified partitions
  double submitted_at = 0;  // unix seconds: the job's submitted_at, else intake time
};

}  // namespace zkfarm
