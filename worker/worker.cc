// worker.cc -- see worker.h.
#include "worker/worker.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <random>
#include <variant>

#include "base/digest.h"
#include "cluster/artifacts.h"
#include "cluster/curve_keys.h"
#include "cluster/groth16_glue.h"
#include "cluster/log.h"
#include "cluster/redis_client.h"
#include "schema/messages.h"
#include "schema/wire_model.h"

namespace zkfarm {

using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// How long a coordinator may leave a credit unused while another coordinator
// is connected before the credit moves on, and how long a coordinator whose
// credit was withdrawn counts as idle (offered credits after the others).
// A coordinator with work uses a credit within one scheduling pass
// (milliseconds), so 200 ms only moves credits nobody wanted.
constexpr std::chrono::milliseconds kCreditIdleAfter{200};
constexpr std::chrono::milliseconds kIdleMemory{1000};

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
      cache_(config_.artifacts, config_.cache_dir, *prover_, config_.max_resident, config_.key_prefix,
             [&] {
               HttpLimits limits;
               limits.ca_file = config_.ca_file;
               return limits;
             }()),
      // A store served over HTTP is no directory: no default witness root.
      witness_policy_(make_witness_policy(config_.witness_roots, is_http_url(config_.artifacts) ? "" : config_.artifacts,
                                          config_.key_prefix)),
      session_id_(std::random_device{}() * 0x100000000ull + std::random_device{}()), context_(1) {
  witness_policy_.http.ca_file = config_.ca_file;
  const auto device = prover_->device();
  metrics_->set_device_info(device.name, device.uuid, device.backend);
  metrics_->memory_total_bytes().Set(static_cast<double>(device.memory_bytes));
  metrics_->slots().Set(config_.slots);
  metrics_->witgen_workers().Set(config_.witgen_workers);
  sample_metrics();
}

void Worker::sample_metrics() {
  metrics_->memory_used_bytes().Set(static_cast<double>(prover_->memory_used_bytes()));
  metrics_->circuit_cache_resident().Set(static_cast<double>(cache_.resident().size()));
  const CircuitCache::Placement placement = cache_.placement();
  metrics_->resident_bytes().Set(static_cast<double>(placement.resident_bytes));
  metrics_->streamed_bytes().Set(static_cast<double>(placement.streamed_bytes));
  metrics_->host_pinned_bytes().Set(static_cast<double>(placement.host_pinned_bytes));
  const std::uint64_t evictions = cache_.evictions();
  if (evictions > evictions_reported_) {
    metrics_->circuit_cache_evictions().Increment(static_cast<double>(evictions - evictions_reported_));
    evictions_reported_ = evictions;
  }
}

void Worker::warn_unanswered(const Session& session, Clock::time_point now) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - session.waiting_since).count();
  std::string message = "the coordinator at " + session.endpoint + " has not answered for " +
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
  ready_cv_.notify_all();
  witgen_cv_.notify_all();
  if (preparer_.joinable()) preparer_.join();
  for (auto& t : provers_)
    if (t.joinable()) t.join();
  for (auto& t : witgen_threads_)
    if (t.joinable()) t.join();
}

std::string Worker::hello_bytes() {
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
    for (std::size_t i = 0; i < curves.size(); ++i) list.set(static_cast<unsigned>(i), wire::wire_curve(curves[i]));
    auto loaded = h.initLoadedCircuits(static_cast<unsigned>(resident.size()));
    for (std::size_t i = 0; i < resident.size(); ++i) loaded.set(static_cast<unsigned>(i), resident[i]);
    // Credits follow the Welcome (balance_credits): a coordinator that never
    // answers must not hold part of the budget.
    h.setCredits(0);
    h.setSoftwareVersion("zkfarm-worker 0.1");
    h.setMaxTasks(capacity());
  });
}

