// fault_test.cc -- failures with real parts: kill -9 a worker mid-job,
// garbage on the wire, a worker returning corrupt proofs, a coordinator
// killed and restarted mid-job.
#include <signal.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>
#include <thread>
#include <zmq.hpp>

#include "cluster/curve_keys.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "schema/messages.h"
#include "tests/cluster/farm_fixture.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;

bool log_contains(const Process& p, const std::string& text) { return p.log().find(text) != std::string::npos; }

TEST_F(FarmTest, WorkerKilledMidJobJobStillCompletes) {
  start_coordinator();
  // The doomed worker stalls in every proof, so it is surely mid-task when killed.
  const std::size_t doomed = start_worker("doomed", {"--prove-delay-ms", "60000"});
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("k-3", bn254_.id, {w, w, w}));
  ASSERT_TRUE(eventually([&] { return log_contains(*workers_[doomed], "task 1 received"); }, 20s)) << logs();
  start_worker("healthy");
  workers_[doomed]->signal(SIGKILL);
  farm::JobStatus s = wait_job("k-3");
  EXPECT_EQ(s.state, "done") << s.error;
  EXPECT_EQ(s.attempts, 0u) << "a dead worker's task must not count as an attempt";
  expect_result_verifies("k-3", 3);
  EXPECT_TRUE(log_contains(*coordinator_, "goes back to the queue")) << logs();
}

TEST_F(FarmTest, GarbageOnTheWireIsDroppedAndTheFarmKeepsServing) {
  start_coordinator();
  start_worker("w1");
  {
    zmq::context_t context;
    zmq::socket_t rogue(context, zmq::socket_type::dealer);
    rogue.set(zmq::sockopt::linger, 1000);
    rogue.connect("tcp://127.0.0.1:" + std::to_string(coordinator_port_));
    const std::string junk[] = {"", "x", std::string(8, '\xff'), std::string(64, '\x01'),
                                std::string("\x00\x00\x00\x00\x10\x00\x00\x00", 8) + std::string(16, 'A')};
    for (const auto& j : junk) rogue.send(zmq::buffer(j), zmq::send_flags::none);
    // A multi-frame message.
    rogue.send(zmq::str_buffer("a"), zmq::send_flags::sndmore);
    rogue.send(zmq::str_buffer("b"), zmq::send_flags::none);
    // A credit from a peer that never said hello: Reject(unknownSession).
    auto envelope = [](std::uint32_t version, bool hello) {
      capnp::MallocMessageBuilder message;
      auto e = message.initRoot<wire::Envelope>();
      e.setProtocolVersion(version);
      if (hello) {
        auto h = e.getBody().initHello();
        h.setProtocolVersion(version);
        h.setWorkerId("from-the-future");
      } else {
        e.getBody().initCredit().setCredits(5);
      }
      return wire::encode(message);
    };
    auto expect_reject = [&](const std::string& bytes, wire::ErrorCode code) {
      rogue.send(zmq::buffer(bytes), zmq::send_flags::none);
      rogue.set(zmq::sockopt::rcvtimeo, 5000);
      for (;;) {
        zmq::message_t reply;
        ASSERT_TRUE(rogue.recv(reply, zmq::recv_flags::none)) << "no reply";
        auto decoded = wire::decode(
            std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(reply.data()), reply.size()), nullptr);
        ASSERT_TRUE(decoded);
        if (decoded->which() != wire::Envelope::Body::REJECT) continue;
        EXPECT_EQ(decoded->envelope().getBody().getReject().getCode(), code);
        return;
      }
    };
    expect_reject(envelope(wire::PROTOCOL_VERSION, false), wire::ErrorCode::UNKNOWN_SESSION);
    // A hello of another protocol version: Reject(protocolVersion), never a session.
    expect_reject(envelope(wire::PROTOCOL_VERSION + 1, true), wire::ErrorCode::PROTOCOL_VERSION);
  }
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("after-junk", bn254_.id, {w, w}));
  farm::JobStatus s = wait_job("after-junk");
  EXPECT_EQ(s.state, "done") << s.error;
  EXPECT_TRUE(coordinator_->running());
  EXPECT_TRUE(log_contains(*coordinator_, "malformed")) << logs();
}

TEST_F(FarmTest, CorruptProofsAreRejectedRetriedAndTheWorkerQuarantined) {
  start_coordinator({"--quarantine-after", "2"});
  const std::size_t bad = start_worker("bad", {"--inject-fault", "corrupt-proof"});
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("q-2", bn254_.id, {w, w}));
  ASSERT_TRUE(eventually([&] { return log_contains(*coordinator_, "is invalid"); }, 20s)) << logs();
  start_worker("good");
  farm::JobStatus s = wait_job("q-2");
  EXPECT_EQ(s.state, "done") << s.error;
  expect_result_verifies("q-2", 2);  // no invalid proof delivered
  RedisClient redis(options_.redis_url);
  EXPECT_TRUE(eventually([&] { return redis.command({"SISMEMBER", "zkfarm:quarantine", "bad"}).as_integer() == 1; }, 10s))
      << logs();
  (void)bad;
}

