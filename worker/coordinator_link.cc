// coordinator_link.cc -- see coordinator_link.h.
#include "worker/coordinator_link.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "cluster/curve_keys.h"
#include "cluster/log.h"
#include "schema/messages.h"
#include "schema/wire_model.h"

namespace zkfarm {

using Clock = std::chrono::steady_clock;

namespace {

// Hello again this often while a coordinator has not welcomed us.
constexpr std::chrono::milliseconds kHelloRepeat{1000};
// After a Reject other than "unknown session" (a version mismatch, a
// coordinator shutting down): wait this long before saying hello again.
constexpr std::chrono::milliseconds kHelloAfterReject{5000};
// The poll's longest wait: the period of the loop's timers (hello,
// heartbeats, credit withdrawal) when nothing arrives.
constexpr std::chrono::milliseconds kPollTimeout{50};
// Messages read from one socket per poll, so one busy coordinator cannot
// starve the others.
constexpr int kReadBatch = 1000;

// The task a Task message describes, from coordinator `session`.
QueuedTask task_from_wire(wire::Task::Reader t, std::size_t session) {
  QueuedTask task;
  // The one mapping from the wire (schema/wire_model.h); decode() has
  // already refused a witness of a kind this build does not know (then only
  // the ids are kept, for the answer).
  auto spec = zkfarm::task_from_wire(t);
  static_cast<TaskSpec&>(task) = spec ? std::move(*spec) : task_ids_from_wire(t);
  task.session = session;
  task.received = Clock::now();
  return task;
}

}  // namespace

CoordinatorLink::CoordinatorLink(const WorkerConfig& config, std::uint64_t session_id, TaskPipeline& pipeline,
                                 Facts facts, metrics::WorkerMetrics& metrics)
    : config_(config), session_id_(session_id), pipeline_(pipeline), facts_(std::move(facts)), metrics_(metrics),
      context_(1), credits_(config.coordinators.size(), config.task_budget()) {}

CoordinatorLink::~CoordinatorLink() = default;

void CoordinatorLink::warn_unanswered(const Session& session, Clock::time_point now) const {
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

std::string CoordinatorLink::hello_bytes() const {
  const prover::Device& device = facts_.device;
  const auto resident = facts_.resident_circuits();
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
    const auto& curves = facts_.curves;
    auto list = h.initCurves(static_cast<unsigned>(curves.size()));
    for (std::size_t i = 0; i < curves.size(); ++i) list.set(static_cast<unsigned>(i), wire::wire_curve(curves[i]));
    auto loaded = h.initLoadedCircuits(static_cast<unsigned>(resident.size()));
    for (std::size_t i = 0; i < resident.size(); ++i) loaded.set(static_cast<unsigned>(i), resident[i]);
    // Credits follow the Welcome (credits_policy.h): a coordinator that
    // never answers must not hold part of the budget.
    h.setCredits(0);
    h.setSoftwareVersion("zkfarm-worker 0.1");
    h.setMaxTasks(credits_.budget());
  });
}

std::string CoordinatorLink::heartbeat_bytes(Session& session) const {
  const std::size_t busy = pipeline_.held();
  // This session's tasks queued for or in a generator.
  const std::vector<std::uint64_t> witness_pending = pipeline_.witness_pending(session.index);
  const auto resident = facts_.resident_circuits();
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

void CoordinatorLink::send(Session& session, const std::string& bytes) {
  zmq::message_t m(bytes.data(), bytes.size());
  // Never blocks the link's thread: a message the socket cannot queue (its
  // high-water mark reached: a coordinator that stopped reading) is dropped.
  // A dropped Result or TaskError is found again by the coordinator's task
  // timeout; the line says when that is why a partition came back late.
  if (!session.socket->send(m, zmq::send_flags::dontwait))
    ZKLOG_PEER(kWarning, session.endpoint) << "dropped a " << bytes.size() << "-byte message to coordinator "
                                           << session.endpoint << ": its queue is full";
}

void CoordinatorLink::send_progress() {
  using Stage = TaskPipeline::Progress::Stage;
  for (const TaskPipeline::Progress& p : pipeline_.take_progress()) {
    const auto [session, task_id] = p.key;
    if (session >= sessions_.size()) continue;
    const wire::TaskStage stage = p.stage == Stage::kWitness ? wire::TaskStage::WITNESS
                                  : p.stage == Stage::kReady ? wire::TaskStage::READY
                                                             : wire::TaskStage::PROVING;
    send(sessions_[session], wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
           auto progress = body.initProgress();
           progress.setTaskId(task_id);
           progress.setStage(stage);
         }));
  }
}

void CoordinatorLink::end_session(Session& session, Clock::time_point next_hello) {
  session.welcomed = false;
  credits_.ended(session.index);
  session.next_hello = next_hello;
}

