// fault_attribution_test.cc -- faults land on who caused them: a real
// coordinator, real workers and a ScriptedPeer over real ZeroMQ playing the
// rogue; each case leaves valid jobs done and only the rogue quarantined.
//
//   * a submitter's witness that never finishes arriving: the fetch is
//     nobody's fault, fails its job (witnessUnavailable) on two workers and
//     quarantines no worker;
//   * one CURVE key behind several worker ids is one worker: its garbage
//     proofs do not fail a job "unsatisfied", its repeated errors cost
//     faults, and a quarantined key is refused under every id;
//   * a worker that says hello again and again while holding tasks: a
//     repeated loss is a fault, a task carried across a Hello of the same
//     process keeps its timeout;
//   * credits follow the coordinator's policy, not the worker's claim.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "cluster/curve_keys.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "tests/cluster/farm_fixture.h"
#include "tests/cluster/scripted_peer.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

bool log_contains(const Process& p, const std::string& text) { return p.log().find(text) != std::string::npos; }

class FaultAttributionTest : public FarmTest {
 protected:
  long long faults(const std::string& id) {
    RedisClient redis(options_.redis_url);
    const RedisReply r = redis.command({"HGET", KeyLayout().worker(id), WorkerRecord::kFaults});
    return r.type == RedisReply::Type::kString ? std::stoll(r.str) : 0;
  }
  bool quarantined(const std::string& member) {
    RedisClient redis(options_.redis_url);
    return redis.command({"SISMEMBER", KeyLayout().quarantine(), member}).as_integer() == 1;
  }
  void wait_joined(const std::string& id) {
    ASSERT_TRUE(eventually([&] { return log_contains(*coordinator_, "worker " + id + " joined"); }, 30s)) << logs();
  }
  // Polls the peers (answering their tasks with `answer`, once per task)
  // until the job ends; returns its status.
  farm::JobStatus run_rogues(std::vector<ScriptedPeer*> rogues, const std::string& job_id,
                             const std::function<void(ScriptedPeer&, const ScriptedPeer::TaskSeen&)>& answer,
                             std::chrono::seconds timeout = 120s) {
    std::map<ScriptedPeer*, std::size_t> answered;
    farm::JobStatus s;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      for (ScriptedPeer* rogue : rogues) {
        rogue->pump(50ms, [] { return false; });
        for (std::size_t& i = answered[rogue]; i < rogue->tasks().size(); ++i) answer(*rogue, rogue->tasks()[i]);
      }
      s = *farm::status(options_, job_id);
      if (is_terminal_state(s.state)) break;
    }
    return s;
  }
  // A 256-byte "proof" of random bytes (8 coordinates of 32 bytes).
  static std::string garbage_proof() {
    std::mt19937 random(26);
    std::string proof(256, '\0');
    for (char& c : proof) c = static_cast<char>(random());
    return proof;
  }
};

// Probe: slow witness URLs made every fetching worker time out, each timeout
// a fault, until both workers were quarantined; the fetch also inflated the
// circuit's automatic timeout. Now the time before the worker reports the
// witness ready (TaskProgress) is bounded by --witness-timeout-s, is never
// a fault and never measured; two workers failing it fail the job as
// witnessUnavailable, and the valid job's tasks stuck behind the stalled
// fetch go back to the queue (not begun: no attempt, no fault).
TEST_F(FaultAttributionTest, AWitnessThatNeverArrivesFailsItsJobAndQuarantinesNoWorker) {
  std::filesystem::create_directories(dir_->file("www"));
  std::filesystem::copy_file(runfile("formats/testdata/bn128_mul.wtns"), dir_->file("www/slow.wtns"));
  HttpServer http(dir_->file("www"), dir_->file("http.log"), runfile("tests/cluster/range_http_server.py"),
                  {"--stall", "/slow.wtns"});
  // One fault would quarantine a worker: none may be counted.
  // The witness server is on loopback: only a named host may be fetched from.
  start_coordinator({"--witness-timeout-s", "3", "--quarantine-after", "1", "--witness-url-allow", "127.0.0.1"});
  start_worker("w1", {"--witness-url-allow", "127.0.0.1"});
  start_worker("w2", {"--witness-url-allow", "127.0.0.1"});
  wait_joined("w1");
  wait_joined("w2");
  const std::string good = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("slow", bn254_.id, {http.url() + "slow.wtns"}));
  farm::submit(options_, job_json("valid", bn254_.id, {good, good}));
  farm::JobStatus s = wait_job("slow", 120s);
  EXPECT_EQ(s.state, "failed") << logs();
  EXPECT_EQ(s.error_code, "witnessUnavailable") << s.error;
  EXPECT_NE(s.error.find("could not be read on 2 different workers"), std::string::npos) << s.error;
  EXPECT_NE(http.log().find("stalled /slow.wtns"), std::string::npos) << http.log();
  s = wait_job("valid", 120s);
  EXPECT_EQ(s.state, "done") << s.error << logs();
  expect_result_verifies("valid", 2);
  for (const char* id : {"w1", "w2"}) {
    EXPECT_EQ(faults(id), 0) << id;
    EXPECT_FALSE(quarantined(id)) << id;
  }
  // Both still serve.
  farm::submit(options_, job_json("after", bn254_.id, {good, good, good}));
  s = wait_job("after", 120s);
  EXPECT_EQ(s.state, "done") << s.error << logs();
  EXPECT_FALSE(log_contains(*coordinator_, "quarantined after")) << logs();
}

