// wire_model.cc -- see wire_model.h.
#include "schema/wire_model.h"

#include <capnp/schema.h>

#include <array>
#include <vector>

#include "schema/messages.h"

namespace zkfarm {
namespace {

// The wire enumerants by name, read once from the compiled schema (no table
// to keep in step: a wire code without a model code of its name decodes
// to kUnknown, which error_code_test catches).
struct WireCodes {
  std::array<wire::ErrorCode, static_cast<std::size_t>(ErrorCode::kUnknown) + 1> to_wire{};
  std::vector<ErrorCode> from_wire;  // by wire ordinal
};

const WireCodes& wire_codes() {
  static const WireCodes codes = [] {
    WireCodes c;
    const capnp::EnumSchema schema = capnp::Schema::from<wire::ErrorCode>();
    for (std::size_t i = 0; i < c.to_wire.size(); ++i) {
      const auto code = static_cast<ErrorCode>(i);
      c.to_wire[i] = wire::ErrorCode::INTERNAL;
      for (capnp::EnumSchema::Enumerant e : schema.getEnumerants())
        if (std::string_view(e.getProto().getName().cStr()) == wire_name(code))
          c.to_wire[i] = static_cast<wire::ErrorCode>(e.getOrdinal());
    }
    for (capnp::EnumSchema::Enumerant e : schema.getEnumerants()) {
      if (c.from_wire.size() <= e.getOrdinal()) c.from_wire.resize(e.getOrdinal() + 1, ErrorCode::kUnknown);
      const auto code = parse_error_code(e.getProto().getName().cStr());
      if (code && wire_name(*code) == error_name(*code)) c.from_wire[e.getOrdinal()] = *code;
    }
    return c;
  }();
  return codes;
}

}  // namespace

wire::ErrorCode to_wire(ErrorCode code) {
  const auto index = static_cast<std::size_t>(code);
  const auto& table = wire_codes().to_wire;
  return index < table.size() ? table[index] : wire::ErrorCode::INTERNAL;
}

ErrorCode error_from_wire(wire::ErrorCode code) {
  const auto index = static_cast<std::size_t>(code);
  const auto& table = wire_codes().from_wire;
  return index < table.size() ? table[index] : ErrorCode::kUnknown;
}

void to_wire(const WitnessRef& ref, wire::WitnessRef::Builder out) {
  switch (ref.kind) {
    case WitnessRef::Kind::kFile: out.setFile(ref.location); break;
    case WitnessRef::Kind::kRedis: out.setRedisKey(ref.location); break;
    case WitnessRef::Kind::kInput: out.setInput(ref.input_json); break;
    case WitnessRef::Kind::kInline:
      out.setInline(kj::arrayPtr(ref.inline_bytes.data(), ref.inline_bytes.size()));
      break;
    case WitnessRef::Kind::kHttp: out.setUrl(ref.location); break;
  }
  out.setSha256(ref.sha256);
  out.setSize(ref.size);
}

std::optional<WitnessRef> witness_from_wire(wire::WitnessRef::Reader in) {
  WitnessRef ref;
  switch (in.which()) {
    case wire::WitnessRef::FILE:
      ref.kind = WitnessRef::Kind::kFile;
      ref.location = in.getFile().cStr();
      break;
    case wire::WitnessRef::REDIS_KEY:
      ref.kind = WitnessRef::Kind::kRedis;
      ref.location = in.getRedisKey().cStr();
      break;
    case wire::WitnessRef::INLINE: {
      ref.kind = WitnessRef::Kind::kInline;
      auto data = in.getInline();
      ref.inline_bytes.assign(data.begin(), data.end());
      break;
    }
    case wire::WitnessRef::INPUT:
      ref.kind = WitnessRef::Kind::kInput;
      ref.input_json = in.getInput().cStr();
      break;
    case wire::WitnessRef::URL:
      ref.kind = WitnessRef::Kind::kHttp;
      ref.location = in.getUrl().cStr();
      break;
    default:
      return std::nullopt;
  }
  ref.sha256 = in.getSha256().cStr();
  ref.size = in.getSize();
  return ref;
}

std::string encode_task(const TaskSpec& task) {
  return wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
    auto t = body.initTask();
    t.setTaskId(task.task_id);
    t.setJobId(task.job_id);
    t.setPartitionIndex(task.partition);
    t.setAttempt(task.attempt);
    t.setCircuitId(task.circuit_id);
    if (task.curve) t.setCurve(wire::wire_curve(*task.curve));
    to_wire(task.witness, t.initWitness());
    if (task.witness.kind == WitnessRef::Kind::kInput) {
      t.setWitnessGeneratorSha256(task.witgen_sha256);
      t.setWitnessGeneratorDatSha256(task.witgen_dat_sha256);
    }
    if (task.deadline_unix) t.setDeadlineUnixMs(static_cast<std::uint64_t>(*task.deadline_unix * 1000));
    if (!task.tenant.empty()) t.setTenant(task.tenant);
  });
}

TaskSpec task_ids_from_wire(wire::Task::Reader in) {
  TaskSpec task;
  task.task_id = in.getTaskId();
  task.job_id = in.getJobId().cStr();
  task.partition = in.getPartitionIndex();
  task.attempt = in.getAttempt();
  task.circuit_id = in.getCircuitId().cStr();
  return task;
}

std::optional<TaskSpec> task_from_wire(wire::Task::Reader in) {
  auto witness = witness_from_wire(in.getWitness());
  if (!witness) return std::nullopt;
  TaskSpec task = task_ids_from_wire(in);
  task.curve = wire::curve_from_wire(in.getCurve());
  task.witness = std::move(*witness);
  task.tenant = in.getTenant().cStr();
  if (in.getDeadlineUnixMs() > 0) task.deadline_unix = static_cast<double>(in.getDeadlineUnixMs()) / 1000;
  if (task.witness.kind == WitnessRef::Kind::kInput) {
    task.witgen_sha256 = in.getWitnessGeneratorSha256().cStr();
    task.witgen_dat_sha256 = in.getWitnessGeneratorDatSha256().cStr();
  }
  return task;
}

}  // namespace zkfarm