void CoordinatorLink::balance_credits(Clock::time_point now) {
  for (const CreditMove& move : credits_.balance(now, pipeline_.held(), draining_)) {
    Session& session = sessions_[move.coordinator];
    if (move.kind == CreditMove::Kind::kWithdraw) {
      ZKLOG(kDebug) << "coordinator " << peer_text(session.coordinator_id) << " left " << move.credits
                    << " credit(s) unused; offering them to another";
      send(session, wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
             auto c = body.initCredit();
             c.setCredits(0);
             c.setWithdraw(move.credits);
           }));
    } else {
      send(session,
           wire::encode_envelope([&](wire::Envelope::Body::Builder body) { body.initCredit().setCredits(move.credits); }));
    }
  }
}

void CoordinatorLink::handle_frame(Session& session, const zmq::message_t& frame) {
  std::string error;
  auto decoded = wire::decode(
      std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(frame.data()), frame.size()), &error);
  if (!decoded) {
    ZKLOG_PEER(kWarning, session.endpoint) << "dropped a malformed message from the coordinator at " << session.endpoint
                                           << ": " << peer_text(error);
    return;
  }
  auto body = decoded->envelope().getBody();
  if (decoded->which() == wire::Envelope::Body::REJECT) {
    // Readable whatever the coordinator's version (Reject is stable).
    auto r = body.getReject();
    ZKLOG_PEER(kWarning, session.endpoint) << "coordinator at " << session.endpoint << " rejected us ("
                                           << wire::error_code_name(r.getCode())
                                           << "): " << peer_text(r.getMessage().cStr());
    end_session(session, Clock::now() + (r.getCode() == wire::ErrorCode::UNKNOWN_SESSION
                                             ? std::chrono::milliseconds(0)
                                             : kHelloAfterReject));
    return;
  }
  if (!decoded->version_ok()) {
    ZKLOG_PEER(kWarning, session.endpoint) << "dropped a " << wire::body_name(decoded->which()) << " of protocol version "
                    << decoded->envelope().getProtocolVersion();
    return;
  }
  session.last_heard = Clock::now();
  switch (decoded->which()) {
    case wire::Envelope::Body::WELCOME: {
      auto w = body.getWelcome();
      session.welcomed = true;
      credits_.welcomed(session.index);
      session.coordinator_id = w.getCoordinatorId().cStr();
      if (w.getHeartbeatIntervalMs() > 0) session.heartbeat_interval = std::chrono::milliseconds(w.getHeartbeatIntervalMs());
      if (w.getDeadAfterMs() > 0) session.dead_after = std::chrono::milliseconds(w.getDeadAfterMs());
      ZKLOG(kInfo) << "welcomed by coordinator " << peer_text(session.coordinator_id) << " at " << session.endpoint;
      break;
    }
    case wire::Envelope::Body::HEARTBEAT: break;
    case wire::Envelope::Body::TASK: {
      QueuedTask task = task_from_wire(body.getTask(), session.index);
      ZKLOG(kInfo) << "task " << task.task_id << " received: job " << peer_text(task.job_id) << " partition "
                   << task.partition << " from coordinator " << peer_text(session.coordinator_id);
      credits_.task_received(session.index, Clock::now());
      pipeline_.submit(std::move(task));
      break;
    }
    case wire::Envelope::Body::CANCEL: {
      const std::uint64_t task_id = body.getCancel().getTaskId();
      if (pipeline_.cancel({session.index, task_id}))
        ZKLOG(kInfo) << "task " << task_id << " cancelled by coordinator " << peer_text(session.coordinator_id);
      break;
    }
    case wire::Envelope::Body::SHUTDOWN:
      ZKLOG(kInfo) << "coordinator " << peer_text(session.coordinator_id)
                   << " asked us to drain: " << peer_text(body.getShutdown().getReason().cStr());
      draining_ = true;
      break;
    default:
      ZKLOG_PEER(kWarning, session.endpoint) << "dropped an unexpected " << wire::body_name(decoded->which());
  }
}

void CoordinatorLink::connect_all(Clock::time_point now) {
  // A stable routing id per process: reconnects keep the same identity.
  char id[32];
  std::snprintf(id, sizeof id, "#%016llx", static_cast<unsigned long long>(session_id_));
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
    // Before connect(), so that no event is missed.
    const std::string monitor_endpoint = "inproc://zkfarm-link-monitor-" + std::to_string(session.index);
    if (zmq_socket_monitor(socket.handle(), monitor_endpoint.c_str(),
                           ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) != 0)
      throw zmq::error_t();
    session.monitor = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::pair);
    session.monitor->set(zmq::sockopt::linger, 0);
    session.monitor->connect(monitor_endpoint);
    socket.connect(endpoint);
    session.next_hello = session.last_heard = session.next_heartbeat = now;
    session.next_miss_check = now + session.heartbeat_interval;
  }
}

