// artifacts.cc -- see artifacts.h.
#include "cluster/artifacts.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "formats/curve_id.h"

namespace zkfarm {

namespace {
// The circuit record of a layout's namespace: the farm's (<p>circuit:<id>)
// for the default tenant, a tenant's own (<tp>circuit:<id>) for a tenant's.
std::string record_key(const KeyLayout& keys, const std::string& id) {
  return keys.tenant().empty() ? keys.circuit(id) : keys.tenant_circuit(id);
}
std::string record_set(const KeyLayout& keys) {
  return keys.tenant().empty() ? keys.circuits() : keys.tenant_circuits();
}
}  // namespace

std::optional<CircuitInfo> load_circuit_info(RedisClient& redis, const KeyLayout& keys,
                                             const std::string& id) {
  const std::string key = record_key(keys, id);
  RedisReply reply = redis.command({"HGETALL", key});
  const auto& items = reply.as_array();
  if (items.empty()) return std::nullopt;
  CircuitInfo info;
  info.id = id;
  bool have_curve = false;
  auto number = [&](const std::string& field, const std::string& text) -> std::uint64_t {
    try {
      std::size_t used = 0;
      unsigned long long v = std::stoull(text, &used);
      if (used != text.size()) throw std::invalid_argument(text);
      return v;
    } catch (const std::exception&) {
      throw std::runtime_error("circuit record " + key + ": bad " + field + " '" + text + "'");
    }
  };
  for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
    const std::string& field = items[i].as_string();
    const std::string& value = items[i + 1].as_string();
    if (field == "curve") {
      if (value == "bn128") info.curve = CurveId::kBn254;
      else if (value == "bls12381") info.curve = CurveId::kBls12381;
      else throw std::runtime_error("circuit record " + key + ": unknown curve '" + value + "'");
      have_curve = true;
    } else if (field == "num_vars") {
      info.num_vars = static_cast<std::uint32_t>(number(field, value));
    } else if (field == "num_public") {
      info.num_public = static_cast<std::uint32_t>(number(field, value));
    } else if (field == "domain_size") {
      info.domain_size = static_cast<std::uint32_t>(number(field, value));
    } else if (field == "zkey_bytes") {
      info.zkey_bytes = number(field, value);
    } else if (field == "pce_has_c") {
      info.pce_has_c = value == "1";
    } else if (field == "zkey") {
      info.zkey_path = value;
    } else if (field == "pce") {
      info.pce_path = value;
    } else if (field == "vk") {
      info.vk_path = value;
    } else if (field == "vk_sha256") {
      info.vk_sha256 = value;
    } else if (field == "witgen") {
      info.witgen_path = value;
    } else if (field == "witgen_sha256") {
      info.witgen_sha256 = value;
    } else if (field == "witgen_dat_sha256") {
      info.witgen_dat_sha256 = value;
    } else if (field == "witgen_public_map") {
      info.witgen_public_map = value;
    } else if (field == "registered_by") {
      info.registered_by = value;
    } else if (field == "files") {
      const auto bad = [&](const std::string& why) {
        return std::runtime_error("circuit record " + key + ": bad files list: " + why);
      };
      nlohmann::json list = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
      if (!list.is_array()) throw bad("not a JSON array");
      for (const auto& entry : list) {
        if (!entry.is_object() || !entry.contains("path") || !entry["path"].is_string()) throw bad("an entry without a path");
        ArtifactFile file;
        file.path = entry["path"].get<std::string>();
        // Relative, inside the store: no leading '/', no '..' component.
        if (file.path.empty() || file.path[0] == '/' || ("/" + file.path + "/").find("/../") != std::string::npos ||
            file.path.find('\0') != std::string::npos)
          throw bad("path '" + file.path + "' is not inside the store");
        if (entry.contains("sha256")) {
          if (!entry["sha256"].is_string() || !is_valid_circuit_id(entry["sha256"].get<std::string>()))
            throw bad(file.path + ": sha256 is not 64 lowercase hex digits");
          file.sha256 = entry["sha256"].get<std::string>();
        }
        if (entry.contains("executable")) file.executable = entry["executable"] == true;
        if (entry.contains("bytes")) {
          if (!entry["bytes"].is_number_unsigned()) throw bad(file.path + ": bytes is not a size");
          file.bytes = entry["bytes"].get<std::uint64_t>();
        }
        info.files.push_back(std::move(file));
      }
    }
  }
  if (!have_curve || info.num_vars == 0 || info.zkey_path.empty() || info.pce_path.empty() ||
      info.vk_path.empty())
    throw std::runtime_error("circuit record " + key + " is incomplete");
  return info;
}