std::string Worker::heartbeat_bytes(Session& session) {
  std::size_t busy;
  std::vector<std::uint64_t> witness_pending;  // this session's tasks queued for or in a generator
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    busy = in_flight_.size();
    for (const auto& task : witgen_queue_)
      if (task.session == session.index) witness_pending.push_back(task.task_id);
    for (const auto& [index, task_id] : witgen_active_)
      if (index == session.index) witness_pending.push_back(task_id);
  }
  const auto resident = cache_.resident();
  return wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
    auto hb = body.initHeartbeat();
    auto pending = hb.initWitnessPending(static_cast<unsigned>(witness_pending.size()));
    for (std::size_t i = 0; i < witness_pending.size(); ++i) pending.set(static_cast<unsigned>(i), witness_pending[i]);
    hb.setSequence(++session.heartbeat_sequence);
    hb.setSentAtUnixMs(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count()));
    hb.setBusyTasks(static_cast<std::uint32_t>(busy));
    auto loaded = hb.initLoadedCircuits(static_cast<unsigned>(resident.size()));
    for (std::size_t i = 0; i < resident.size(); ++i) loaded.set(static_cast<unsigned>(i), resident[i]);
  });
}

void Worker::send(Session& session, const std::string& bytes) {
  zmq::message_t m(bytes.data(), bytes.size());
  (void)session.socket->send(m, zmq::send_flags::dontwait);
}

void Worker::end_session(Session& session, Clock::time_point next_hello) {
  session.welcomed = false;
  session.granted = 0;
  session.next_hello = next_hello;
}

void Worker::balance_credits(Clock::time_point now) {
  std::size_t held;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    held = in_flight_.size();
  }
  std::vector<Session*> open;
  std::uint64_t granted = 0;
  for (auto& session : sessions_) {
    granted += session.granted;
    if (session.welcomed) open.push_back(&session);
  }
  if (draining_ || open.empty()) return;
  // Withdraw credits left unused while another coordinator could use them.
  if (open.size() > 1) {
    for (Session* session : open) {
      if (session->granted == 0 || now - session->credit_unused_since < kCreditIdleAfter) continue;
      ZKLOG(kDebug) << "coordinator " << session->coordinator_id << " left " << session->granted
                    << " credit(s) unused; offering them to another";
      const std::uint32_t withdrawn = session->granted;
      send(*session, wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
             auto c = body.initCredit();
             c.setCredits(0);
             c.setWithdraw(withdrawn);
           }));
      granted -= withdrawn;
      session->granted = 0;
      session->idle_until = now + kIdleMemory;
      next_credit_session_ = session->index + 1;
    }
  }
  // Free slots: the budget less the tasks held and the credits out. Held
  // tasks can exceed the budget for a moment (a task that crossed a
  // withdrawal): then nothing is offered until they finish.
  const std::uint64_t used = held + granted;
  std::uint64_t free = capacity() > used ? capacity() - used : 0;
  while (free > 0) {
    // Round robin, coordinators that recently left credits unused last.
    Session* chosen = nullptr;
    for (bool allow_idle : {false, true}) {
      for (std::size_t k = 0; k < sessions_.size() && !chosen; ++k) {
        Session& candidate = sessions_[(next_credit_session_ + k) % sessions_.size()];
        if (candidate.welcomed && (allow_idle || candidate.idle_until <= now)) chosen = &candidate;
      }
      if (chosen) break;
    }
    if (!chosen) break;
    next_credit_session_ = chosen->index + 1;
    if (chosen->granted == 0) chosen->credit_unused_since = now;
    ++chosen->granted;
    --free;
    send(*chosen, wire::encode_envelope([&](wire::Envelope::Body::Builder body) { body.initCredit().setCredits(1); }));
  }
}

