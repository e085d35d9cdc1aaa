// prover_error.h -- why a proof could not be made: one typed kind per cause,
// and the one place each kind is turned into a CLI exit code (what `zkfarm
// prove` returns). The wire code a worker reports is in wire_code.h (kept
// apart so that the prover and the CLI's local commands need no Cap'n Proto).
//
// The prover service (prover.h) throws prover::Error for every failure; the
// kind is decided where the failure happens, from the exception's type,
// never from its message. Callers at a boundary map it with exit_code() or
// wire_code() and pass the message on unchanged.
#pragma once

#include <stdexcept>
#include <string>

namespace zkfarm::prover {

enum class ErrorKind {
  // The witness is wrong for the circuit: the job's input, retrying cannot help.
  kWrongCurve,     // the witness's field is not the circuit's
  kWitnessLength,  // the witness has a different number of values than the circuit has signals
  kBadWitness,     // unparseable .wtns, a value >= r, or witness[0] != 1
  kUnsatisfied,    // a constraint fails (named when the PCE has C), or the proof fails verification
  // No circuit of that id in the farm's artifact store (the job names it).
  kUnknownCircuit,
  // The circuit's files are malformed or disagree with each other (zkey, PCE,
  // r1cs), or a farm artifact does not match its hash.
  kBadCircuit,
  // A farm worker could not read the witness reference (the store, Redis).
  kWitnessUnavailable,
  // The machine failed: another device or host may succeed.
  kNoDevice,      // the CUDA ordinal is not visible to this process, or the build has no CUDA
  kOutOfMemory,   // host, pinned or device memory, even after evicting other circuits
  kDeviceFault,   // any other CUDA error (after a sticky fault the process should restart)
  kCancelled,     // the caller's cancel flag was set before the proof started
  kInternal,      // anything else (a bug)
};

// "wrongCurve", "witnessLength", "badCircuit", ... for logs and metrics.
const char* kind_name(ErrorKind kind);

// `zkfarm prove`'s exit code: 2 when the input files (or the --device given)
// are wrong, 3 when the machine failed (memory, the device, a bug) and
// running again, or elsewhere, may succeed.
int exit_code(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace zkfarm::prover
