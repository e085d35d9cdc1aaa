// lease_keeper.h -- the coordinator's lease (--takeover-after-ms), kept on a
// thread of its own.
//
// With leases on, each coordinator keeps <p>coordinator:<id> alive (renewed
// every 1/kLeaseRenewalsPerLease of its length) and takes over the
// processing list of any coordinator whose lease expired (JobStore::
// take_over). The renewal runs on this thread, with its own Redis
// connection, and waits on nothing but Redis: whatever the intake is doing
// (reading a slow client's witnesses, recovering a long processing list),
// the lease stays alive as long as the process and Redis are.
//
// A renewal that finds the lease gone means this process was silent (paused,
// cut off from Redis) long enough for another coordinator to take its jobs:
// it logs "lease lost", records it (lost()) and calls on_lost, which stops
// the coordinator; main() then exits with kExitLeaseLost, and the shipped
// units restart it. Takeovers are passed to the intake through
// take_recovery_request(): the jobs moved into this coordinator's processing
// list are taken in by the intake's next recovery pass.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

#include "coordinator/config.h"
#include "monitoring/metrics/metrics.h"

namespace zkfarm {

class LeaseKeeper {
 public:
  // config.takeover_after must be > 0 (leases on). on_lost: called on the
  // lease thread when the lease is found gone.
  LeaseKeeper(const CoordinatorConfig& config, std::shared_ptr<metrics::CoordinatorMetrics> metrics,
              std::function<void()> on_lost);

  // The thread body: renews and takes over until `stopping` (after wake())
  // or until the lease is lost. Redis errors are retried (backing off);
  // the lease expires meanwhile if they last, and the next renewal says so.
  void run(const std::atomic<bool>& stopping);
  // Wakes run() and wait_first_lease() to look at `stopping` again.
  // Thread-safe.
  void wake();
  // Blocks until the first renewal succeeded (the intake takes no job
  // before this coordinator holds its lease). Returns false if `stopping`
  // came first. Thread-safe.
  bool wait_first_lease(const std::atomic<bool>& stopping);
  // True once after each takeover that moved jobs into this coordinator's
  // processing list. Thread-safe.
  bool take_recovery_request() { return recovery_requested_.exchange(false); }
  // Whether a renewal found the lease gone. Thread-safe.
  bool lost() const { return lost_.load(); }

 private:
  const CoordinatorConfig& config_;
  std::shared_ptr<metrics::CoordinatorMetrics> metrics_;
  std::function<void()> on_lost_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool held_ = false;  // the first renewal succeeded
  std::atomic<bool> recovery_requested_{false};
  std::atomic<bool> lost_{false};
};

}  // namespace zkfarm
