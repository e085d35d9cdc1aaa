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
// naming the partition and the problem. It also samples the queue depths.
// With --takeover-after-ms it takes no job before the LeaseKeeper (its own
// thread: lease_keeper.h) holds this coordinator's lease, and runs a
// recovery pass after each takeover.
//
// Never waiting on a client: each job's witnesses are read on threads of
// its own (WitnessReads, witness_reads.h) while this thread goes on taking
// and finishing other jobs; a job whose witnesses are not all read within
// --intake-deadline-ms fails witnessUnavailable, naming the first partition
// not read. At most kJobsReadingAtOnce jobs are read at once (and
// kCriticalJobsReadingBeyond critical ones beyond them), counting those
// that failed their deadline until their reads in flight end.
//
// Tenants (cluster/tenants.h): the queues of every registered tenant are
// taken from too, round-robin by tenant within a priority (the default
// tenant's first); a tenant's job lives in its namespace, its processing
// entry names the tenant (split_processing_entry), and it reaches the
// scheduler as PreparedJob::tenant with the id scheduled_job_id. A tenant
// may write its own namespace, so an entry whose job keys it gave the wrong
// type (WRONGTYPE) goes to <p>rejected instead of stalling the intake.
//
// Admission: a job is taken from the queues only while fewer than
// max_active_jobs are held or being read and their estimated bytes
// (estimate_held_bytes, the same for a job being read) are below
// memory_budget_bytes.
//
// Quotas (coordinator/admission.h, which says where each figure comes
// from): a tenant's job is asked about with admit_job before its claim,
// with its tenant's record's quotas. A hold puts it back at the tail of its
// queue and the intake takes none of that tenant's jobs until the
// tenant's active partitions (TenantLoad, published by the scheduler
// thread) leave it room; the other tenants' queues are taken from
// meanwhile. A refusal (max-job-bytes, more partitions than
// max-active-partitions, or beyond max-queued-jobs: every poll the intake
// counts each tenant's queues and takes the newest beyond the limit off
// them) fails the job quotaExceeded after its claim. A job of the
// processing list (recovery) is never held: it is this coordinator's
// already.
//
// Slots per tenant (intake_slot_caps, admission.h): of the max_active_jobs
// slots, when tenants are registered,
//  - one is kept free for each idle tenant (holding no job here and with
//    none queued), at most max_active_jobs / kIdleTenantSlotsDivisor in
//    all, so a tenant whose first job comes while another's burst fills
//    the intake is taken at once;
//  - the rest are divided between the busy tenants by weight (the default
//    tenant's weight is TenantRecord::kDefaultWeight), water-filled: a busy
//    tenant with nothing queued that holds less than its share keeps what
//    it holds, and the idle part of its share goes to the others;
//  - a tenant with jobs queued is taken from while it holds fewer than its
//    share rounded down (at least one); one holding more (it took them
//    while others were idle) keeps them, and takes again once its jobs end
//    below its share. Jobs are not taken back: the share is restored as
//    jobs end.
// A single busy tenant gets every slot but those kept for the idle ones;
// a farm without tenants (the default tenant alone) every slot, as before.
// With tenants A (200 queued) and B idle, A takes 62 of 64 slots (two kept
// for B and the idle default tenant); B's job takes one at the next poll;
// while B has more queued, A and B (weight 1 each) have shares of 31 (one
// slot kept for the default tenant): B's jobs take the slots A's free, and
// A takes again once it holds fewer than 31.
//
// Hostile entries: each entry's intake is counted in <p>intake:<id> before
// it starts (once per process) and forgotten when it ends, so an entry that
// crashed kIntakeCrashLimit coordinator processes is set aside (the list
// <p>setaside; its job fails "setAside") instead of crashing every restart.
// An entry naming a job id that belongs to another entry (a duplicate, or
// malformed JSON with that id) goes to <p>rejected as duplicateId and the
// existing job is not touched.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cluster/artifacts.h"
#include "cluster/job_store.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "cluster/mailbox.h"
#include "cluster/witness_access.h"
#include "coordinator/admission.h"
#include "coordinator/config.h"
#include "coordinator/lease_keeper.h"
#include "coordinator/prepared_job.h"
#include "coordinator/witness_reads.h"
#include "monitoring/metrics/metrics.h"
#include "schema/error_code.h"

