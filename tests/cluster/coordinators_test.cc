// coordinators_test.cc -- several coordinators share one Redis: each job is
// taken by exactly one of them (BLMOVE into its own processing list), none is
// proved twice, and a coordinator killed mid-run recovers its processing
// list when it restarts under the same --id. Workers given several
// --coordinator endpoints serve all of them and, when one dies and another
// takes its jobs over, go on proving for the survivor without a restart. A
// coordinator that finds its lease gone exits with status 3, which the
// shipped units restart.
#include <signal.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "tests/cluster/farm_fixture.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

bool log_contains_text(const std::string& log, const std::string& text) { return log.find(text) != std::string::npos; }

std::size_t count_occurrences(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

TEST_F(FarmTest, TwoCoordinatorsShareOneRedisAndNeverRunAJobTwice) {
  // Small active-job caps so both coordinators must keep taking jobs.
  start_coordinator({"--max-active-jobs", "4"});
  const int port2 = free_port();
  auto start_second = [&](int generation) {
    return std::make_unique<Process>(
        std::vector<std::string>{runfile("coordinator/zkfarm-coordinator"), "--redis", options_.redis_url, "--id",
                                 "c2", "--listen", "tcp://127.0.0.1:" + std::to_string(port2), "--artifacts",
                                 options_.artifacts, "--heartbeat-ms", kTestHeartbeatMs, "--dead-after-ms", kTestDeadAfterMs,
                                 "--intake-poll-ms", "50", "--max-active-jobs", "4"},
        dir_->file("coordinator-c2-" + std::to_string(generation) + ".log"),
        std::map<std::string, std::string>{{"ZKFARM_METRICS_LISTEN", "127.0.0.1:0"}});
  };
  auto second = start_second(1);
  const std::string to_second = "tcp://127.0.0.1:" + std::to_string(port2);
  start_worker("w1");
  start_worker("w2");
  // c2's workers are slow, so c2 always has jobs in progress when it dies.
  start_worker("w3", {"--coordinator", to_second, "--prove-delay-ms", "200"});
  start_worker("w4", {"--coordinator", to_second, "--prove-delay-ms", "200"});

  const std::string bn = "file://" + witness_file("bn128_mul.wtns");
  const std::string bls = "file://" + witness_file("bls12381_mul.wtns");
  const std::size_t num_jobs = 120;
  std::map<std::string, std::size_t> partitions;
  for (std::size_t i = 0; i < num_jobs; ++i) {
    const std::string id = "shared-" + std::to_string(i);
    const bool use_bls = i % 3 == 2;
    partitions[id] = 1 + i % 2;
    farm::submit(options_, job_json(id, use_bls ? bls12381_.id : bn254_.id,
                                    std::vector<std::string>(partitions[id], use_bls ? bls : bn)));
  }
  RedisClient redis(options_.redis_url);
  KeyLayout keys;
  auto done_count = [&] {
    std::size_t n = 0;
    for (const auto& [id, _] : partitions) n += redis.command({"EXISTS", keys.done(id)}).as_integer() == 1;
    return n;
  };
  // A third of the way in, SIGKILL the second coordinator and restart it:
  // whatever its processing list holds must resume, nothing run twice.
  auto wait_done = [&](std::size_t n, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (done_count() < n) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(200ms);
    }
    return true;
  };
  ASSERT_TRUE(wait_done(num_jobs / 3, 10min)) << logs();
  second->signal(SIGKILL);
  second->wait_for(10s);
  const long long orphaned = redis.command({"LLEN", keys.processing("c2")}).as_integer();
  second = start_second(2);
  ASSERT_TRUE(wait_done(num_jobs, 20min)) << done_count() << " of " << num_jobs << " done\n" << logs();

  std::map<std::string, std::size_t> by_owner;
  for (const auto& [id, n] : partitions) {
    auto s = farm::status(options_, id);
    ASSERT_TRUE(s) << id;
    ASSERT_EQ(s->state, "done") << id << ": " << s->error;
    ++by_owner[s->owner];
    EXPECT_EQ(redis.command({"LLEN", keys.done(id)}).as_integer(), 1) << id;
    std::size_t finished = 0, proved = 0;
    const RedisReply events = redis.command({"LRANGE", keys.job_events(id), "0", "-1"});
    for (const auto& e : events.as_array()) {
      const std::string type = json::parse(e.as_string())["type"];
      finished += type == "finished";
      proved += type == "partition_proved";
    }
    EXPECT_EQ(finished, 1u) << id;
    EXPECT_EQ(proved, n) << id << ": a partition was proved and stored twice";
    expect_result_verifies(id, n);
  }
  // Both coordinators worked, and each job started on one coordinator only
  // (the restarted c2 may start its own jobs again: a resume, same owner).
  EXPECT_GT(by_owner["c1"], 0u);
  EXPECT_GT(by_owner["c2"], 0u);
  EXPECT_EQ(by_owner["c1"] + by_owner["c2"], num_jobs);
  const std::string c1_log = coordinator_->log();
  const std::string c2_log = read_file(dir_->file("coordinator-c2-1.log")) + read_file(dir_->file("coordinator-c2-2.log"));
  for (const auto& [id, n] : partitions) {
    const std::string started = "job " + id + " started";
    const std::size_t in_c1 = count_occurrences(c1_log, started + ":");
    const std::size_t in_c2 = count_occurrences(c2_log, started + ":");
    EXPECT_TRUE((in_c1 == 1 && in_c2 == 0) || (in_c1 == 0 && in_c2 >= 1)) << id << " started " << in_c1
                                                                            << " times on c1, " << in_c2 << " on c2";
  }
  EXPECT_EQ(redis.command({"LLEN", keys.processing("c1")}).as_integer(), 0);
  EXPECT_EQ(redis.command({"LLEN", keys.processing("c2")}).as_integer(), 0);
  for (auto p : kAllPriorities) EXPECT_EQ(redis.command({"LLEN", keys.queue(p)}).as_integer(), 0);
  // With 4 jobs at a time and most of the queue left, c2 held jobs when it
  // died; the restarted c2 recovered them from its processing list.
  EXPECT_GT(orphaned, 0);
  EXPECT_NE(read_file(dir_->file("coordinator-c2-2.log")).find("recovering"), std::string::npos) << logs();
}

