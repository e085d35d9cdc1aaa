// load_driver.cc -- a load driver of the real coordinator: one process holds
// N worker sessions over ZeroMQ and answers the coordinator's tasks with real
// proofs, so one coordinator (or several on one Redis) can be loaded as a
// thousand GPUs would load it, on a machine without any.
//
//   bazel run //bench:load_driver -- [--sessions N] [--jobs J] [--partitions P]
//       [--curve bn254|bls12381] [--delay-ms D] [--credits C]
//       [--coordinators K] [--verify-threads 1,2] [--invalid-share F]
//       [--silent-sessions S] [--status-poll-ms M] [--timeout-s T] [--check]
//
// For each --verify-threads value it starts a private redis-server (AOF,
// appendfsync everysec, as deploy/ runs it), registers the fixture circuit
// (formats/testdata/bn128_mul or bls12381_mul) and starts K
// zkfarm-coordinator processes (--verify-threads that value). Its N sessions
// (session i on coordinator i mod K) speak the real protocol: Hello with C
// credits, the heartbeats the Welcome asks for, a Result and one Credit per
// task. A task is answered D ms after it arrived with a valid Groth16 proof
// of the task's own witness (file:// witnesses), proved once per (circuit,
// witness bytes) with the real CPU prover before the clock starts or at the
// first task that names it; so the coordinator verifies real proofs at the
// rate a farm of N devices of D ms per proof returns them. The fault paths:
// --invalid-share answers that share of first attempts with a well-formed
// proof that fails the pairing check (A and C swapped: points of the
// subgroup, so only the pairing refuses it; the retry elsewhere is valid, so
// the jobs still end done), and the first --silent-sessions sessions to get
// a task go silent with it (no heartbeat, no answer), to be declared dead. With
// --status-poll-ms the status page of the first coordinator (/api/v1/stats)
// is read that often during the run.
//
// Once every session is welcomed it submits J jobs of P partitions (all at
// once: a backlog) and runs until every job is done. Printed per run (one
// Markdown row):
//   verified partitions/s   J x P over first submit -> last job done
//   dispatch p50/p99        at a session: its credit freed (Result + Credit
//                           sent) -> its next task received, for first
//                           attempts while others are still undispatched
//                           (so the coordinator had work the moment the
//                           credit came: its reaction time, transport
//                           included; the Hello's first credits, which wait
//                           for the intake, and retries are not counted)
//   submit->done p50/p99    per job, from its record (submitted_at, finished_at)
//   coordinator wait p50/p99  pending -> dispatched, from the proof entries
//   accept p50/p99          result received -> verified and stored
//   Redis commands, bytes   INFO commandstats and net bytes, after - before,
//                           per partition: every client counted (the
//                           coordinators, and this driver's submit and wait,
//                           as any client's)
//   coordinator CPU         user + system seconds per partition (/proc), and
//                           on stderr by thread (scheduler, verify, other)
//                           and as cores busy (CPU-seconds per second)
// With --check it exits 1 unless every job is done, no partition was
// accepted from an invalid answer, and every invalid answer was counted as a
// fault (it prints why); otherwise it asserts nothing. Exit 2: bad flags or a
// farm that did not start.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "base/digest.h"
#include "cluster/artifacts.h"
#include "cluster/farm_api.h"
#include "cluster/groth16_glue.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "prover/prover.h"
#include "schema/messages.h"
#include "tests/harness/harness.h"

