// config.h -- zkfarm-coordinator's settings (flags in main.cc; defaults and
// the reasons for them in constants.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cluster/defaults.h"
#include "coordinator/constants.h"
#include "monitoring/metrics/metrics.h"

namespace zkfarm {

struct CoordinatorConfig {
  std::string redis_url = kDefaultRedisUrl;
  std::string key_prefix = kDefaultKeyPrefix;
  std::string coordinator_id;  // stable across restarts: names processing:<id>
  std::string listen = kDefaultCoordinatorEndpoint;
  std::string artifacts;       // artifact store root
  // --witness-root: file:// witnesses are read only under these; empty: the
  // directory holding the artifact store (make_witness_policy).
  std::vector<std::string> witness_roots;
  // --ca-file: PEM CA bundle for https:// witnesses (empty: the system CAs).
  std::string ca_file;
  std::chrono::milliseconds heartbeat_interval = coordinator::kDefaultHeartbeatInterval;
  std::chrono::milliseconds dead_after = coordinator::kDefaultDeadAfter;
  std::chrono::milliseconds intake_poll = coordinator::kDefaultIntakePoll;  // non-critical queue latency bound
  // --intake-deadline-ms: how long the intake reads one job's witnesses
  // before the job fails witnessUnavailable.
  std::chrono::milliseconds intake_deadline = coordinator::kDefaultIntakeDeadline;
  // nullopt (the default): derived from measured task times, at least
  // task_timeout_floor (scheduler.h); 0: none; else this fixed timeout.
  std::optional<std::chrono::milliseconds> task_timeout;
  std::chrono::milliseconds task_timeout_floor = coordinator::kDefaultTaskTimeoutFloor;
  std::uint32_t max_attempts = coordinator::kDefaultMaxAttempts;          // failed attempts per partition
  std::uint32_t quarantine_after = coordinator::kDefaultQuarantineAfter;  // faults before quarantine
  std::uint32_t max_active_jobs = coordinator::kDefaultMaxActiveJobs;     // jobs held at once
  // Estimated bytes of held jobs (constants.h); the intake admits no job
  // while the held ones reach it.
  std::uint64_t memory_budget_bytes = coordinator::kDefaultMemoryBudgetMib << 20;
  // TEST ONLY: "abort-in-intake=<job id>" aborts the process while the
  // intake handles that job (the crash the set-aside rule is for).
  std::string inject_fault;
  // 0: off. Else this coordinator keeps a lease of this length in Redis and
  // takes over the processing list of any coordinator whose lease expired
  // (a coordinator that cannot renew its lease in time stops).
  std::chrono::milliseconds takeover_after{0};
  // --verify-threads: threads verifying proofs (verifier_pool.h); the
  // default and its reason: coordinator::default_verify_threads().
  unsigned verify_threads = coordinator::default_verify_threads();
  long terminal_ttl_seconds = coordinator::kDefaultTerminalTtlSeconds;
  // ZeroMQ CURVE (both empty: plaintext, for a trusted network only).
  std::string curve_secret_key;          // Z85
  std::set<std::string> curve_allowlist;  // worker public keys, Z85
  // Where /metrics is served (docs/METRICS.md); "" disables. main() binds it.
  std::string metrics_listen = std::string(metrics::kDefaultCoordinatorBindAddress);
};

}  // namespace zkfarm
