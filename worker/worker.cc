// worker.cc -- see worker.h.
#include "worker/worker.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <random>
#include <variant>

#include "cluster/artifacts.h"
#include "cluster/curve_keys.h"
#include "cluster/groth16_glue.h"
#include "cluster/log.h"
#include "cluster/redis_client.h"
#include "prover/wire_code.h"
#include "schema/messages.h"

namespace zkfarm {

using Clock = std::chrono::steady_clock;

namespace {

wire::Curve wire_curve(CurveId id) {
  return id == CurveId::kBn254 ? wire::Curve::BN254 : wire::Curve::BLS12381;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// zkfarm_build_info's version label.
constexpr std::string_view kWorkerVersion = "0.1";

// The `device` label: the CUDA ordinal, or "cpu".
std::string device_label(const prover::Device& device) {
  return device.ordinal < 0 ? "cpu" : std::to_string(device.ordinal);
}

// Marks a task in progress for zkfarm_device_busy_seconds_total while alive.
class BusyScope {
 public:
  explicit BusyScope(metrics::WorkerMetrics& metrics) : metrics_(metrics) { metrics_.task_started(); }
  ~BusyScope() { metrics_.task_finished(); }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  metrics::WorkerMetrics& metrics_;
};

}  // namespace

Worker::Worker(WorkerConfig config, std::unique_ptr<prover::Prover> prover)
    : config_(std::move(config)), prover_(std::move(prover)),
      metrics_(std::make_shared<metrics::WorkerMetrics>(config_.worker_id, device_label(prover_->device()),
                                                        kWorkerVersion)),
      cache_(ArtifactStore(config_.artifacts), config_.cache_dir, *prover_, config_.max_resident),
      witness_policy_(make_witness_policy(config_.witness_roots, config_.artifacts, config_.key_prefix)),
      session_id_(std::random_device{}() * 0x100000000ull + std::random_device{}()), context_(1) {
  const auto device = prover_->device();
  metrics_->set_device_info(device.name, device.uuid, device.backend);
  metrics_->memory_total_bytes().Set(static_cast<double>(device.memory_bytes));
  metrics_->slots().Set(config_.slots);
  sample_metrics();
}

void Worker::sample_metrics() {
  metrics_->memory_used_bytes().Set(static_cast<double>(prover_->memory_used_bytes()));
  metrics_->circuit_cache_resident().Set(static_cast<double>(cache_.resident().size()));
  const std::uint64_t evictions = cache_.evictions();
  if (evictions > evictions_reported_) {
    metrics_->circuit_cache_evictions().Increment(static_cast<double>(evictions - evictions_reported_));
    evictions_reported_ = evictions;
  }
}

void Worker::warn_unanswered(Clock::time_point now) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - waiting_since_).count();
  std::string message = "the coordinator at " + config_.coordinator + " has not answered for " +
                        std::to_string(seconds) + " s; ";
  if (!config_.curve_server_key.empty()) {
    message += "CURVE is on, so the likely cause is the keys: --curve-server-key must be the coordinator's public "
               "key, and this worker's public key " +
               curve_public_key(config_.curve_secret_key) +
               " must be in the coordinator's --curve-allowlist (the coordinator logs \"ZAP denied\" for an "
               "unlisted key); else the coordinator is down or unreachable";
  } else {
    message += "is it running and reachable at that address? If it uses CURVE (--curve-secret-key-file), this "
               "worker needs --curve-server-key and --curve-secret-key-file";
  }
  ZKLOG(kWarning) << message;
}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    stopping_provers_ = true;
  }
  queue_cv_.notify_all();
  for (auto& t : provers_)
    if (t.joinable()) t.join();
}

