// farm_api.cc -- see farm_api.h.
#include "cluster/farm_api.h"

#include <optional>
#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "base/digest.h"
#include "base/files.h"
#include "base/hex.h"
#include "cluster/groth16_glue.h"
#include "cluster/job_store.h"
#include "cluster/tenants.h"
#include "formats/pce.h"
#include "formats/r1cs.h"
#include "formats/snarkjs_json.h"
#include "formats/zkey.h"
#include "witgen/witness_generator.h"

namespace zkfarm::farm {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// "job-" and 24 random hex digits.
std::string random_id() {
  std::random_device rd;
  std::array<std::uint8_t, 12> bytes;
  for (auto& b : bytes) b = static_cast<std::uint8_t>(rd());
  return "job-" + to_hex(bytes);
}

double to_double(const std::string& s) {
  try {
    return s.empty() ? 0 : std::stod(s);
  } catch (const std::exception&) {
    return 0;
  }
}

std::uint32_t to_u32(const std::string& s) { return static_cast<std::uint32_t>(to_double(s)); }

// The sha256 of a file, or "" when it cannot be read.
std::string sha256_or_empty(const std::string& path) {
  try {
    return sha256_file_hex(path);
  } catch (const std::exception&) {
    return "";
  }
}

// The Redis user of this connection (ACL WHOAMI); "default" for a server
// without ACLs (before Redis 6) or one that refuses the question.
std::string redis_user(RedisClient& redis) {
  try {
    RedisReply reply = redis.command({"ACL", "WHOAMI"});
    if (!reply.as_string().empty()) return reply.as_string();
  } catch (const RedisError&) {
  }
  return "default";
}

}  // namespace

KeyLayout job_layout(RedisClient& redis, const FarmOptions& options) {
  const KeyLayout farm(options.prefix);
  const std::string tenant = tenant_of_user(farm, redis_user(redis));
  return tenant.empty() ? farm : farm.for_tenant(tenant);
}

std::string generator_change_refusal(const std::optional<CircuitInfo>& existing, const std::string& sha256,
                                     const std::string& dat_sha256, const std::string& user,
                                     const GeneratorPolicy& policy) {
  if (!existing) return "";
  const bool same = existing->has_witness_generator() && existing->witgen_sha256 == sha256 &&
                    existing->witgen_dat_sha256 == dat_sha256;
  if (same) return "";
  const std::string& owner = existing->registered_by;
  const bool is_owner = owner.empty() || owner == user;
  const std::string circuit = "circuit " + existing->id;
  if (!existing->has_witness_generator()) {
    if (is_owner) return "";
    return circuit + " was registered by Redis user '" + owner + "'; only that user may give it a witness generator "
           "(you are '" + user + "')";
  }
  const std::string what = circuit + " already has a witness generator (sha256 " + existing->witgen_sha256 +
                           ") and this one differs (sha256 " + sha256 + ")";
  if (!is_owner)
    return what + "; only its registrant, Redis user '" + owner + "', may replace it (you are '" + user + "')";
  if (!policy.replace)
    return what + "; nothing was changed: give --replace-witness-generator to replace it (jobs already taken in "
                  "keep the old generator's hashes and fail artifactChecksum)";
  return "";
}

