// rogue_worker_test.cc -- what a rogue or careless worker can no longer do
// to a farm: a real coordinator and real workers, with a ScriptedPeer over
// real ZeroMQ playing the rogue.
//
//   * claim a good witness is bad: the claim must be confirmed by a second
//     worker, and a disproved claim is a fault of the claimant;
//   * hold tasks forever: the task timeout (derived from the circuit's
//     measured prove time by default) takes them back, and no worker holds
//     more tasks than it said its device can take;
//   * take over another worker's id (to get it quarantined): refused while
//     the real one is live, and under CURVE refused for any other key;
//   * flood the log with garbage: warnings per peer are rate limited;
//   * prove some other input's statement for an input partition: the
//     public inputs are the partition's input's, never the worker's report.
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cluster/curve_keys.h"
#include "cluster/groth16_glue.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "formats/snarkjs_json.h"
#include "tests/cluster/farm_fixture.h"
#include "tests/cluster/scripted_peer.h"
#include "witgen/witness_generator.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

bool log_contains(const Process& p, const std::string& text) { return p.log().find(text) != std::string::npos; }

std::size_t count_lines(const std::string& log, const std::string& text) {
  std::size_t n = 0;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find(text) != std::string::npos) ++n;
  return n;
}

long long worker_faults(const FarmTest& t, const farm::FarmOptions& options, const std::string& id) {
  RedisClient redis(options.redis_url);
  const RedisReply r = redis.command({"HGET", KeyLayout().worker(id), WorkerRecord::kFaults});
  return r.type == RedisReply::Type::kString ? std::stoll(r.str) : 0;
}

class RogueWorkerTest : public FarmTest {
 protected:
  // Waits until the coordinator has welcomed worker `id` (a real process).
  void wait_joined(const std::string& id) {
    ASSERT_TRUE(eventually([&] { return log_contains(*coordinator_, "worker " + id + " joined"); }, 30s)) << logs();
  }
};

// Issue 9 item 4: a single worker's "the input is bad" no longer fails a job.
TEST_F(RogueWorkerTest, ABadInputClaimIsCheckedOnASecondWorkerAndADisprovedOneIsAFault) {
  start_coordinator();
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  ScriptedPeer rogue(coordinator_port_);
  ASSERT_TRUE(rogue.hello("rogue", 1)) << logs();
  farm::submit(options_, job_json("claimed", bn254_.id, {w}));
  ASSERT_TRUE(rogue.pump(20s, [&] { return rogue.tasks().size() == 1; })) << logs();
  start_worker("honest");
  wait_joined("honest");
  rogue.task_error(rogue.tasks()[0], wire::ErrorCode::UNSATISFIED, "constraint 1 fails (a lie)");
  farm::JobStatus s;
  ASSERT_TRUE(rogue.pump(60s, [&] {
    s = *farm::status(options_, "claimed");
    return is_terminal_state(s.state);
  })) << logs();
  EXPECT_EQ(s.state, "done") << s.error_code << ": " << s.error;
  expect_result_verifies("claimed", 1);
  EXPECT_EQ(worker_faults(*this, options_, "rogue"), 1) << "a disproved claim is a fault of the claimant";
  EXPECT_EQ(worker_faults(*this, options_, "honest"), 0);
}

TEST_F(RogueWorkerTest, ABadInputClaimConfirmedByASecondWorkerFailsTheJob) {
  start_coordinator();
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  ScriptedPeer first(coordinator_port_), second(coordinator_port_);
  ASSERT_TRUE(first.hello("first", 1)) << logs();
  farm::submit(options_, job_json("confirmed", bn254_.id, {w}));
  ASSERT_TRUE(first.pump(20s, [&] { return first.tasks().size() == 1; })) << logs();
  ASSERT_TRUE(second.hello("second", 1)) << logs();
  first.task_error(first.tasks()[0], wire::ErrorCode::BAD_WITNESS, "not a witness");
  ASSERT_TRUE(second.pump(20s, [&] { return second.tasks().size() == 1; })) << logs();
  EXPECT_EQ(farm::status(options_, "confirmed")->state, "running");
  second.task_error(second.tasks()[0], wire::ErrorCode::BAD_WITNESS, "not a witness either");
  const farm::JobStatus s = wait_job("confirmed");
  EXPECT_EQ(s.state, "failed");
  EXPECT_EQ(s.error_code, "badWitness") << s.error;
  EXPECT_NE(s.error.find("partition 0"), std::string::npos) << s.error;
  EXPECT_NE(s.error.find("confirmed by"), std::string::npos) << s.error;
  EXPECT_EQ(worker_faults(*this, options_, "first"), 0);
  EXPECT_EQ(worker_faults(*this, options_, "second"), 0);
}

