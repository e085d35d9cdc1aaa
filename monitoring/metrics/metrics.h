// metrics.h -- the Prometheus metrics of zkfarm's daemons, as catalogued in
// docs/METRICS.md (that file is the contract; this is its only implementation).
//
// CoordinatorMetrics and WorkerMetrics each register exactly their families
// (plus the two shared ones) in a private prometheus::Registry and hand out
// typed accessors; callers never build metric names or label sets. Label
// values are normalized here (priority, circuit, code, worker, curve) so a bad
// or hostile value can never create unbounded series. MetricsEndpoint serves
// one of them over HTTP at /metrics, on a server of its own (other pages are
// served by an HttpEndpoint, http_endpoint.h, on another port).
//
//   auto metrics = std::make_shared<zkfarm::metrics::CoordinatorMetrics>("0.3.0");
//   zkfarm::metrics::MetricsEndpoint endpoint("0.0.0.0:9460", metrics);
//   metrics->jobs_submitted(circuit_id, "critical").Increment();
//
// Thread-safety: every accessor and every returned metric may be used from any
// thread (prometheus-cpp's metrics are atomic; families lock on lookup). The
// references returned stay valid for the life of the metrics object. Hot paths
// may keep the reference instead of looking it up again.
//
// Depends only on prometheus-cpp and civetweb (Debian's prometheus-cpp-dev,
// libcivetweb-dev), not on the cluster code, so tools and tests can use it alone.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "monitoring/metrics/http_endpoint.h"

namespace prometheus {
class Exposer;
}

namespace zkfarm::metrics {

// ---- label values -------------------------------------------------------

// The prover stages timed per partition (label `stage`). The last two are a
// device proof's host time outside its own clock (prover::Timings).
enum class Stage { kFetchWitness, kParseWitness, kWitnessCheck, kSpmv, kNtt, kMsm, kDeviceQueue, kDeviceRelease };
inline constexpr std::array<Stage, 8> kAllStages = {Stage::kFetchWitness, Stage::kParseWitness, Stage::kWitnessCheck,
                                                    Stage::kSpmv,         Stage::kNtt,          Stage::kMsm,
                                                    Stage::kDeviceQueue,  Stage::kDeviceRelease};
// "fetch_witness", "parse_witness", "witness_check", "spmv", "ntt", "msm",
// "device_queue", "device_release".
std::string_view stage_label(Stage stage);

// The four job priorities, in scheduling order.
inline constexpr std::array<std::string_view, 4> kPriorities = {"critical", "high", "normal", "low"};

// "critical" | "high" | "normal" | "low" (case as given must match), else "unknown".
std::string priority_label(std::string_view priority);
// First 16 hex digits of a circuit id (sha256 hex, 16..64 lowercase hex
// digits accepted), else "none".
std::string circuit_label(std::string_view circuit_id);
// An error code or reason: an identifier ([A-Za-z][A-Za-z0-9_]*, at most 64
// characters) as given, else "unknown".
std::string code_label(std::string_view code);
// A worker id: printable ASCII without quotes or backslashes, 1..128
// characters, as given; else "invalid".
std::string worker_label(std::string_view worker_id);
// "bn254" | "bls12381" (also snarkjs's "bn128"), else "unknown".
std::string curve_label(std::string_view curve);
// A tenant name as a label: "" (the farm's own namespace) and "default" are
// "default"; a tenant name (1..32 of a-z 0-9 _ -, starting with a letter or
// digit) as given; anything else "unknown". CoordinatorMetrics labels only
// registered tenants (tenant_registered).
std::string tenant_label(std::string_view tenant);
inline constexpr std::string_view kDefaultTenantLabel = "default";

// Bucket boundaries (docs/METRICS.md, "Histogram buckets").
const std::vector<double>& work_duration_buckets();  // 1 ms .. 1000 s
const std::vector<double>& job_latency_buckets();    // 50 ms .. 7200 s

// ---- the metric sets ------------------------------------------------------

// What both daemons export; the base of CoordinatorMetrics and WorkerMetrics.
// A Collectable, so MetricsEndpoint (or a test) can collect it directly.
class FarmMetrics : public prometheus::Collectable {
 public:
  FarmMetrics(const FarmMetrics&) = delete;
  FarmMetrics& operator=(const FarmMetrics&) = delete;
  ~FarmMetrics() override;

