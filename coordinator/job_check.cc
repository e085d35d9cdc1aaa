// job_check.cc -- see job_check.h.
#include "coordinator/job_check.h"

#include <stdexcept>

#include "cluster/witness_access.h"
#include "kernels/curves.h"
#include "witgen/witness_generator.h"

namespace zkfarm {

namespace {

// The public inputs of an input partition, written into `out` (public_bytes
// of zeros): those the circuit's public input map takes from the input;
// the outputs stay zeros until the worker reports them with the proof.
void input_public_inputs(const std::string& input_json, const std::vector<std::optional<witgen::PublicInputRef>>& map,
                         CurveId curve, std::size_t n8, std::uint8_t* out) {
  const std::vector<std::string> values = witgen::public_input_values(input_json, map);
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (map[k] == std::nullopt) continue;
    dispatch_curve(curve, [&](auto c) { decltype(c)::Fr::from_decimal(values[k]).to_le_bytes(out + k * n8); });
  }
}

// check_job(), or with read_witness null the same checks with every witness
// partition skipped (its public inputs left as zeros).
std::variant<PreparedJob, JobCheckFailure> check_partitions(const JobSpec& spec,
                                                             const std::optional<CircuitInfo>& circuit,
                                                             double now_unix, const WitnessReader* read_witness) {
  using Failure = JobCheckFailure;
  if (!circuit)
    return Failure{ErrorCode::kUnknownCircuit,
                   "unknown circuit " + spec.circuit + ": register its zkey with `zkfarm circuit add` first"};
  if (spec.deadline_unix && *spec.deadline_unix < now_unix)
    return Failure{ErrorCode::kDeadlineExceeded, "deadline passed before the job started"};
  PreparedJob job;
  job.spec = spec;
  job.circuit = *circuit;
  const std::size_t n8 = scalar_field_bytes(circuit->curve);
  job.public_bytes = std::size_t(circuit->num_public) * n8;
  job.public_inputs.reserve(job.public_bytes * spec.partitions.size());
  // Input partitions: the public inputs come from the input itself (the
  // circuit's public input map), so that a worker's report can only supply
  // the outputs, which the proof then binds to these inputs.
  std::optional<std::vector<std::optional<witgen::PublicInputRef>>> public_map;
  if (!circuit->witgen_public_map.empty()) {
    try {
      public_map = witgen::parse_public_input_map(circuit->witgen_public_map);
    } catch (const std::invalid_argument& e) {
      return Failure{ErrorCode::kUnknownCircuit, "circuit " + spec.circuit + ": record damaged: " + e.what()};
    }
    if (public_map->size() != circuit->num_public)
      return Failure{ErrorCode::kUnknownCircuit,
                     "circuit " + spec.circuit + ": record damaged: its public input map has " +
                         std::to_string(public_map->size()) + " entries for " +
                         std::to_string(circuit->num_public) + " public signals"};
    for (const auto& entry : *public_map) job.public_from_input.push_back(entry.has_value());
  }
  for (std::size_t i = 0; i < spec.partitions.size(); ++i) {
    const WitnessRef& ref = spec.partitions[i];
    const std::string partition = "partition " + std::to_string(i);
    const std::string where = partition + " (" + ref.describe() + ")";
    if (ref.kind == WitnessRef::Kind::kInput) {
      // The worker that proves it computes the witness, and reports its
      // public signals with the proof; until then they are zeros here.
      if (!circuit->has_witness_generator())
        return Failure{ErrorCode::kInvalidJob,
                       partition + " carries an input but circuit " + spec.circuit +
                           " has no witness generator (register it with `zkfarm circuit add --witness-generator DIR`)"};
      const std::size_t slot = job.public_inputs.size();
      job.public_inputs.resize(slot + job.public_bytes);
      try {
        witgen::check_input_values(ref.input_json, circuit->curve);
        if (public_map) input_public_inputs(ref.input_json, *public_map, circuit->curve, n8, &job.public_inputs[slot]);
      } catch (const std::invalid_argument& e) {
        return Failure{ErrorCode::kBadInput, partition + ": input " + e.what()};
      }
      continue;
    }
    // No witness of this circuit is longer than this; nothing larger is read.
    const std::uint64_t max_bytes = witness_max_bytes(circuit->num_vars);
    if (ref.size > max_bytes)
      return Failure{ErrorCode::kWitnessLength, where + ": the job says the witness has " + std::to_string(ref.size) +
                                                    " bytes, more than the " + std::to_string(max_bytes) +
                                                    " bytes of this circuit's witness (its .wtns header and " +
                                                    std::to_string(circuit->num_vars) + " values)"};
    if (read_witness == nullptr) {
      job.public_inputs.resize(job.public_inputs.size() + job.public_bytes);
      continue;
    }
    WitnessRead read = (*read_witness)(i, ref, circuit->num_public);
    if (auto* failure = std::get_if<Failure>(&read)) {
      // Unavailable, checksum and too-large reasons name the witness already.
      const bool named = failure->code == ErrorCode::kWitnessUnavailable ||
                         failure->code == ErrorCode::kWitnessChecksum || failure->code == ErrorCode::kWitnessLength;
      return Failure{failure->code, (named ? partition : where) + ": " + failure->message};
    }
    const WtnsSummary& summary = std::get<WtnsSummary>(read);
    if (summary.curve != circuit->curve)
      return Failure{ErrorCode::kWrongCurve, where + ": witness is for " + curve_display_name(summary.curve) +
                                                    " but circuit " + spec.circuit + " is " +
                                                    curve_display_name(circuit->curve)};
    if (summary.num_values != circuit->num_vars)
      return Failure{ErrorCode::kWitnessLength,
                     where + ": witness has " + std::to_string(summary.num_values) + " values but the circuit has " +
                         std::to_string(circuit->num_vars) + " signals"};
    if (summary.public_inputs.size() != job.public_bytes)
      return Failure{ErrorCode::kBadWitness, where + ": public inputs take " +
                                                    std::to_string(summary.public_inputs.size()) +
                                                    " bytes, expected " + std::to_string(job.public_bytes)};
    job.public_inputs.insert(job.public_inputs.end(), summary.public_inputs.begin(), summary.public_inputs.end());
  }
  return job;
}

}  // namespace

std::variant<PreparedJob, JobCheckFailure> check_job(const JobSpec& spec, const std::optional<CircuitInfo>& circuit,
                                                      double now_unix, const WitnessReader& read_witness) {
  return check_partitions(spec, circuit, now_unix, &read_witness);
}

std::optional<JobCheckFailure> check_job_before_reads(const JobSpec& spec, const std::optional<CircuitInfo>& circuit,
                                                      double now_unix) {
  auto checked = check_partitions(spec, circuit, now_unix, nullptr);
  if (auto* failure = std::get_if<JobCheckFailure>(&checked)) return std::move(*failure);
  return std::nullopt;
}

}  // namespace zkfarm