struct CurveFarm {
  CurveKeyPair server = generate_curve_keypair();
  CurveKeyPair honest = generate_curve_keypair();
  CurveKeyPair rogue = generate_curve_keypair();
  CurveKeyPair single = generate_curve_keypair();  // an allowlisted key without ids=
};

// Probe: two worker ids answering garbage proofs failed a valid job
// "unsatisfied" with their faults refunded, and one allowlisted CURVE key
// could bind any number of ids. Now the allowlist says which ids a key may
// use (one without ids=), and a key's ids are one worker.
TEST_F(FaultAttributionTest, OneCurveKeysGarbageProofsAreOneWorkersFaults) {
  CurveFarm keys;
  write_curve_key_file(dir_->file("server.key"), keys.server.secret_key);
  write_curve_key_file(dir_->file("honest.key"), keys.honest.secret_key);
  write_file(dir_->file("allowlist"), keys.honest.public_key + "\n" + keys.rogue.public_key +
                                          " ids=rogue-1,rogue-2 two ids of one host\n" + keys.single.public_key +
                                          " a note, not ids\n");
  start_coordinator({"--curve-secret-key-file", dir_->file("server.key"), "--curve-allowlist",
                     dir_->file("allowlist"), "--quarantine-after", "3"});
  const ScriptedPeer::Curve rogue_curve{keys.server.public_key, keys.rogue.public_key, keys.rogue.secret_key};
  const ScriptedPeer::Curve single_curve{keys.server.public_key, keys.single.public_key, keys.single.secret_key};
  // The allowlist's ids only; a key without ids= keeps the first it used.
  {
    ScriptedPeer third(coordinator_port_, &rogue_curve);
    EXPECT_FALSE(third.hello(ScriptedPeer::Hello{"rogue-3", 1}, 10s)) << logs();
    EXPECT_TRUE(third.rejected_with("not among the ids the CURVE allowlist lists")) << logs();
    ScriptedPeer first(coordinator_port_, &single_curve), second(coordinator_port_, &single_curve);
    EXPECT_TRUE(first.hello(ScriptedPeer::Hello{"single-1", 1}, 10s)) << logs();
    EXPECT_FALSE(second.hello(ScriptedPeer::Hello{"single-2", 1}, 10s)) << logs();
    EXPECT_TRUE(second.rejected_with("this CURVE key says hello as worker single-1")) << logs();
  }
  start_worker("honest",
               {"--curve-server-key", keys.server.public_key, "--curve-secret-key-file", dir_->file("honest.key")});
  wait_joined("honest");
  ScriptedPeer rogue1(coordinator_port_, &rogue_curve), rogue2(coordinator_port_, &rogue_curve);
  ScriptedPeer::Hello hello{"rogue-1", 4};
  hello.max_tasks = 4;
  ASSERT_TRUE(rogue1.hello(hello, 10s)) << logs();
  hello.worker_id = "rogue-2";
  ASSERT_TRUE(rogue2.hello(hello, 10s)) << logs();
  // The rogues take most of the job (they grant more credits than the real
  // worker); every retry of a partition they failed goes to the real one.
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("valid", bn254_.id, {w, w, w, w, w, w}));
  const std::string proof = garbage_proof();
  const farm::JobStatus s = run_rogues({&rogue1, &rogue2}, "valid", [&](ScriptedPeer& peer, const auto& task) {
    peer.result(task.task_id, task.job_id, task.partition, proof);
    peer.credit(1);
  });
  EXPECT_EQ(s.state, "done") << s.error_code << ": " << s.error << "\n" << logs();
  expect_result_verifies("valid", 6);
  EXPECT_FALSE(log_contains(*coordinator_, "the witness does not satisfy the circuit")) << logs();
  EXPECT_TRUE(quarantined("rogue-1")) << logs();
  EXPECT_TRUE(quarantined("rogue-2")) << logs();
  EXPECT_TRUE(quarantined(KeyLayout::quarantined_key(keys.rogue.public_key)));
  EXPECT_GE(faults("rogue-1") + faults("rogue-2"), 3);
  EXPECT_EQ(faults("honest"), 0);
  EXPECT_FALSE(quarantined("honest"));
  // The key is refused under any of its ids now.
  ScriptedPeer again(coordinator_port_, &rogue_curve);
  EXPECT_FALSE(again.hello(ScriptedPeer::Hello{"rogue-2", 1}, 10s)) << logs();
  EXPECT_TRUE(again.rejected_with("quarantined")) << logs();
}