void Worker::handle_frame(Session& session, const zmq::message_t& frame) {
  std::string error;
  auto decoded = wire::decode(
      std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(frame.data()), frame.size()), &error);
  if (!decoded) {
    ZKLOG(kWarning) << "dropped a malformed message from the coordinator at " << session.endpoint << ": " << error;
    return;
  }
  auto body = decoded->envelope().getBody();
  if (decoded->which() == wire::Envelope::Body::REJECT) {
    // Readable whatever the coordinator's version (Reject is stable).
    auto r = body.getReject();
    ZKLOG(kWarning) << "coordinator at " << session.endpoint << " rejected us (" << wire::error_code_name(r.getCode())
                    << "): " << r.getMessage().cStr();
    end_session(session, Clock::now() + (r.getCode() == wire::ErrorCode::UNKNOWN_SESSION
                                             ? std::chrono::milliseconds(0)
                                             : std::chrono::milliseconds(5000)));
    return;
  }
  if (!decoded->version_ok()) {
    ZKLOG(kWarning) << "dropped a " << wire::body_name(decoded->which()) << " of protocol version "
                    << decoded->envelope().getProtocolVersion();
    return;
  }
  session.last_heard = Clock::now();
  switch (decoded->which()) {
    case wire::Envelope::Body::WELCOME: {
      auto w = body.getWelcome();
      session.welcomed = true;
      session.granted = 0;  // a new session: the coordinator holds none of our credits
      session.coordinator_id = w.getCoordinatorId().cStr();
      if (w.getHeartbeatIntervalMs() > 0) session.heartbeat_interval = std::chrono::milliseconds(w.getHeartbeatIntervalMs());
      if (w.getDeadAfterMs() > 0) session.dead_after = std::chrono::milliseconds(w.getDeadAfterMs());
      ZKLOG(kInfo) << "welcomed by coordinator " << session.coordinator_id << " at " << session.endpoint;
      break;
    }
    case wire::Envelope::Body::HEARTBEAT: break;
    case wire::Envelope::Body::TASK: {
      auto spec = task_from_wire(body.getTask());
      if (!spec) {
        ZKLOG(kWarning) << "dropped a task with a witness of an unknown kind from coordinator "
                        << session.coordinator_id;
        break;
      }
      QueuedTask task;
      task.session = session.index;
      task.task_id = spec->task_id;
      task.job_id = std::move(spec->job_id);
      task.circuit_id = std::move(spec->circuit_id);
      task.partition = spec->partition;
      task.received = Clock::now();
      task.cancelled = std::make_shared<std::atomic<bool>>(false);
      task.witness = std::move(spec->witness);
      task.witgen_sha256 = std::move(spec->witgen_sha256);
      task.witgen_dat_sha256 = std::move(spec->witgen_dat_sha256);
      ZKLOG(kInfo) << "task " << task.task_id << " received: job " << task.job_id << " partition " << task.partition
                   << " from coordinator " << session.coordinator_id;
      if (session.granted > 0) --session.granted;
      session.credit_unused_since = Clock::now();
      std::lock_guard<std::mutex> lock(queue_mutex_);
      in_flight_[{session.index, task.task_id}] = task.cancelled;
      if (task.witness.kind == WitnessRef::Kind::kInput) {
        // The witness generator pool first, then a prover.
        witgen_queue_.push_back(std::move(task));
        metrics_->witgen_queue_depth().Set(static_cast<double>(witgen_queue_.size()));
        witgen_cv_.notify_one();
      } else {
        queue_.push_back(std::move(task));
        queue_cv_.notify_all();
      }
      break;
    }
    case wire::Envelope::Body::CANCEL: {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      if (auto it = in_flight_.find({session.index, body.getCancel().getTaskId()}); it != in_flight_.end()) {
        it->second->store(true);
        ZKLOG(kInfo) << "task " << it->first.second << " cancelled by coordinator " << session.coordinator_id;
      }
      break;
    }
    case wire::Envelope::Body::SHUTDOWN:
      ZKLOG(kInfo) << "coordinator " << session.coordinator_id
                   << " asked us to drain: " << body.getShutdown().getReason().cStr();
      draining_ = true;
      break;
    default:
      ZKLOG(kWarning) << "dropped an unexpected " << wire::body_name(decoded->which());
  }
}

namespace {

// The wire code and message of the exception being handled (call inside a
// catch block): what prepare() and prove_prepared() report for a task.
std::pair<wire::ErrorCode, std::string> current_task_error() {
  try {
    throw;
  } catch (const prover::Error& e) {
    return {to_wire(e.kind()), e.what()};
  } catch (const WitnessChecksum& e) {
    return {to_wire(ErrorCode::kWitnessChecksum), e.what()};
  } catch (const std::bad_alloc&) {
    return {to_wire(ErrorCode::kOutOfMemory), "out of memory"};
  } catch (const std::exception& e) {
    return {to_wire(ErrorCode::kInternal), e.what()};
  }
}

}  // namespace

