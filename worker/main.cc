// main.cc -- zkfarm-worker: flags, device selection, run.
//
//   zkfarm-worker --cpu --artifacts /shared/zkfarm --coordinator tcp://coord:5555
//   zkfarm-worker --cpu ... --coordinator tcp://coord-a:5555 --coordinator tcp://coord-b:5555
//   zkfarm-worker --device 3 ...        (CUDA device 3: builds with ZKFARM_HAS_CUDA)
//
// SIGTERM drains: the worker tells the coordinator, finishes the tasks it
// holds and exits 0.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cluster/curve_keys.h"
#include "cluster/daemon.h"
#include "cluster/defaults.h"
#include "cluster/flags.h"
#include "cluster/http_fetch.h"
#include "cluster/log.h"
#include "base/redact.h"
#include "monitoring/metrics/metrics.h"
#include "prover/prover.h"
#include "witgen/witness_generator.h"
#include "worker/cache_budget.h"
#include "worker/config.h"
#include "worker/worker.h"

int main(int argc, char** argv) {
  using namespace zkfarm;
  // Block the termination signals before any thread starts: the link thread
  // reads them from a signalfd.
  block_termination_signals();
  const std::string host = host_name("");
  // Every default below comes from WorkerConfig (config.h), where its reason is.
  const WorkerConfig defaults;
  const std::string auto_value(kAutoValue);
  const auto count = [](auto value) { return std::to_string(value); };
  const auto whole_seconds = [](auto duration) {
    return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(duration).count());
  };
  const auto millis = [](std::chrono::milliseconds duration) { return std::to_string(duration.count()); };
  Flags flags;
  flags.flag("cpu", "prove on the CPU")
      .value("device", "", "CUDA device ordinal to prove on (builds with CUDA)")
      .value("id", defaults.worker_id, "worker id (default <host>/cpu or <host>/gpu<N>)")
      .list("coordinator",
            "coordinator endpoint (repeatable: the worker serves every coordinator of the farm, one session "
            "each, one credit budget; default " + defaults.coordinators.front() +
                "; ZKFARM_COORDINATOR separates them with ',')",
            ',')
      .value("redis", defaults.redis_url, "Redis URL for redis:// witnesses")
      .value("prefix", defaults.key_prefix, "the farm's Redis key prefix: redis:// witnesses must name keys under it")
      .value("artifacts", defaults.artifacts,
             "artifact store: its directory, or the http(s):// URL that serves it (then --cache-dir and --redis "
             "are needed) (required)")
      .list("witness-root",
            "directory under which file:// witnesses are read (repeatable; default: the directory holding "
            "--artifacts); a registered tenant's only under its tenants/<name>/ there")
      .value("cache-dir", defaults.cache_dir, "local cache for artifacts (default: read the store in place)")
      .value("cache-budget", defaults.cache_budget,
             "most bytes of circuit files in --cache-dir, least recently used circuits removed first (never one "
             "in use): auto (90% of its files plus its disk's free space at start), none, bytes, or e.g. 200GiB")
      .value("ca-file", defaults.ca_file, "PEM CA bundle for https:// witnesses and artifacts (default: the system CAs)")
      .list("witness-url-allow",
            "where http(s):// witnesses may come from: hosts (any scheme and port), URL prefixes "
             "(http://host:port/path/), \"public\" (any host whose addresses are all public) or \"none\"; "
             "repeatable or a comma list. Loopback, link-local and private addresses only for a host or prefix "
             "named here, on every connection and redirect (default: " + std::string(kDefaultWitnessUrlAllow) + ")",
            ',')
      .value("slots", count(defaults.slots),
             "partitions proved at once (a GPU: that many on the device together, memory permitting; "
             "raises the proofs per second of small circuits)")
      .value("prefetch", count(defaults.prefetch),
             "witnesses fetched, parsed and checked ahead of the provers (on a GPU into page-locked memory), so "
             "the device goes from one proof to the next without waiting; credits on top of --slots; 0: none")
      .value("max-resident", count(defaults.max_resident), "circuits kept loaded")
      .value("witgen-workers", auto_value,
             "witness generator runs at once for input partitions (credits on top of --slots); auto: the host's "
             "cores minus 2 with --device, 1 with --cpu (the CPU prover uses every core)")
      .value("witgen-timeout-s", whole_seconds(defaults.witgen_limits.timeout),
             "a witness generator run is killed after this long (and its input refused)")
      .value("witgen-memory-mib", count(defaults.witgen_limits.memory_bytes >> 20),
             "address-space limit of a witness generator run")
      .value("witgen-sandbox", defaults.witgen_limits.sandbox ? "on" : "off",
             "on: each witness generator run in its own user, mount, PID, IPC and network namespaces under a "
             "seccomp filter (the worker refuses to start where namespaces are unavailable); off: rlimits only, "
             "for hosts that cannot have namespaces and run only generators their operator trusts")
      .value("witgen-temp-dir", defaults.witgen_temp_dir,
             "where each generator run gets its own directory (default: /dev/shm when writable, else $TMPDIR or "
             "/tmp): the witness is read back from there")
      .value("device-memory-budget", auto_value,
             "device memory this worker uses at most, resident circuits included (bytes, or e.g. 24GiB, 80GB; "
             "auto: free memory at start minus 1 GiB; none: the whole device). Key points that do not fit are "
             "streamed from pinned host memory at every proof")
      .value("msm-window-bits", "auto", "GPU MSM window bits, 2..24 (auto: each MSM's cost-model choice)")
      .value("msm-waves", "auto", "GPU MSM bucket-accumulation waves, 1..64 (auto: the measured default)")
      .value("shifted-tables", "on",
             "on: precomputed shifted H bases where the device has room, and a small circuit's witness "
             "queries' too; off: never "
             "(ZKFARM_SHIFTED_BASES=0, read once at start, also turns them off)")
      .value("host-wait", "auto",
             "how proving threads wait for the GPU: spin (a core each), yield (spin, giving the core up), block "
             "(sleep until woken), auto (the CUDA runtime's choice: spin)")
      .value("drain-timeout-s", whole_seconds(defaults.drain_timeout), "how long SIGTERM waits for held tasks")
      .value("inject-fault", defaults.inject_fault, "TEST ONLY: corrupt-proof")
      .value("prove-delay-ms", millis(defaults.prove_delay), "TEST ONLY: sleep before each proof")
      .value("witgen-delay-ms", millis(defaults.witgen_delay), "TEST ONLY: sleep before each witness generator run")
      .value("curve-server-key", defaults.curve_server_key, "CURVE: the coordinator's Z85 public key")
      .value("curve-server-key-file", "", "CURVE: file with the coordinator's Z85 public key")
      .value("curve-secret-key-file", "", "CURVE: file with this worker's Z85 secret key")
      .value("metrics-listen", defaults.metrics_listen,
             "HOST:PORT serving Prometheus /metrics; auto: 0.0.0.0:<9470 + device ordinal>, "
             "--cpu 0.0.0.0:9469; \"\" disables; port 0 picks a free one")
      .flag("help", "print this help");
  WorkerConfig config;
  std::unique_ptr<prover::Prover> prover;
  try {
    flags.parse(argc, argv);
    if (flags.is_set("help")) {
      std::printf("usage: zkfarm-worker (--cpu | --device N) [flags]\n%s", flags.help().c_str());
      return 0;
    }
    if (flags.is_set("cpu") == !flags.get("device").empty())
      throw FlagError("give exactly one of --cpu and --device N");
    const auto slots = static_cast<std::uint32_t>(flags.get_int("slots", 1, 64));
    const auto prefetch = static_cast<std::uint32_t>(flags.get_int("prefetch", 0, 64));
    if (!flags.get("device").empty()) {
      // The device is opened first (cudaSetDevice before any other CUDA
      // work); an ordinal this process cannot see, or a build without CUDA,
      // fails here, exit 2.
      const int ordinal = static_cast<int>(flags.get_int("device", 0, 1023));
      prover::DeviceConfig device_config;
      try {
        device_config = prover::parse_device_config(flags.get("device-memory-budget"), flags.get("msm-window-bits"),
                                                    flags.get("msm-waves"), flags.get("shifted-tables"));
        device_config.host_wait = prover::parse_host_wait(flags.get("host-wait"));
      } catch (const std::invalid_argument& e) {
        throw FlagError(e.what());
      }
      if (prover::shifted_tables_off_by_environment(std::getenv("ZKFARM_SHIFTED_BASES")))
        device_config.shifted_tables = false;
      // --slots proofs at once on the device (DeviceConfig::lanes).
      device_config.lanes = slots;
      // The witnesses in flight at once: the page-locked buffers kept.
      device_config.witness_buffers = slots + prefetch;
      prover = prover::Prover::cuda(ordinal, device_config);
      std::fprintf(stderr, "zkfarm-worker: proving on CUDA device %d (%s, %s), %s\n", ordinal,
                   prover->device().name.c_str(), prover->device().uuid.c_str(), device_config.summary().c_str());
    } else {
      prover = prover::Prover::cpu();
    }
    config.worker_id = flags.get("id").empty()
                           ? host + (flags.get("device").empty() ? "/cpu" : "/gpu" + flags.get("device"))
                           : flags.get("id");
    if (!flags.get_list("coordinator").empty()) config.coordinators = flags.get_list("coordinator");
    for (std::size_t i = 0; i < config.coordinators.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (config.coordinators[i] == config.coordinators[j])
          throw FlagError("--coordinator " + config.coordinators[i] + " is given twice");
    config.redis_url = flags.get("redis");
    config.artifacts = flags.get("artifacts");
    if (config.artifacts.empty()) throw FlagError("--artifacts is required");
    config.key_prefix = flags.get("prefix");
    config.witness_roots = flags.get_list("witness-root");
    const bool remote_store = is_http_url(config.artifacts);
    if (remote_store) {
      if (const std::string problem = check_http_url(config.artifacts); !problem.empty())
        throw FlagError("--artifacts " + redact_url(config.artifacts) + ": " + problem);
      if (flags.get("cache-dir").empty()) throw FlagError("--artifacts is a URL: give --cache-dir too");
      if (flags.get("redis").empty())
        throw FlagError("--artifacts is a URL: give --redis too (the circuit records hold the files' sha256)");
    }
    try {
      make_witness_policy(config.witness_roots, remote_store ? "" : config.artifacts, config.key_prefix);
    } catch (const std::invalid_argument& e) {
      throw FlagError(e.what());
    }
    config.cache_dir = flags.get("cache-dir");
    config.cache_budget = flags.get("cache-budget");
    try {
      CacheBudget::parse(config.cache_budget, 0);
    } catch (const std::invalid_argument& e) {
      throw FlagError(e.what());
    }
    config.ca_file = flags.get("ca-file");
    if (!flags.get_list("witness-url-allow").empty()) config.witness_url_allow = flags.get_list("witness-url-allow");
    try {
      parse_url_policy(config.witness_url_allow);
    } catch (const std::invalid_argument& e) {
      throw FlagError(e.what());
    }
    if (!config.ca_file.empty() && ::access(config.ca_file.c_str(), R_OK) != 0)
      throw FlagError("--ca-file '" + config.ca_file + "': not a readable file");
    config.slots = slots;
    config.prefetch = prefetch;
    config.max_resident = static_cast<std::size_t>(flags.get_int("max-resident", 1, 1024));
    if (flags.get("witgen-workers") == kAutoValue) {
      config.witgen_workers = default_witgen_workers(!flags.get("device").empty());
    } else {
      config.witgen_workers = static_cast<std::uint32_t>(flags.get_int("witgen-workers", 0, 1024));
    }
    config.witgen_limits.timeout = std::chrono::seconds(flags.get_int("witgen-timeout-s", 1, 86400));
    config.witgen_limits.cpu_seconds = static_cast<std::uint64_t>(flags.get_int("witgen-timeout-s", 1, 86400));
    config.witgen_limits.memory_bytes = static_cast<std::uint64_t>(flags.get_int("witgen-memory-mib", 64, 1 << 24)) << 20;
    config.witgen_temp_dir = flags.get("witgen-temp-dir");
    if (flags.get("witgen-sandbox") != "on" && flags.get("witgen-sandbox") != "off")
      throw FlagError("--witgen-sandbox: expected on or off, got '" + flags.get("witgen-sandbox") + "'");
    config.witgen_limits.sandbox = flags.get("witgen-sandbox") == "on";
    config.drain_timeout = std::chrono::seconds(flags.get_int("drain-timeout-s", 0, 86400));
    config.inject_fault = flags.get("inject-fault");
    if (!config.inject_fault.empty() && config.inject_fault != "corrupt-proof")
      throw FlagError("--inject-fault: unknown fault '" + config.inject_fault + "'");
    config.prove_delay = std::chrono::milliseconds(flags.get_int("prove-delay-ms", 0, 3600000));
    config.witgen_delay = std::chrono::milliseconds(flags.get_int("witgen-delay-ms", 0, 3600000));
    if (!flags.get("curve-server-key").empty() && !flags.get("curve-server-key-file").empty())
      throw FlagError("give one of --curve-server-key and --curve-server-key-file");
    if (!flags.get("curve-server-key-file").empty())
      config.curve_server_key = read_curve_key_file(flags.get("curve-server-key-file"));
    else
      config.curve_server_key = flags.get("curve-server-key");
    if (!config.curve_server_key.empty()) {
      if (!is_curve_key(config.curve_server_key))
        throw FlagError("--curve-server-key: not a 40-character Z85 CURVE public key");
      if (flags.get("curve-secret-key-file").empty())
        throw FlagError("--curve-server-key needs --curve-secret-key-file");
      config.curve_secret_key = read_curve_key_file(flags.get("curve-secret-key-file"));
    }
    if (!config.redis_url.empty()) RedisUrl::parse(config.redis_url);  // fail fast on a bad URL
    config.metrics_listen = flags.get("metrics-listen");
    if (config.metrics_listen == kAutoValue)
      config.metrics_listen =
          metrics::default_worker_bind_address(flags.get("device").empty() ? -1 : flags.get_int("device", 0, 1023));
    check_metrics_listen(config.metrics_listen);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkfarm-worker: %s\n", e.what());
    return 2;
  }
  set_log_component("worker[" + config.worker_id + "]");
  init_log_from_env();
  // Descendants of generator runs that lose their parent are reparented
  // here, not to the host's (or container's) PID 1, and reaped after each
  // run: on Kubernetes the worker may be PID 1 itself.
  try {
    witgen::become_subreaper();
  } catch (const std::exception& e) {
    ZKLOG(kWarning) << e.what() << ": orphaned generator processes go to the host's init";
  }
  // Fail closed: a worker that cannot sandbox generators does not start,
  // unless its operator said --witgen-sandbox=off.
  if (config.witgen_workers > 0 && config.witgen_limits.sandbox) {
    try {
      witgen::check_sandbox(config.witgen_temp_dir.empty() ? default_witgen_temp_dir() : config.witgen_temp_dir);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "zkfarm-worker: %s\n", e.what());
      return 2;
    }
  } else if (config.witgen_workers > 0) {
    ZKLOG(kError) << "--witgen-sandbox=off: witness generators run with rlimits only -- a generator can read this "
                     "worker's files, keys and other jobs' witnesses it can reach, its memory and environment, and "
                     "the network; run only generators you trust";
  }
  try {
    Worker worker(config, std::move(prover));
    // Bound before run(): a taken port is a start-up error (exit 2).
    std::unique_ptr<metrics::MetricsEndpoint> metrics_endpoint;
    try {
      metrics_endpoint = serve_metrics(config.metrics_listen, worker.metrics());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "zkfarm-worker: %s\n", e.what());
      return 2;
    }
    return worker.run();
  } catch (const std::exception& e) {
    ZKLOG(kError) << e.what();
    return 1;
  }
}
