// results_test.cc -- duplicate and late results are ignored safely.
//
// A test-driven peer speaks the real protocol to a real coordinator over a
// real ZeroMQ socket (hello, credits, heartbeats, results carrying a genuine
// proof of the fixture witness), so the test decides exactly when each
// result arrives: twice for one task; after its worker was declared dead and
// the partition went to another worker that is still proving it; after the
// job is done; for a task that never existed. None of them may change the
// job, count a fault, or stop the farm.
#include <nlohmann/json.hpp>
#include <thread>
#include <zmq.hpp>

#include "cluster/groth16_glue.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "formats/snarkjs_json.h"
#include "schema/messages.h"
#include "tests/cluster/farm_fixture.h"
#include "tests/cluster/scripted_peer.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

bool log_contains(const Process& p, const std::string& text) { return p.log().find(text) != std::string::npos; }

std::size_t count_occurrences(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

long long count_events(RedisClient& redis, const std::string& job_id, const std::string& type) {
  long long n = 0;
  const RedisReply events = redis.command({"LRANGE", KeyLayout().job_events(job_id), "0", "-1"});
  for (const auto& e : events.as_array())
    if (json::parse(e.as_string())["type"] == type) ++n;
  return n;
}

TEST_F(FarmTest, DuplicateAndLateResultsAreIgnoredSafely) {
  start_coordinator();
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  // A genuine proof of the fixture witness, from a real worker.
  start_worker("w1");
  farm::submit(options_, job_json("seed", bn254_.id, {w}));
  ASSERT_EQ(wait_job("seed").state, "done") << logs();
  const json seed = json::parse(*farm::result(options_, "seed"));
  const std::string good_proof =
      encode_proof<Bn254>(proof_from_json<Bn254>(seed["partitions"][0]["proof"].dump(), "seed proof"));
  workers_[0].reset();  // SIGKILL: from now on the scripted peer is the only worker
  ASSERT_TRUE(eventually([&] { return log_contains(*coordinator_, "worker w1 is dead"); }, 20s)) << logs();

  ScriptedPeer peer(coordinator_port_);
  ASSERT_TRUE(peer.hello("scripted", 2)) << logs();
  farm::submit(options_, job_json("dup", bn254_.id, {w, w}));
  ASSERT_TRUE(peer.pump(20s, [&] { return peer.tasks().size() == 2; })) << logs();
  const auto task_a = peer.tasks()[0], task_b = peer.tasks()[1];

  // 1. The same result twice: accepted once.
  peer.result(task_a.task_id, "dup", task_a.partition, good_proof);
  peer.result(task_a.task_id, "dup", task_a.partition, good_proof);
  ASSERT_TRUE(peer.pump(20s, [&] { return farm::status(options_, "dup")->proved == 1; })) << logs();
  ASSERT_TRUE(peer.pump(10s, [&] {
    return log_contains(*coordinator_, "ignored a late or unknown result for task " + std::to_string(task_a.task_id));
  })) << logs();

  // 2. The peer falls silent holding task b: declared dead, the partition
  // goes to a slow real worker; the dead session's late result arrives while
  // that worker is still proving, then again from a fresh session.
  ASSERT_TRUE(eventually([&] { return log_contains(*coordinator_, "worker scripted is dead"); }, 20s)) << logs();
  const std::size_t slow = start_worker("slow", {"--prove-delay-ms", "3000"});
  ASSERT_TRUE(eventually([&] { return log_contains(*workers_[slow], "received"); }, 20s)) << logs();
  peer.result(task_b.task_id, "dup", task_b.partition, good_proof);  // no session: rejected
  ASSERT_TRUE(peer.pump(10s, [&] { return peer.rejects() >= 1; })) << logs();
  ASSERT_TRUE(peer.hello("scripted", 0)) << logs();  // a new session, no credits
  peer.result(task_b.task_id, "dup", task_b.partition, good_proof);
  peer.result(987654321, "dup", task_b.partition, good_proof);  // a task that never existed
  ASSERT_TRUE(peer.pump(10s, [&] { return log_contains(*coordinator_, "for task 987654321"); })) << logs();
  EXPECT_EQ(farm::status(options_, "dup")->proved, 1u) << "a late result must not prove the reassigned partition";

  // The peer keeps its session (heartbeats) while the slow worker finishes.
  ASSERT_TRUE(peer.pump(60s, [&] {
    auto status = farm::status(options_, "dup");
    return status && status->terminal();
  })) << logs();
  farm::JobStatus s = wait_job("dup");
  ASSERT_EQ(s.state, "done") << s.error << logs();
  EXPECT_EQ(s.proved, 2u);
  EXPECT_EQ(s.attempts, 0u);
  expect_result_verifies("dup", 2);
  const json result = json::parse(*farm::result(options_, "dup"));
  EXPECT_EQ(result["partitions"][task_b.partition]["worker"], "slow");
  EXPECT_EQ(result["partitions"][task_a.partition]["worker"], "scripted");

  // 3. Results for the done job, valid and corrupt: nothing changes, no
  // fault is counted against anyone.
  std::string corrupt = good_proof;
  corrupt[5] ^= 0x40;
  auto ignored = [&](std::uint64_t task_id) {
    return count_occurrences(coordinator_->log(), "ignored a late or unknown result for task " +
                                                      std::to_string(task_id) + " ");
  };
  const std::size_t ignored_a = ignored(task_a.task_id), ignored_b = ignored(task_b.task_id);
  const int rejects = peer.rejects();
  peer.result(task_a.task_id, "dup", task_a.partition, corrupt);
  peer.result(task_b.task_id, "dup", task_b.partition, good_proof);
  // Wait until the coordinator has handled both: each is logged as ignored
  // (or, had the session lapsed, answered with a Reject).
  ASSERT_TRUE(peer.pump(20s, [&] {
    return ignored(task_a.task_id) - ignored_a + ignored(task_b.task_id) - ignored_b +
               static_cast<std::size_t>(peer.rejects() - rejects) >= 2;
  })) << logs();
  RedisClient redis(options_.redis_url);
  EXPECT_EQ(count_events(redis, "dup", "partition_proved"), 2);
  EXPECT_EQ(redis.command({"LLEN", KeyLayout().done("dup")}).as_integer(), 1);
  EXPECT_EQ(json::parse(*farm::result(options_, "dup")), result);
  for (const auto& worker : farm::workers(options_)) {
    EXPECT_EQ(worker.faults, 0u) << worker.id;
    EXPECT_FALSE(worker.quarantined) << worker.id;
  }
  EXPECT_EQ(redis.command({"SCARD", KeyLayout().quarantine()}).as_integer(), 0);

  // The farm keeps serving.
  EXPECT_TRUE(coordinator_->running());
  farm::submit(options_, job_json("after", bn254_.id, {w}));
  EXPECT_EQ(wait_job("after").state, "done");
}

}  // namespace
}  // namespace zkfarm::testing
