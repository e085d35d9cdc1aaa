// soak_test.cc -- 500 small jobs through 4 CPU workers with a worker and the
// coordinator killed (SIGKILL) midway: every job ends done, exactly once,
// with every partition proof verifying.
//
// Tagged "manual" and "soak": not part of `bazel test //...`; run it with
// tools/soak.sh (or `bazel test //tests/cluster:soak_test`). It prints its
// numbers (jobs, partitions, wall time, jobs per second) for BENCHMARKS.md;
// it asserts only correctness, never speed.
#include <signal.h>

#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "tests/cluster/farm_fixture.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::size_t env_or(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<std::size_t>(std::stoul(v)) : fallback;
}

// Like eventually(), but polls twice a second: the predicate costs one Redis
// round trip per job, and the farm needs the CPU.
bool slowly(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(500ms);
  }
}

TEST_F(FarmTest, SoakFiveHundredJobsWithAWorkerAndTheCoordinatorKilled) {
  const std::size_t num_jobs = env_or("ZKFARM_SOAK_JOBS", 500);
  const std::size_t num_workers = 4;
  start_coordinator();
  for (std::size_t i = 0; i < num_workers; ++i) start_worker("w" + std::to_string(i + 1));
  const std::string bn = "file://" + witness_file("bn128_mul.wtns");
  const std::string bls = "file://" + witness_file("bls12381_mul.wtns");

  // Jobs of 1..3 partitions, alternating curves, priorities mixed.
  static const char* kPriorities[] = {"normal", "high", "low", "normal"};
  std::vector<std::string> ids;
  std::map<std::string, std::size_t> partitions;
  std::size_t total_partitions = 0;
  const auto start = Clock::now();
  for (std::size_t i = 0; i < num_jobs; ++i) {
    const bool use_bls = i % 2 == 1;
    const std::size_t n = 1 + i % 3;
    const std::string id = "soak-" + std::to_string(i);
    farm::submit(options_, job_json(id, use_bls ? bls12381_.id : bn254_.id,
                                     std::vector<std::string>(n, use_bls ? bls : bn), kPriorities[i % 4]));
    ids.push_back(id);
    partitions[id] = n;
    total_partitions += n;
  }
  RedisClient redis(options_.redis_url);
  KeyLayout keys;
  auto done_count = [&] {
    std::size_t n = 0;
    for (const auto& id : ids) n += redis.command({"EXISTS", keys.done(id)}).as_integer() == 1;
    return n;
  };
  // A quarter in: SIGKILL a worker (whatever it holds goes back to the queue).
  ASSERT_TRUE(slowly([&] { return done_count() >= num_jobs / 4; }, 20min)) << logs();
  workers_[1]->signal(SIGKILL);
  const std::size_t done_at_worker_kill = done_count();
  // Half-way: SIGKILL the coordinator, restart it a second later.
  ASSERT_TRUE(slowly([&] { return done_count() >= num_jobs / 2; }, 20min)) << logs();
  kill_coordinator();
  const std::size_t done_at_coordinator_kill = done_count();
  std::this_thread::sleep_for(1s);
  start_coordinator();
  ASSERT_TRUE(slowly([&] { return done_count() == num_jobs; }, 30min))
      << done_count() << " of " << num_jobs << " done\n" << logs();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();

  // Every job done exactly once: one done marker, one "finished" event, one
  // "partition_proved" event per partition (a partition proved twice, e.g.
  // before and after the coordinator restart, would show as two), all proofs
  // valid.
  std::size_t verified = 0;
  for (const auto& id : ids) {
    auto s = farm::status(options_, id);
    ASSERT_TRUE(s) << id;
    ASSERT_EQ(s->state, "done") << id << ": " << s->error;
    EXPECT_EQ(redis.command({"LLEN", keys.done(id)}).as_integer(), 1) << id;
    std::size_t finished = 0, proved = 0;
    const RedisReply events = redis.command({"LRANGE", keys.job_events(id), "0", "-1"});
    for (const auto& e : events.as_array()) {
      const std::string type = json::parse(e.as_string())["type"];
      finished += type == "finished";
      proved += type == "partition_proved";
    }
    EXPECT_EQ(finished, 1u) << id;
    EXPECT_EQ(proved, partitions[id]) << id;
    expect_result_verifies(id, partitions[id]);
    verified += partitions[id];
  }
  EXPECT_EQ(redis.command({"LLEN", keys.processing("c1")}).as_integer(), 0);
  for (auto p : kAllPriorities) EXPECT_EQ(redis.command({"LLEN", keys.queue(p)}).as_integer(), 0);
  EXPECT_EQ(redis.command({"LLEN", keys.rejected()}).as_integer(), 0);

  std::cout << "SOAK jobs=" << num_jobs << " partitions=" << total_partitions << " verified=" << verified
            << " workers=" << num_workers << " seconds=" << seconds << " jobs_per_s=" << num_jobs / seconds
            << " partitions_per_s=" << total_partitions / seconds << " done_at_worker_kill=" << done_at_worker_kill
            << " done_at_coordinator_kill=" << done_at_coordinator_kill << std::endl;
}

}  // namespace
}  // namespace zkfarm::testing
