// coordinator.h -- zkfarm-coordinator: Redis intake, scheduling over ZeroMQ,
// verification and assembly of partition proofs.
//
// Threads (each owns its resources; they talk only through Mailboxes):
//   * network (RouterLink): the ROUTER socket, heartbeats, dead-peer detection;
//   * intake: its own Redis connection; recovers processing:<id> on start,
//     then moves jobs from the priority queues (LMOVE/BLMOVE), validates them
//     (JSON, circuit record, each witness's header and public inputs) and
//     hands good ones to the scheduler; bad ones it fails itself with a clear
//     error;
//   * verifier: batch-verifies partition proofs (PartitionVerifier);
//   * scheduler (the thread calling run()): all job and worker state, one
//     Redis connection for state transitions (JobStore scripts, retried while
//     Redis is down: they are idempotent).
//
// Scheduling: each partition is a task. Workers grant credits; a task goes
// to a worker with a free credit that supports the curve, preferring one
// that holds the circuit resident (affinity) and avoiding workers that
// already failed this partition. Partitions are served in (priority,
// deadline, round, job arrival, partition) order: strict priority; within a
// priority earliest deadline first (none = last); then round-robin between
// jobs: a job arriving in scheduling round R has its k-th partition due in
// round R + k, so jobs of one priority share the workers partition by
// partition and none starves behind a bigger or older one.
//
// Failures: a dead worker's tasks go back to pending without counting as an
// attempt, and its late results are ignored (unknown task id). An invalid
// proof counts a fault against the worker (quarantine after
// quarantine_after faults) and retries the partition elsewhere; invalid
// proofs from two different workers mean the witness is at fault: the job
// fails as "unsatisfied" and the workers' faults are refunded. Errors a
// worker reports are either the input's (the job fails with the worker's
// message) or its own (retry elsewhere, up to max_attempts).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "cluster/artifacts.h"
#include "cluster/groth16_glue.h"
#include "cluster/job.h"
#include "cluster/job_store.h"
#include "cluster/keys.h"
#include "cluster/mailbox.h"
#include "cluster/redis_client.h"
#include "coordinator/router_link.h"
#include "monitoring/metrics/metrics.h"
#include "schema/messages.h"

namespace zkfarm {

struct CoordinatorConfig {
  std::string redis_url = "redis://127.0.0.1:6379";
  std::string key_prefix = "zkfarm:";
  std::string coordinator_id;  // stable across restarts: names processing:<id>
  std::string listen = "tcp://127.0.0.1:5555";
  std::string artifacts;       // artifact store root
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds dead_after{5000};
  std::chrono::milliseconds intake_poll{200};  // non-critical queue latency bound
  std::chrono::milliseconds task_timeout{0};   // 0: none; else a stalled task is a fault
  std::uint32_t max_attempts = 3;              // failed attempts per partition before the job fails
  std::uint32_t quarantine_after = 3;          // faults before a worker is quarantined
  std::uint32_t max_active_jobs = 64;          // jobs held at once (the rest wait in Redis)
  // 0: off. Else this coordinator keeps a lease of this length in Redis and
  // takes over the processing list of any coordinator whose lease expired
  // (a coordinator that cannot renew its lease in time stops).
  std::chrono::milliseconds takeover_after{0};
  long terminal_ttl_seconds = 7 * 24 * 3600;
  // ZeroMQ CURVE (both empty: plaintext, for a trusted network only).
  std::string curve_secret_key;          // Z85
  std::set<std::string> curve_allowlist;  // worker public keys, Z85
  // Where /metrics is served (docs/METRICS.md); "" disables. main() binds it.
  std::string metrics_listen = std::string(metrics::kDefaultCoordinatorBindAddress);
};

class Coordinator {
 public:
  explicit Coordinator(CoordinatorConfig config);
  ~Coordinator();
  // Runs until stop() (thread-safe, async-signal-unsafe: call from a signal
  // thread). Throws on startup failures (bind).
  void run();
  void stop();
  // The Prometheus metrics this coordinator updates (serve them with a
  // metrics::MetricsEndpoint). Never null.
  std::shared_ptr<metrics::CoordinatorMetrics> metrics() const { return metrics_; }

 private:
  struct PreparedJob {
    std::string raw;
    JobSpec spec;
    CircuitInfo circuit;
    std::vector<std::vector<std::vector<std::uint8_t>>> public_inputs;  // per partition
    std::map<std::uint32_t, std::string> stored_proofs;                 // resumed jobs
    double submitted_at = 0;  // unix seconds: the job's submitted_at, else intake time
  };
  struct VerifyRequest {
    std::string job_id;
    std::uint32_t partition = 0;
    std::string worker_id, device_uuid;
    std::string timings_json;
    std::uint32_t attempt = 0;
    double wait_seconds = 0, worker_seconds = 0;  // pending -> dispatched -> result received
    std::chrono::steady_clock::time_point received{};
    PartitionVerifier::Item item;
  };
  struct VerifyDone {
    VerifyRequest request;
    PartitionVerifier::Outcome outcome;
  };
  using Event = std::variant<LinkEvent, PreparedJob, VerifyDone>;

