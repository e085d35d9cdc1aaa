// witgen_pool.cc -- see witgen_pool.h.
#include "worker/witgen_pool.h"

#include <filesystem>
#include <optional>
#include <system_error>
#include <thread>

#include "cluster/artifacts.h"
#include "cluster/log.h"
#include "formats/wtns.h"
#include "schema/wire_model.h"
#include "witgen/witness_generator.h"

namespace zkfarm {

WitgenPool::WitgenPool(const WorkerConfig& config, CircuitCache& cache, metrics::WorkerMetrics& metrics)
    : config_(config),
      temp_dir_(config.witgen_temp_dir.empty() ? default_witgen_temp_dir() : config.witgen_temp_dir),
      cache_(cache),
      metrics_(metrics) {}

witgen::GeneratorFiles WitgenPool::generator_files(const QueuedTask& task, RedisClient* redis) {
  if (task.witgen_sha256.empty() || task.witgen_dat_sha256.empty())
    throw prover::Error(ErrorCode::kBadCircuit,
                        "the task names no witness generator for circuit " + task.circuit_id);
  std::string binary;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = binaries_.find(task.circuit_id); it != binaries_.end()) binary = it->second;
  }
  std::error_code ec;
  if (binary.empty() || !std::filesystem::exists(binary, ec)) {
    // A store served over HTTP: the generator is downloaded with the
    // circuit's other files (checked against the record) into the cache.
    const ArtifactStore store(cache_.local_root(task.circuit_id, task.tenant, redis));
    binary = store.absolute(ArtifactStore::witgen_relative(task.circuit_id));
    std::lock_guard<std::mutex> lock(mutex_);
    binaries_[task.circuit_id] = binary;
  }
  return {binary, task.witgen_sha256, task.witgen_dat_sha256};
}

std::vector<std::uint8_t> WitgenPool::run(const QueuedTask& task, RedisClient* redis, std::uint64_t witness_bytes) {
  // The generator's files stay in the cache until this run has read them.
  std::optional<CacheBudgetPin> pin;
  if (CacheBudget* budget = cache_.budget()) pin.emplace(*budget, task.circuit_id);
  for (int attempt = 0;; ++attempt) {
    const witgen::GeneratorFiles generator = generator_files(task, redis);
    try {
      return witgen::run_generator(generator, task.witness.input_json, temp_dir_, config_.witgen_limits,
                                   witness_bytes);
    } catch (const witgen::GeneratorMismatch& e) {
      // A cached download that no longer matches is downloaded once more
      // (checked against the record again) and checked again at its run.
      if (!cache_.remote() || attempt > 0)
        throw prover::Error(ErrorCode::kBadCircuit, "circuit " + task.circuit_id + ": " + e.what());
      ZKLOG(kWarning) << e.what() << "; downloading the generator again";
      const std::string relative = ArtifactStore::witgen_relative(task.circuit_id);
      cache_.discard(relative);
      cache_.discard(relative + ".dat");
      std::lock_guard<std::mutex> lock(mutex_);
      binaries_.erase(task.circuit_id);
    }
  }
}

std::optional<Finished> WitgenPool::generate(QueuedTask& task, RedisClient* redis) {
  try {
    if (task.cancelled->load()) throw prover::Error(ErrorCode::kCancelled, "cancelled");
    // The witness's exact size, from the circuit (loaded now rather than at
    // the prover: it is needed next anyway), so a generator's output is
    // refused by size before a byte of it is read.
    bool was_resident = false;
    const auto circuit = cache_.get(task.circuit_id, task.tenant, &was_resident, redis);
    const std::uint64_t witness_bytes = wtns_file_bytes(circuit->num_vars());
    if (config_.witgen_delay.count() > 0) std::this_thread::sleep_for(config_.witgen_delay);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::uint8_t> bytes = run(task, redis, witness_bytes);
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