namespace {

using namespace zkfarm;
using namespace zkfarm::testing;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Options {
  std::size_t sessions = 100, jobs = 200, partitions = 4, credits = 1, coordinators = 1;
  std::vector<unsigned> verify_threads = {1};
  std::string curve = "bn254";
  double delay_ms = 0, invalid_share = 0;
  std::size_t silent_sessions = 0;
  long status_poll_ms = 0;
  long timeout_s = 600;
  bool check = false;
};

constexpr const char* kUsage =
    "usage: load_driver [--sessions N] [--jobs J] [--partitions P] [--curve bn254|bls12381] [--delay-ms D] "
    "[--credits C] [--coordinators K] [--verify-threads 1,2] [--invalid-share F] [--silent-sessions S] "
    "[--status-poll-ms M] [--timeout-s T] [--check]";

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    auto number = [&](double lo, double hi) {
      const std::string text = value();
      std::size_t used = 0;
      double v = 0;
      try {
        v = std::stod(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != text.size() || v < lo || v > hi)
        throw std::invalid_argument(arg + " '" + text + "': expected a number in [" + std::to_string(lo) + ", " +
                                    std::to_string(hi) + "]");
      return v;
    };
    if (arg == "--sessions") o.sessions = static_cast<std::size_t>(number(1, 100000));
    else if (arg == "--jobs") o.jobs = static_cast<std::size_t>(number(1, 1e7));
    else if (arg == "--partitions") o.partitions = static_cast<std::size_t>(number(1, 100000));
    else if (arg == "--credits") o.credits = static_cast<std::size_t>(number(1, 1024));
    else if (arg == "--coordinators") o.coordinators = static_cast<std::size_t>(number(1, 64));
    else if (arg == "--delay-ms") o.delay_ms = number(0, 3.6e6);
    else if (arg == "--invalid-share") o.invalid_share = number(0, 1);
    else if (arg == "--silent-sessions") o.silent_sessions = static_cast<std::size_t>(number(0, 100000));
    else if (arg == "--status-poll-ms") o.status_poll_ms = static_cast<long>(number(0, 60000));
    else if (arg == "--timeout-s") o.timeout_s = static_cast<long>(number(1, 86400));
    else if (arg == "--curve") o.curve = value();
    else if (arg == "--check") o.check = true;
    else if (arg == "--verify-threads") {
      o.verify_threads.clear();
      std::stringstream list(value());
      for (std::string n; std::getline(list, n, ',');) {
        const unsigned long t = std::stoul(n);
        if (t == 0 || t > 256) throw std::invalid_argument("--verify-threads: counts in 1..256, got " + n);
        o.verify_threads.push_back(static_cast<unsigned>(t));
      }
    } else {
      throw std::invalid_argument("unknown argument " + arg + " (" + kUsage + ")");
    }
  }
  if (o.curve != "bn254" && o.curve != "bls12381") throw std::invalid_argument("--curve: bn254 or bls12381");
  if (o.verify_threads.empty()) throw std::invalid_argument("--verify-threads: no count given");
  if (o.silent_sessions >= o.sessions)
    throw std::invalid_argument("--silent-sessions must leave at least one session answering");
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
};

// Proofs of (circuit, witness bytes), proved once with the real CPU prover.
class ProofCache {
 public:
  explicit ProofCache(std::string artifacts) : store_(std::move(artifacts)) {}
  void set_store(const std::string& artifacts) {
    store_ = ArtifactStore(artifacts);
    by_path_.clear();
  }

  // The wire encoding of a valid proof of the witness at path for circuit
  // id. Throws prover::Error (a missing file, a witness of another circuit).
  const std::string& proof(const std::string& circuit_id, const std::string& path) {
    const auto key = std::make_pair(circuit_id, path);
    if (auto it = by_path_.find(key); it != by_path_.end()) return *it->second;
    auto witness = prover::Prover::open_witness(path);
    const std::string digest = sha256_hex(witness->bytes());
    auto& slot = by_content_[{circuit_id, digest}];
    if (!slot) {
      if (!prover_) prover_ = prover::Prover::cpu();
      auto& circuit = circuits_[circuit_id];
      if (!circuit) circuit = prover_->load({.zkey_path = store_.absolute(ArtifactStore::zkey_relative(circuit_id))});
      prover::Proof proof = prover_->prove(*circuit, witness, {.verify = true}, nullptr);
      slot = std::make_shared<std::string>(
          std::visit([](const auto& p) { return encode_proof(p.proof); }, proof));
      ++proved_;
    }
    by_path_[key] = slot;
    return *slot;
  }
  std::size_t proved() const { return proved_; }

