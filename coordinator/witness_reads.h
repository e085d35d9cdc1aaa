// witness_reads.h -- one job's witness summaries, read on threads of its own.
//
// The intake starts a WitnessReads for each job it checks: up to `readers`
// threads take the job's witness partitions in index order and read each
// one's summary (read_witness_summary: header, length and public inputs from
// its first bytes), so that a slow witness server delays its own job only
// and the intake thread never waits on a client. The intake polls settled()
// and gives up at the job's deadline: stop() then lets no further read
// start, and the reads in flight end by themselves (an HTTP read's curl
// timeout is the time left to the deadline, rounded up to a second).
//
// A failed read stops the others from starting (the job fails anyway): the
// partitions are taken in order, so every partition before a failed one has
// been read or is being read, and check_job, which reports the first
// failing partition, never needs one that was not started.
//
// Threads: the readers and the owner share the state below under one mutex;
// each reader owns its Redis connection (made on its first redis://
// witness). on_change is called on a reader thread when the reads settle
// (settled() turns true) and when the last reader returns (idle()), so the
// owner wakes twice per job at most, not once per witness. The destructor stops and joins every reader (it waits
// for the reads in flight).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster/witness_access.h"
#include "coordinator/job_check.h"
#include "schema/job.h"

namespace zkfarm {

class WitnessReads {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    std::uint32_t num_public = 0;  // the circuit's public signals
    // No read takes more: the intake gives the circuit's witness size
    // (witness_max_bytes); the default is any transfer's cap.
    std::uint64_t max_bytes = HttpLimits{}.max_bytes;
    ReadBudget budget;             // where reads count while they last (--memory-budget-mib)
    WitnessPolicy policy;          // which witnesses may be read; HTTP limits
    std::string redis_url;         // for redis:// witnesses
    Clock::time_point deadline;    // no HTTP read outlives it by more than a second
    std::size_t readers = 1;       // threads at most (fewer for fewer witnesses)
  };

  // Starts reading the summary of every partition of `spec` that names a
  // witness (not an input). Throws std::system_error if no thread can start.
  WitnessReads(std::shared_ptr<const JobSpec> spec, Options options, std::function<void()> on_change);
  ~WitnessReads();
  WitnessReads(const WitnessReads&) = delete;
  WitnessReads& operator=(const WitnessReads&) = delete;

  // No further read starts; those in flight go on to their end.
  void stop();
  // True when no read is in flight and none will start: every witness was
  // read, or a read failed, or stop() was called.
  bool settled() const;
  // True when every reader thread has returned (the destructor joins them
  // at once).
  bool idle() const;
  // Partition `partition`'s summary or read failure; nullopt while it has
  // not been read (not started, or in flight).
  std::optional<WitnessRead> result(std::size_t partition) const;
  // The message of a RedisError a read met (the job's check must be
  // retried once Redis answers again), or "".
  std::string redis_error() const;

 private:
  void reader_main();
  WitnessRead read_one(const WitnessRef& ref, std::unique_ptr<RedisClient>& redis);

  std::shared_ptr<const JobSpec> spec_;
  Options options_;
  std::function<void()> on_change_;
  std::vector<std::size_t> to_read_;  // indices of witness partitions, ascending

  mutable std::mutex mutex_;
  std::size_t next_ = 0;       // to_read_[next_] is the next to start
  std::size_t in_flight_ = 0;  // reads started and not ended
  std::size_t running_ = 0;    // reader threads not yet returned
  bool stopped_ = false;
  std::vector<std::optional<WitnessRead>> results_;  // by partition
  std::string redis_error_;
  std::vector<std::thread> threads_;
};

}  // namespace zkfarm
