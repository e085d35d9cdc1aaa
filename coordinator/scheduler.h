// scheduler.h -- which partition goes to which worker, and what a failure
// means: the coordinator's decisions, with no Redis and no ZeroMQ in it.
//
// The scheduler holds the running jobs (their partitions: pending, assigned,
// verifying, proved), the workers' scheduling view (curves, resident
// circuits, credits, draining, quarantined), the tasks in flight and the
// workers' fault counts. Everything it decides that must leave the process
// (a task or a cancel to send, a proof to store, a job to finish, a fault to
// record) it hands to its SchedulerEffects; the coordinator implements them
// with Redis and the router link, the unit tests record them.
//
// Scheduling: each partition is a task. Workers grant credits; a task goes
// to a worker with a free credit that supports the curve, preferring one
// that holds the circuit resident (affinity) and avoiding workers that
// already failed this partition. Partitions are served in (priority,
// deadline, round, job arrival, partition) order: strict priority; within a
// priority earliest deadline first (none = last); then round-robin between
// jobs: a job arriving in scheduling round R has its k-th partition due in
// round R + k, so jobs of one priority share the workers partition by
// partition and none starves behind a bigger or older one.
//
// Tenants and fair share. Every job belongs to a tenant (ScheduledJob::
// tenant; "" is the default tenant, the only one of a farm without
// tenants). set_tenants() gives each tenant a weight and a number of
// reserved workers (TenantPolicy; a tenant it does not name has weight
// kDefaultTenantWeight and none reserved). Whenever a worker has a free
// credit, the partition it gets is chosen so:
//  1. Critical partitions first, of every tenant, in the order above
//     (deadline, round, arrival).
//  2. Else a tenant with pending work is picked, and it gets its first
//     partition, in the order above, that a free worker can take. Inside a
//     tenant the order is exactly the farm's order above: priority,
//     deadline, then round-robin between its jobs (rounds are counted per
//     tenant), the older job first within a round. The tenant picked:
//     a. while a tenant has fewer tasks in flight taken under its
//        reservation than its reserved_workers: such a tenant (the one
//        using the smallest fraction of its reservation, then the lowest
//        virtual time); that task is taken under its reservation. Except
//        aging: if a tenant of weight > 0 with work has not been served
//        for starvation_limit (since its last task, or since its work
//        arrived), the one waiting longest gets the slot instead;
//     b. else the tenant of weight > 0 with the lowest virtual time (ties:
//        fewer tasks in flight, then the name);
//     c. else (only tenants of weight 0 have work) the one of them with the
//        lowest virtual time: weight 0 is "what is left over".
// A reserved worker is a task slot (a worker of one slot, as GPUs are, is
// one worker). Reservations keep no worker idle (a tenant without work
// leaves its slots to the others) and preempt no running task: they take
// the next slots that free.
//
// Virtual time: the worker time a tenant's tasks took (each task held from
// its dispatch to its result, error, timeout or loss), divided by the
// tenant's weight. A task is charged in two parts, so that a tenant's
// virtual time never decreases: at dispatch the fastest task measured for
// its circuit (a lower bound of what it will take; kUnmeasuredTaskCharge
// before one is measured, at least kMinTaskCharge), the rest when it ends.
// Tasks taken under a reservation (2a) are charged to the reservation and
// not to virtual time, so what remains beyond the reservations is divided
// by weight. Critical tasks are charged to virtual time: they go first,
// they are not free. A tenant whose work arrives after it had none starts
// at the farm's current virtual time (that of the last tenant picked in
// 2b), not below: idle time earns no credit. Since virtual times only
// grow, that is at or below every tenant with work, so its first partition
// goes to the next free slot (unless critical work, a reservation or a
// starved tenant comes first). Over a run in which tenants keep work
// queued, each one's share of the worker time beyond the reservations
// tends to its weight over the sum of the weights, whatever its tasks'
// durations (scheduler_test: FairShare...).
//
// No starvation: each pick in 2b raises the picked tenant's virtual time by
// at least kMinTaskCharge / weight, so a tenant of weight > 0 with work that
// a worker can take is picked after finitely many picks of others; picks
// in 2a (reservations adding up to every slot) are bounded by aging: such a
// tenant waits at most starvation_limit plus one slot's freeing. Critical
// work is above all this: a tenant whose critical jobs fill the farm delays
// every other (intake's max-active-partitions quota bounds it). Weight 0
// may wait for ever while others have work, by definition.
// With a single tenant (or none), every pick is that tenant and the order
// is exactly the farm's order above.
//
// Who a worker is: under CURVE its key (an allowlisted key is one worker
// identity, whatever worker ids it says hello with), else its worker id.
// Faults, avoid sets, claims and the "two different workers" rules all
// count identities, so one key with many ids is still one worker.
//
// Failures: a dead worker's tasks go back to pending without counting as an
// attempt, and its late results are ignored (unknown task id). An invalid
// proof counts a fault against the worker (quarantine after
// quarantine_after faults) and retries the partition elsewhere; invalid
// proofs from two different workers mean the witness is at fault: the job
// fails as "unsatisfied" and the workers' faults are refunded. Errors a
// worker reports are either its own (retry elsewhere, up to max_attempts)
// or claims that the input is bad (the ErrorCode table in
// schema/error_code.h: claims_bad_input, retried_elsewhere). One kind of
// error (a code, or a session lost while holding tasks) repeated by one
// identity within kRepeatedErrorWindow costs a fault each time after the
// first, so a worker that fails every task it is given ends quarantined.
//
// Witness failures are nobody's fault: a worker that reports the witness
// unavailable, or is still fetching it after the witness timeout, counts an
// attempt but no fault, and the partition goes to
// another identity; the second identity to fail it fails the job as
// witnessUnavailable (kWitnessFailuresToFailJob).
//
// Claims that the input is bad: one worker's word does not fail a job (a
// rogue could fail any job). The partition goes back to pending, without
// counting an attempt, and is sent to a second worker that is distinct from
// every claimant: another worker id and, under CURVE, another key (the
// hostname in Hello is the worker's own word and proves nothing, so it is
// not used). If that worker claims the input is bad too, the job fails with
// its code and message; if it proves the partition and the proof verifies,
// each claimant gets a fault (its claim was false). If no distinct capable
// worker is connected at all, nobody can check the claim and the job fails
// with it, as before (a farm of one).
//
// Task timeout: fixed (SchedulerConfig::task_timeout), off, or by default
// derived per circuit from the measured proving time of its verified tasks
// (constants.h: kTaskTimeoutMultiplier x the slowest, at least the floor;
// kTaskTimeoutBeforeMeasurement until one is measured). It runs from the
// worker's report that the task's witness is ready (TaskProgress, from
// on_witness_ready or on_proving): a task held longer from there is
// cancelled, counts a fault and an attempt, and is retried elsewhere; only
// the time from its proof's start is measured. The time before (fetching,
// parsing, generating the witness, from on_witness_started) is bounded by
// witness_timeout instead: a witness failure, never a fault. A task the
// worker has not begun at all after witness_timeout (stuck behind another)
// goes back to pending, without an attempt or a fault, avoiding that worker. A session replaced by a
// Hello of the same process (same session id) hands its tasks to the new one
// with their clocks. A worker's credits never exceed what it said its device
// holds (Hello maxTasks; its first grant when it did not say), and never the
// coordinator's max_tasks_per_worker.
//
// Threading: none of its own; one thread (the coordinator's scheduler
// thread) calls everything. Effects are called synchronously from inside
// the calls and must not call back into the scheduler.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "cluster/job_result.h"
#include "cluster/keys.h"
#include "coordinator/constants.h"
#include "formats/curve_id.h"
#include "monitoring/metrics/metrics.h"
#include "schema/error_code.h"
#include "schema/job.h"