namespace zkfarm {

class Intake {
 public:
  // active_jobs, held_bytes: jobs delivered and not yet ended and their
  // PreparedJob::held_bytes (added here for each delivered job; the
  // scheduler's side takes them off); intake pauses at
  // config.max_active_jobs or config.memory_budget_bytes. deliver: called on
  // the intake thread, must only enqueue. lease: the lease thread's keeper
  // with --takeover-after-ms, else null.
  // load: each tenant's jobs and partitions here, shared with the
  // scheduler thread (admission.h); the intake counts the jobs it delivers.
  Intake(const CoordinatorConfig& config, std::shared_ptr<metrics::CoordinatorMetrics> metrics,
         std::atomic<std::uint32_t>& active_jobs, std::atomic<std::uint64_t>& held_bytes, TenantLoad& load,
         std::function<void(PreparedJob)> deliver, LeaseKeeper* lease);
  // Stops the reads in flight and waits for them (each ends by the
  // deadline of its job).
  ~Intake();

  // The thread body: runs until `stopping`.
  void run(const std::atomic<bool>& stopping);

 private:
  using Clock = std::chrono::steady_clock;
  // A claimed job whose witnesses are being read.
  struct Reading {
    std::string raw, digest;  // the processing-list entry and its digest (intake:<id>)
    std::string tenant;       // "" for the default tenant
    KeyLayout keys;           // the layout of its tenant's namespace
    std::shared_ptr<const JobSpec> spec;
    CircuitInfo circuit;
    bool resume = false;  // claimed as kResume: its proved partitions are kept
    double submitted_at = 0;
    Clock::time_point deadline;
    std::uint64_t held_bytes = 0;  // counted against the budget while it is read
    std::unique_ptr<WitnessReads> reads;
  };

  // Counts the entry's intake attempt (set aside past the limit), then
  // check_raw(); forgets the count when the job is delivered or failed.
  // may_hold: a max-active-partitions hold may put it back in its queue
  // (false for the processing list's jobs, which are ours already).
  void handle_raw(RedisClient& redis, JobStore& store, const std::string& raw, bool may_hold = true);
  // Takes one raw queue entry through its quotas, claim and the checks that
  // read no witness; holds it (back to its queue), fails it, or starts
  // reading its witnesses (reading_). Returns true when the entry's intake
  // ended here (end_intake is due).
  bool check_raw(RedisClient& redis, JobStore& store, const std::string& raw, const std::string& digest,
                 bool may_hold);
  // Finishes every job whose reads settled or whose deadline passed
  // (delivers or fails it); drops the reads of failed deadlines that ended.
  void collect_reads(JobStore& store);
  // check_job over a settled (or expired) job's reads: delivers or fails
  // it. Throws RedisError (also for one a read met): the entry stays in the
  // processing list for the next recovery pass.
  void finish_reading(JobStore& store, const Reading& job, const WitnessReads& reads);
  // Records a job's failure at intake (state, error, metrics).
  void fail_job(JobStore& store, const std::string& raw, const std::string& id, const std::string& circuit,
                const std::string& priority, ErrorCode code, const std::string& message);
  // Jobs being read, and deadline-failed ones whose reads still run.
  std::size_t reading_slots() const { return reading_.size() + expired_reads_.size(); }
  // Waits until a read ends or `timeout` passes.
  void wait_for_reads(std::chrono::milliseconds timeout);
  // Whether the held jobs leave room for another (logs when that changes).
  bool room_for_a_job();
  // The Redis queue lengths, per priority and tenant (zkfarm_queue_depth).
  void sample_queue_depth(RedisClient& redis);
  // Re-reads the registered tenants' records (names, quotas, weights) when
  // kTenantsRefresh has passed (and marks them registered in the metrics).
  void refresh_tenants(RedisClient& redis);
  // The registered tenants, re-read every kTenantsRefresh, rotated by one
  // at each take (round-robin by tenant within a priority).
  const std::vector<std::string>& tenants_in_turn(RedisClient& redis);
  // The tenants to take from now, in turn: those not held and below their
  // share of the slots; default_tenant says whether the default tenant's
  // queues are taken from too (file comment, "Slots per tenant").
  std::vector<std::string> tenants_to_take(RedisClient& redis, bool& default_tenant);
  // Counts every tenant's queued jobs (queued_) and fails those beyond its
  // max-queued-jobs (admission.h). A farm without tenants skips it.
  void count_tenant_queues(RedisClient& redis, JobStore& store);
  // How often the queues are counted: every poll, at most every
  // kQueueCountMinPeriod.
  std::chrono::milliseconds queue_count_period() const {
    return std::max(config_.intake_poll, coordinator::kQueueCountMinPeriod);
  }
  // Ends each tenant's hold whose verdict with the figures now is not a
  // hold (or whose quota went).
  void release_holds();
  // A tenant's partitions active here: TenantLoad's plus its jobs' being read.
  std::uint64_t active_partitions(const std::string& tenant) const;
  // A tenant's jobs held here: TenantLoad's plus those being read.
  std::uint32_t held_jobs(const std::string& tenant) const;

