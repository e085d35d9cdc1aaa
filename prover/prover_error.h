// prover_error.h -- the exception the prover service throws: a typed code
// (schema/error_code.h, the one table of names, exit codes and wire codes)
// and a message.
//
// The prover service (prover.h) throws prover::Error for every failure; the
// code is decided where the failure happens, from the exception's type,
// never from its message. Callers at a boundary map it through the table --
// exit_code() for `zkfarm prove`, to_wire() (schema/wire_model.h) for a
// worker's TaskError -- and pass the message on unchanged.
#pragma once

#include <stdexcept>
#include <string>

#include "schema/error_code.h"

namespace zkfarm::prover {

// Error carries the code decided where the failure happened: the witness is
// wrong (kWrongCurve, kWitnessLength, kBadWitness, kUnsatisfied), the circuit
// (kUnknownCircuit, kBadCircuit), the witness reference could not be read
// (kWitnessUnavailable), or the machine failed (kNoDevice, kOutOfMemory,
// kDeviceFault, kCancelled, kInternal).
class Error : public std::runtime_error {
 public:
  Error(ErrorCode kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorCode kind() const { return kind_; }

 private:
  ErrorCode kind_;
};

}  // namespace zkfarm::prover
