// metrics.cc -- registration of zkfarm's metric families (docs/METRICS.md),
// label normalization and the /metrics endpoint.
#include "monitoring/metrics/metrics.h"

#include <prometheus/exposer.h>
#include <prometheus/text_serializer.h>

#include <cctype>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace zkfarm::metrics {
namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;
using prometheus::Labels;

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

}  // namespace

// ---- label values -------------------------------------------------------

std::string_view stage_label(Stage stage) {
  switch (stage) {
    case Stage::kFetchWitness: return "fetch_witness";
    case Stage::kParseWitness: return "parse_witness";
    case Stage::kWitnessCheck: return "witness_check";
    case Stage::kSpmv: return "spmv";
    case Stage::kNtt: return "ntt";
    case Stage::kMsm: return "msm";
    case Stage::kDeviceQueue: return "device_queue";
    case Stage::kDeviceRelease: return "device_release";
  }
  return "unknown";
}

std::string priority_label(std::string_view priority) {
  for (std::string_view known : kPriorities)
    if (priority == known) return std::string(known);
  return "unknown";
}

std::string circuit_label(std::string_view circuit_id) {
  if (circuit_id.size() < 16 || circuit_id.size() > 64) return "none";
  for (char c : circuit_id)
    if (!is_lower_hex(c)) return "none";
  return std::string(circuit_id.substr(0, 16));
}

std::string code_label(std::string_view code) {
  if (code.empty() || code.size() > 64 || !std::isalpha(static_cast<unsigned char>(code[0]))) return "unknown";
  for (char c : code)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return "unknown";
  return std::string(code);
}

std::string worker_label(std::string_view worker_id) {
  if (worker_id.empty() || worker_id.size() > 128) return "invalid";
  for (char c : worker_id)
    if (c < 0x21 || c > 0x7e || c == '"' || c == '\\') return "invalid";
  return std::string(worker_id);
}

std::string curve_label(std::string_view curve) {
  if (curve == "bn254" || curve == "bn128") return "bn254";
  if (curve == "bls12381" || curve == "bls12_381") return "bls12381";
  return "unknown";
}

std::string tenant_label(std::string_view tenant) {
  if (tenant.empty() || tenant == kDefaultTenantLabel) return std::string(kDefaultTenantLabel);
  if (tenant.size() > 32 || tenant[0] == '_' || tenant[0] == '-') return "unknown";
  for (char c : tenant)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return "unknown";
  return std::string(tenant);
}

const std::vector<double>& work_duration_buckets() {
  static const std::vector<double> buckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                              0.25,  0.5,    1,     2.5,  5,     10,   25,
                                              50,    100,    250,   500,  1000};
  return buckets;
}

const std::vector<double>& job_latency_buckets() {
  static const std::vector<double> buckets = {0.05, 0.1, 0.25, 0.5, 1,   2.5, 5,   10,  15,   20,   30,
                                              45,   60,  90,   120, 180, 300, 600, 900, 1800, 3600, 7200};
  return buckets;
}

// ---- FarmMetrics --------------------------------------------------------

FarmMetrics::FarmMetrics(std::string_view component, std::string_view version, Labels constant_labels)
    // Throw on a second family of the same name: each name is registered once.
    : registry_(std::make_shared<prometheus::Registry>(prometheus::Registry::InsertBehavior::Throw)),
      constant_labels_(std::move(constant_labels)) {
  gauge("zkfarm_build_info", "Always 1; labels give the component and its software version.")
      .Add({{"component", std::string(component)}, {"version", std::string(version)}})
      .Set(1);
  redis_errors_ = &counter("zkfarm_redis_errors_total", "Redis commands or connections that failed.").Add({});
}

FarmMetrics::~FarmMetrics() = default;

Family<Counter>& FarmMetrics::counter(const std::string& name, const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Labels(constant_labels_).Register(*registry_);
}

Family<Gauge>& FarmMetrics::gauge(const std::string& name, const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Labels(constant_labels_).Register(*registry_);
}

Family<Histogram>& FarmMetrics::histogram(const std::string& name, const std::string& help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Labels(constant_labels_).Register(*registry_);
}

