// job_fuzz.cc -- libFuzzer target for the job JSON parser (schema/job.h).
//
// The input is what a client LPUSHes onto a queue: the coordinator runs
// parse_job on it (extract_job_id when that fails) and stores spec.to_json().
// Contract checked here:
//   - parse_job either returns a spec or throws JobError; nothing else
//     (another exception, a sanitizer report, a stack overflow) is allowed;
//   - a parsed spec re-encodes with to_json() and parses back to the same
//     spec (ids, circuit, priority, deadline, witnesses, metadata);
//   - extract_job_id never throws, and an id it returns is a valid job id;
//   - base64_decode throws JobError or returns bytes that re-encode and
//     decode to themselves; parse_witness_url throws JobError or returns a
//     reference of the kind its scheme names.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "schema/job.h"

namespace {

bool same_witness(const zkfarm::WitnessRef& a, const zkfarm::WitnessRef& b) {
  return a.kind == b.kind && a.location == b.location && a.inline_bytes == b.inline_bytes;
}

bool same_spec(const zkfarm::JobSpec& a, const zkfarm::JobSpec& b) {
  if (a.id != b.id || a.circuit != b.circuit || a.priority != b.priority || a.deadline_unix != b.deadline_unix ||
      a.metadata_json != b.metadata_json || a.partitions.size() != b.partitions.size())
    return false;
  for (std::size_t i = 0; i < a.partitions.size(); ++i)
    if (!same_witness(a.partitions[i], b.partitions[i])) return false;
  return true;
}

void check_job(std::string_view text, bool require_id) {
  zkfarm::JobSpec spec;
  try {
    spec = zkfarm::parse_job(text, require_id);
  } catch (const zkfarm::JobError&) {
    return;
  }
  if (require_id && !zkfarm::is_valid_job_id(spec.id)) std::abort();
  if (!zkfarm::is_valid_circuit_id(spec.circuit)) std::abort();
  if (spec.partitions.empty() || spec.partitions.size() > zkfarm::kMaxPartitions) std::abort();
  for (const auto& p : spec.partitions) (void)p.describe();
  // What the coordinator stores must parse back to the same job.
  const std::string stored = spec.to_json();
  zkfarm::JobSpec again;
  try {
    again = zkfarm::parse_job(stored, require_id);
  } catch (const zkfarm::JobError&) {
    std::abort();
  }
  if (!same_spec(spec, again)) std::abort();
  if (again.to_json() != stored) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_job(text, /*require_id=*/true);
  check_job(text, /*require_id=*/false);

  if (auto id = zkfarm::extract_job_id(text); id && !zkfarm::is_valid_job_id(*id)) std::abort();

  try {
    auto bytes = zkfarm::base64_decode(text);
    if (zkfarm::base64_decode(zkfarm::base64_encode(bytes)) != bytes) std::abort();
  } catch (const zkfarm::JobError&) {
  }

  try {
    auto ref = zkfarm::parse_witness_url(text, "fuzz");
    const bool file = text.rfind("file://", 0) == 0;
    if ((ref.kind == zkfarm::WitnessRef::Kind::kFile) != file) std::abort();
    if (ref.kind == zkfarm::WitnessRef::Kind::kInline) std::abort();
  } catch (const zkfarm::JobError&) {
  }
  return 0;
}
