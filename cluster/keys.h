// keys.h -- the Redis key layout of the farm (see cluster/README.md).
//
// Every key starts with a configurable prefix (default "zkfarm:") so several
// farms, or tests, can share one Redis. All names are built here and nowhere
// else.
//
//   <p>queue:<priority>        list   job JSON; clients LPUSH, coordinators pop the right end
//   <p>processing:<coord>      list   job JSON a coordinator owns until the job is terminal
//   <p>job:<id>                hash   state, circuit, priority, partitions, owner, times, error
//   <p>job:<id>:proofs         hash   partition index -> proof JSON (verified)
//   <p>job:<id>:result         string assembled result JSON
//   <p>job:<id>:events         list   event JSON, oldest first
//   <p>done:<id>               list   one element (the final state) pushed at the end: BLPOP it
//   <p>events                  pubsub every event, as JSON
//   <p>circuit:<id>            hash   curve, sizes, artifact paths (relative to the store)
//   <p>circuits                set    circuit ids
//   <p>pce:<circuit>           set    worker ids holding the circuit resident (registered ids; expires)
//   <p>worker:<id>             hash   host, device, state, faults, last_seen (expires)
//   <p>workers                 set    worker ids ever seen (stale ones have no hash)
//   <p>quarantine              set    quarantined worker ids, and "key:<z85>" for a quarantined
//                                     CURVE key (cleared by an operator)
//   <p>worker_keys             hash   worker id -> the CURVE key it first said hello with
//   <p>key_workers             hash   CURVE key -> the one worker id it may say hello as (keys the
//                                     allowlist lists no ids for)
//   <p>cancels:<coord>         set    job ids whose cancel a coordinator must act on
//   <p>coordinator:<coord>     string a coordinator's lease (with --takeover-after-ms; expires)
//   <p>coordinators            set    ids of coordinators that hold or held a lease
//   <p>rejected                list   submissions not run: no usable id, or the id of another job
//                                     ({"time","error_code","error","job": first 4 KiB, "coordinator"})
//   <p>setaside                list   queue entries set aside after crashing a coordinator's intake
//                                     twice (same fields as rejected, plus "id" and "crashes")
//   <p>intake:<coord>          hash   entry sha256 -> times a coordinator started handling it at intake
//                                     without finishing (a crash in between leaves it counted)
//   <p>recent:done             zset   ids of jobs that ended done, by finish time (last 1000)
//   <p>recent:failed:<code>    zset   ids of jobs that ended failed or cancelled with that error code
//                                     (schema/error_code.h names, "unknown" otherwise), by finish
//                                     time (last 100 of each code: a flood of one code cannot push
//                                     another's failures out)
//   <p>index:queued:<priority> zset   ids of jobs submitted through the API and not yet taken in,
//                                     by submission time (the status page lists these; raw LPUSH
//                                     entries are only counted)
//   <p>index:running           zset   ids of jobs a coordinator took in and has not ended, by start
//                                     time (the status page reads their job:<id> fields, never the
//                                     raw entries of queues and processing lists)
//   <p>stats:<minute>          hash   per unix minute: jobs_done, jobs_failed, partitions,
//                                     latency_sum, latency_count, latency_max (expires after 2 h)
//   <p>coordinators:seen       set    ids of every coordinator that ever started (status page)
#pragma once

#include <string>
#include <string_view>

#include "cluster/defaults.h"
#include "schema/job.h"  // Priority

namespace zkfarm {

class KeyLayout {
 public:
  // Throws std::invalid_argument for an empty prefix or one with whitespace.
  explicit KeyLayout(std::string prefix = kDefaultKeyPrefix);

