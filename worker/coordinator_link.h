// coordinator_link.h -- the worker's link thread: one ZeroMQ DEALER socket
// per coordinator, the sessions on them, and the credits it sends.
//
// A worker serves every coordinator of the farm (--coordinator, repeatable),
// so when one dies and another takes its jobs over the worker goes on
// proving for the survivor. Per coordinator the link keeps a session: it
// sends Hello (every second, and only while its connection is up) until
// Welcome, heartbeats every interval the
// Welcome gave (the link never proves, so a long proof never silences a
// healthy worker), turns Tasks into pipeline submissions and Cancels into
// cancellations, and sends each answer (Result or TaskError) on the socket
// its task came from. It says hello again when that coordinator stays silent
// past its dead-after or says it does not know us (coordinator restart),
// and warns when one never answers (naming the CURVE keys when CURVE is on).
// What it grants and withdraws is decided by CreditsPolicy
// (credits_policy.h); the link sends those decisions as Credit messages.
//
// SIGTERM/SIGINT (read from a signalfd; main() blocks them before any
// thread starts) or a coordinator's Shutdown start a drain: Shutdown(drain)
// to every coordinator, no more credits, finish what the pipeline holds
// (up to drain_timeout), return.
//
// Threading: run() is the link thread; it alone touches the sockets. It
// waits only in its poll (the sockets, the pipeline's answers, the signals;
// at most 50 ms), so heartbeats go out on time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "monitoring/metrics/metrics.h"
#include "prover/prover.h"
#include "worker/config.h"
#include "worker/credits_policy.h"
#include "worker/task_pipeline.h"

namespace zkfarm {

class CoordinatorLink {
 public:
  // What Hello and Heartbeat say about the worker, and what the link does
  // once per heartbeat interval.
  struct Facts {
    prover::Device device;
    std::vector<CurveId> curves;
    std::function<std::vector<std::string>()> resident_circuits;
    std::function<void()> sample_metrics;
  };

  // config gives the endpoints, the worker id, the CURVE keys, the timings
  // and the task budget; session_id names this process to the coordinators
  // (Hello; its routing id too). config, pipeline and metrics outlive this.
  CoordinatorLink(const WorkerConfig& config, std::uint64_t session_id, TaskPipeline& pipeline, Facts facts,
                  metrics::WorkerMetrics& metrics);
  ~CoordinatorLink();
  CoordinatorLink(const CoordinatorLink&) = delete;
  CoordinatorLink& operator=(const CoordinatorLink&) = delete;

  // Connects to every coordinator and serves them until a drain ends (every
  // held task answered, or drain_timeout passed). Returns 0. Throws
  // zmq::error_t on a bad endpoint.
  int run();

 private:
  // One coordinator's session.
  struct Session {
    std::size_t index = 0;
    std::string endpoint;
    std::unique_ptr<zmq::socket_t> socket;
    // The socket's monitor (handshakes and disconnects): a Hello goes out
    // only on a connection that is up, so none is queued for a coordinator
    // that is not there (a Hello queued every second through an outage
    // reached it all at once when it came back).
    std::unique_ptr<zmq::socket_t> monitor;
    bool connected = false;
    std::string coordinator_id;  // from Welcome
    bool welcomed = false;
    std::chrono::milliseconds heartbeat_interval{1000};  // until Welcome says otherwise
    std::chrono::milliseconds dead_after{5000};
    std::chrono::steady_clock::time_point last_heard, next_hello, next_heartbeat, next_miss_check;
    // While not welcomed: since when, and when to warn next (warn_unanswered()).
    bool waiting_for_welcome = false;
    std::chrono::steady_clock::time_point waiting_since, next_unanswered_warning;
    std::uint64_t heartbeat_sequence = 0;
  };

  void connect_all(std::chrono::steady_clock::time_point now);
  // Hello, heartbeats, liveness and the unanswered warning of one session.
  void tend(Session& session, std::chrono::steady_clock::time_point now, bool* sampled);
  std::string hello_bytes() const;
  std::string heartbeat_bytes(Session& session) const;
  // Sends a TaskProgress for each step of a held task (the pipeline's
  // take_progress()) to the coordinator that sent it.
  void send_progress();
  void handle_frame(Session& session, const zmq::message_t& frame);
  void receive(Session& session);
  // Reads the monitor's events: connected on a completed handshake (a
  // Hello goes out at once if not welcomed), not connected on a disconnect.
  void read_monitor(Session& session, std::chrono::steady_clock::time_point now);
  // Carries out the credits policy's decisions.
  void balance_credits(std::chrono::steady_clock::time_point now);
  // Forgets a session's credits (it died or rejected us); hello again at next_hello.
  void end_session(Session& session, std::chrono::steady_clock::time_point next_hello);
  void start_drain();
  // Logs that a coordinator has not answered our Hello.
  void warn_unanswered(const Session& session, std::chrono::steady_clock::time_point now) const;
  // Sends bytes to a coordinator without blocking (dropped if its queue is full).
  static void send(Session& session, const std::string& bytes);

  const WorkerConfig& config_;
  std::uint64_t session_id_;
  TaskPipeline& pipeline_;
  Facts facts_;
  metrics::WorkerMetrics& metrics_;
  zmq::context_t context_;
  std::vector<Session> sessions_;
  CreditsPolicy credits_;
  bool draining_ = false;
  std::chrono::steady_clock::time_point drain_deadline_{};
};

}  // namespace zkfarm
