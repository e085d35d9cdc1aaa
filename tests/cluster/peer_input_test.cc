// peer_input_test.cc -- what a peer sends cannot flood or forge the
// coordinator's log, nor add metric series: a real coordinator and Redis,
// with ScriptedPeers over real ZeroMQ sending hostile text.
//
//   * a worker id, a job id and error texts with newlines, carriage
//     returns, ESC sequences and 10 KB strings, repeated thousands of times:
//     the log stays bounded (lines and bytes), every line is one line of
//     the logger's own format, the hostile text appears escaped (\xNN) and
//     cut at 200 bytes, and what was held back is counted;
//   * a worker fed the same by a coordinator (thousands of garbage frames,
//     tasks whose job and circuit ids carry newlines, ESC and 10 KB):
//     its log stays bounded, one line per line, escaped;
//   * jobs naming hundreds of unregistered circuit ids: /metrics shows them
//     all as circuit="unknown" (a bounded number of series), while a
//     registered circuit keeps its own label.
#include <regex>
#include <set>
#include <sstream>

#include <zmq.hpp>

#include "base/digest.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "tests/cluster/farm_fixture.h"
#include "schema/messages.h"
#include "schema/wire_model.h"
#include "tests/cluster/scripted_peer.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The port the coordinator logged for its /metrics ("metrics at http://...:N/metrics").
int metrics_port(const Process& coordinator) {
  static const std::regex at("metrics at http://[0-9.]+:([0-9]+)/metrics");
  std::smatch m;
  const std::string log = coordinator.log();
  return std::regex_search(log, m, at) ? std::stoi(m[1]) : 0;
}

class PeerInputTest : public FarmTest {};

TEST_F(PeerInputTest, HostileTextFromPeersLeavesTheLogBoundedSingleLineAndEscaped) {
  start_coordinator();
  ASSERT_TRUE(eventually([&] { return coordinator_->log().find("listening on") != std::string::npos; }, 30s))
      << logs();
  const std::string forged = "\n2026-01-01T00:00:00.000Z ERROR coordinator: forged line\r\x1b[2J\x1b[31m";
  // A worker id of the coordinator's maximum (200 bytes) that forges a line.
  const std::string hostile_id = "rogue" + forged + std::string(200 - 5 - forged.size(), 'i');
  const std::string ten_kb = forged + std::string(10 * 1024, 'x') + forged;

  // A real task for the hostile worker, so its TaskError reaches the log.
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  auto rogue_peer = std::make_unique<ScriptedPeer>(coordinator_port_);
  ScriptedPeer& rogue = *rogue_peer;
  ASSERT_TRUE(rogue.hello(hostile_id, 1)) << logs();
  farm::submit(options_, job_json("victim", bn254_.id, {w}));
  ASSERT_TRUE(rogue.pump(20s, [&] { return rogue.tasks().size() == 1; })) << logs();
  const std::size_t lines_before = lines_of(coordinator_->log()).size();
  const std::size_t bytes_before = coordinator_->log().size();

  rogue.task_error(rogue.tasks()[0], wire::ErrorCode::INTERNAL, ten_kb);
  constexpr int kRepeats = 2000;
  for (int i = 0; i < kRepeats; ++i) {
    // Results for tasks that do not exist, naming a 10 KB job id.
    rogue.result(1000000 + i, ten_kb, 0, "not a proof");
    // Errors for tasks that do not exist.
    ScriptedPeer::TaskSeen unknown{2000000u + i, ten_kb, 0};
    rogue.task_error(unknown, wire::ErrorCode::INTERNAL, ten_kb);
    // Garbage that is no envelope.
    if (i % 4 == 0) rogue.send_raw(ten_kb);
  }
  // Hellos again and again (each a new session), and drain notices.
  for (int i = 0; i < 200; ++i) {
    rogue.send_hello(ScriptedPeer::Hello{hostile_id, 1});
    rogue.send([&](wire::Envelope::Body::Builder body) { body.initShutdown().setReason(ten_kb); });
  }
  // A last hello: once it is welcomed, the coordinator has handled all of
  // the above (one pipe keeps its order; the event loop handles it in order).
  ASSERT_TRUE(rogue.hello(ScriptedPeer::Hello{hostile_id, 1}, 120s)) << coordinator_->log().substr(0, 20000);

  const std::string log = coordinator_->log();
  const std::vector<std::string> lines = lines_of(log);
  const std::size_t new_lines = lines.size() - lines_before, new_bytes = log.size() - bytes_before;
  std::cerr << "coordinator log after " << kRepeats * 2 + kRepeats / 4 + 401 << " hostile messages: " << new_lines
            << " lines, " << new_bytes << " bytes\n";
  // Per source 5 lines per 10 s, the held-back counts, the job's own lines.
  EXPECT_LE(new_lines, 100u) << log.substr(bytes_before, 20000);
  EXPECT_LE(new_bytes, 64u * 1024) << log.substr(bytes_before, 20000);
  // Every line is the logger's: "<time>Z LEVEL coordinator[c1]: ...", no
  // control byte, none long.
  static const std::regex own_line(
      R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARN|ERROR) coordinator\[c1\]: .*$)");
  for (const std::string& line : lines) {
    EXPECT_TRUE(std::regex_match(line, own_line)) << "not a line of the logger: " << line.substr(0, 300);
    EXPECT_LE(line.size(), 4096u + 200u) << line.substr(0, 300);
    for (char c : line)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        ADD_FAILURE() << "control byte " << int(c) << " in: " << line.substr(0, 300);
        break;
      }
  }
  EXPECT_EQ(log.find("forged line\r"), std::string::npos);
  // The hostile text is there, escaped and cut: the worker id in full (200
  // bytes of which 21 escaped) and the 10 KB texts at 200 bytes.
  EXPECT_NE(log.find("worker rogue\\x0a2026-01-01T00:00:00.000Z ERROR coordinator: forged line\\x0d\\x1b[2J\\x1b[31m"),
            std::string::npos)
      << log.substr(bytes_before, 20000);
  EXPECT_NE(log.find("...(" + std::to_string(ten_kb.size()) + " bytes)"), std::string::npos)
      << log.substr(bytes_before, 20000);
  // What was held back is counted once the window has passed.
  EXPECT_TRUE(eventually([&] { return coordinator_->log().find("suppressed ") != std::string::npos; }, 30s))
      << coordinator_->log().substr(bytes_before, 20000);
  // The coordinator still serves: once the rogue is gone, a real worker
  // proves a new job.
  rogue_peer.reset();
  start_worker("honest");
  farm::submit(options_, job_json("after", bn254_.id, {w}));
  EXPECT_EQ(wait_job("after", 60s).state, "done") << logs();
}