CircuitInfo circuit_add(const FarmOptions& options, const std::string& zkey_path,
                        const std::optional<std::string>& r1cs_path,
                        const std::optional<std::string>& witness_generator_dir, const GeneratorPolicy& policy) {
  if (options.artifacts.empty()) throw FarmError("no artifact store given (--artifacts or ZKFARM_ARTIFACTS)");
  // A file that is not a Groth16 zkey fails here, naming it, before
  // anything is copied into the store.
  (void)zkey_curve(FileBytes::map(zkey_path));
  CircuitInfo info;
  info.id = sha256_file_hex(zkey_path);
  // The record as it is now, watched: a record changed by another
  // registration before ours is written aborts ours (EXEC fails).
  RedisClient redis(options.redis_url);
  const KeyLayout keys = job_layout(redis, options);
  if (!keys.tenant().empty() && witness_generator_dir)
    throw FarmError("tenant " + keys.tenant() + " may not register a witness generator: it is code that runs on "
                    "every worker host, registered by the farm's admin only");
  redis.command({"WATCH", keys.tenant().empty() ? keys.circuit(info.id) : keys.tenant_circuit(info.id)});
  const std::optional<CircuitInfo> existing = load_circuit_info(redis, keys, info.id);
  const std::string user = redis_user(redis);
  info.registered_by = existing && !existing->registered_by.empty() ? existing->registered_by : user;
  ArtifactStore store(options.artifacts);
  fs::create_directories(store.absolute(info.id));
  info.zkey_path = ArtifactStore::zkey_relative(info.id);
  info.pce_path = ArtifactStore::pce_relative(info.id);
  info.vk_path = ArtifactStore::vk_relative(info.id);
  const std::string zkey_dest = store.absolute(info.zkey_path);
  if (!fs::exists(zkey_dest) || sha256_file_hex(zkey_dest) != info.id) copy_file_atomically(zkey_path, zkey_dest);
  auto file = FileBytes::map(zkey_dest);
  info.curve = zkey_curve(file);
  info.zkey_bytes = file->bytes().size();
  std::string vk_text;
  std::optional<witgen::SignalCounts> r1cs_counts;
  dispatch_curve(info.curve, [&](auto curve) {
    using Curve = decltype(curve);
    using Fr = typename Curve::Fr;
    Zkey<Curve> zkey = parse_zkey<Curve>(file);
    info.sizes() = zkey.sizes();
    Pce<Fr> pce;
    if (r1cs_path) {
      auto r1cs = read_r1cs<Fr>(*r1cs_path);
      if (r1cs.num_wires != zkey.num_vars)
        throw FarmError(*r1cs_path + " has " + std::to_string(r1cs.num_wires) + " wires but " + zkey_path +
                        " has " + std::to_string(zkey.num_vars) + " signals: not the same circuit");
      r1cs_counts = witgen::SignalCounts{r1cs.num_pub_out, r1cs.num_pub_in, r1cs.num_prv_in};
      pce = pce_from_r1cs(r1cs);
    } else {
      pce = pce_from_zkey(zkey.coefficients, zkey.num_public);
    }
    info.pce_has_c = pce.has_c();
    save_pce(pce, store.absolute(info.pce_path));
    vk_text = verification_key_to_json<Curve>(zkey.verifying_key());
    return 0;
  });
  write_file_atomically(store.absolute(info.vk_path), vk_text);
  info.vk_sha256 = sha256_hex(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(vk_text.data()), vk_text.size()));
  if (witness_generator_dir) {
    // Built next to the final place, checked, then renamed into it: a
    // generator that fails its check, or may not replace the recorded one,
    // never touches the store.
    const std::string final_dir = store.absolute(ArtifactStore::witgen_dir_relative(info.id));
    const std::string staging = final_dir + ".new." + std::to_string(::getpid());
    const std::string staged = staging + "/" + witgen::kBinaryName;
    fs::remove_all(staging);
    std::string refusal;
    try {
      const witgen::GeneratorInfo generator = witgen::build_generator(*witness_generator_dir, staging);
      witgen::check_generator(generator, info.curve, info.num_vars, info.num_public,
                              r1cs_counts ? &*r1cs_counts : nullptr);
      info.witgen_public_map = witgen::public_input_map_json(witgen::public_input_map(generator, info.num_public));
      info.witgen_sha256 = sha256_file_hex(staged);
      info.witgen_dat_sha256 = sha256_file_hex(staged + ".dat");
      refusal = generator_change_refusal(existing, info.witgen_sha256, info.witgen_dat_sha256, user, policy);
    } catch (...) {
      fs::remove_all(staging);
      throw;
    }
    const bool unchanged = existing && existing->has_witness_generator() &&
                           existing->witgen_sha256 == info.witgen_sha256 &&
                           existing->witgen_dat_sha256 == info.witgen_dat_sha256 &&
                           sha256_or_empty(store.absolute(existing->witgen_path)) == info.witgen_sha256 &&
                           sha256_or_empty(store.absolute(existing->witgen_path) + ".dat") == info.witgen_dat_sha256;
    if (!refusal.empty() || unchanged) {
      fs::remove_all(staging);
      if (!refusal.empty()) throw FarmError(refusal);
    } else {
      fs::remove_all(final_dir);
      fs::rename(staging, final_dir);
    }
    info.witgen_path = ArtifactStore::witgen_relative(info.id);
  } else if (existing && existing->has_witness_generator()) {
    // Added again without one: the recorded generator stays.
    info.witgen_path = existing->witgen_path;
    info.witgen_sha256 = existing->witgen_sha256;
    info.witgen_dat_sha256 = existing->witgen_dat_sha256;
    info.witgen_public_map = existing->witgen_public_map;
  }
  // What a worker fetches (over HTTP when it has no store of its own).
  info.files = {{info.zkey_path, info.id, info.zkey_bytes},
                {info.pce_path, sha256_file_hex(store.absolute(info.pce_path)),
                 static_cast<std::uint64_t>(fs::file_size(store.absolute(info.pce_path)))},
                {info.vk_path, info.vk_sha256, vk_text.size()}};
  if (info.has_witness_generator()) {
    info.files.push_back({info.witgen_path, info.witgen_sha256,
                          static_cast<std::uint64_t>(fs::file_size(store.absolute(info.witgen_path))), true});
    info.files.push_back({info.witgen_path + ".dat", info.witgen_dat_sha256,
                          static_cast<std::uint64_t>(fs::file_size(store.absolute(info.witgen_path) + ".dat"))});
  }
  try {
    store_circuit_info(redis, keys, info);
  } catch (const RedisError& e) {
    if (std::string(e.what()).find("transaction aborted") == std::string::npos) throw;
    throw FarmError("circuit " + info.id + ": its record changed while this registration ran (another `zkfarm "
                    "circuit add`?); nothing was recorded: run it again");
  }
  return info;
}