  // zkfarm_redis_errors_total
  prometheus::Counter& redis_errors() { return *redis_errors_; }

  // The families, serialized by prometheus-cpp's text format.
  std::vector<prometheus::MetricFamily> Collect() const override;
  // Collect() in the Prometheus text exposition format (what /metrics serves).
  std::string scrape_text() const;

 protected:
  // component: "coordinator" or "worker"; constant_labels go on every family.
  FarmMetrics(std::string_view component, std::string_view version, prometheus::Labels constant_labels);

  // Called at the start of every Collect(), before the registry is read.
  virtual void before_collect() const {}

  prometheus::Family<prometheus::Counter>& counter(const std::string& name, const std::string& help);
  prometheus::Family<prometheus::Gauge>& gauge(const std::string& name, const std::string& help);
  prometheus::Family<prometheus::Histogram>& histogram(const std::string& name, const std::string& help);

  // Histogram children created on demand: Family::Add would build a throwaway
  // Histogram (and copy the boundaries) on every lookup; this looks up first.
  prometheus::Histogram& histogram_child(prometheus::Family<prometheus::Histogram>& family,
                                         const prometheus::Labels& labels, const std::vector<double>& buckets);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Labels constant_labels_;

 private:
  prometheus::Counter* redis_errors_ = nullptr;
  std::mutex histogram_mutex_;
  std::map<std::pair<const void*, prometheus::Labels>, prometheus::Histogram*> histogram_children_;
};

// The coordinator's families (docs/METRICS.md: jobs and queues, partitions
// and verification, its view of the workers).
class CoordinatorMetrics final : public FarmMetrics {
 public:
  explicit CoordinatorMetrics(std::string_view version);

  // Circuit labels come from jobs, worker labels from Hellos: neither may
  // add series at a client's will. A circuit id gets its own label
  // (circuit_label) only once marked registered here (the coordinator marks
  // a circuit when it has read its record in Redis); any other id that is
  // well formed counts as "unknown" (a malformed one as "none"). At most
  // kMaxCircuitLabels circuits and kMaxWorkerLabels worker ids get labels of
  // their own; later ones count as "unknown" and "other". Thread-safe.
  static constexpr std::size_t kMaxCircuitLabels = 4096;  // registering is an admin's act: far above any farm
  static constexpr std::size_t kMaxWorkerLabels = 4096;   // 512 hosts of 8 GPUs
  void circuit_registered(std::string_view circuit_id);
  // Tenant labels likewise: "" (the farm's own namespace, the only one of a
  // farm without tenants) is "default"; a tenant gets a label of its own
  // once marked registered here (the coordinator marks the tenants it reads
  // from <p>tenants), at most kMaxTenantLabels of them; any other name
  // counts as "unknown". A tenant removed later keeps its label until the
  // process restarts. Thread-safe.
  static constexpr std::size_t kMaxTenantLabels = 1024;  // registering is an admin's act
  void tenant_registered(std::string_view tenant);

  // Jobs and queues. `circuit` is the full circuit id (normalized by
  // circuit_label); `priority` a priority name (priority_label); `tenant`
  // the job's tenant ("" the default tenant).
  prometheus::Counter& jobs_submitted(std::string_view circuit, std::string_view priority, std::string_view tenant);
  prometheus::Counter& jobs_completed(std::string_view circuit, std::string_view priority, std::string_view tenant);
  prometheus::Counter& jobs_failed(std::string_view circuit, std::string_view priority, std::string_view code,
                                   std::string_view tenant);
  prometheus::Gauge& jobs_active(std::string_view priority);
  prometheus::Gauge& queue_depth(std::string_view priority, std::string_view tenant);
  prometheus::Histogram& job_queue_wait(std::string_view priority, std::string_view tenant);
  prometheus::Histogram& job_latency(std::string_view circuit, std::string_view priority, std::string_view tenant);

