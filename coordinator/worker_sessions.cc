// worker_sessions.cc -- see worker_sessions.h.
#include "coordinator/worker_sessions.h"

#include <algorithm>
#include <limits>

#include "cluster/log.h"
#include "coordinator/prepared_job.h"
#include "coordinator/redis_retry.h"
#include "cluster/job_store.h"
#include "schema/job.h"

namespace zkfarm {

using Clock = std::chrono::steady_clock;

StageSeconds stage_seconds_from_wire(wire::StageTimings::Reader t) {
  return StageSeconds{t.getLoadCircuitSeconds(), t.getFetchWitnessSeconds(), t.getParseWitnessSeconds(),
                      t.getWitnessCheckSeconds(), t.getSpmvSeconds(),         t.getNttSeconds(),
                      t.getMsmSeconds(),          t.getProveSeconds(),        t.getTotalSeconds()};
}

WorkerSessions::WorkerSessions(const CoordinatorConfig& config, RouterLink& link, RedisClient& redis,
                               Scheduler& scheduler, metrics::CoordinatorMetrics& metrics,
                               const std::atomic<bool>& stopping,
                               std::function<void(const Session&, wire::Result::Reader)> on_result)
    : config_(config), keys_(config.key_prefix), link_(link), redis_(redis), scheduler_(scheduler),
      metrics_(metrics), stopping_(stopping), on_result_(std::move(on_result)),
      warnings_(coordinator::kPeerWarningWindow, coordinator::kPeerWarningBurst, coordinator::kPeerWarningSources) {}

bool WorkerSessions::warn_allowed(const std::string& peer) { return warnings_.allow(peer, Clock::now()); }

void WorkerSessions::flush_warnings() {
  warnings_.flush(Clock::now(), [](const std::string& peer, std::size_t held_back, std::chrono::milliseconds window) {
    ZKLOG(kWarning) << "suppressed repeated warnings (" << held_back << " more from peer " << peer_text(peer)
                    << " in the last " << window.count() / 1000 << " s)";
  });
}

template <class F>
auto WorkerSessions::with_redis(F&& fn) -> decltype(fn()) {
  return retry_redis(std::forward<F>(fn), stopping_, metrics_);
}

const WorkerSessions::Session* WorkerSessions::find(const std::string& peer) const {
  auto it = sessions_.find(peer);
  return it == sessions_.end() ? nullptr : &it->second;
}

void WorkerSessions::send_reject(const std::string& peer, wire::ErrorCode code, const std::string& message) {
  link_.send(peer, wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
               auto r = body.initReject();
               r.setCode(code);
               r.setMessage(message);
             }));
}

void WorkerSessions::send_task(const TaskOrder& order) {
  const ScheduledJob& job = *order.job;
  TaskSpec task;
  task.task_id = order.task_id;
  task.job_id = job.id();
  task.partition = order.partition;
  task.attempt = order.attempt;
  task.circuit_id = job.spec->circuit;
  task.curve = job.curve;
  task.witness = job.spec->partitions[order.partition];
  task.deadline_unix = job.spec->deadline_unix;
  task.witgen_sha256 = job.prepared->circuit.witgen_sha256;
  task.witgen_dat_sha256 = job.prepared->circuit.witgen_dat_sha256;
  task.tenant = job.prepared->tenant;
  link_.send(order.peer, encode_task(task));
}

void WorkerSessions::send_cancel(const std::string& peer, std::uint64_t task_id, const std::string& job_id) {
  link_.send(peer, wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
               auto c = body.initCancel();
               c.setTaskId(task_id);
               c.setJobId(job_id);
             }));
}

