// prover_error.cc -- see prover_error.h.
#include "prover/prover_error.h"

namespace zkfarm::prover {
namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitMachineFailed = 3;

}  // namespace

const char* kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kWrongCurve: return "wrongCurve";
    case ErrorKind::kWitnessLength: return "witnessLength";
    case ErrorKind::kBadWitness: return "badWitness";
    case ErrorKind::kUnsatisfied: return "unsatisfied";
    case ErrorKind::kUnknownCircuit: return "unknownCircuit";
    case ErrorKind::kBadCircuit: return "badCircuit";
    case ErrorKind::kWitnessUnavailable: return "witnessUnavailable";
    case ErrorKind::kNoDevice: return "noDevice";
    case ErrorKind::kOutOfMemory: return "outOfMemory";
    case ErrorKind::kDeviceFault: return "deviceFault";
    case ErrorKind::kCancelled: return "cancelled";
    case ErrorKind::kInternal: return "internal";
  }
  return "internal";
}

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kWrongCurve:
    case ErrorKind::kWitnessLength:
    case ErrorKind::kBadWitness:
    case ErrorKind::kUnsatisfied:
    case ErrorKind::kUnknownCircuit:
    case ErrorKind::kBadCircuit:
    case ErrorKind::kNoDevice:
      return kExitBadInput;
    case ErrorKind::kWitnessUnavailable:
    case ErrorKind::kOutOfMemory:
    case ErrorKind::kDeviceFault:
    case ErrorKind::kCancelled:
    case ErrorKind::kInternal:
      return kExitMachineFailed;
  }
  return kExitMachineFailed;
}

}  // namespace zkfarm::prover