Histogram& FarmMetrics::histogram_child(Family<Histogram>& family, const Labels& labels,
                                        const std::vector<double>& buckets) {
  std::lock_guard<std::mutex> lock(histogram_mutex_);
  auto key = std::make_pair(static_cast<const void*>(&family), labels);
  auto it = histogram_children_.find(key);
  if (it != histogram_children_.end()) return *it->second;
  Histogram& child = family.Add(labels, buckets);
  histogram_children_.emplace(std::move(key), &child);
  return child;
}

std::vector<prometheus::MetricFamily> FarmMetrics::Collect() const {
  before_collect();
  return registry_->Collect();
}

std::string FarmMetrics::scrape_text() const {
  return prometheus::TextSerializer().Serialize(Collect());
}

// ---- CoordinatorMetrics ---------------------------------------------------

CoordinatorMetrics::CoordinatorMetrics(std::string_view version) : FarmMetrics("coordinator", version, {}) {
  jobs_submitted_ = &counter("zkfarm_jobs_submitted_total", "Jobs taken from a queue by this coordinator.");
  jobs_completed_ = &counter("zkfarm_jobs_completed_total", "Jobs done: every partition proved and verified.");
  jobs_failed_ = &counter("zkfarm_jobs_failed_total", "Jobs failed or cancelled, by error code.");
  jobs_active_ = &gauge("zkfarm_jobs_active", "Jobs held by this coordinator now.");
  queue_depth_ = &gauge("zkfarm_queue_depth", "Jobs waiting in the Redis queue of each priority.");
  job_queue_wait_ = &histogram("zkfarm_job_queue_wait_seconds", "Time from submission to intake.");
  job_latency_ = &histogram("zkfarm_job_latency_seconds", "Time from submission to done (completed jobs).");
  partitions_proved_ = &counter("zkfarm_partitions_proved_total", "Proof results received from workers.");
  partitions_verified_ = &counter("zkfarm_partitions_verified_total", "Partition proofs verified and stored.");
  partitions_invalid_ = &counter("zkfarm_partitions_invalid_total", "Partition proofs that failed verification.");
  partitions_retried_ =
      &counter("zkfarm_partitions_retried_total", "Partitions dispatched again after a failed attempt.");
  partitions_requeued_ =
      &counter("zkfarm_partitions_requeued_total", "Partitions put back without counting an attempt.");
  partitions_pending_ = &gauge("zkfarm_partitions_pending", "Partitions waiting for a worker slot.");
  partitions_in_flight_ =
      &gauge("zkfarm_partitions_in_flight", "Partitions dispatched and not yet answered.").Add({});
  partition_dispatch_wait_ =
      &histogram("zkfarm_partition_dispatch_wait_seconds", "Time from a partition becoming pending to dispatch.");
  verify_duration_ = &histogram("zkfarm_verify_duration_seconds", "Wall time of one verification call.");
  worker_connected_ = &gauge("zkfarm_worker_connected", "1 while the worker has a live session, else 0.");
  worker_quarantined_ = &gauge("zkfarm_worker_quarantined", "1 while the worker is quarantined, else 0.");
  worker_faults_ = &counter("zkfarm_worker_faults_total", "Faults charged to the worker.");
  worker_heartbeat_misses_ =
      &counter("zkfarm_worker_heartbeat_misses_total", "Heartbeat intervals without a message from the worker.");
  worker_deaths_ = &counter("zkfarm_worker_deaths_total", "Times the worker was declared dead.");

  for (std::size_t i = 0; i < kPriorities.size(); ++i) {
    const Labels labels = {{"priority", std::string(kPriorities[i])}};
    Labels default_tenant = labels;
    default_tenant["tenant"] = std::string(kDefaultTenantLabel);
    jobs_active_by_priority_[i] = &jobs_active_->Add(labels);
    queue_depth_by_priority_[i] = &queue_depth_->Add(default_tenant);
    partitions_pending_by_priority_[i] = &partitions_pending_->Add(labels);
    job_queue_wait_by_priority_[i] = &histogram_child(*job_queue_wait_, default_tenant, job_latency_buckets());
    dispatch_wait_by_priority_[i] =
        &histogram_child(*partition_dispatch_wait_, default_tenant, work_duration_buckets());
  }
}

int CoordinatorMetrics::priority_index(std::string_view priority) {
  for (std::size_t i = 0; i < kPriorities.size(); ++i)
    if (priority == kPriorities[i]) return static_cast<int>(i);
  return -1;
}

