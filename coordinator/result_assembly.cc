// result_assembly.cc -- see result_assembly.h.
#include "coordinator/result_assembly.h"

#include "base/hex.h"
#include "cluster/keys.h"

namespace zkfarm {
namespace {

nlohmann::json parse(const std::string& text, const char* what) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw ResultFormatError(std::string("verifier produced unparseable ") + what);
  return j;
}

}  // namespace

PartitionResult assemble_partition_result(std::uint32_t partition, const VerifiedProof& proof,
                                          const std::string& worker_id, const std::string& device_uuid,
                                          const StageSeconds& timings, const CoordinatorSeconds& coordinator) {
  PartitionResult r;
  r.partition = partition;
  r.proof = parse(proof.proof_json, "proof JSON");
  r.public_signals = parse(proof.public_json, "public JSON");
  r.worker = worker_id;
  r.device_uuid = device_uuid;
  r.timings = timings;
  r.coordinator = coordinator;
  if (!proof.compressed.empty()) r.compressed_hex = to_hex(proof.compressed);
  return r;
}

JobResult assemble_job_result(const std::string& job_id, const std::string& circuit, CurveId curve, double seconds,
                              std::vector<PartitionResult> partitions) {
  JobResult r;
  r.id = job_id;
  r.circuit = circuit;
  r.curve = curve_name(curve);
  r.state = kStateDone;
  r.seconds = seconds;
  if (curve == CurveId::kBls12381) {
    std::string compressed;
    for (const auto& p : partitions) compressed += p.compressed_hex;
    r.proofs_hex = std::move(compressed);
  }
  r.partitions = std::move(partitions);
  return r;
}

}  // namespace zkfarm