std::string submit(const FarmOptions& options, std::string_view job_json) {
  JobSpec spec = parse_job(job_json, /*require_id=*/false);
  if (spec.id.empty()) spec.id = random_id();
  RedisClient redis(options.redis_url);
  const KeyLayout keys = job_layout(redis, options);
  // A tenant cannot read the farm's circuit records: the coordinator checks
  // that the tenant may use the circuit (unknownCircuit otherwise).
  const std::optional<CircuitInfo> circuit =
      keys.tenant().empty() ? load_circuit_info(redis, keys, spec.circuit) : std::nullopt;
  if (!circuit && keys.tenant().empty())
    throw FarmError("unknown circuit " + spec.circuit + ": register its zkey with `zkfarm circuit add` first");
  // Inputs: the same checks as the coordinator's intake, before anything is queued.
  for (std::size_t i = 0; circuit && i < spec.partitions.size(); ++i) {
    if (spec.partitions[i].kind != WitnessRef::Kind::kInput) continue;
    if (!circuit->has_witness_generator())
      throw FarmError("partitions[" + std::to_string(i) + "] carries an input but circuit " + spec.circuit +
                      " has no witness generator (register it with `zkfarm circuit add --witness-generator DIR`)");
    try {
      witgen::check_input_values(spec.partitions[i].input_json, circuit->curve);
    } catch (const std::invalid_argument& e) {
      throw FarmError("partitions[" + std::to_string(i) + "].input: " + e.what());
    }
  }
  JobStore store(redis, keys);
  std::string existing_state;
  if (!store.submit(spec, &existing_state))
    throw FarmError("a job with id " + spec.id + " already exists (" + existing_state +
                    "); nothing was submitted: choose another id");
  return spec.id;
}

bool JobStatus::terminal() const { return is_terminal_state(state); }

std::string JobStatus::to_json() const {
  json j = {{"id", id}, {"state", state}, {"circuit", circuit}, {"priority", priority},
            {"partitions", partitions}, {"proved", proved}, {"attempts", attempts},
            {"submitted_at", submitted_at}, {"started_at", started_at}, {"finished_at", finished_at}};
  if (!owner.empty()) j["coordinator"] = owner;
  if (!error.empty()) j["error"] = error;
  if (!error_code.empty()) j["error_code"] = error_code;
  if (state == "running") j["waiting_for_witness"] = waiting_for_witness;
  return j.dump();
}

std::optional<JobStatus> status(const FarmOptions& options, const std::string& id) {
  check_job_id(id, "job id");
  RedisClient redis(options.redis_url);
  const KeyLayout keys = job_layout(redis, options);
  RedisReply reply = redis.command({"HGETALL", keys.job(id)});
  const auto& a = reply.as_array();
  if (a.empty()) return std::nullopt;
  JobStatus s;
  s.id = id;
  for (std::size_t i = 0; i + 1 < a.size(); i += 2) {
    const std::string& k = a[i].as_string();
    const std::string& v = a[i + 1].as_string();
    if (k == JobStore::kState) s.state = v;
    else if (k == JobStore::kCircuit) s.circuit = v;
    else if (k == JobStore::kPriority) s.priority = v;
    else if (k == JobStore::kOwner) s.owner = v;
    else if (k == JobStore::kErrorCode) s.error_code = v;
    else if (k == JobStore::kError) s.error = v;
    else if (k == JobStore::kPartitions) s.partitions = to_u32(v);
    else if (k == JobStore::kProved) s.proved = to_u32(v);
    else if (k == JobStore::kAttempts) s.attempts = to_u32(v);
    else if (k == JobStore::kWaitingForWitness) s.waiting_for_witness = to_u32(v);
    else if (k == JobStore::kSubmittedAt) s.submitted_at = to_double(v);
    else if (k == JobStore::kStartedAt) s.started_at = to_double(v);
    else if (k == JobStore::kFinishedAt) s.finished_at = to_double(v);
  }
  return s;
}

