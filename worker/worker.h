// worker.h -- zkfarm-worker: one process per device, pinned at launch.
//
// Threads:
//   * the link thread (run()): owns the DEALER socket; sends Hello until
//     Welcome, heartbeats every interval (it never proves, so a long proof
//     never silences a healthy worker), turns Tasks into queue entries and
//     finished tasks into Result/TaskError + Credit, re-sends Hello when the
//     coordinator goes silent or says it does not know us (coordinator
//     restart), and handles SIGTERM (signalfd): Shutdown(drain) to the
//     coordinator, finish what it holds, exit;
//   * `slots` prover threads: take a task, make sure the circuit is resident
//     (CircuitCache), fetch the witness by reference, prove with the prover
//     service (prover/prover.h, the CPU or one CUDA device), report per-stage
//     timings. Failures are prover::Error kinds, mapped to wire codes by
//     prover::wire_code() only.
// Credits: the worker grants exactly `slots` tasks at a time (Hello's
// credits = free slots, one Credit per finished task).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "cluster/artifacts.h"
#include "cluster/job.h"
#include "cluster/mailbox.h"
#include "monitoring/metrics/metrics.h"
#include "worker/circuit_cache.h"
#include "prover/prover.h"

namespace zkfarm {

struct WorkerConfig {
  std::string worker_id;
  std::string coordinator = "tcp://127.0.0.1:5555";
  std::string redis_url;  // for redis:// witnesses; empty: none
  std::string key_prefix = "zkfarm:";  // redis:// witnesses must name keys under it
  // --witness-root: file:// witnesses are read only under these; empty: the
  // directory holding the artifact store (make_witness_policy).
  std::vector<std::string> witness_roots;
  std::string artifacts;
  std::string cache_dir;  // empty: use the store in place
  std::uint32_t slots = 1;
  std::size_t max_resident = 4;
  std::chrono::milliseconds heartbeat_interval{1000};  // until Welcome says otherwise
  std::chrono::milliseconds coordinator_dead_after{5000};
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
  struct QueuedTask {
    std::uint64_t task_id = 0;
    std::string job_id, circuit_id;
    std::uint32_t partition = 0;
    WitnessRef witness;
    std::chrono::steady_clock::time_point received;
    std::shared_ptr<std::atomic<bool>> cancelled;
  };
  struct Finished {
    std::string bytes;  // Result or TaskError envelope
    std::uint64_t task_id = 0;
  };

  void prover_main();
  Finished execute(const QueuedTask& task, RedisClient* redis);
  std::string hello_bytes();
  std::string heartbeat_bytes();
  void handle_frame(const zmq::message_t& frame);
  // Samples device memory, resident circuits and evictions into metrics_
  // (link thread, once per heartbeat interval).
  void sample_metrics();
  // Logs that the coordinator has not answered our Hello (link thread).
  void warn_unanswered(std::chrono::steady_clock::time_point now);

  WorkerConfig config_;
  std::unique_ptr<prover::Prover> prover_;
  std::shared_ptr<metrics::WorkerMetrics> metrics_;
  CircuitCache cache_;
  WitnessPolicy witness_policy_;  // which witnesses the provers may read
  std::uint64_t session_id_;
  zmq::context_t context_;
  std::unique_ptr<zmq::socket_t> socket_;
  Mailbox<Finished> finished_;

  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<QueuedTask> queue_;
  std::map<std::uint64_t, std::shared_ptr<std::atomic<bool>>> in_flight_;  // queued or running
  bool stopping_provers_ = false;
  std::vector<std::thread> provers_;

  // Link-thread state.
  bool welcomed_ = false, draining_ = false;
  std::chrono::steady_clock::time_point last_from_coordinator_;
  std::chrono::steady_clock::time_point next_hello_;
  // While not welcomed: since when, and when to warn next (warn_unanswered()).
  bool waiting_for_welcome_ = false;
  std::chrono::steady_clock::time_point waiting_since_, next_unanswered_warning_;
  std::uint64_t heartbeat_sequence_ = 0;
  std::uint64_t evictions_reported_ = 0;
};

}  // namespace zkfarm
