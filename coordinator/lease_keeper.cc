// lease_keeper.cc -- see lease_keeper.h.
#include "coordinator/lease_keeper.h"

#include "cluster/tenants.h"

#include <algorithm>

#include "cluster/job_store.h"
#include "cluster/keys.h"
#include "cluster/log.h"
#include "cluster/redis_client.h"

namespace zkfarm {

using Clock = std::chrono::steady_clock;

LeaseKeeper::LeaseKeeper(const CoordinatorConfig& config, std::shared_ptr<metrics::CoordinatorMetrics> metrics,
                         std::function<void()> on_lost)
    : config_(config), metrics_(std::move(metrics)), on_lost_(std::move(on_lost)) {}

void LeaseKeeper::wake() {
  // Under the mutex: a waiter between its check of `stopping` and its wait
  // cannot miss the notification.
  std::lock_guard<std::mutex> lock(mutex_);
  changed_.notify_all();
}

bool LeaseKeeper::wait_first_lease(const std::atomic<bool>& stopping) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return held_ || stopping.load(); });
  return held_;
}

void LeaseKeeper::run(const std::atomic<bool>& stopping) {
  const std::string& me = config_.coordinator_id;
  const KeyLayout keys(config_.key_prefix);
  RedisClient redis(config_.redis_url);
  JobStore store(redis, keys);
  const auto period = config_.takeover_after / coordinator::kLeaseRenewalsPerLease;
  bool first = true;
  std::chrono::milliseconds backoff = coordinator::kRedisRetryFirst;
  while (!stopping) {
    auto next = Clock::now() + period;
    try {
      if (!store.renew_lease(me, config_.takeover_after, first)) {
        ZKLOG(kError) << "lease lost (silent for more than " << config_.takeover_after.count()
                      << " ms): another coordinator may own our jobs now; stopping (exit status "
                      << coordinator::kExitLeaseLost << ")";
        lost_ = true;
        on_lost_();
        return;
      }
      if (first) {
        first = false;
        std::lock_guard<std::mutex> lock(mutex_);
        held_ = true;
        changed_.notify_all();
      }
      for (const auto& dead : store.expired_coordinators(me)) {
        const std::size_t moved = store.take_over(dead, me, tenant_names(redis, keys));
        if (moved == 0) continue;
        ZKLOG(kWarning) << "took over " << moved << " jobs of coordinator " << dead << " (lease expired)";
        recovery_requested_ = true;  // the intake resumes them, keeping proved partitions
      }
      backoff = coordinator::kRedisRetryFirst;
    } catch (const RedisError& e) {
      if (stopping) break;
      metrics_->redis_errors().Increment();
      ZKLOG(kWarning) << "lease: " << e.what() << "; retrying in " << backoff.count() << " ms";
      next = Clock::now() + std::min<std::chrono::milliseconds>(backoff, period);
      backoff = std::min(backoff * 2, coordinator::kRedisRetryMax);
    }
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_until(lock, next, [&] { return stopping.load(); });
  }
}

}  // namespace zkfarm