TEST_F(FarmTest, CoordinatorKilledMidJobResumesKeepingProvedPartitions) {
  start_coordinator();
  start_worker("fast");
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  // One partition proves quickly; the stalled worker holds the other.
  farm::submit(options_, job_json("r-1", bn254_.id, {w}));
  ASSERT_EQ(wait_job("r-1").state, "done");
  workers_[0].reset();  // SIGKILL the fast worker
  // The second partition takes at least 5 s after the first is stored: the
  // window in which the test must see one proved and kill the coordinator,
  // scaled for a loaded machine.
  start_worker("slow", {"--prove-delay-ms", "5000"});
  farm::submit(options_, job_json("r-2", bn254_.id, {w, w}));
  ASSERT_TRUE(eventually([&] { return farm::status(options_, "r-2")->proved >= 1; }, 20s)) << logs();
  kill_coordinator();
  EXPECT_EQ(farm::status(options_, "r-2")->state, "running");
  start_coordinator();
  farm::JobStatus s = wait_job("r-2");
  EXPECT_EQ(s.state, "done") << s.error;
  expect_result_verifies("r-2", 2);
  EXPECT_TRUE(log_contains(*coordinator_, "1 already proved")) << logs();
}

TEST_F(FarmTest, RedisCrashAndAofRestartLosesNothing) {
  start_coordinator();
  start_worker("w1", {"--prove-delay-ms", "300"});
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("before", bn254_.id, {w}));
  ASSERT_EQ(wait_job("before").state, "done");
  // A job in flight when Redis dies (appendfsync always: acknowledged
  // writes survive the SIGKILL).
  farm::submit(options_, job_json("during", bn254_.id, {w, w, w}));
  ASSERT_TRUE(eventually([&] { return farm::status(options_, "during")->state == "running"; }, 10s));
  redis_->crash_and_restart();
  farm::submit(options_, job_json("after", bn254_.id, {w}));
  farm::JobStatus during = wait_job("during");
  EXPECT_EQ(during.state, "done") << during.error;
  expect_result_verifies("during", 3);
  EXPECT_EQ(wait_job("after").state, "done");
  expect_result_verifies("before", 1);  // survived the restart
  EXPECT_TRUE(coordinator_->running());
  EXPECT_TRUE(workers_[0]->running());
}

TEST_F(FarmTest, SigtermDrainsAWorkerAndStopsTheCoordinatorCleanly) {
  start_coordinator();
  const std::size_t w1 = start_worker("w1", {"--prove-delay-ms", "1000"});
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("drain", bn254_.id, {w}));
  ASSERT_TRUE(eventually([&] { return log_contains(*workers_[w1], "task 1 received"); }, 10s)) << logs();
  workers_[w1]->signal(SIGTERM);
  // The held task is finished and delivered before the worker exits 0.
  auto status = workers_[w1]->wait_for(20s);
  ASSERT_TRUE(status) << logs();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << logs();
  farm::JobStatus s = wait_job("drain");
  EXPECT_EQ(s.state, "done") << s.error;
  coordinator_->signal(SIGTERM);
  auto cstatus = coordinator_->wait_for(10s);
  ASSERT_TRUE(cstatus) << logs();
  EXPECT_TRUE(WIFEXITED(*cstatus) && WEXITSTATUS(*cstatus) == 0) << logs();
}

TEST_F(FarmTest, StalledWorkerTimesOutAndThePartitionMovesOn) {
  start_coordinator({"--task-timeout-s", "1"});
  const std::size_t stalled = start_worker("stalled", {"--prove-delay-ms", "60000"});
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("stall", bn254_.id, {w}));
  ASSERT_TRUE(eventually([&] { return log_contains(*workers_[stalled], "task 1 received"); }, 10s)) << logs();
  start_worker("healthy");
  farm::JobStatus s = wait_job("stall");
  EXPECT_EQ(s.state, "done") << s.error;
  EXPECT_EQ(s.attempts, 1u);  // a stall is the worker's fault: it counts
  expect_result_verifies("stall", 1);
  EXPECT_TRUE(workers_[stalled]->running());  // heartbeats kept it alive: only the task moved
}

TEST_F(FarmTest, CurveAuthAdmitsOnlyAllowlistedWorkers) {
  const CurveKeyPair server = generate_curve_keypair();
  const CurveKeyPair allowed = generate_curve_keypair();
  const CurveKeyPair intruder = generate_curve_keypair();
  write_curve_key_file(dir_->file("server.key"), server.secret_key);
  write_curve_key_file(dir_->file("allowed.key"), allowed.secret_key);
  write_curve_key_file(dir_->file("intruder.key"), intruder.secret_key);
  write_curve_key_file(dir_->file("server.key.pub"), server.public_key);
  write_file(dir_->file("allowlist"), "# workers\n" + allowed.public_key + "  # w-allowed\n");
  start_coordinator({"--curve-secret-key-file", dir_->file("server.key"), "--curve-allowlist", dir_->file("allowlist")});
  const std::size_t bad = start_worker("w-intruder", {"--curve-server-key", server.public_key,
                                                      "--curve-secret-key-file", dir_->file("intruder.key")});
  const std::size_t plain = start_worker("w-plaintext");
  ASSERT_TRUE(eventually([&] { return log_contains(*coordinator_, "ZAP denied"); }, 10s)) << logs();
  const std::size_t good = start_worker("w-allowed", {"--curve-server-key-file", dir_->file("server.key.pub"),
                                                      "--curve-secret-key-file", dir_->file("allowed.key")});
  (void)good;
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("curve", bn254_.id, {w, w}));
  farm::JobStatus s = wait_job("curve");
  EXPECT_EQ(s.state, "done") << s.error;
  EXPECT_FALSE(log_contains(*workers_[bad], "welcomed")) << logs();
  EXPECT_FALSE(log_contains(*workers_[plain], "welcomed")) << logs();
  for (const auto& p : farm::workers(options_)) EXPECT_EQ(p.id, "w-allowed");
  // Secrets never reach the logs.
  EXPECT_EQ(logs().find(server.secret_key), std::string::npos);
  EXPECT_EQ(logs().find(allowed.secret_key), std::string::npos);
}

}  // namespace
}  // namespace zkfarm::testing
