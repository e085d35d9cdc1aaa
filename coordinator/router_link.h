// router_link.h -- the coordinator's network thread: a ZeroMQ ROUTER socket,
// heartbeats and liveness.
//
// Threading: RouterLink owns one thread, the only one that touches the
// socket. It never blocks on anything but its poll, so heartbeats go out on
// time however busy the scheduler, Redis or the verifier are (DESIGN:
// "heartbeats on a dedicated thread"). Other threads talk to it through
// send()/track()/forget() (a Mailbox); it reports to the scheduler through
// the sink: every well-formed message (kMessage) and every tracked
// peer that stayed silent longer than dead_after (kDead, after which the
// peer is no longer tracked); kHeartbeatMissed for each heartbeat tick at
// which a tracked peer has been silent over 1.5 intervals (metrics only).
// Frames that do not decode are logged and dropped here; they never reach
// the scheduler and never end the process. Warnings about one peer are rate
// limited (LogLimiter), with a count of those held back.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "cluster/log_limiter.h"
#include "cluster/mailbox.h"

namespace zkfarm {

struct LinkEvent {
  enum class Kind { kMessage, kDead, kHeartbeatMissed };
  Kind kind = Kind::kMessage;
  std::string peer;   // ZeroMQ routing id
  std::string bytes;  // the Envelope (kMessage)
  // kMessage under CURVE: the sender's public key (Z85), as ZAP admitted it;
  // "" without CURVE.
  std::string curve_key;
};

class RouterLink {
 public:
  struct Options {
    std::string endpoint;  // e.g. tcp://127.0.0.1:5555
    std::chrono::milliseconds heartbeat_interval{1000};
    std::chrono::milliseconds dead_after{5000};
    // CURVE: when curve_secret_key (Z85) is set, the socket is a CURVE
    // server and a ZAP handler on this thread admits only the worker public
    // keys in curve_allowlist (an empty allowlist admits none).
    std::string curve_secret_key;
    std::set<std::string> curve_allowlist;
  };

  // sink receives every event, on the network thread: it must only enqueue.
  RouterLink(zmq::context_t& context, Options options, std::function<void(LinkEvent)> sink);
  ~RouterLink();  // stop() + join
  RouterLink(const RouterLink&) = delete;
  RouterLink& operator=(const RouterLink&) = delete;

  // Binds the socket (throws zmq::error_t naming nothing more than errno:
  // the caller adds the endpoint) and starts the thread.
  void start();
  void stop();

  // Queue a frame for peer. Thread-safe. Frames to unknown peers are dropped.
  void send(const std::string& peer, std::string bytes);
  // Start (or stop) heartbeating and liveness-checking peer. Thread-safe.
  void track(const std::string& peer);
  void forget(const std::string& peer);

 private:
  struct Command {
    enum class Kind { kSend, kTrack, kForget, kStop } kind;
    std::string peer, bytes;
  };
  void run();
  void answer_zap();
  // Logs a warning about peer unless it already sent many this window.
  bool warn_allowed(const std::string& peer);

  zmq::context_t& context_;
  Options options_;
  std::function<void(LinkEvent)> events_;
  Mailbox<Command> commands_;
  zmq::socket_t socket_;
  std::unique_ptr<zmq::socket_t> zap_;
  LogLimiter warnings_;
  std::thread thread_;
};

}  // namespace zkfarm
