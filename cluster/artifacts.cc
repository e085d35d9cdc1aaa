// artifacts.cc -- see artifacts.h.
#include "cluster/artifacts.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <system_error>

#include <nlohmann/json.hpp>

#include "base/digest.h"
#include "cluster/defaults.h"
#include "formats/curve_id.h"
#include "formats/wtns.h"

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

namespace {

// True when path (absolute, normalized) is root or lies below it.
bool is_under(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path.size() >= root.size() && path.compare(0, root.size(), root) == 0 &&
         (path.size() == root.size() || path[root.size()] == '/');
}

bool is_under_any(const std::string& path, const std::vector<std::string>& roots) {
  for (const auto& root : roots)
    if (is_under(path, root)) return true;
  return false;
}

// Absolute and lexically normal, without a trailing slash ("/a/b/../c/" -> "/a/c").
std::string lexically_absolute(const std::string& path) {
  std::string out = std::filesystem::path(path).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// The canonical path (realpath), or "" with errno set.
std::string canonical_path(const std::string& path) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (!resolved) return "";
  std::string out = resolved;
  std::free(resolved);
  return out;
}

// Opens a file:// witness inside the policy's roots. The same refusal,
// "not found under the witness roots", covers a path outside them, one
// that escapes them through `..` or a symlink, and a missing file, so a
// client learns nothing about paths it may not read.
int open_confined_file(const WitnessRef& ref, const WitnessPolicy& policy, std::uint64_t* size_out) {
  auto refuse = [&] {
    std::string roots;
    for (const auto& r : policy.configured_roots) roots += (roots.empty() ? "" : ", ") + r;
    if (roots.empty()) roots = "none configured";
    if (!policy.tenant.empty())
      return WitnessUnavailable("witness " + ref.describe() + ": no regular file at that path under tenant " +
                                policy.tenant + "'s witness directories (" + roots +
                                "); a tenant's file:// witnesses are read only under " + WitnessPolicy::kTenantsDir +
                                "/" + policy.tenant + "/ of each --witness-root");
    return WitnessUnavailable("witness " + ref.describe() + ": no regular file at that path under the witness roots (" +
                              roots + "); file:// witnesses are read only under --witness-root");
  };
  const std::string& path = ref.location;
  if (path.empty() || path[0] != '/') throw refuse();
  const std::string lexical = lexically_absolute(path);
  if (!is_under_any(lexical, policy.configured_roots) && !is_under_any(lexical, policy.roots)) throw refuse();
  const std::string resolved = canonical_path(path);
  if (resolved.empty() || !is_under_any(resolved, policy.roots)) throw refuse();
  std::uint64_t size = 0;
  int fd;
  try {
    fd = open_regular_file(resolved, &size, path);
  } catch (const FormatError& e) {
    throw WitnessUnavailable("cannot read witness " + ref.describe() + ": " + e.what());
  }
  // A directory on the way may have been swapped for a symlink since
  // realpath(): check what was actually opened.
  const std::string opened = canonical_path("/proc/self/fd/" + std::to_string(fd));
  if (opened.empty() || !is_under_any(opened, policy.roots)) {
    ::close(fd);
    throw refuse();
  }
  *size_out = size;
  return fd;
}

// The first min(n, size) bytes of a file:// witness and its size.
std::vector<std::uint8_t> read_confined_prefix(const WitnessRef& ref, const WitnessPolicy& policy, std::uint64_t n,
                                               std::uint64_t* size) {
  const int fd = open_confined_file(ref, policy, size);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(std::min(n, *size)));
  try {
    read_exact(fd, 0, bytes.data(), bytes.size(), ref.location);
  } catch (const std::system_error& e) {
    ::close(fd);
    throw WitnessUnavailable("cannot read witness " + ref.describe() + ": " + e.what());
  }
  ::close(fd);
  return bytes;
}

}  // namespace

WitnessPolicy make_witness_policy(const std::vector<std::string>& roots, const std::string& artifacts,
                                  const std::string& redis_key_prefix) {
  WitnessPolicy policy;
  policy.redis_key_prefix = redis_key_prefix;
  policy.http.urls = parse_url_policy({kDefaultWitnessUrlAllow});
  std::vector<std::string> configured = roots;
  if (configured.empty() && !artifacts.empty()) {
    const std::string store = lexically_absolute(std::filesystem::absolute(artifacts).string());
    const std::string parent = std::filesystem::path(store).parent_path().string();
    configured.push_back(parent.empty() || parent == "/" ? store : parent);
  }
  for (const auto& root : configured) {
    if (root.empty() || root[0] != '/')
      throw std::invalid_argument("--witness-root '" + root + "': must be an absolute path");
    const std::string canonical = canonical_path(root);
    if (canonical.empty() || !std::filesystem::is_directory(canonical))
      throw std::invalid_argument("--witness-root '" + root + "': not an existing directory");
    policy.configured_roots.push_back(lexically_absolute(root));
    policy.roots.push_back(canonical);
  }
  return policy;
}