// Probe: three ids answering TaskError internal failed a job after 3
// attempts with no fault counted. Now the key's ids are one worker (it is
// avoided after its first failure of a partition) and its repeated errors
// of one kind cost faults until it is quarantined.
TEST_F(FaultAttributionTest, RepeatedErrorsFromOneKeyQuarantineItAndTheJobIsDone) {
  CurveFarm keys;
  write_curve_key_file(dir_->file("server.key"), keys.server.secret_key);
  write_curve_key_file(dir_->file("honest.key"), keys.honest.secret_key);
  write_file(dir_->file("allowlist"),
             keys.honest.public_key + "\n" + keys.rogue.public_key + " ids=rogue-1,rogue-2,rogue-3\n");
  start_coordinator({"--curve-secret-key-file", dir_->file("server.key"), "--curve-allowlist",
                     dir_->file("allowlist")});
  start_worker("honest",
               {"--curve-server-key", keys.server.public_key, "--curve-secret-key-file", dir_->file("honest.key")});
  wait_joined("honest");
  const ScriptedPeer::Curve rogue_curve{keys.server.public_key, keys.rogue.public_key, keys.rogue.secret_key};
  ScriptedPeer r1(coordinator_port_, &rogue_curve), r2(coordinator_port_, &rogue_curve),
      r3(coordinator_port_, &rogue_curve);
  int index = 1;
  for (ScriptedPeer* peer : {&r1, &r2, &r3}) {
    ScriptedPeer::Hello hello{"rogue-" + std::to_string(index++), 4};
    hello.max_tasks = 4;
    ASSERT_TRUE(peer->hello(hello, 10s)) << logs();
  }
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("valid", bn254_.id, {w, w, w, w, w, w, w, w}));
  const farm::JobStatus s = run_rogues({&r1, &r2, &r3}, "valid", [&](ScriptedPeer& peer, const auto& task) {
    peer.task_error(task, wire::ErrorCode::INTERNAL, "no");
    peer.credit(1);
  });
  EXPECT_EQ(s.state, "done") << s.error_code << ": " << s.error << "\n" << logs();
  expect_result_verifies("valid", 8);
  EXPECT_GT(r1.tasks().size() + r2.tasks().size() + r3.tasks().size(), 3u) << "the rogues were given tasks";
  for (const char* id : {"rogue-1", "rogue-2", "rogue-3"}) EXPECT_TRUE(quarantined(id)) << id << "\n" << logs();
  EXPECT_TRUE(log_contains(*coordinator_, "repeated internal")) << logs();
  EXPECT_EQ(faults("honest"), 0);
}