Counter& CoordinatorMetrics::jobs_submitted(std::string_view circuit, std::string_view priority,
                                            std::string_view tenant) {
  return jobs_submitted_->Add(
      {{"circuit", circuit_of(circuit)}, {"priority", priority_label(priority)}, {"tenant", tenant_of(tenant)}});
}

Counter& CoordinatorMetrics::jobs_completed(std::string_view circuit, std::string_view priority,
                                            std::string_view tenant) {
  return jobs_completed_->Add(
      {{"circuit", circuit_of(circuit)}, {"priority", priority_label(priority)}, {"tenant", tenant_of(tenant)}});
}

Counter& CoordinatorMetrics::jobs_failed(std::string_view circuit, std::string_view priority,
                                         std::string_view code, std::string_view tenant) {
  return jobs_failed_->Add({{"circuit", circuit_of(circuit)},
                            {"priority", priority_label(priority)},
                            {"code", code_label(code)},
                            {"tenant", tenant_of(tenant)}});
}

Gauge& CoordinatorMetrics::jobs_active(std::string_view priority) {
  const int i = priority_index(priority);
  return i >= 0 ? *jobs_active_by_priority_[i] : jobs_active_->Add({{"priority", "unknown"}});
}

Gauge& CoordinatorMetrics::queue_depth(std::string_view priority, std::string_view tenant) {
  const int i = priority_index(priority);
  if (i >= 0 && is_default_tenant(tenant)) return *queue_depth_by_priority_[i];
  return queue_depth_->Add({{"priority", priority_label(priority)}, {"tenant", tenant_of(tenant)}});
}

Histogram& CoordinatorMetrics::job_queue_wait(std::string_view priority, std::string_view tenant) {
  const int i = priority_index(priority);
  if (i >= 0 && is_default_tenant(tenant)) return *job_queue_wait_by_priority_[i];
  return histogram_child(*job_queue_wait_, {{"priority", priority_label(priority)}, {"tenant", tenant_of(tenant)}},
                         job_latency_buckets());
}

Histogram& CoordinatorMetrics::job_latency(std::string_view circuit, std::string_view priority,
                                           std::string_view tenant) {
  return histogram_child(
      *job_latency_,
      {{"circuit", circuit_of(circuit)}, {"priority", priority_label(priority)}, {"tenant", tenant_of(tenant)}},
      job_latency_buckets());
}

Counter& CoordinatorMetrics::partitions_proved(std::string_view circuit, std::string_view tenant) {
  return partitions_proved_->Add({{"circuit", circuit_of(circuit)}, {"tenant", tenant_of(tenant)}});
}

Counter& CoordinatorMetrics::partitions_verified(std::string_view circuit, std::string_view tenant) {
  return partitions_verified_->Add({{"circuit", circuit_of(circuit)}, {"tenant", tenant_of(tenant)}});
}

Counter& CoordinatorMetrics::partitions_invalid(std::string_view circuit, std::string_view worker,
                                                std::string_view tenant) {
  return partitions_invalid_->Add(
      {{"circuit", circuit_of(circuit)}, {"worker", worker_of(worker)}, {"tenant", tenant_of(tenant)}});
}

Counter& CoordinatorMetrics::partitions_retried(std::string_view circuit, std::string_view reason,
                                                std::string_view tenant) {
  return partitions_retried_->Add(
      {{"circuit", circuit_of(circuit)}, {"reason", code_label(reason)}, {"tenant", tenant_of(tenant)}});
}

Counter& CoordinatorMetrics::partitions_requeued(std::string_view reason, std::string_view tenant) {
  return partitions_requeued_->Add({{"reason", code_label(reason)}, {"tenant", tenant_of(tenant)}});
}

Gauge& CoordinatorMetrics::partitions_pending(std::string_view priority) {
  const int i = priority_index(priority);
  return i >= 0 ? *partitions_pending_by_priority_[i] : partitions_pending_->Add({{"priority", "unknown"}});
}

Histogram& CoordinatorMetrics::partition_dispatch_wait(std::string_view priority, std::string_view tenant) {
  const int i = priority_index(priority);
  if (i >= 0 && is_default_tenant(tenant)) return *dispatch_wait_by_priority_[i];
  return histogram_child(*partition_dispatch_wait_,
                         {{"priority", priority_label(priority)}, {"tenant", tenant_of(tenant)}},
                         work_duration_buckets());
}

