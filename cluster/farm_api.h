// farm_api.h -- the client side of the farm, for the CLI's farm commands:
//
//   zkfarm circuit add <circuit.zkey> [--r1cs c.r1cs] [--witness-generator DIR]
//                                                       -> circuit_add
//   zkfarm submit <job.json>                             -> submit (prints the id)
//   zkfarm status <id>                                   -> status
//   zkfarm wait <id> [--timeout S]                       -> wait
//   zkfarm result <id>                                   -> result
//   zkfarm workers                                       -> workers
//   zkfarm cancel <id>                                   -> cancel
//
// With a tenant's Redis URL (cluster/tenants.h) the job commands act on that
// tenant's jobs, in its namespace (job_layout); with the admin's (or any
// other user's), on the default tenant's, as in a farm without tenants.
//
// Every function opens its own Redis connection from FarmOptions (so the CLI
// needs no state) and throws: JobError (bad job JSON, or a job id outside
// the alphabet of job.h given to status/wait/result/cancel: print, exit 2),
// FarmError (a clear user-facing problem: unknown circuit, duplicate id),
// RedisError (connection/auth), FormatError (bad zkey/r1cs), std::system_error
// (artifact I/O).
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/artifacts.h"
#include "cluster/defaults.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"

namespace zkfarm::farm {

class FarmError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct FarmOptions {
  std::string redis_url = kDefaultRedisUrl;  // ZKFARM_REDIS in the CLI
  std::string prefix = kDefaultKeyPrefix;
  std::string artifacts;                              // needed by circuit_add only
  long ttl_seconds = 7 * 24 * 3600;                   // for cancel of queued jobs
};

// The key layout of the jobs this connection's user may touch: the
// tenant's namespace for a tenant's ACL user (ACL WHOAMI, tenant_of_user),
// else the farm's own (the default tenant). Throws RedisError.
KeyLayout job_layout(RedisClient& redis, const FarmOptions& options);

// How circuit_add treats a circuit's existing witness generator.
struct GeneratorPolicy {
  // Replace a recorded generator by one whose bytes differ (`zkfarm circuit
  // add --replace-witness-generator`). Only the circuit's registrant may.
  bool replace = false;
};

// Registers a circuit: id = sha256(zkey); with a tenant's URL, in the
// tenant's namespace (visible to its jobs only; a witness generator is
// refused, FarmError: the admin's action); copies the zkey into
// <artifacts>/<id>/circuit.zkey, builds the PCE (from r1cs_path when given:
// then workers check every constraint and name the failing one; else from
// the zkey's coefficients), writes vk.json, records <p>circuit:<id> and,
// the first time, who registered it ("registered_by": the Redis user of
// the connection, ACL WHOAMI). Idempotent: an existing circuit is
// re-recorded, artifacts kept, its witness generator kept when none is
// given.
// With witness_generator_dir (circom's `--c` output), also builds the
// circuit's witness generator and checks it against the zkey
// (witgen/witness_generator.h) before anything is recorded: a bad
// directory, a compiler failure or a mismatch throws
// witgen::GeneratorError naming it, and the record is left as it was.
// A circuit's generator is never replaced silently: a build whose bytes
// differ from the recorded generator's is refused (FarmError, store and
// record untouched) unless policy.replace is set and the caller is the
// circuit's registrant (generator_change_refusal); so is adding one to a
// circuit another user registered. Input jobs already taken in keep the
// hashes of the generator they were taken in with: after a replacement
// their remaining partitions fail artifactChecksum rather than run other
// code.
CircuitInfo circuit_add(const FarmOptions& options, const std::string& zkey_path,
                        const std::optional<std::string>& r1cs_path = std::nullopt,
                        const std::optional<std::string>& witness_generator_dir = std::nullopt,
                        const GeneratorPolicy& policy = {});

// Why `user` may not record a generator of these sha256s for the circuit
// `existing` (nullopt: not registered yet), or "" when it may: the same
// generator again, a first generator by the circuit's registrant (or for
// a record that names none), a different one only with policy.replace and
// by the registrant. The text names the circuit, the registrant and the
// flag.
std::string generator_change_refusal(const std::optional<CircuitInfo>& existing, const std::string& sha256,
                                     const std::string& dat_sha256, const std::string& user,
                                     const GeneratorPolicy& policy);

// Validates job_json (job.h), assigns an id when it has none, checks that
// the circuit is registered, and queues it. Returns the job id. Throws
// JobError, FarmError ("unknown circuit", "job id exists").
std::string submit(const FarmOptions& options, std::string_view job_json);

struct JobStatus {
  std::string id, state, circuit, priority, owner, error_code, error;
  std::uint32_t partitions = 0, proved = 0, attempts = 0;
  // Input partitions workers hold waiting for (or in) witness generation, as
  // of their last heartbeats (running jobs only; 0 otherwise).
  std::uint32_t waiting_for_witness = 0;
  double submitted_at = 0, started_at = 0, finished_at = 0;
  bool terminal() const;
  std::string to_json() const;
};

// nullopt: no such job (never submitted, or expired after its TTL).
std::optional<JobStatus> status(const FarmOptions& options, const std::string& id);

// Blocks until the job is terminal (BLPOP on done:<id>, re-checking the
// state each second so several waiters all wake) or timeout passes. Returns
// the last status seen (check terminal()); nullopt if the job does not exist.
std::optional<JobStatus> wait(const FarmOptions& options, const std::string& id, std::chrono::milliseconds timeout);

// The assembled result JSON of a done job: {"id","circuit","curve","state",
// "partitions":[{"partition","proof","public","worker","device_uuid",
// "timings"[,"compressed_hex"]}][,"proofs_hex"]}. nullopt unless done.
std::optional<std::string> result(const FarmOptions& options, const std::string& id);

struct WorkerStatus {
  std::string id, state, host, device, device_uuid, coordinator, loaded;
  std::uint32_t credits = 0, tasks = 0, faults = 0;
  bool quarantined = false;
  double last_seen = 0;
  std::string to_json() const;
};
// Workers seen recently (their records expire a while after they die).
std::vector<WorkerStatus> workers(const FarmOptions& options);

// "cancelled" (it was still queued), "requested" (its coordinator stops it
// within a tick), "terminal:<state>", or "unknown".
std::string cancel(const FarmOptions& options, const std::string& id);

}  // namespace zkfarm::farm
