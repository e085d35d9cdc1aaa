// redis_retry.h -- the scheduler thread's Redis steps, retried while Redis
// is unreachable.
#pragma once

#include <algorithm>
#include <atomic>
#include <thread>

#include "cluster/log.h"
#include "cluster/redis_client.h"
#include "coordinator/constants.h"
#include "monitoring/metrics/metrics.h"

namespace zkfarm {

// Runs fn() until it does not throw a connection error. Every scheduler-side
// Redis step is idempotent (cluster/job_store.h), so it is retried until
// Redis is back; meanwhile the network thread keeps the workers' heartbeats
// going. Other RedisErrors, and any error once `stopping`, are rethrown.
template <class F>
auto retry_redis(F&& fn, const std::atomic<bool>& stopping, metrics::CoordinatorMetrics& metrics) -> decltype(fn()) {
  for (auto backoff = coordinator::kRedisRetryFirst;; backoff = std::min(backoff * 2, coordinator::kRedisRetryMax)) {
    try {
      return fn();
    } catch (const RedisError& e) {
      if (e.kind() != RedisError::Kind::kConnection || stopping) throw;  // counted where caught
      metrics.redis_errors().Increment();
      ZKLOG(kWarning) << "Redis unavailable (" << e.what() << "); retrying in " << backoff.count() << " ms";
    }
    std::this_thread::sleep_for(backoff);
  }
}

}  // namespace zkfarm