// Issue 9 item 5: a worker that says hello with 1024 credits, heartbeats,
// says it is proving and never answers loses its tasks after the derived
// task timeout.
TEST_F(RogueWorkerTest, TasksHeldForeverTimeOutByDefault) {
  // No --task-timeout-s: the default derives it from measured prove times,
  // here with a 2 s floor so the test is quick.
  start_coordinator({"--task-timeout-floor-s", "2"});
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  const std::size_t honest = start_worker("honest");
  farm::submit(options_, job_json("measure", bn254_.id, {w}));
  ASSERT_EQ(wait_job("measure").state, "done") << logs();
  workers_[honest].reset();  // SIGKILL
  ASSERT_TRUE(eventually([&] { return log_contains(*coordinator_, "worker honest is dead"); }, 30s)) << logs();

  ScriptedPeer rogue(coordinator_port_);
  ASSERT_TRUE(rogue.hello("hoarder", 1024)) << logs();
  farm::submit(options_, job_json("held", bn254_.id, {w, w}));
  ASSERT_TRUE(rogue.pump(20s, [&] { return rogue.tasks().size() == 2; })) << logs();
  for (const auto& task : rogue.tasks()) rogue.proving(task.task_id);
  ASSERT_TRUE(rogue.pump(60s, [&] { return rogue.cancels().size() == 2; }))
      << "the held tasks were never taken back\n" << logs();
  EXPECT_GE(worker_faults(*this, options_, "hoarder"), 1);
  start_worker("honest-2");
  // The hoarder says it proves every task it is given again, and holds it.
  std::size_t reported = rogue.tasks().size();
  farm::JobStatus s;
  ASSERT_TRUE(rogue.pump(90s, [&] {
    for (; reported < rogue.tasks().size(); ++reported) rogue.proving(rogue.tasks()[reported].task_id);
    s = *farm::status(options_, "held");
    return is_terminal_state(s.state);
  })) << logs();
  EXPECT_EQ(s.state, "done") << s.error << logs();
  expect_result_verifies("held", 2);
}

TEST_F(RogueWorkerTest, AWorkerHoldsNoMoreTasksThanItsDeviceTakes) {
  start_coordinator();
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  ScriptedPeer rogue(coordinator_port_);
  ScriptedPeer::Hello hello{"greedy", 1024};
  hello.max_tasks = 2;
  ASSERT_TRUE(rogue.hello(hello)) << logs();
  farm::submit(options_, job_json("many", bn254_.id, {w, w, w, w, w, w}));
  ASSERT_TRUE(rogue.pump(20s, [&] { return rogue.tasks().size() >= 2; })) << logs();
  rogue.credit(1000);
  // Nothing more may arrive: give the coordinator ample time to (wrongly)
  // send the other four.
  rogue.pump(3s, [&] { return rogue.tasks().size() > 2; });
  EXPECT_EQ(rogue.tasks().size(), 2u) << logs();
  // The other partitions still go to a real worker.
  start_worker("real");
  // (The rogue stops heartbeating meanwhile: once it is declared dead its two
  // go to the real worker too.)
  ASSERT_TRUE(eventually([&] { return farm::status(options_, "many")->proved >= 4; }, 60s)) << logs();
}

// Issue 9 item 6: impersonation.
TEST_F(RogueWorkerTest, ASecondLiveSessionForAWorkerIdIsRefused) {
  start_coordinator();
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  const std::size_t victim = start_worker("victim");
  wait_joined("victim");
  ScriptedPeer impostor(coordinator_port_);
  EXPECT_FALSE(impostor.hello(ScriptedPeer::Hello{"victim", 4})) << logs();
  EXPECT_TRUE(impostor.rejected_with("already has a live session")) << logs();
  // The real worker keeps its session and proves.
  farm::submit(options_, job_json("mine", bn254_.id, {w, w}));
  EXPECT_EQ(wait_job("mine").state, "done") << logs();
  const json result = json::parse(*farm::result(options_, "mine"));
  for (const auto& p : result["partitions"]) EXPECT_NE(p["device_uuid"], "scripted-uuid");
  EXPECT_TRUE(impostor.tasks().empty());
  EXPECT_TRUE(workers_[victim]->running());
}