Histogram& CoordinatorMetrics::verify_duration(std::string_view curve) {
  return histogram_child(*verify_duration_, {{"curve", curve_label(curve)}}, work_duration_buckets());
}

Gauge& CoordinatorMetrics::worker_connected(std::string_view worker) {
  return worker_connected_->Add({{"worker", worker_of(worker)}});
}

Gauge& CoordinatorMetrics::worker_quarantined(std::string_view worker) {
  return worker_quarantined_->Add({{"worker", worker_of(worker)}});
}

Counter& CoordinatorMetrics::worker_faults(std::string_view worker) {
  return worker_faults_->Add({{"worker", worker_of(worker)}});
}

Counter& CoordinatorMetrics::worker_heartbeat_misses(std::string_view worker) {
  return worker_heartbeat_misses_->Add({{"worker", worker_of(worker)}});
}

Counter& CoordinatorMetrics::worker_deaths(std::string_view worker) {
  return worker_deaths_->Add({{"worker", worker_of(worker)}});
}

void CoordinatorMetrics::circuit_registered(std::string_view circuit_id) {
  std::lock_guard<std::mutex> lock(labels_mutex_);
  if (registered_circuits_.size() < kMaxCircuitLabels) registered_circuits_.emplace(circuit_id);
}

std::string CoordinatorMetrics::circuit_of(std::string_view circuit_id) const {
  std::string label = circuit_label(circuit_id);
  if (label == "none") return label;
  std::lock_guard<std::mutex> lock(labels_mutex_);
  return registered_circuits_.count(circuit_id) ? label : "unknown";
}

void CoordinatorMetrics::tenant_registered(std::string_view tenant) {
  const std::string label = tenant_label(tenant);
  if (label == kDefaultTenantLabel || label == "unknown") return;
  std::lock_guard<std::mutex> lock(labels_mutex_);
  if (registered_tenants_.size() < kMaxTenantLabels) registered_tenants_.emplace(label);
}

std::string CoordinatorMetrics::tenant_of(std::string_view tenant) const {
  std::string label = tenant_label(tenant);
  if (label == kDefaultTenantLabel || label == "unknown") return label;
  std::lock_guard<std::mutex> lock(labels_mutex_);
  return registered_tenants_.count(label) ? label : "unknown";
}

std::string CoordinatorMetrics::worker_of(std::string_view worker_id) {
  std::string label = worker_label(worker_id);
  if (label == "invalid") return label;
  std::lock_guard<std::mutex> lock(labels_mutex_);
  if (worker_labels_.count(label)) return label;
  if (worker_labels_.size() >= kMaxWorkerLabels) return "other";
  worker_labels_.insert(label);
  return label;
}

// ---- WorkerMetrics ----------------------------------------------------------