void WorkerSessions::on_link(const LinkEvent& e) {
  if (e.kind == LinkEvent::Kind::kDead) {
    on_dead(e.peer);
    return;
  }
  if (e.kind == LinkEvent::Kind::kHeartbeatMissed) {
    if (auto it = sessions_.find(e.peer); it != sessions_.end())
      metrics_.worker_heartbeat_misses(it->second.worker_id).Increment();
    return;
  }
  std::string error;
  auto decoded = wire::decode(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(e.bytes.data()), e.bytes.size()), &error);
  if (!decoded) return;  // the link already logged it
  auto body = decoded->envelope().getBody();
  if (decoded->which() == wire::Envelope::Body::HELLO) {
    on_hello(e.peer, e.curve_key, body.getHello(), decoded->version_ok());
    return;
  }
  if (!decoded->version_ok()) {
    if (warn_allowed(e.peer))
      ZKLOG(kWarning) << "dropped a " << wire::body_name(decoded->which()) << " of protocol version "
                    << decoded->envelope().getProtocolVersion() << " from " << peer_text(e.peer);
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
      const auto heartbeat = body.getHeartbeat();
      scheduler_.set_loaded(e.peer, registered_loaded(s, heartbeat.getLoadedCircuits()));
      std::set<std::uint64_t> witness_pending;
      const auto pending = heartbeat.getWitnessPending();
      for (unsigned i = 0; i < pending.size() && i < coordinator::kMaxWitnessPendingIds; ++i)
        witness_pending.insert(pending[i]);
      scheduler_.set_witness_pending(e.peer, witness_pending);
      const auto now = Clock::now();
      s.busy.sample(now, heartbeat.getBusyTasks() > 0);
      if (now - s.redis_refreshed > coordinator::kWorkerRecordRefresh) records_due_.insert(e.peer);
      break;
    }
    case wire::Envelope::Body::CREDIT: {
      auto credit = body.getCredit();
      if (credit.getWithdraw() > 0) scheduler_.withdraw_credits(e.peer, credit.getWithdraw());
      if (credit.getCredits() > 0) scheduler_.grant_credits(e.peer, credit.getCredits());
      break;
    }
    case wire::Envelope::Body::RESULT: on_result_(s, body.getResult()); break;
    case wire::Envelope::Body::PROGRESS: {
      const auto progress = body.getProgress();
      switch (progress.getStage()) {
        case wire::TaskStage::WITNESS: scheduler_.on_witness_started(e.peer, progress.getTaskId()); break;
        case wire::TaskStage::READY: scheduler_.on_witness_ready(e.peer, progress.getTaskId()); break;
        case wire::TaskStage::PROVING: scheduler_.on_proving(e.peer, progress.getTaskId()); break;
        default: break;  // a stage this build does not know
      }
      break;
    }
    case wire::Envelope::Body::ERROR: {
      auto error_body = body.getError();
      scheduler_.on_task_error(e.peer, error_body.getTaskId(), error_from_wire(error_body.getCode()),
                               error_body.getMessage().cStr());
      break;
    }
    case wire::Envelope::Body::SHUTDOWN:
      ZKLOG_PEER(kInfo, e.peer) << "worker " << peer_text(s.worker_id)
                                << " is draining: " << peer_text(body.getShutdown().getReason().cStr());
      scheduler_.set_draining(e.peer);
      break;
    default:
      if (warn_allowed(e.peer))
        ZKLOG(kWarning) << "dropped an unexpected " << wire::body_name(decoded->which()) << " from worker "
                      << peer_text(s.worker_id);
  }
}

std::string WorkerSessions::record_ttl() const {
  return std::to_string(std::max<long>(coordinator::kWorkerRecordMinTtl.count(),
                                       coordinator::kWorkerRecordTtlDeadAfters * config_.dead_after.count() / 1000));
}

std::set<std::string> WorkerSessions::registered_loaded(Session& s, capnp::List<capnp::Text>::Reader list) {
  std::vector<std::string> reported;
  const std::size_t n = std::min<std::size_t>(list.size(), coordinator::kMaxLoadedCircuits);
  reported.reserve(n);
  for (unsigned i = 0; i < n; ++i) reported.emplace_back(list[i].cStr());
  if (list.size() > coordinator::kMaxLoadedCircuits && warn_allowed(s.peer))
    ZKLOG(kWarning) << "worker " << printable(s.worker_id) << " listed " << list.size()
                    << " resident circuits; only the first " << coordinator::kMaxLoadedCircuits << " are read";
  if (reported == s.loaded_reported) return s.loaded_registered;
  std::set<std::string> registered;
  std::vector<std::string> lookup = {"SMISMEMBER", keys_.circuits()};
  for (const auto& id : reported)
    if (is_valid_circuit_id(id)) lookup.push_back(id);
  if (lookup.size() > 2) {
    const RedisReply found = with_redis([&] { return redis_.command(lookup); });
    const auto& flags = found.as_array();
    for (std::size_t i = 0; i + 2 < lookup.size() && i < flags.size(); ++i)
      if (flags[i].as_integer() == 1) registered.insert(lookup[i + 2]);
  }
  s.loaded_reported = std::move(reported);
  s.loaded_registered = registered;
  return registered;
}