TEST_F(FarmTest, WithLeasesASurvivingCoordinatorTakesOverADeadOnesJobs) {
  // Leases on: c2 is SIGKILLed holding jobs and never comes back; c1 takes
  // its processing list over once c2's lease expires and finishes them,
  // keeping the partitions c2 had already proved.
  const std::vector<std::string> lease = {"--takeover-after-ms", "1500", "--max-active-jobs", "3"};
  start_coordinator(lease);
  const int port2 = free_port();
  std::vector<std::string> argv2 = {runfile("coordinator/zkfarm-coordinator"), "--redis", options_.redis_url, "--id",
                                    "c2", "--listen", "tcp://127.0.0.1:" + std::to_string(port2), "--artifacts",
                                    options_.artifacts, "--heartbeat-ms", kTestHeartbeatMs, "--dead-after-ms", kTestDeadAfterMs,
                                    "--intake-poll-ms", "50"};
  argv2.insert(argv2.end(), lease.begin(), lease.end());
  Process second(argv2, dir_->file("coordinator-c2.log"), {{"ZKFARM_METRICS_LISTEN", "127.0.0.1:0"}});
  // c2's worker is slow, so c2 is surely mid-job when it dies.
  start_worker("w1");
  start_worker("w2", {"--coordinator", "tcp://127.0.0.1:" + std::to_string(port2), "--prove-delay-ms", "400"});
  const std::string bn = "file://" + witness_file("bn128_mul.wtns");
  std::map<std::string, std::size_t> partitions;
  for (std::size_t i = 0; i < 24; ++i) {
    const std::string id = "lease-" + std::to_string(i);
    partitions[id] = 3;
    farm::submit(options_, job_json(id, bn254_.id, {bn, bn, bn}));
  }
  RedisClient redis(options_.redis_url);
  KeyLayout keys;
  ASSERT_TRUE(eventually([&] { return log_contains_text(second.log(), "partition 0 verified"); }, 60s)) << logs();
  second.signal(SIGKILL);
  second.wait_for(10s);
  const long long orphaned = redis.command({"LLEN", keys.processing("c2")}).as_integer();
  EXPECT_GT(orphaned, 0) << logs();
  for (const auto& [id, n] : partitions) {
    farm::JobStatus s = wait_job(id, 120s);
    ASSERT_EQ(s.state, "done") << id << ": " << s.error << logs();
    const RedisReply events = redis.command({"LRANGE", keys.job_events(id), "0", "-1"});
    std::size_t proved = 0;
    for (const auto& e : events.as_array()) proved += json::parse(e.as_string())["type"] == "partition_proved";
    EXPECT_EQ(proved, n) << id << ": a partition was proved and stored twice";
    expect_result_verifies(id, n);
  }
  EXPECT_EQ(redis.command({"LLEN", keys.processing("c2")}).as_integer(), 0);
  EXPECT_EQ(redis.command({"LLEN", keys.processing("c1")}).as_integer(), 0);
  EXPECT_NE(coordinator_->log().find("jobs of coordinator c2 (lease expired)"), std::string::npos) << logs();
  EXPECT_NE(coordinator_->log().find("already proved"), std::string::npos) << logs();
}