  // Partitions and verification.
  prometheus::Counter& partitions_proved(std::string_view circuit, std::string_view tenant);
  prometheus::Counter& partitions_verified(std::string_view circuit, std::string_view tenant);
  prometheus::Counter& partitions_invalid(std::string_view circuit, std::string_view worker, std::string_view tenant);
  prometheus::Counter& partitions_retried(std::string_view circuit, std::string_view reason, std::string_view tenant);
  prometheus::Counter& partitions_requeued(std::string_view reason, std::string_view tenant);
  prometheus::Gauge& partitions_pending(std::string_view priority);
  prometheus::Gauge& partitions_in_flight() { return *partitions_in_flight_; }
  prometheus::Histogram& partition_dispatch_wait(std::string_view priority, std::string_view tenant);
  prometheus::Histogram& verify_duration(std::string_view curve);

  // Per worker, as the coordinator sees it.
  prometheus::Gauge& worker_connected(std::string_view worker);
  prometheus::Gauge& worker_quarantined(std::string_view worker);
  prometheus::Counter& worker_faults(std::string_view worker);
  prometheus::Counter& worker_heartbeat_misses(std::string_view worker);
  prometheus::Counter& worker_deaths(std::string_view worker);

 private:
  // Index into kPriorities, or -1 for "unknown".
  static int priority_index(std::string_view priority);
  // The label of a circuit id: circuit_label() when registered (or malformed:
  // "none"), else "unknown".
  std::string circuit_of(std::string_view circuit_id) const;
  // The label of a worker id: worker_label(), or "other" once
  // kMaxWorkerLabels other ids have labels.
  std::string worker_of(std::string_view worker_id);
  // The label of a job's tenant: "default" for "", the name when registered,
  // else "unknown".
  std::string tenant_of(std::string_view tenant) const;
  bool is_default_tenant(std::string_view tenant) const { return tenant.empty() || tenant == kDefaultTenantLabel; }

  mutable std::mutex labels_mutex_;
  std::set<std::string, std::less<>> registered_circuits_;  // full ids
  std::set<std::string, std::less<>> registered_tenants_;
  std::set<std::string, std::less<>> worker_labels_;

  prometheus::Family<prometheus::Counter>* jobs_submitted_;
  prometheus::Family<prometheus::Counter>* jobs_completed_;
  prometheus::Family<prometheus::Counter>* jobs_failed_;
  prometheus::Family<prometheus::Gauge>* jobs_active_;
  prometheus::Family<prometheus::Gauge>* queue_depth_;
  prometheus::Family<prometheus::Histogram>* job_queue_wait_;
  prometheus::Family<prometheus::Histogram>* job_latency_;
  prometheus::Family<prometheus::Counter>* partitions_proved_;
  prometheus::Family<prometheus::Counter>* partitions_verified_;
  prometheus::Family<prometheus::Counter>* partitions_invalid_;
  prometheus::Family<prometheus::Counter>* partitions_retried_;
  prometheus::Family<prometheus::Counter>* partitions_requeued_;
  prometheus::Family<prometheus::Gauge>* partitions_pending_;
  prometheus::Gauge* partitions_in_flight_;
  prometheus::Family<prometheus::Histogram>* partition_dispatch_wait_;
  prometheus::Family<prometheus::Histogram>* verify_duration_;
  prometheus::Family<prometheus::Gauge>* worker_connected_;
  prometheus::Family<prometheus::Gauge>* worker_quarantined_;
  prometheus::Family<prometheus::Counter>* worker_faults_;
  prometheus::Family<prometheus::Counter>* worker_heartbeat_misses_;
  prometheus::Family<prometheus::Counter>* worker_deaths_;