std::string Worker::hello_bytes() {
  std::size_t busy;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    busy = in_flight_.size();
  }
  const auto device = prover_->device();
  const auto resident = cache_.resident();
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
    auto h = body.initHello();
    h.setProtocolVersion(wire::PROTOCOL_VERSION);
    h.setWorkerId(config_.worker_id);
    h.setSessionId(session_id_);
    h.setHostname(host);
    h.setPid(static_cast<std::uint32_t>(::getpid()));
    auto d = h.initDevice();
    d.setOrdinal(device.ordinal);
    d.setName(device.name);
    d.setUuid(device.uuid);
    d.setMemoryBytes(device.memory_bytes);
    d.setBackend(device.backend);
    auto curves = prover_->curves();
    auto list = h.initCurves(static_cast<unsigned>(curves.size()));
    for (std::size_t i = 0; i < curves.size(); ++i) list.set(static_cast<unsigned>(i), wire_curve(curves[i]));
    auto loaded = h.initLoadedCircuits(static_cast<unsigned>(resident.size()));
    for (std::size_t i = 0; i < resident.size(); ++i) loaded.set(static_cast<unsigned>(i), resident[i]);
    h.setCredits(draining_ ? 0 : static_cast<std::uint32_t>(config_.slots > busy ? config_.slots - busy : 0));
    h.setSoftwareVersion("zkfarm-worker 0.1");
    h.setMaxTasks(config_.slots);
  });
}

std::string Worker::heartbeat_bytes() {
  std::size_t busy;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    busy = in_flight_.size();
  }
  const auto resident = cache_.resident();
  return wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
    auto hb = body.initHeartbeat();
    hb.setSequence(++heartbeat_sequence_);
    hb.setSentAtUnixMs(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count()));
    hb.setBusyTasks(static_cast<std::uint32_t>(busy));
    auto loaded = hb.initLoadedCircuits(static_cast<unsigned>(resident.size()));
    for (std::size_t i = 0; i < resident.size(); ++i) loaded.set(static_cast<unsigned>(i), resident[i]);
  });
}

void Worker::handle_frame(const zmq::message_t& frame) {
  std::string error;
  auto decoded = wire::decode(
      std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(frame.data()), frame.size()), &error);
  if (!decoded) {
    ZKLOG(kWarning) << "dropped a malformed message from the coordinator: " << error;
    return;
  }
  auto body = decoded->envelope().getBody();
  if (decoded->which() == wire::Envelope::Body::REJECT) {
    // Readable whatever the coordinator's version (Reject is stable).
    auto r = body.getReject();
    ZKLOG(kWarning) << "coordinator rejected us (" << wire::error_code_name(r.getCode()) << "): "
                    << r.getMessage().cStr();
    welcomed_ = false;
    next_hello_ = Clock::now() + (r.getCode() == wire::ErrorCode::UNKNOWN_SESSION ? std::chrono::milliseconds(0)
                                                                                  : std::chrono::milliseconds(5000));
    return;
  }
  if (!decoded->version_ok()) {
    ZKLOG(kWarning) << "dropped a " << wire::body_name(decoded->which()) << " of protocol version "
                    << decoded->envelope().getProtocolVersion();
    return;
  }
  last_from_coordinator_ = Clock::now();
  switch (decoded->which()) {
    case wire::Envelope::Body::WELCOME: {
      auto w = body.getWelcome();
      welcomed_ = true;
      if (w.getHeartbeatIntervalMs() > 0) config_.heartbeat_interval = std::chrono::milliseconds(w.getHeartbeatIntervalMs());
      if (w.getDeadAfterMs() > 0) config_.coordinator_dead_after = std::chrono::milliseconds(w.getDeadAfterMs());
      ZKLOG(kInfo) << "welcomed by coordinator " << w.getCoordinatorId().cStr();
      break;
    }
    case wire::Envelope::Body::HEARTBEAT: break;
    case wire::Envelope::Body::TASK: {
      auto t = body.getTask();
      QueuedTask task;
      task.task_id = t.getTaskId();
      task.job_id = t.getJobId().cStr();
      task.circuit_id = t.getCircuitId().cStr();
      task.partition = t.getPartitionIndex();
      task.received = Clock::now();
      task.cancelled = std::make_shared<std::atomic<bool>>(false);
      auto w = t.getWitness();
      switch (w.which()) {
        case wire::WitnessRef::FILE:
          task.witness.kind = WitnessRef::Kind::kFile;
          task.witness.location = w.getFile().cStr();
          break;
        case wire::WitnessRef::REDIS_KEY:
          task.witness.kind = WitnessRef::Kind::kRedis;
          task.witness.location = w.getRedisKey().cStr();
          break;
        case wire::WitnessRef::INLINE: {
          task.witness.kind = WitnessRef::Kind::kInline;
          auto data = w.getInline();
          task.witness.inline_bytes.assign(data.begin(), data.end());
          break;
        }
      }
      ZKLOG(kInfo) << "task " << task.task_id << " received: job " << task.job_id << " partition " << task.partition;
      std::lock_guard<std::mutex> lock(queue_mutex_);
      in_flight_[task.task_id] = task.cancelled;
      queue_.push_back(std::move(task));
      queue_cv_.notify_one();
      break;
    }
    case wire::Envelope::Body::CANCEL: {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      if (auto it = in_flight_.find(body.getCancel().getTaskId()); it != in_flight_.end()) {
        it->second->store(true);
        ZKLOG(kInfo) << "task " << it->first << " cancelled by the coordinator";
      }
      break;
    }
    case wire::Envelope::Body::SHUTDOWN:
      ZKLOG(kInfo) << "coordinator asked us to drain: " << body.getShutdown().getReason().cStr();
      draining_ = true;
      break;
    default:
      ZKLOG(kWarning) << "dropped an unexpected " << wire::body_name(decoded->which());
  }
}