 private:
  ArtifactStore store_;
  std::unique_ptr<prover::Prover> prover_;
  std::map<std::string, std::shared_ptr<const prover::Circuit>> circuits_;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<std::string>> by_content_, by_path_;
  std::size_t proved_ = 0;
};

// The same proof with A and C swapped: both G1 subgroup points, so it decodes
// and passes the point checks, and only the pairing check refuses it.
std::string invalid_proof(const std::string& valid) {
  const std::size_t n = valid.size() / 8;
  std::string out = valid;
  out.replace(0, 2 * n, valid, 6 * n, 2 * n);
  out.replace(6 * n, 2 * n, valid, 0, 2 * n);
  return out;
}

struct Answer {
  Clock::time_point due;
  std::uint64_t task_id;
  std::string job_id, circuit_id, witness_path;
  std::uint32_t partition;
  bool invalid;
};

struct Session {
  std::unique_ptr<zmq::socket_t> socket;
  std::string worker_id;
  bool welcomed = false, silent = false;
  milliseconds heartbeat{1000};
  Clock::time_point next_heartbeat{};
  std::uint64_t sequence = 0;
  std::vector<Answer> answers;                // due, in arrival order
  std::vector<Clock::time_point> freed;       // credits freed and not yet used
};

// What the sessions saw.
struct Counts {
  double driver_cpu_seconds = 0;  // the session thread's own CPU (is the driver the limit?)
  std::size_t tasks = 0, first_attempts = 0, results = 0, invalid_sent = 0, cancels = 0, rejects = 0, unknown = 0, silenced = 0;
  std::set<std::tuple<std::string, std::uint32_t, std::string>> invalid;  // (job, partition, worker)
  Stats dispatch;
};

template <class Build>
void send(Session& s, Build&& build) {
  const std::string bytes = wire::encode_envelope(std::forward<Build>(build));
  (void)s.socket->send(zmq::buffer(bytes), zmq::send_flags::dontwait);
}

void send_hello(Session& s, std::uint32_t credits, std::uint64_t session_id) {
  send(s, [&](wire::Envelope::Body::Builder body) {
    auto h = body.initHello();
    h.setProtocolVersion(wire::PROTOCOL_VERSION);
    h.setWorkerId(s.worker_id);
    h.setSessionId(session_id);
    h.setHostname("load-driver");
    h.setPid(static_cast<std::uint32_t>(::getpid()));
    auto d = h.initDevice();
    d.setOrdinal(-1);
    d.setName("load driver session");
    d.setUuid("load-" + s.worker_id);
    d.setBackend("load");
    auto curves = h.initCurves(2);
    curves.set(0, wire::Curve::BN254);
    curves.set(1, wire::Curve::BLS12381);
    h.setCredits(credits);
    h.setMaxTasks(credits);
    h.setSoftwareVersion("load_driver");
  });
}

