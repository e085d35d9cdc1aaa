// job_store.h -- every Redis state transition of a job, each one atomic.
//
// Multi-key transitions run as Lua scripts (one script = one atomic step on
// the server), so a coordinator that dies between two calls never leaves a
// half state: either the step happened or it did not. Each step is also safe
// to repeat (the coordinator retries after a lost connection), e.g. finishing
// a job that is already terminal only removes it from the processing list.
//
// Lifecycle (job:<id> "state"): queued (submitted through the API; raw LPUSH
// jobs skip it) -> running (a coordinator took it: "owner" = its id, the raw
// JSON sits in processing:<owner>) -> done | failed | cancelled (terminal:
// done:<id> gets the state, an event is published, keys expire after the
// TTL, the raw JSON leaves the processing list).
//
// The job hash is also the job's summary for readers that must not touch
// raw entries (the status page): the same steps keep index:queued:<p>
// (submit() adds, claim() and cancel() remove) and index:running (claim()
// adds, finish() and set_aside() remove), and file each failure under its
// error code in recent:failed:<code>. Readers take ids from those and HMGET
// the fields they show, never kSpec.
//
// One id, one job: job:<id> records "entry_sha256", the digest of the queue
// entry it belongs to (written by submit(), or by the first claim() of a raw
// LPUSH). Another entry naming the same id -- a second submission, a raw
// push of a different job, malformed JSON -- is a duplicate: claim() says
// so and the existing job is not touched (the coordinator records the entry
// in <p>rejected instead).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schema/job.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"

namespace zkfarm {

double unix_now();  // seconds
// The minute a time falls in (unix seconds / 60, rounded down): names the
// per-minute stats hash (KeyLayout::stats_minute).
long long unix_minute(double unix_seconds);

class JobStore {
 public:
  // The fields of a job:<id> hash, spelled here only (cluster/README.md,
  // "Redis layout", says what each holds). Readers (the status page, `zkfarm
  // status`, the coordinator's HGET/HINCRBY) name them through these; the
  // Lua scripts below are built from them.
  static constexpr const char* kState = "state";                // queued | running | done | failed | cancelled
  static constexpr const char* kOwner = "owner";                // the coordinator running it
  static constexpr const char* kCircuit = "circuit";
  static constexpr const char* kPriority = "priority";
  static constexpr const char* kPartitions = "partitions";      // count
  static constexpr const char* kSpec = "spec";                  // the canonical job JSON
  static constexpr const char* kEntrySha256 = "entry_sha256";   // the queue entry it belongs to
  static constexpr const char* kSubmittedAt = "submitted_at";   // unix seconds, 3 decimals
  static constexpr const char* kStartedAt = "started_at";
  static constexpr const char* kFinishedAt = "finished_at";
  static constexpr const char* kDeadline = "deadline";          // unix seconds, when the job has one
  static constexpr const char* kProved = "proved";              // verified partitions
  static constexpr const char* kAttempts = "attempts";          // failed attempts, all partitions
  static constexpr const char* kWaitingForWitness = "waiting_for_witness";  // input partitions in witgen
  static constexpr const char* kCancelRequested = "cancel_requested";       // "1" once asked
  static constexpr const char* kErrorCode = "error_code";       // schema/error_code.h names
  static constexpr const char* kError = "error";                // the message

  // Failed jobs kept in each recent:failed:<code> (the status page shows the
  // newest few of every code): 100 ids of each of the ~25 codes is a few KiB
  // of Redis, and a flood of one code never reaches another's list.
  static constexpr long kRecentFailedPerCode = 100;

  JobStore(RedisClient& redis, KeyLayout keys) : redis_(redis), keys_(std::move(keys)) {}
  const KeyLayout& keys() const { return keys_; }
  RedisClient& redis() { return redis_; }

