// job_result.cc -- see job_result.h.
#include "cluster/job_result.h"

namespace zkfarm {

using json = nlohmann::json;

namespace {

const json& field(const json& object, const char* name, const std::string& where) {
  if (!object.is_object()) throw ResultFormatError(where + ": not a JSON object");
  auto it = object.find(name);
  if (it == object.end()) throw ResultFormatError(where + ": no \"" + name + "\"");
  return *it;
}

template <class T>
T get(const json& object, const char* name, const std::string& where) {
  try {
    return field(object, name, where).get<T>();
  } catch (const json::exception& e) {
    throw ResultFormatError(where + "." + name + ": " + e.what());
  }
}

double optional_number(const json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_number() ? it->get<double>() : 0.0;
}

}  // namespace

json to_json(const PartitionResult& r) {
  json entry = {{"partition", r.partition},
                {"proof", r.proof},
                {"public", r.public_signals},
                {"worker", r.worker},
                {"device_uuid", r.device_uuid},
                {"timings",
                 {{"load_circuit", r.timings.load_circuit},
                  {"fetch_witness", r.timings.fetch_witness},
                  {"parse_witness", r.timings.parse_witness},
                  {"witness_check", r.timings.witness_check},
                  {"spmv", r.timings.spmv},
                  {"ntt", r.timings.ntt},
                  {"msm", r.timings.msm},
                  {"prove", r.timings.prove},
                  {"total", r.timings.total}}},
                {"coordinator",
                 {{"wait_s", r.coordinator.wait}, {"worker_s", r.coordinator.worker},
                  {"accept_s", r.coordinator.accept}}}};
  if (!r.compressed_hex.empty()) entry["compressed_hex"] = r.compressed_hex;
  return entry;
}

json to_json(const JobResult& r) {
  json partitions = json::array();
  for (const auto& p : r.partitions) partitions.push_back(to_json(p));
  json out = {{"id", r.id},       {"circuit", r.circuit},   {"curve", r.curve},
              {"state", r.state}, {"seconds", r.seconds},   {"partitions", std::move(partitions)}};
  if (r.proofs_hex) out["proofs_hex"] = *r.proofs_hex;
  return out;
}

PartitionResult partition_result_from_json(const json& entry) {
  PartitionResult r;
  const std::string where = "partition result";
  r.partition = get<std::uint32_t>(entry, "partition", where);
  r.proof = field(entry, "proof", where);
  r.public_signals = field(entry, "public", where);
  if (entry.contains("worker")) r.worker = get<std::string>(entry, "worker", where);
  if (entry.contains("device_uuid")) r.device_uuid = get<std::string>(entry, "device_uuid", where);
  if (auto it = entry.find("timings"); it != entry.end() && it->is_object()) {
    const json& t = *it;
    r.timings = {optional_number(t, "load_circuit"), optional_number(t, "fetch_witness"),
                 optional_number(t, "parse_witness"), optional_number(t, "witness_check"),
                 optional_number(t, "spmv"), optional_number(t, "ntt"), optional_number(t, "msm"),
                 optional_number(t, "prove"), optional_number(t, "total")};
  }
  if (auto it = entry.find("coordinator"); it != entry.end() && it->is_object())
    r.coordinator = {optional_number(*it, "wait_s"), optional_number(*it, "worker_s"),
                     optional_number(*it, "accept_s")};
  if (entry.contains("compressed_hex")) r.compressed_hex = get<std::string>(entry, "compressed_hex", where);
  return r;
}

PartitionResult parse_partition_result(std::string_view text) {
  json entry = json::parse(text, nullptr, false);
  if (entry.is_discarded()) throw ResultFormatError("partition result: not JSON");
  return partition_result_from_json(entry);
}

JobResult parse_job_result(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) throw ResultFormatError("job result: not JSON");
  const std::string where = "job result";
  JobResult r;
  r.id = get<std::string>(j, "id", where);
  r.circuit = get<std::string>(j, "circuit", where);
  r.curve = get<std::string>(j, "curve", where);
  r.state = get<std::string>(j, "state", where);
  r.seconds = get<double>(j, "seconds", where);
  const json& partitions = field(j, "partitions", where);
  if (!partitions.is_array()) throw ResultFormatError(where + ".partitions: not an array");
  for (const json& p : partitions) r.partitions.push_back(partition_result_from_json(p));
  if (j.contains("proofs_hex")) r.proofs_hex = get<std::string>(j, "proofs_hex", where);
  return r;
}

}  // namespace zkfarm
