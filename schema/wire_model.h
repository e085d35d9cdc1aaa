// wire_model.h -- the one mapping between zkfarm's model (schema/job.h,
// schema/error_code.h) and its wire form (schema/zkfarm.capnp): error
// codes, witness references and tasks. The coordinator encodes tasks and
// decodes task errors here, the worker decodes tasks and encodes errors
// here; neither daemon names a wire enumerant or a WitnessRef member itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "formats/curve_id.h"
#include "schema/error_code.h"
#include "schema/job.h"
#include "schema/zkfarm.capnp.h"

namespace zkfarm {

// The wire code `code` travels as (error_code.h: wire_name). Never throws.
wire::ErrorCode to_wire(ErrorCode code);
// The model code a wire code stands for: the code of the same name (so
// artifactChecksum is kArtifactChecksum, never kBadCircuit); kUnknown for a
// value this build does not know.
ErrorCode error_from_wire(wire::ErrorCode code);

// Fills `out` (a WitnessRef builder) from `ref`.
void to_wire(const WitnessRef& ref, wire::WitnessRef::Builder out);
// The witness reference `in` carries; nullopt when its union names a member
// this build does not know (schema/messages.h: decode() already drops such
// a message).
std::optional<WitnessRef> witness_from_wire(wire::WitnessRef::Reader in);

// One partition of a job as the coordinator sends it to a worker.
struct TaskSpec {
  std::uint64_t task_id = 0;  // unique per coordinator session
  std::string job_id;
  std::uint32_t partition = 0;
  std::uint32_t attempt = 0;  // failed attempts so far
  std::string circuit_id;
  std::optional<CurveId> curve;  // decoded: nullopt for a value this build does not know
  WitnessRef witness;
  std::optional<double> deadline_unix;  // seconds (sent as whole ms)
  // Input partitions: the sha256 of the circuit's witness generator and of
  // its .dat ("" for witness partitions).
  std::string witgen_sha256, witgen_dat_sha256;
  // The registered tenant whose job it is ("" for the default tenant): what
  // the worker confines the task's witnesses to and reads the circuit record
  // of (WitnessPolicy::tenant_policy in cluster/witness_access.h,
  // load_task_circuit in cluster/artifacts.h).
  std::string tenant;
};

// The Task envelope (one ZeroMQ frame) for `task`.
std::string encode_task(const TaskSpec& task);
// The task a decoded Task message carries; nullopt when its witness is of a
// kind this build does not know.
std::optional<TaskSpec> task_from_wire(wire::Task::Reader in);
// Only its ids (task, job, circuit, partition, attempt): what an answer to
// the task needs whatever its witness (task_from_wire starts from them).
TaskSpec task_ids_from_wire(wire::Task::Reader in);

}  // namespace zkfarm
