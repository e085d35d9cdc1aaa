// witgen_pool.cc -- see witgen_pool.h.
#include "worker/witgen_pool.h"

#include <thread>

#include "base/digest.h"
#include "cluster/artifacts.h"
#include "formats/wtns.h"
#include "schema/wire_model.h"
#include "witgen/witness_generator.h"

namespace zkfarm {

WitgenPool::WitgenPool(const WorkerConfig& config, CircuitCache& cache, metrics::WorkerMetrics& metrics)
    : config_(config),
      temp_dir_(config.witgen_temp_dir.empty() ? default_witgen_temp_dir() : config.witgen_temp_dir),
      cache_(cache),
      metrics_(metrics) {}

std::string WitgenPool::checked_generator(const QueuedTask& task, RedisClient* redis) {
  const std::string key = task.witgen_sha256 + ":" + task.witgen_dat_sha256;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = checked_.find(key); it != checked_.end()) return it->second;
  }
  if (task.witgen_sha256.empty())
    throw prover::Error(ErrorCode::kBadCircuit,
                        "the task names no witness generator for circuit " + task.circuit_id);
  // A store served over HTTP: the generator is downloaded with the
  // circuit's other files (checked against the record) into the cache.
  const ArtifactStore store(cache_.local_root(task.circuit_id, redis));
  const std::string binary = store.absolute(ArtifactStore::witgen_relative(task.circuit_id));
  std::string binary_sha, dat_sha;
  try {
    binary_sha = sha256_file_hex(binary);
    dat_sha = sha256_file_hex(binary + ".dat");
  } catch (const std::exception& e) {
    throw prover::Error(ErrorCode::kBadCircuit,
                        "witness generator of circuit " + task.circuit_id + " unreadable: " + e.what());
  }
  if (binary_sha != task.witgen_sha256 || dat_sha != task.witgen_dat_sha256)
    throw prover::Error(ErrorCode::kBadCircuit,
                        "witness generator " + binary + " does not match the circuit record (sha256 " + binary_sha +
                            ", expected " + task.witgen_sha256 + "; .dat " + dat_sha + ", expected " +
                            task.witgen_dat_sha256 + ")");
  std::lock_guard<std::mutex> lock(mutex_);
  checked_[key] = binary;
  return binary;
}

std::optional<Finished> WitgenPool::generate(QueuedTask& task, RedisClient* redis) {
  try {
    if (task.cancelled->load()) throw prover::Error(ErrorCode::kCancelled, "cancelled");
    const std::string binary = checked_generator(task, redis);
    // The witness's exact size, from the circuit (loaded now rather than at
    // the prover: it is needed next anyway), so a generator's output is
    // refused by size before a byte of it is read.
    bool was_resident = false;
    const auto circuit = cache_.get(task.circuit_id, &was_resident, redis);
    const std::uint64_t witness_bytes = wtns_file_bytes(circuit->num_vars());
    if (config_.witgen_delay.count() > 0) std::this_thread::sleep_for(config_.witgen_delay);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::uint8_t> bytes =
        witgen::run_generator(binary, task.witness.input_json, temp_dir_, config_.witgen_limits, witness_bytes);
    task.witgen_seconds = seconds_since(t0);
    metrics_.witgen_duration().Observe(task.witgen_seconds);
    task.generated = FileBytes::adopt(std::move(bytes), "the witness computed for partition " +
                                                            std::to_string(task.partition));
    return std::nullopt;
  } catch (const witgen::BadInput& e) {
    // The coordinator's message names the job and partition.
    metrics_.witgen_failures("badInput").Increment();
    return task_error(task, to_wire(ErrorCode::kBadInput), std::string("the input was refused: ") + e.what(), metrics_);
  } catch (const prover::Error& e) {
    metrics_.witgen_failures(error_name(e.kind())).Increment();
    return task_error(task, to_wire(e.kind()), e.what(), metrics_);
  } catch (const std::exception& e) {
    metrics_.witgen_failures("internal").Increment();
    return task_error(task, to_wire(ErrorCode::kInternal), std::string("witness generator: ") + e.what(), metrics_);
  }
}

}  // namespace zkfarm
