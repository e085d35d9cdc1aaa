// router_link.cc -- see router_link.h.
#include "coordinator/router_link.h"

#include <map>

#include "cluster/log.h"
#include "coordinator/constants.h"
#include "schema/messages.h"

namespace zkfarm {

namespace {

// Frames queued per peer before sends are dropped (and logged): a Task is
// well under 1 KB unless its witness is inline (at most 1 MiB), so this is
// far more than the credits (at most 1024) a worker can have outstanding.
constexpr int kSendHighWaterMark = 10000;
// Messages read per poll before the thread turns to commands and heartbeats,
// so a flood of frames cannot delay heartbeats (and make live workers look
// dead).
constexpr int kMaxReceivesPerPoll = 1000;
// A peer silent for more than 1.5 heartbeat intervals has missed one (half an
// interval of slack for scheduling and network jitter).
constexpr int kMissedHeartbeatNum = 3, kMissedHeartbeatDen = 2;

}  // namespace

RouterLink::RouterLink(zmq::context_t& context, Options options, std::function<void(LinkEvent)> sink)
    : context_(context), options_(std::move(options)), events_(std::move(sink)),
      socket_(context_, zmq::socket_type::router),
      warnings_(coordinator::kPeerWarningWindow, coordinator::kPeerWarningBurst, coordinator::kPeerWarningSources) {}

bool RouterLink::warn_allowed(const std::string& peer) {
  return warnings_.allow(peer, std::chrono::steady_clock::now());
}

RouterLink::~RouterLink() { stop(); }

void RouterLink::start() {
  if (!options_.curve_secret_key.empty()) {
    // The ZAP handler must exist before the first connection arrives.
    zap_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::rep);
    zap_->set(zmq::sockopt::linger, 0);
    zap_->bind("inproc://zeromq.zap.01");
    socket_.set(zmq::sockopt::curve_server, 1);
    socket_.set(zmq::sockopt::curve_secretkey, options_.curve_secret_key);
    socket_.set(zmq::sockopt::zap_domain, "zkfarm");
  }
  socket_.set(zmq::sockopt::router_handover, 1);
  socket_.set(zmq::sockopt::router_mandatory, 1);
  socket_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(wire::kMaxFrameBytes));
  socket_.set(zmq::sockopt::linger, 0);
  socket_.set(zmq::sockopt::sndhwm, kSendHighWaterMark);
  socket_.bind(options_.endpoint);
  thread_ = std::thread([this] { run(); });
}

void RouterLink::stop() {
  if (!thread_.joinable()) return;
  commands_.push(Command{Command::Kind::kStop, {}, {}});
  thread_.join();
}

void RouterLink::send(const std::string& peer, std::string bytes) {
  commands_.push(Command{Command::Kind::kSend, peer, std::move(bytes)});
}
void RouterLink::track(const std::string& peer) { commands_.push(Command{Command::Kind::kTrack, peer, {}}); }
void RouterLink::forget(const std::string& peer) { commands_.push(Command{Command::Kind::kForget, peer, {}}); }

namespace {

std::string heartbeat_bytes(std::uint64_t sequence) {
  return wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
    auto hb = body.initHeartbeat();
    hb.setSequence(sequence);
    hb.setSentAtUnixMs(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count()));
  });
}

}  // namespace

// One ZAP exchange (RFC 27): version, request id, domain, address, identity,
// mechanism, credentials -> version, request id, status, text, user, metadata.
void RouterLink::answer_zap() {
  std::vector<zmq::message_t> request;
  for (;;) {
    zmq::message_t part;
    if (!zap_->recv(part, zmq::recv_flags::dontwait)) return;
    const bool more = part.more();
    request.push_back(std::move(part));
    if (!more) break;
  }
  std::string status = "400", text = "malformed ZAP request", user;
  if (request.size() >= 7 && request[0].to_string() == "1.0" && request[5].to_string() == "CURVE" &&
      request[6].size() == 32) {
    char z85[41];
    zmq_z85_encode(z85, static_cast<const std::uint8_t*>(request[6].data()), 32);
    if (options_.curve_allowlist.count(z85)) {
      status = "200";
      text = "OK";
      user = z85;
    } else {
      text = "key not in the allowlist";
      if (warn_allowed(request[3].to_string()))
        ZKLOG(kWarning) << "ZAP denied a worker with CURVE public key " << z85 << " from "
                        << peer_text(request[3].to_string());
    }
  }
  const std::string request_id = request.size() > 1 ? request[1].to_string() : "";
  const std::string reply[] = {"1.0", request_id, status, text, user, ""};
  for (int i = 0; i < 6; ++i)
    zap_->send(zmq::buffer(reply[i]), i < 5 ? zmq::send_flags::sndmore : zmq::send_flags::none);
}