WorkerMetrics::WorkerMetrics(std::string_view worker_id, std::string_view device, std::string_view version)
    : FarmMetrics("worker", version, {{"worker", worker_label(worker_id)}, {"device", std::string(device)}}) {
  device_info_ = &gauge("zkfarm_device_info", "Always 1; labels name the device, its UUID and backend.");
  busy_seconds_ =
      &counter("zkfarm_device_busy_seconds_total", "Time the device had at least one task in progress.").Add({});
  task_seconds_ = &counter("zkfarm_device_task_seconds_total",
                           "Sum over tasks in progress of their time: its rate over zkfarm_device_slots is the "
                           "slots' busy fraction.")
                       .Add({});
  slots_ = &gauge("zkfarm_device_slots", "Tasks the worker holds at once (--slots).").Add({});
  tasks_in_progress_ = &gauge("zkfarm_device_tasks_in_progress", "Tasks being proved now.").Add({});
  proofs_ = &counter("zkfarm_device_proofs_total", "Proofs produced and sent to the coordinator.");
  task_errors_ = &counter("zkfarm_device_task_errors_total", "Tasks answered with a TaskError, by code.");
  memory_used_bytes_ = &gauge("zkfarm_device_memory_used_bytes", "Device memory in use.").Add({});
  memory_total_bytes_ = &gauge("zkfarm_device_memory_total_bytes", "Device memory.").Add({});
  resident_bytes_ = &gauge("zkfarm_device_resident_bytes", "Device memory held by loaded circuits' keys and PCEs.").Add({});
  streamed_bytes_ =
      &gauge("zkfarm_device_streamed_bytes", "Key bytes of loaded circuits streamed from host memory per proof.").Add({});
  host_pinned_bytes_ =
      &gauge("zkfarm_host_pinned_bytes", "Page-locked host memory held for loaded circuits' streamed keys.").Add({});
  prove_stage_duration_ =
      &histogram("zkfarm_prove_stage_duration_seconds", "Time of each prover stage of one partition.");
  prove_duration_ = &histogram("zkfarm_prove_duration_seconds", "The prover's total time for one partition.");
  coordinator_heartbeat_misses_ =
      &counter("zkfarm_coordinator_heartbeat_misses_total",
               "Heartbeat intervals without a message from the coordinator.")
           .Add({});
  circuit_cache_hits_ = &counter("zkfarm_circuit_cache_hits_total", "Tasks whose circuit was resident.");
  circuit_cache_misses_ = &counter("zkfarm_circuit_cache_misses_total", "Tasks whose circuit had to be loaded.");
  circuit_loads_ = &counter("zkfarm_circuit_loads_total", "Circuit loads into the backend, by result.");
  circuit_load_duration_ =
      &histogram("zkfarm_circuit_load_duration_seconds", "Time of one successful circuit load.");
  circuit_cache_evictions_ =
      &counter("zkfarm_circuit_cache_evictions_total", "Resident circuits evicted to make room.").Add({});
  circuit_cache_resident_ = &gauge("zkfarm_circuit_cache_resident", "Circuits resident now.").Add({});
  artifact_cache_evictions_ = &counter("zkfarm_artifact_cache_evictions_total",
                                       "Circuits whose files were removed from the cache directory (--cache-budget).")
                                   .Add({});
  artifact_cache_bytes_ = &gauge("zkfarm_artifact_cache_bytes", "Bytes of circuit files in the cache directory.").Add({});
  witgen_duration_ = &histogram_child(
      histogram("zkfarm_witgen_duration_seconds", "Time of one witness generator run (an input partition)."), {},
      work_duration_buckets());
  witgen_failures_ = &counter("zkfarm_witgen_failures_total", "Witness generator runs that failed, by code.");
  witgen_queue_depth_ =
      &gauge("zkfarm_witgen_queue_depth", "Input partitions held, waiting for a witness generator.").Add({});
  witgen_workers_ = &gauge("zkfarm_witgen_workers", "Witness generator runs at once (--witgen-workers).").Add({});
  witgen_running_ = &gauge("zkfarm_witgen_running", "Witness generator runs in progress now.").Add({});
  witgen_busy_seconds_ = &counter("zkfarm_witgen_busy_seconds_total",
                                  "Sum over witness generator runs of their time (runs x seconds).")
                              .Add({});

  for (std::size_t i = 0; i < kAllStages.size(); ++i)
    prove_stage_by_stage_[i] = &histogram_child(
        *prove_stage_duration_, {{"stage", std::string(stage_label(kAllStages[i]))}}, work_duration_buckets());
  // Families with only on-demand children are still listed (HELP/TYPE) from
  // the start by prometheus-cpp, so a scrape shows the full catalogue.
}

void WorkerMetrics::set_device_info(std::string_view name, std::string_view uuid, std::string_view backend) {
  std::lock_guard<std::mutex> lock(info_mutex_);
  if (device_info_child_ != nullptr) device_info_->Remove(device_info_child_);
  auto printable = [](std::string_view text) {
    std::string out;
    for (char c : text.substr(0, 128)) out += (c >= 0x20 && c <= 0x7e) ? c : '?';
    return out;
  };
  device_info_child_ =
      &device_info_->Add({{"name", printable(name)}, {"uuid", printable(uuid)}, {"backend", printable(backend)}});
  device_info_child_->Set(1);
}

void WorkerMetrics::task_started() {
  std::lock_guard<std::mutex> lock(busy_mutex_);
  const auto now = std::chrono::steady_clock::now();
  flush_busy_locked(now);
  if (running_tasks_++ == 0) busy_since_ = now;
  tasks_in_progress_->Set(running_tasks_);
}

void WorkerMetrics::task_finished() {
  std::lock_guard<std::mutex> lock(busy_mutex_);
  if (running_tasks_ == 0) return;  // unbalanced call: ignore rather than go negative
  flush_busy_locked(std::chrono::steady_clock::now());
  --running_tasks_;
  tasks_in_progress_->Set(running_tasks_);
}