TEST_F(RogueWorkerTest, UnderCurveAWorkerIdIsBoundToItsKey) {
  const CurveKeyPair server = generate_curve_keypair();
  const CurveKeyPair victim_keys = generate_curve_keypair();
  const CurveKeyPair rogue_keys = generate_curve_keypair();  // an admitted worker turned rogue
  write_curve_key_file(dir_->file("server.key"), server.secret_key);
  write_curve_key_file(dir_->file("victim.key"), victim_keys.secret_key);
  write_file(dir_->file("allowlist"), victim_keys.public_key + "\n" + rogue_keys.public_key + "\n");
  start_coordinator({"--curve-secret-key-file", dir_->file("server.key"), "--curve-allowlist", dir_->file("allowlist")});
  const std::size_t victim = start_worker(
      "victim", {"--curve-server-key", server.public_key, "--curve-secret-key-file", dir_->file("victim.key")});
  wait_joined("victim");
  // The victim goes away; its id stays bound to its key.
  workers_[victim].reset();
  ASSERT_TRUE(eventually([&] { return log_contains(*coordinator_, "worker victim is dead"); }, 30s)) << logs();
  const ScriptedPeer::Curve curve{server.public_key, rogue_keys.public_key, rogue_keys.secret_key};
  ScriptedPeer rogue(coordinator_port_, &curve);
  EXPECT_FALSE(rogue.hello(ScriptedPeer::Hello{"victim", 4}, 10s)) << logs();
  EXPECT_TRUE(rogue.rejected_with("is bound to another CURVE key")) << logs();
  ASSERT_TRUE(eventually([&] { return log_contains(*coordinator_, "is bound to another CURVE key"); }, 10s))
      << logs();
  // Its own id is fine.
  EXPECT_TRUE(rogue.hello(ScriptedPeer::Hello{"rogue", 1})) << logs();
  // The real victim comes back and is welcomed.
  start_worker("victim",
               {"--curve-server-key", server.public_key, "--curve-secret-key-file", dir_->file("victim.key")});
  ASSERT_TRUE(eventually([&] { return count_lines(coordinator_->log(), "worker victim joined") == 2; }, 30s))
      << logs();
}

// Issue 9 item 11: 5,000 garbage frames no longer give 5,000 warnings.
TEST_F(RogueWorkerTest, GarbageFromOnePeerIsLoggedAtARateWithACount) {
  start_coordinator();
  ScriptedPeer noisy(coordinator_port_);
  for (int i = 0; i < 5000; ++i) noisy.send_raw("garbage frame " + std::to_string(i));
  ASSERT_TRUE(eventually([&] { return log_contains(*coordinator_, "more from peer"); }, 60s)) << logs();
  const std::string log = coordinator_->log();
  EXPECT_LE(count_lines(log, "dropped a malformed message"), 20u) << log.substr(0, 4000);
  // Every frame is accounted for: logged, or counted in a summary line.
  std::size_t counted = count_lines(log, "dropped a malformed message");
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find(" more from peer");
    if (at == std::string::npos) continue;
    const auto open = line.rfind('(', at);
    ASSERT_NE(open, std::string::npos) << line;
    counted += std::stoul(line.substr(open + 1, at - open - 1));
  }
  EXPECT_EQ(counted, 5000u) << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
  // The farm still serves.
  start_worker("w1");
  farm::submit(options_, job_json("after", bn254_.id, {"file://" + witness_file("bn128_mul.wtns")}));
  EXPECT_EQ(wait_job("after").state, "done") << logs();
}

