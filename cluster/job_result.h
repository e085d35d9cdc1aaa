// job_result.h -- the result of a done job (<prefix>job:<id>:result, printed
// by `zkfarm result`): one typed structure written by the coordinator and
// read by the CLI, with its JSON form defined here only.
//
//   {"id": "porep-42", "circuit": "<64 hex>", "curve": "bn128" | "bls12381",
//    "state": "done", "seconds": 12.5,        time from start to the last proof
//    "partitions": [PartitionResult, ...],    in partition order
//    "proofs_hex": "..."}                     BLS12-381 only: every partition's
//                                             192-byte compressed proof, in order
//
// A PartitionResult is also what the coordinator stores per verified
// partition (<prefix>job:<id>:proofs), so a resumed job keeps it:
//
//   {"partition": 3, "proof": {snarkjs proof.json}, "public": [snarkjs public.json],
//    "worker": "host-a/gpu0", "device_uuid": "GPU-...",
//    "timings": {"load_circuit": s, "fetch_witness": s, "parse_witness": s,
//                "witness_check": s, "spmv": s, "ntt": s, "msm": s, "prove": s,
//                "total": s},                    as the worker measured them
//    "coordinator": {"wait_s": s, "worker_s": s, "accept_s": s},
//    "compressed_hex": "..."}                    BLS12-381 only
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zkfarm {

// Seconds per stage, as the worker measured them (schema StageTimings).
struct StageSeconds {
  double load_circuit = 0, fetch_witness = 0, parse_witness = 0, witness_check = 0;
  double spmv = 0, ntt = 0, msm = 0, prove = 0, total = 0;
};

// Where a partition's time went as the coordinator saw it: queued (pending ->
// dispatched), at the worker (dispatched -> result), accepting it (result ->
// verified).
struct CoordinatorSeconds {
  double wait = 0, worker = 0, accept = 0;
};

struct PartitionResult {
  std::uint32_t partition = 0;
  nlohmann::json proof;           // snarkjs proof.json
  nlohmann::json public_signals;  // snarkjs public.json
  std::string worker, device_uuid;
  StageSeconds timings;
  CoordinatorSeconds coordinator;
  std::string compressed_hex;     // BLS12-381: the 192-byte Filecoin encoding, hex; else ""
};

struct JobResult {
  std::string id, circuit, curve, state;
  double seconds = 0;
  std::vector<PartitionResult> partitions;
  std::optional<std::string> proofs_hex;  // BLS12-381 only
};

// JSON forms (see the file comment). The readers throw ResultFormatError
// naming the field that is missing or of the wrong type.
class ResultFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
nlohmann::json to_json(const PartitionResult& result);
nlohmann::json to_json(const JobResult& result);
PartitionResult partition_result_from_json(const nlohmann::json& json);
PartitionResult parse_partition_result(std::string_view text);
JobResult parse_job_result(std::string_view text);

}  // namespace zkfarm