std::vector<std::vector<std::string>> WorkerSessions::record_commands(Session& s, const char* state) {
  s.redis_refreshed = Clock::now();
  const std::string ttl = record_ttl();
  const auto view = scheduler_.worker(s.peer);
  std::string loaded;
  if (view)
    for (const auto& c : *view->loaded) loaded += (loaded.empty() ? "" : ",") + c;
  const std::string key = keys_.worker(s.worker_id);
  std::vector<std::vector<std::string>> commands = {
      {"MULTI"},
      {"HSET", key, WorkerRecord::kState, state, WorkerRecord::kHost, s.hostname,
       WorkerRecord::kDevice, s.device_name, WorkerRecord::kDeviceUuid, s.device_uuid, WorkerRecord::kCoordinator,
       config_.coordinator_id, WorkerRecord::kLastSeen, std::to_string(unix_now()), WorkerRecord::kCredits,
       std::to_string(view ? view->credits : 0), WorkerRecord::kTasks, std::to_string(view ? view->tasks : 0),
       WorkerRecord::kLoaded, loaded, WorkerRecord::kQuarantined, view && view->quarantined ? "1" : "0",
       WorkerRecord::kDeviceOrdinal, std::to_string(s.device_ordinal), WorkerRecord::kBusy,
       std::to_string(s.busy.fraction())},
      {"EXPIRE", key, ttl},
      {"SADD", keys_.workers(), s.worker_id},
  };
  // The scheduler's loaded set holds registered ids only (registered_loaded
  // and dispatch's own): each <prefix>pce set expires like the record, so a
  // worker that stops reporting a circuit leaves nothing behind for good.
  if (view)
    for (const auto& c : *view->loaded) {
      commands.push_back({"SADD", keys_.pce(c), s.worker_id});
      commands.push_back({"EXPIRE", keys_.pce(c), ttl});
    }
  commands.push_back({"EXEC"});
  return commands;
}

void WorkerSessions::refresh_record(Session& s, const char* state) {
  records_due_.erase(s.peer);
  auto commands = record_commands(s, state);
  with_redis([&] { return redis_.pipeline(commands); });
}

void WorkerSessions::flush_records() {
  if (records_due_.empty()) return;
  std::vector<std::vector<std::string>> commands;
  for (const auto& peer : records_due_) {
    auto it = sessions_.find(peer);
    if (it == sessions_.end()) continue;
    auto one = record_commands(it->second, "alive");
    commands.insert(commands.end(), std::make_move_iterator(one.begin()), std::make_move_iterator(one.end()));
  }
  with_redis([&] { return redis_.pipeline(commands); });
  records_due_.clear();
}

std::string WorkerSessions::identity_refusal(const std::string& peer, const std::string& curve_key,
                                             const std::string& worker_id, std::uint64_t session_id) {
  if (!config_.curve_secret_key.empty()) {
    if (curve_key.empty()) return "no CURVE key on the connection";
    // A key is one worker: the ids the allowlist lists for it, else the one
    // it first said hello as (so one admitted key cannot pose as several
    // workers to spread its faults or to confirm its own claims).
    const auto listed = config_.curve_key_ids.find(curve_key);
    const bool ids_listed = listed != config_.curve_key_ids.end() && !listed->second.empty();
    if (ids_listed && !listed->second.count(worker_id))
      return "worker id " + worker_id + " is not among the ids the CURVE allowlist lists for this key";
    // First hello wins, across coordinators and restarts: both bindings are
    // read first (a refused hello binds nothing), then set with HSETNX and
    // read back, so whichever hello won a race decides (hellos are rare: no
    // cache, so an HDEL by the operator takes effect at once).
    auto refusal = [&](const std::string& key_of_id, const std::string& id_of_key) -> std::string {
      if (!key_of_id.empty() && key_of_id != curve_key)
        return "worker id " + worker_id + " is bound to another CURVE key (HDEL " + keys_.worker_keys() + " " +
               worker_id + " to rebind it)";
      if (!ids_listed && !id_of_key.empty() && id_of_key != worker_id)
        return "this CURVE key says hello as worker " + id_of_key + " (one worker id per key unless the "
               "allowlist lists its ids with ids=; HDEL " + keys_.key_workers() + " <key> to rebind it)";
      return "";
    };
    auto read_bindings = [&] {
      return std::pair{redis_.command({"HGET", keys_.worker_keys(), worker_id}).str,
                       redis_.command({"HGET", keys_.key_workers(), curve_key}).str};
    };
    return with_redis([&] {
      const auto [key_of_id, id_of_key] = read_bindings();
      if (std::string why = refusal(key_of_id, id_of_key); !why.empty()) return why;
      redis_.command({"HSETNX", keys_.worker_keys(), worker_id, curve_key});
      if (!ids_listed) redis_.command({"HSETNX", keys_.key_workers(), curve_key, worker_id});
      const auto [won_key, won_id] = read_bindings();
      return refusal(won_key, won_id);
    });
  }
  for (const auto& [p, s] : sessions_)
    if (p != peer && s.worker_id == worker_id && s.session_id != session_id)
      return "worker id " + worker_id + " already has a live session (a restarted worker is admitted once the old "
             "session is dead, after " + std::to_string(config_.dead_after.count()) + " ms of silence)";
  return "";
}