WitnessPolicy WitnessPolicy::tenant_policy(const std::string& name) const {
  if (!tenant.empty()) throw std::logic_error("tenant_policy of tenant " + tenant + "'s policy: ask the farm's");
  WitnessPolicy out = *this;
  if (name.empty()) return out;
  // Validates the name (std::invalid_argument) before it becomes a path.
  const KeyLayout keys = KeyLayout(redis_key_prefix).for_tenant(name);
  out.tenant = name;
  out.redis_key_prefix = keys.job_prefix();
  const auto below = [&](const std::string& root) {
    return (root == "/" ? std::string() : root) + "/" + kTenantsDir + "/" + name;
  };
  for (std::string& root : out.roots) root = below(root);
  for (std::string& root : out.configured_roots) root = below(root);
  return out;
}

namespace {

// Throws WitnessUnavailable unless a redis:// witness names a key of this
// farm and there is a connection to read it with.
void check_redis_witness(const WitnessRef& ref, RedisClient* redis, const WitnessPolicy& policy) {
  if (ref.location.rfind(policy.redis_key_prefix, 0) != 0)
    throw WitnessUnavailable("witness " + ref.describe() + ": not a key of this farm (redis:// witnesses must start with '" +
                             policy.redis_key_prefix + "')");
  if (!redis) throw WitnessUnavailable("witness " + ref.describe() + ": no Redis connection configured");
}

WitnessTooLarge too_large(const WitnessRef& ref, std::uint64_t found, std::uint64_t max_bytes) {
  return WitnessTooLarge("witness " + ref.describe() + ": " + std::to_string(found) + " bytes, more than the " +
                         std::to_string(max_bytes) + " bytes of this circuit's witness (its .wtns header and values)");
}

// The limits of one witness transfer: the policy's, capped at max_bytes.
HttpLimits witness_limits(const WitnessPolicy& policy, std::uint64_t max_bytes) {
  HttpLimits limits = policy.http;
  limits.max_bytes = std::min(limits.max_bytes, max_bytes);
  return limits;
}

// HttpError as the witness errors: WitnessTooLarge for a body past the cap,
// WitnessUnavailable otherwise.
[[noreturn]] void throw_fetch_error(const HttpError& e, std::uint64_t max_bytes) {
  if (e.cancelled()) throw WitnessCancelled(std::string("witness fetch cancelled: ") + e.what());
  if (e.too_large())
    throw WitnessTooLarge(std::string("cannot fetch witness: ") + e.what() + " (this circuit's witness is " +
                          std::to_string(max_bytes) + " bytes)");
  throw WitnessUnavailable(std::string("cannot fetch witness: ") + e.what());
}

// The first bytes of a witness and its whole length (when known).
struct WitnessPrefix {
  std::vector<std::uint8_t> bytes;
  std::optional<std::uint64_t> total;
};

// The first min(n, length) bytes of a redis:// witness (n <= max_bytes) and
// its length, refused (WitnessTooLarge) when the key holds more than
// max_bytes: checked with STRLEN before anything is read, and again on the
// read itself (the key may change in between); at most n bytes are read.
WitnessPrefix read_redis_prefix(const WitnessRef& ref, RedisClient* redis, const WitnessPolicy& policy,
                                std::uint64_t n, std::uint64_t max_bytes) {
  check_redis_witness(ref, redis, policy);
  WitnessPrefix out;
  RedisReply type, length, range;
  try {
    // The key may change between these and the worker's read, which checks
    // what it reads again.
    type = redis->command({"TYPE", ref.location});
    if (type.str == "string") {
      length = redis->command({"STRLEN", ref.location});
      if (length.type == RedisReply::Type::kInteger && static_cast<std::uint64_t>(length.as_integer()) > max_bytes)
        throw too_large(ref, static_cast<std::uint64_t>(length.as_integer()), max_bytes);
      const RedisReply replies = redis->transaction(
          {{"STRLEN", ref.location}, {"GETRANGE", ref.location, "0", std::to_string(std::max<std::uint64_t>(n, 1) - 1)}});
      const auto& items = replies.as_array();
      if (items.size() != 2) throw RedisError(RedisError::Kind::kProtocol, "unexpected reply to STRLEN/GETRANGE");
      length = items[0];
      range = items[1];
    }
  } catch (const RedisError& e) {
    throw WitnessUnavailable("cannot read witness " + ref.describe() + ": " + e.what());
  }
  if (type.str == "none") throw WitnessUnavailable("witness " + ref.describe() + ": no such Redis key");
  if (type.str != "string" || range.type != RedisReply::Type::kString)
    throw WitnessUnavailable("witness " + ref.describe() + ": not a string key");
  out.total = static_cast<std::uint64_t>(length.as_integer());
  if (*out.total > max_bytes) throw too_large(ref, *out.total, max_bytes);
  out.bytes.assign(range.str.begin(), range.str.end());
  return out;
}

std::shared_ptr<const FileBytes> fetch_witness_unchecked(const WitnessRef& ref, RedisClient* redis,
                                                         const WitnessPolicy& policy, std::uint64_t max_bytes,
                                                         const std::atomic<bool>* cancelled = nullptr) {
  switch (ref.kind) {
    case WitnessRef::Kind::kFile: {
      std::uint64_t size = 0;
      const int fd = open_confined_file(ref, policy, &size);
      if (size > max_bytes) {
        ::close(fd);
        throw too_large(ref, size, max_bytes);
      }
      try {
        return FileBytes::map_descriptor(fd, size, ref.location);
      } catch (const FormatError& e) {
        throw WitnessUnavailable("cannot read witness " + ref.describe() + ": " + e.what());
      }
    }
    case WitnessRef::Kind::kRedis: {
      WitnessPrefix whole = read_redis_prefix(ref, redis, policy, max_bytes, max_bytes);
      return FileBytes::adopt(std::move(whole.bytes), ref.describe());
    }
    case WitnessRef::Kind::kInline:
      if (ref.inline_bytes.size() > max_bytes) throw too_large(ref, ref.inline_bytes.size(), max_bytes);
      return FileBytes::copy(ref.inline_bytes, ref.describe());
    case WitnessRef::Kind::kInput:
      throw WitnessUnavailable(ref.describe() + ": an input, not a witness (the worker computes its witness)");
    case WitnessRef::Kind::kHttp:
      try {
        HttpLimits limits = witness_limits(policy, max_bytes);
        limits.cancelled = cancelled;
        return FileBytes::adopt(http_get(ref.location, limits), ref.describe());
      } catch (const HttpError& e) {
        throw_fetch_error(e, max_bytes);
      }
  }
  throw WitnessUnavailable("witness reference of unknown kind");
}

}  // namespace