  // Moves the oldest job of the highest non-empty priority queue into
  // processing:<owner> (in a script: atomic across the queues). Within a
  // priority the default tenant's queue is tried first, then each of
  // `tenants` in the order given (the caller rotates it: round-robin by
  // tenant within a priority). Returns the processing-list entry (a
  // tenant's job carries its tenant: split_processing_entry), or nullopt if
  // every queue is empty.
  // default_tenant false: the default tenant's queues are not taken from
  // (the intake's share of its slots, coordinator/intake.h).
  std::optional<std::string> take_next(const std::string& owner, const std::vector<std::string>& tenants = {},
                                       bool default_tenant = true);
  // The number of jobs queued in each tenant's four queues ("" the default
  // tenant's), in the order given; one pipeline.
  std::vector<std::uint64_t> queued_jobs(const std::vector<std::string>& tenants);
  // A tenant's queued jobs beyond its first `limit` in the order take_next
  // takes them (priority, then age), at most `most` of them: moved from
  // the heads of its queues, least urgent queue first, into
  // processing:<owner> as processing entries, in one script. Each comes
  // with the number of the tenant's jobs that were queued ahead of it
  // (coordinator/admission.h: max-queued-jobs). Empty when the tenant has
  // at most `limit` queued.
  struct Beyond {
    std::string entry;             // the processing entry (split_processing_entry)
    std::uint64_t queued_ahead = 0;
  };
  std::vector<Beyond> take_newest_beyond(const std::string& owner, const std::string& tenant, std::uint64_t limit,
                                         std::uint64_t most);
  // Puts a processing entry taken by take_next back where it was taken
  // from: off processing:<owner>, onto the tail of its tenant's queue of
  // `priority` (the end take_next takes from: it keeps its place), in one
  // script; nothing is pushed unless the entry was in the processing list.
  // Returns whether it was.
  bool return_to_queue(const std::string& owner, const std::string& entry, Priority priority);
  // BLMOVE from the default tenant's critical queue for up to timeout
  // (tenants' critical jobs are found by take_next, polled meanwhile) (critical jobs wake the
  // coordinator at once; the others are polled by take_next).
  std::optional<std::string> wait_critical(const std::string& owner, std::chrono::milliseconds timeout);
  // The raw JSON of every job in processing:<owner> (recovery on start).
  std::vector<std::string> processing(const std::string& owner);

  enum class Claim { kNew, kResume, kTerminal, kOwnedElsewhere, kDuplicate };
  // Takes ownership of a parsed job: creates or updates job:<id> (state
  // running, owner, circuit, priority, partitions, spec, entry_sha256).
  // Returns kResume when owner already runs it (restart), kTerminal when it
  // already ended (e.g. cancelled while queued), kOwnedElsewhere when another
  // coordinator runs it, kDuplicate (detail: the existing job's state, or
  // "queued") when job:<id> belongs to another queue entry than the one
  // whose digest is entry_digest: then nothing is written. An empty
  // entry_digest skips that check (and records none). Does not touch the
  // processing list.
  Claim claim(const JobSpec& spec, const std::string& owner, std::string* detail,
              const std::string& entry_digest = "");

  // Sets owner's lease (expires after ttl) and records owner in
  // <p>coordinators. Returns false if the lease had expired since the last
  // renewal (then another coordinator may have taken owner's jobs).
  bool renew_lease(const std::string& owner, std::chrono::milliseconds ttl, bool first);
  // Ids in <p>coordinators other than me whose lease has expired while
  // their processing list still holds jobs.
  std::vector<std::string> expired_coordinators(const std::string& me);
  // If dead's lease is still absent, moves every job of processing:<dead>
  // into processing:<me>, makes me the owner of those jobs (so claim()
  // resumes them, keeping proved partitions) and moves dead's pending
  // cancels to me (the default tenant's and each of `tenants`'); all in one
  // script. Returns the number of jobs moved.
  std::size_t take_over(const std::string& dead, const std::string& me,
                        const std::vector<std::string>& tenants = {});

  // Removes raw from processing:<owner>.
  void drop_processing(const std::string& owner, const std::string& raw);
  // Records a submission that is not run under its id (none usable, or the
  // id of another job) in <p>rejected (the newest 1000 are kept) and removes
  // it from processing:<owner>. error_code: invalidJob, duplicateId, ...
  void reject_unattributable(const std::string& owner, const std::string& raw, const std::string& error,
                             const std::string& error_code = "invalidJob");