std::optional<JobStatus> wait(const FarmOptions& options, const std::string& id, std::chrono::milliseconds timeout) {
  check_job_id(id, "job id");
  RedisClient redis(options.redis_url);
  const KeyLayout keys = job_layout(redis, options);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto s = status(options, id);
    if (!s || s->terminal()) return s;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return s;
    const auto block = std::min(left, std::chrono::milliseconds(1000));
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.3f", std::max<double>(0.01, block.count() / 1000.0));
    RedisReply r = redis.blocking_command({"BLPOP", keys.done(id), seconds}, block);
    if (!r.is_nil()) {
      // Put the marker back so other waiters (and later calls) see it too.
      redis.transaction({{"RPUSH", keys.done(id), r.as_array().at(1).as_string()},
                         {"EXPIRE", keys.done(id), std::to_string(std::max<long>(options.ttl_seconds, 60))}});
    }
  }
}

std::optional<std::string> result(const FarmOptions& options, const std::string& id) {
  check_job_id(id, "job id");
  RedisClient redis(options.redis_url);
  RedisReply r = redis.command({"GET", job_layout(redis, options).job_result(id)});
  if (r.is_nil()) return std::nullopt;
  return r.as_string();
}

std::string WorkerStatus::to_json() const {
  return json({{"id", id}, {"state", state}, {"host", host}, {"device", device}, {"device_uuid", device_uuid},
               {"coordinator", coordinator}, {"credits", credits}, {"tasks", tasks}, {"faults", faults},
               {"quarantined", quarantined}, {"last_seen", last_seen}, {"loaded", loaded}})
      .dump();
}

std::vector<WorkerStatus> workers(const FarmOptions& options) {
  RedisClient redis(options.redis_url);
  KeyLayout keys(options.prefix);
  RedisReply ids = redis.command({"SMEMBERS", keys.workers()});
  RedisReply quarantined = redis.command({"SMEMBERS", keys.quarantine()});
  std::vector<WorkerStatus> out;
  for (const auto& id_reply : ids.as_array()) {
    WorkerStatus w;
    w.id = id_reply.as_string();
    RedisReply h = redis.command({"HGETALL", keys.worker(w.id)});
    const auto& a = h.as_array();
    if (a.empty()) {
      redis.command({"SREM", keys.workers(), w.id});  // expired: forget it
      continue;
    }
    for (std::size_t i = 0; i + 1 < a.size(); i += 2) {
      const std::string& k = a[i].as_string();
      const std::string& v = a[i + 1].as_string();
      if (k == WorkerRecord::kState) w.state = v;
      else if (k == WorkerRecord::kHost) w.host = v;
      else if (k == WorkerRecord::kDevice) w.device = v;
      else if (k == WorkerRecord::kDeviceUuid) w.device_uuid = v;
      else if (k == WorkerRecord::kCoordinator) w.coordinator = v;
      else if (k == WorkerRecord::kLoaded) w.loaded = v;
      else if (k == WorkerRecord::kCredits) w.credits = to_u32(v);
      else if (k == WorkerRecord::kTasks) w.tasks = to_u32(v);
      else if (k == WorkerRecord::kFaults) w.faults = to_u32(v);
      else if (k == WorkerRecord::kLastSeen) w.last_seen = to_double(v);
    }
    for (const auto& q : quarantined.as_array()) w.quarantined = w.quarantined || q.as_string() == w.id;
    out.push_back(std::move(w));
  }
  return out;
}

std::string cancel(const FarmOptions& options, const std::string& id) {
  check_job_id(id, "job id");
  RedisClient redis(options.redis_url);
  JobStore store(redis, job_layout(redis, options));
  return store.cancel(id, options.ttl_seconds);
}

}  // namespace zkfarm::farm
