// task_stages.cc -- see task_stages.h.
#include "worker/task_stages.h"

#include <algorithm>
#include <thread>

#include "cluster/groth16_glue.h"
#include "cluster/log.h"
#include "cluster/witness_access.h"

namespace zkfarm {

namespace {

using Clock = std::chrono::steady_clock;

// Marks a task in progress for zkfarm_device_busy_seconds_total while alive.
class BusyScope {
 public:
  explicit BusyScope(metrics::WorkerMetrics& metrics) : metrics_(metrics) { metrics_.task_started(); }
  ~BusyScope() { metrics_.task_finished(); }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  metrics::WorkerMetrics& metrics_;
};

}  // namespace

TaskStages::TaskStages(const WorkerConfig& config, prover::Prover& prover, CircuitCache& cache,
                       const WitnessPolicy& witness_policy, metrics::WorkerMetrics& metrics)
    : config_(config), prover_(prover), cache_(cache), witness_policy_(witness_policy), metrics_(metrics) {}

std::variant<Prepared, Finished> TaskStages::prepare(QueuedTask task, RedisClient* redis) {
  try {
    if (task.cancelled->load()) throw prover::Error(ErrorCode::kCancelled, "cancelled");
    Prepared p;
    auto t0 = Clock::now();
    try {
      p.circuit = cache_.get(task.circuit_id, task.tenant, &p.resident, redis);
    } catch (...) {
      metrics_.circuit_cache_misses(task.circuit_id).Increment();
      metrics_.circuit_loads(task.circuit_id, false).Increment();
      throw;
    }
    p.load_seconds = p.resident ? 0 : seconds_since(t0);
    metrics_.circuit_cache_resident().Set(static_cast<double>(cache_.resident().size()));
    if (p.resident) {
      metrics_.circuit_cache_hits(task.circuit_id).Increment();
    } else {
      metrics_.circuit_cache_misses(task.circuit_id).Increment();
      metrics_.circuit_loads(task.circuit_id, true).Increment();
      metrics_.circuit_load_duration(task.circuit_id).Observe(p.load_seconds);
    }
    t0 = Clock::now();
    std::shared_ptr<const FileBytes> witness = task.generated;
    try {
      if (!witness) {
        // No transfer may bring more than a witness of this circuit.
        const std::uint64_t max_bytes = witness_max_bytes(p.circuit->num_vars());
        // A tenant's job reads only where that tenant's witnesses lie, as
        // the coordinator's intake did (not trusting that it did).
        const WitnessPolicy policy = witness_policy_.tenant_policy(task.tenant);
        try {
          witness = fetch_witness(task.witness, redis, policy, max_bytes, task.cancelled.get());
        } catch (const WitnessChecksum& e) {
          if (task.witness.kind != WitnessRef::Kind::kHttp) throw;
          // A transfer may have been corrupted on the way: fetch it once more.
          ZKLOG(kWarning) << "task " << task.task_id << ": " << e.what() << "; fetching it again";
          witness = fetch_witness(task.witness, redis, policy, max_bytes, task.cancelled.get());
        }
      }
    } catch (const WitnessCancelled& e) {
      throw prover::Error(ErrorCode::kCancelled, e.what());
    } catch (const WitnessTooLarge& e) {
      throw prover::Error(ErrorCode::kWitnessLength, e.what());
    } catch (const WitnessUnavailable& e) {
      throw prover::Error(ErrorCode::kWitnessUnavailable, e.what());
    } catch (const RedisError&) {
      metrics_.redis_errors().Increment();
      throw;
    }
    p.fetch_seconds = seconds_since(t0);
    // Parsed and checked into the prover's memory (page-locked on a device);
    // the file's bytes (a mapping, or the generator's output) go with it.
    p.witness = prover_.prepare(*p.circuit, witness);
    task.generated.reset();
    p.task = std::move(task);
    return p;
  } catch (const std::exception&) {
    const auto [code, message] = current_task_error();
    return task_error(task, code, message, metrics_);
  }
}

Finished TaskStages::prove(const Prepared& p) {
  const QueuedTask& task = p.task;
  try {
    if (config_.prove_delay.count() > 0) std::this_thread::sleep_for(config_.prove_delay);
    prover::ProveRequest request;
    request.cancelled = task.cancelled.get();
    prover::Timings timings;
    std::optional<prover::Proof> proved;
    {
      BusyScope busy(metrics_);  // the device's time: the upload and the kernels
      proved = prover_.prove(*p.circuit, *p.witness, request, &timings);
    }
    const prover::Proof& made = *proved;
    std::string proof = std::visit([](const auto& proof_of) { return encode_proof(proof_of.proof); }, made);
    // Input partitions: the coordinator verifies against the public signals
    // of the witness computed here (the prover checked it against the circuit).
    std::vector<std::uint8_t> public_inputs;
    if (task.witness.kind == WitnessRef::Kind::kInput) {
      std::visit(
          [&](const auto& proof_of) {
            using Fr = std::decay_t<decltype(proof_of.public_signals[0])>;
            public_inputs.resize(proof_of.public_signals.size() * Fr::kBytes);
            for (std::size_t i = 0; i < proof_of.public_signals.size(); ++i)
              proof_of.public_signals[i].to_le_bytes(public_inputs.data() + i * Fr::kBytes);
          },
          made);
    }
    if (config_.inject_fault == "corrupt-proof") {
      // Swap A and C (both valid G1 points): decodes fine, fails the pairing.
      const std::size_t quarter = proof.size() / 8 * 2;
      std::swap_ranges(proof.begin(), proof.begin() + quarter, proof.end() - quarter);
    }
    const auto device = prover_.device();
    metrics_.prove_stage_duration(metrics::Stage::kFetchWitness).Observe(p.fetch_seconds);
    metrics_.prove_stage_duration(metrics::Stage::kParseWitness).Observe(timings.parse_witness);
    if (timings.witness_check > 0)
      metrics_.prove_stage_duration(metrics::Stage::kWitnessCheck).Observe(timings.witness_check);
    metrics_.prove_stage_duration(metrics::Stage::kSpmv).Observe(timings.spmv);
    metrics_.prove_stage_duration(metrics::Stage::kNtt).Observe(timings.ntt);
    metrics_.prove_stage_duration(metrics::Stage::kMsm).Observe(timings.msm);
    if (device.ordinal >= 0) {  // a device proof: its host time outside the device's clock
      metrics_.prove_stage_duration(metrics::Stage::kDeviceQueue).Observe(timings.device_queue);
      metrics_.prove_stage_duration(metrics::Stage::kDeviceRelease).Observe(timings.device_release);
    }
    metrics_.prove_duration(task.circuit_id).Observe(timings.prove);
    metrics_.proofs(task.circuit_id).Increment();
    return Finished{wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
                      auto r = body.initResult();
                      r.setTaskId(task.task_id);
                      r.setJobId(task.job_id);
                      r.setPartitionIndex(task.partition);
                      r.setProof(kj::arrayPtr(reinterpret_cast<const kj::byte*>(proof.data()), proof.size()));
                      r.setDeviceUuid(device.uuid);
                      r.setCircuitWasResident(p.resident);
                      if (task.witness.kind == WitnessRef::Kind::kInput)
                        r.setPublicInputs(kj::arrayPtr(public_inputs.data(), public_inputs.size()));
                      auto t = r.initTimings();
                      t.setLoadCircuitSeconds(p.load_seconds);
                      t.setFetchWitnessSeconds(p.fetch_seconds);
                      t.setParseWitnessSeconds(timings.parse_witness);
                      t.setWitnessCheckSeconds(timings.witness_check);
                      t.setSpmvSeconds(timings.spmv);
                      t.setNttSeconds(timings.ntt);
                      t.setMsmSeconds(timings.msm);
                      t.setProveSeconds(timings.prove);
                      t.setTotalSeconds(seconds_since(task.received));
                      t.setWitnessGenSeconds(task.witgen_seconds);
                    }),
                    task.session, task.task_id};
  } catch (const std::exception&) {
    const auto [code, message] = current_task_error();
    return task_error(task, code, message, metrics_);
  }
}

}  // namespace zkfarm