Worker::Finished Worker::execute(const QueuedTask& task, RedisClient* redis) {
  const auto start = task.received;
  wire::ErrorCode code = wire::ErrorCode::INTERNAL;
  std::string message;
  BusyScope busy(*metrics_);
  try {
    if (task.cancelled->load()) throw prover::Error(prover::ErrorKind::kCancelled, "cancelled");
    auto t0 = Clock::now();
    bool resident = false;
    std::shared_ptr<const prover::Circuit> circuit;
    try {
      circuit = cache_.get(task.circuit_id, &resident);
    } catch (...) {
      metrics_->circuit_cache_misses(task.circuit_id).Increment();
      metrics_->circuit_loads(task.circuit_id, false).Increment();
      throw;
    }
    const double load_seconds = resident ? 0 : seconds_since(t0);
    metrics_->circuit_cache_resident().Set(static_cast<double>(cache_.resident().size()));
    if (resident) {
      metrics_->circuit_cache_hits(task.circuit_id).Increment();
    } else {
      metrics_->circuit_cache_misses(task.circuit_id).Increment();
      metrics_->circuit_loads(task.circuit_id, true).Increment();
      metrics_->circuit_load_duration(task.circuit_id).Observe(load_seconds);
    }
    t0 = Clock::now();
    std::shared_ptr<const FileBytes> witness;
    try {
      witness = fetch_witness(task.witness, redis, witness_policy_);
    } catch (const WitnessUnavailable& e) {
      throw prover::Error(prover::ErrorKind::kWitnessUnavailable, e.what());
    } catch (const RedisError&) {
      metrics_->redis_errors().Increment();
      throw;
    }
    const double fetch_seconds = seconds_since(t0);
    if (config_.prove_delay.count() > 0) std::this_thread::sleep_for(config_.prove_delay);
    prover::ProveRequest request;
    request.cancelled = task.cancelled.get();
    prover::Timings timings;
    std::string proof = std::visit([](const auto& p) { return encode_proof(p.proof); },
                                   prover_->prove(*circuit, witness, request, &timings));
    if (config_.inject_fault == "corrupt-proof") {
      // Swap A and C (both valid G1 points): decodes fine, fails the pairing.
      const std::size_t quarter = proof.size() / 8 * 2;
      std::swap_ranges(proof.begin(), proof.begin() + quarter, proof.end() - quarter);
    }
    const auto device = prover_->device();
    metrics_->prove_stage_duration(metrics::Stage::kFetchWitness).Observe(fetch_seconds);
    metrics_->prove_stage_duration(metrics::Stage::kParseWitness).Observe(timings.parse_witness);
    if (timings.witness_check > 0)
      metrics_->prove_stage_duration(metrics::Stage::kWitnessCheck).Observe(timings.witness_check);
    metrics_->prove_stage_duration(metrics::Stage::kSpmv).Observe(timings.spmv);
    metrics_->prove_stage_duration(metrics::Stage::kNtt).Observe(timings.ntt);
    metrics_->prove_stage_duration(metrics::Stage::kMsm).Observe(timings.msm);
    metrics_->prove_duration(task.circuit_id).Observe(timings.prove);
    metrics_->proofs(task.circuit_id).Increment();
    return Finished{wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
                      auto r = body.initResult();
                      r.setTaskId(task.task_id);
                      r.setJobId(task.job_id);
                      r.setPartitionIndex(task.partition);
                      r.setProof(kj::arrayPtr(reinterpret_cast<const kj::byte*>(proof.data()), proof.size()));
                      r.setDeviceUuid(device.uuid);
                      r.setCircuitWasResident(resident);
                      auto t = r.initTimings();
                      t.setLoadCircuitSeconds(load_seconds);
                      t.setFetchWitnessSeconds(fetch_seconds);
                      t.setParseWitnessSeconds(timings.parse_witness);
                      t.setWitnessCheckSeconds(timings.witness_check);
                      t.setSpmvSeconds(timings.spmv);
                      t.setNttSeconds(timings.ntt);
                      t.setMsmSeconds(timings.msm);
                      t.setProveSeconds(timings.prove);
                      t.setTotalSeconds(seconds_since(start));
                    }),
                    task.task_id};
  } catch (const prover::Error& e) {
    code = prover::wire_code(e.kind());
    message = e.what();
  } catch (const std::bad_alloc&) {
    code = wire::ErrorCode::OUT_OF_MEMORY;
    message = "out of memory";
  } catch (const std::exception& e) {
    code = wire::ErrorCode::INTERNAL;
    message = e.what();
  }
  ZKLOG(kWarning) << "task " << task.task_id << " (job " << task.job_id << " partition " << task.partition
                  << ") failed: " << wire::error_code_name(code) << ": " << message;
  metrics_->task_errors(wire::error_code_name(code)).Increment();
  return Finished{wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
                    auto e = body.initError();
                    e.setTaskId(task.task_id);
                    e.setJobId(task.job_id);
                    e.setPartitionIndex(task.partition);
                    e.setCode(code);
                    e.setMessage(message);
                  }),
                  task.task_id};
}