// Probe: a worker saying Hello again every few seconds while holding a task
// requeued it with no attempt and no fault, indefinitely. Now the same
// process keeps its task and its clock across the Hello, so its timeout
// runs on and is its fault.
TEST_F(FaultAttributionTest, ATaskCarriedAcrossHellosOfOneProcessKeepsItsTimeout) {
  start_coordinator({"--task-timeout-s", "3", "--witness-timeout-s", "20"});
  start_worker("honest");
  wait_joined("honest");
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  {
    ScriptedPeer same(coordinator_port_);
    ScriptedPeer::Hello hello{"same", 4};
    hello.max_tasks = 4;
    hello.session_id = 4242;  // one process
    ASSERT_TRUE(same.hello(hello)) << logs();
    farm::submit(options_, job_json("carried", bn254_.id, {w, w, w, w}));
    ASSERT_TRUE(same.pump(30s, [&] { return !same.tasks().empty(); })) << logs();
    const std::size_t held = same.tasks().size();
    for (const auto& task : same.tasks()) same.proving(task.task_id);
    // A Hello every second: nothing is requeued (no second copy of its
    // tasks goes out), and the 3 s timeout still ends them.
    for (int i = 0; i < 8 && same.cancels().size() < held; ++i) {
      ASSERT_TRUE(same.hello(hello)) << logs();
      same.pump(1s, [&] { return same.cancels().size() >= held; });
    }
    ASSERT_TRUE(same.pump(30s, [&] { return same.cancels().size() >= held; }))
        << "a task carried across hellos never timed out\n" << logs();
    EXPECT_GE(faults("same"), 1);
    EXPECT_FALSE(log_contains(*coordinator_, "replaced by a new hello")) << "a carried task was requeued\n" << logs();
  }  // gone: whatever else it held goes back once it is declared dead
  EXPECT_EQ(wait_job("carried", 120s).state, "done") << logs();
  EXPECT_EQ(faults("honest"), 0);
}

// And a worker that loses its tasks to a new session (a new session id)
// again and again is faulted until it is quarantined.
TEST_F(FaultAttributionTest, TasksLostToNewSessionsAgainAndAgainQuarantineTheWorker) {
  start_coordinator({"--quarantine-after", "2"});
  start_worker("honest");
  wait_joined("honest");
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  ScriptedPeer restarting(coordinator_port_);
  ScriptedPeer::Hello fresh{"restarting", 4};
  fresh.max_tasks = 4;
  ASSERT_TRUE(restarting.hello(fresh)) << logs();
  farm::submit(options_, job_json("requeued", bn254_.id, std::vector<std::string>(20, w)));
  std::size_t seen = 0;
  for (int i = 0; i < 20 && !quarantined("restarting"); ++i) {
    if (!restarting.pump(10s, [&] { return restarting.tasks().size() > seen; })) break;
    seen = restarting.tasks().size();
    restarting.hello(fresh);  // a new session id each time: its tasks go back
  }
  EXPECT_TRUE(quarantined("restarting")) << logs();
  EXPECT_TRUE(log_contains(*coordinator_, "repeated lostTasks")) << logs();
  const farm::JobStatus s = wait_job("requeued", 120s);
  EXPECT_EQ(s.state, "done") << s.error << logs();
  EXPECT_EQ(s.attempts, 0u) << "a lost task is no failed attempt";
  EXPECT_EQ(faults("honest"), 0);
}

// Probe: self-declared capacity was accepted up to 1024 tasks.
TEST_F(FaultAttributionTest, AWorkerHoldsNoMoreTasksThanThePolicyAllows) {
  start_coordinator({"--max-tasks-per-worker", "3"});
  ScriptedPeer greedy(coordinator_port_);
  ScriptedPeer::Hello hello{"greedy", 1024};
  hello.max_tasks = 1024;
  ASSERT_TRUE(greedy.hello(hello)) << logs();
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("many", bn254_.id, {w, w, w, w, w, w}));
  ASSERT_TRUE(greedy.pump(30s, [&] { return greedy.tasks().size() >= 3; })) << logs();
  greedy.credit(1000);
  greedy.pump(3s, [&] { return greedy.tasks().size() > 3; });
  EXPECT_EQ(greedy.tasks().size(), 3u) << logs();
  EXPECT_TRUE(log_contains(*coordinator_, "worker greedy joined (scripted peer, 3 credits)")) << logs();
}

}  // namespace
}  // namespace zkfarm::testing