namespace {

// Throws WitnessChecksum unless `bytes` match the size and sha256 the job
// gives for the witness (either may be absent).
void check_witness_claims(const WitnessRef& ref, std::span<const std::uint8_t> bytes) {
  if (ref.size > 0 && bytes.size() != ref.size)
    throw WitnessChecksum("witness " + ref.describe() + ": " + std::to_string(bytes.size()) + " bytes, the job says " +
                          std::to_string(ref.size));
  if (!ref.sha256.empty()) {
    const std::string digest = sha256_hex(bytes);
    if (digest != ref.sha256)
      throw WitnessChecksum("witness " + ref.describe() + ": sha256 is " + digest + ", the job says " + ref.sha256);
  }
}

}  // namespace

std::shared_ptr<const FileBytes> fetch_witness(const WitnessRef& ref, RedisClient* redis,
                                               const WitnessPolicy& policy, std::uint64_t max_bytes,
                                               const std::atomic<bool>* cancelled) {
  auto bytes = fetch_witness_unchecked(ref, redis, policy, max_bytes, cancelled);
  check_witness_claims(ref, bytes->bytes());
  return bytes;
}

namespace {

// Reads the first min(n, length) bytes of a witness: pread for a file,
// GETRANGE (with STRLEN) for a Redis key, one Range request for a URL, a copy
// for inline bytes. Throws WitnessUnavailable as fetch_witness does, and
// WitnessTooLarge for a witness longer than max_bytes where its length is
// known (a file's size, STRLEN, the server's Content-Range or
// Content-Length).
WitnessPrefix read_witness_prefix(const WitnessRef& ref, RedisClient* redis, const WitnessPolicy& policy,
                                  std::uint64_t n, std::uint64_t max_bytes) {
  WitnessPrefix out;
  switch (ref.kind) {
    case WitnessRef::Kind::kFile: {
      std::uint64_t size = 0;
      out.bytes = read_confined_prefix(ref, policy, n, &size);
      out.total = size;
      break;
    }
    case WitnessRef::Kind::kRedis:
      return read_redis_prefix(ref, redis, policy, n, max_bytes);
    case WitnessRef::Kind::kInline: {
      const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(n, ref.inline_bytes.size()));
      out.bytes.assign(ref.inline_bytes.begin(), ref.inline_bytes.begin() + static_cast<std::ptrdiff_t>(take));
      out.total = ref.inline_bytes.size();
      break;
    }
    case WitnessRef::Kind::kInput:
      throw WitnessUnavailable(ref.describe() + ": an input, not a witness (the worker computes its witness)");
    case WitnessRef::Kind::kHttp: {
      HttpPrefix prefix;
      try {
        prefix = http_get_prefix(ref.location, witness_limits(policy, max_bytes), n);
      } catch (const HttpError& e) {
        throw_fetch_error(e, max_bytes);
      }
      out.bytes = std::move(prefix.bytes);
      out.total = prefix.total;
      break;
    }
    default:
      throw WitnessUnavailable("witness reference of unknown kind");
  }
  if (out.total && *out.total > max_bytes) throw too_large(ref, *out.total, max_bytes);
  return out;
}

