// coordinator.h -- zkfarm-coordinator: the process that takes jobs from
// Redis, hands their partitions to workers over ZeroMQ, verifies every proof
// and assembles the results. This class wires its parts together:
//
//   * intake.h: Redis queues -> prepared jobs (recovery, checks; each job's
//     witnesses read on threads of its own: witness_reads.h);
//   * lease_keeper.h: the lease and takeovers (--takeover-after-ms);
//   * scheduler.h: which partition goes where, and what a failure means
//     (no Redis, no ZeroMQ: unit-tested directly);
//   * worker_sessions.h: Hello, heartbeats, credits, dead workers, every
//     message to a worker;
//   * result_assembly.h: a verified partition's entry, a done job's result
//     (cluster/job_result.h);
//   * router_link.h: the ROUTER socket and liveness.
//
// Threads (each owns its resources; they talk only through Mailboxes):
//   * network (RouterLink): the ROUTER socket, heartbeats, dead-peer detection;
//   * intake (Intake::run): its own Redis connection, and each job's witness
//     readers (WitnessReads) while the job is checked;
//   * lease (LeaseKeeper::run, with --takeover-after-ms): its own Redis
//     connection, nothing else;
//   * verifiers (VerifierPool, --verify-threads of them): batch-verify
//     partition proofs (PartitionVerifier), results back through events_;
//   * scheduler (the thread calling run()): the Scheduler, the sessions, and
//     one Redis connection for state transitions (JobStore scripts, retried
//     while Redis is down: they are idempotent). It implements the
//     scheduler's effects with that connection and the link.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <variant>

#include "cluster/artifacts.h"
#include "cluster/groth16_glue.h"
#include "cluster/job_store.h"
#include "cluster/keys.h"
#include "cluster/mailbox.h"
#include "cluster/redis_client.h"
#include "coordinator/admission.h"
#include "coordinator/config.h"
#include "coordinator/lease_keeper.h"
#include "coordinator/prepared_job.h"
#include "coordinator/router_link.h"
#include "coordinator/scheduler.h"
#include "coordinator/verifier_pool.h"
#include "coordinator/worker_sessions.h"
#include "monitoring/metrics/metrics.h"

namespace zkfarm {

class Coordinator : private SchedulerEffects {
 public:
  explicit Coordinator(CoordinatorConfig config);
  ~Coordinator() override;
  // Runs until stop() (thread-safe, async-signal-unsafe: call from a signal
  // thread). Throws on startup failures (bind).
  void run();
  void stop();
  // Whether run() ended because this coordinator's lease was found gone
  // (another coordinator may own its jobs): main() exits kExitLeaseLost.
  bool lease_lost() const { return lease_ && lease_->lost(); }
  // The Prometheus metrics this coordinator updates (serve them with a
  // metrics::MetricsEndpoint). Never null.
  std::shared_ptr<metrics::CoordinatorMetrics> metrics() const { return metrics_; }

 private:
  struct VerifyRequest {
    AcceptedResult accepted;
    std::string device_uuid;
    StageSeconds timings;
    PartitionVerifier::Item item;
  };
  struct VerifyDone {
    VerifyRequest request;
    PartitionVerifier::Outcome outcome;
  };
  using Event = std::variant<LinkEvent, PreparedJob, VerifyDone>;

  // Makes and starts the verifier pool (run()).
  void start_verifiers();
  void on_prepared(PreparedJob job);
  void on_result(const WorkerSessions::Session& session, wire::Result::Reader result);
  void on_verified(const VerifyDone& done);
  void tick();
  // Publishes the scheduler's active partitions of every tenant to the
  // intake (TenantLoad).
  void publish_tenant_load();

  // SchedulerEffects, with Redis and the link.
  void send_task(const TaskOrder& order) override;
  void send_cancel(const std::string& peer, std::uint64_t task_id, const std::string& job_id) override;
  void job_started(const ScheduledJob& job) override;
  void partition_proved(const ScheduledJob& job, const PartitionResult& result) override;
  void attempt_failed(const ScheduledJob& job, std::uint32_t partition) override;
  void witness_pending_changed(const ScheduledJob& job, std::uint32_t count) override;
  void job_finished(const ScheduledJob& job, const JobEnd& end) override;
  void faults_changed(const std::string& worker_id, int delta) override;
  void worker_quarantined(const std::string& worker_id, const std::string& curve_key) override;

  template <class F>
  auto with_redis(F&& fn) -> decltype(fn());
  // The key layout of a tenant's jobs ("": the default tenant's).
  KeyLayout job_keys(const std::string& tenant) const;
  // The store of the job's tenant's namespace, and the job's id there.
  JobStore store_of(const ScheduledJob& job);
  static const std::string& stored_id(const ScheduledJob& job);

  CoordinatorConfig config_;
  std::shared_ptr<metrics::CoordinatorMetrics> metrics_;
  KeyLayout keys_;
  ArtifactStore store_;
  zmq::context_t context_;
  Mailbox<Event> events_;
  std::unique_ptr<RouterLink> link_;
  RedisClient redis_;
  JobStore jobs_store_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint32_t> active_jobs_{0};
  std::atomic<std::uint64_t> held_bytes_{0};  // PreparedJob::held_bytes of the active jobs
  TenantLoad tenant_load_;  // each tenant's jobs and partitions, shared with the intake (admission.h)
  std::unique_ptr<LeaseKeeper> lease_;  // with --takeover-after-ms
  std::thread intake_thread_, lease_thread_;
  std::unique_ptr<VerifierPool<VerifyRequest>> verifiers_;  // made in run()
  Scheduler scheduler_;
  std::unique_ptr<WorkerSessions> sessions_;  // made in run(), with the link
  std::vector<std::string> tenants_;  // registered tenants (their cancels), re-read every 10 ticks
  std::chrono::steady_clock::time_point tenants_read_{};
};

}  // namespace zkfarm