  const std::string& prefix() const { return prefix_; }
  std::string queue(Priority p) const { return prefix_ + "queue:" + priority_name(p); }
  std::string processing(std::string_view coordinator) const { return cat("processing:", coordinator); }
  std::string job(std::string_view id) const { return cat("job:", id); }
  std::string job_proofs(std::string_view id) const { return cat("job:", id) + ":proofs"; }
  std::string job_result(std::string_view id) const { return cat("job:", id) + ":result"; }
  std::string job_events(std::string_view id) const { return cat("job:", id) + ":events"; }
  std::string done(std::string_view id) const { return cat("done:", id); }
  std::string events_channel() const { return prefix_ + "events"; }
  std::string circuit(std::string_view id) const { return cat("circuit:", id); }
  std::string circuits() const { return prefix_ + "circuits"; }
  std::string pce(std::string_view circuit) const { return cat("pce:", circuit); }
  std::string worker(std::string_view id) const { return cat("worker:", id); }
  std::string workers() const { return prefix_ + "workers"; }
  std::string quarantine() const { return prefix_ + "quarantine"; }
  // Hash: worker id -> the CURVE public key it first said hello with.
  std::string worker_keys() const { return prefix_ + "worker_keys"; }
  // Hash: CURVE public key -> the one worker id it first said hello as.
  std::string key_workers() const { return prefix_ + "key_workers"; }
  // The quarantine set's member for a CURVE key.
  static std::string quarantined_key(std::string_view curve_key) { return "key:" + std::string(curve_key); }
  std::string cancels(std::string_view coordinator) const { return cat("cancels:", coordinator); }
  std::string rejected() const { return prefix_ + "rejected"; }
  std::string set_aside() const { return prefix_ + "setaside"; }
  std::string intake_attempts(std::string_view coordinator) const { return cat("intake:", coordinator); }
  std::string coordinator_lease(std::string_view coordinator) const { return cat("coordinator:", coordinator); }
  std::string coordinators() const { return prefix_ + "coordinators"; }
  std::string recent_done() const { return prefix_ + "recent:done"; }
  // code: an error code's name (the caller checks it; JobStore::finish maps
  // anything else to "unknown").
  std::string recent_failed(std::string_view code) const { return cat("recent:failed:", code); }
  std::string queued_index(Priority p) const { return prefix_ + "index:queued:" + priority_name(p); }
  std::string running_index() const { return prefix_ + "index:running"; }
  std::string stats_minute(long long unix_minute) const { return prefix_ + "stats:" + std::to_string(unix_minute); }
  std::string coordinators_seen() const { return prefix_ + "coordinators:seen"; }

 private:
  std::string cat(std::string_view kind, std::string_view id) const {
    std::string s = prefix_;
    s += kind;
    s += id;
    return s;
  }
  std::string prefix_;
};

// The fields of a worker:<id> hash (written by the coordinator that holds
// the worker's session, read by the status page and `zkfarm workers`),
// spelled here only. The job hash's fields are JobStore's
// (cluster/job_store.h).
struct WorkerRecord {
  static constexpr const char* kState = "state";              // alive | gone
  static constexpr const char* kHost = "host";
  static constexpr const char* kDevice = "device";
  static constexpr const char* kDeviceUuid = "device_uuid";
  static constexpr const char* kDeviceOrdinal = "device_ordinal";
  static constexpr const char* kCoordinator = "coordinator";
  static constexpr const char* kLastSeen = "last_seen";        // unix seconds
  static constexpr const char* kCredits = "credits";
  static constexpr const char* kTasks = "tasks";
  static constexpr const char* kLoaded = "loaded";             // resident circuit ids, comma-separated
  static constexpr const char* kQuarantined = "quarantined";   // "1" | "0"
  static constexpr const char* kBusy = "busy";                 // fraction of the last minute proving
  static constexpr const char* kFaults = "faults";
  static constexpr const char* kProofs = "proofs";
};

// Job states stored in job:<id> "state".
inline constexpr const char* kStateQueued = "queued";
inline constexpr const char* kStateRunning = "running";
inline constexpr const char* kStateDone = "done";
inline constexpr const char* kStateFailed = "failed";
inline constexpr const char* kStateCancelled = "cancelled";
bool is_terminal_state(std::string_view state);

}  // namespace zkfarm
