// witgen_pool.h -- the witness generator pool's work (input partitions):
// run the circuit's generator sandboxed on the task's input, its program
// and .dat read once into sealed copies and checked against the hashes the
// task carries at every run (witgen::run_generator: what runs is what was
// checked, never a file replaced in the store after an earlier run)
// (witgen/witness_generator.h: namespaces and seccomp unless the operator
// gave --witgen-sandbox=off; the witness refused unless it has the
// circuit's exact size) and keep the witness it computed in memory
// for the provers. The pipeline's `witgen_workers` generator threads call
// generate() (task_pipeline.h); a refused input becomes TaskError badInput
// quoting the generator.
//
// Threading: generate() is called from several threads at once; the map of
// where each circuit's generator lies has its own mutex.
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
#include "witgen/witness_generator.h"

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
  // Where the task's generator lies (downloaded first from a store served
  // over HTTP) and the hashes it must have. Throws prover::Error like
  // CircuitCache::local_root, kBadCircuit for a task without hashes.
  witgen::GeneratorFiles generator_files(const QueuedTask& task, RedisClient* redis);
  // Runs it; a cached download that does not match is downloaded and
  // checked once more. Throws prover::Error(kBadCircuit) for files that do
  // not match the task's hashes, and what run_generator throws.
  std::vector<std::uint8_t> run(const QueuedTask& task, RedisClient* redis, std::uint64_t witness_bytes);

  const WorkerConfig& config_;
  const std::string temp_dir_;  // config's witgen_temp_dir, or the default
  CircuitCache& cache_;
  metrics::WorkerMetrics& metrics_;
  std::mutex mutex_;
  std::map<std::string, std::string> binaries_;  // circuit id -> its generator's path (the bytes: checked at every run)
};

}  // namespace zkfarm
