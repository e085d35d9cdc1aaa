// wire_code.cc -- see wire_code.h.
#include "prover/wire_code.h"

namespace zkfarm::prover {

wire::ErrorCode wire_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kWrongCurve: return wire::ErrorCode::WRONG_CURVE;
    case ErrorKind::kWitnessLength: return wire::ErrorCode::WITNESS_LENGTH;
    case ErrorKind::kBadWitness: return wire::ErrorCode::BAD_WITNESS;
    case ErrorKind::kUnsatisfied: return wire::ErrorCode::UNSATISFIED;
    case ErrorKind::kUnknownCircuit: return wire::ErrorCode::UNKNOWN_CIRCUIT;
    case ErrorKind::kBadCircuit: return wire::ErrorCode::ARTIFACT_CHECKSUM;
    case ErrorKind::kWitnessUnavailable: return wire::ErrorCode::WITNESS_UNAVAILABLE;
    case ErrorKind::kNoDevice: return wire::ErrorCode::DEVICE_FAULT;
    case ErrorKind::kOutOfMemory: return wire::ErrorCode::OUT_OF_MEMORY;
    case ErrorKind::kDeviceFault: return wire::ErrorCode::DEVICE_FAULT;
    case ErrorKind::kCancelled: return wire::ErrorCode::CANCELLED;
    case ErrorKind::kInternal: return wire::ErrorCode::INTERNAL;
  }
  return wire::ErrorCode::INTERNAL;
}

}  // namespace zkfarm::prover
