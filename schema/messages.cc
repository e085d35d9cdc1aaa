// messages.cc -- see messages.h.
#include "schema/messages.h"

#include <capnp/dynamic.h>
#include <kj/exception.h>

#include <cstring>

namespace zkfarm::wire {

std::string encode(capnp::MessageBuilder& message) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  kj::ArrayPtr<const kj::byte> bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

namespace {

bool known_body(Envelope::Body::Which which) {
  switch (which) {
    case Envelope::Body::HELLO:
    case Envelope::Body::WELCOME:
    case Envelope::Body::REJECT:
    case Envelope::Body::HEARTBEAT:
    case Envelope::Body::CREDIT:
    case Envelope::Body::TASK:
    case Envelope::Body::RESULT:
    case Envelope::Body::ERROR:
    case Envelope::Body::CANCEL:
    case Envelope::Body::SHUTDOWN:
    case Envelope::Body::PROGRESS:
      return true;
  }
  return false;
}

void check_readable(capnp::DynamicStruct::Reader object);

// Reads one field as a handler would. Reading a pointer checks that it points
// at what the schema says (text is a NUL-terminated byte list, a struct is a
// struct, ...) and throws kj::Exception otherwise.
void check_field(capnp::DynamicStruct::Reader object, capnp::StructSchema::Field field) {
  if (field.getProto().isGroup()) {
    check_readable(object.get(field).as<capnp::DynamicStruct>());
    return;
  }
  if (!field.getType().isStruct() && !field.getType().isList() && !field.getType().isText() &&
      !field.getType().isData())
    return;  // plain data: any bits are a value
  if (!object.has(field)) return;
  capnp::DynamicValue::Reader value = object.get(field);
  if (value.getType() == capnp::DynamicValue::STRUCT) {
    check_readable(value.as<capnp::DynamicStruct>());
  } else if (value.getType() == capnp::DynamicValue::LIST) {
    for (capnp::DynamicValue::Reader element : value.as<capnp::DynamicList>()) {
      if (element.getType() == capnp::DynamicValue::STRUCT) check_readable(element.as<capnp::DynamicStruct>());
    }
  }
}

// Reads every field of object (the active member of each union) so that no
// handler meets a pointer of the wrong kind later: totalSize() only checks
// that pointers stay inside the message. Throws kj::Exception when a field
// cannot be read or a union names a member this build does not know. The
// schema has no recursive types, so the depth is bounded by the schema.
void check_readable(capnp::DynamicStruct::Reader object) {
  const capnp::StructSchema schema = object.getSchema();
  for (capnp::StructSchema::Field field : schema.getNonUnionFields()) check_field(object, field);
  if (schema.getUnionFields().size() == 0) return;
  KJ_IF_MAYBE (member, object.which()) {
    check_field(object, *member);
  } else {
    KJ_FAIL_REQUIRE("unknown member of union", schema.getShortDisplayName());
  }
}

}  // namespace

std::optional<DecodedEnvelope> decode(std::span<const std::uint8_t> bytes, std::string* error) {
  auto fail = [&](std::string message) -> std::optional<DecodedEnvelope> {
    if (error) *error = std::move(message);
    return std::nullopt;
  };
  if (bytes.empty()) return fail("empty frame");
  if (bytes.size() > kMaxFrameBytes)
    return fail("frame of " + std::to_string(bytes.size()) + " bytes exceeds the limit of " +
                std::to_string(kMaxFrameBytes));
  if (bytes.size() % sizeof(capnp::word) != 0)
    return fail("frame of " + std::to_string(bytes.size()) +
                " bytes is not a whole number of 8-byte words");
  DecodedEnvelope out;
  // Copy into word-aligned storage: ZeroMQ gives no alignment guarantee.
  out.words_ = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(out.words_.begin(), bytes.data(), bytes.size());
  capnp::ReaderOptions options;
  // A message can reference each word at most a few times legitimately; the
  // limit stops "amplification" messages whose pointers overlap. It counts
  // every read of the reader: the two walks below and the handler's reads.
  options.traversalLimitInWords = out.words_.size() * 8 + 1024;
  options.nestingLimit = 16;
  try {
    out.reader_ = std::make_unique<capnp::FlatArrayMessageReader>(out.words_.asPtr(), options);
    out.root_ = out.reader_->getRoot<Envelope>();
    // Walks every pointer once: malformed pointers throw here, not later.
    const capnp::MessageSize size = out.root_.totalSize();
    // The protocol has no interfaces: a capability pointer (in any field,
    // known to this build or not) can only be forged, and reading or copying
    // it throws (found by schema/messages_fuzz).
    if (size.capCount != 0) return fail("malformed message: it carries capability pointers");
    if (!known_body(out.root_.getBody().which()))
      return fail("unknown message kind " +
                  std::to_string(static_cast<unsigned>(out.root_.getBody().which())));
    // Every text, data, list and struct field holds what the schema says.
    check_readable(capnp::toDynamic(out.root_));
  } catch (const kj::Exception& e) {
    return fail(std::string("malformed message: ") + e.getDescription().cStr());
  }
  return out;
}

const char* body_name(Envelope::Body::Which which) {
  switch (which) {
    case Envelope::Body::HELLO: return "hello";
    case Envelope::Body::WELCOME: return "welcome";
    case Envelope::Body::REJECT: return "reject";
    case Envelope::Body::HEARTBEAT: return "heartbeat";
    case Envelope::Body::CREDIT: return "credit";
    case Envelope::Body::TASK: return "task";
    case Envelope::Body::RESULT: return "result";
    case Envelope::Body::ERROR: return "error";
    case Envelope::Body::CANCEL: return "cancel";
    case Envelope::Body::SHUTDOWN: return "shutdown";
    case Envelope::Body::PROGRESS: return "progress";
  }
  return "unknown";
}

const char* error_code_name(ErrorCode code) {
  // The enumerant's name in the compiled schema: no table to keep in step.
  for (capnp::EnumSchema::Enumerant e : capnp::Schema::from<ErrorCode>().getEnumerants())
    if (e.getOrdinal() == static_cast<std::uint16_t>(code)) return e.getProto().getName().cStr();
  return "unknown";
}

}  // namespace zkfarm::wire
