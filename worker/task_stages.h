// task_stages.h -- what the pipeline's prepare and prove stages do with a
// task: make its circuit resident (CircuitCache), fetch its witness by
// reference (or take the one a generator computed), parse and check it into
// the prover's memory (prover::Prover::prepare: page-locked on a device),
// prove (prover::Prover::prove, the CPU or one CUDA device) and encode the
// Result with its per-stage timings. Failures become the TaskError to send
// (current_task_error(), task.h).
//
// Threading: prepare() and prove() are called from the pipeline's threads
// at once (different tasks); the cache and the prover are thread-safe, the
// metrics are prometheus-cpp's.
#pragma once

#include <memory>
#include <variant>

#include "cluster/witness_access.h"
#include "cluster/redis_client.h"
#include "monitoring/metrics/metrics.h"
#include "prover/prover.h"
#include "worker/circuit_cache.h"
#include "worker/config.h"
#include "worker/task.h"

namespace zkfarm {

class TaskStages {
 public:
  // Reads config's prove_delay and inject_fault (test-only knobs); the
  // others are the worker's, alive as long as this.
  TaskStages(const WorkerConfig& config, prover::Prover& prover, CircuitCache& cache,
             const WitnessPolicy& witness_policy, metrics::WorkerMetrics& metrics);

  // The circuit resident, the witness fetched (an https:// one that fails
  // its checksum is fetched once more), parsed and checked; or the
  // TaskError to send (a cancelled task, a missing circuit, an unavailable
  // or corrupt witness, ...). redis: for redis:// witnesses and a remote
  // store's records (may be null).
  std::variant<Prepared, Finished> prepare(QueuedTask task, RedisClient* redis);
  // The Result of proving a prepared task, or the TaskError to send.
  Finished prove(const Prepared& prepared);

 private:
  const WorkerConfig& config_;
  prover::Prover& prover_;
  CircuitCache& cache_;
  const WitnessPolicy& witness_policy_;
  metrics::WorkerMetrics& metrics_;
};

}  // namespace zkfarm