std::variant<Worker::Prepared, Worker::Finished> Worker::prepare(QueuedTask task, RedisClient* redis) {
  try {
    if (task.cancelled->load()) throw prover::Error(prover::ErrorKind::kCancelled, "cancelled");
    Prepared p;
    auto t0 = Clock::now();
    try {
      p.circuit = cache_.get(task.circuit_id, &p.resident, redis);
    } catch (...) {
      metrics_->circuit_cache_misses(task.circuit_id).Increment();
      metrics_->circuit_loads(task.circuit_id, false).Increment();
      throw;
    }
    p.load_seconds = p.resident ? 0 : seconds_since(t0);
    metrics_->circuit_cache_resident().Set(static_cast<double>(cache_.resident().size()));
    if (p.resident) {
      metrics_->circuit_cache_hits(task.circuit_id).Increment();
    } else {
      metrics_->circuit_cache_misses(task.circuit_id).Increment();
      metrics_->circuit_loads(task.circuit_id, true).Increment();
      metrics_->circuit_load_duration(task.circuit_id).Observe(p.load_seconds);
    }
    t0 = Clock::now();
    std::shared_ptr<const FileBytes> witness = task.generated;
    try {
      if (!witness) {
        try {
          witness = fetch_witness(task.witness, redis, witness_policy_);
        } catch (const WitnessChecksum& e) {
          if (task.witness.kind != WitnessRef::Kind::kHttp) throw;
          // A transfer may have been corrupted on the way: fetch it once more.
          ZKLOG(kWarning) << "task " << task.task_id << ": " << e.what() << "; fetching it again";
          witness = fetch_witness(task.witness, redis, witness_policy_);
        }
      }
    } catch (const WitnessUnavailable& e) {
      throw prover::Error(prover::ErrorKind::kWitnessUnavailable, e.what());
    } catch (const RedisError&) {
      metrics_->redis_errors().Increment();
      throw;
    }
    p.fetch_seconds = seconds_since(t0);
    // Parsed and checked into the prover's memory (page-locked on a device);
    // the file's bytes (a mapping, or the generator's output) go with it.
    p.witness = prover_->prepare(*p.circuit, witness);
    task.generated.reset();
    p.task = std::move(task);
    return p;
  } catch (const std::exception&) {
    const auto [code, message] = current_task_error();
    return task_error(task, code, message);
  }
}

Worker::Finished Worker::prove_prepared(const Prepared& p) {
  const QueuedTask& task = p.task;
  try {
    if (config_.prove_delay.count() > 0) std::this_thread::sleep_for(config_.prove_delay);
    prover::ProveRequest request;
    request.cancelled = task.cancelled.get();
    prover::Timings timings;
    std::optional<prover::Proof> proved;
    {
      BusyScope busy(*metrics_);  // the device's time: the upload and the kernels
      proved = prover_->prove(*p.circuit, *p.witness, request, &timings);
    }
    const prover::Proof& made = *proved;
    std::string proof = std::visit([](const auto& proof_of) { return encode_proof(proof_of.proof); }, made);
    // Input partitions: the coordinator verifies against the public signals
    // of the witness computed here (the prover checked it against the circuit).
    std::vector<std::uint8_t> public_inputs;
    if (task.witness.kind == WitnessRef::Kind::kInput) {
      std::visit(
          [&](const auto& proof_of) {
            using Fr = std::decay_t<decltype(proof_of.public_signals[0])>;
            public_inputs.resize(proof_of.public_signals.size() * Fr::kBytes);
            for (std::size_t i = 0; i < proof_of.public_signals.size(); ++i)
              proof_of.public_signals[i].to_le_bytes(public_inputs.data() + i * Fr::kBytes);
          },
          made);
    }
    if (config_.inject_fault == "corrupt-proof") {
      // Swap A and C (both valid G1 points): decodes fine, fails the pairing.
      const std::size_t quarter = proof.size() / 8 * 2;
      std::swap_ranges(proof.begin(), proof.begin() + quarter, proof.end() - quarter);
    }
    const auto device = prover_->device();
    metrics_->prove_stage_duration(metrics::Stage::kFetchWitness).Observe(p.fetch_seconds);
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
                      r.setCircuitWasResident(p.resident);
                      if (task.witness.kind == WitnessRef::Kind::kInput)
                        r.setPublicInputs(kj::arrayPtr(public_inputs.data(), public_inputs.size()));
                      auto t = r.initTimings();
                      t.setLoadCircuitSeconds(p.load_seconds);
                      t.setFetchWitnessSeconds(p.fetch_seconds);
                      t.setParseWitnessSeconds(timings.parse_witness);
                      t.setWitnessCheckSeconds(timings.witness_check);
                      t.setSpmvSeconds(timings.spmv);
                      t.setNttSeconds(timings.ntt);
                      t.setMsmSeconds(timings.msm);
                      t.setProveSeconds(timings.prove);
                      t.setTotalSeconds(seconds_since(task.received));
                      t.setWitnessGenSeconds(task.witgen_seconds);
                    }),
                    task.session, task.task_id};
  } catch (const std::exception&) {
    const auto [code, message] = current_task_error();
    return task_error(task, code, message);
  }
}

