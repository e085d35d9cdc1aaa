// wire_code.h -- the wire ErrorCode (schema/zkfarm.capnp) a worker reports
// for each prover::ErrorKind: the one mapping from kind to wire code.
#pragma once

#include "prover/prover_error.h"
#include "schema/zkfarm.capnp.h"

namespace zkfarm::prover {

// The wire code the coordinator acts on: wrongCurve, witnessLength,
// badWitness and unsatisfied are input errors (the job fails); the others
// make the coordinator retry the partition on another worker. kBadCircuit is
// artifactChecksum: the farm checked the artifacts when the circuit was
// registered, so a circuit that then fails to load is the worker's copy's
// fault.
wire::ErrorCode wire_code(ErrorKind kind);

}  // namespace zkfarm::prover
