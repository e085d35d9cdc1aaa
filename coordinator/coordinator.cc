// coordinator.cc -- see coordinator.h.
#include "coordinator/coordinator.h"

#include <nlohmann/json.hpp>

#include <array>
#include <limits>
#include <random>

#include "cluster/log.h"

namespace zkfarm {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

wire::Curve wire_curve(CurveId id) {
  return id == CurveId::kBn254 ? wire::Curve::BN254 : wire::Curve::BLS12381;
}

// Errors that are the input's fault: retrying elsewhere cannot help.
bool is_input_error(wire::ErrorCode code) {
  switch (code) {
    case wire::ErrorCode::BAD_WITNESS:
    case wire::ErrorCode::WITNESS_LENGTH:
    case wire::ErrorCode::UNSATISFIED:
    case wire::ErrorCode::WRONG_CURVE:
      return true;
    default:
      return false;
  }
}

template <class Build>
std::string envelope_bytes(Build&& build) {
  capnp::MallocMessageBuilder message;
  auto envelope = message.initRoot<wire::Envelope>();
  envelope.setProtocolVersion(wire::PROTOCOL_VERSION);
  build(envelope.getBody());
  return wire::encode(message);
}

// zkfarm_build_info's version label.
constexpr std::string_view kCoordinatorVersion = "0.1";

std::string printable(const std::string& s) {
  std::string out;
  for (char c : s) out += (c >= 32 && c < 127) ? c : '?';
  return out;
}

std::string hex(const std::string& bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

}  // namespace

template <class F>
auto Coordinator::with_redis(F&& fn) -> decltype(fn()) {
  // Every scheduler-side Redis step is idempotent (job_store.h), so it is
  // retried until Redis is back; meanwhile the network thread keeps the
  // workers' heartbeats going.
  for (std::chrono::milliseconds backoff(100);; backoff = std::min(backoff * 2, std::chrono::milliseconds(2000))) {
    try {
      return fn();
    } catch (const RedisError& e) {
      if (e.kind() != RedisError::Kind::kConnection || stopping_) throw;  // counted where caught
      metrics_->redis_errors().Increment();
      ZKLOG(kWarning) << "Redis unavailable (" << e.what() << "); retrying in " << backoff.count() << " ms";
    }
    std::this_thread::sleep_for(backoff);
  }
}

Coordinator::Coordinator(CoordinatorConfig config)
    : config_(std::move(config)), metrics_(std::make_shared<metrics::CoordinatorMetrics>(kCoordinatorVersion)),
      keys_(config_.key_prefix), store_(config_.artifacts), context_(1),
      redis_(config_.redis_url), jobs_store_(redis_, keys_) {
  if (config_.coordinator_id.empty()) throw std::invalid_argument("coordinator id must not be empty");
  if (config_.artifacts.empty()) throw std::invalid_argument("--artifacts (the artifact store root) is required");
}

Coordinator::~Coordinator() {
  stop();
  if (intake_thread_.joinable()) intake_thread_.join();
  if (verifier_thread_.joinable()) {
    verify_queue_.push(VerifyRequest{});  // wake it
    verifier_thread_.join();
  }
  if (link_) link_->stop();
}

void Coordinator::stop() {
  stopping_ = true;
  events_.push(LinkEvent{LinkEvent::Kind::kDead, "", ""});  // wake run()
}

void Coordinator::run() {
  link_ = std::make_unique<RouterLink>(
      context_,
      RouterLink::Options{config_.listen, config_.heartbeat_interval, config_.dead_after, config_.curve_secret_key,
                          config_.curve_allowlist},
      [this](LinkEvent e) { events_.push(std::move(e)); });
  try {
    link_->start();
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("cannot listen on " + config_.listen + ": " + e.what());
  }
  ZKLOG(kInfo) << "coordinator " << config_.coordinator_id << " listening on " << config_.listen << ", Redis "
               << RedisUrl::parse(config_.redis_url).redacted() << ", prefix " << keys_.prefix()
               << (config_.curve_secret_key.empty()
                       ? ", no CURVE (plaintext)"
                       : ", CURVE with " + std::to_string(config_.curve_allowlist.size()) + " allowed worker keys");
  intake_thread_ = std::thread([this] { intake_main(); });
  verifier_thread_ = std::thread([this] { verifier_main(); });
  auto next_tick = Clock::now();
  while (!stopping_) {
    events_.wait(std::chrono::duration_cast<std::chrono::milliseconds>(next_tick - Clock::now()));
    for (auto& event : events_.drain()) {
      if (stopping_) break;
      try {
        if (auto* link = std::get_if<LinkEvent>(&event)) {
          if (!link->peer.empty()) on_link(*link);
        } else if (auto* prepared = std::get_if<PreparedJob>(&event)) {
          on_prepared(std::move(*prepared));
        } else {
          on_verified(std::get<VerifyDone>(event));
        }
      } catch (const kj::Exception& e) {
        ZKLOG(kWarning) << "dropped a message that failed to read: " << e.getDescription().cStr();
      } catch (const RedisError& e) {
        if (stopping_) break;
        metrics_->redis_errors().Increment();
        ZKLOG(kError) << "Redis error while handling an event: " << e.what();
      }
    }
    if (Clock::now() >= next_tick) {
      try {
        tick();
      } catch (const RedisError& e) {
        metrics_->redis_errors().Increment();
        ZKLOG(kError) << "Redis error in periodic work: " << e.what();
      }
      update_gauges();
      next_tick = Clock::now() + std::chrono::milliseconds(100);
    }
    dispatch();
  }
  ZKLOG(kInfo) << "coordinator stopping; " << jobs_.size()
               << " running jobs stay in the processing list and resume on restart";
}

// ---------------------------------------------------------------------------
// Intake thread

void Coordinator::intake_main() {
  RedisClient redis(config_.redis_url);
  JobStore store(redis, keys_);
  bool recovered = false;
  std::chrono::milliseconds backoff(100);
  // Leases (--takeover-after-ms): renewed every third of their length; a
  // renewal that finds the lease gone means we were silent long enough for
  // another coordinator to take our jobs, so we stop rather than run them
  // twice.
  bool first_lease = true;
  auto next_lease = Clock::now();
  auto next_depth_sample = Clock::now();
  while (!stopping_) {
    try {
      if (Clock::now() >= next_depth_sample) {
        sample_queue_depth(redis);
        next_depth_sample = Clock::now() + config_.intake_poll;
      }
      if (config_.takeover_after.count() > 0 && Clock::now() >= next_lease) {
        if (!store.renew_lease(config_.coordinator_id, config_.takeover_after, first_lease)) {
          ZKLOG(kError) << "lease lost (silent for more than " << config_.takeover_after.count()
                        << " ms): another coordinator may own our jobs now; stopping";
          stop();
          break;
        }
        first_lease = false;
        next_lease = Clock::now() + config_.takeover_after / 3;
        for (const auto& dead : store.expired_coordinators(config_.coordinator_id)) {
          const std::size_t moved = store.take_over(dead, config_.coordinator_id);
          if (moved == 0) continue;
          ZKLOG(kWarning) << "took over " << moved << " jobs of coordinator " << dead << " (lease expired)";
          recovered = false;  // resume them below, keeping proved partitions
        }
      }
      if (!recovered) {
        // Everything in our processing list is ours: jobs taken before a
        // crash (or before a lost reply). Already-running ones are deduped
        // by the scheduler.
        auto items = store.processing(config_.coordinator_id);
        if (!items.empty()) ZKLOG(kInfo) << "recovering " << items.size() << " jobs from the processing list";
        for (const auto& raw : items) handle_intake_raw(redis, store, raw);
        recovered = true;
      }
      if (active_jobs_.load() >= config_.max_active_jobs) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      auto raw = store.take_next(config_.coordinator_id);
      if (!raw) raw = store.wait_critical(config_.coordinator_id, config_.intake_poll);
      if (raw) {
        handle_intake_raw(redis, store, *raw);
        next_depth_sample = Clock::now();  // the queue just changed
      }
      backoff = std::chrono::milliseconds(100);
    } catch (const RedisError& e) {
      if (stopping_) break;
      metrics_->redis_errors().Increment();
      ZKLOG(kWarning) << "intake: " << e.what() << "; retrying in " << backoff.count() << " ms";
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
      recovered = false;  // a lost LMOVE reply leaves the job in the processing list
    } catch (const std::exception& e) {
      ZKLOG(kError) << "intake: " << e.what();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

void Coordinator::handle_intake_raw(RedisClient& redis, JobStore& store, const std::string& raw) {
  const std::string& me = config_.coordinator_id;
  // Labels for the job counters; stay "none"/"unknown" until the job parses.
  std::string spec_circuit, spec_priority = "unknown";
  auto fail = [&](const std::string& id, const std::string& code, const std::string& message) {
    ZKLOG(kWarning) << "job " << id << " failed at intake: " << message;
    JobStore::Finish f;
    f.state = kStateFailed;
    f.error_code = code;
    f.error = message;
    f.raw = raw;
    f.owner = me;
    f.ttl_seconds = config_.terminal_ttl_seconds;
    store.finish(id, f);
    metrics_->jobs_failed(spec_circuit, spec_priority, code).Increment();
  };
  JobSpec spec;
  try {
    spec = parse_job(raw);
  } catch (const JobError& e) {
    metrics_->jobs_submitted(spec_circuit, spec_priority).Increment();
    auto id = extract_job_id(raw);
    if (!id) {
      ZKLOG(kWarning) << "rejected a submission without a usable id: " << e.what();
      store.reject_unattributable(me, raw, std::string("invalid job: ") + e.what());
      return;
    }
    JobSpec stub;
    stub.id = *id;
    std::string detail;
    auto claim = store.claim(stub, me, &detail);
    if (claim == JobStore::Claim::kNew || claim == JobStore::Claim::kResume)
      fail(*id, "invalidJob", std::string("invalid job: ") + e.what());
    else
      store.reject_unattributable(me, raw, "invalid job with the id of another job: " + std::string(e.what()));
    return;
  }
  spec_circuit = spec.circuit;
  spec_priority = priority_name(spec.priority);
  // Read before claim(), which stamps submitted_at on jobs pushed without it.
  const RedisReply submitted = redis.command({"HGET", keys_.job(spec.id), "submitted_at"});
  std::string detail;
  const auto claim = store.claim(spec, me, &detail);
  const double intake_time = unix_now();
  double submitted_at = intake_time;
  if (submitted.type == RedisReply::Type::kString) {
    try {
      submitted_at = std::stod(submitted.str);
    } catch (const std::exception&) {
      submitted_at = intake_time;  // not a number: treat as pushed without one
    }
  }
  if (claim == JobStore::Claim::kNew) {
    metrics_->jobs_submitted(spec_circuit, spec_priority).Increment();
    if (submitted.type == RedisReply::Type::kString && submitted_at <= intake_time)
      metrics_->job_queue_wait(spec_priority).Observe(intake_time - submitted_at);
  }
  if (claim == JobStore::Claim::kTerminal) {
    ZKLOG(kInfo) << "job " << spec.id << " is already " << detail << "; dropped from the queue";
    store.drop_processing(me, raw);
    return;
  }
  if (claim == JobStore::Claim::kOwnedElsewhere) {
    store.reject_unattributable(me, raw, "duplicate job id " + spec.id + " (running on coordinator " + detail + ")");
    return;
  }
  if (redis.command({"HGET", keys_.job(spec.id), "cancel_requested"}).str == "1") {
    JobStore::Finish f{kStateCancelled, "cancelled", "cancelled", "", raw, me, config_.terminal_ttl_seconds};
    store.finish(spec.id, f);
    metrics_->jobs_failed(spec_circuit, spec_priority, "cancelled").Increment();
    return;
  }
  PreparedJob job;
  job.raw = raw;
  job.spec = spec;
  job.submitted_at = std::min(submitted_at, intake_time);
  std::optional<CircuitInfo> circuit;
  try {
    circuit = load_circuit_info(redis, keys_, spec.circuit);
  } catch (const RedisError&) {
    throw;
  } catch (const std::exception& e) {
    fail(spec.id, "unknownCircuit", e.what());
    return;
  }
  if (!circuit) {
    fail(spec.id, "unknownCircuit",
         "unknown circuit " + spec.circuit + ": register its zkey with `zkfarm circuit add` first");
    return;
  }
  job.circuit = *circuit;
  if (spec.deadline_unix && *spec.deadline_unix < unix_now()) {
    fail(spec.id, "deadlineExceeded", "deadline passed before the job started");
    return;
  }
  for (std::size_t i = 0; i < spec.partitions.size(); ++i) {
    const std::string where = "partition " + std::to_string(i) + " (" + spec.partitions[i].describe() + ")";
    WitnessSummary summary;
    try {
      summary = summarize_witness(fetch_witness(spec.partitions[i], &redis), circuit->num_public);
    } catch (const WitnessUnavailable& e) {
      fail(spec.id, "witnessUnavailable", "partition " + std::to_string(i) + ": " + e.what());
      return;
    } catch (const RedisError&) {
      throw;
    } catch (const std::exception& e) {
      fail(spec.id, "badWitness", where + ": " + e.what());
      return;
    }
    if (summary.curve != circuit->curve) {
      fail(spec.id, "wrongCurve",
           where + ": witness is for " + curve_display_name(summary.curve) + " but circuit " + spec.circuit +
               " is " + curve_display_name(circuit->curve));
      return;
    }
    if (summary.num_values != circuit->num_vars) {
      fail(spec.id, "witnessLength",
           where + ": witness has " + std::to_string(summary.num_values) + " values but the circuit has " +
               std::to_string(circuit->num_vars) + " signals");
      return;
    }
    job.public_inputs.push_back(std::move(summary.public_inputs));
  }
  if (claim == JobStore::Claim::kResume) job.stored_proofs = store.proofs(spec.id);
  ++active_jobs_;
  events_.push(std::move(job));
}

// ---------------------------------------------------------------------------
// Verifier thread

void Coordinator::verifier_main() {
  PartitionVerifier verifier(store_);
  while (!stopping_) {
    if (!verify_queue_.wait(std::chrono::milliseconds(500))) continue;
    std::vector<VerifyRequest> batch;
    for (auto& r : verify_queue_.drain())
      if (!r.job_id.empty()) batch.push_back(std::move(r));
    if (batch.empty()) continue;
    // One verify() call per curve, so zkfarm_verify_duration_seconds{curve}
    // times one curve's work (the verifier batches per circuit anyway).
    std::map<CurveId, std::vector<std::size_t>> by_curve;
    for (std::size_t i = 0; i < batch.size(); ++i) by_curve[batch[i].item.circuit.curve].push_back(i);
    std::vector<PartitionVerifier::Outcome> outcomes(batch.size());
    for (const auto& [curve, indices] : by_curve) {
      std::vector<PartitionVerifier::Item> items;
      for (std::size_t i : indices) items.push_back(batch[i].item);
      std::vector<PartitionVerifier::Outcome> curve_outcomes;
      const auto started = Clock::now();
      try {
        curve_outcomes = verifier.verify(items);
      } catch (const std::exception& e) {
        // The verifying key itself is unusable: nothing can be accepted.
        ZKLOG(kError) << "verification impossible: " << e.what();
        curve_outcomes.assign(items.size(), PartitionVerifier::Outcome{});
        for (auto& o : curve_outcomes) o.reason = std::string("verifier: ") + e.what();
      }
      metrics_->verify_duration(curve_name(curve))
          .Observe(std::chrono::duration<double>(Clock::now() - started).count());
      for (std::size_t k = 0; k < indices.size(); ++k) outcomes[indices[k]] = std::move(curve_outcomes[k]);
    }
    for (std::size_t i = 0; i < batch.size(); ++i)
      events_.push(VerifyDone{std::move(batch[i]), std::move(outcomes[i])});
  }
}

// ---------------------------------------------------------------------------
// Scheduler

void Coordinator::send_reject(const std::string& peer, wire::ErrorCode code, const std::string& message) {
  link_->send(peer, envelope_bytes([&](wire::Envelope::Body::Builder body) {
                auto r = body.initReject();
                r.setCode(code);
                r.setMessage(message);
              }));
}

void Coordinator::on_link(const LinkEvent& e) {
  if (e.kind == LinkEvent::Kind::kDead) {
    on_dead(e.peer);
    return;
  }
  if (e.kind == LinkEvent::Kind::kHeartbeatMissed) {
    if (auto it = sessions_.find(e.peer); it != sessions_.end())
      metrics_->worker_heartbeat_misses(it->second.worker_id).Increment();
    return;
  }
  std::string error;
  auto decoded = wire::decode(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(e.bytes.data()), e.bytes.size()), &error);
  if (!decoded) return;  // the link already logged it
  auto body = decoded->envelope().getBody();
  if (decoded->which() == wire::Envelope::Body::HELLO) {
    on_hello(e.peer, body.getHello(), decoded->version_ok());
    return;
  }
  if (!decoded->version_ok()) {
    ZKLOG(kWarning) << "dropped a " << wire::body_name(decoded->which()) << " of protocol version "
                    << decoded->envelope().getProtocolVersion() << " from " << printable(e.peer);
    return;
  }
  auto it = sessions_.find(e.peer);
  if (it == sessions_.end()) {
    if (decoded->which() != wire::Envelope::Body::REJECT)
      send_reject(e.peer, wire::ErrorCode::UNKNOWN_SESSION, "no session: send Hello first");
    return;
  }
  Session& s = it->second;
  switch (decoded->which()) {
    case wire::Envelope::Body::HEARTBEAT: {
      s.loaded.clear();
      for (auto c : body.getHeartbeat().getLoadedCircuits()) s.loaded.insert(c.cStr());
      if (Clock::now() - s.redis_refreshed > std::chrono::seconds(2)) refresh_worker_record(s, "alive");
      break;
    }
    case wire::Envelope::Body::CREDIT:
      s.credits = std::min<std::uint32_t>(s.credits + body.getCredit().getCredits(), 1024);
      break;
    case wire::Envelope::Body::RESULT: on_result(e.peer, body.getResult()); break;
    case wire::Envelope::Body::ERROR: on_task_error(e.peer, body.getError()); break;
    case wire::Envelope::Body::SHUTDOWN:
      ZKLOG(kInfo) << "worker " << s.worker_id << " is draining: " << body.getShutdown().getReason().cStr();
      s.draining = true;
      break;
    default:
      ZKLOG(kWarning) << "dropped an unexpected " << wire::body_name(decoded->which()) << " from worker "
                      << s.worker_id;
  }
}

void Coordinator::refresh_worker_record(Session& s, const char* state) {
  s.redis_refreshed = Clock::now();
  const auto ttl = std::to_string(std::max<long>(60, 3 * config_.dead_after.count() / 1000));
  std::string loaded;
  for (const auto& c : s.loaded) loaded += (loaded.empty() ? "" : ",") + c;
  std::vector<std::vector<std::string>> commands = {
      {"HSET", keys_.worker(s.worker_id), "state", state, "host", s.hostname, "device", s.device_name,
       "device_uuid", s.device_uuid, "coordinator", config_.coordinator_id, "last_seen",
       std::to_string(unix_now()), "credits", std::to_string(s.credits), "tasks", std::to_string(s.tasks.size()),
       "loaded", loaded, "quarantined", s.quarantined ? "1" : "0"},
      {"EXPIRE", keys_.worker(s.worker_id), ttl},
      {"SADD", keys_.workers(), s.worker_id},
  };
  for (const auto& c : s.loaded) commands.push_back({"SADD", keys_.pce(c), s.worker_id});
  with_redis([&] { return redis_.transaction(commands); });
}

void Coordinator::on_hello(const std::string& peer, wire::Hello::Reader hello, bool envelope_version_ok) {
  if (!envelope_version_ok || hello.getProtocolVersion() != wire::PROTOCOL_VERSION) {
    ZKLOG(kWarning) << "rejected worker " << printable(hello.getWorkerId().cStr()) << ": protocol version "
                    << hello.getProtocolVersion() << ", expected " << wire::PROTOCOL_VERSION;
    send_reject(peer, wire::ErrorCode::PROTOCOL_VERSION,
                "coordinator speaks protocol version " + std::to_string(wire::PROTOCOL_VERSION) + ", worker " +
                    std::to_string(hello.getProtocolVersion()));
    return;
  }
  const std::string worker_id = hello.getWorkerId().cStr();
  if (worker_id.empty() || worker_id.size() > 200) {
    send_reject(peer, wire::ErrorCode::MALFORMED_MESSAGE, "hello without a usable worker id");
    return;
  }
  const bool quarantined =
      with_redis([&] { return redis_.command({"SISMEMBER", keys_.quarantine(), worker_id}).as_integer(); }) == 1;
  metrics_->worker_quarantined(worker_id).Set(quarantined ? 1 : 0);
  if (quarantined) {
    ZKLOG(kWarning) << "rejected quarantined worker " << worker_id;
    send_reject(peer, wire::ErrorCode::DEVICE_FAULT,
                "worker " + worker_id + " is quarantined after repeated faults (SREM " + keys_.quarantine() +
                    " to readmit)");
    return;
  }
  // A new session replaces any older one of the same worker (restart) or
  // the same peer (re-hello after a coordinator restart or silence).
  std::vector<std::string> stale;
  for (const auto& [p, s] : sessions_)
    if (p == peer || s.worker_id == worker_id) stale.push_back(p);
  for (const auto& p : stale) drop_session(p, "replaced by a new hello");
  Session s;
  s.peer = peer;
  s.worker_id = worker_id;
  s.session_id = hello.getSessionId();
  s.hostname = hello.getHostname().cStr();
  s.device_name = hello.getDevice().getName().cStr();
  s.device_uuid = hello.getDevice().getUuid().cStr();
  for (auto c : hello.getCurves()) s.curves.insert(c);
  for (auto c : hello.getLoadedCircuits()) s.loaded.insert(c.cStr());
  s.credits = std::min<std::uint32_t>(hello.getCredits(), 1024);
  auto [it, inserted] = sessions_.emplace(peer, std::move(s));
  link_->track(peer);
  link_->send(peer, envelope_bytes([&](wire::Envelope::Body::Builder body) {
                auto w = body.initWelcome();
                w.setCoordinatorId(config_.coordinator_id);
                w.setHeartbeatIntervalMs(static_cast<std::uint32_t>(config_.heartbeat_interval.count()));
                w.setDeadAfterMs(static_cast<std::uint32_t>(config_.dead_after.count()));
              }));
  metrics_->worker_connected(worker_id).Set(1);
  ZKLOG(kInfo) << "worker " << worker_id << " joined (" << it->second.device_name << ", "
               << it->second.credits << " credits)";
  refresh_worker_record(it->second, "alive");
}

void Coordinator::drop_session(const std::string& peer, const char* why) {
  auto it = sessions_.find(peer);
  if (it == sessions_.end()) return;
  Session& s = it->second;
  // A replaced session is the same worker restarted or saying hello again.
  const std::string requeue_reason = std::string_view(why) == "died" ? "workerDead" : "workerRestarted";
  for (std::uint64_t task_id : s.tasks) {
    auto t = tasks_.find(task_id);
    if (t == tasks_.end()) continue;
    ZKLOG(kInfo) << "task " << task_id << " (job " << t->second.job_id << " partition " << t->second.partition
                 << ") goes back to the queue: worker " << s.worker_id << " " << why;
    const std::string job_id = t->second.job_id;
    const std::uint32_t partition = t->second.partition;
    tasks_.erase(t);
    requeue(job_id, partition, requeue_reason);
  }
  link_->forget(peer);
  const std::string worker_id = s.worker_id;
  metrics_->worker_connected(worker_id).Set(0);
  std::vector<std::vector<std::string>> commands = {{"HSET", keys_.worker(worker_id), "state", "gone"}};
  for (const auto& c : s.loaded) commands.push_back({"SREM", keys_.pce(c), worker_id});
  sessions_.erase(it);
  with_redis([&] { return redis_.transaction(commands); });
}

void Coordinator::on_dead(const std::string& peer) {
  auto it = sessions_.find(peer);
  if (it == sessions_.end()) return;
  ZKLOG(kWarning) << "worker " << it->second.worker_id << " is dead (no heartbeat)";
  metrics_->worker_deaths(it->second.worker_id).Increment();
  drop_session(peer, "died");
}

void Coordinator::requeue(const std::string& job_id, std::uint32_t partition, const std::string& reason) {
  auto j = jobs_.find(job_id);
  if (j == jobs_.end()) return;
  Partition& p = j->second.partitions[partition];
  if (p.phase != Phase::kAssigned) return;
  p.phase = Phase::kPending;
  p.task_id = 0;
  make_pending(j->second, partition);
  metrics_->partitions_requeued(reason).Increment();
}

void Coordinator::make_pending(Job& job, std::uint32_t partition, std::uint64_t rounds_ahead) {
  Partition& p = job.partitions[partition];
  p.pending_since = Clock::now();
  const int priority = static_cast<int>(job.prepared.spec.priority);
  const double deadline = job.prepared.spec.deadline_unix.value_or(std::numeric_limits<double>::infinity());
  p.pending_key = {priority, deadline, current_round_[static_cast<std::size_t>(priority)] + rounds_ahead, job.seq,
                   partition};
  pending_.insert(p.pending_key);
}

void Coordinator::update_gauges() {
  std::array<double, 4> active{}, pending{};
  auto slot = [](Priority priority) {
    const auto index = static_cast<std::size_t>(priority);
    return index < 4 ? index : 3;
  };
  for (const auto& [id, job] : jobs_) ++active[slot(job.prepared.spec.priority)];
  for (const auto& key : pending_) ++pending[slot(static_cast<Priority>(std::get<0>(key)))];
  for (std::size_t i = 0; i < 4; ++i) {
    const std::string name = priority_name(static_cast<Priority>(i));
    metrics_->jobs_active(name).Set(active[i]);
    metrics_->partitions_pending(name).Set(pending[i]);
  }
  metrics_->partitions_in_flight().Set(static_cast<double>(tasks_.size()));
}

void Coordinator::sample_queue_depth(RedisClient& redis) {
  std::vector<std::vector<std::string>> commands;
  for (std::size_t i = 0; i < 4; ++i) commands.push_back({"LLEN", keys_.queue(static_cast<Priority>(i))});
  const RedisReply lengths = redis.transaction(commands);
  const auto& replies = lengths.as_array();
  for (std::size_t i = 0; i < replies.size() && i < 4; ++i)
    metrics_->queue_depth(priority_name(static_cast<Priority>(i))).Set(static_cast<double>(replies[i].as_integer()));
}

void Coordinator::on_prepared(PreparedJob prepared) {
  const std::string id = prepared.spec.id;
  if (jobs_.count(id)) {
    --active_jobs_;  // a recovery pass saw a job we already run
    return;
  }
  Job job;
  job.seq = next_seq_++;
  job.started = unix_now();
  job.partitions.resize(prepared.spec.partitions.size());
  for (const auto& [index, proof] : prepared.stored_proofs) {
    if (index >= job.partitions.size()) continue;
    job.partitions[index].phase = Phase::kProved;
    job.partitions[index].proof_json = proof;
    ++job.proved;
  }
  job.prepared = std::move(prepared);
  const bool resumed = job.proved > 0;
  std::uint64_t rounds_ahead = 0;
  for (std::uint32_t i = 0; i < job.partitions.size(); ++i)
    if (job.partitions[i].phase == Phase::kPending) {
      make_pending(job, i, rounds_ahead++);
      if (resumed) metrics_->partitions_requeued("recovered").Increment();
    }
  ZKLOG(kInfo) << "job " << id << " started: " << job.partitions.size() << " partitions, circuit "
               << job.prepared.spec.circuit.substr(0, 12) << ", priority "
               << priority_name(job.prepared.spec.priority)
               << (job.proved ? ", " + std::to_string(job.proved) + " already proved" : "");
  seq_to_job_[job.seq] = id;
  const bool all = job.proved == job.partitions.size();
  jobs_.emplace(id, std::move(job));
  with_redis([&] { jobs_store_.event(id, event_json(id, "started")); return 0; });
  if (all) complete_job(id);
}

void Coordinator::dispatch() {
  bool any_credit = false;
  for (const auto& [peer, s] : sessions_) any_credit = any_credit || (s.credits > 0 && !s.draining && !s.quarantined);
  if (!any_credit) return;
  for (auto it = pending_.begin(); it != pending_.end();) {
    const auto [priority, deadline, round, seq, partition] = *it;
    auto job_it = jobs_.find(seq_to_job_[seq]);
    if (job_it == jobs_.end()) {
      it = pending_.erase(it);
      continue;
    }
    Job& job = job_it->second;
    Partition& p = job.partitions[partition];
    const wire::Curve curve = wire_curve(job.prepared.circuit.curve);
    const std::string& circuit = job.prepared.spec.circuit;
    Session* best = nullptr;
    bool any_capable_unavoided = false;
    auto score = [&](const Session& s) {
      return std::make_tuple(!p.avoid.count(s.worker_id), s.loaded.count(circuit) > 0, s.credits);
    };
    for (auto& [peer, s] : sessions_) {
      if (s.draining || s.quarantined || !s.curves.count(curve)) continue;
      if (!p.avoid.count(s.worker_id)) any_capable_unavoided = true;
      if (s.credits == 0) continue;
      if (!best || score(s) > score(*best)) best = &s;
    }
    // A worker that failed this partition gets it again only when no other
    // capable worker exists at all (a farm of one must still retry).
    if (!best || (p.avoid.count(best->worker_id) && any_capable_unavoided)) {
      ++it;
      continue;
    }
    const std::uint64_t task_id = next_task_id_++;
    if (p.pending_since != Clock::time_point{})
      metrics_->partition_dispatch_wait(priority_name(job.prepared.spec.priority))
          .Observe(std::chrono::duration<double>(Clock::now() - p.pending_since).count());
    const WitnessRef& witness = job.prepared.spec.partitions[partition];
    link_->send(best->peer, envelope_bytes([&](wire::Envelope::Body::Builder body) {
                  auto t = body.initTask();
                  t.setTaskId(task_id);
                  t.setJobId(job.prepared.spec.id);
                  t.setPartitionIndex(partition);
                  t.setAttempt(p.attempts);
                  t.setCircuitId(circuit);
                  t.setCurve(curve);
                  auto w = t.initWitness();
                  switch (witness.kind) {
                    case WitnessRef::Kind::kFile: w.setFile(witness.location); break;
                    case WitnessRef::Kind::kRedis: w.setRedisKey(witness.location); break;
                    case WitnessRef::Kind::kInline:
                      w.setInline(kj::arrayPtr(witness.inline_bytes.data(), witness.inline_bytes.size()));
                      break;
                  }
                  if (job.prepared.spec.deadline_unix)
                    t.setDeadlineUnixMs(static_cast<std::uint64_t>(*job.prepared.spec.deadline_unix * 1000));
                }));
    --best->credits;
    best->tasks.insert(task_id);
    best->loaded.insert(circuit);  // it will load it: prefer it for the rest of the job
    tasks_[task_id] = Task{job.prepared.spec.id, partition, best->peer, best->worker_id, Clock::now()};
    p.phase = Phase::kAssigned;
    p.task_id = task_id;
    ZKLOG(kDebug) << "task " << task_id << ": job " << job.prepared.spec.id << " partition " << partition
                  << " -> " << best->worker_id;
    auto& current = current_round_[static_cast<std::size_t>(priority)];
    current = std::max(current, round);
    it = pending_.erase(it);
    bool credit_left = false;
    for (const auto& [peer, s] : sessions_) credit_left = credit_left || (s.credits > 0 && !s.draining && !s.quarantined);
    if (!credit_left) return;
  }
}

void Coordinator::on_result(const std::string& peer, wire::Result::Reader result) {
  const std::uint64_t task_id = result.getTaskId();
  auto t = tasks_.find(task_id);
  if (t == tasks_.end() || t->second.peer != peer) {
    ZKLOG(kInfo) << "ignored a late or unknown result for task " << task_id << " (job "
                 << printable(result.getJobId().cStr()) << ")";
    return;
  }
  Task task = t->second;
  tasks_.erase(t);
  Session& s = sessions_.at(peer);
  s.tasks.erase(task_id);
  auto j = jobs_.find(task.job_id);
  if (j == jobs_.end()) return;
  Job& job = j->second;
  Partition& p = job.partitions[task.partition];
  p.phase = Phase::kVerifying;
  metrics_->partitions_proved(job.prepared.spec.circuit).Increment();
  auto tm = result.getTimings();
  json timings = {{"load_circuit", tm.getLoadCircuitSeconds()}, {"fetch_witness", tm.getFetchWitnessSeconds()},
                  {"parse_witness", tm.getParseWitnessSeconds()}, {"witness_check", tm.getWitnessCheckSeconds()},
                  {"spmv", tm.getSpmvSeconds()}, {"ntt", tm.getNttSeconds()}, {"msm", tm.getMsmSeconds()},
                  {"prove", tm.getProveSeconds()}, {"total", tm.getTotalSeconds()}};
  VerifyRequest request;
  request.job_id = task.job_id;
  request.partition = task.partition;
  request.worker_id = s.worker_id;
  request.device_uuid = result.getDeviceUuid().cStr();
  request.timings_json = timings.dump();
  request.attempt = p.attempts;
  request.received = Clock::now();
  request.worker_seconds = std::chrono::duration<double>(request.received - task.sent).count();
  if (p.pending_since != Clock::time_point{})
    request.wait_seconds = std::chrono::duration<double>(task.sent - p.pending_since).count();
  request.item.circuit = job.prepared.circuit;
  auto proof = result.getProof();
  request.item.proof.assign(reinterpret_cast<const char*>(proof.begin()), proof.size());
  request.item.public_inputs = job.prepared.public_inputs[task.partition];
  verify_queue_.push(std::move(request));
}

void Coordinator::on_verified(const VerifyDone& done) {
  const VerifyRequest& r = done.request;
  auto j = jobs_.find(r.job_id);
  if (j == jobs_.end()) return;  // failed or cancelled meanwhile
  Job& job = j->second;
  Partition& p = job.partitions[r.partition];
  if (p.phase != Phase::kVerifying) return;
  if (!done.outcome.valid) {
    ZKLOG(kWarning) << "job " << r.job_id << " partition " << r.partition << ": proof from worker " << r.worker_id
                    << " is invalid: " << done.outcome.reason;
    p.invalid_by.insert(r.worker_id);
    metrics_->partitions_invalid(job.prepared.spec.circuit, r.worker_id).Increment();
    count_fault(r.worker_id, "invalid proof");
    if (p.invalid_by.size() >= 2) {
      // Two different devices agree: the witness, not the devices.
      for (const auto& w : p.invalid_by) {
        if (faults_[w] > 0) --faults_[w];
        with_redis([&] { return redis_.command({"HINCRBY", keys_.worker(w), "faults", "-1"}); });
      }
      fail_job(r.job_id, kStateFailed, "unsatisfied",
               "partition " + std::to_string(r.partition) + ": proofs from " + std::to_string(p.invalid_by.size()) +
                   " different workers failed verification: the witness does not satisfy the circuit");
      return;
    }
    partition_failed(job, r.partition, r.worker_id, "invalidProof", "proof failed verification");
    return;
  }
  json entry = {{"partition", r.partition}, {"proof", json::parse(done.outcome.proof_json)},
                {"public", json::parse(done.outcome.public_json)}, {"worker", r.worker_id},
                {"device_uuid", r.device_uuid}, {"timings", json::parse(r.timings_json)}};
  if (!done.outcome.compressed.empty()) entry["compressed_hex"] = hex(done.outcome.compressed);
  // Where the time went, as the coordinator saw it: queued (pending ->
  // dispatched), at the worker (dispatched -> result), and accepting it
  // (result received -> verified, up to the Redis write that follows).
  entry["coordinator"] = {{"wait_s", r.wait_seconds}, {"worker_s", r.worker_seconds},
                          {"accept_s", std::chrono::duration<double>(Clock::now() - r.received).count()}};
  p.proof_json = entry.dump();
  p.phase = Phase::kProved;
  ++job.proved;
  metrics_->partitions_verified(job.prepared.spec.circuit).Increment();
  json extra = {{"partition", r.partition}, {"worker", r.worker_id}};
  std::string extra_text = extra.dump();
  with_redis([&] {
    jobs_store_.store_proof(r.job_id, r.partition, p.proof_json,
                            event_json(r.job_id, "partition_proved", extra_text.substr(1, extra_text.size() - 2)));
    return 0;
  });
  ZKLOG(kInfo) << "job " << r.job_id << " partition " << r.partition << " verified (" << job.proved << "/"
               << job.partitions.size() << ")";
  if (job.proved == job.partitions.size()) complete_job(r.job_id);
}

void Coordinator::count_fault(const std::string& worker_id, const std::string& why) {
  const std::uint32_t n = ++faults_[worker_id];
  metrics_->worker_faults(worker_id).Increment();
  with_redis([&] { return redis_.command({"HINCRBY", keys_.worker(worker_id), "faults", "1"}); });
  if (n >= config_.quarantine_after) {
    ZKLOG(kError) << "worker " << worker_id << " quarantined after " << n << " faults (last: " << why << ")";
    with_redis([&] { return redis_.command({"SADD", keys_.quarantine(), worker_id}); });
    metrics_->worker_quarantined(worker_id).Set(1);
    for (auto& [peer, s] : sessions_)
      if (s.worker_id == worker_id) s.quarantined = true;
  }
}

void Coordinator::partition_failed(Job& job, std::uint32_t partition, const std::string& worker_id,
                                   const std::string& code, const std::string& message) {
  Partition& p = job.partitions[partition];
  ++p.attempts;
  p.avoid.insert(worker_id);
  const std::string id = job.prepared.spec.id;
  with_redis([&] { return redis_.command({"HINCRBY", keys_.job(id), "attempts", "1"}); });
  if (p.attempts >= config_.max_attempts) {
    // Refund faults for invalid proofs: with every attempt invalid we cannot
    // tell a bad witness from bad devices.
    for (const auto& w : p.invalid_by) {
      if (faults_[w] > 0) --faults_[w];
      with_redis([&] { return redis_.command({"HINCRBY", keys_.worker(w), "faults", "-1"}); });
    }
    fail_job(id, kStateFailed, code,
             "partition " + std::to_string(partition) + " failed " + std::to_string(p.attempts) +
                 " attempts; last error: " + message);
    return;
  }
  p.phase = Phase::kPending;
  p.task_id = 0;
  make_pending(job, partition);
  metrics_->partitions_retried(job.prepared.spec.circuit, code).Increment();
}

void Coordinator::on_task_error(const std::string& peer, wire::TaskError::Reader error) {
  const std::uint64_t task_id = error.getTaskId();
  auto t = tasks_.find(task_id);
  if (t == tasks_.end() || t->second.peer != peer) return;
  Task task = t->second;
  tasks_.erase(t);
  sessions_.at(peer).tasks.erase(task_id);
  auto j = jobs_.find(task.job_id);
  if (j == jobs_.end()) return;
  const wire::ErrorCode code = error.getCode();
  const std::string message = error.getMessage().cStr();
  ZKLOG(kWarning) << "job " << task.job_id << " partition " << task.partition << ": worker " << task.worker_id
                  << " reported " << wire::error_code_name(code) << ": " << message;
  if (code == wire::ErrorCode::CANCELLED) {
    requeue(task.job_id, task.partition, "cancelled");
    return;
  }
  if (is_input_error(code)) {
    fail_job(task.job_id, kStateFailed, wire::error_code_name(code),
             "partition " + std::to_string(task.partition) + ": " + message);
    return;
  }
  j->second.partitions[task.partition].phase = Phase::kAssigned;
  partition_failed(j->second, task.partition, task.worker_id, wire::error_code_name(code), message);
}

void Coordinator::release_tasks(Job& job) {
  const std::string& id = job.prepared.spec.id;
  for (std::uint32_t i = 0; i < job.partitions.size(); ++i) {
    Partition& p = job.partitions[i];
    if (p.phase == Phase::kPending) pending_.erase(p.pending_key);
    if (p.phase != Phase::kAssigned) continue;
    auto t = tasks_.find(p.task_id);
    if (t == tasks_.end()) continue;
    const std::uint64_t task_id = p.task_id;
    link_->send(t->second.peer, envelope_bytes([&](wire::Envelope::Body::Builder body) {
                  auto c = body.initCancel();
                  c.setTaskId(task_id);
                  c.setJobId(id);
                }));
    if (auto s = sessions_.find(t->second.peer); s != sessions_.end()) s->second.tasks.erase(task_id);
    tasks_.erase(t);
  }
  seq_to_job_.erase(job.seq);
}

void Coordinator::fail_job(const std::string& job_id, const std::string& state, const std::string& code,
                           const std::string& message) {
  auto j = jobs_.find(job_id);
  if (j == jobs_.end()) return;
  release_tasks(j->second);
  ZKLOG(kWarning) << "job " << job_id << " " << state << ": " << message;
  metrics_->jobs_failed(j->second.prepared.spec.circuit, priority_name(j->second.prepared.spec.priority), code)
      .Increment();
  JobStore::Finish f{state, code, message, "", j->second.prepared.raw, config_.coordinator_id,
                     config_.terminal_ttl_seconds};
  with_redis([&] { return jobs_store_.finish(job_id, f); });
  jobs_.erase(j);
  --active_jobs_;
}

void Coordinator::complete_job(const std::string& job_id) {
  auto j = jobs_.find(job_id);
  if (j == jobs_.end()) return;
  Job& job = j->second;
  json result = {{"id", job_id}, {"circuit", job.prepared.spec.circuit},
                 {"curve", curve_name(job.prepared.circuit.curve)}, {"state", kStateDone},
                 {"seconds", unix_now() - job.started}};
  json partitions = json::array();
  std::string compressed;
  for (const auto& p : job.partitions) {
    json entry = json::parse(p.proof_json);
    if (entry.contains("compressed_hex")) compressed += entry["compressed_hex"].get<std::string>();
    partitions.push_back(std::move(entry));
  }
  result["partitions"] = std::move(partitions);
  if (job.prepared.circuit.curve == CurveId::kBls12381) result["proofs_hex"] = compressed;
  release_tasks(job);
  JobStore::Finish f{kStateDone, "", "", result.dump(), job.prepared.raw, config_.coordinator_id,
                     config_.terminal_ttl_seconds};
  with_redis([&] { return jobs_store_.finish(job_id, f); });
  ZKLOG(kInfo) << "job " << job_id << " done: " << job.partitions.size() << " partitions verified";
  const std::string priority = priority_name(job.prepared.spec.priority);
  metrics_->jobs_completed(job.prepared.spec.circuit, priority).Increment();
  metrics_->job_latency(job.prepared.spec.circuit, priority)
      .Observe(std::max(0.0, unix_now() - job.prepared.submitted_at));
  jobs_.erase(j);
  --active_jobs_;
}

void Coordinator::tick() {
  // Cancels addressed to us.
  RedisReply cancels = with_redis(
      [&] { return redis_.command({"SPOP", keys_.cancels(config_.coordinator_id), "64"}); });
  for (const auto& c : cancels.as_array()) {
    const std::string id = c.as_string();
    if (jobs_.count(id)) fail_job(id, kStateCancelled, "cancelled", "cancelled by request");
  }
  // Deadlines and stalled tasks.
  const double now = unix_now();
  std::vector<std::string> expired;
  for (const auto& [id, job] : jobs_)
    if (job.prepared.spec.deadline_unix && *job.prepared.spec.deadline_unix < now) expired.push_back(id);
  for (const auto& id : expired) fail_job(id, kStateFailed, "deadlineExceeded", "deadline exceeded");
  if (config_.task_timeout.count() > 0) {
    std::vector<std::uint64_t> stalled;
    for (const auto& [task_id, t] : tasks_)
      if (Clock::now() - t.sent > config_.task_timeout) stalled.push_back(task_id);
    for (auto task_id : stalled) {
      auto t = tasks_.find(task_id);
      if (t == tasks_.end()) continue;
      Task task = t->second;
      tasks_.erase(t);
      if (auto s = sessions_.find(task.peer); s != sessions_.end()) s->second.tasks.erase(task_id);
      link_->send(task.peer, envelope_bytes([&](wire::Envelope::Body::Builder body) {
                    auto c = body.initCancel();
                    c.setTaskId(task_id);
                    c.setJobId(task.job_id);
                  }));
      count_fault(task.worker_id, "task timed out");
      auto j = jobs_.find(task.job_id);
      if (j != jobs_.end())
        partition_failed(j->second, task.partition, task.worker_id, "taskTimeout",
                         "worker " + task.worker_id + " did not finish within the task timeout");
    }
  }
}

}  // namespace zkfarm