// Every session's socket traffic, until stop is set or the deadline passes.
void drive(const Options& o, std::vector<Session>& sessions, ProofCache& proofs, const std::atomic<bool>& stop,
           const std::atomic<bool>& backlog, Clock::time_point deadline, Counts& counts) {
  std::mt19937_64 random(std::random_device{}());
  std::uniform_real_distribution<double> uniform(0, 1);
  const std::size_t total_partitions = o.jobs * o.partitions;
  const auto delay = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(o.delay_ms));
  auto thread_cpu = [] {
    rusage usage{};
    getrusage(RUSAGE_THREAD, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  };
  const double cpu_start = thread_cpu();
  struct AddCpu {
    Counts& counts;
    double start;
    decltype(thread_cpu)& now;
    ~AddCpu() { counts.driver_cpu_seconds = now() - start; }
  } add_cpu{counts, cpu_start, thread_cpu};
  std::vector<zmq::pollitem_t> items(sessions.size());
  for (std::size_t i = 0; i < sessions.size(); ++i) items[i] = {static_cast<void*>(*sessions[i].socket), 0, ZMQ_POLLIN, 0};
  while (!stop && Clock::now() < deadline) {
    auto now = Clock::now();
    auto wake = now + milliseconds(20);
    for (auto& s : sessions) {
      if (s.silent) continue;
      if (s.welcomed && now >= s.next_heartbeat) {
        send(s, [&](wire::Envelope::Body::Builder body) {
          auto hb = body.initHeartbeat();
          hb.setSequence(++s.sequence);
          hb.setBusyTasks(static_cast<std::uint32_t>(s.answers.size()));
        });
        s.next_heartbeat = now + s.heartbeat;
      }
      while (!s.answers.empty() && s.answers.front().due <= now) {
        const Answer a = s.answers.front();
        s.answers.erase(s.answers.begin());
        const std::string& valid = proofs.proof(a.circuit_id, a.witness_path);
        const std::string proof = a.invalid ? invalid_proof(valid) : valid;
        send(s, [&](wire::Envelope::Body::Builder body) {
          auto r = body.initResult();
          r.setTaskId(a.task_id);
          r.setJobId(a.job_id);
          r.setPartitionIndex(a.partition);
          r.setProof(kj::arrayPtr(reinterpret_cast<const kj::byte*>(proof.data()), proof.size()));
          r.setDeviceUuid("load-" + s.worker_id);
          r.setCircuitWasResident(true);
        });
        send(s, [&](wire::Envelope::Body::Builder body) { body.initCredit().setCredits(1); });
        s.freed.push_back(Clock::now());
        ++counts.results;
        if (a.invalid) {
          ++counts.invalid_sent;
          counts.invalid.insert({a.job_id, a.partition, s.worker_id});
        }
        now = Clock::now();
      }
      if (!s.answers.empty()) wake = std::min(wake, s.answers.front().due);
      if (s.welcomed) wake = std::min(wake, s.next_heartbeat);
    }
    const auto timeout = std::max<long>(0, std::chrono::duration_cast<milliseconds>(wake - Clock::now()).count());
    zmq::poll(items.data(), items.size(), milliseconds(timeout));
    for (std::size_t i = 0; i < sessions.size(); ++i) {
      if (!(items[i].revents & ZMQ_POLLIN)) continue;
      Session& s = sessions[i];
      zmq::message_t frame;
      while (s.socket->recv(frame, zmq::recv_flags::dontwait)) {
        if (s.silent) continue;  // read and dropped: a silent peer never answers
        const auto received = Clock::now();
        // A kind this build does not know (a newer coordinator's) fails to
        // decode: counted and ignored, as a worker ignores it.
        auto decoded = wire::decode(
            std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(frame.data()), frame.size()), nullptr);
        if (!decoded) {
          ++counts.unknown;
          continue;
        }
        auto body = decoded->envelope().getBody();
        switch (decoded->which()) {
          case wire::Envelope::Body::WELCOME: {
            s.welcomed = true;
            const auto interval = body.getWelcome().getHeartbeatIntervalMs();
            if (interval > 0) s.heartbeat = milliseconds(interval);
            s.next_heartbeat = received;
            break;
          }
          case wire::Envelope::Body::REJECT:
            ++counts.rejects;
            std::fprintf(stderr, "load_driver: session %s rejected: %s\n", s.worker_id.c_str(),
                         body.getReject().getMessage().cStr());
            break;
          case wire::Envelope::Body::TASK: {
            ++counts.tasks;
            auto task = body.getTask();
            // A first attempt while others are still undispatched: the
            // coordinator had work for the credit the moment it was freed.
            const bool first = task.getAttempt() == 0;
            if (first) ++counts.first_attempts;
            if (!s.freed.empty()) {
              if (backlog && first && counts.first_attempts < total_partitions)
                counts.dispatch.add(std::chrono::duration<double>(received - s.freed.front()).count());
              s.freed.erase(s.freed.begin());
            }
            // The first S sessions to get a task go silent with it (a
            // session named in advance might never get one).
            if (counts.silenced < o.silent_sessions) {
              s.silent = true;
              ++counts.silenced;
              break;
            }
            if (task.getWitness().which() != wire::WitnessRef::FILE) {
              send(s, [&](wire::Envelope::Body::Builder b) {
                auto e = b.initError();
                e.setTaskId(task.getTaskId());
                e.setJobId(task.getJobId());
                e.setPartitionIndex(task.getPartitionIndex());
                e.setCode(wire::ErrorCode::INTERNAL);
                e.setMessage("load_driver answers file:// witnesses only");
              });
              break;
            }
            const bool invalid = task.getAttempt() == 0 && uniform(random) < o.invalid_share;
            s.answers.push_back(Answer{received + delay, task.getTaskId(), task.getJobId().cStr(),
                                       task.getCircuitId().cStr(), task.getWitness().getFile().cStr(),
                                       task.getPartitionIndex(), invalid});
            break;
          }
          case wire::Envelope::Body::CANCEL: {
            ++counts.cancels;
            const auto id = body.getCancel().getTaskId();
            std::erase_if(s.answers, [&](const Answer& a) { return a.task_id == id; });
            break;
          }
          default: break;  // heartbeats, shutdown
        }
      }
    }
  }
}

