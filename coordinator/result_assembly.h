// result_assembly.h -- a verified partition's entry and a done job's result
// (cluster/job_result.h), built from what the worker sent and the verifier
// produced. Pure functions: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/job_result.h"
#include "formats/curve_id.h"

namespace zkfarm {

// The verifier's products for one valid proof.
struct VerifiedProof {
  std::string proof_json;   // snarkjs proof.json
  std::string public_json;  // snarkjs public.json
  std::string compressed;   // BLS12-381: the 192-byte Filecoin encoding; else ""
};

// The entry stored for a verified partition. Throws ResultFormatError if the
// verifier's JSON does not parse (it always does: the verifier wrote it).
PartitionResult assemble_partition_result(std::uint32_t partition, const VerifiedProof& proof,
                                          const std::string& worker_id, const std::string& device_uuid,
                                          const StageSeconds& timings, const CoordinatorSeconds& coordinator);

// The result of a done job: its partitions in order and, for BLS12-381, every
// compressed proof concatenated (proofs_hex). `seconds`: start to last proof.
JobResult assemble_job_result(const std::string& job_id, const std::string& circuit, CurveId curve, double seconds,
                              std::vector<PartitionResult> partitions);

}  // namespace zkfarm