// Every line of a log is "<time>Z LEVEL <component>: ..." with no control
// byte and at most 4 KiB (plus the cut's note); failures name the line.
void expect_own_lines(const std::vector<std::string>& lines, const std::string& component) {
  const std::regex own_line(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARN|ERROR) )" + component +
                            ": .*$");
  for (const std::string& line : lines) {
    EXPECT_TRUE(std::regex_match(line, own_line)) << "not a line of the logger: " << line.substr(0, 300);
    EXPECT_LE(line.size(), 4096u + 200u) << line.substr(0, 300);
    for (char c : line)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        ADD_FAILURE() << "control byte " << int(c) << " in: " << line.substr(0, 300);
        break;
      }
  }
}

// A coordinator is trusted with its workers' tasks, but what it sends is
// still text from a peer: a worker logs it escaped and rate limits what a
// peer can repeat.
TEST_F(PeerInputTest, AWorkerLogsHostileCoordinatorTextBoundedAndEscaped) {
  zmq::context_t context;
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.set(zmq::sockopt::sndhwm, 0);  // queue everything: a ROUTER drops frames past its high-water mark
  const int port = free_port();
  router.bind("tcp://127.0.0.1:" + std::to_string(port));
  const std::size_t w = start_worker("w", {"--coordinator", "tcp://127.0.0.1:" + std::to_string(port)});
  auto receive = [&](std::chrono::milliseconds timeout, std::string* identity, std::string* body) {
    zmq::pollitem_t item{static_cast<void*>(router), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, timeout) <= 0) return false;
    zmq::message_t id, frame;
    (void)router.recv(id);
    (void)router.recv(frame);
    *identity = id.to_string();
    *body = frame.to_string();
    return true;
  };
  std::string worker, bytes;
  ASSERT_TRUE(receive(30s, &worker, &bytes)) << logs();  // its Hello
  auto send = [&](const std::string& frame) {
    router.send(zmq::buffer(worker), zmq::send_flags::sndmore);
    router.send(zmq::buffer(frame), zmq::send_flags::none);
  };
  send(wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
    auto welcome = body.initWelcome();
    welcome.setCoordinatorId("c\n2026-01-01T00:00:00.000Z ERROR worker[w]: forged\x1b[31m");
    welcome.setHeartbeatIntervalMs(100);
    welcome.setDeadAfterMs(60000);
  }));
  ASSERT_TRUE(eventually([&] { return workers_[w]->log().find("welcomed by") != std::string::npos; }, 30s))
      << logs();
  const std::size_t lines_before = lines_of(workers_[w]->log()).size();
  const std::size_t bytes_before = workers_[w]->log().size();
  const std::string forged = "\n2026-01-01T00:00:00.000Z ERROR worker[w]: forged line\r\x1b[2J";
  const std::string ten_kb = forged + std::string(10 * 1024, 'x') + forged;
  constexpr int kGarbage = 2000, kTasks = 3;
  for (int i = 0; i < kGarbage; ++i) send(ten_kb);  // no envelope at all
  for (int i = 0; i < kTasks; ++i) {
    TaskSpec task;
    task.task_id = 1 + i;
    task.job_id = ten_kb;
    task.circuit_id = ten_kb;
    task.curve = CurveId::kBn254;
    task.witness.location = "/nonexistent.wtns";
    send(encode_task(task));
  }
  // Each task fails (no such circuit): the worker's answers show it has
  // handled everything sent before them.
  int answered = 0;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (answered < kTasks && std::chrono::steady_clock::now() < deadline) {
    if (!receive(200ms, &worker, &bytes)) continue;
    auto decoded = wire::decode(
        std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), nullptr);
    if (decoded && decoded->which() == wire::Envelope::Body::ERROR) ++answered;
  }
  ASSERT_EQ(answered, kTasks) << workers_[w]->log().substr(0, 20000);
  const std::string log = workers_[w]->log();
  const std::vector<std::string> lines = lines_of(log);
  const std::size_t new_lines = lines.size() - lines_before, new_bytes = log.size() - bytes_before;
  std::cerr << "worker log after " << kGarbage + kTasks << " hostile frames: " << new_lines << " lines, " << new_bytes
            << " bytes\n";
  EXPECT_LE(new_lines, 40u) << log.substr(bytes_before, 20000);
  EXPECT_LE(new_bytes, 64u * 1024) << log.substr(bytes_before, 20000);
  expect_own_lines(lines, "worker\\[w\\]");
  EXPECT_NE(log.find("received: job \\x0a2026-01-01T00:00:00.000Z ERROR worker[w]: forged line\\x0d\\x1b[2J"),
            std::string::npos)
      << log.substr(bytes_before, 20000);
  EXPECT_NE(log.find("...(" + std::to_string(ten_kb.size()) + " bytes)"), std::string::npos);
}

