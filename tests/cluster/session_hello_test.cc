// session_hello_test.cc -- Hellos cost what they should, with a real
// coordinator, a real worker and raw ZeroMQ peers:
//   * a peer saying Hello in a loop in its live session while it holds a
//     task: nothing is registered again (no Redis command per Hello, one
//     "joined" line), its task is neither re-sent nor requeued and its
//     timeout runs on, the log lines about it are rate limited;
//   * a worker whose coordinator is not there queues no Hello for it: when
//     the coordinator comes up it gets one Hello, not one per second of the
//     outage (the probe: 468 queued Hellos after 4 minutes).
#include <zmq.hpp>

#include <regex>

#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "tests/cluster/farm_fixture.h"
#include "tests/cluster/scripted_peer.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

class SessionHelloTest : public FarmTest {
 protected:
  // Calls of a Redis command since the server started (INFO commandstats).
  long long redis_calls(const std::string& command) {
    RedisClient redis(options_.redis_url);
    const std::string info = redis.command({"INFO", "commandstats"}).str;
    std::smatch m;
    if (!std::regex_search(info, m, std::regex("cmdstat_" + command + ":calls=([0-9]+)"))) return 0;
    return std::stoll(m[1].str());
  }
  long long faults(const std::string& id) {
    RedisClient redis(options_.redis_url);
    const RedisReply r = redis.command({"HGET", KeyLayout().worker(id), WorkerRecord::kFaults});
    return r.type == RedisReply::Type::kString ? std::stoll(r.str) : 0;
  }
};

// Probe: a Hello from a live session replaced it, with its Redis reads and
// writes and a "joined" line each time. Now a repeated Hello of the same
// process is welcomed again and changes nothing else.
TEST_F(SessionHelloTest, ARepeatedHelloOfALiveSessionCostsNothing) {
  start_coordinator({"--task-timeout-s", "3", "--witness-timeout-s", "60"});
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  ScriptedPeer looping(coordinator_port_);
  ScriptedPeer::Hello hello{"looping", 1};
  hello.max_tasks = 1;
  hello.session_id = 2626;  // one process
  ASSERT_TRUE(looping.hello(hello)) << logs();
  farm::submit(options_, job_json("held", bn254_.id, {w, w}));
  ASSERT_TRUE(looping.pump(30s, [&] { return !looping.tasks().empty(); })) << logs();
  const ScriptedPeer::TaskSeen task = looping.tasks().front();
  looping.proving(task.task_id);
  start_worker("honest");  // proves the rest, and the held partition once it times out
  ASSERT_TRUE(eventually([&] { return coordinator_->log().find("worker honest joined") != std::string::npos; }, 30s))
      << logs();

  const long long sismember_before = redis_calls("sismember"), hset_before = redis_calls("hset");
  const std::size_t log_before = count(coordinator_->log(), "\n");
  // Hellos, five at a time between polls (~100 a second), for up to 20 s:
  // the 3 s timeout of the task must end it meanwhile (its clock is not
  // restarted by a Hello).
  int hellos = 0;
  const auto flood_until = std::chrono::steady_clock::now() + 20s;
  while (looping.cancels().empty() && std::chrono::steady_clock::now() < flood_until) {
    for (int i = 0; i < 5; ++i, ++hellos) looping.send_hello(hello);
    looping.pump(10ms, [] { return false; });
  }
  ASSERT_FALSE(looping.cancels().empty()) << "the held task did not time out during " << hellos << " hellos\n"
                                          << logs();
  EXPECT_GE(hellos, 100) << "too few hellos to tell";
  EXPECT_EQ(looping.cancels().front(), task.task_id);
  const long long sismember = redis_calls("sismember") - sismember_before;
  const long long hset = redis_calls("hset") - hset_before;
  const std::string log = coordinator_->log();
  const std::size_t lines = count(log, "\n") - log_before;
  std::cout << hellos << " hellos: " << sismember << " SISMEMBER, " << hset << " HSET, " << lines
            << " coordinator log lines\n";
  // The quarantine check of a Hello is a SISMEMBER: none was made. HSETs:
  // the task's timeout (its fault, the job's events) and the heartbeats'
  // record refresh, not one per Hello.
  EXPECT_EQ(sismember, 0) << logs();
  EXPECT_LT(hset, 30) << logs();
  EXPECT_EQ(count(log, "worker looping joined"), 1u) << logs();
  EXPECT_EQ(count(log, "replaced by a new hello"), 0u) << logs();
  EXPECT_LE(count(log, "said hello again in its live session"), 10u) << logs();
  EXPECT_LT(lines, 40u) << logs();
  // The task was sent once: not re-sent, not requeued to this peer.
  EXPECT_EQ(looping.tasks().size(), 1u) << logs();
  EXPECT_TRUE(looping.welcomed()) << "a repeated Hello is answered with a Welcome";
  EXPECT_GE(faults("looping"), 1) << logs();

  const farm::JobStatus s = wait_job("held", 120s);
  EXPECT_EQ(s.state, "done") << s.error << logs();
  expect_result_verifies("held", 2);
  EXPECT_EQ(faults("honest"), 0);
}

// Probe: a coordinator back after 4 minutes processed 468 queued Hellos.
// Now the worker says hello only on a connection that is up.
TEST_F(SessionHelloTest, AWorkerQueuesNoHelloForACoordinatorThatIsNotThere) {
  const int port = free_port();
  start_worker("patient", {"--coordinator", "tcp://127.0.0.1:" + std::to_string(port)});
  // Five seconds without a coordinator (a Hello due every second).
  ASSERT_TRUE(eventually([&] { return workers_[0]->log().find("has not answered") != std::string::npos; }, 60s))
      << logs();

  zmq::context_t context;
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.bind("tcp://127.0.0.1:" + std::to_string(port));
  int hello_count = 0;
  std::optional<std::chrono::steady_clock::time_point> first_hello;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  // Until 2 s after the first Hello (answered with a Welcome at once).
  while (std::chrono::steady_clock::now() < deadline &&
         (!first_hello || std::chrono::steady_clock::now() < *first_hello + 2s)) {
    zmq::pollitem_t item{static_cast<void*>(router), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, 50ms);
    zmq::message_t identity, frame;
    while (router.recv(identity, zmq::recv_flags::dontwait)) {
      if (!identity.more() || !router.recv(frame, zmq::recv_flags::none)) continue;
      auto decoded = wire::decode(
          std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(frame.data()), frame.size()), nullptr);
      if (!decoded || decoded->which() != wire::Envelope::Body::HELLO) continue;
      ++hello_count;
      if (!first_hello) first_hello = std::chrono::steady_clock::now();
      const std::string welcome = wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
        auto w = body.initWelcome();
        w.setCoordinatorId("raw");
        w.setHeartbeatIntervalMs(100);
        w.setDeadAfterMs(60000);
      });
      router.send(identity, zmq::send_flags::sndmore);
      router.send(zmq::buffer(welcome), zmq::send_flags::none);
    }
  }
  ASSERT_TRUE(first_hello) << "no Hello reached the coordinator's port\n" << logs();
  std::cout << hello_count << " Hello(s) after the outage\n";
  // One; two when a loaded machine delays the Welcome past the next Hello.
  EXPECT_LE(hello_count, 2) << logs();
  EXPECT_TRUE(eventually([&] { return workers_[0]->log().find("welcomed by coordinator raw") != std::string::npos; },
                         30s))
      << logs();
}

}  // namespace
}  // namespace zkfarm::testing
