// error_code.cc -- see error_code.h. The table below is the contract.
#include "schema/error_code.h"

#include <array>

namespace zkfarm {
namespace {

// `zkfarm prove`'s exit codes (error_code.h: exit_code).
constexpr int kExitBadInput = 2;
constexpr int kExitMachineFailed = 3;

struct Row {
  ErrorCode code;
  std::string_view name;
  std::string_view wire;  // the wire code's name (schema/zkfarm.capnp ErrorCode)
  int exit_code;
  bool claims_bad_input;
  bool retried_elsewhere;
};

constexpr bool kClaims = true, kRetried = true, kNo = false;

// One row per code, in the enum's order (checked below). A code whose wire
// name is its own name is what that wire code decodes to.
constexpr std::array<Row, 28> kTable = {{
    {ErrorCode::kInvalidJob, "invalidJob", "internal", kExitBadInput, kNo, kNo},
    {ErrorCode::kDuplicateId, "duplicateId", "internal", kExitBadInput, kNo, kNo},
    {ErrorCode::kUnknownCircuit, "unknownCircuit", "unknownCircuit", kExitBadInput, kNo, kRetried},
    {ErrorCode::kBadWitness, "badWitness", "badWitness", kExitBadInput, kClaims, kNo},
    {ErrorCode::kWitnessLength, "witnessLength", "witnessLength", kExitBadInput, kClaims, kNo},
    {ErrorCode::kUnsatisfied, "unsatisfied", "unsatisfied", kExitBadInput, kClaims, kNo},
    {ErrorCode::kWrongCurve, "wrongCurve", "wrongCurve", kExitBadInput, kClaims, kNo},
    {ErrorCode::kBadInput, "badInput", "badInput", kExitBadInput, kClaims, kNo},
    // A second worker fetches the witness again before the job fails.
    {ErrorCode::kWitnessChecksum, "witnessChecksum", "witnessChecksum", kExitBadInput, kClaims, kNo},
    // The farm checked the artifacts when the circuit was registered, so a
    // circuit that then fails to load is the worker's copy's fault.
    {ErrorCode::kBadCircuit, "badCircuit", "artifactChecksum", kExitBadInput, kNo, kRetried},
    {ErrorCode::kNoDevice, "noDevice", "deviceFault", kExitBadInput, kNo, kRetried},
    {ErrorCode::kWitnessUnavailable, "witnessUnavailable", "witnessUnavailable", kExitMachineFailed, kNo, kRetried},
    {ErrorCode::kArtifactChecksum, "artifactChecksum", "artifactChecksum", kExitMachineFailed, kNo, kRetried},
    {ErrorCode::kOutOfMemory, "outOfMemory", "outOfMemory", kExitMachineFailed, kNo, kRetried},
    {ErrorCode::kDeviceFault, "deviceFault", "deviceFault", kExitMachineFailed, kNo, kRetried},
    {ErrorCode::kInternal, "internal", "internal", kExitMachineFailed, kNo, kRetried},
    {ErrorCode::kInvalidProof, "invalidProof", "internal", kExitMachineFailed, kNo, kRetried},
    {ErrorCode::kTaskTimeout, "taskTimeout", "internal", kExitMachineFailed, kNo, kRetried},
    {ErrorCode::kCancelled, "cancelled", "cancelled", kExitMachineFailed, kNo, kNo},
    {ErrorCode::kDeadlineExceeded, "deadlineExceeded", "internal", kExitMachineFailed, kNo, kNo},
    {ErrorCode::kSetAside, "setAside", "internal", kExitMachineFailed, kNo, kNo},
    // Refused (or held) at intake by its tenant's quota: the coordinator's
    // own, never reported by a worker.
    {ErrorCode::kQuotaExceeded, "quotaExceeded", "internal", kExitBadInput, kNo, kNo},
    {ErrorCode::kProtocolVersion, "protocolVersion", "protocolVersion", kExitMachineFailed, kNo, kRetried},
    {ErrorCode::kMalformedMessage, "malformedMessage", "malformedMessage", kExitMachineFailed, kNo, kRetried},
    {ErrorCode::kUnknownSession, "unknownSession", "unknownSession", kExitMachineFailed, kNo, kRetried},
    {ErrorCode::kShuttingDown, "shuttingDown", "shuttingDown", kExitMachineFailed, kNo, kRetried},
    {ErrorCode::kWorkerIdTaken, "workerIdTaken", "workerIdTaken", kExitMachineFailed, kNo, kRetried},
    {ErrorCode::kUnknown, "unknown", "unknown", kExitMachineFailed, kNo, kRetried},
}};

constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < kTable.size(); ++i)
    if (static_cast<std::size_t>(kTable[i].code) != i) return false;
  return true;
}
static_assert(in_enum_order(), "kTable must list every ErrorCode once, in the enum's order");
static_assert(kTable.size() == static_cast<std::size_t>(ErrorCode::kUnknown) + 1, "a code has no row");

const Row& row(ErrorCode code) {
  const auto index = static_cast<std::size_t>(code);
  return index < kTable.size() ? kTable[index] : kTable.back();
}

}  // namespace

std::string_view error_name(ErrorCode code) { return row(code).name; }

std::optional<ErrorCode> parse_error_code(std::string_view name) {
  for (const Row& r : kTable)
    if (r.name == name) return r.code;
  return std::nullopt;
}

std::string_view wire_name(ErrorCode code) { return row(code).wire; }
int exit_code(ErrorCode code) { return row(code).exit_code; }
bool claims_bad_input(ErrorCode code) { return row(code).claims_bad_input; }
bool retried_elsewhere(ErrorCode code) { return row(code).retried_elsewhere; }

}  // namespace zkfarm
