// scripted_peer.h -- a worker driven step by step by a test: it speaks the
// real protocol to a real coordinator over a real ZeroMQ DEALER socket
// (optionally CURVE), so the test decides exactly what the "worker" says and
// when: a rogue worker, a forged id, a result at a chosen moment, garbage.
#pragma once

#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "schema/messages.h"

namespace zkfarm::testing {

class ScriptedPeer {
 public:
  struct Curve {
    std::string server_public_key, public_key, secret_key;  // Z85
  };
  struct Hello {
    std::string worker_id;
    std::uint32_t credits = 1;
    std::uint32_t max_tasks = 0;  // 0: not reported
    std::uint64_t session_id = 0;  // 0: a new one per hello
    std::string hostname = "scripted";
  };
  struct TaskSeen {
    std::uint64_t task_id;
    std::string job_id;
    std::uint32_t partition;
  };

  explicit ScriptedPeer(int port, const Curve* curve = nullptr) : socket_(context_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    if (curve) {
      socket_.set(zmq::sockopt::curve_serverkey, curve->server_public_key);
      socket_.set(zmq::sockopt::curve_publickey, curve->public_key);
      socket_.set(zmq::sockopt::curve_secretkey, curve->secret_key);
    }
    socket_.connect("tcp://127.0.0.1:" + std::to_string(port));
  }

  template <class Build>
  void send(Build&& build) {
    capnp::MallocMessageBuilder message;
    auto envelope = message.initRoot<wire::Envelope>();
    envelope.setProtocolVersion(wire::PROTOCOL_VERSION);
    build(envelope.getBody());
    send_raw(wire::encode(message));
  }
  void send_raw(const std::string& bytes) { socket_.send(zmq::buffer(bytes), zmq::send_flags::none); }

  // Hello as worker `id` with `credits` free slots; true once welcomed,
  // false once rejected (or at timeout). (Messages sent without a session,
  // such as the heartbeats pump() sends, are rejected too.)
  bool hello(const std::string& id, std::uint32_t credits) { return hello(Hello{id, credits}); }
  bool hello(const Hello& h, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const std::size_t before = reject_messages_.size();
    send_hello(h);
    // A Reject of the hello ends the wait; those of messages sent without a
    // session (heartbeats, results) do not.
    auto hello_rejected = [&] {
      for (std::size_t i = before; i < reject_messages_.size(); ++i)
        if (reject_messages_[i].find("no session") == std::string::npos) return true;
      return false;
    };
    return pump(timeout, [&] { return welcomed_ || hello_rejected(); }) && welcomed_;
  }
  void send_hello(const Hello& hello) {
    welcomed_ = false;
    send([&](wire::Envelope::Body::Builder body) {
      auto h = body.initHello();
      h.setProtocolVersion(wire::PROTOCOL_VERSION);
      h.setWorkerId(hello.worker_id);
      h.setSessionId(hello.session_id ? hello.session_id : ++session_);
      h.setHostname(hello.hostname);
      auto d = h.initDevice();
      d.setName("scripted peer");
      d.setBackend("test");
      h.initCurves(1).set(0, wire::Curve::BN254);
      h.setCredits(hello.credits);
      h.setMaxTasks(hello.max_tasks);
    });
  }

