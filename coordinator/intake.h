// intake.h -- the coordinator's intake thread: Redis queues -> prepared jobs.
//
// Owns its own Redis connection. On start (and after a lost connection or a
// takeover) it recovers every job in processing:<id>; then it moves jobs
// from the priority queues (LMOVE/BLMOVE), claims each in Redis (dedupe,
// cancel), and checks it before any worker sees it: the JSON, then
// check_job (coordinator/job_check.h) over the circuit record and each
// witness's header, length and public inputs, read from the witness's first
// bytes only (read_witness_summary; the worker checks sha256 and size on
// the whole witness). Good jobs go to `deliver` as a
// PreparedJob; bad ones it fails itself with a typed error and a message
// naming the partition and the problem. It also samples the queue depths and,
// with --takeover-after-ms, keeps this coordinator's lease and takes over
// the jobs of coordinators whose lease expired.
//
// Admission: a job is taken from the queues only while fewer than
// max_active_jobs are held and their estimated bytes (estimate_held_bytes)
// are below memory_budget_bytes.
//
// Hostile entries: each entry's intake is counted in <p>intake:<id> before
// it starts (once per process) and forgotten when it ends, so an entry that
// crashed kIntakeCrashLimit coordinator processes is set aside (the list
// <p>setaside; its job fails "setAside") instead of crashing every restart.
// An entry naming a job id that belongs to another entry (a duplicate, or
// malformed JSON with that id) goes to <p>rejected as duplicateId and the
// existing job is not touched.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "cluster/artifacts.h"
#include "cluster/job_error.h"
#include "cluster/job_store.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "coordinator/config.h"
#include "coordinator/prepared_job.h"
#include "monitoring/metrics/metrics.h"

namespace zkfarm {

class Intake {
 public:
  // active_jobs, held_bytes: jobs delivered and not yet ended and their
  // PreparedJob::held_bytes (added here for each delivered job; the
  // scheduler's side takes them off); intake pauses at
  // config.max_active_jobs or config.memory_budget_bytes. deliver: called on
  // the intake thread, must only enqueue. stop: called when the lease is
  // lost (the coordinator must stop).
  Intake(const CoordinatorConfig& config, std::shared_ptr<metrics::CoordinatorMetrics> metrics,
         std::atomic<std::uint32_t>& active_jobs, std::atomic<std::uint64_t>& held_bytes,
         std::function<void(PreparedJob)> deliver, std::function<void()> stop);

  // The thread body: runs until `stopping` (or a lost lease).
  void run(const std::atomic<bool>& stopping);

 private:
  // Counts the entry's intake attempt (set aside past the limit), then
  // check_raw(); forgets the count when it returns.
  void handle_raw(RedisClient& redis, JobStore& store, const std::string& raw);
  // Takes one raw queue entry through claim and checks; delivers or fails it.
  void check_raw(RedisClient& redis, JobStore& store, const std::string& raw, const std::string& digest);
  // Whether the held jobs leave room for another (logs when that changes).
  bool room_for_a_job();
  // The Redis queue lengths (zkfarm_queue_depth).
  void sample_queue_depth(RedisClient& redis);

  const CoordinatorConfig& config_;
  std::shared_ptr<metrics::CoordinatorMetrics> metrics_;
  KeyLayout keys_;
  WitnessPolicy witness_policy_;  // which witnesses may be read (--witness-root, --prefix)
  std::atomic<std::uint32_t>& active_jobs_;
  std::atomic<std::uint64_t>& held_bytes_;
  std::function<void(PreparedJob)> deliver_;
  std::function<void()> stop_;
  std::set<std::string> counted_;  // entry digests whose attempt this process counted
  bool budget_full_ = false;       // for the log line when the budget fills and frees
  std::string abort_job_;          // --inject-fault abort-in-intake=<id> (tests)
};

// What holding a prepared job costs the coordinator, estimated from its
// sizes: the queue entry and the parsed spec (each at most the entry's
// size: inline witnesses decode to 3/4 of their base64), the public inputs,
// and kHeldBytesPerPartition of bookkeeping per partition.
std::uint64_t estimate_held_bytes(const PreparedJob& job);

}  // namespace zkfarm