// cmdstat_<name> -> calls, from INFO commandstats; and INFO stats' counters.
std::map<std::string, double> redis_info(RedisClient& redis) {
  std::map<std::string, double> out;
  for (const char* section : {"commandstats", "stats", "cpu"}) {
    std::stringstream text(redis.command({"INFO", section}).as_string());
    for (std::string line; std::getline(text, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const auto colon = line.find(':');
      if (colon == std::string::npos || line[0] == '#') continue;
      const std::string name = line.substr(0, colon), value = line.substr(colon + 1);
      if (name.rfind("cmdstat_", 0) == 0) {
        const auto calls = value.find("calls=");
        if (calls != std::string::npos) out[name] = std::stod(value.substr(calls + 6));
      } else if (name == "total_net_input_bytes" || name == "total_net_output_bytes" || name == "used_cpu_sys" ||
                 name == "used_cpu_user") {
        out[name] = std::stod(value);
      }
    }
  }
  return out;
}

// user + system CPU seconds of a process or thread (/proc/<pid>/stat, or
// /proc/<pid>/task/<tid>/stat).
double cpu_seconds(const std::string& stat_path) {
  std::ifstream stat(stat_path);
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::stringstream fields(text.substr(close + 2));
  std::string field;
  double user = 0, system = 0;
  for (int i = 3; fields >> field; ++i) {
    if (i == 14) user = std::stod(field);
    if (i == 15) {
      system = std::stod(field);
      break;
    }
  }
  return (user + system) / static_cast<double>(sysconf(_SC_CLK_TCK));
}
double cpu_seconds(pid_t pid) { return cpu_seconds("/proc/" + std::to_string(pid) + "/stat"); }

// CPU seconds of a coordinator's threads by role: "scheduler" (the main
// thread, which runs run()), "verify" (the zkfarm-verify pool), "other"
// (network, intake, metrics, ZeroMQ's I/O thread).
std::map<std::string, double> cpu_by_thread(pid_t pid) {
  std::map<std::string, double> out;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(task, error)) {
    const std::string tid = entry.path().filename().string();
    std::ifstream comm_file(entry.path() / "comm");
    std::string comm;
    std::getline(comm_file, comm);
    const std::string role =
        tid == std::to_string(pid) ? "scheduler" : comm == "zkfarm-verify" ? "verify" : "other";
    out[role] += cpu_seconds((entry.path() / "stat").string());
  }
  return out;
}