  // Receives (collecting tasks, answering with heartbeats) until done() or
  // timeout. Returns done().
  bool pump(std::chrono::milliseconds timeout, const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      heartbeat();
      zmq::pollitem_t item{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(50));
      zmq::message_t frame;
      while (socket_.recv(frame, zmq::recv_flags::dontwait)) {
        auto decoded = wire::decode(
            std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(frame.data()), frame.size()), nullptr);
        if (!decoded) continue;
        auto body = decoded->envelope().getBody();
        switch (decoded->which()) {
          case wire::Envelope::Body::WELCOME: welcomed_ = true; break;
          case wire::Envelope::Body::REJECT:
            ++rejects_;
            reject_messages_.push_back(body.getReject().getMessage().cStr());
            break;
          case wire::Envelope::Body::TASK:
            tasks_.push_back({body.getTask().getTaskId(), body.getTask().getJobId().cStr(),
                              body.getTask().getPartitionIndex()});
            break;
          case wire::Envelope::Body::CANCEL: cancels_.push_back(body.getCancel().getTaskId()); break;
          default: break;
        }
      }
    }
    return true;
  }

  // A proof; `public_inputs` (canonical LE, every public signal) is what a
  // worker reports for a partition whose witness it computed from an input.
  void result(std::uint64_t task_id, const std::string& job_id, std::uint32_t partition, const std::string& proof,
              const std::string& public_inputs = "") {
    send([&](wire::Envelope::Body::Builder body) {
      auto r = body.initResult();
      r.setTaskId(task_id);
      r.setJobId(job_id);
      r.setPartitionIndex(partition);
      r.setProof(kj::arrayPtr(reinterpret_cast<const kj::byte*>(proof.data()), proof.size()));
      r.setDeviceUuid("scripted-uuid");
      if (!public_inputs.empty())
        r.setPublicInputs(
            kj::arrayPtr(reinterpret_cast<const kj::byte*>(public_inputs.data()), public_inputs.size()));
    });
  }

  void task_error(const TaskSeen& task, wire::ErrorCode code, const std::string& message) {
    send([&](wire::Envelope::Body::Builder body) {
      auto e = body.initError();
      e.setTaskId(task.task_id);
      e.setJobId(task.job_id);
      e.setPartitionIndex(task.partition);
      e.setCode(code);
      e.setMessage(message);
    });
  }

  // A task's progress: its witness fetch begins (witness), its proof begins
  // (proving: the task timeout runs from here).
  void progress(std::uint64_t task_id, wire::TaskStage stage = wire::TaskStage::PROVING) {
    send([&](wire::Envelope::Body::Builder body) {
      auto p = body.initProgress();
      p.setTaskId(task_id);
      p.setStage(stage);
    });
  }
  void proving(std::uint64_t task_id) { progress(task_id, wire::TaskStage::PROVING); }

  void credit(std::uint32_t credits) {
    send([&](wire::Envelope::Body::Builder body) { body.initCredit().setCredits(credits); });
  }

  const std::vector<TaskSeen>& tasks() const { return tasks_; }
  const std::vector<std::uint64_t>& cancels() const { return cancels_; }
  int rejects() const { return rejects_; }
  // True if a Reject's message contained text.
  bool rejected_with(const std::string& text) const {
    for (const auto& m : reject_messages_)
      if (m.find(text) != std::string::npos) return true;
    return false;
  }
  bool welcomed() const { return welcomed_; }

 private:
  void heartbeat() {
    if (std::chrono::steady_clock::now() - last_heartbeat_ < std::chrono::milliseconds(100)) return;
    last_heartbeat_ = std::chrono::steady_clock::now();
    send([&](wire::Envelope::Body::Builder body) {
      auto hb = body.initHeartbeat();
      hb.setSequence(++sequence_);
      if (heartbeat_circuits.empty()) return;
      auto list = hb.initLoadedCircuits(static_cast<unsigned>(heartbeat_circuits.size()));
      for (unsigned i = 0; i < heartbeat_circuits.size(); ++i) list.set(i, heartbeat_circuits[i]);
    });
  }

 public:
  // The resident circuit ids every heartbeat lists (none by default).
  std::vector<std::string> heartbeat_circuits;

 private:

  zmq::context_t context_;
  zmq::socket_t socket_;
  std::uint64_t session_ = std::random_device{}(), sequence_ = 0;  // per process, like a worker's
  bool welcomed_ = false;
  int rejects_ = 0;
  std::vector<std::string> reject_messages_;
  std::vector<TaskSeen> tasks_;
  std::vector<std::uint64_t> cancels_;
  std::chrono::steady_clock::time_point last_heartbeat_{};
};

}  // namespace zkfarm::testing