  // Intake crash accounting, per queue entry (field: entry_digest(raw)) in
  // <p>intake:<owner>. begin_intake() counts one more attempt to handle the
  // entry and returns the count including this one; end_intake() forgets it
  // once handled (started, failed or rejected). A count above the limit
  // means earlier attempts died midway: set the entry aside.
  long begin_intake(const std::string& owner, const std::string& digest);
  void end_intake(const std::string& owner, const std::string& digest);
  // Moves raw from processing:<owner> to <p>setaside (with reason, id and
  // crashes) and forgets its attempt count; when id is non-empty and job:<id>
  // belongs to this entry (or does not exist), the job fails with code
  // "setAside" and reason (terminal, like finish()). One script.
  // job_digest: the digest job:<id> must record to be this entry's job
  // ("": entry_digest(raw); a tenant's processing entry wraps the queue
  // entry, whose digest it is).
  void set_aside(const std::string& owner, const std::string& raw, const std::string& id, long crashes,
                 const std::string& reason, long ttl_seconds, const std::string& job_digest = "");

  // Verified proofs already stored for a job: partition -> proof JSON.
  std::map<std::uint32_t, std::string> proofs(const std::string& id);
  // Stores a verified partition proof and appends/publishes event_json;
  // also (e.g. a worker's proof counter) is sent in the same round trip,
  // after the store, and runs once. The minute's stats count the partition
  // and worker_seconds (dispatch to result; 0: not counted), the farm's
  // fields and its tenant's, once. Throws RedisError.
  void store_proof(const std::string& id, std::uint32_t partition, const std::string& proof_json,
                   const std::string& event_json, const std::vector<std::vector<std::string>>& also = {},
                   double worker_seconds = 0);
  // Appends an event to job:<id>:events and publishes it.
  void event(const std::string& id, const std::string& event_json);

  struct Finish {
    std::string state;       // done | failed | cancelled
    std::string error_code;  // "" when done
    std::string error;
    std::string result_json; // "" unless done
    std::string raw;         // the processing-list entry to remove ("" for none)
    std::string owner;
    long ttl_seconds = 0;    // 0: keep forever
  };
  // Makes the job terminal (see the file comment). Returns false if it
  // already was terminal (then only the processing entry is removed).
  bool finish(const std::string& id, const Finish& f);

  // Client side (a tenant's store calls the farm's client functions with
  // FCALL, see client_function_library; the default tenant EVALs the same
  // scripts): creates job:<id> as queued (with the entry's digest) and
  // LPUSHes the JSON, atomically. Returns false, writing nothing, if job:<id>
  // already exists (then *existing_state, when given, is its state).
  bool submit(const JobSpec& spec, std::string* existing_state = nullptr);
  // Client side: cancels. Returns "cancelled" (was queued: now terminal),
  // "requested" (running: its coordinator will stop it), "terminal:<state>"
  // or "unknown".
  std::string cancel(const std::string& id, long ttl_seconds);

 private:
  // The default tenant EVALs `script`; a tenant FCALLs `function`, the same
  // script in the client library.
  RedisReply run_client_script(const std::string& script, const char* function, const std::vector<std::string>& keys,
                               const std::vector<std::string>& args);
  RedisClient& redis_;
  KeyLayout keys_;
};

// The Redis function library holding the client scripts (submit, cancel)
// that tenants call, and which a tenant's ACL user may not replace.
std::string client_function_library();
// Loads it (FUNCTION LOAD REPLACE: the same text again is harmless). Throws
// RedisError (NOPERM for a user that may not).
void load_client_functions(RedisClient& redis);

// A processing-list entry: the queue entry as it was for the default
// tenant; for a tenant's job, kTenantEntryMark, the tenant's name,
// kTenantEntryMark, then the queue entry (the coordinator must know whose
// namespace a job lives in when it recovers its list).
inline constexpr char kTenantEntryMark = '\x1f';
struct ProcessingEntry {
  std::string tenant;  // "" for the default tenant
  std::string raw;     // the queue entry as the client pushed it
};
std::string processing_entry(const std::string& tenant, const std::string& raw);
ProcessingEntry split_processing_entry(const std::string& entry);

// The digest that ties a queue entry to its job record: hex sha256 of the
// entry's bytes.
std::string entry_digest(std::string_view raw);

// Event JSON: {"job": id, "type": type, "time": unix, ...extra}.
std::string event_json(const std::string& id, const std::string& type,
                       const std::string& extra_json_fields = "");

}  // namespace zkfarm
