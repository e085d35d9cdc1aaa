// job_check.h -- what intake decides about a claimed job, without Redis.
//
// check_job() takes a parsed job, its circuit record (as read from Redis, or
// nothing) and a way to read each witness's summary (header, length, public
// inputs), and returns the job prepared for the scheduler or the first
// problem as a typed failure naming the partition. It performs no I/O of its
// own: Intake::check_raw reads the record and the witnesses (only their
// first bytes: read_witness_summary) and keeps claim, dedupe and cancel; the
// unit test calls it directly. The checks, in order: the circuit exists and
// its record is sound, the deadline has not passed, then each partition in
// turn (an input: the circuit has a witness generator and the input's values
// are in the field; a witness: readable, of the circuit's curve and length,
// with num_public public inputs).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>

#include "cluster/artifacts.h"
#include "coordinator/prepared_job.h"
#include "formats/wtns.h"
#include "schema/error_code.h"
#include "schema/job.h"

namespace zkfarm {

// Why a job cannot run: the code recorded in Redis and the message users see.
struct JobCheckFailure {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

// A witness's summary, or why it could not be read: kWitnessUnavailable,
// kWitnessChecksum or kBadWitness with the reason (check_job adds the
// partition).
using WitnessRead = std::variant<WtnsSummary, JobCheckFailure>;
// Reads the summary of the witness of partition `partition` (spec.partitions
// [partition] is `witness`) for a circuit of num_public public signals. May
// throw (a lost Redis connection): check_job lets it pass.
using WitnessReader =
    std::function<WitnessRead(std::size_t partition, const WitnessRef& witness, std::uint32_t num_public)>;

// Returns the job with spec, circuit, public_inputs, public_bytes and
// public_from_input set (the caller adds raw, submitted_at, stored_proofs and
// held_bytes), or the first failure: kUnknownCircuit (no record, or a damaged
// public input map), kDeadlineExceeded (spec.deadline_unix before now_unix),
// kInvalidJob (an input for a circuit without a witness generator), kBadInput
// (an input's values), what read_witness reports, kWrongCurve, kWitnessLength
// or kBadWitness (a public input count that differs from the circuit's).
// Witnesses after the first failing partition are not read.
std::variant<PreparedJob, JobCheckFailure> check_job(const JobSpec& spec, const std::optional<CircuitInfo>& circuit,
                                                      double now_unix, const WitnessReader& read_witness);

// The checks of check_job() that read no witness (the circuit and its
// record, the deadline, every input partition), in the same order. Returns
// the first failure, or nullopt when only the witnesses remain to be checked.
std::optional<JobCheckFailure> check_job_before_reads(const JobSpec& spec, const std::optional<CircuitInfo>& circuit,
                                                      double now_unix);

}  // namespace zkfarm