// One farm, one row. Returns false when --check found a problem.
bool run(const Options& o, unsigned verify_threads, ProofCache& proofs) {
  TempDir dir;
  RedisServer redis_server(dir.path(),
                           RedisServer::Options{.appendonly = true, .password = "", .appendfsync = "everysec"});
  farm::FarmOptions options;
  options.redis_url = redis_server.url();
  options.artifacts = dir.file("artifacts");
  std::filesystem::create_directories(options.artifacts);
  proofs.set_store(options.artifacts);
  const std::string fixture = o.curve == "bn254" ? "bn128_mul" : "bls12381_mul";
  const CircuitInfo circuit = farm::circuit_add(options, runfile("formats/testdata/" + fixture + ".zkey"));
  const std::string witness = dir.file("w.wtns");
  std::filesystem::copy_file(runfile("formats/testdata/" + fixture + ".wtns"), witness);
  (void)proofs.proof(circuit.id, witness);  // before the clock starts

  std::vector<int> ports, metrics_ports, status_ports;
  std::vector<std::unique_ptr<Process>> coordinators;
  for (std::size_t k = 0; k < o.coordinators; ++k) {
    ports.push_back(free_port());
    metrics_ports.push_back(free_port());
    status_ports.push_back(free_port());
    coordinators.push_back(std::make_unique<Process>(
        std::vector<std::string>{runfile("coordinator/zkfarm-coordinator"), "--redis", options.redis_url, "--id",
                                 "load-c" + std::to_string(k), "--listen",
                                 "tcp://127.0.0.1:" + std::to_string(ports.back()), "--artifacts", options.artifacts,
                                 "--max-active-jobs", std::to_string(std::max<std::size_t>(o.jobs, 64)),
                                 "--verify-threads", std::to_string(verify_threads), "--metrics-listen",
                                 "127.0.0.1:" + std::to_string(metrics_ports.back()), "--status-listen",
                                 "127.0.0.1:" + std::to_string(status_ports.back())},
        dir.file("coordinator-" + std::to_string(k) + ".log"),
        std::map<std::string, std::string>{{"ZKFARM_LOG_LEVEL", "warning"}}));
  }
  for (std::size_t k = 0; k < o.coordinators; ++k)
    if (!wait_for_listener(metrics_ports[k], std::chrono::seconds(60)))
      throw std::runtime_error("coordinator " + std::to_string(k) + " did not start:\n" + coordinators[k]->log());

  zmq::context_t context(1);
  std::vector<Session> sessions(o.sessions);
  const std::uint64_t session_base = std::random_device{}();
  for (std::size_t i = 0; i < o.sessions; ++i) {
    Session& s = sessions[i];
    s.worker_id = "load-" + std::to_string(i);
    s.socket = std::make_unique<zmq::socket_t>(context, zmq::socket_type::dealer);
    s.socket->set(zmq::sockopt::linger, 0);
    s.socket->connect("tcp://127.0.0.1:" + std::to_string(ports[i % o.coordinators]));
    send_hello(s, static_cast<std::uint32_t>(o.credits), session_base + i);
  }
  Counts counts;
  std::atomic<bool> stop{false}, backlog{false};
  const auto deadline = Clock::now() + std::chrono::seconds(o.timeout_s);
  std::thread driver([&] { drive(o, sessions, proofs, stop, backlog, deadline, counts); });
  auto stop_driver = [&] {
    stop = true;
    if (driver.joinable()) driver.join();
  };
  // Every session welcomed (the driver thread owns the sessions: read its
  // flags only through the Redis worker records, which Welcome follows).
  RedisClient redis(options.redis_url);
  const bool joined = eventually(
      [&] {
        return farm::workers(options).size() >= o.sessions;
      },
      std::chrono::seconds(120));
  if (!joined) {
    stop_driver();
    throw std::runtime_error("only " + std::to_string(farm::workers(options).size()) + " of " +
                             std::to_string(o.sessions) + " sessions were welcomed");
  }

  const auto info_before = redis_info(redis);
  std::vector<double> cpu_before;
  std::map<std::string, double> threads_before;
  for (auto& c : coordinators) {
    cpu_before.push_back(cpu_seconds(c->pid()));
    for (const auto& [role, s] : cpu_by_thread(c->pid())) threads_before[role] += s;
  }
  const auto start = Clock::now();
  std::vector<std::string> ids;
  for (std::size_t j = 0; j < o.jobs; ++j) {
    json job = {{"id", "load-" + std::to_string(j)}, {"circuit", circuit.id}, {"partitions", json::array()}};
    for (std::size_t p = 0; p < o.partitions; ++p) job["partitions"].push_back({{"witness", "file://" + witness}});
    ids.push_back(farm::submit(options, job.dump()));
  }
  backlog = true;
  // The status page, read as an operator's browser would during the run.
  Stats status_latency;
  std::atomic<std::size_t> status_failures{0};
  std::atomic<bool> all_done{false};
  std::thread status_reader;
  if (o.status_poll_ms > 0) {
    status_reader = std::thread([&] {
      while (!all_done) {
        const auto asked = Clock::now();
        const HttpResult r = http_request(status_ports[0], "GET", "/api/v1/stats");
        if (r.status == 200) status_latency.add(std::chrono::duration<double>(Clock::now() - asked).count());
        else ++status_failures;
        std::this_thread::sleep_for(milliseconds(o.status_poll_ms));
      }
    });
  }
  std::string failure;
  std::size_t done = 0;
  for (const auto& id : ids) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    auto s = farm::wait(options, id, std::max(left, milliseconds(1)));
    if (s && s->state == "done") {
      ++done;
      continue;
    }
    failure = "job " + id + " ended " + (s ? s->state + " " + s->error : "missing");
    break;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  backlog = false;
  all_done = true;
  const auto info_after = redis_info(redis);
  double cpu = 0;
  std::map<std::string, double> threads_after;
  for (std::size_t k = 0; k < coordinators.size(); ++k) {
    cpu += cpu_seconds(coordinators[k]->pid()) - cpu_before[k];
    for (const auto& [role, s] : cpu_by_thread(coordinators[k]->pid())) threads_after[role] += s;
  }
  if (status_reader.joinable()) status_reader.join();
  stop_driver();

  Stats submit_to_done, wait, accept;
  std::size_t accepted_invalid = 0;
  for (const auto& id : ids) {
    auto s = farm::status(options, id);
    if (s && s->finished_at > 0) submit_to_done.add(s->finished_at - s->submitted_at);
    auto text = farm::result(options, id);
    if (!text) continue;
    const json result = json::parse(*text);
    for (const auto& p : result["partitions"]) {
      if (p.contains("coordinator")) {
        wait.add(p["coordinator"].value("wait_s", 0.0));
        accept.add(p["coordinator"].value("accept_s", 0.0));
      }
      if (counts.invalid.count({id, p.value("partition", 0u), p.value("worker", std::string())})) ++accepted_invalid;
    }
  }
  double faults = 0;
  for (const auto& w : farm::workers(options)) faults += w.faults;
  auto delta = [&](const std::string& name) {
    const auto a = info_after.find(name), b = info_before.find(name);
    return (a == info_after.end() ? 0 : a->second) - (b == info_before.end() ? 0 : b->second);
  };
  double commands = 0;
  std::vector<std::pair<double, std::string>> by_command;
  for (const auto& [name, calls] : info_after) {
    if (name.rfind("cmdstat_", 0) != 0) continue;
    const double d = delta(name);
    commands += d;
    if (d > 0) by_command.push_back({d, name.substr(8)});
  }
  std::sort(by_command.rbegin(), by_command.rend());
  const double partitions = static_cast<double>(o.jobs * o.partitions);
  std::printf(
      "| %s | %zu | %u | %zu x %zu | %zu x %zu | %.0f | %.2f | %.1f | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | "
      "%.2f / %.2f | %.1f | %.0f | %.2f | %.3f |\n",
      o.curve.c_str(), o.coordinators, verify_threads, o.sessions, o.credits, o.jobs, o.partitions, o.delay_ms, seconds,
      done == ids.size() ? partitions / seconds : 0.0, counts.dispatch.percentile(0.5) * 1e3,
      counts.dispatch.percentile(0.99) * 1e3, submit_to_done.percentile(0.5), submit_to_done.percentile(0.99),
      wait.percentile(0.5) * 1e3, wait.percentile(0.99) * 1e3, accept.percentile(0.5) * 1e3,
      accept.percentile(0.99) * 1e3, commands / partitions,
      (delta("total_net_input_bytes") + delta("total_net_output_bytes")) / partitions, cpu / partitions * 1e3,
      (delta("used_cpu_sys") + delta("used_cpu_user")) / partitions * 1e3);
  std::string top;
  for (std::size_t i = 0; i < std::min<std::size_t>(by_command.size(), 8); ++i)
    top += (i ? ", " : "") + by_command[i].second + " " +
           std::to_string(static_cast<long>(by_command[i].first / partitions * 100 + 0.5) / 100.0).substr(0, 4);
  std::fprintf(stderr,
               "load_driver: %u verify thread(s): %zu tasks, %zu results (%zu invalid), %zu cancels, %zu rejects, "
               "%zu unknown messages ignored, %zu sessions silenced, %zu proofs precomputed; faults recorded %.0f; "
               "Redis commands per partition by kind: %s",
               verify_threads, counts.tasks, counts.results, counts.invalid_sent, counts.cancels, counts.rejects,
               counts.unknown, counts.silenced, proofs.proved(), faults, top.c_str());
  std::fprintf(stderr, "; driver session thread %.2f cores busy over the run", counts.driver_cpu_seconds / seconds);
  std::fprintf(stderr, "; coordinator CPU ms per partition by thread:");
  for (const auto& [role, after] : threads_after)
    std::fprintf(stderr, " %s %.2f", role.c_str(), (after - threads_before[role]) / partitions * 1e3);
  std::fprintf(stderr, " (CPU-seconds per wall second:");
  for (const auto& [role, after] : threads_after)
    std::fprintf(stderr, " %s %.2f", role.c_str(), (after - threads_before[role]) / seconds);
  std::fprintf(stderr, ")");
  if (!status_latency.values.empty())
    std::fprintf(stderr, "; status page p50/p99 %.1f / %.1f ms over %zu reads", status_latency.percentile(0.5) * 1e3,
                 status_latency.percentile(0.99) * 1e3, status_latency.values.size());
  if (status_failures > 0) std::fprintf(stderr, "; status page: %zu reads failed", status_failures.load());
  std::fprintf(stderr, "\n");
  std::fflush(stdout);
  if (!o.check) return true;
  bool ok = true;
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "load_driver --check: %s\n", why.c_str());
    ok = false;
  };
  if (!failure.empty()) fail(failure + "\n" + coordinators[0]->log());
  if (done != ids.size()) fail(std::to_string(done) + " of " + std::to_string(ids.size()) + " jobs done");
  if (accepted_invalid > 0) fail(std::to_string(accepted_invalid) + " partitions accepted from an invalid proof");
  if (faults < static_cast<double>(counts.invalid_sent))
    fail(std::to_string(counts.invalid_sent) + " invalid proofs sent but only " + std::to_string(faults) +
         " faults recorded");
  if (o.invalid_share > 0 && counts.invalid_sent == 0) fail("--invalid-share given but no invalid proof was sent");
  if (counts.silenced != o.silent_sessions)
    fail(std::to_string(counts.silenced) + " of " + std::to_string(o.silent_sessions) + " sessions went silent");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "load_driver: %s\n", e.what());
    return 2;
  }
  bool ok = true;
  try {
    std::printf(
        "| curve | coordinators | verify threads | sessions x credits | jobs x partitions | delay (ms) | wall (s) | "
        "verified partitions/s | dispatch p50/p99 (ms) | submit->done p50/p99 (s) | coordinator wait p50/p99 (ms) | "
        "accept p50/p99 (ms) | Redis commands / partition | Redis bytes / partition | coordinator CPU ms / "
        "partition | Redis CPU ms / partition |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    ProofCache proofs("");
    for (unsigned threads : o.verify_threads) ok = run(o, threads, proofs) && ok;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "load_driver: %s\n", e.what());
    return 2;
  }
  return ok ? 0 : 1;
}