  enum class Phase { kPending, kAssigned, kVerifying, kProved };
  struct Partition {
    Phase phase = Phase::kPending;
    std::uint32_t attempts = 0;              // failed attempts (not dead-worker requeues)
    std::set<std::string> avoid;             // worker ids that failed it
    std::set<std::string> invalid_by;        // worker ids whose proof was invalid
    std::uint64_t task_id = 0;
    std::string proof_json;                  // stored entry, once proved
    std::chrono::steady_clock::time_point pending_since{};  // when it last became pending
    std::tuple<int, double, std::uint64_t, std::uint64_t, std::uint32_t> pending_key{};  // while pending
  };
  struct Job {
    PreparedJob prepared;
    std::uint64_t seq = 0;
    std::vector<Partition> partitions;
    std::size_t proved = 0;
    double started = 0;
  };
  struct Session {
    std::string peer, worker_id, hostname, device_name, device_uuid;
    std::uint64_t session_id = 0;
    std::set<wire::Curve> curves;
    std::set<std::string> loaded;
    std::uint32_t credits = 0;
    std::set<std::uint64_t> tasks;
    bool draining = false, quarantined = false;
    std::chrono::steady_clock::time_point redis_refreshed{};
  };
  struct Task {
    std::string job_id;
    std::uint32_t partition = 0;
    std::string peer, worker_id;
    std::chrono::steady_clock::time_point sent;
  };
  // priority, deadline (unix s; +inf when none), round, job seq, partition
  using PendingKey = std::tuple<int, double, std::uint64_t, std::uint64_t, std::uint32_t>;

  void intake_main();
  void verifier_main();
  void handle_intake_raw(RedisClient& redis, JobStore& store, const std::string& raw);

  void on_link(const LinkEvent& e);
  void on_prepared(PreparedJob job);
  void on_verified(const VerifyDone& done);
  void on_hello(const std::string& peer, wire::Hello::Reader hello, bool envelope_version_ok);
  void on_result(const std::string& peer, wire::Result::Reader result);
  void on_task_error(const std::string& peer, wire::TaskError::Reader error);
  void on_dead(const std::string& peer);
  void tick();
  void dispatch();

  void drop_session(const std::string& peer, const char* why);
  // Puts an assigned partition back to pending without counting an attempt;
  // reason labels zkfarm_partitions_requeued_total (workerDead, ...).
  void requeue(const std::string& job_id, std::uint32_t partition, const std::string& reason);
  // Adds a partition to pending_ and starts its dispatch-wait clock; it is
  // due `rounds_ahead` scheduling rounds after the current one of its
  // priority (round-robin between jobs, see the file comment).
  void make_pending(Job& job, std::uint32_t partition, std::uint64_t rounds_ahead = 0);
  // Recomputes the gauges derived from scheduler state (active jobs,
  // pending and in-flight partitions).
  void update_gauges();
  // The intake's sample of the Redis queue lengths (zkfarm_queue_depth).
  void sample_queue_depth(RedisClient& redis);
  void partition_failed(Job& job, std::uint32_t partition, const std::string& worker_id,
                        const std::string& code, const std::string& message);
  void count_fault(const std::string& worker_id, const std::string& why);
  void fail_job(const std::string& job_id, const std::string& state, const std::string& code,
                const std::string& message);
  void complete_job(const std::string& job_id);
  void release_tasks(Job& job);
  void send_reject(const std::string& peer, wire::ErrorCode code, const std::string& message);
  void refresh_worker_record(Session& s, const char* state);

  template <class F>
  auto with_redis(F&& fn) -> decltype(fn());

  CoordinatorConfig config_;
  std::shared_ptr<metrics::CoordinatorMetrics> metrics_;
  KeyLayout keys_;
  ArtifactStore store_;
  zmq::context_t context_;
  Mailbox<Event> events_;
  Mailbox<VerifyRequest> verify_queue_;
  std::unique_ptr<RouterLink> link_;
  RedisClient redis_;
  JobStore jobs_store_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint32_t> active_jobs_{0};
  std::thread intake_thread_, verifier_thread_;

  std::map<std::string, Job> jobs_;
  std::set<PendingKey> pending_;
  std::array<std::uint64_t, 4> current_round_{};  // per priority: round of the last dispatch
  std::map<std::uint64_t, std::string> seq_to_job_;
  std::map<std::string, Session> sessions_;  // by peer
  std::map<std::uint64_t, Task> tasks_;
  std::map<std::string, std::uint32_t> faults_;  // by worker id
  std::uint64_t next_task_id_ = 1, next_seq_ = 1;
};

}  // namespace zkfarm
