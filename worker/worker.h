// worker.h -- zkfarm-worker: one process per device, pinned at launch.
//
// Threads:
//   * the link thread (run()): owns one DEALER socket per coordinator
//     (--coordinator, repeatable: a worker serves every coordinator of the
//     farm, so when one dies and another takes its jobs over the worker goes
//     on proving for the survivor). Per coordinator it keeps a session: sends
//     Hello until Welcome, heartbeats every interval (it never proves, so a
//     long proof never silences a healthy worker), turns Tasks into queue
//     entries and finished tasks into Result/TaskError on the socket the task
//     came from, re-sends Hello when that coordinator goes silent or says it
//     does not know us (coordinator restart). It handles SIGTERM (signalfd):
//     Shutdown(drain) to every coordinator, finish what it holds, exit;
//   * `slots` prover threads: take a task, make sure the circuit is resident
//     (CircuitCache), fetch the witness by reference (or take the one a
//     witness generator computed), prove with the prover service
//     (prover/prover.h, the CPU or one CUDA device), report per-stage
//     timings. Failures are prover::Error codes, mapped to wire codes by
//     schema/wire_model.h (to_wire) only;
//   * with --prefetch N > 0 (default 1), one preparer thread ahead of them:
//     it takes the next task, makes sure its circuit is resident, fetches the
//     witness and parses and checks it into the prover's memory
//     (prover::Prover::prepare: page-locked on a device), and keeps up to N
//     such witnesses ready, so the device goes from one proof to the next
//     without waiting for a fetch or a parse; the provers then only prove;
//   * `witgen_workers` witness generator threads (the pool for input
//     partitions): check the circuit's generator against the hashes the task
//     carries (once per process), run it sandboxed on the input
//     (witgen/witness_generator.h) and queue the task for the provers with
//     the witness in memory; a refused input becomes TaskError badInput
//     quoting the generator.
// Credits: one budget of `slots + prefetch + witgen_workers` across all coordinators
// (so while the provers prove, the pool computes the witnesses of the next
// input partitions): the credits granted and not yet used plus the tasks
// held never exceed it
// (Hello says 0 credits; a welcomed session gets Credit messages as slots
// are free, round robin). A credit that a coordinator leaves unused for
// kCreditIdleAfter while another coordinator is connected is withdrawn
// (Credit.withdraw) and offered to the next one, so a coordinator without
// work never strands the device. A task that crosses a withdrawal on the
// wire waits in the local queue: the device never runs more than `slots`.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>
#include <zmq.hpp>

#include "cluster/artifacts.h"
#include "cluster/defaults.h"
#include "schema/job.h"
#include "cluster/mailbox.h"
#include "monitoring/metrics/metrics.h"
#include "schema/messages.h"
#include "worker/circuit_cache.h"
#include "prover/prover.h"
#include "witgen/witness_generator.h"

namespace zkfarm {

struct WorkerConfig {
  std::string worker_id;
  // Coordinator endpoints, one session each (at least one).
  std::vector<std::string> coordinators{kDefaultCoordinatorEndpoint};
  std::string redis_url;  // for redis:// witnesses; empty: none
  std::string key_prefix = kDefaultKeyPrefix;  // redis:// witnesses must name keys under it
  // --witness-root: file:// witnesses are read only under these; empty: the
  // directory holding the artifact store (make_witness_policy).
  std::vector<std::string> witness_roots;
  std::string ca_file;  // --ca-file: PEM CA bundle for https:// (empty: the system CAs)
  std::string artifacts;
  std::string cache_dir;  // empty: use the store in place
  std::uint32_t slots = 1;
  // Witnesses fetched and parsed ahead of the provers (0: each prover
  // fetches and parses its own task's witness before proving it).
  std::uint32_t prefetch = 1;
  std::size_t max_resident = 4;
  // The witness generator pool (input partitions): threads, each run's
  // limits, and where runs get their temporary directories.
  std::uint32_t witgen_workers = 1;
  witgen::RunLimits witgen_limits;
  std::string witgen_temp_dir = "/tmp";
  std::chrono::milliseconds drain_timeout{60000};
  // Without a Welcome this long after saying hello, the worker warns that
  // the coordinator has not answered (naming the keys as the likely cause
  // when CURVE is on: a wrong --curve-server-key, or this worker's public
  // key missing from the coordinator's allowlist, both look like silence),
  // then repeats the warning every unanswered_repeat while it lasts.
  std::chrono::milliseconds unanswered_warning{5000};
  std::chrono::milliseconds unanswered_repeat{30000};
  // ZeroMQ CURVE: the coordinator's public key and our secret key (Z85);
  // both empty: plaintext.
  std::string curve_server_key, curve_secret_key;
  // Test-only fault injection: "" | "corrupt-proof" (return a wrong proof).
  std::string inject_fault;
  std::chrono::milliseconds prove_delay{0};  // test-only: sleep before proving
  std::chrono::milliseconds witgen_delay{0};  // test-only: sleep before running a witness generator
  // Where /metrics is served (docs/METRICS.md); main() binds it.
  std::string metrics_listen;
};

class Worker {
 public:
  Worker(WorkerConfig config, std::unique_ptr<prover::Prover> prover);
  ~Worker();
  // Runs until SIGTERM/SIGINT (drains) or a fatal error. Returns the exit code.
  int run();
  // The Prometheus metrics this worker updates (serve them with a
  // metrics::MetricsEndpoint). Never null.
  std::shared_ptr<metrics::WorkerMetrics> metrics() const { return metrics_; }