  // Children of the priority-labelled families, created at start (index by
  // priority_index); those with a tenant label are the default tenant's.
  std::array<prometheus::Gauge*, 4> jobs_active_by_priority_{};
  std::array<prometheus::Gauge*, 4> queue_depth_by_priority_{};
  std::array<prometheus::Gauge*, 4> partitions_pending_by_priority_{};
  std::array<prometheus::Histogram*, 4> job_queue_wait_by_priority_{};
  std::array<prometheus::Histogram*, 4> dispatch_wait_by_priority_{};
};

// One worker process = one device. Every family carries the constant labels
// worker=<worker id> and device=<ordinal or "cpu">.
class WorkerMetrics final : public FarmMetrics {
 public:
  // device: the CUDA ordinal as text ("0", "3") or "cpu".
  WorkerMetrics(std::string_view worker_id, std::string_view device, std::string_view version);

  // zkfarm_device_info: sets the one info series (replacing an earlier one).
  void set_device_info(std::string_view name, std::string_view uuid, std::string_view backend);

  // Busy time: call task_started() when a task begins proving and
  // task_finished() when it ends (success or error). They keep
  // zkfarm_device_tasks_in_progress and accumulate zkfarm_device_busy_seconds_total
  // for the time at least one task is in progress and
  // zkfarm_device_task_seconds_total for each task's time (with --slots S, its
  // rate over S is the slots' busy fraction); a scrape adds the time of the
  // tasks still running, so long partitions show as busy while they run.
  void task_started();
  void task_finished();

  prometheus::Counter& busy_seconds() { return *busy_seconds_; }
  prometheus::Counter& task_seconds() { return *task_seconds_; }
  prometheus::Gauge& slots() { return *slots_; }
  prometheus::Gauge& tasks_in_progress() { return *tasks_in_progress_; }
  prometheus::Counter& proofs(std::string_view circuit);
  prometheus::Counter& task_errors(std::string_view code);
  prometheus::Gauge& memory_used_bytes() { return *memory_used_bytes_; }
  prometheus::Gauge& memory_total_bytes() { return *memory_total_bytes_; }
  prometheus::Gauge& resident_bytes() { return *resident_bytes_; }
  prometheus::Gauge& streamed_bytes() { return *streamed_bytes_; }
  prometheus::Gauge& host_pinned_bytes() { return *host_pinned_bytes_; }
  prometheus::Histogram& prove_stage_duration(Stage stage);
  prometheus::Histogram& prove_duration(std::string_view circuit);
  prometheus::Counter& coordinator_heartbeat_misses() { return *coordinator_heartbeat_misses_; }

  // Circuit cache.
  prometheus::Counter& circuit_cache_hits(std::string_view circuit);
  prometheus::Counter& circuit_cache_misses(std::string_view circuit);
  prometheus::Counter& circuit_loads(std::string_view circuit, bool ok);
  prometheus::Histogram& circuit_load_duration(std::string_view circuit);
  prometheus::Counter& circuit_cache_evictions() { return *circuit_cache_evictions_; }
  prometheus::Gauge& circuit_cache_resident() { return *circuit_cache_resident_; }
  // The cache directory on disk (--cache-budget).
  prometheus::Counter& artifact_cache_evictions() { return *artifact_cache_evictions_; }
  prometheus::Gauge& artifact_cache_bytes() { return *artifact_cache_bytes_; }

  // The witness generator pool (input partitions).
  prometheus::Histogram& witgen_duration() { return *witgen_duration_; }
  prometheus::Counter& witgen_failures(std::string_view code);
  prometheus::Gauge& witgen_queue_depth() { return *witgen_queue_depth_; }
  prometheus::Gauge& witgen_workers() { return *witgen_workers_; }
  // Runs in progress now: keeps zkfarm_witgen_running and accumulates
  // zkfarm_witgen_busy_seconds_total (the sum over runs of their time, so
  // rate(busy) / zkfarm_witgen_workers is the pool's busy fraction).
  void witgen_busy(std::uint32_t running);

 private:
  void before_collect() const override;
  // Moves the busy time since busy_since_ into the counters (the wall time
  // into busy_seconds_, times the tasks running into task_seconds_). Needs
  // busy_mutex_.
  void flush_busy_locked(std::chrono::steady_clock::time_point now) const;