void WorkerMetrics::flush_busy_locked(std::chrono::steady_clock::time_point now) const {
  if (running_tasks_ == 0) return;
  const double seconds = std::chrono::duration<double>(now - busy_since_).count();
  busy_seconds_->Increment(seconds);
  task_seconds_->Increment(running_tasks_ * seconds);
  busy_since_ = now;
}

void WorkerMetrics::before_collect() const {
  std::lock_guard<std::mutex> lock(busy_mutex_);
  const auto now = std::chrono::steady_clock::now();
  flush_busy_locked(now);
  if (witgen_running_count_ > 0)
    witgen_busy_seconds_->Increment(witgen_running_count_ * std::chrono::duration<double>(now - witgen_since_).count());
  witgen_since_ = now;
}

void WorkerMetrics::witgen_busy(std::uint32_t running) {
  std::lock_guard<std::mutex> lock(busy_mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (witgen_running_count_ > 0)
    witgen_busy_seconds_->Increment(witgen_running_count_ * std::chrono::duration<double>(now - witgen_since_).count());
  witgen_since_ = now;
  witgen_running_count_ = running;
  witgen_running_->Set(running);
}

Counter& WorkerMetrics::witgen_failures(std::string_view code) {
  return witgen_failures_->Add({{"code", code_label(code)}});
}

Counter& WorkerMetrics::proofs(std::string_view circuit) {
  return proofs_->Add({{"circuit", circuit_label(circuit)}});
}

Counter& WorkerMetrics::task_errors(std::string_view code) {
  return task_errors_->Add({{"code", code_label(code)}});
}

Histogram& WorkerMetrics::prove_stage_duration(Stage stage) {
  return *prove_stage_by_stage_[static_cast<std::size_t>(stage)];
}

Histogram& WorkerMetrics::prove_duration(std::string_view circuit) {
  return histogram_child(*prove_duration_, {{"circuit", circuit_label(circuit)}}, work_duration_buckets());
}

Counter& WorkerMetrics::circuit_cache_hits(std::string_view circuit) {
  return circuit_cache_hits_->Add({{"circuit", circuit_label(circuit)}});
}

Counter& WorkerMetrics::circuit_cache_misses(std::string_view circuit) {
  return circuit_cache_misses_->Add({{"circuit", circuit_label(circuit)}});
}

Counter& WorkerMetrics::circuit_loads(std::string_view circuit, bool ok) {
  return circuit_loads_->Add({{"circuit", circuit_label(circuit)}, {"result", ok ? "ok" : "error"}});
}

Histogram& WorkerMetrics::circuit_load_duration(std::string_view circuit) {
  return histogram_child(*circuit_load_duration_, {{"circuit", circuit_label(circuit)}}, work_duration_buckets());
}

// ---- endpoint ---------------------------------------------------------------

std::string default_worker_bind_address(int device_ordinal) {
  return "0.0.0.0:" + std::to_string(device_ordinal < 0 ? 9469 : 9470 + device_ordinal);
}

MetricsEndpoint::MetricsEndpoint(const std::string& bind_address, std::shared_ptr<FarmMetrics> metrics,
                                 HttpServerLimits limits)
    : metrics_(std::move(metrics)) {
  const std::string problem = check_bind_address(bind_address);
  if (!problem.empty()) throw std::runtime_error("metrics address '" + bind_address + "': " + problem);
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", civetweb_listening_port(bind_address),
        "num_threads", std::to_string(limits.threads),
        "request_timeout_ms", std::to_string(limits.request_timeout.count()),
        "enable_keep_alive", "no"});
  } catch (const std::exception& e) {
    throw std::runtime_error("metrics address '" + bind_address + "': cannot listen: " + e.what());
  }
  exposer_->RegisterCollectable(metrics_);
  const std::vector<int> ports = exposer_->GetListeningPorts();
  if (ports.empty()) {
    exposer_.reset();
    throw std::runtime_error("metrics address '" + bind_address + "': not listening");
  }
  port_ = ports.front();
}

MetricsEndpoint::~MetricsEndpoint() = default;  // ~Exposer stops civetweb: no request runs after

}  // namespace zkfarm::metrics
