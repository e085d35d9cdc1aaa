// witgen_pool.h -- the witness generator pool's work (input partitions):
// check the circuit's generator against the hashes the task carries (once
// per process), run it sandboxed on the task's input
// (witgen/witness_generator.h: namespaces and seccomp unless the operator
// gave --witgen-sandbox=off; the witness refused unless it has the
// circuit's exact size) and keep the witness it computed in memory
// for the provers. The pipeline's `witgen_workers` generator threads call
// generate() (task_pipeline.h); a refused input becomes TaskError badInput
// quoting the generator.
//
// Threading: generate() is called from several threads at once; the record
// of checked generators has its own mutex.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "cluster/redis_client.h"
#include "monitoring/metrics/metrics.h"
#include "worker/circuit_cache.h"
#include "worker/config.h"
#include "worker/task.h"

namespace zkfarm {

class WitgenPool {
 public:
  // Reads config's witgen_limits, witgen_temp_dir and witgen_delay; cache
  // finds the generator binaries (downloading them with a remote store's
  // other circuit files). All alive as long as this.
  WitgenPool(const WorkerConfig& config, CircuitCache& cache, metrics::WorkerMetrics& metrics);

  // Runs the circuit's generator on task's input and sets task.generated
  // (and witgen_seconds); or returns the TaskError to send (cancelled, a
  // generator missing or not matching the circuit record, an input it
  // refused, a run that failed). redis: a remote store's records (may be
  // null).
  std::optional<Finished> generate(QueuedTask& task, RedisClient* redis);

 private:
  // The generator binary of a circuit, its hashes checked once per process.
  // Throws prover::Error(kBadCircuit) on a mismatch or a missing file.
  std::string checked_generator(const QueuedTask& task, RedisClient* redis);

  const WorkerConfig& config_;
  const std::string temp_dir_;  // config's witgen_temp_dir, or the default
  CircuitCache& cache_;
  metrics::WorkerMetrics& metrics_;
  std::mutex mutex_;
  std::map<std::string, std::string> checked_;  // "sha:dat" -> binary path
};

}  // namespace zkfarm