void Worker::prover_main() {
  std::unique_ptr<RedisClient> redis;
  if (!config_.redis_url.empty()) redis = std::make_unique<RedisClient>(config_.redis_url);
  for (;;) {
    QueuedTask task;
    {
      std::unique_lock<std::mutex> lock(queue_mutex_);
      queue_cv_.wait(lock, [&] { return stopping_provers_ || !queue_.empty(); });
      if (stopping_provers_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    Finished f = execute(task, redis.get());
    finished_.push(std::move(f));
  }
}

int Worker::run() {
  socket_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
  // A stable routing id per process: reconnects keep the same identity.
  char id[32];
  std::snprintf(id, sizeof id, "#%016llx", static_cast<unsigned long long>(session_id_));
  socket_->set(zmq::sockopt::routing_id, config_.worker_id.substr(0, 200) + id);
  socket_->set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(wire::kMaxFrameBytes));
  socket_->set(zmq::sockopt::linger, 1000);
  socket_->set(zmq::sockopt::reconnect_ivl, 100);
  socket_->set(zmq::sockopt::reconnect_ivl_max, 2000);
  if (!config_.curve_server_key.empty()) {
    socket_->set(zmq::sockopt::curve_serverkey, config_.curve_server_key);
    socket_->set(zmq::sockopt::curve_publickey, curve_public_key(config_.curve_secret_key));
    socket_->set(zmq::sockopt::curve_secretkey, config_.curve_secret_key);
  }
  socket_->connect(config_.coordinator);
  for (std::uint32_t i = 0; i < config_.slots; ++i) provers_.emplace_back([this] { prover_main(); });

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  const int signal_fd = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);

  ZKLOG(kInfo) << "worker " << config_.worker_id << " (" << prover_->device().name << ", " << config_.slots
               << " slots) connecting to " << config_.coordinator;
  auto send = [&](const std::string& bytes) {
    zmq::message_t m(bytes.data(), bytes.size());
    (void)socket_->send(m, zmq::send_flags::dontwait);
  };
  next_hello_ = Clock::now();
  last_from_coordinator_ = Clock::now();
  auto next_heartbeat = Clock::now();
  auto next_miss_check = Clock::now() + config_.heartbeat_interval;
  Clock::time_point drain_deadline{};
  for (;;) {
    const auto now = Clock::now();
    if (now >= next_miss_check) {
      // The coordinator heartbeats every interval: silence past 1.5
      // intervals is a miss, counted once per interval while it lasts.
      if (welcomed_ && now - last_from_coordinator_ > config_.heartbeat_interval * 3 / 2)
        metrics_->coordinator_heartbeat_misses().Increment();
      sample_metrics();
      next_miss_check = now + config_.heartbeat_interval;
    }
    if (welcomed_) {
      waiting_for_welcome_ = false;
    } else if (!waiting_for_welcome_) {
      waiting_for_welcome_ = true;
      waiting_since_ = now;
      next_unanswered_warning_ = now + config_.unanswered_warning;
    } else if (now >= next_unanswered_warning_) {
      warn_unanswered(now);
      next_unanswered_warning_ = now + config_.unanswered_repeat;
    }
    if (!welcomed_ && now >= next_hello_) {
      send(hello_bytes());
      next_hello_ = now + std::chrono::milliseconds(1000);
    }
    if (welcomed_ && now - last_from_coordinator_ > config_.coordinator_dead_after) {
      ZKLOG(kWarning) << "coordinator silent for more than " << config_.coordinator_dead_after.count()
                      << " ms; saying hello again";
      welcomed_ = false;
      next_hello_ = now;
      continue;
    }
    if (welcomed_ && now >= next_heartbeat) {
      send(heartbeat_bytes());
      next_heartbeat = now + config_.heartbeat_interval;
    }
    if (draining_) {
      bool idle;
      {
        std::lock_guard<std::mutex> lock(queue_mutex_);
        idle = in_flight_.empty();
      }
      if (idle || now >= drain_deadline) {
        ZKLOG(kInfo) << (idle ? "drained; exiting" : "drain timeout; exiting with tasks unfinished");
        break;
      }
    }
    zmq::pollitem_t items[] = {{socket_->handle(), 0, ZMQ_POLLIN, 0},
                               {nullptr, finished_.fd(), ZMQ_POLLIN, 0},
                               {nullptr, signal_fd, ZMQ_POLLIN, 0}};
    zmq::poll(items, 3, std::chrono::milliseconds(50));
    if (items[2].revents & ZMQ_POLLIN) {
      signalfd_siginfo info;
      while (::read(signal_fd, &info, sizeof info) == sizeof info) {
      }
      if (!draining_) {
        ZKLOG(kInfo) << "signal received: draining (finishing held tasks, taking no new ones)";
        draining_ = true;
        drain_deadline = Clock::now() + config_.drain_timeout;
        send(wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
          auto s = body.initShutdown();
          s.setReason("worker received a termination signal");
          s.setDrain(true);
        }));
      }
    }
    if (items[1].revents & ZMQ_POLLIN) {
      for (auto& f : finished_.drain()) {
        {
          std::lock_guard<std::mutex> lock(queue_mutex_);
          in_flight_.erase(f.task_id);
        }
        send(f.bytes);
        if (!draining_)
          send(wire::encode_envelope([&](wire::Envelope::Body::Builder body) { body.initCredit().setCredits(1); }));
      }
    }
    if (items[0].revents & ZMQ_POLLIN) {
      for (int n = 0; n < 1000; ++n) {
        zmq::message_t frame;
        try {
          if (!socket_->recv(frame, zmq::recv_flags::dontwait)) break;
          while (frame.more()) {  // DEALER: one frame per message expected
            zmq::message_t extra;
            (void)socket_->recv(extra, zmq::recv_flags::none);
            frame.move(extra);
          }
          handle_frame(frame);
        } catch (const kj::Exception& e) {
          ZKLOG(kWarning) << "dropped a message that failed to read: " << e.getDescription().cStr();
        } catch (const zmq::error_t& e) {
          ZKLOG(kWarning) << "receive failed: " << e.what();
          break;
        }
      }
    }
  }
  ::close(signal_fd);
  return 0;
}

}  // namespace zkfarm