namespace {

// A tenant's own record of circuit id (<tp>circuit:<id>), as its jobs may
// use it: written by the tenant, so trusted for nothing a worker would run
// or read beyond the circuit's own files (whose hashes the workers check).
// nullopt when the tenant has none; runtime_error for one that names a
// witness generator or other files.
std::optional<CircuitInfo> load_tenant_own_circuit(RedisClient& redis, const KeyLayout& tenant_keys,
                                                   const std::string& id) {
  std::optional<CircuitInfo> own = load_circuit_info(redis, tenant_keys, id);
  if (!own) return std::nullopt;
  const std::string record = tenant_keys.tenant_circuit(id);
  if (own->has_witness_generator() || !own->witgen_sha256.empty())
    throw std::runtime_error("circuit record " + record +
                             " names a witness generator: only the farm's admin registers generators");
  if (own->zkey_path != ArtifactStore::zkey_relative(id) || own->pce_path != ArtifactStore::pce_relative(id) ||
      own->vk_path != ArtifactStore::vk_relative(id))
    throw std::runtime_error("circuit record " + record + " names files outside the circuit's directory " + id + "/");
  for (const ArtifactFile& file : own->files)
    if (file.executable || (file.path != own->zkey_path && file.path != own->pce_path && file.path != own->vk_path))
      throw std::runtime_error("circuit record " + record + " lists a file that is not the circuit's key, PCE or "
                               "verifying key: " + file.path);
  own->witgen_public_map.clear();
  return own;
}

}  // namespace

std::optional<CircuitInfo> load_visible_circuit(RedisClient& redis, const KeyLayout& keys, const std::string& id) {
  if (keys.tenant().empty()) return load_circuit_info(redis, keys, id);
  if (std::optional<CircuitInfo> own = load_tenant_own_circuit(redis, keys, id)) return own;
  const KeyLayout farm(keys.prefix());
  const RedisReply shared = redis.transaction({{"SISMEMBER", keys.circuit_tenants(id), keys.tenant()},
                                               {"SISMEMBER", keys.circuit_tenants(id), "*"}});
  const auto& a = shared.as_array();
  if (a.at(0).as_integer() != 1 && a.at(1).as_integer() != 1) return std::nullopt;
  return load_circuit_info(redis, farm, id);
}

std::optional<CircuitInfo> load_task_circuit(RedisClient& redis, const KeyLayout& farm_keys, const std::string& tenant,
                                             const std::string& id) {
  const KeyLayout farm(farm_keys.prefix());
  if (tenant.empty()) return load_circuit_info(redis, farm, id);
  if (std::optional<CircuitInfo> own = load_tenant_own_circuit(redis, farm.for_tenant(tenant), id)) return own;
  return load_circuit_info(redis, farm, id);
}

std::vector<ArtifactFile> circuit_files(const CircuitInfo& info) {
  if (!info.files.empty()) return info.files;
  return {{info.zkey_path, info.id, info.zkey_bytes}, {info.pce_path, "", 0}, {info.vk_path, info.vk_sha256, 0}};
}

namespace {

std::string files_json(const CircuitInfo& info) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& file : info.files) {
    nlohmann::json entry = {{"path", file.path}};
    if (!file.sha256.empty()) entry["sha256"] = file.sha256;
    if (file.bytes > 0) entry["bytes"] = file.bytes;
    if (file.executable) entry["executable"] = true;
    list.push_back(std::move(entry));
  }
  return list.dump();
}

}  // namespace

void store_circuit_info(RedisClient& redis, const KeyLayout& keys, const CircuitInfo& info) {
  std::vector<std::vector<std::string>> commands = {
      // A circuit added again without a generator keeps none.
      {"HDEL", record_key(keys, info.id), "witgen", "witgen_sha256", "witgen_dat_sha256", "witgen_public_map"},
      {"HSET", record_key(keys, info.id), "curve", curve_name(info.curve), "num_vars",
       std::to_string(info.num_vars), "num_public", std::to_string(info.num_public), "domain_size",
       std::to_string(info.domain_size), "zkey_bytes", std::to_string(info.zkey_bytes), "pce_has_c",
       info.pce_has_c ? "1" : "0", "zkey", info.zkey_path, "pce", info.pce_path, "vk", info.vk_path, "vk_sha256",
       info.vk_sha256, "files", files_json(info)},
      {"SADD", record_set(keys), info.id},
  };
  // Who registered it first stays (farm_api.h: only they may change its
  // witness generator).
  if (!info.registered_by.empty())
    commands.push_back({"HSETNX", record_key(keys, info.id), "registered_by", info.registered_by});
  if (info.has_witness_generator())
    commands.push_back({"HSET", record_key(keys, info.id), "witgen", info.witgen_path, "witgen_sha256",
                        info.witgen_sha256, "witgen_dat_sha256", info.witgen_dat_sha256});
  if (info.has_witness_generator() && !info.witgen_public_map.empty())
    commands.push_back({"HSET", record_key(keys, info.id), "witgen_public_map", info.witgen_public_map});
  redis.transaction(commands);
}

}  // namespace zkfarm