TEST_F(FarmTest, WorkersServeEveryCoordinatorAndFollowATakeover) {
  // Two workers, each with a session at both coordinators (one credit
  // budget of one slot across them). c2 is SIGKILLed mid-run; c1 takes its
  // jobs over and the same worker processes prove them for c1.
  const std::vector<std::string> lease = {"--takeover-after-ms", "1500", "--max-active-jobs", "3"};
  start_coordinator(lease);
  const int port2 = free_port();
  const std::string to_first = "tcp://127.0.0.1:" + std::to_string(coordinator_port_);
  const std::string to_second = "tcp://127.0.0.1:" + std::to_string(port2);
  std::vector<std::string> argv2 = {runfile("coordinator/zkfarm-coordinator"), "--redis", options_.redis_url, "--id",
                                    "c2", "--listen", to_second, "--artifacts", options_.artifacts, "--heartbeat-ms",
                                    kTestHeartbeatMs, "--dead-after-ms", kTestDeadAfterMs, "--intake-poll-ms", "50"};
  argv2.insert(argv2.end(), lease.begin(), lease.end());
  Process second(argv2, dir_->file("coordinator-c2.log"), {{"ZKFARM_METRICS_LISTEN", "127.0.0.1:0"}});
  for (const char* id : {"w1", "w2"})
    start_worker(id, {"--coordinator", to_first, "--coordinator", to_second, "--prove-delay-ms", "200"});
  const std::string bn = "file://" + witness_file("bn128_mul.wtns");
  const std::string bls = "file://" + witness_file("bls12381_mul.wtns");
  std::map<std::string, std::size_t> partitions;
  for (std::size_t i = 0; i < 16; ++i) {
    const std::string id = "follow-" + std::to_string(i);
    partitions[id] = 2;
    farm::submit(options_, i % 2 ? job_json(id, bls12381_.id, {bls, bls}) : job_json(id, bn254_.id, {bn, bn}));
  }
  // Both coordinators hand tasks to both workers (one slot each).
  for (const auto& worker : workers_)
    for (const char* coordinator : {"from coordinator c1", "from coordinator c2"})
      ASSERT_TRUE(eventually([&] { return log_contains_text(worker->log(), coordinator); }, 60s))
          << worker->log_path() << " never got a task " << coordinator << logs();
  RedisClient redis(options_.redis_url);
  KeyLayout keys;
  second.signal(SIGKILL);
  second.wait_for(10s);
  std::vector<std::size_t> tasks_at_kill;
  for (const auto& worker : workers_) tasks_at_kill.push_back(count_occurrences(worker->log(), "from coordinator c1"));
  for (const auto& [id, n] : partitions) {
    farm::JobStatus s = wait_job(id, 120s);
    ASSERT_EQ(s.state, "done") << id << ": " << s.error << logs();
    const RedisReply events = redis.command({"LRANGE", keys.job_events(id), "0", "-1"});
    std::size_t proved = 0;
    for (const auto& e : events.as_array()) proved += json::parse(e.as_string())["type"] == "partition_proved";
    EXPECT_EQ(proved, n) << id << ": a partition was proved and stored twice";
    expect_result_verifies(id, n);
  }
  EXPECT_EQ(redis.command({"LLEN", keys.processing("c2")}).as_integer(), 0);
  EXPECT_NE(coordinator_->log().find("jobs of coordinator c2 (lease expired)"), std::string::npos) << logs();
  // The same processes went on proving for the survivor: each got tasks from
  // c1 after c2 died, and none was restarted.
  for (std::size_t k = 0; k < workers_.size(); ++k) {
    EXPECT_GT(count_occurrences(workers_[k]->log(), "from coordinator c1"), tasks_at_kill[k]) << logs();
    EXPECT_TRUE(workers_[k]->running()) << logs();
  }
}

