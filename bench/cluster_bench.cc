// cluster_bench.cc -- coordinator overhead and throughput of the farm with
// CPU workers on tiny circuits (so proving costs little and the farm's own
// costs show).
//
//   bazel run //bench:cluster_bench -- [--jobs N] [--partitions P]
//       [--workers 1,2,4] [--curve bn254|bls12381] [--serial N]
//       [--appendfsync always|everysec]
//
// For each worker count it starts a private redis-server (AOF with
// appendfsync everysec as deploy/ runs it, or always as the tests do), a
// zkfarm-coordinator and that many zkfarm-worker
// --cpu processes (one prover thread each), queues N jobs of P partitions
// before the workers join, and measures from the moment the workers start
// until every job is done. Per partition the coordinator records (in each
// proof entry's "coordinator" object):
//   wait_s    pending -> dispatched (scheduling latency; includes waiting for
//             a free worker, so it grows with the backlog)
//   worker_s  dispatched -> result received (worker time plus transport)
//   accept_s  result received -> verified and stored in Redis (the
//             coordinator's overhead per partition: verification, Redis)
// and the worker reports its own prove time. Prints one Markdown table row
// per worker count. With --serial N it then measures latency on an idle
// farm (one worker): N one-partition critical jobs, each submitted only
// after the previous one is done; submit -> done, and the coordinator's
// share of it. Asserts nothing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cluster/farm_api.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "tests/harness/harness.h"

namespace {

using namespace zkfarm;
using namespace zkfarm::testing;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Options {
  std::size_t jobs = 200, partitions = 2;
  std::vector<std::size_t> workers = {1, 2, 4};
  std::string curve = "bn254";
  std::size_t serial = 0;
  std::string appendfsync = "everysec";
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--jobs") o.jobs = std::stoul(value());
    else if (arg == "--partitions") o.partitions = std::stoul(value());
    else if (arg == "--curve") o.curve = value();
    else if (arg == "--serial") o.serial = std::stoul(value());
    else if (arg == "--appendfsync") o.appendfsync = value();
    else if (arg == "--workers") {
      o.workers.clear();
      std::stringstream list(value());
      for (std::string n; std::getline(list, n, ',');) o.workers.push_back(std::stoul(n));
    } else {
      throw std::invalid_argument("unknown argument " + arg +
                                  " (usage: cluster_bench [--jobs N] [--partitions P] [--workers 1,2,4] "
                                  "[--curve bn254|bls12381] [--serial N] [--appendfsync always|everysec])");
    }
  }
  if (o.curve != "bn254" && o.curve != "bls12381") throw std::invalid_argument("--curve: bn254 or bls12381");
  if (o.appendfsync != "always" && o.appendfsync != "everysec")
    throw std::invalid_argument("--appendfsync: always or everysec");
  if (o.jobs == 0 || o.partitions == 0 || o.workers.empty()) throw std::invalid_argument("nothing to run");
  return o;
}

struct Stats {
  std::vector<double> values;
  void add(double v) { values.push_back(v); }
  double percentile(double p) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    return values[std::min(values.size() - 1, static_cast<std::size_t>(p * (values.size() - 1) + 0.5))];
  }
  double mean() const {
    double s = 0;
    for (double v : values) s += v;
    return values.empty() ? 0 : s / values.size();
  }
};

