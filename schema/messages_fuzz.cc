// messages_fuzz.cc -- libFuzzer target for the wire decoder (schema/messages.h).
//
// The input is one ZeroMQ frame as either daemon receives it. decode() must
// return an envelope or an error string and never throw. Its contract is that
// a decoded envelope can be read by any handler without further checks, so
// every field of every body kind is read here the way the coordinator (Hello,
// Heartbeat, Credit, Result, TaskError, Shutdown) and the worker (Welcome,
// Reject, Heartbeat, Task, Cancel, Shutdown) read them, and a kj::Exception
// from a read is a bug. A decoded envelope copied into a new message must
// encode and decode again (unless the copy runs out of traversal budget).
#include <capnp/message.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

#include "schema/messages.h"

namespace {

using zkfarm::wire::Envelope;

std::size_t sink = 0;  // keeps the reads from being optimised away

void text(capnp::Text::Reader t) { sink += std::string(t.cStr()).size(); }
void data(capnp::Data::Reader d) { sink += std::string(d.begin(), d.end()).size(); }
void texts(capnp::List<capnp::Text>::Reader list) {
  for (auto t : list) text(t);
}

void read_all(const zkfarm::wire::DecodedEnvelope& decoded) {
  auto envelope = decoded.envelope();
  sink += decoded.version_ok();
  sink += envelope.getProtocolVersion();
  sink += std::string(zkfarm::wire::body_name(decoded.which())).size();
  auto body = envelope.getBody();
  switch (decoded.which()) {
    case Envelope::Body::HELLO: {
      auto h = body.getHello();
      sink += h.getProtocolVersion() + h.getSessionId() + h.getPid() + h.getCredits();
      text(h.getWorkerId());
      text(h.getHostname());
      text(h.getSoftwareVersion());
      auto d = h.getDevice();
      sink += static_cast<std::size_t>(d.getOrdinal()) + d.getMemoryBytes();
      text(d.getName());
      text(d.getUuid());
      text(d.getBackend());
      for (auto c : h.getCurves()) sink += static_cast<std::size_t>(c);
      texts(h.getLoadedCircuits());
      break;
    }
    case Envelope::Body::WELCOME: {
      auto w = body.getWelcome();
      text(w.getCoordinatorId());
      sink += w.getHeartbeatIntervalMs() + w.getDeadAfterMs();
      break;
    }
    case Envelope::Body::REJECT: {
      auto r = body.getReject();
      sink += std::string(zkfarm::wire::error_code_name(r.getCode())).size();
      text(r.getMessage());
      break;
    }
    case Envelope::Body::HEARTBEAT: {
      auto h = body.getHeartbeat();
      sink += h.getSequence() + h.getSentAtUnixMs() + h.getBusyTasks();
      texts(h.getLoadedCircuits());
      break;
    }
    case Envelope::Body::CREDIT: sink += body.getCredit().getCredits(); break;
    case Envelope::Body::TASK: {
      auto t = body.getTask();
      sink += t.getTaskId() + t.getPartitionIndex() + t.getAttempt() + t.getDeadlineUnixMs();
      sink += static_cast<std::size_t>(t.getCurve());
      text(t.getJobId());
      text(t.getCircuitId());
      auto w = t.getWitness();
      switch (w.which()) {
        case zkfarm::wire::WitnessRef::FILE: text(w.getFile()); break;
        case zkfarm::wire::WitnessRef::REDIS_KEY: text(w.getRedisKey()); break;
        case zkfarm::wire::WitnessRef::INLINE: data(w.getInline()); break;
        case zkfarm::wire::WitnessRef::INPUT: text(w.getInput()); break;
        case zkfarm::wire::WitnessRef::URL: text(w.getUrl()); break;
      }
      text(w.getSha256());
      sink += w.getSize();
      break;
    }
    case Envelope::Body::RESULT: {
      auto r = body.getResult();
      sink += r.getTaskId() + r.getPartitionIndex() + r.getCircuitWasResident();
      text(r.getJobId());
      data(r.getProof());
      text(r.getDeviceUuid());
      auto t = r.getTimings();
      sink += static_cast<std::size_t>(t.getLoadCircuitSeconds() + t.getFetchWitnessSeconds() +
                                       t.getParseWitnessSeconds() + t.getWitnessCheckSeconds() +
                                       t.getSpmvSeconds() + t.getNttSeconds() + t.getMsmSeconds() +
                                       t.getProveSeconds() + t.getTotalSeconds() > 0);
      break;
    }
    case Envelope::Body::ERROR: {
      auto e = body.getError();
      sink += e.getTaskId() + e.getPartitionIndex();
      sink += std::string(zkfarm::wire::error_code_name(e.getCode())).size();
      text(e.getJobId());
      text(e.getMessage());
      break;
    }
    case Envelope::Body::CANCEL: {
      auto c = body.getCancel();
      sink += c.getTaskId();
      text(c.getJobId());
      break;
    }
    case Envelope::Body::SHUTDOWN: {
      auto s = body.getShutdown();
      text(s.getReason());
      sink += s.getDrain();
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  std::string error;
  std::optional<zkfarm::wire::DecodedEnvelope> decoded;
  try {
    decoded = zkfarm::wire::decode(std::span<const std::uint8_t>(bytes, size), &error);
  } catch (...) {
    std::abort();  // decode() never throws
  }
  if (!decoded) {
    if (error.empty()) std::abort();  // a refusal says why
    return 0;
  }
  try {
    read_all(*decoded);
  } catch (const kj::Exception& e) {
    // decode() accepted what a handler cannot read.
    std::fprintf(stderr, "read of a decoded envelope threw: %s\n", e.getDescription().cStr());
    std::abort();
  }
  try {
    capnp::MallocMessageBuilder copy;
    copy.setRoot(decoded->envelope());
    const std::string again = zkfarm::wire::encode(copy);
    auto redecoded = zkfarm::wire::decode(
        std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(again.data()), again.size()), &error);
    if (!redecoded || redecoded->which() != decoded->which()) std::abort();
    read_all(*redecoded);
  } catch (const kj::Exception& e) {
    // A copy walks every pointer, also those in fields this build does not
    // know, so overlapping pointers there can spend the traversal budget:
    // that limit is what stops amplification. Any other failure is a bug.
    if (std::string(e.getDescription().cStr()).find("traversal limit") != std::string::npos) return 0;
    std::fprintf(stderr, "copy of a decoded envelope threw: %s\n", e.getDescription().cStr());
    std::abort();
  }
  return 0;
}