  const CoordinatorConfig& config_;
  std::shared_ptr<metrics::CoordinatorMetrics> metrics_;
  KeyLayout keys_;
  WitnessPolicy witness_policy_;  // which witnesses may be read (--witness-root, --prefix)
  std::atomic<std::uint32_t>& active_jobs_;
  std::atomic<std::uint64_t>& held_bytes_;
  TenantLoad& load_;
  std::function<void(PreparedJob)> deliver_;
  LeaseKeeper* lease_;
  std::set<std::string> counted_;  // entry digests whose attempt this process counted
  bool budget_full_ = false;       // for the log line when the budget fills and frees
  std::string abort_job_;          // --inject-fault abort-in-intake=<id> (tests)
  std::deque<std::string> recovering_;  // processing-list entries still to take in
  // Wakes the intake thread when a read ends (readers push, run() drains).
  std::shared_ptr<Mailbox<char>> read_ended_ = std::make_shared<Mailbox<char>>();
  std::vector<Reading> reading_;
  std::vector<std::unique_ptr<WitnessReads>> expired_reads_;
  std::vector<std::string> tenants_;  // registered tenants, in this take's turn
  std::map<std::string, TenantQuota> quotas_;  // the registered tenants' quotas, read with tenants_
  std::map<std::string, double> weights_;      // and their weights (the slots' shares)
  std::map<std::string, std::uint64_t> queued_;  // jobs queued per tenant ("" the default), at the last count
  Clock::time_point next_queue_count_{};
  // Per held tenant: what its held job asks for (released when it fits).
  std::map<std::string, JobDemand> held_;
  // Processing entries taken off a queue beyond max-queued-jobs, to be
  // refused: how many of the tenant's jobs were queued ahead of each.
  std::map<std::string, std::uint64_t> refusing_;
  std::size_t tenant_turn_ = 0;
  std::vector<std::string> depth_tenants_;  // tenants whose queue depth was last sampled
  Clock::time_point tenants_read_{};
};

// What holding a prepared job costs the coordinator, estimated from its
// sizes: the queue entry and the parsed spec (each at most the entry's
// size: inline witnesses decode to 3/4 of their base64), the public inputs,
// and kHeldBytesPerPartition of bookkeeping per partition.
std::uint64_t estimate_held_bytes(const PreparedJob& job);
// The same from the sizes alone (a job still being read is counted so).
std::uint64_t estimate_held_bytes(std::size_t entry_bytes, std::size_t partitions, std::size_t public_bytes);

}  // namespace zkfarm