Worker::Finished Worker::execute(QueuedTask task, RedisClient* redis) {
  auto prepared = prepare(std::move(task), redis);
  if (auto* failed = std::get_if<Finished>(&prepared)) return std::move(*failed);
  return prove_prepared(std::get<Prepared>(prepared));
}

Worker::Finished Worker::task_error(const QueuedTask& task, wire::ErrorCode code, const std::string& message) {
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
                  task.session, task.task_id};
}

std::string Worker::checked_generator(const QueuedTask& task, RedisClient* redis) {
  const std::string key = task.witgen_sha256 + ":" + task.witgen_dat_sha256;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    if (auto it = checked_generators_.find(key); it != checked_generators_.end()) return it->second;
  }
  if (task.witgen_sha256.empty())
    throw prover::Error(prover::ErrorKind::kBadCircuit,
                        "the task names no witness generator for circuit " + task.circuit_id);
  // A store served over HTTP: the generator is downloaded with the
  // circuit's other files (checked against the record) into the cache.
  const ArtifactStore store(cache_.local_root(task.circuit_id, redis));
  const std::string binary = store.absolute(ArtifactStore::witgen_relative(task.circuit_id));
  std::string binary_sha, dat_sha;
  try {
    binary_sha = sha256_file_hex(binary);
    dat_sha = sha256_file_hex(binary + ".dat");
  } catch (const std::exception& e) {
    throw prover::Error(prover::ErrorKind::kBadCircuit,
                        "witness generator of circuit " + task.circuit_id + " unreadable: " + e.what());
  }
  if (binary_sha != task.witgen_sha256 || dat_sha != task.witgen_dat_sha256)
    throw prover::Error(prover::ErrorKind::kBadCircuit,
                        "witness generator " + binary + " does not match the circuit record (sha256 " + binary_sha +
                            ", expected " + task.witgen_sha256 + "; .dat " + dat_sha + ", expected " +
                            task.witgen_dat_sha256 + ")");
  std::lock_guard<std::mutex> lock(queue_mutex_);
  checked_generators_[key] = binary;
  return binary;
}

std::optional<Worker::Finished> Worker::generate_witness(QueuedTask& task, RedisClient* redis) {
  try {
    if (task.cancelled->load()) throw prover::Error(prover::ErrorKind::kCancelled, "cancelled");
    const std::string binary = checked_generator(task, redis);
    if (config_.witgen_delay.count() > 0) std::this_thread::sleep_for(config_.witgen_delay);
    const auto t0 = Clock::now();
    std::vector<std::uint8_t> bytes =
        witgen::run_generator(binary, task.witness.input_json, config_.witgen_temp_dir, config_.witgen_limits);
    task.witgen_seconds = seconds_since(t0);
    metrics_->witgen_duration().Observe(task.witgen_seconds);
    task.generated = FileBytes::adopt(std::move(bytes), "the witness computed for partition " +
                                                            std::to_string(task.partition));
    return std::nullopt;
  } catch (const witgen::BadInput& e) {
    // The coordinator's message names the job and partition.
    metrics_->witgen_failures("badInput").Increment();
    return task_error(task, to_wire(ErrorCode::kBadInput), std::string("the input was refused: ") + e.what());
  } catch (const prover::Error& e) {
    metrics_->witgen_failures(error_name(e.kind())).Increment();
    return task_error(task, to_wire(e.kind()), e.what());
  } catch (const std::exception& e) {
    metrics_->witgen_failures("internal").Increment();
    return task_error(task, to_wire(ErrorCode::kInternal), std::string("witness generator: ") + e.what());
  }
}

