// messages.h -- encoding and defensive decoding of wire Envelopes.
//
// encode() turns a built Envelope into the bytes of one ZeroMQ frame.
// decode() is the single entry point for bytes from the network: it checks
// framing (word alignment, segment table), walks the whole message once under
// a traversal limit (so every pointer is bounds-checked before any handler
// reads a field), then reads every field the schema names (so text is text,
// a struct a struct, and every union names a known member: a handler's reads
// cannot throw). It never throws: bad input gives an error string, which
// callers log before dropping the message. The protocol version is not
// checked here but by the receiver (version_ok()), so that a Hello from a
// peer of another version can still be answered with a Reject that says why.
#pragma once

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "formats/curve_id.h"
#include "schema/zkfarm.capnp.h"

namespace zkfarm::wire {

// Largest frame either side accepts (also set as ZMQ_MAXMSGSIZE). Inline
// witnesses are meant for tiny circuits; big ones travel by reference.
inline constexpr std::size_t kMaxFrameBytes = 64u << 20;

// The serialized bytes of message (one segment table + segments, unpacked).
std::string encode(capnp::MessageBuilder& message);

// The bytes of one Envelope of this protocol version whose body
// build(Envelope::Body::Builder) fills in.
template <class Build>
std::string encode_envelope(Build&& build) {
  capnp::MallocMessageBuilder message;
  auto envelope = message.initRoot<Envelope>();
  envelope.setProtocolVersion(PROTOCOL_VERSION);
  build(envelope.getBody());
  return encode(message);
}

// The wire name of a curve, and back (nullopt for a value this build does
// not know).
inline Curve wire_curve(CurveId id) { return id == CurveId::kBn254 ? Curve::BN254 : Curve::BLS12381; }
inline std::optional<CurveId> curve_from_wire(Curve curve) {
  switch (curve) {
    case Curve::BN254: return CurveId::kBn254;
    case Curve::BLS12381: return CurveId::kBls12381;
    default: return std::nullopt;
  }
}

// A decoded, validated Envelope. Owns its (word-aligned) storage.
class DecodedEnvelope {
 public:
  Envelope::Reader envelope() const { return root_; }
  Envelope::Body::Which which() const { return root_.getBody().which(); }
  bool version_ok() const { return root_.getProtocolVersion() == PROTOCOL_VERSION; }

 private:
  friend std::optional<DecodedEnvelope> decode(std::span<const std::uint8_t>, std::string*);
  DecodedEnvelope() = default;
  kj::Array<capnp::word> words_;
  std::unique_ptr<capnp::FlatArrayMessageReader> reader_;
  Envelope::Reader root_;
};

// Decodes bytes as an Envelope. Returns nullopt and sets *error (if given)
// when the bytes are not a well-formed Cap'n Proto message, exceed
// kMaxFrameBytes, or name a body this build does not know.
std::optional<DecodedEnvelope> decode(std::span<const std::uint8_t> bytes, std::string* error);

// Name of a body kind for logs ("hello", "task", ...).
const char* body_name(Envelope::Body::Which which);

// Name of an error code for logs and Redis ("witnessLength", ...).
const char* error_code_name(ErrorCode code);

}  // namespace zkfarm::wire
