// main.cc -- zkfarm-coordinator: flags, signals, run.
//
// SIGTERM/SIGINT stop it cleanly: running jobs stay in its processing list
// and resume (keeping verified partitions) when a coordinator with the same
// --id starts again. Exit status: 0 after such a stop, 2 for bad flags or
// configuration, kExitLeaseLost (3) when its lease was found gone, 1 for any
// other failure.
#include <unistd.h>

#include <signal.h>

#include <cstdio>
#include <thread>

#include "cluster/witness_access.h"
#include "cluster/curve_keys.h"
#include "cluster/daemon.h"
#include "cluster/defaults.h"
#include "cluster/flags.h"
#include "cluster/log.h"
#include "coordinator/constants.h"
#include "coordinator/coordinator.h"
#include "coordinator/status_page.h"
#include "monitoring/metrics/metrics.h"

int main(int argc, char** argv) {
  using namespace zkfarm;
  // Signals go to one thread that turns them into stop().
  const sigset_t signals = block_termination_signals();
  Flags flags;
  flags.value("redis", kDefaultRedisUrl, "Redis URL redis://[user[:password]@]host[:port][/db]")
      .value("prefix", kDefaultKeyPrefix, "Redis key prefix")
      .value("id", host_name("coordinator"), "coordinator id, stable across restarts (names its processing list)")
      .value("listen", kDefaultCoordinatorEndpoint, "ZeroMQ endpoint for workers")
      .value("artifacts", "", "artifact store root (required)")
      .list("witness-root",
            "directory under which file:// witnesses are read (repeatable; default: the directory holding "
            "--artifacts); a registered tenant's only under its tenants/<name>/ there")
      .value("ca-file", "", "PEM CA bundle for https:// witnesses (default: the system CAs)")
      .list("witness-url-allow",
            "where http(s):// witnesses may come from: hosts (any scheme and port), URL prefixes "
             "(http://host:port/path/), \"public\" (any host whose addresses are all public) or \"none\"; "
             "repeatable or a comma list. Loopback, link-local and private addresses only for a host or prefix "
             "named here, on every connection and redirect (default: " + std::string(kDefaultWitnessUrlAllow) + ")",
            ',')
      .value("heartbeat-ms", std::to_string(coordinator::kDefaultHeartbeatInterval.count()), "heartbeat interval")
      .value("dead-after-ms", std::to_string(coordinator::kDefaultDeadAfter.count()), "silence after which a worker is dead")
      .value("intake-poll-ms", std::to_string(coordinator::kDefaultIntakePoll.count()), "poll interval of the non-critical queues")
      .value("intake-deadline-ms", std::to_string(coordinator::kDefaultIntakeDeadline.count()),
             "how long intake reads one job's witnesses (their first bytes) before the job fails witnessUnavailable")
      .value("task-timeout-s", "auto",
             "a task held longer is a fault and is retried elsewhere: auto (derived from the circuit's measured "
             "task times: 4x the slowest, at least --task-timeout-floor-s; 30 min before the first), 0 (no limit) "
             "or seconds")
      .value("task-timeout-floor-s", std::to_string(coordinator::kDefaultTaskTimeoutFloor.count()),
             "the least task timeout in auto mode")
      .value("witness-timeout-s", std::to_string(coordinator::kDefaultWitnessTimeout.count()),
             "a task whose worker has not begun proving after this long (still fetching or generating its "
             "witness) is retried elsewhere, never as a fault; on two workers its job fails witnessUnavailable "
             "(0: no limit)")
      .value("max-tasks-per-worker", std::to_string(coordinator::kDefaultMaxTasksPerWorker),
             "most tasks one worker holds at once, whatever it says its device holds")
      .value("max-attempts", std::to_string(coordinator::kDefaultMaxAttempts), "failed attempts per partition before the job fails")
      .value("quarantine-after", std::to_string(coordinator::kDefaultQuarantineAfter), "faults before a worker is quarantined")
      .value("max-active-jobs", std::to_string(coordinator::kDefaultMaxActiveJobs), "jobs held at once")
      .value("memory-budget-mib", std::to_string(coordinator::kDefaultMemoryBudgetMib),
             "estimated MiB of held jobs at which intake pauses (at most one job more is held)")
      .value("takeover-after-ms", "0",
             "lease length: take over the jobs of a coordinator silent this long (0: off; same on every coordinator)")
      .value("verify-threads", "auto",
             "threads verifying proofs: auto (one per usable core) or a count (1.." +
                 std::to_string(coordinator::kMaxVerifyThreads) + ")")
      .value("ttl-s", std::to_string(coordinator::kDefaultTerminalTtlSeconds), "seconds terminal jobs stay in Redis")
      .value("curve-secret-key-file", "", "CURVE: file with the coordinator's Z85 secret key (enables encryption)")
      .value("curve-allowlist", "", "CURVE: file of allowed worker public keys, one per line")
      .value("metrics-listen", std::string(metrics::kDefaultCoordinatorBindAddress),
             "HOST:PORT serving Prometheus /metrics, on a server of its own (\"\" disables; port 0 picks a free one)")
      // Off unless asked for: the page lists the farm's jobs, workers and
      // circuits. The shipped configs serve it on loopback (127.0.0.1:9461:
      // an SSH tunnel or `kubectl port-forward` reaches it); listen wider
      // only with --http-token-file.
      .value("status-listen", "",
             "HOST:PORT serving the status page / and its API /api/v1/ on a server of its own (\"\": off, the "
             "default; port 0 picks a free one; beyond loopback, set --http-token-file)")
      .value("http-token-file", "",
             "file whose first line is a token the status page and its API require (Bearer, or basic-auth password)")
      .value("inject-fault", "", "TEST ONLY: abort-in-intake=<job id>")
      .flag("help", "print this help");
  CoordinatorConfig config;
  std::string access_token, status_listen;
  try {
    flags.parse(argc, argv);
    if (flags.is_set("help")) {
      std::printf("usage: zkfarm-coordinator [flags]\n%s", flags.help().c_str());
      return 0;
    }
    config.redis_url = flags.get("redis");
    config.key_prefix = flags.get("prefix");
    config.coordinator_id = flags.get("id");
    config.listen = flags.get("listen");
    config.artifacts = flags.get("artifacts");
    config.witness_roots = flags.get_list("witness-root");
    config.ca_file = flags.get("ca-file");
    if (!flags.get_list("witness-url-allow").empty()) config.witness_url_allow = flags.get_list("witness-url-allow");
    try {
      parse_url_policy(config.witness_url_allow);
    } catch (const std::invalid_argument& e) {
      throw FlagError(e.what());
    }
    if (!config.ca_file.empty() && ::access(config.ca_file.c_str(), R_OK) != 0)
      throw FlagError("--ca-file '" + config.ca_file + "': not a readable file");
    if (!config.artifacts.empty()) {
      try {
        make_witness_policy(config.witness_roots, config.artifacts, config.key_prefix);
      } catch (const std::invalid_argument& e) {
        throw FlagError(e.what());
      }
    }
    config.heartbeat_interval = std::chrono::milliseconds(flags.get_int("heartbeat-ms", 10, 60000));
    config.dead_after = std::chrono::milliseconds(flags.get_int("dead-after-ms", 50, 600000));
    config.intake_poll = std::chrono::milliseconds(flags.get_int("intake-poll-ms", 10, 10000));
    config.intake_deadline = std::chrono::milliseconds(flags.get_int("intake-deadline-ms", 100, 3600000));
    if (flags.get("task-timeout-s") != "auto")
      config.task_timeout = std::chrono::seconds(flags.get_int("task-timeout-s", 0, 7 * 86400));
    config.task_timeout_floor = std::chrono::seconds(flags.get_int("task-timeout-floor-s", 1, 86400));
    config.witness_timeout = std::chrono::seconds(flags.get_int("witness-timeout-s", 0, 7 * 86400));
    config.max_tasks_per_worker = static_cast<std::uint32_t>(
        flags.get_int("max-tasks-per-worker", 1, coordinator::kMaxCreditsPerWorker));
    config.max_attempts = static_cast<std::uint32_t>(flags.get_int("max-attempts", 1, 100));
    config.quarantine_after = static_cast<std::uint32_t>(flags.get_int("quarantine-after", 1, 1000));
    config.max_active_jobs = static_cast<std::uint32_t>(flags.get_int("max-active-jobs", 1, 100000));
    config.memory_budget_bytes = static_cast<std::uint64_t>(flags.get_int("memory-budget-mib", 1, 1L << 24)) << 20;
    config.inject_fault = flags.get("inject-fault");
    if (!config.inject_fault.empty() && config.inject_fault.rfind("abort-in-intake=", 0) != 0)
      throw FlagError("--inject-fault: unknown fault '" + config.inject_fault + "'");
    config.takeover_after = std::chrono::milliseconds(flags.get_int("takeover-after-ms", 0, 3600000));
    if (config.takeover_after.count() > 0 && config.takeover_after < std::chrono::milliseconds(300))
      throw FlagError("--takeover-after-ms must be 0 (off) or at least 300");
    if (flags.get("verify-threads") != "auto")
      config.verify_threads =
          static_cast<unsigned>(flags.get_int("verify-threads", 1, coordinator::kMaxVerifyThreads));
    config.terminal_ttl_seconds = flags.get_int("ttl-s", 0, 365L * 86400);
    if (!flags.get("curve-secret-key-file").empty()) {
      config.curve_secret_key = read_curve_key_file(flags.get("curve-secret-key-file"));
      if (flags.get("curve-allowlist").empty())
        throw FlagError("--curve-secret-key-file needs --curve-allowlist (the worker keys to admit)");
      config.curve_key_ids = read_curve_allowlist_ids(flags.get("curve-allowlist"));
      for (const auto& [key, ids] : config.curve_key_ids) config.curve_allowlist.insert(key);
    } else if (!flags.get("curve-allowlist").empty()) {
      throw FlagError("--curve-allowlist needs --curve-secret-key-file");
    }
    config.metrics_listen = flags.get("metrics-listen");
    check_metrics_listen(config.metrics_listen);
    status_listen = flags.get("status-listen");
    if (const std::string problem = status_listen.empty() ? "" : metrics::check_bind_address(status_listen);
        !problem.empty())
      throw FlagError("--status-listen '" + status_listen + "': " + problem);
    if (!flags.get("http-token-file").empty()) access_token = read_access_token_file(flags.get("http-token-file"));
    if (config.dead_after <= config.heartbeat_interval)
      throw FlagError("--dead-after-ms must exceed --heartbeat-ms");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkfarm-coordinator: %s\n", e.what());
    return 2;
  }
  set_log_component("coordinator[" + config.coordinator_id + "]");
  init_log_from_env();
  try {
    Coordinator coordinator(config);
    // Bound before run(): a taken port is a start-up error (exit 2). The
    // page has a server of its own: its clients never hold /metrics' threads.
    std::unique_ptr<metrics::MetricsEndpoint> metrics_endpoint;
    std::unique_ptr<metrics::HttpEndpoint> status_endpoint;
    try {
      metrics_endpoint = serve_metrics(config.metrics_listen, coordinator.metrics());
      if (!status_listen.empty()) {
        auto status_page = std::make_shared<StatusPage>(StatusPageConfig{.redis_url = config.redis_url,
                                                                         .key_prefix = config.key_prefix,
                                                                         .coordinator_id = config.coordinator_id,
                                                                         .access_token = access_token});
        status_endpoint = std::make_unique<metrics::HttpEndpoint>(
            status_listen,
            [status_page](const metrics::HttpRequest& request, metrics::HttpResponse& response) {
              return status_page->handle(request, response);
            },
            kStatusPageServerLimits);
        ZKLOG(kInfo) << "status page at http://" << status_listen.substr(0, status_listen.rfind(':')) << ":"
                     << status_endpoint->port() << "/" << (access_token.empty() ? "" : " (token required)");
        if (access_token.empty() && !metrics::is_loopback_bind_address(status_listen))
          ZKLOG(kWarning) << "--status-listen " << status_listen
                          << " is reachable from other hosts and has no --http-token-file: anyone who reaches it "
                             "sees the farm's jobs, workers and circuits";
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "zkfarm-coordinator: %s\n", e.what());
      return 2;
    }
    std::thread signal_thread([&] {
      int sig = 0;
      sigwait(&signals, &sig);
      if (sig != 0) coordinator.stop();
    });
    try {
      coordinator.run();
    } catch (...) {
      pthread_kill(signal_thread.native_handle(), SIGTERM);
      signal_thread.join();
      throw;
    }
    pthread_kill(signal_thread.native_handle(), SIGTERM);
    signal_thread.join();
    // Not 0: the shipped units restart it (deploy/systemd: Restart=on-failure).
    if (coordinator.lease_lost()) return coordinator::kExitLeaseLost;
  } catch (const std::exception& e) {
    ZKLOG(kError) << e.what();
    return 1;
  }
  return 0;
}
