// error_code.h -- why a proof, a task or a job failed: the one enum of
// zkfarm's typed errors, and the one table that says, for each code, its
// name, the wire code it travels as, the exit code of `zkfarm prove`,
// whether it claims that the job's input is bad and whether the partition
// is retried on another worker.
//
// Every boundary asks this table: the prover throws prover::Error with a
// code (prover/prover_error.h), `zkfarm prove` exits with exit_code(), a
// worker reports to_wire() (schema/wire_model.h) in its TaskError, the
// coordinator reads it back with error_from_wire(), decides with
// claims_bad_input() and retried_elsewhere() (coordinator/scheduler.h), and
// writes error_name() into job:<id> "error_code", the job events and the
// `code` label of the job and partition metrics. No Cap'n Proto here: the
// prover and the CLI's local commands use this header without it.
//
// Names are the camelCase names of schema/zkfarm.capnp ErrorCode for the
// codes a worker reports, plus the prover's own (badCircuit, noDevice: they
// travel as artifactChecksum and deviceFault) and the coordinator's own
// (invalidJob, duplicateId, setAside, quotaExceeded, invalidProof,
// taskTimeout, deadlineExceeded: they never travel, so the Cap'n Proto enum
// has none of them). A code that travels under its own
// name is what error_from_wire() returns for that wire code.
#pragma once

#include <optional>
#include <string_view>

namespace zkfarm {

enum class ErrorCode {
  // The job's input is wrong: retrying cannot help.
  kInvalidJob,          // job JSON does not parse or validate
  kDuplicateId,         // a queue entry names the id of another job
  kUnknownCircuit,      // circuit not registered (or not in the artifact store)
  kBadWitness,          // unparseable .wtns, a value >= r, or witness[0] != 1
  kWitnessLength,       // witness length differs from the circuit's signals
  kUnsatisfied,         // a constraint fails, or proofs from two workers fail verification
  kWrongCurve,          // the witness's field is not the circuit's
  kBadInput,            // the circuit's witness generator refused a partition's input
  kWitnessChecksum,     // the witness's bytes differ from the job's sha256 or size
  // The worker or its environment failed: another worker may succeed.
  kBadCircuit,          // the circuit's files are malformed or disagree (zkey, PCE, r1cs)
  kNoDevice,            // the CUDA ordinal is not visible, or the build has no CUDA
  kWitnessUnavailable,  // the witness reference could not be read
  kArtifactChecksum,    // an artifact on disk does not match its hash
  kOutOfMemory,         // host, pinned or device memory, even after evicting circuits
  kDeviceFault,         // any other CUDA error
  kInternal,            // anything else (a bug)
  kInvalidProof,        // a worker's proof failed verification
  kTaskTimeout,         // a worker held a task past the task timeout
  // The job's life.
  kCancelled,           // cancelled by request (or a task cancelled by the coordinator)
  kDeadlineExceeded,    // the job's deadline passed
  kSetAside,            // its queue entry crashed the coordinator's intake repeatedly
  kQuotaExceeded,       // over a quota of its tenant (coordinator/admission.h)
  // Protocol-level codes (Reject; a worker may wrongly put one in a TaskError).
  kProtocolVersion,
  kMalformedMessage,
  kUnknownSession,
  kShuttingDown,
  kWorkerIdTaken,
  kUnknown,
};

// "invalidJob", "badWitness", ... (never empty).
std::string_view error_name(ErrorCode code);
// The code named `name`, or nullopt for a name that is not one.
std::optional<ErrorCode> parse_error_code(std::string_view name);

// The name of the wire code `code` travels as (error_name() but for
// badCircuit -> "artifactChecksum", noDevice -> "deviceFault"; "internal"
// for the coordinator's own codes, which never travel).
std::string_view wire_name(ErrorCode code);

// `zkfarm prove`'s exit code: 2 when the input files (or the --device given)
// are wrong, 3 when the machine failed and running again, or elsewhere, may
// succeed. quotaExceeded is 2: the request is over what its tenant may ask,
// nothing failed (a script that retries on 3 must not hammer the farm).
int exit_code(ErrorCode code);

// True for codes that say the job's input is bad (bad witness, wrong length,
// unsatisfied, wrong curve, a refused input, a witness whose bytes differ
// from its sha256). Such a claim by one worker fails the job only once it is
// confirmed (coordinator/scheduler.h: "claims that the input is bad").
bool claims_bad_input(ErrorCode code);

// True for codes that, reported for a task, count a failed attempt and send
// the partition to another worker (up to the job's max attempts): the
// worker's own failures. False for bad-input claims, cancelled (requeued
// without counting) and the codes that end a job.
bool retried_elsewhere(ErrorCode code);

}  // namespace zkfarm