void WorkerSessions::on_hello(const std::string& peer, const std::string& curve_key, wire::Hello::Reader hello,
                              bool envelope_version_ok) {
  if (!envelope_version_ok || hello.getProtocolVersion() != wire::PROTOCOL_VERSION) {
    if (warn_allowed(peer))
      ZKLOG(kWarning) << "rejected worker " << peer_text(hello.getWorkerId().cStr()) << ": protocol version "
                    << hello.getProtocolVersion() << ", expected " << wire::PROTOCOL_VERSION;
    send_reject(peer, wire::ErrorCode::PROTOCOL_VERSION,
                "coordinator speaks protocol version " + std::to_string(wire::PROTOCOL_VERSION) + ", worker " +
                    std::to_string(hello.getProtocolVersion()));
    return;
  }
  const std::string worker_id = hello.getWorkerId().cStr();
  if (worker_id.empty() || worker_id.size() > coordinator::kMaxWorkerIdBytes) {
    send_reject(peer, wire::ErrorCode::MALFORMED_MESSAGE, "hello without a usable worker id");
    return;
  }
  auto welcome = [&] {
    link_.send(peer, wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
                 auto w = body.initWelcome();
                 w.setCoordinatorId(config_.coordinator_id);
                 w.setHeartbeatIntervalMs(static_cast<std::uint32_t>(config_.heartbeat_interval.count()));
                 w.setDeadAfterMs(static_cast<std::uint32_t>(config_.dead_after.count()));
               }));
  };
  // A repeated Hello of a live session (the same peer, worker id, session
  // id and key: a worker that found us silent, or one saying hello in a
  // loop) registers nothing again: no Redis, no session replaced, its tasks
  // kept with their attempts and clocks. It is welcomed again, and its
  // credits start over from the Hello, as the worker's own budget does.
  if (auto live = sessions_.find(peer); live != sessions_.end() && live->second.worker_id == worker_id &&
                                        live->second.session_id == hello.getSessionId() &&
                                        live->second.curve_key == curve_key) {
    scheduler_.withdraw_credits(peer, std::numeric_limits<std::uint32_t>::max());
    if (hello.getCredits() > 0) scheduler_.grant_credits(peer, hello.getCredits());
    welcome();
    if (warn_allowed(peer))
      ZKLOG(kInfo) << "worker " << worker_id << " said hello again in its live session: welcomed again, "
                   << "nothing else changes";
    return;
  }
  if (const std::string refusal = identity_refusal(peer, curve_key, worker_id, hello.getSessionId());
      !refusal.empty()) {
    if (warn_allowed(peer))
      ZKLOG(kWarning) << "refused a hello as worker " << peer_text(worker_id) << " from peer " << peer_text(peer)
                      << (curve_key.empty() ? "" : " (CURVE key " + curve_key + ")") << ": " << refusal;
    send_reject(peer, wire::ErrorCode::WORKER_ID_TAKEN, refusal);
    return;
  }
  // The worker id, or under CURVE its key (any id of a quarantined key).
  const std::string key_member = curve_key.empty() ? "" : KeyLayout::quarantined_key(curve_key);
  const bool quarantined = with_redis([&] {
    if (redis_.command({"SISMEMBER", keys_.quarantine(), worker_id}).as_integer() == 1) return true;
    return !key_member.empty() &&
           redis_.command({"SISMEMBER", keys_.quarantine(), key_member}).as_integer() == 1;
  });
  metrics_.worker_quarantined(worker_id).Set(quarantined ? 1 : 0);
  if (quarantined) {
    if (warn_allowed(peer)) ZKLOG(kWarning) << "rejected quarantined worker " << peer_text(worker_id);
    send_reject(peer, wire::ErrorCode::DEVICE_FAULT,
                "worker " + worker_id + " is quarantined after repeated faults (SREM " + keys_.quarantine() + " " +
                    worker_id + (key_member.empty() ? "" : " " + key_member) + " to readmit)");
    return;
  }
  // A new session replaces any older one of the same worker (restart, same
  // key or same process: identity_refusal passed) or the same peer
  // (re-hello after a coordinator restart or silence). The same process
  // saying hello again (same worker id, session id and key) keeps the tasks
  // it holds, with their clocks: a re-sent Hello requeues nothing.
  std::vector<std::string> stale;
  std::string carry_from;
  for (const auto& [p, s] : sessions_) {
    if (p != peer && s.worker_id != worker_id) continue;
    stale.push_back(p);
    if (s.worker_id == worker_id && s.session_id == hello.getSessionId() && s.curve_key == curve_key) carry_from = p;
  }
  for (const auto& p : stale) drop(p, "replaced by a new hello", p == carry_from);
  Session s;
  s.peer = peer;
  s.worker_id = worker_id;
  s.session_id = hello.getSessionId();
  s.hostname = hello.getHostname().cStr();
  s.device_name = hello.getDevice().getName().cStr();
  s.device_uuid = hello.getDevice().getUuid().cStr();
  s.device_ordinal = hello.getDevice().getOrdinal();
  s.curve_key = curve_key;
  WorkerOffer offer;
  offer.worker_id = worker_id;
  for (auto c : hello.getCurves())
    if (auto curve = wire::curve_from_wire(c)) offer.curves.insert(*curve);
  offer.loaded = registered_loaded(s, hello.getLoadedCircuits());
  offer.credits = hello.getCredits();
  offer.max_tasks = hello.getMaxTasks();
  offer.curve_key = curve_key;
  scheduler_.add_worker(peer, std::move(offer), carry_from);
  auto [it, inserted] = sessions_.emplace(peer, std::move(s));
  link_.track(peer);
  welcome();
  metrics_.worker_connected(worker_id).Set(1);
  ZKLOG_PEER(kInfo, peer) << "worker " << peer_text(worker_id) << " joined (" << peer_text(it->second.device_name) << ", "
               << scheduler_.worker(peer)->credits << " credits)";
  refresh_record(it->second, "alive");
}

