// constants.h -- every interval, cap and default of zkfarm-coordinator, each
// with the reason for its value. Flags (coordinator/main.cc) override the
// defaults; the rest are fixed.
#pragma once

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>

namespace zkfarm::coordinator {

using std::chrono::milliseconds;
using std::chrono::seconds;

// --- Defaults of flags (main.cc and CoordinatorConfig use these only) ---

// Heartbeats both ways. 1 s keeps the traffic negligible (one small frame per
// worker per second) and detects a dead worker within dead_after.
inline constexpr milliseconds kDefaultHeartbeatInterval{1000};
// Five missed heartbeats: a worker busy proving on a loaded host still
// answers within a second or two (its link thread never blocks on proving),
// so five seconds of silence is a dead or cut-off process, not a slow one.
inline constexpr milliseconds kDefaultDeadAfter{5000};
// How often the non-critical queues are polled while they are empty (the
// critical queue wakes the intake at once with BLMOVE; a queued backlog is
// taken job after job without waiting). Bounds the queue latency of a
// normal job on an idle farm at 20 ms, or at the server's tick where that is
// longer (a blocking command's timeout ends at the next one: Redis's default
// hz 10 makes it ~100 ms, deploy/redis.conf's hz 100 ~25 ms). A
// one-partition job of ~15 ms of proving, submit to done, median: 185 ms at
// 200 ms, 66 ms at 20 ms (hz 10); 131 and 50 ms with hz 100 (BENCHMARKS.md,
// "A small job's latency"). An idle coordinator pays one take script and
// one BLMOVE per poll: 100 Redis calls a second, the script 2 us of Redis's
// time without tenants and 92 us with a hundred (it tries each one's four
// queues): at most ~0.5% of a Redis core.
inline constexpr milliseconds kDefaultIntakePoll{20};
// The tenants' queue counts (admission's max-queued-jobs, the intake slots'
// shares) and the zkfarm_queue_depth gauge are refreshed every poll but at
// most this often: each is a pipeline of four LLENs per tenant, which need
// not follow a 20 ms poll.
inline constexpr milliseconds kQueueCountMinPeriod{200};
// Failed attempts per partition before the job fails: a second worker and a
// third get their chance, more only repeats a deterministic failure.
inline constexpr std::uint32_t kDefaultMaxAttempts = 3;
// Faults (invalid proofs, timeouts) before a worker is quarantined: one fault
// can be bad luck (a cosmic-ray flip, a kill mid-task), three in one session
// are a broken device.
inline constexpr std::uint32_t kDefaultQuarantineAfter = 3;
// Jobs held in memory at once; the rest wait in Redis, where any coordinator
// can take them.
inline constexpr std::uint32_t kDefaultMaxActiveJobs = 64;
// Estimated bytes of jobs held in memory at once (--memory-budget-mib): the
// intake takes no further job while the held jobs' estimate is at or above
// it, so the coordinator holds at most the budget plus one job. 4 GiB holds
// 64 jobs of 4096 partitions with 328 public inputs (2.9 GB estimated).
inline constexpr std::uint64_t kDefaultMemoryBudgetMib = 4096;
// Bookkeeping per held partition besides its public inputs (witness
// reference, scheduler state, pending-set node), for the estimate above;
// measured with bench/coordinator_memory.sh (BENCHMARKS.md).
inline constexpr std::uint64_t kHeldBytesPerPartition = 1024;
// How long the intake may spend reading one job's witnesses (the first
// bytes of each: header and public inputs) before the job fails
// witnessUnavailable (--intake-deadline-ms). The reads run on the job's own
// threads (kWitnessReadersPerJob), so this bounds what one slow witness
// server costs: one intake slot for this long, never other jobs' intake. A
// healthy object store or NFS server answers a 64 KiB read in well under a
// second; 30 s leaves room for curl's 10 s connect timeout and a slow TLS
// handshake, covers about 2,400 HTTP witnesses of 100 ms each (8 at a
// time), and keeps a stop (which waits for reads in flight: curl's timeout
// is the time left) under the 60 s stop timeouts of deploy/.
inline constexpr milliseconds kDefaultIntakeDeadline{30000};
// How long terminal jobs stay in Redis for `zkfarm status`/`result`: a week.
inline constexpr long kDefaultTerminalTtlSeconds = 7L * 24 * 3600;

// --- Scheduler ---

// The most tasks one worker may hold, whatever credits it grants or device
// it describes (--max-tasks-per-worker): the coordinator's policy, not the
// worker's claim. Real workers hold their slots plus their prefetch (2-9 on
// the hosts in BENCHMARKS.md); 16 leaves room for a larger host while one
// rogue that says it holds 1024 takes 16 partitions out of the pending set,
// not 1024.
inline constexpr std::uint32_t kDefaultMaxTasksPerWorker = 16;
// The largest value that flag accepts.
inline constexpr std::uint32_t kMaxCreditsPerWorker = 1024;
// Period of the scheduler's periodic work: cancels from Redis, deadlines,
// task timeouts, gauges. 100 ms makes a cancel or an expired deadline act
// within a tenth of a second at one SPOP per tick; dispatch itself is
// event-driven and does not wait for the tick.
inline constexpr milliseconds kTickInterval{100};
// Verified results (each a Redis round trip or two) stored between two looks
// at the workers' messages: 8 bounds a credit's wait by 8 stores (a few ms)
// while a burst of results still drains in few loop turns.
inline constexpr std::size_t kStoresPerTurn = 8;
// Cancel requests popped from Redis per tick (SPOP count): 640 per second
// is far above any real cancel rate and keeps one tick short.
inline constexpr std::size_t kCancelsPerTick = 64;
// Invalid proofs of one partition from this many different workers blame the
// witness, not the devices (the job fails as unsatisfied).
inline constexpr std::size_t kInvalidProofsToBlameWitness = 2;

// Task timeout (--task-timeout-s auto, the default): a task proving longer
// than kTaskTimeoutMultiplier x the slowest verified task of its circuit so
// far (the worker's Proving message to its result; the circuit load and the
// witness fetch come before it), but at least
// kDefaultTaskTimeoutFloor (--task-timeout-floor-s), is a fault of its
// worker and is retried elsewhere. Before any task of the circuit has been
// measured the bound is kTaskTimeoutBeforeMeasurement. Why these values: the
// worker's own time varies little between partitions of one circuit (the
// same sizes every time; BENCHMARKS.md), so 4x the slowest seen leaves room
// for a loaded host while still catching a worker
// that holds tasks forever; the 60 s floor keeps small circuits (tens of
// milliseconds) from timing out on a hiccup; 30 minutes before a
// measurement covers the largest circuit on the slowest (CPU) backend.
inline constexpr int kTaskTimeoutMultiplier = 4;
inline constexpr seconds kDefaultTaskTimeoutFloor{60};
inline constexpr seconds kTaskTimeoutBeforeMeasurement{30 * 60};

// The task timeout runs from the worker's Proving message (the witness is
// fetched, parsed and checked, an input's generated, and the proof begins);
// only that time is a device's and only that time is measured for the auto
// timeout. Before it, a task held longer than kDefaultWitnessTimeout
// (--witness-timeout-s) is taken back as the witness's failure, never as a
// fault: a submitter's slow server must not quarantine the workers that
// fetch from it. 10 minutes reads a 64 GiB witness at 1 Gbit/s and covers a
// witness generator's run on the largest circuits in BENCHMARKS.md.
inline constexpr seconds kDefaultWitnessTimeout{10 * 60};
// A witness that timed out or failed to be read on this many different
// workers (CURVE keys) fails its job as witnessUnavailable: two unrelated
// workers agree that the reference is the problem, and no third is tied up.
inline constexpr std::size_t kWitnessFailuresToFailJob = 2;
// The same kind of failure (one error code, or a session lost while it held
// tasks) reported twice within this window by one worker (one CURVE key)
// costs a fault, and every further one too: once is bad luck, a repeat is
// the device (or a rogue that would otherwise fail every job it is given for
// free). Witness failures are exempt (kWitnessFailuresToFailJob decides).
inline constexpr seconds kRepeatedErrorWindow{10 * 60};

// --- Worker sessions ---

// A worker's Redis record (<prefix>worker:<id>, read by `zkfarm workers`) is
// rewritten at most this often on heartbeats: fresh enough for a human,
// one MULTI per worker every two seconds, the records due sent together
// once per tick (one round trip for all of them: 1000 workers are ~50
// records per tick, not 500 round trips a second on the scheduler thread).
inline constexpr seconds kWorkerRecordRefresh{2};
// Resident circuit ids a Hello or heartbeat may list: a device holds a few
// circuits resident (its memory), so 64 is far more than any holds; ids past
// it are ignored (and logged), so a peer cannot make the coordinator or
// Redis hold an unbounded list. Only ids of registered circuits are taken.
inline constexpr std::size_t kMaxLoadedCircuits = 64;
// Witness-pending task ids a heartbeat may list: a worker holds at most
// kMaxCreditsPerWorker tasks, so more are not read.
inline constexpr std::size_t kMaxWitnessPendingIds = 1024;
// The record expires after max(this, 3 x dead_after) without a refresh, so a
// coordinator that dies does not leave workers listed as alive forever.
inline constexpr seconds kWorkerRecordMinTtl{60};
inline constexpr int kWorkerRecordTtlDeadAfters = 3;
// Worker ids name Redis keys and metric labels: bounded.
inline constexpr std::size_t kMaxWorkerIdBytes = 200;
// A worker's TaskError message is logged and may become a job's error: cut
// at 1 KiB (the longest real one, a CUDA error with its call site, is under
// 300 bytes).
inline constexpr std::size_t kMaxWorkerMessageBytes = 1024;

// Warnings about one peer (malformed frames, refused hellos, ...): the first
// kPeerWarningBurst of each kPeerWarningWindow are logged, the rest counted
// and reported in one line when the window ends; at most kPeerWarningSources
// peers are tracked apart (the rest share one count). A peer sending garbage
// thus costs at most 6 lines per 10 s instead of one per frame.
inline constexpr milliseconds kPeerWarningWindow{10000};
inline constexpr std::size_t kPeerWarningBurst = 5;
inline constexpr std::size_t kPeerWarningSources = 1024;

// --- Redis ---

// Scheduler-side Redis steps are retried while Redis is unreachable (they
// are idempotent), backing off from 100 ms (a restart of Redis takes about
// that) doubling up to 2 s (a long outage costs one attempt per 2 s).
inline constexpr milliseconds kRedisRetryFirst{100};
inline constexpr milliseconds kRedisRetryMax{2000};

// --- Intake ---

// While max_active_jobs are held the intake checks again this often:
// a job finishing frees a slot that is used within 50 ms.
inline constexpr milliseconds kIntakeFullRecheck{50};
// Pause after an unexpected intake error (not Redis), so a persistent one
// cannot spin a core.
inline constexpr milliseconds kIntakeErrorPause{200};
// A queue entry whose intake was started this many times by coordinator
// processes that died before finishing it (crashes: counted in
// <p>intake:<id> before each attempt, cleared after it) is set aside in
// <p>setaside and its job failed (setAside), instead of crashing every
// restart. Two: one crash can be a coincidence (a kill, an OOM elsewhere),
// two of the same entry are not.
inline constexpr long kIntakeCrashLimit = 2;
// Threads that read one job's witnesses at once (WitnessReads): enough to
// take a job of thousands of HTTP witnesses in within the deadline (above),
// few enough that every job reading at once costs at most
// kJobsReadingAtOnce x 8 = 128 mostly idle threads and 8 MiB of prefixes.
inline constexpr std::size_t kWitnessReadersPerJob = 8;
// Jobs whose witnesses are read at once: beyond that the intake takes no
// further job but critical ones (kCriticalJobsReadingBeyond more), so that
// 16 slow witness servers delay the others' intake by at most the deadline
// and a critical job is taken in at once even then.
inline constexpr std::size_t kJobsReadingAtOnce = 16;
inline constexpr std::size_t kCriticalJobsReadingBeyond = 4;
// With --takeover-after-ms the lease is renewed every third of its length,
// on a thread of its own (LeaseKeeper) that waits on nothing but Redis: two
// renewals can be lost (a slow Redis, a pause) before it expires.
inline constexpr int kLeaseRenewalsPerLease = 3;
// The exit status of a coordinator that found its lease gone (another one
// may own its jobs now): not 0, so that the shipped units restart it (and
// the restarted one resumes whatever its processing list still holds), and
// not 2, the configuration error that deploy/systemd does not restart.
inline constexpr int kExitLeaseLost = 3;

// --- Verifier ---

// A verifier thread takes at least this many queued proofs (or all of them)
// before leaving the rest to the other threads: a randomized batch of k
// proofs of a circuit costs k + 3 Miller loops and one final exponentiation,
// so a single proof costs about three times what it costs in a batch of 16,
// and splitting a short queue between threads would spend more CPU than it
// saves in latency (16 BN254 proofs verify in about 13 ms on one core).
inline constexpr std::size_t kVerifyMinShare = 16;
// The most --verify-threads accepts (a typo guard: far past any core count
// a coordinator host has).
inline constexpr unsigned kMaxVerifyThreads = 256;
// --verify-threads auto: one verifier thread per core the process may run
// on. Verification is the coordinator's one CPU-bound part (a BN254 proof
// costs about a Miller loop and its subgroup checks, the scheduler thread a
// few Redis round trips that mostly wait), a single thread was the queue at
// 110-300 partitions/s on two cores (BENCHMARKS.md, "Cluster"), and an idle verifier thread
// costs nothing. Operators sharing the host with Redis or workers set fewer
// (BENCHMARKS.md, "Verifier pool").
inline unsigned default_verify_threads() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int usable = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 0;
  const unsigned cores = usable > 0 ? static_cast<unsigned>(usable) : std::thread::hardware_concurrency();
  return std::clamp(cores, 1u, kMaxVerifyThreads);
}

}  // namespace zkfarm::coordinator