// Runs the farm: with serial == 0 the throughput row, else the idle-farm
// latency row.
void run(const Options& o, std::size_t num_workers, std::size_t serial = 0) {
  TempDir dir;
  RedisServer redis_server(dir.path(),
                           RedisServer::Options{.appendonly = true, .password = "", .appendfsync = o.appendfsync});
  farm::FarmOptions options;
  options.redis_url = redis_server.url();
  options.artifacts = dir.file("artifacts");
  std::filesystem::create_directories(options.artifacts);
  const std::string fixture = o.curve == "bn254" ? "bn128_mul" : "bls12381_mul";
  const CircuitInfo circuit = farm::circuit_add(options, runfile("formats/testdata/" + fixture + ".zkey"));
  const std::string witness = dir.file("w.wtns");
  std::filesystem::copy_file(runfile("formats/testdata/" + fixture + ".wtns"), witness);
  const int port = free_port();
  Process coordinator({runfile("coordinator/zkfarm-coordinator"), "--redis", options.redis_url, "--id", "bench",
                       "--listen", "tcp://127.0.0.1:" + std::to_string(port), "--artifacts", options.artifacts,
                       "--max-active-jobs", std::to_string(std::max<std::size_t>(o.jobs, 64))},
                      dir.file("coordinator.log"),
                      {{"ZKFARM_LOG_LEVEL", "warning"}, {"ZKFARM_METRICS_LISTEN", "127.0.0.1:0"}});
  std::vector<std::string> ids;
  for (std::size_t j = 0; j < (serial ? 0 : o.jobs); ++j) {
    json job = {{"id", "bench-" + std::to_string(j)}, {"circuit", circuit.id}, {"partitions", json::array()}};
    for (std::size_t p = 0; p < o.partitions; ++p) job["partitions"].push_back({{"witness", "file://" + witness}});
    ids.push_back(farm::submit(options, job.dump()));
  }
  // Let the coordinator take in the whole backlog (it may hold all the
  // jobs) before the clock starts.
  RedisClient redis(options.redis_url);
  KeyLayout keys;
  eventually([&] { return redis.command({"LLEN", keys.queue(Priority::kNormal)}).as_integer() == 0; },
             std::chrono::seconds(60));
  const auto start = Clock::now();
  std::vector<std::unique_ptr<Process>> workers;
  for (std::size_t w = 0; w < num_workers; ++w) {
    const std::string id = "w" + std::to_string(w + 1);
    workers.push_back(std::make_unique<Process>(
        std::vector<std::string>{runfile("worker/zkfarm-worker"), "--cpu", "--id", id, "--coordinator",
                                 "tcp://127.0.0.1:" + std::to_string(port), "--redis", options.redis_url,
                                 "--artifacts", options.artifacts, "--cache-dir", dir.file("cache-" + id)},
        dir.file("worker-" + id + ".log"),
        std::map<std::string, std::string>{{"ZKFARM_THREADS", "1"}, {"ZKFARM_LOG_LEVEL", "warning"},
                                           {"ZKFARM_METRICS_LISTEN", "127.0.0.1:0"}}));
  }
  Stats latency;
  if (serial) {
    // Let the worker join and load the circuit first (one warm-up job).
    for (std::size_t j = 0; j <= serial; ++j) {
      json job = {{"id", "serial-" + std::to_string(j)}, {"circuit", circuit.id}, {"priority", "critical"},
                  {"partitions", json::array({{{"witness", "file://" + witness}}})}};
      const auto submitted = Clock::now();
      const std::string id = farm::submit(options, job.dump());
      auto s = farm::wait(options, id, std::chrono::minutes(5));
      if (!s || s->state != "done") throw std::runtime_error("job " + id + " did not finish");
      if (j > 0) {
        ids.push_back(id);
        latency.add(std::chrono::duration<double>(Clock::now() - submitted).count());
      }
    }
  }
  for (const auto& id : ids) {
    auto s = farm::wait(options, id, std::chrono::minutes(30));
    if (!s || s->state != "done")
      throw std::runtime_error("job " + id + " ended " + (s ? s->state + " " + s->error : "missing") + "\n" +
                               testing::read_file(dir.file("coordinator.log")));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Stats wait, worker, accept, prove;
  for (const auto& id : ids) {
    const json result = json::parse(*farm::result(options, id));
    for (const auto& p : result["partitions"]) {
      if (p.contains("coordinator")) {
        wait.add(p["coordinator"].value("wait_s", 0.0));
        worker.add(p["coordinator"].value("worker_s", 0.0));
        accept.add(p["coordinator"].value("accept_s", 0.0));
      }
      prove.add(p["timings"].value("total", 0.0));
    }
  }
  if (serial) {
    std::printf("| %s | idle farm, 1 worker | %zu serial critical jobs x 1 | submit->done p50/p99 %.2f / %.2f ms | "
                "accept p50 %.2f ms | worker round trip p50 %.2f ms | wait p50 %.2f ms | worker prove mean %.2f ms |\n",
                o.curve.c_str(), serial, latency.percentile(0.5) * 1e3, latency.percentile(0.99) * 1e3,
                accept.percentile(0.5) * 1e3, worker.percentile(0.5) * 1e3, wait.percentile(0.5) * 1e3,
                prove.mean() * 1e3);
    std::fflush(stdout);
    return;
  }
  const double partitions = static_cast<double>(o.jobs * o.partitions);
  std::printf("| %s | %zu | %zu x %zu | %.2f | %.1f | %.1f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.2f |\n",
              o.curve.c_str(), num_workers, o.jobs, o.partitions, seconds, o.jobs / seconds, partitions / seconds,
              accept.percentile(0.5) * 1e3, accept.percentile(0.99) * 1e3, worker.percentile(0.5) * 1e3,
              worker.percentile(0.99) * 1e3, wait.percentile(0.5) * 1e3, wait.percentile(0.99) * 1e3,
              prove.mean() * 1e3);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    std::printf(
        "| curve | workers | jobs x partitions | wall (s) | jobs/s | partitions/s | accept p50/p99 (ms) | "
        "worker round trip p50/p99 (ms) | wait p50/p99 (ms) | worker prove mean (ms) |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n");
    for (std::size_t w : o.workers) run(o, w);
    if (o.serial) run(o, 1, o.serial);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cluster_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
