// task_pipeline.h -- the worker's tasks between the link and the answers:
// the queues, the threads that take from them, and which task is where.
//
//   submit ─┬─ input partition ──> witgen queue ──> generator threads ─┐
//           │                                  (failure: answered) <─┤
//           └─ witness reference ──> prepare queue <───────────────────┘
//                                         │
//          prefetch > 0:  preparer thread (prepare) ──> ready (≤ prefetch)
//                                                        │
//                         prover threads (prove) <───────┘
//          prefetch = 0:  prover threads (prepare, then prove)
//                                         │
//                                         └──> finished (a Mailbox) ──> take_finished
//          every stage, as a task reaches it ──> progress (a Mailbox) ──> take_progress
//
// As a task's witness fetch (or generation) begins, as its witness is ready
// and as its proof begins, the task goes to `progress`, and the link tells
// the coordinator (TaskProgress): the coordinator's task timeout runs from
// the ready witness, and the fetch before it is never the device's. A task
// is held from submit() until the link takes its answer
// (take_finished()): held() is what the credits policy counts. Every stage
// may answer a task early (a refused input, a missing circuit, a cancelled
// task): that answer goes to `finished` and the task goes no further. The
// preparer keeps at most `prefetch` prepared tasks ready, so the device goes
// from one proof to the next without waiting for a fetch or a parse, and no
// more witnesses than that sit in (page-locked) memory.
//
// What each stage does is given as Stages (the worker's are TaskStages and
// WitgenPool; the unit tests give their own), so the transitions here run
// without a prover, Redis or a coordinator.
//
// Threading: `witgen_workers` generator threads, one preparer thread (when
// prefetch > 0) and `slots` prover threads, started by start(); each opens
// its own Redis connection when a Redis URL is given and hands it to its
// stages. submit(), cancel(), held(), witness_pending() and take_finished()
// are for the link thread (and safe from any). The destructor stops the
// threads: those between tasks return at once, those in a stage finish it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "cluster/mailbox.h"
#include "cluster/redis_client.h"
#include "monitoring/metrics/metrics.h"
#include "worker/task.h"

namespace zkfarm {

class TaskPipeline {
 public:
  // The work of each stage, called on the pipeline's threads with that
  // thread's Redis connection (null without a Redis URL). Each answers a
  // task it cannot take further with a Finished (a TaskError) instead of
  // throwing.
  struct Stages {
    // Computes an input partition's witness into task.generated; or returns
    // the answer when it cannot.
    std::function<std::optional<Finished>(QueuedTask& task, RedisClient* redis)> generate_witness;
    // Makes the circuit resident, fetches, parses and checks the witness.
    std::function<std::variant<Prepared, Finished>(QueuedTask task, RedisClient* redis)> prepare;
    // Proves a prepared task: its Result, or a TaskError.
    std::function<Finished(const Prepared& prepared)> prove;
  };
  struct Options {
    std::uint32_t slots = 1;           // prover threads
    std::uint32_t prefetch = 1;        // prepared tasks kept ready (0: no preparer)
    std::uint32_t witgen_workers = 1;  // generator threads
    std::string redis_url;             // one connection per thread; empty: none
  };

  // Throws std::invalid_argument if slots is 0 or a stage is missing.
  TaskPipeline(Options options, Stages stages, metrics::WorkerMetrics& metrics);
  ~TaskPipeline();
  TaskPipeline(const TaskPipeline&) = delete;
  TaskPipeline& operator=(const TaskPipeline&) = delete;

  // Starts the threads (once).
  void start();

  // Holds a task: an input partition (witness kind kInput) goes to the
  // generator pool first, any other straight to the prepare queue.
  void submit(QueuedTask task);
  // Marks a held task cancelled (each stage looks before its work and the
  // prover during it). Returns false if the task is not held.
  bool cancel(TaskKey key);
  // Tasks held: submitted and not yet taken by take_finished().
  std::size_t held() const;
  // The task ids of `session` that wait for or are in a generator run (the
  // Heartbeat's witnessPending: the coordinator does not time them out).
  std::vector<std::uint64_t> witness_pending(std::size_t session) const;
  // Readable while answers wait (poll it with the sockets).
  int finished_fd() const { return finished_.fd(); }
  // Where a held task is now.
  struct Progress {
    enum class Stage {
      kWitness,  // its witness fetch or generation begins
      kReady,    // its witness is ready; it waits for a prover
      kProving,  // its proof begins (without a preparer: its witness is ready too)
    };
    TaskKey key;
    Stage stage = Stage::kWitness;
    bool operator==(const Progress&) const = default;
  };
  // Readable while progress waits to be reported.
  int progress_fd() const { return progress_.fd(); }
  // The progress since the last call, in order. (Take it before
  // take_finished(): a task's answer may already be there.)
  std::vector<Progress> take_progress();
  // The answers so far, in the order they came; their tasks are no longer
  // held.
  std::vector<Finished> take_finished();

 private:
  void witgen_main();
  void prepare_main();
  void prover_main();
  std::unique_ptr<RedisClient> connect() const;
  // Hands a task on to the prepare queue (mutex_ held).
  void enqueue_for_prepare(QueuedTask task);

  Options options_;
  Stages stages_;
  metrics::WorkerMetrics& metrics_;
  Mailbox<Finished> finished_;
  Mailbox<Progress> progress_;

  mutable std::mutex mutex_;
  std::condition_variable queue_cv_;   // queue_ has a task, or ready_ has room
  std::condition_variable ready_cv_;   // ready_ has a task
  std::condition_variable witgen_cv_;  // witgen_queue_ has a task
  std::deque<QueuedTask> queue_;       // waiting to be prepared
  std::deque<Prepared> ready_;         // prepared, waiting for a prover (prefetch > 0)
  std::deque<QueuedTask> witgen_queue_;  // input partitions waiting for the pool
  std::uint32_t witgen_running_ = 0;
  std::set<TaskKey> witgen_active_;  // tasks in a generator run now
  std::map<TaskKey, std::shared_ptr<std::atomic<bool>>> held_;  // submitted, not yet answered to the link
  bool stopping_ = false;
  bool started_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace zkfarm