// Issue 15 item 4: the public signals of an input partition. The fixture
// circuit Mul (public signals: the output c, then the inputs b and k) is
// recorded with a witness generator and its public input map; the scripted
// worker answers every task with the fixture's proof of a = 3, b = 11,
// k = p - 1 (c = 3822) and reports that statement's public signals. For an
// input with b = 12 the proof must not be accepted; for b = 11 it must.
TEST_F(RogueWorkerTest, AnInputPartitionsPublicInputsComeFromItsInputNotFromTheWorker) {
  CircuitInfo circuit = bn254_;
  circuit.witgen_path = circuit.id + "/witgen/witness-generator";
  circuit.witgen_sha256 = std::string(64, 'a');
  circuit.witgen_dat_sha256 = std::string(64, 'b');
  circuit.witgen_public_map = witgen::public_input_map_json(
      {std::nullopt, witgen::PublicInputRef{witgen::fnv1a64("b"), 0}, witgen::PublicInputRef{witgen::fnv1a64("k"), 0}});
  {
    RedisClient redis(options_.redis_url);
    store_circuit_info(redis, KeyLayout(), circuit);
  }
  start_coordinator();
  const std::string proof = encode_proof<Bn254>(
      proof_from_json<Bn254>(read_file(runfile("formats/testdata/bn128_proof.json")), "fixture proof"));
  const std::string minus_one = "21888242871839275222246405745257275088548364400416034343698204186575808495616";
  std::string reported(3 * Bn254Fr::kBytes, '\0');
  auto* bytes = reinterpret_cast<std::uint8_t*>(reported.data());
  Bn254Fr::from_decimal("3822").to_le_bytes(bytes);
  Bn254Fr::from_decimal("11").to_le_bytes(bytes + Bn254Fr::kBytes);
  Bn254Fr::from_decimal(minus_one).to_le_bytes(bytes + 2 * Bn254Fr::kBytes);
  const auto input_job = [&](const std::string& id, const std::string& b) {
    return json{{"id", id},
                {"circuit", circuit.id},
                {"partitions", json::array({{{"input", {{"a", "3"}, {"b", b}, {"k", minus_one}}}}})}}
        .dump();
  };

  ScriptedPeer rogue(coordinator_port_);
  ASSERT_TRUE(rogue.hello("rogue", 1)) << logs();
  farm::submit(options_, input_job("other-statement", "12"));
  ASSERT_TRUE(rogue.pump(20s, [&] { return rogue.tasks().size() == 1; })) << logs();
  rogue.result(rogue.tasks()[0].task_id, "other-statement", 0, proof, reported);
  ASSERT_TRUE(rogue.pump(20s, [&] {
    return log_contains(*coordinator_, "worker rogue reported public inputs for job other-statement partition 0");
  })) << logs();
  ASSERT_TRUE(rogue.pump(20s, [&] { return worker_faults(*this, options_, "rogue") >= 1; }))
      << "a proof of another statement was not counted against its worker\n" << logs();
  EXPECT_EQ(farm::status(options_, "other-statement")->proved, 0u);
  EXPECT_NE(farm::status(options_, "other-statement")->state, "done");
  farm::cancel(options_, "other-statement");
  // Cancelled before the worker gets a credit again, or the credit could go
  // to the requeued partition of the job being cancelled.
  ASSERT_TRUE(rogue.pump(20s, [&] { return is_terminal_state(farm::status(options_, "other-statement")->state); }))
      << logs();

  // The same proof and report for the input it does prove: accepted, and
  // the result's public signals are that input's.
  const std::size_t seen = rogue.tasks().size();
  rogue.credit(1);  // its one credit went with the first task
  farm::submit(options_, input_job("same-statement", "11"));
  ASSERT_TRUE(rogue.pump(20s, [&] {
    for (std::size_t i = seen; i < rogue.tasks().size(); ++i)
      if (rogue.tasks()[i].job_id == "same-statement") return true;
    return false;
  })) << logs();
  for (std::size_t i = seen; i < rogue.tasks().size(); ++i)
    if (rogue.tasks()[i].job_id == "same-statement")
      rogue.result(rogue.tasks()[i].task_id, "same-statement", 0, proof, reported);
  farm::JobStatus s;
  ASSERT_TRUE(rogue.pump(30s, [&] {
    s = *farm::status(options_, "same-statement");
    return is_terminal_state(s.state);
  })) << logs();
  EXPECT_EQ(s.state, "done") << s.error_code << ": " << s.error;
  const json result = json::parse(*farm::result(options_, "same-statement"));
  EXPECT_EQ(result["partitions"][0]["public"], json::array({"3822", "11", minus_one})) << result.dump();
}

}  // namespace
}  // namespace zkfarm::testing
