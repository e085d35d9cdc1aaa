// keys.h -- the Redis key layout of the farm (see cluster/README.md).
//
// Every key starts with a configurable prefix (default "zkfarm:") so several
// farms, or tests, can share one Redis. All names are built here and nowhere
// else.
//
// Tenants (cluster/tenants.h): the keys a client touches -- those marked [t]
// below -- live under the job prefix, which is <p> itself for the default
// tenant (a farm without tenants: the layout below, unchanged) and
// <p>t:<tenant>: for a registered tenant (for_tenant()), whose Redis ACL user
// may touch nothing else. The farm's own keys (processing lists, circuits,
// workers, leases, stats, tenants) stay under <p>. <p>t: starts no farm key.
//
//[t]<p>queue:<priority>        list   job JSON; clients LPUSH, coordinators pop the right end
//   <p>processing:<coord>      list   job JSON a coordinator owns until the job is terminal
//[t]<p>job:<id>                hash   state, circuit, priority, partitions, owner, times, error
//[t]<p>job:<id>:proofs         hash   partition index -> proof JSON (verified)
//[t]<p>job:<id>:result         string assembled result JSON
//[t]<p>job:<id>:events         list   event JSON, oldest first
//[t]<p>done:<id>               list   one element (the final state) pushed at the end: BLPOP it
//[t]<p>events                  pubsub every event, as JSON
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
//[t]<p>cancels:<coord>         set    job ids whose cancel a coordinator must act on
//   <p>coordinator:<coord>     string a coordinator's lease (with --takeover-after-ms; expires)
//   <p>coordinators            set    ids of coordinators that hold or held a lease
//   <p>rejected                list   submissions not run: no usable id, or the id of another job
//                                     ({"time","error_code","error","job": first 4 KiB, "coordinator"})
//   <p>setaside                list   queue entries set aside after crashing a coordinator's intake
//                                     twice (same fields as rejected, plus "id" and "crashes")
//   <p>intake:<coord>          hash   entry sha256 -> times a coordinator started handling it at intake
//                                     without finishing (a crash in between leaves it counted)
//[t]<p>recent:done             zset   ids of jobs that ended done, by finish time (last 1000)
//[t]<p>recent:failed:<code>    zset   ids of jobs that ended failed or cancelled with that error code
//                                     (schema/error_code.h names, "unknown" otherwise), by finish
//                                     time (last 100 of each code: a flood of one code cannot push
//                                     another's failures out)
//[t]<p>index:queued:<priority> zset   ids of jobs submitted through the API and not yet taken in,
//                                     by submission time (the status page lists these; raw LPUSH
//                                     entries are only counted)
//[t]<p>index:running           zset   ids of jobs a coordinator took in and has not ended, by start
//                                     time (the status page reads their job:<id> fields, never the
//                                     raw entries of queues and processing lists)
//   <p>tenants                 set    registered tenant names (cluster/tenants.h)
//   <p>tenant:<name>           hash   a tenant's figures: weight, reserved workers, quotas, ACL user
//   <p>circuit:<id>:tenants    set    tenants an admin-registered circuit is shared with ("*": all)
//   <tp>circuit:<id>, <tp>circuits   a tenant's own circuit records (the same fields as <p>'s)
//   <p>stats:<minute>          hash   per unix minute: jobs_done, jobs_failed, partitions,
//                                     latency_sum, latency_count, latency_max, worker_seconds
//                                     (expires after 2 h); a tenant's jobs count there too and
//                                     under tenant:<name>:<field> (tenant_stats_field)
//   <p>coordinators:seen       set    ids of every coordinator that ever started (status page)
#pragma once

#include <string>
#include <string_view>

#include "cluster/defaults.h"
#include "schema/job.h"  // Priority

namespace zkfarm {

// Tenant names: 1..32 of [a-z0-9_-], starting with a letter or digit, and
// not "default" (the farm's own namespace). No ':' and no glob characters,
// so <p>t:<name>:* names exactly one tenant's keys in an ACL pattern.
inline constexpr std::size_t kMaxTenantNameLength = 32;
inline constexpr const char* kTenantNameRule =
    "1-32 characters of a-z 0-9 _ -, starting with a letter or digit, not \"default\"";
// The tenant of jobs outside any tenant's namespace (a farm without tenants).
inline constexpr const char* kDefaultTenant = "default";
bool is_valid_tenant_name(std::string_view name);
// A registered tenant's field in the per-minute stats hash
// (KeyLayout::stats_minute): "tenant:<name>:<field>"; field "" gives the
// prefix. The farm's own fields (jobs_done, partitions, ...) count every
// tenant's jobs, the default tenant's included.
inline std::string tenant_stats_field(std::string_view tenant, std::string_view field) {
  std::string out = "tenant:";
  out += tenant;
  out += ':';
  out += field;
  return out;
}

class KeyLayout {
 public:
  // Throws std::invalid_argument for an empty prefix or one with whitespace.
  explicit KeyLayout(std::string prefix = kDefaultKeyPrefix);

