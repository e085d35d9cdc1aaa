// worker.cc -- see worker.h: the parts built from one WorkerConfig and
// connected.
#include "worker/worker.h"

#include <random>
#include <string>
#include <string_view>

#include "cluster/http_fetch.h"
#include "cluster/log.h"
#include "cluster/witness_access.h"

namespace zkfarm {

namespace {

// zkfarm_build_info's version label.
constexpr std::string_view kWorkerVersion = "0.1";

// The `device` label: the CUDA ordinal, or "cpu".
std::string device_label(const prover::Device& device) {
  return device.ordinal < 0 ? "cpu" : std::to_string(device.ordinal);
}

HttpLimits http_limits(const WorkerConfig& config) {
  HttpLimits limits;
  limits.ca_file = config.ca_file;
  return limits;
}

WitnessPolicy witness_policy(const WorkerConfig& config) {
  // A store served over HTTP is no directory: no default witness root.
  WitnessPolicy policy = make_witness_policy(config.witness_roots, is_http_url(config.artifacts) ? "" : config.artifacts,
                                             config.key_prefix);
  policy.http.ca_file = config.ca_file;
  policy.http.urls = parse_url_policy(config.witness_url_allow);
  return policy;
}

// Names this process to the coordinators: a new one per start, so a
// coordinator tells a restarted worker from the one it knew.
std::uint64_t new_session_id() { return std::random_device{}() * 0x100000000ull + std::random_device{}(); }

// --cache-budget in bytes (nullopt: none, or no cache directory).
std::optional<std::uint64_t> cache_budget(const WorkerConfig& config) {
  if (config.cache_dir.empty()) return std::nullopt;
  const std::uint64_t automatic = CacheBudget::auto_budget(config.cache_dir).value_or(0);
  if (config.cache_budget == kAutoValue && automatic == 0) {
    ZKLOG(kWarning) << "--cache-budget auto: cannot read the free space of " << config.cache_dir
                    << "; the cache has no budget";
    return std::nullopt;
  }
  const auto budget = CacheBudget::parse(config.cache_budget, automatic);
  ZKLOG(kInfo) << "artifact cache " << config.cache_dir << ": "
               << (budget ? "budget " + std::to_string(*budget >> 20) + " MiB" : std::string("no budget"));
  return budget;
}

}  // namespace

Worker::Worker(WorkerConfig config, std::unique_ptr<prover::Prover> prover)
    : config_(std::move(config)), prover_(std::move(prover)),
      metrics_(std::make_shared<metrics::WorkerMetrics>(config_.worker_id, device_label(prover_->device()),
                                                        kWorkerVersion)),
      cache_(config_.artifacts, config_.cache_dir, *prover_, config_.max_resident, config_.key_prefix,
             http_limits(config_), cache_budget(config_)),
      witness_policy_(witness_policy(config_)),
      witgen_pool_(config_, cache_, *metrics_),
      stages_(config_, *prover_, cache_, witness_policy_, *metrics_),
      pipeline_({.slots = config_.slots,
                 .prefetch = config_.prefetch,
                 .witgen_workers = config_.witgen_workers,
                 .redis_url = config_.redis_url},
                {.generate_witness = [this](QueuedTask& task,
                                            RedisClient* redis) { return witgen_pool_.generate(task, redis); },
                 .prepare = [this](QueuedTask task, RedisClient* redis) { return stages_.prepare(std::move(task), redis); },
                 .prove = [this](const Prepared& prepared) { return stages_.prove(prepared); }},
                *metrics_),
      link_(config_, new_session_id(), pipeline_,
            {.device = prover_->device(),
             .curves = prover_->curves(),
             .resident_circuits = [this] { return cache_.resident(); },
             .sample_metrics = [this] { sample_metrics(); }},
            *metrics_) {
  const auto device = prover_->device();
  metrics_->set_device_info(device.name, device.uuid, device.backend);
  metrics_->memory_total_bytes().Set(static_cast<double>(device.memory_bytes));
  metrics_->slots().Set(config_.slots);
  metrics_->witgen_workers().Set(config_.witgen_workers);
  sample_metrics();
}

Worker::~Worker() = default;

void Worker::sample_metrics() {
  metrics_->memory_used_bytes().Set(static_cast<double>(prover_->memory_used_bytes()));
  metrics_->circuit_cache_resident().Set(static_cast<double>(cache_.resident().size()));
  const CircuitCache::Placement placement = cache_.placement();
  metrics_->resident_bytes().Set(static_cast<double>(placement.resident_bytes));
  metrics_->streamed_bytes().Set(static_cast<double>(placement.streamed_bytes));
  metrics_->host_pinned_bytes().Set(static_cast<double>(placement.host_pinned_bytes));
  const std::uint64_t evictions = cache_.evictions();
  if (evictions > evictions_reported_) {
    metrics_->circuit_cache_evictions().Increment(static_cast<double>(evictions - evictions_reported_));
    evictions_reported_ = evictions;
  }
  if (const CacheBudget* budget = cache_.budget()) {
    metrics_->artifact_cache_bytes().Set(static_cast<double>(budget->bytes()));
    if (const std::uint64_t removed = budget->evictions(); removed > disk_evictions_reported_) {
      metrics_->artifact_cache_evictions().Increment(static_cast<double>(removed - disk_evictions_reported_));
      disk_evictions_reported_ = removed;
    }
  }
}

int Worker::run() {
  pipeline_.start();
  std::string endpoints;
  for (const auto& endpoint : config_.coordinators) endpoints += (endpoints.empty() ? "" : ", ") + endpoint;
  ZKLOG(kInfo) << "worker " << config_.worker_id << " (" << prover_->device().name << ", " << config_.slots
               << " slots) connecting to " << endpoints;
  return link_.run();
}

}  // namespace zkfarm