void RouterLink::run() {
  using Clock = std::chrono::steady_clock;
  std::map<std::string, Clock::time_point> last_seen;  // tracked peers
  std::uint64_t sequence = 0;
  auto next_tick = Clock::now();
  auto send_frame = [&](const std::string& peer, const std::string& bytes) {
    try {
      zmq::message_t id(peer.data(), peer.size()), body(bytes.data(), bytes.size());
      if (!socket_.send(id, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return;
      if (!socket_.send(body, zmq::send_flags::dontwait) && warn_allowed(peer))
        ZKLOG(kWarning) << "send queue to " << peer_text(peer) << " full, frame dropped";
    } catch (const zmq::error_t& e) {
      // EHOSTUNREACH: the peer disconnected (router_mandatory).
      ZKLOG(kDebug) << "cannot send to " << peer_text(peer) << ": " << e.what();
    }
  };
  for (;;) {
    const auto now = Clock::now();
    if (now >= next_tick) {
      const std::string hb = heartbeat_bytes(++sequence);
      for (auto it = last_seen.begin(); it != last_seen.end();) {
        if (now - it->second > options_.dead_after) {
          ZKLOG(kWarning) << "peer " << peer_text(it->first) << " silent for more than "
                          << options_.dead_after.count() << " ms: dead";
          events_(LinkEvent{LinkEvent::Kind::kDead, it->first, {}});
          it = last_seen.erase(it);
          continue;
        }
        // Peers heartbeat every interval: silence past 1.5 intervals means
        // one was missed (counted once per tick while it lasts).
        if (now - it->second > options_.heartbeat_interval * kMissedHeartbeatNum / kMissedHeartbeatDen)
          events_(LinkEvent{LinkEvent::Kind::kHeartbeatMissed, it->first, {}});
        send_frame(it->first, hb);
        ++it;
      }
      next_tick = now + options_.heartbeat_interval;
      warnings_.flush(now, [](const std::string& peer, std::size_t held_back, std::chrono::milliseconds window) {
        ZKLOG(kWarning) << "suppressed repeated warnings (" << held_back << " more from peer " << peer_text(peer)
                        << " in the last " << window.count() / 1000 << " s)";
      });
    }
    zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0},
                               {nullptr, commands_.fd(), ZMQ_POLLIN, 0},
                               {zap_ ? zap_->handle() : nullptr, zap_ ? 0 : -1, static_cast<short>(zap_ ? ZMQ_POLLIN : 0), 0}};
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_tick - Clock::now());
    zmq::poll(items, zap_ ? 3 : 2, std::max(std::chrono::milliseconds(0), wait));
    if (zap_ && (items[2].revents & ZMQ_POLLIN)) answer_zap();
    if (items[1].revents & ZMQ_POLLIN) {
      for (auto& c : commands_.drain()) {
        switch (c.kind) {
          case Command::Kind::kStop: return;
          case Command::Kind::kSend: send_frame(c.peer, c.bytes); break;
          case Command::Kind::kTrack: last_seen[c.peer] = Clock::now(); break;
          case Command::Kind::kForget: last_seen.erase(c.peer); break;
        }
      }
    }
    // Drain what arrived (bounded, so commands and heartbeats keep flowing).
    for (int n = 0; n < kMaxReceivesPerPoll; ++n) {
      std::vector<zmq::message_t> parts;
      try {
        zmq::message_t part;
        if (!socket_.recv(part, zmq::recv_flags::dontwait)) break;
        parts.push_back(std::move(part));
        while (parts.back().more()) {
          zmq::message_t more;
          (void)socket_.recv(more, zmq::recv_flags::none);
          parts.push_back(std::move(more));
        }
      } catch (const zmq::error_t& e) {
        ZKLOG(kWarning) << "receive failed: " << e.what();
        break;
      }
      if (parts.size() != 2) {
        const std::string from = parts.empty() ? std::string() : parts[0].to_string();
        if (warn_allowed(from))
          ZKLOG(kWarning) << "dropped a message of " << parts.size() << " frames from " << peer_text(from)
                          << " (expected identity + envelope)";
        continue;
      }
      std::string peer = parts[0].to_string();
      std::string error;
      auto bytes = std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(parts[1].data()), parts[1].size());
      if (!wire::decode(bytes, &error)) {
        if (warn_allowed(peer))
          ZKLOG(kWarning) << "dropped a malformed message from " << peer_text(peer) << ": " << peer_text(error);
        continue;
      }
      if (auto it = last_seen.find(peer); it != last_seen.end()) it->second = Clock::now();
      // The ZAP user id is the CURVE key ZAP admitted (answer_zap); without
      // CURVE the property does not exist.
      std::string curve_key;
      if (zap_) {
        const char* user = zmq_msg_gets(parts[1].handle(), "User-Id");
        if (user) curve_key = user;
      }
      events_(LinkEvent{LinkEvent::Kind::kMessage, std::move(peer), parts[1].to_string(), std::move(curve_key)});
    }
  }
}

}  // namespace zkfarm
