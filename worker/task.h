// task.h -- a task as the worker holds it, from the coordinator's Task
// message to the Result or TaskError that answers it.
//
// A QueuedTask is what the link decoded; an input partition's one carries
// the witness its generator computed once the pool is done with it; a
// Prepared task has its circuit resident and its witness parsed and checked
// into the prover's memory; a Finished task is the encoded answer and the
// coordinator (session) it goes back to.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "cluster/artifacts.h"
#include "schema/job.h"
#include "monitoring/metrics/metrics.h"
#include "prover/prover.h"
#include "schema/messages.h"
#include "schema/wire_model.h"

namespace zkfarm {

// (session, task id): task ids are per coordinator session.
using TaskKey = std::pair<std::size_t, std::uint64_t>;

// The task as the Task message said it (TaskSpec, schema/wire_model.h: its
// fields are declared there once: ids, partition, witness, the generator's
// hashes for input partitions, the tenant whose witness policy and circuit
// record apply), plus what the worker keeps beside it.
struct QueuedTask : TaskSpec {
  std::size_t session = 0;  // index of the coordinator that sent it
  std::chrono::steady_clock::time_point received;
  // Set by the link when the coordinator cancels the task; every stage looks.
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  // Input partitions: the witness the generator computed (set by the pool
  // before the task reaches a prover).
  std::shared_ptr<const FileBytes> generated;
  double witgen_seconds = 0;

  TaskKey key() const { return {session, task_id}; }
};

// The answer to a task: a Result or TaskError envelope for its coordinator.
struct Finished {
  std::string bytes;
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

// The TaskError answering `task` with `code` and `message`; logs it and
// counts it in zkfarm_worker_task_errors_total. Never throws but for memory.
Finished task_error(const QueuedTask& task, wire::ErrorCode code, const std::string& message,
                    metrics::WorkerMetrics& metrics);

// The wire code and message of the exception being handled (call inside a
// catch block): what a failed stage reports for a task.
std::pair<wire::ErrorCode, std::string> current_task_error();

// Seconds from t to now (steady clock).
double seconds_since(std::chrono::steady_clock::time_point t);

}  // namespace zkfarm
