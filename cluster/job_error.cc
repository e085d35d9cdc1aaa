// job_error.cc -- see job_error.h.
#include "cluster/job_error.h"

#include <array>
#include <utility>

namespace zkfarm {
namespace {

constexpr std::array<std::pair<JobErrorCode, std::string_view>, 23> kNames = {{
    {JobErrorCode::kInvalidJob, "invalidJob"},
    {JobErrorCode::kUnknownCircuit, "unknownCircuit"},
    {JobErrorCode::kBadWitness, "badWitness"},
    {JobErrorCode::kWitnessLength, "witnessLength"},
    {JobErrorCode::kUnsatisfied, "unsatisfied"},
    {JobErrorCode::kWrongCurve, "wrongCurve"},
    {JobErrorCode::kBadInput, "badInput"},
    {JobErrorCode::kWitnessUnavailable, "witnessUnavailable"},
    {JobErrorCode::kWitnessChecksum, "witnessChecksum"},
    {JobErrorCode::kArtifactChecksum, "artifactChecksum"},
    {JobErrorCode::kOutOfMemory, "outOfMemory"},
    {JobErrorCode::kDeviceFault, "deviceFault"},
    {JobErrorCode::kInternal, "internal"},
    {JobErrorCode::kInvalidProof, "invalidProof"},
    {JobErrorCode::kTaskTimeout, "taskTimeout"},
    {JobErrorCode::kCancelled, "cancelled"},
    {JobErrorCode::kDeadlineExceeded, "deadlineExceeded"},
    {JobErrorCode::kProtocolVersion, "protocolVersion"},
    {JobErrorCode::kMalformedMessage, "malformedMessage"},
    {JobErrorCode::kUnknownSession, "unknownSession"},
    {JobErrorCode::kShuttingDown, "shuttingDown"},
    {JobErrorCode::kWorkerIdTaken, "workerIdTaken"},
    {JobErrorCode::kUnknown, "unknown"},
}};

}  // namespace

std::string_view job_error_name(JobErrorCode code) {
  for (const auto& [c, name] : kNames)
    if (c == code) return name;
  return "unknown";
}

std::optional<JobErrorCode> parse_job_error(std::string_view name) {
  for (const auto& [c, n] : kNames)
    if (n == name) return c;
  return std::nullopt;
}

bool claims_bad_input(JobErrorCode code) {
  switch (code) {
    case JobErrorCode::kBadWitness:
    case JobErrorCode::kWitnessLength:
    case JobErrorCode::kUnsatisfied:
    case JobErrorCode::kWrongCurve:
    case JobErrorCode::kBadInput:
    case JobErrorCode::kWitnessChecksum:  // a second worker fetches it again
      return true;
    default:
      return false;
  }
}

}  // namespace zkfarm