  // The farm's prefix (the same for every tenant's layout).
  const std::string& prefix() const { return prefix_; }
  // The layout of a registered tenant's jobs: the keys marked [t] above
  // under <p>t:<tenant>:. Throws std::invalid_argument for a name that is
  // not a tenant name (is_valid_tenant_name, cluster/tenants.h).
  KeyLayout for_tenant(std::string_view tenant) const;
  // "" for the default tenant (the farm's own namespace).
  const std::string& tenant() const { return tenant_; }
  // Where the [t] keys start: prefix() for the default tenant.
  const std::string& job_prefix() const { return job_prefix_; }
  // A tenant's namespace (<p>t:<tenant>:), without building its layout.
  std::string tenant_prefix(std::string_view tenant) const { return cat("t:", tenant) + ":"; }
  std::string queue(Priority p) const { return job_prefix_ + "queue:" + priority_name(p); }  // [t]
  std::string processing(std::string_view coordinator) const { return cat("processing:", coordinator); }
  std::string job(std::string_view id) const { return job_cat("job:", id); }                  // [t]
  std::string job_proofs(std::string_view id) const { return job_cat("job:", id) + ":proofs"; }  // [t]
  std::string job_result(std::string_view id) const { return job_cat("job:", id) + ":result"; }  // [t]
  std::string job_events(std::string_view id) const { return job_cat("job:", id) + ":events"; }  // [t]
  std::string done(std::string_view id) const { return job_cat("done:", id); }                // [t]
  std::string events_channel() const { return job_prefix_ + "events"; }                        // [t]
  // The farm's circuit records (written by the admin's `zkfarm circuit add`).
  std::string circuit(std::string_view id) const { return cat("circuit:", id); }
  std::string circuits() const { return prefix_ + "circuits"; }
  // The tenants an admin's circuit is shared with ("*": every tenant).
  std::string circuit_tenants(std::string_view id) const { return cat("circuit:", id) + ":tenants"; }
  // A tenant's own circuit records (its `zkfarm circuit add`): [t].
  std::string tenant_circuit(std::string_view id) const { return job_cat("circuit:", id); }
  std::string tenant_circuits() const { return job_prefix_ + "circuits"; }
  std::string tenants() const { return prefix_ + "tenants"; }
  std::string tenant_record(std::string_view name) const { return cat("tenant:", name); }
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
  std::string cancels(std::string_view coordinator) const { return job_cat("cancels:", coordinator); }  // [t]
  std::string rejected() const { return prefix_ + "rejected"; }
  std::string set_aside() const { return prefix_ + "setaside"; }
  std::string intake_attempts(std::string_view coordinator) const { return cat("intake:", coordinator); }
  std::string coordinator_lease(std::string_view coordinator) const { return cat("coordinator:", coordinator); }
  std::string coordinators() const { return prefix_ + "coordinators"; }
  std::string recent_done() const { return job_prefix_ + "recent:done"; }  // [t]
  // code: an error code's name (the caller checks it; JobStore::finish maps
  // anything else to "unknown").
  std::string recent_failed(std::string_view code) const { return job_cat("recent:failed:", code); }  // [t]
  std::string queued_index(Priority p) const { return job_prefix_ + "index:queued:" + priority_name(p); }  // [t]
  std::string running_index() const { return job_prefix_ + "index:running"; }  // [t]
  std::string stats_minute(long long unix_minute) const { return prefix_ + "stats:" + std::to_string(unix_minute); }
  std::string coordinators_seen() const { return prefix_ + "coordinators:seen"; }

 private:
  std::string cat(std::string_view kind, std::string_view id) const {
    std::string s = prefix_;
    s += kind;
    s += id;
    return s;
  }
  std::string job_cat(std::string_view kind, std::string_view id) const {
    std::string s = job_prefix_;
    s += kind;
    s += id;
    return s;
  }
  std::string prefix_;
  std::string tenant_;      // "" for the default tenant
  std::string job_prefix_;  // prefix_, or prefix_ + "t:" + tenant_ + ":"
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