TEST_F(PeerInputTest, OnlyRegisteredCircuitsGetMetricLabels) {
  start_coordinator();
  int port = 0;
  ASSERT_TRUE(eventually([&] { return (port = metrics_port(*coordinator_)) > 0; }, 30s)) << logs();
  // Jobs naming 300 well-formed circuit ids that are not registered.
  constexpr int kUnregistered = 300;
  std::set<std::string> made_up;
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  // Raw LPUSHes, as any client could do (`zkfarm submit` checks the circuit first).
  RedisClient redis(options_.redis_url);
  const std::string queue = KeyLayout(options_.prefix).queue(Priority::kNormal);
  for (int i = 0; i < kUnregistered; ++i) {
    const std::string seed = "made-up circuit " + std::to_string(i);
    const std::string circuit =
        sha256_hex(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(seed.data()), seed.size()));
    made_up.insert(circuit.substr(0, 16));
    redis.command({"LPUSH", queue, job_json("made-up-" + std::to_string(i), circuit, {w})});
  }
  // And one of a registered circuit (no worker: it stays running).
  farm::submit(options_, job_json("registered", bn254_.id, {w}));
  const std::string failed_unknown =
      "zkfarm_jobs_failed_total{circuit=\"unknown\",code=\"unknownCircuit\",priority=\"normal\",tenant=\"default\"} " +
      std::to_string(kUnregistered);
  const std::string submitted_registered = "zkfarm_jobs_submitted_total{circuit=\"" + bn254_.id.substr(0, 16) +
                                           "\",priority=\"normal\",tenant=\"default\"} 1";
  // The job's state turns running before intake counts it: wait for the series itself, not the state, or a scrape
  // taken just before the count races the status read.
  std::string scrape;
  ASSERT_TRUE(eventually(
      [&] {
        scrape = http_request(port, "GET", "/metrics").body;
        return scrape.find(failed_unknown) != std::string::npos &&
               scrape.find(submitted_registered) != std::string::npos;
      },
      90s))
      << scrape << logs();
  EXPECT_EQ(farm::status(options_, "registered")->state, "running");
  EXPECT_EQ(farm::status(options_, "made-up-7")->error_code, "unknownCircuit");
  EXPECT_NE(scrape.find("zkfarm_jobs_submitted_total{circuit=\"unknown\",priority=\"normal\",tenant=\"default\"} " +
                        std::to_string(kUnregistered)),
            std::string::npos)
      << scrape;
  // No made-up circuit has a series; the circuit label takes few values.
  std::set<std::string> circuit_values;
  static const std::regex circuit_label("circuit=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(scrape.begin(), scrape.end(), circuit_label); it != std::sregex_iterator();
       ++it)
    circuit_values.insert((*it)[1]);
  for (const std::string& label : made_up) EXPECT_EQ(circuit_values.count(label), 0u) << label;
  EXPECT_LE(circuit_values.size(), 3u);  // unknown, the registered one, none
  std::size_t series = 0;
  for (const std::string& line : lines_of(scrape))
    if (!line.empty() && line[0] != '#') ++series;
  std::cerr << "/metrics after " << kUnregistered << " jobs of unregistered circuits: " << series << " series, "
            << circuit_values.size() << " circuit label values\n";
  EXPECT_LT(series, 400u) << "a bounded number of series, not one set per circuit id";
}

}  // namespace
}  // namespace zkfarm::testing
