// job_error.h -- the typed error codes of a failed job (job:<id>
// "error_code", `zkfarm status`, the `code` label of the job and partition
// metrics), with their string forms defined once.
//
// The string forms are the wire names of schema/zkfarm.capnp ErrorCode
// (camelCase) for the codes a worker reports, plus the coordinator's own:
// invalidJob, deadlineExceeded, invalidProof, taskTimeout.
#pragma once

#include <optional>
#include <string_view>

namespace zkfarm {

enum class JobErrorCode {
  // The job's input is wrong (found at intake, or claimed by a worker).
  kInvalidJob,          // job JSON does not parse or validate
  kUnknownCircuit,      // circuit not registered
  kBadWitness,          // witness does not parse
  kWitnessLength,       // witness length differs from the circuit's signals
  kUnsatisfied,         // witness fails a constraint
  kWrongCurve,          // witness field differs from the circuit's
  kBadInput,            // the witness generator refused a partition's input
  kWitnessUnavailable,  // witness reference could not be read
  kWitnessChecksum,     // witness bytes differ from the job's sha256 or size
  // A worker or its environment failed (the partition is retried).
  kArtifactChecksum,
  kOutOfMemory,
  kDeviceFault,
  kInternal,
  kInvalidProof,        // a proof failed verification
  kTaskTimeout,         // a worker held a task past the task timeout
  // The job's life.
  kCancelled,
  kDeadlineExceeded,
  // Protocol-level codes a worker may (wrongly) put in a TaskError.
  kProtocolVersion,
  kMalformedMessage,
  kUnknownSession,
  kShuttingDown,
  kWorkerIdTaken,
  kUnknown,
};

// "invalidJob", "badWitness", ... (never empty).
std::string_view job_error_name(JobErrorCode code);
// The code named `name`, or nullopt for a name that is not one.
std::optional<JobErrorCode> parse_job_error(std::string_view name);

// True for codes that say the job's input is bad (bad witness, wrong length,
// unsatisfied, wrong curve, a witness whose bytes differ from its sha256). Such a claim by one worker fails the job only
// once it is confirmed (coordinator/scheduler.h: "claims that the input is
// bad").
bool claims_bad_input(JobErrorCode code);

}  // namespace zkfarm
