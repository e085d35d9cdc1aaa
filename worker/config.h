// config.h -- zkfarm-worker's settings: every default written once, here,
// beside its reason. main.cc's flags take their defaults from a
// default-constructed WorkerConfig, so `--help` and the code never disagree.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/defaults.h"
#include "witgen/witness_generator.h"

namespace zkfarm {

// The value of the flags whose default is computed at start
// (--witgen-workers, --metrics-listen, --device-memory-budget).
inline constexpr std::string_view kAutoValue = "auto";

struct WorkerConfig {
  // --id; main() derives <host>/cpu or <host>/gpu<N> when it is not given.
  std::string worker_id;
  // Coordinator endpoints, one session each (at least one): the farm's
  // default endpoint, as the coordinator's --listen.
  std::vector<std::string> coordinators{kDefaultCoordinatorEndpoint};
  std::string redis_url;  // for redis:// witnesses; empty: none
  std::string key_prefix = kDefaultKeyPrefix;  // redis:// witnesses must name keys under it
  // --witness-root: file:// witnesses are read only under these; empty: the
  // directory holding the artifact store (make_witness_policy).
  std::vector<std::string> witness_roots;
  std::string ca_file;  // --ca-file: PEM CA bundle for https:// (empty: the system CAs)
  // --witness-url-allow: where http(s):// witnesses may come from (hosts,
  // URL prefixes, "public", "none": cluster/http_fetch.h, UrlPolicy); the
  // default and its reason are in cluster/defaults.h.
  std::vector<std::string> witness_url_allow{kDefaultWitnessUrlAllow};
  std::string artifacts;  // required: no store is a sensible guess
  std::string cache_dir;  // empty: use the store in place
  // --cache-budget: most bytes of circuit files in cache_dir, least
  // recently used circuits removed first (cache_budget.h, whose
  // auto_budget() gives the default and its reason); "none": unbounded.
  std::string cache_budget{kAutoValue};
  // Partitions proved at once. One: a device proves fastest one proof at a
  // time (the kernels fill it), and the CPU prover uses every core.
  std::uint32_t slots = 1;
  // Witnesses fetched and parsed ahead of the provers (0: each prover
  // fetches and parses its own task's witness before proving it). One is
  // enough to hide a fetch and a parse behind a proof, which takes longer;
  // each more holds one more witness in (page-locked) memory.
  std::uint32_t prefetch = 1;
  // Circuits kept loaded (least recently used evicted): a farm serves a few
  // circuits at a time, and a PoRep-sized key is tens of GiB.
  std::size_t max_resident = 4;
  // The witness generator pool (input partitions): threads (--witgen-workers
  // auto: default_witgen_workers(); one when built in code, as on the CPU),
  // each run's limits, and where runs get their temporary directories.
  std::uint32_t witgen_workers = 1;
  // Five minutes of wall clock and of CPU, 16 GiB of address space: far
  // above what a circom generator needs for an honest input, while a
  // runaway input still ends (and is refused) instead of starving the host.
  witgen::RunLimits witgen_limits{
      .timeout = std::chrono::seconds(300), .cpu_seconds = 300, .memory_bytes = std::uint64_t{16384} << 20};
  std::string witgen_temp_dir;  // empty: default_witgen_temp_dir(), chosen at start
  // SIGTERM: how long held tasks may take to finish before the worker exits
  // anyway; a restart should not wait on a stuck task for long. The deploy
  // units stop a worker later than this (deploy/systemd: 300 s), so a drain
  // is never cut short by them.
  std::chrono::milliseconds drain_timeout = std::chrono::seconds(60);
  // Without a Welcome this long after saying hello, the worker warns that
  // the coordinator has not answered (naming the keys as the likely cause
  // when CURVE is on: a wrong --curve-server-key, or this worker's public
  // key missing from the coordinator's allowlist, both look like silence),
  // then repeats the warning every unanswered_repeat while it lasts. Hello
  // goes out every second (coordinator_link.h), so 5 s is five unanswered
  // hellos; 30 s keeps the log readable while the silence lasts.
  std::chrono::milliseconds unanswered_warning{5000};
  std::chrono::milliseconds unanswered_repeat{30000};
  // ZeroMQ CURVE: the coordinator's public key and our secret key (Z85);
  // both empty: plaintext.
  std::string curve_server_key, curve_secret_key;
  // Test-only fault injection: "" | "corrupt-proof" (return a wrong proof).
  std::string inject_fault;
  std::chrono::milliseconds prove_delay{0};  // test-only: sleep before proving
  std::chrono::milliseconds witgen_delay{0};  // test-only: sleep before running a witness generator
  // Where /metrics is served (docs/METRICS.md); main() binds it. auto:
  // metrics::default_worker_bind_address of the device (one port per
  // device, so the workers of a host never collide); "" serves none.
  std::string metrics_listen{kAutoValue};

  // Tasks a worker holds at once, across all coordinators: its provers'
  // slots, the witnesses prepared ahead of them and the generator pool
  // (credits_policy.h).
  std::uint32_t task_budget() const { return slots + prefetch + witgen_workers; }
};

// --witgen-workers auto: the host's cores minus 2 with a device (the
// provers' threads feed the device and need little CPU), 1 on the CPU (the
// CPU prover uses every core).
std::uint32_t default_witgen_workers(bool on_device);

// --witgen-temp-dir empty: /dev/shm when writable (the witness is read back
// from memory), else $TMPDIR, else /tmp.
std::string default_witgen_temp_dir();

}  // namespace zkfarm