void WorkerSessions::drop(const std::string& peer, const char* why, bool tasks_carried) {
  auto it = sessions_.find(peer);
  if (it == sessions_.end()) return;
  // A replaced session is the same worker restarted or saying hello again.
  const std::string_view requeue_reason = std::string_view(why) == "died" ? "workerDead" : "workerRestarted";
  std::set<std::string> loaded;
  if (auto view = scheduler_.worker(peer)) loaded = *view->loaded;
  if (!tasks_carried) scheduler_.remove_worker(peer, requeue_reason);
  link_.forget(peer);
  const std::string worker_id = it->second.worker_id;
  metrics_.worker_connected(worker_id).Set(0);
  // The record keeps its expiry (one that had expired is made again, with
  // one), so "gone" records do not pile up.
  std::vector<std::vector<std::string>> commands = {{"HSET", keys_.worker(worker_id), WorkerRecord::kState, "gone"},
                                                    {"EXPIRE", keys_.worker(worker_id), record_ttl()}};
  for (const auto& c : loaded) commands.push_back({"SREM", keys_.pce(c), worker_id});
  records_due_.erase(peer);
  sessions_.erase(it);
  with_redis([&] { return redis_.transaction(commands); });
}

void WorkerSessions::on_dead(const std::string& peer) {
  auto it = sessions_.find(peer);
  if (it == sessions_.end()) return;
  ZKLOG_PEER(kWarning, peer) << "worker " << peer_text(it->second.worker_id) << " is dead (no heartbeat)";
  metrics_.worker_deaths(it->second.worker_id).Increment();
  drop(peer, "died");
}

}  // namespace zkfarm