// Bytes held against a ReadBudget while alive.
class BudgetHold {
 public:
  BudgetHold(const ReadBudget& budget, std::uint64_t bytes) : held_(budget.held), bytes_(bytes) {
    if (held_) *held_ += bytes_;
  }
  ~BudgetHold() {
    if (held_) *held_ -= bytes_;
  }
  BudgetHold(const BudgetHold&) = delete;
  BudgetHold& operator=(const BudgetHold&) = delete;

 private:
  std::atomic<std::uint64_t>* held_;
  std::uint64_t bytes_;
};

// Takes `bytes` from the budget only if they fit under its limit.
bool fits(const ReadBudget& budget, std::uint64_t bytes) {
  if (!budget.held) return true;
  std::uint64_t held = budget.held->load();
  while (held + bytes <= budget.limit)
    if (budget.held->compare_exchange_weak(held, held + bytes)) return true;
  return false;
}

}  // namespace

WtnsSummary read_witness_summary(const WitnessRef& ref, RedisClient* redis, const WitnessPolicy& policy,
                                 std::uint32_t num_public, std::uint64_t max_bytes, const ReadBudget& budget) {
  const std::uint64_t want =
      std::min(std::max<std::uint64_t>(wtns_prefix_bytes(num_public), kWitnessPrefixMinBytes), max_bytes);
  std::optional<WtnsSummary> summary;
  std::optional<std::uint64_t> total;
  // Named in errors as fetch_witness's bytes are: a file by its path.
  const std::string name = ref.kind == WitnessRef::Kind::kFile ? ref.location : ref.describe();
  {
    const BudgetHold hold(budget, want);  // counted, even past the limit: it is small
    WitnessPrefix prefix = read_witness_prefix(ref, redis, policy, want, max_bytes);
    total = prefix.total;
    // The length is free to check where it is known (stat, STRLEN, a stated
    // Content-Range); the sha256 is the worker's, which reads every byte.
    if (ref.size > 0 && prefix.total && *prefix.total != ref.size)
      throw WitnessChecksum("witness " + ref.describe() + ": " + std::to_string(*prefix.total) +
                            " bytes, the job says " + std::to_string(ref.size));
    summary = read_wtns_summary(prefix.bytes, prefix.total.value_or(0), num_public, name);
  }
  if (summary) return std::move(*summary);
  // An unusual layout (values before the header, or a header past the first
  // read): read it all, at most max_bytes, and only when that fits in the
  // budget now. A mapped file is touched only where the summary reads.
  const std::uint64_t whole_bytes = std::min(total.value_or(max_bytes), max_bytes);
  if (!fits(budget, whole_bytes))
    throw WitnessUnavailable("witness " + ref.describe() + ": its header does not lie in its first " +
                             std::to_string(want) + " bytes, and reading all " + std::to_string(whole_bytes) +
                             " bytes would pass the memory budget (--memory-budget-mib) now");
  struct Release {
    const ReadBudget& budget;
    std::uint64_t bytes;
    ~Release() {
      if (budget.held) *budget.held -= bytes;
    }
  } release{budget, whole_bytes};
  const auto whole = fetch_witness_unchecked(ref, redis, policy, max_bytes);
  return read_wtns_summary(*whole, num_public);
}

}  // namespace zkfarm