 private:
  // One coordinator's session (link thread only).
  struct Session {
    std::size_t index = 0;
    std::string endpoint;
    std::unique_ptr<zmq::socket_t> socket;
    std::string coordinator_id;  // from Welcome
    bool welcomed = false;
    std::chrono::milliseconds heartbeat_interval{1000};  // until Welcome says otherwise
    std::chrono::milliseconds dead_after{5000};
    std::chrono::steady_clock::time_point last_heard, next_hello, next_heartbeat, next_miss_check;
    // While not welcomed: since when, and when to warn next (warn_unanswered()).
    bool waiting_for_welcome = false;
    std::chrono::steady_clock::time_point waiting_since, next_unanswered_warning;
    std::uint64_t heartbeat_sequence = 0;
    std::uint32_t granted = 0;  // credits it holds unused, as far as we know
    // Since when its credits have gone unused; after a withdrawal, until
    // when it counts as idle (others are offered credits first).
    std::chrono::steady_clock::time_point credit_unused_since, idle_until;
  };
  using TaskKey = std::pair<std::size_t, std::uint64_t>;  // (session, task id): ids are per session

  struct QueuedTask {
    std::size_t session = 0;
    std::uint64_t task_id = 0;
    std::string job_id, circuit_id;
    std::uint32_t partition = 0;
    WitnessRef witness;
    std::chrono::steady_clock::time_point received;
    std::shared_ptr<std::atomic<bool>> cancelled;
    // Input partitions: the generator's expected hashes, then the witness
    // it computed (set by the pool before the task reaches a prover).
    std::string witgen_sha256, witgen_dat_sha256;
    std::shared_ptr<const FileBytes> generated;
    double witgen_seconds = 0;
  };
  struct Finished {
    std::string bytes;  // Result or TaskError envelope
    std::size_t session = 0;
    std::uint64_t task_id = 0;
  };
  // A task whose circuit is resident and whose witness is parsed and checked.
  struct Prepared {
    QueuedTask task;
    std::shared_ptr<const prover::Circuit> circuit;
    std::shared_ptr<const prover::PreparedWitness> witness;
    bool resident = false;  // the circuit was resident already
    double load_seconds = 0, fetch_seconds = 0;
  };

  void prover_main();
  void prepare_main();
  void witgen_main();
  // Runs the circuit's generator on task's input; sets task.generated or
  // returns the TaskError to send.
  std::optional<Finished> generate_witness(QueuedTask& task, RedisClient* redis);
  // The generator binary of a circuit, its hashes checked once per process.
  // Throws prover::Error(kBadCircuit) on a mismatch or a missing file.
  std::string checked_generator(const QueuedTask& task, RedisClient* redis);
  Finished task_error(const QueuedTask& task, wire::ErrorCode code, const std::string& message);
  // Tasks held at once: the provers' slots and the generator pool.
  std::uint32_t capacity() const { return config_.slots + config_.prefetch + config_.witgen_workers; }
  // A task's first half (circuit, witness fetch, parse and checks) and its
  // proof; execute() is both. Failures become the TaskError to send.
  std::variant<Prepared, Finished> prepare(QueuedTask task, RedisClient* redis);
  Finished prove_prepared(const Prepared& prepared);
  Finished execute(QueuedTask task, RedisClient* redis);
  std::string hello_bytes();
  std::string heartbeat_bytes(Session& session);
  void handle_frame(Session& session, const zmq::message_t& frame);
  // Sends bytes to a coordinator without blocking (dropped if its queue is full).
  static void send(Session& session, const std::string& bytes);
  // Offers free slots to welcomed sessions and withdraws idle credits (link thread).
  void balance_credits(std::chrono::steady_clock::time_point now);
  // Forgets a session's credits (it died or rejected us).
  void end_session(Session& session, std::chrono::steady_clock::time_point next_hello);
  // Samples device memory, resident circuits and evictions into metrics_
  // (link thread, once per heartbeat interval).
  void sample_metrics();
  // Logs that a coordinator has not answered our Hello (link thread).
  void warn_unanswered(const Session& session, std::chrono::steady_clock::time_point now);

  WorkerConfig config_;
  std::unique_ptr<prover::Prover> prover_;
  std::shared_ptr<metrics::WorkerMetrics> metrics_;
  CircuitCache cache_;
  WitnessPolicy witness_policy_;  // which witnesses the provers may read
  std::uint64_t session_id_;
  zmq::context_t context_;
  std::vector<Session> sessions_;
  std::size_t next_credit_session_ = 0;  // round robin
  Mailbox<Finished> finished_;

  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<QueuedTask> queue_;
  std::condition_variable ready_cv_;
  std::deque<Prepared> ready_;  // prepared witnesses waiting for a prover (--prefetch)
  std::thread preparer_;
  std::condition_variable witgen_cv_;
  std::deque<QueuedTask> witgen_queue_;  // input partitions waiting for the pool
  std::uint32_t witgen_running_ = 0;
  std::set<TaskKey> witgen_active_;  // tasks in a generator run now
  std::map<std::string, std::string> checked_generators_;  // "sha:dat" -> binary path
  std::vector<std::thread> witgen_threads_;
  std::map<TaskKey, std::shared_ptr<std::atomic<bool>>> in_flight_;  // queued or running
  bool stopping_provers_ = false;
  std::vector<std::thread> provers_;

  // Link-thread state.
  bool draining_ = false;
  std::uint64_t evictions_reported_ = 0;
};

}  // namespace zkfarm