TEST_F(FarmTest, ACoordinatorThatLostItsLeaseStops) {
  // Paused (SIGSTOP) past its lease, a coordinator may have been taken over:
  // on waking it must stop instead of running jobs another one now owns.
  start_coordinator({"--takeover-after-ms", "600"});
  RedisClient redis(options_.redis_url);
  const std::string lease = KeyLayout().coordinator_lease("c1");
  ASSERT_TRUE(eventually([&] { return redis.command({"EXISTS", lease}).as_integer() == 1; }, 20s)) << logs();
  coordinator_->signal(SIGSTOP);
  // Stopped, it cannot renew: the lease expires (600 ms) while it sleeps.
  const bool expired = eventually([&] { return redis.command({"EXISTS", lease}).as_integer() == 0; }, 20s);
  coordinator_->signal(SIGCONT);
  ASSERT_TRUE(expired) << logs();
  auto status = coordinator_->wait_for(20s);
  ASSERT_TRUE(status) << logs();
  EXPECT_NE(coordinator_->log().find("lease lost"), std::string::npos) << logs();
  // Not 0: deploy/systemd's Restart=on-failure restarts it.
  EXPECT_TRUE(WIFEXITED(*status)) << *status;
  EXPECT_EQ(WEXITSTATUS(*status), 3) << logs();
}

TEST_F(FarmTest, ACoordinatorWhoseLeaseWasTakenExitsNonZero) {
  // The lease key gone under a running coordinator (taken over, or deleted
  // by hand): it stops at its next renewal with status 3, its jobs left in
  // its processing list for whoever resumes them.
  start_coordinator({"--takeover-after-ms", "1500"});
  RedisClient redis(options_.redis_url);
  const std::string lease = KeyLayout().coordinator_lease("c1");
  ASSERT_TRUE(eventually([&] { return redis.command({"EXISTS", lease}).as_integer() == 1; }, 20s)) << logs();
  redis.command({"DEL", lease});
  auto status = coordinator_->wait_for(20s);
  ASSERT_TRUE(status) << logs();
  EXPECT_TRUE(WIFEXITED(*status)) << *status;
  EXPECT_EQ(WEXITSTATUS(*status), 3) << logs();
  EXPECT_NE(coordinator_->log().find("lease lost"), std::string::npos) << logs();
  // Restarted (as the units do), it holds its lease again and proves.
  start_coordinator();
  start_worker("w1");
  farm::submit(options_, job_json("after", bn254_.id, {"file://" + witness_file("bn128_mul.wtns")}));
  EXPECT_EQ(wait_job("after", 60s).state, "done") << logs();
  EXPECT_TRUE(eventually([&] { return redis.command({"EXISTS", lease}).as_integer() == 1; }, 20s)) << logs();
}

}  // namespace
}  // namespace zkfarm::testing
