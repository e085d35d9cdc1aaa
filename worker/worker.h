// worker.h -- zkfarm-worker: one process per device, pinned at launch. The
// Worker wires its parts together; each part says in its header what it
// owns:
//
//   config.h            WorkerConfig: every setting and its default, once
//   coordinator_link.h  the link thread: a DEALER socket and a session per
//                       coordinator (Hello, Welcome, heartbeats, Credit,
//                       Task, Cancel, Shutdown), SIGTERM and the drain
//   credits_policy.h    how many tasks to ask each coordinator for (pure:
//                       the link carries out its decisions)
//   task_pipeline.h     the queues and threads between a received task and
//                       its answer: generator pool, preparer, provers
//   witgen_pool.h       what a generator thread does (input partitions)
//   task_stages.h       what the preparer and the provers do: the circuit
//                       resident (circuit_cache.h), the witness fetched,
//                       parsed and checked, the proof and its Result
//   task.h              a task at each step, and its TaskError
//
// Threads: the link thread (run()), `slots` prover threads, one preparer
// with --prefetch N > 0 (default 1), `witgen_workers` generator threads,
// and the metrics endpoint's (main() serves metrics()). Failures are
// prover::Error codes, mapped to wire codes in one place (task.h's
// current_task_error(), through to_wire() of schema/wire_model.h).
//
// Credits: one budget of `slots + prefetch + witgen_workers` tasks across
// all coordinators (credits_policy.h says who gets them and when an unused
// credit is withdrawn); the device never runs more than `slots`.
#pragma once

#include <cstdint>
#include <memory>

#include "cluster/witness_access.h"
#include "monitoring/metrics/metrics.h"
#include "prover/prover.h"
#include "worker/circuit_cache.h"
#include "worker/config.h"
#include "worker/coordinator_link.h"
#include "worker/task_pipeline.h"
#include "worker/task_stages.h"
#include "worker/witgen_pool.h"

namespace zkfarm {

class Worker {
 public:
  // Throws std::invalid_argument on a witness root that is relative,
  // missing or no directory (make_witness_policy), no coordinator or no slot.
  Worker(WorkerConfig config, std::unique_ptr<prover::Prover> prover);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Runs until SIGTERM/SIGINT (drains) or a fatal error. Returns the exit code.
  int run();
  // The Prometheus metrics this worker updates (serve them with a
  // metrics::MetricsEndpoint). Never null.
  std::shared_ptr<metrics::WorkerMetrics> metrics() const { return metrics_; }

 private:
  // Samples device memory, resident circuits and evictions into metrics_
  // (link thread, once per heartbeat interval).
  void sample_metrics();

  // Declared in the order they are built; destroyed in reverse, so the
  // pipeline's threads end before what they use goes.
  WorkerConfig config_;
  std::unique_ptr<prover::Prover> prover_;
  std::shared_ptr<metrics::WorkerMetrics> metrics_;
  CircuitCache cache_;
  WitnessPolicy witness_policy_;  // which witnesses the provers may read
  WitgenPool witgen_pool_;
  TaskStages stages_;
  TaskPipeline pipeline_;
  CoordinatorLink link_;
  std::uint64_t evictions_reported_ = 0;  // link thread
  std::uint64_t disk_evictions_reported_ = 0;  // link thread
};

}  // namespace zkfarm