void Worker::witgen_main() {
  std::unique_ptr<RedisClient> redis;
  if (!config_.redis_url.empty()) redis = std::make_unique<RedisClient>(config_.redis_url);
  for (;;) {
    QueuedTask task;
    {
      std::unique_lock<std::mutex> lock(queue_mutex_);
      witgen_cv_.wait(lock, [&] { return stopping_provers_ || !witgen_queue_.empty(); });
      if (stopping_provers_) return;
      task = std::move(witgen_queue_.front());
      witgen_queue_.pop_front();
      ++witgen_running_;
      witgen_active_.insert({task.session, task.task_id});
      metrics_->witgen_queue_depth().Set(static_cast<double>(witgen_queue_.size()));
      metrics_->witgen_busy(witgen_running_);
    }
    std::optional<Finished> failed = generate_witness(task, redis.get());
    std::lock_guard<std::mutex> lock(queue_mutex_);
    --witgen_running_;
    witgen_active_.erase({task.session, task.task_id});
    metrics_->witgen_busy(witgen_running_);
    if (failed) {
      finished_.push(std::move(*failed));
    } else {
      queue_.push_back(std::move(task));
      queue_cv_.notify_all();
    }
  }
}

void Worker::prover_main() {
  std::unique_ptr<RedisClient> redis;
  if (!config_.redis_url.empty()) redis = std::make_unique<RedisClient>(config_.redis_url);
  for (;;) {
    if (config_.prefetch == 0) {
      QueuedTask task;
      {
        std::unique_lock<std::mutex> lock(queue_mutex_);
        queue_cv_.wait(lock, [&] { return stopping_provers_ || !queue_.empty(); });
        if (stopping_provers_) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      finished_.push(execute(std::move(task), redis.get()));
      continue;
    }
    // Prefetching: the preparer has fetched and parsed the witness.
    Prepared prepared;
    {
      std::unique_lock<std::mutex> lock(queue_mutex_);
      ready_cv_.wait(lock, [&] { return stopping_provers_ || !ready_.empty(); });
      if (stopping_provers_) return;
      prepared = std::move(ready_.front());
      ready_.pop_front();
    }
    queue_cv_.notify_all();  // room for the preparer
    finished_.push(prove_prepared(prepared));
  }
}

void Worker::prepare_main() {
  std::unique_ptr<RedisClient> redis;
  if (!config_.redis_url.empty()) redis = std::make_unique<RedisClient>(config_.redis_url);
  for (;;) {
    QueuedTask task;
    {
      std::unique_lock<std::mutex> lock(queue_mutex_);
      queue_cv_.wait(lock, [&] {
        return stopping_provers_ || (!queue_.empty() && ready_.size() < config_.prefetch);
      });
      if (stopping_provers_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    auto prepared = prepare(std::move(task), redis.get());
    if (auto* failed = std::get_if<Finished>(&prepared)) {
      finished_.push(std::move(*failed));
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      ready_.push_back(std::move(std::get<Prepared>(prepared)));
    }
    ready_cv_.notify_one();
  }
}

int Worker::run() {
  // A stable routing id per process: reconnects keep the same identity.
  char id[32];
  std::snprintf(id, sizeof id, "#%016llx", static_cast<unsigned long long>(session_id_));
  const auto now0 = Clock::now();
  for (const auto& endpoint : config_.coordinators) {
    Session& session = sessions_.emplace_back();
    session.index = sessions_.size() - 1;
    session.endpoint = endpoint;
    session.socket = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
    zmq::socket_t& socket = *session.socket;
    socket.set(zmq::sockopt::routing_id, config_.worker_id.substr(0, 200) + id);
    socket.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(wire::kMaxFrameBytes));
    socket.set(zmq::sockopt::linger, 1000);
    socket.set(zmq::sockopt::reconnect_ivl, 100);
    socket.set(zmq::sockopt::reconnect_ivl_max, 2000);
    if (!config_.curve_server_key.empty()) {
      socket.set(zmq::sockopt::curve_serverkey, config_.curve_server_key);
      socket.set(zmq::sockopt::curve_publickey, curve_public_key(config_.curve_secret_key));
      socket.set(zmq::sockopt::curve_secretkey, config_.curve_secret_key);
    }
    socket.connect(endpoint);
    session.next_hello = session.last_heard = session.next_heartbeat = now0;
    session.next_miss_check = now0 + session.heartbeat_interval;
  }
  for (std::uint32_t i = 0; i < config_.slots; ++i) provers_.emplace_back([this] { prover_main(); });
  if (config_.prefetch > 0) preparer_ = std::thread([this] { prepare_main(); });
  for (std::uint32_t i = 0; i < config_.witgen_workers; ++i) witgen_threads_.emplace_back([this] { witgen_main(); });

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  const int signal_fd = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);

  std::string endpoints;
  for (const auto& endpoint : config_.coordinators) endpoints += (endpoints.empty() ? "" : ", ") + endpoint;
  ZKLOG(kInfo) << "worker " << config_.worker_id << " (" << prover_->device().name << ", " << config_.slots
               << " slots) connecting to " << endpoints;
  Clock::time_point drain_deadline{};
  std::vector<zmq::pollitem_t> items;
  for (;;) {
    const auto now = Clock::now();
    bool sampled = false;
    for (Session& session : sessions_) {
      if (now >= session.next_miss_check) {
        // The coordinator heartbeats every interval: silence past 1.5
        // intervals is a miss, counted once per interval while it lasts.
        if (session.welcomed && now - session.last_heard > session.heartbeat_interval * 3 / 2)
          metrics_->coordinator_heartbeat_misses().Increment();
        if (!sampled) sample_metrics();
        sampled = true;
        session.next_miss_check = now + session.heartbeat_interval;
      }
      if (session.welcomed) {
        session.waiting_for_welcome = false;
      } else if (!session.waiting_for_welcome) {
        session.waiting_for_welcome = true;
        session.waiting_since = now;
        session.next_unanswered_warning = now + config_.unanswered_warning;
      } else if (now >= session.next_unanswered_warning) {
        warn_unanswered(session, now);
        session.next_unanswered_warning = now + config_.unanswered_repeat;
      }
      if (!session.welcomed && now >= session.next_hello) {
        send(session, hello_bytes());
        session.next_hello = now + std::chrono::milliseconds(1000);
      }
      if (session.welcomed && now - session.last_heard > session.dead_after) {
        ZKLOG(kWarning) << "coordinator " << session.coordinator_id << " at " << session.endpoint
                        << " silent for more than " << session.dead_after.count()
                        << " ms; saying hello again (its credits go to the other coordinators meanwhile)";
        end_session(session, now);
        continue;
      }
      if (session.welcomed && now >= session.next_heartbeat) {
        send(session, heartbeat_bytes(session));
        session.next_heartbeat = now + session.heartbeat_interval;
      }
    }
    balance_credits(now);
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
    items.clear();
    items.push_back({nullptr, finished_.fd(), ZMQ_POLLIN, 0});
    items.push_back({nullptr, signal_fd, ZMQ_POLLIN, 0});
    for (Session& session : sessions_) items.push_back({session.socket->handle(), 0, ZMQ_POLLIN, 0});
    zmq::poll(items.data(), items.size(), std::chrono::milliseconds(50));
    if (items[1].revents & ZMQ_POLLIN) {
      signalfd_siginfo info;
      while (::read(signal_fd, &info, sizeof info) == sizeof info) {
      }
      if (!draining_) {
        ZKLOG(kInfo) << "signal received: draining (finishing held tasks, taking no new ones)";
        draining_ = true;
        drain_deadline = Clock::now() + config_.drain_timeout;
        for (Session& session : sessions_)
          send(session, wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
                 auto s = body.initShutdown();
                 s.setReason("worker received a termination signal");
                 s.setDrain(true);
               }));
      }
    }
    if (items[0].revents & ZMQ_POLLIN) {
      for (auto& f : finished_.drain()) {
        {
          std::lock_guard<std::mutex> lock(queue_mutex_);
          in_flight_.erase({f.session, f.task_id});
        }
        // To the coordinator that sent the task. If it died meanwhile and
        // another took the job over, the survivor has sent the partition
        // again under its own task id and ignores this one.
        send(sessions_[f.session], f.bytes);
      }
    }
    for (std::size_t k = 0; k < sessions_.size(); ++k) {
      if (!(items[2 + k].revents & ZMQ_POLLIN)) continue;
      Session& session = sessions_[k];
      for (int n = 0; n < 1000; ++n) {
        zmq::message_t frame;
        try {
          if (!session.socket->recv(frame, zmq::recv_flags::dontwait)) break;
          while (frame.more()) {  // DEALER: one frame per message expected
            zmq::message_t extra;
            (void)session.socket->recv(extra, zmq::recv_flags::none);
            frame.move(extra);
          }
          handle_frame(session, frame);
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