namespace zkfarm {

struct PreparedJob;  // coordinator/prepared_job.h: opaque to the scheduler

// A tenant's weight when no policy names it: every tenant alike gets an
// equal share, as one tenant of a farm without tenants gets all of it.
inline constexpr double kDefaultTenantWeight = 1.0;
// What a task is charged at dispatch before any task of its circuit was
// measured (file comment, "virtual time"): below any partition the
// benchmarks measured (the smallest take about a second), so the charge
// stays a lower bound; its only use is spreading a burst of free slots
// between tenants before the first result.
inline constexpr double kUnmeasuredTaskCharge = 0.1;  // seconds
// The least a dispatch charges: keeps every pick's charge above zero (the
// no-starvation argument).
inline constexpr double kMinTaskCharge = 0.001;  // seconds
// How long a tenant of weight > 0 with work may go unserved before it
// takes the next slot ahead of the reservations (aging). Far longer than a
// partition (seconds to a few minutes on the benchmarks' circuits), so
// only reservations that hold every slot ever trigger it, and the weights
// are not disturbed.
inline constexpr std::chrono::milliseconds kDefaultStarvationLimit{300'000};

// One tenant's share of the workers (issue 27: weight, reserved workers).
struct TenantPolicy {
  double weight = kDefaultTenantWeight;  // >= 0; 0: only what others leave
  std::uint32_t reserved_workers = 0;    // task slots it gets first while it has work
};

// The fair-share policy: every tenant's weight and reservation.
struct FairSharePolicy {
  std::map<std::string, TenantPolicy> tenants;  // by tenant name ("" the default tenant)
  // Aging (file comment, 2a); 0: none.
  std::chrono::milliseconds starvation_limit = kDefaultStarvationLimit;
};

struct SchedulerConfig {
  std::uint32_t max_attempts = coordinator::kDefaultMaxAttempts;
  std::uint32_t quarantine_after = coordinator::kDefaultQuarantineAfter;
  // nullopt: derived from measured task times (see the file comment);
  // 0: no timeout; else this fixed timeout.
  std::optional<std::chrono::milliseconds> task_timeout;
  std::chrono::milliseconds task_timeout_floor = coordinator::kDefaultTaskTimeoutFloor;
  // Longest a task may be held before its Proving message; 0: no limit.
  std::chrono::milliseconds witness_timeout = coordinator::kDefaultWitnessTimeout;
  // Most tasks one worker holds at once, whatever it says its device holds.
  std::uint32_t max_tasks_per_worker = coordinator::kDefaultMaxTasksPerWorker;
  // The clock of task times and fair share; empty: steady_clock::now (the
  // unit tests simulate hours of farm time with their own).
  std::function<std::chrono::steady_clock::time_point()> clock;
};

// What the scheduler needs to know of a job: the one JobSpec (shared with
// the prepared job, not copied field by field) and what intake learned of it.
struct ScheduledJob {
  std::shared_ptr<const JobSpec> spec;                // never null: id, circuit, priority, deadline, partitions
  CurveId curve = CurveId::kBn254;                    // the circuit's
  double submitted_at = 0;                            // unix seconds (job latency)
  std::map<std::uint32_t, PartitionResult> proved;    // resumed: verified before a restart
  std::shared_ptr<const PreparedJob> prepared;        // handed back to the effects untouched
  std::string tenant;                                 // whose job: the queue intake took it from; "" the default tenant

  const std::string& id() const { return spec->id; }
};

// What the scheduler needs to know of a worker (from its Hello).
struct WorkerOffer {
  std::string worker_id;
  std::set<CurveId> curves;
  std::set<std::string> loaded;  // resident circuit ids
  std::uint32_t credits = 0;
  std::uint32_t max_tasks = 0;   // what its device holds at once; 0: not said
  std::string curve_key;         // its CURVE public key; "" without CURVE
};

// A task to send: the job's partition to the worker at peer.
struct TaskOrder {
  std::uint64_t task_id = 0;
  std::string peer, worker_id;
  const ScheduledJob* job = nullptr;
  std::uint32_t partition = 0;
  std::uint32_t attempt = 0;  // failed attempts so far
};

// How a job ended.
struct JobEnd {
  std::string state;                 // kStateDone | kStateFailed | kStateCancelled
  std::optional<ErrorCode> code;  // unless done
  std::string message;               // unless done
  std::optional<JobResult> result;   // when done
};

class SchedulerEffects {
 public:
  virtual ~SchedulerEffects() = default;
  virtual void send_task(const TaskOrder& order) = 0;
  virtual void send_cancel(const std::string& peer, std::uint64_t task_id, const std::string& job_id) = 0;
  virtual void job_started(const ScheduledJob& job) = 0;
  virtual void partition_proved(const ScheduledJob& job, const PartitionResult& result) = 0;
  // A failed attempt at one of the job's partitions (job:<id> "attempts").
  virtual void attempt_failed(const ScheduledJob& job, std::uint32_t partition) = 0;
  // The job is terminal; the scheduler forgot it before this call.
  virtual void job_finished(const ScheduledJob& job, const JobEnd& end) = 0;
  // delta: +1 a fault, -1 a refunded one.
  virtual void faults_changed(const std::string& worker_id, int delta) = 0;
  // The worker's identity reached quarantine_after faults: called for each
  // worker id of it known here; curve_key is its key ("" without CURVE), so
  // that the key's other ids are refused too.
  virtual void worker_quarantined(const std::string& worker_id, const std::string& curve_key) = 0;
  // The number of the job's input partitions that workers hold waiting for
  // (or in) witness generation changed (job:<id> "waiting_for_witness").
  virtual void witness_pending_changed(const ScheduledJob& job, std::uint32_t count) {}
};

// A result taken off a task: what the verifier needs, and what on_verified
// takes back.
struct AcceptedResult {
  std::string job_id, worker_id, identity;
  std::uint32_t partition = 0;
  std::uint32_t attempt = 0;
  std::shared_ptr<const PreparedJob> prepared;
  double wait_seconds = 0, worker_seconds = 0;  // pending -> dispatched -> result received
  // Proving message -> result received (the auto timeout's measure); nullopt
  // when the worker sent no Proving message for the task.
  std::optional<double> proving_seconds;
  std::chrono::steady_clock::time_point received{};
};

// What the scheduler holds, for a status page (copied out; cheap: no proofs).
struct SchedulerSnapshot {
  struct Job {
    std::string id, circuit, tenant;
    Priority priority = Priority::kNormal;
    std::optional<double> deadline_unix;
    std::uint32_t partitions = 0, pending = 0, assigned = 0, verifying = 0, proved = 0;
  };
  struct Worker {
    std::string peer, worker_id;
    std::uint32_t credits = 0, tasks = 0, faults = 0;
    bool draining = false, quarantined = false;
  };
  // Every tenant the scheduler has seen (with its policy) and its usage.
  struct Tenant {
    std::string name;
    TenantPolicy policy;
    std::uint32_t pending = 0, in_flight = 0, reserved_in_flight = 0;  // partitions (critical ones not pending here)
    std::uint64_t active_partitions = 0;  // of its running jobs, not yet proved (admission.h's figure)
    double worker_seconds = 0;    // worker time charged so far, reservations and critical included
    double reserved_seconds = 0;  // of which under its reservation
    double virtual_time = 0;      // file comment
  };
  std::vector<Job> jobs;
  std::vector<Worker> workers;
  std::vector<Tenant> tenants;
  std::size_t tasks_in_flight = 0;
};

class Scheduler {
 public:
  using Clock = std::chrono::steady_clock;

  Scheduler(SchedulerConfig config, SchedulerEffects& effects, metrics::CoordinatorMetrics& metrics);

  // --- Jobs ---
  // Starts a job (its unproved partitions become pending). Returns false,
  // doing nothing, when a job of that id already runs (a recovery pass saw
  // it again). A job whose partitions are all proved completes at once.
  bool add_job(ScheduledJob job);
  bool has_job(const std::string& id) const { return jobs_.count(id) > 0; }
  std::size_t job_count() const { return jobs_.size(); }
  // Ends a running job (cancels its tasks at the workers). Returns false if
  // it does not run here.
  bool end_job(const std::string& id, ErrorCode code, const std::string& message);
  // Fails every job whose deadline is before unix_now, and treats every task
  // held longer than the task timeout at `now` as a fault of its worker.
  void expire(double unix_now, Clock::time_point now);

  // The fair-share policy (file comment). Tenants it does not name (and the
  // default tenant unless named) get weight kDefaultTenantWeight and no
  // reservation; what a tenant has used so far is kept. Throws
  // std::invalid_argument, changing nothing, for a weight that is negative
  // or not finite (the message names the tenant).
  void set_tenants(FairSharePolicy policy);

  // --- Workers (by peer: the link's routing id) ---
  // A new session. The caller has dropped any older one of the worker first,
  // except `carry_from`: the session (peer) of the same process saying hello
  // again, whose tasks pass to the new one with their held-since and
  // proving-since clocks (nothing is requeued); "" for none.
  void add_worker(const std::string& peer, WorkerOffer offer, const std::string& carry_from = "");
  // The session ended: its tasks go back to pending without counting an
  // attempt (reason labels zkfarm_partitions_requeued_total: workerDead,
  // workerRestarted).
  void remove_worker(const std::string& peer, std::string_view reason);
  void grant_credits(const std::string& peer, std::uint32_t credits);
  // Takes back up to `credits` unused credits (Credit.withdraw); tasks
  // already sent stay with the worker.
  void withdraw_credits(const std::string& peer, std::uint32_t credits);
  void set_loaded(const std::string& peer, std::set<std::string> loaded);
  // A worker's heartbeat: the tasks it holds for witness generation.
  void set_witness_pending(const std::string& peer, const std::set<std::uint64_t>& task_ids);
  void set_draining(const std::string& peer);
  bool has_worker(const std::string& peer) const { return workers_.count(peer) > 0; }
  // Credits, tasks and resident circuits of a session (for its Redis record).
  struct WorkerView {
    std::uint32_t credits = 0;
    std::size_t tasks = 0;
    const std::set<std::string>* loaded = nullptr;
    bool quarantined = false;
  };
  std::optional<WorkerView> worker(const std::string& peer) const;

  // --- Tasks ---
  // Hands pending partitions to workers with free credits (send_task), in
  // the order of the file comment.
  void dispatch();
  // A worker's result for task_id: nullopt if the task is unknown or not
  // that peer's (late, cancelled, forged), else the partition now waits for
  // verification.
  std::optional<AcceptedResult> on_result(const std::string& peer, std::uint64_t task_id);
  // The verifier's verdict on an accepted result. `result` is the partition's
  // entry when valid (ignored otherwise).
  void on_verified(const AcceptedResult& accepted, bool valid, const std::string& reason,
                   PartitionResult result);
  // The worker's progress with task_id (TaskProgress): its witness fetch
  // (or generation) begins (the witness timeout runs from now), its witness
  // is ready and it waits for the device (the task timeout runs from now),
  // its proof begins (measured from now; the task timeout runs from now if
  // no ready came first). Each ignored unless it is that peer's task, and
  // after the first of its kind.
  void on_witness_started(const std::string& peer, std::uint64_t task_id);
  void on_witness_ready(const std::string& peer, std::uint64_t task_id);
  void on_proving(const std::string& peer, std::uint64_t task_id);
  // A worker's TaskError for task_id (ignored unless it is that peer's task).
  void on_task_error(const std::string& peer, std::uint64_t task_id, ErrorCode code,
                     const std::string& message);

  // Refreshes the gauges derived from this state (active jobs, pending and
  // in-flight partitions).
  void update_gauges();
  SchedulerSnapshot snapshot() const;
  // The tenant's partitions pending, in flight or being verified, of its
  // jobs running here (coordinator/admission.h TenantUsage::
  // active_partitions); 0 for a tenant never seen.
  std::uint64_t active_partitions(const std::string& tenant) const;
  // Faults of an identity (identity()).
  std::uint32_t faults(const std::string& identity) const;
  // The identity of a worker: "key:<curve key>" under CURVE, else its id.
  static std::string identity(const std::string& worker_id, const std::string& curve_key);
  // The task timeout now in force for a circuit (nullopt: none).
  std::optional<std::chrono::milliseconds> task_timeout(const std::string& circuit) const;

 private:
  enum class Phase { kPending, kAssigned, kVerifying, kProved };
  // priority, deadline (unix s; +inf when none), round, job seq, partition
  using PendingKey = std::tuple<int, double, std::uint64_t, std::uint64_t, std::uint32_t>;
  // A worker's claim that the partition's input is bad.
  struct Claim {
    ErrorCode code = ErrorCode::kUnknown;
    std::string message, worker_id;
  };
  struct Partition {
    Phase phase = Phase::kPending;
    std::map<std::string, Claim> claims;  // by identity: unconfirmed bad-input claims
    std::uint32_t attempts = 0;        // failed attempts (not dead-worker requeues)
    std::set<std::string> avoid;       // identities that failed it
    std::map<std::string, std::string> invalid_by;      // identity -> worker id: proof invalid
    std::map<std::string, std::string> witness_failed;  // identity -> worker id: could not read the witness
    std::uint64_t task_id = 0;
    std::optional<PartitionResult> result;  // once proved
    Clock::time_point pending_since{};      // when it last became pending
    PendingKey pending_key{};               // while pending
  };
  // A tenant's queue and usage (file comment, "tenants and fair share").
  // Never erased (tenants are registered: few), so Job and Task point here.
  struct Tenant {
    std::string name;
    TenantPolicy policy;
    std::set<PendingKey> pending;                   // its pending partitions but the critical ones
    std::array<std::uint64_t, 4> current_round{};   // per priority: round of its last dispatch
    double virtual_time = 0;                        // charged seconds / weight (2b, 2c)
    double worker_seconds = 0, reserved_seconds = 0;
    std::uint32_t in_flight = 0, reserved_in_flight = 0;
    std::uint64_t active_partitions = 0;            // its running jobs' partitions not yet proved
    Clock::time_point served_at{};                  // its last task, or when its work arrived (aging)
    std::set<PendingKey>::iterator cursor;          // dispatch(): the next partition to try
  };
  struct Job {
    ScheduledJob scheduled;
    const JobSpec& spec() const { return *scheduled.spec; }
    Tenant* tenant = nullptr;  // never null once added
    std::uint64_t seq = 0;
    std::vector<Partition> partitions;
    std::size_t proved = 0;
    double started = 0;  // unix seconds
  };
  struct Worker {
    std::string peer, worker_id, identity;
    std::set<CurveId> curves;
    std::set<std::string> loaded;
    std::uint32_t credits = 0;
    std::uint32_t max_tasks = 0;  // credits + tasks never exceed this
    std::string curve_key;
    std::set<std::uint64_t> tasks;
    bool draining = false, quarantined = false;
  };
  struct Task {
    std::string job_id;
    std::uint32_t partition = 0;
    std::string peer, worker_id, identity;
    Clock::time_point sent;                         // held since
    std::optional<Clock::time_point> witness;       // its witness fetch began
    std::optional<Clock::time_point> ready;         // its witness was ready (or its proof began)
    std::optional<Clock::time_point> proving;       // its proof began
    bool witness_pending = false;  // the worker's last heartbeat listed it
    Tenant* tenant = nullptr;      // charged for it
    double charged = 0;            // seconds charged at dispatch
    bool reserved = false;         // taken under the tenant's reservation
  };
  // How dispatch() picked a tenant (file comment, 2a-2c).
  struct Pick {
    Tenant* tenant = nullptr;
    bool reserved = false;  // 2a: under its reservation
    bool weighted = false;  // 2b: moves the farm's virtual time
  };
  enum class Placement { kGone, kPlaced, kSkipped };

  // Adds a partition to pending_ and starts its dispatch-wait clock; it is
  // due `rounds_ahead` scheduling rounds after the current one of its
  // priority (round-robin between jobs, see the file comment).
  void make_pending(Job& job, std::uint32_t partition, std::uint64_t rounds_ahead = 0);
  // Puts an assigned partition back to pending without counting an attempt.
  void requeue(const std::string& job_id, std::uint32_t partition, std::string_view reason);
  // A failed attempt: retried elsewhere, or the job fails after max_attempts.
  // (`identity` is avoided by the retry.)
  void partition_failed(Job& job, std::uint32_t partition, const std::string& identity, ErrorCode code,
                        const std::string& message);
  // A fault of `identity` (reported by its worker id); quarantines every
  // session of the identity at quarantine_after.
  void count_fault(const std::string& identity, const std::string& worker_id, const std::string& why);
  // One failure of kind `kind` by an identity: a fault when the identity
  // had one of that kind within kRepeatedErrorWindow.
  void note_failure(const std::string& identity, const std::string& worker_id, std::string_view kind,
                    const std::string& what);
  // The task's worker could not read the partition's witness (an error, or
  // the witness timeout): an attempt, no fault; the job fails as
  // witnessUnavailable once kWitnessFailuresToFailJob identities agree.
  void witness_failed(Job& job, const Task& task, const std::string& message);
  // True if w can check the claims of p: its identity made none of them.
  static bool can_check_claims(const Partition& p, const Worker& w);
  // Records a bad-input claim; fails the job if it confirms an earlier one.
  void on_bad_input_claim(Job& job, std::uint32_t partition, const Task& task, ErrorCode code,
                          const std::string& message);
  void refund_fault(const std::string& identity, const std::string& worker_id);
  void fail_job(const std::string& job_id, ErrorCode code, const std::string& message);
  void complete_job(const std::string& job_id);
  // Cancels the job's tasks at their workers and forgets them.
  void release_tasks(Job& job);
  // Free credits of the workers that may take tasks.
  std::uint64_t free_credits() const;
  // Tries to send the pending partition `key` to the best worker (the file
  // comment's affinity, avoid and claims rules), charging `pick`'s tenant
  // (or the job's own, for a critical partition). kGone: its job has ended;
  // kSkipped: no worker can take it now (a claim nobody can check adds the
  // job to `unverifiable`). The caller erases the key unless kSkipped.
  Placement place(const PendingKey& key, const Pick& pick, std::vector<std::string>& unverifiable);
  // The tenant that gets the next free slot among `candidates` (those whose
  // cursor is not at the end), or a Pick without one.
  Pick pick_tenant(const std::vector<Tenant*>& candidates, Clock::time_point now) const;
  // The tenant of that name, created with its policy on first use.
  Tenant& tenant(const std::string& name);
  // The pending set a partition's key lives in: critical_pending_ or the
  // job's tenant's.
  std::set<PendingKey>& pending_set(const Job& job, const PendingKey& key);
  // What a task of `circuit` is charged at dispatch (file comment).
  double dispatch_charge(const std::string& circuit) const;
  // Charges the rest of a task's worker time to its tenant; called for
  // every task once, as it leaves tasks_.
  void settle(const Task& task);
  Clock::time_point now() const { return config_.clock ? config_.clock() : Clock::now(); }

  SchedulerConfig config_;
  SchedulerEffects& effects_;
  metrics::CoordinatorMetrics& metrics_;
  std::map<std::string, Job> jobs_;
  std::set<PendingKey> critical_pending_;         // critical partitions of every tenant
  std::uint64_t critical_round_ = 0;              // round of the last critical dispatch
  FairSharePolicy policy_;
  std::map<std::string, Tenant> tenants_;         // by name
  double virtual_now_ = 0;                        // the farm's virtual time (file comment)
  std::map<std::string, double> fastest_task_;    // by circuit: seconds, dispatch to result (dispatch_charge)
  std::map<std::uint64_t, std::string> seq_to_job_;
  std::map<std::string, Worker> workers_;  // by peer
  std::map<std::uint64_t, Task> tasks_;
  std::map<std::string, std::uint32_t> witness_pending_reported_;  // job id -> last count written
  std::map<std::string, std::uint32_t> faults_;  // by identity
  // (identity, kind of failure) -> when it last happened (note_failure)
  std::map<std::pair<std::string, std::string>, Clock::time_point> last_failure_;
  std::map<std::string, double> slowest_task_;   // by circuit: seconds, dispatch to verified result
  std::uint64_t next_task_id_ = 1, next_seq_ = 1;
};

}  // namespace zkfarm
