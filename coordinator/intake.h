// intake.h -- the coordinator's intake thread: Redis queues -> prepared jobs.
//
// Owns its own Redis connection. On start (and after a lost connection or a
// takeover) it recovers every job in processing:<id>; then it moves jobs
// from the priority queues (LMOVE/BLMOVE), claims each in Redis, and checks
// it before any worker sees it: the JSON, the circuit record, each witness's
// header, length and public inputs. Good jobs go to `deliver` as a
// PreparedJob; bad ones it fails itself with a typed error and a message
// naming the partition and the problem. It also samples the queue depths and,
// with --takeover-after-ms, keeps this coordinator's lease and takes over
// the jobs of coordinators whose lease expired.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
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
  // active_jobs: jobs delivered and not yet ended (incremented here for each
  // delivered job; the scheduler's side decrements it); intake pauses at
  // config.max_active_jobs. deliver: called on the intake thread, must only
  // enqueue. stop: called when the lease is lost (the coordinator must stop).
  Intake(const CoordinatorConfig& config, std::shared_ptr<metrics::CoordinatorMetrics> metrics,
         std::atomic<std::uint32_t>& active_jobs, std::function<void(PreparedJob)> deliver,
         std::function<void()> stop);

  // The thread body: runs until `stopping` (or a lost lease).
  void run(const std::atomic<bool>& stopping);

 private:
  // Takes one raw queue entry through claim and checks; delivers or fails it.
  void handle_raw(RedisClient& redis, JobStore& store, const std::string& raw);
  // The Redis queue lengths (zkfarm_queue_depth).
  void sample_queue_depth(RedisClient& redis);

  const CoordinatorConfig& config_;
  std::shared_ptr<metrics::CoordinatorMetrics> metrics_;
  KeyLayout keys_;
  WitnessPolicy witness_policy_;  // which witnesses may be read (--witness-root, --prefix)
  std::atomic<std::uint32_t>& active_jobs_;
  std::function<void(PreparedJob)> deliver_;
  std::function<void()> stop_;
};

}  // namespace zkfarm