  prometheus::Family<prometheus::Gauge>* device_info_;
  prometheus::Gauge* device_info_child_ = nullptr;
  prometheus::Counter* busy_seconds_;
  prometheus::Counter* task_seconds_;
  prometheus::Gauge* slots_;
  prometheus::Gauge* tasks_in_progress_;
  prometheus::Family<prometheus::Counter>* proofs_;
  prometheus::Family<prometheus::Counter>* task_errors_;
  prometheus::Gauge* memory_used_bytes_;
  prometheus::Gauge* memory_total_bytes_;
  prometheus::Gauge* resident_bytes_;
  prometheus::Gauge* streamed_bytes_;
  prometheus::Gauge* host_pinned_bytes_;
  prometheus::Family<prometheus::Histogram>* prove_stage_duration_;
  std::array<prometheus::Histogram*, kAllStages.size()> prove_stage_by_stage_{};
  prometheus::Family<prometheus::Histogram>* prove_duration_;
  prometheus::Counter* coordinator_heartbeat_misses_;
  prometheus::Family<prometheus::Counter>* circuit_cache_hits_;
  prometheus::Family<prometheus::Counter>* circuit_cache_misses_;
  prometheus::Family<prometheus::Counter>* circuit_loads_;
  prometheus::Family<prometheus::Histogram>* circuit_load_duration_;
  prometheus::Counter* circuit_cache_evictions_;
  prometheus::Gauge* circuit_cache_resident_;
  prometheus::Counter* artifact_cache_evictions_;
  prometheus::Gauge* artifact_cache_bytes_;
  prometheus::Histogram* witgen_duration_;
  prometheus::Family<prometheus::Counter>* witgen_failures_;
  prometheus::Gauge* witgen_queue_depth_;
  prometheus::Gauge* witgen_workers_;
  prometheus::Gauge* witgen_running_;
  prometheus::Counter* witgen_busy_seconds_;
  mutable std::uint32_t witgen_running_count_ = 0;  // guarded by busy_mutex_
  mutable std::chrono::steady_clock::time_point witgen_since_;

  mutable std::mutex busy_mutex_;
  std::mutex info_mutex_;
  std::uint32_t running_tasks_ = 0;                       // guarded by busy_mutex_
  mutable std::chrono::steady_clock::time_point busy_since_;  // guarded by busy_mutex_
};

// ---- the HTTP endpoint ------------------------------------------------------

// The /metrics server's threads and timeout. Prometheus sends each scrape's
// request in one packet and reads the reply at once, so 2 s per read or
// write leaves room for a loaded host while a client that trickles its
// request (slowloris) loses its thread within 2 s; 8 threads let that many
// such clients in before a scrape waits at all (civetweb queues the rest).
// Measured: with 6 trickling clients on the port, a scrape answers at once.
inline constexpr HttpServerLimits kMetricsServerLimits{8, std::chrono::milliseconds(2000)};

// Serves `metrics` at http://<bind_address>/metrics (nothing else: every
// other path is a 404) on a civetweb server of its own, through
// prometheus-cpp's Exposer, until destroyed. bind_address as
// check_bind_address takes it; port 0 takes a free port (see port()).
// Throws std::runtime_error naming the address when it is malformed or
// cannot be bound. Keeps `metrics` alive.
class MetricsEndpoint {
 public:
  MetricsEndpoint(const std::string& bind_address, std::shared_ptr<FarmMetrics> metrics,
                  HttpServerLimits limits = kMetricsServerLimits);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // The port actually bound (useful with port 0).
  int port() const { return port_; }

 private:
  std::shared_ptr<FarmMetrics> metrics_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

// The default worker endpoint: "0.0.0.0:<9470 + ordinal>", or "0.0.0.0:9469"
// when device_ordinal < 0 (CPU backend). Ordinals past 29 would reach other
// services' ports: give those workers --metrics-listen explicitly.
std::string default_worker_bind_address(int device_ordinal);
inline constexpr std::string_view kDefaultCoordinatorBindAddress = "0.0.0.0:9460";

}  // namespace zkfarm::metrics