void CoordinatorLink::tend(Session& session, Clock::time_point now, bool* sampled) {
  if (now >= session.next_miss_check) {
    // The coordinator heartbeats every interval: silence past 1.5
    // intervals is a miss, counted once per interval while it lasts.
    if (session.welcomed && now - session.last_heard > session.heartbeat_interval * 3 / 2)
      metrics_.coordinator_heartbeat_misses().Increment();
    if (!*sampled) facts_.sample_metrics();
    *sampled = true;
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
  if (!session.welcomed && session.connected && now >= session.next_hello) {
    send(session, hello_bytes());
    session.next_hello = now + kHelloRepeat;
  }
  if (session.welcomed && now - session.last_heard > session.dead_after) {
    ZKLOG(kWarning) << "coordinator " << peer_text(session.coordinator_id) << " at " << session.endpoint
                    << " silent for more than " << session.dead_after.count()
                    << " ms; saying hello again (its credits go to the other coordinators meanwhile)";
    end_session(session, now);
    return;
  }
  if (session.welcomed && now >= session.next_heartbeat) {
    send(session, heartbeat_bytes(session));
    session.next_heartbeat = now + session.heartbeat_interval;
  }
}

void CoordinatorLink::start_drain() {
  ZKLOG(kInfo) << "signal received: draining (finishing held tasks, taking no new ones)";
  draining_ = true;
  drain_deadline_ = Clock::now() + config_.drain_timeout;
  for (Session& session : sessions_)
    send(session, wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
           auto s = body.initShutdown();
           s.setReason("worker received a termination signal");
           s.setDrain(true);
         }));
}

void CoordinatorLink::receive(Session& session) {
  for (int n = 0; n < kReadBatch; ++n) {
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
      ZKLOG_PEER(kWarning, session.endpoint)
          << "dropped a message that failed to read: " << peer_text(e.getDescription().cStr());
    } catch (const zmq::error_t& e) {
      ZKLOG(kWarning) << "receive failed: " << e.what();
      break;
    }
  }
}

void CoordinatorLink::read_monitor(Session& session, Clock::time_point now) {
  for (;;) {
    // Each event: a frame of a 16-bit event and a 32-bit value, then one
    // naming the endpoint.
    zmq::message_t event, endpoint;
    if (!session.monitor->recv(event, zmq::recv_flags::dontwait)) return;
    if (event.more()) (void)session.monitor->recv(endpoint, zmq::recv_flags::none);
    if (event.size() < sizeof(std::uint16_t)) continue;
    std::uint16_t kind = 0;
    std::memcpy(&kind, event.data(), sizeof kind);
    if (kind == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
      session.connected = true;
      if (!session.welcomed) session.next_hello = now;
    } else if (kind == ZMQ_EVENT_DISCONNECTED) {
      session.connected = false;
    }
  }
}

int CoordinatorLink::run() {
  connect_all(Clock::now());
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  const int signal_fd = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);

  std::vector<zmq::pollitem_t> items;
  for (;;) {
    const auto now = Clock::now();
    bool sampled = false;
    for (Session& session : sessions_) tend(session, now, &sampled);
    balance_credits(now);
    flush_peer_log();  // a flood of rate-limited lines that stopped is still counted
    if (draining_) {
      const bool idle = pipeline_.held() == 0;
      if (idle || now >= drain_deadline_) {
        ZKLOG(kInfo) << (idle ? "drained; exiting" : "drain timeout; exiting with tasks unfinished");
        break;
      }
    }
    items.clear();
    items.push_back({nullptr, pipeline_.finished_fd(), ZMQ_POLLIN, 0});
    items.push_back({nullptr, signal_fd, ZMQ_POLLIN, 0});
    items.push_back({nullptr, pipeline_.progress_fd(), ZMQ_POLLIN, 0});
    for (Session& session : sessions_) items.push_back({session.socket->handle(), 0, ZMQ_POLLIN, 0});
    for (Session& session : sessions_) items.push_back({session.monitor->handle(), 0, ZMQ_POLLIN, 0});
    zmq::poll(items.data(), items.size(), kPollTimeout);
    if (items[1].revents & ZMQ_POLLIN) {
      signalfd_siginfo info;
      while (::read(signal_fd, &info, sizeof info) == sizeof info) {
      }
      if (!draining_) start_drain();
    }
    // Progress before answers: a task's progress precedes its Result.
    if (items[2].revents & ZMQ_POLLIN) send_progress();
    if (items[0].revents & ZMQ_POLLIN) {
      send_progress();  // a fast task: its progress may be there but not yet polled
      // To the coordinator that sent the task. If it died meanwhile and
      // another took the job over, the survivor has sent the partition
      // again under its own task id and ignores this one.
      for (const Finished& f : pipeline_.take_finished()) send(sessions_[f.session], f.bytes);
    }
    for (std::size_t k = 0; k < sessions_.size(); ++k)
      if (items[3 + sessions_.size() + k].revents & ZMQ_POLLIN) read_monitor(sessions_[k], Clock::now());
    for (std::size_t k = 0; k < sessions_.size(); ++k)
      if (items[3 + k].revents & ZMQ_POLLIN) receive(sessions_[k]);
  }
  ::close(signal_fd);
  return 0;
}

}  // namespace zkfarm
