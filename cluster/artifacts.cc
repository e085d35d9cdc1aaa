// artifacts.cc -- see artifacts.h.
#include "cluster/artifacts.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <system_error>

#include <nlohmann/json.hpp>

#include "base/digest.h"
#include "formats/curve_id.h"
#include "formats/wtns.h"

namespace zkfarm {

std::optional<CircuitInfo> load_circuit_info(RedisClient& redis, const KeyLayout& keys,
                                             const std::string& id) {
  RedisReply reply = redis.command({"HGETALL", keys.circuit(id)});
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
      throw std::runtime_error("circuit record " + keys.circuit(id) + ": bad " + field + " '" + text + "'");
    }
  };
  for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
    const std::string& field = items[i].as_string();
    const std::string& value = items[i + 1].as_string();
    if (field == "curve") {
      if (value == "bn128") info.curve = CurveId::kBn254;
      else if (value == "bls12381") info.curve = CurveId::kBls12381;
      else throw std::runtime_error("circuit record " + keys.circuit(id) + ": unknown curve '" + value + "'");
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
        return std::runtime_error("circuit record " + keys.circuit(id) + ": bad files list: " + why);
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
    throw std::runtime_error("circuit record " + keys.circuit(id) + " is incomplete");
  return info;
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
      {"HDEL", keys.circuit(info.id), "witgen", "witgen_sha256", "witgen_dat_sha256", "witgen_public_map"},
      {"HSET", keys.circuit(info.id), "curve", curve_name(info.curve), "num_vars",
       std::to_string(info.num_vars), "num_public", std::to_string(info.num_public), "domain_size",
       std::to_string(info.domain_size), "zkey_bytes", std::to_string(info.zkey_bytes), "pce_has_c",
       info.pce_has_c ? "1" : "0", "zkey", info.zkey_path, "pce", info.pce_path, "vk", info.vk_path, "vk_sha256",
       info.vk_sha256, "files", files_json(info)},
      {"SADD", keys.circuits(), info.id},
  };
  // Who registered it first stays (farm_api.h: only they may change its
  // witness generator).
  if (!info.registered_by.empty())
    commands.push_back({"HSETNX", keys.circuit(info.id), "registered_by", info.registered_by});
  if (info.has_witness_generator())
    commands.push_back({"HSET", keys.circuit(info.id), "witgen", info.witgen_path, "witgen_sha256",
                        info.witgen_sha256, "witgen_dat_sha256", info.witgen_dat_sha256});
  if (info.has_witness_generator() && !info.witgen_public_map.empty())
    commands.push_back({"HSET", keys.circuit(info.id), "witgen_public_map", info.witgen_public_map});
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
    return WitnessUnavailable("witness " + ref.describe() + ": no regular file at that path under the witness roots (" +
                              (roots.empty() ? "none configured" : roots) +
                              "); file:// witnesses are read only under --witness-root");
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

std::shared_ptr<const FileBytes> map_confined_file(const WitnessRef& ref, const WitnessPolicy& policy) {
  std::uint64_t size = 0;
  const int fd = open_confined_file(ref, policy, &size);
  try {
    return FileBytes::map_descriptor(fd, size, ref.location);
  } catch (const FormatError& e) {
    throw WitnessUnavailable("cannot read witness " + ref.describe() + ": " + e.what());
  }
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

namespace {

// Throws WitnessUnavailable unless a redis:// witness names a key of this
// farm and there is a connection to read it with.
void check_redis_witness(const WitnessRef& ref, RedisClient* redis, const WitnessPolicy& policy) {
  if (ref.location.rfind(policy.redis_key_prefix, 0) != 0)
    throw WitnessUnavailable("witness " + ref.describe() + ": not a key of this farm (redis:// witnesses must start with '" +
                             policy.redis_key_prefix + "')");
  if (!redis) throw WitnessUnavailable("witness " + ref.describe() + ": no Redis connection configured");
}

std::shared_ptr<const FileBytes> fetch_witness_unchecked(const WitnessRef& ref, RedisClient* redis,
                                                         const WitnessPolicy& policy) {
  switch (ref.kind) {
    case WitnessRef::Kind::kFile:
      return map_confined_file(ref, policy);
    case WitnessRef::Kind::kRedis: {
      check_redis_witness(ref, redis, policy);
      RedisReply reply;
      try {
        reply = redis->command({"GET", ref.location});
      } catch (const RedisError& e) {
        throw WitnessUnavailable("cannot read witness " + ref.describe() + ": " + e.what());
      }
      if (reply.is_nil()) throw WitnessUnavailable("witness " + ref.describe() + ": no such Redis key");
      if (reply.type != RedisReply::Type::kString)
        throw WitnessUnavailable("witness " + ref.describe() + ": not a string key");
      std::vector<std::uint8_t> bytes(reply.str.begin(), reply.str.end());
      return FileBytes::adopt(std::move(bytes), ref.describe());
    }
    case WitnessRef::Kind::kInline:
      return FileBytes::copy(ref.inline_bytes, ref.describe());
    case WitnessRef::Kind::kInput:
      throw WitnessUnavailable(ref.describe() + ": an input, not a witness (the worker computes its witness)");
    case WitnessRef::Kind::kHttp:
      try {
        return FileBytes::adopt(http_get(ref.location, policy.http), ref.describe());
      } catch (const HttpError& e) {
        throw WitnessUnavailable(std::string("cannot fetch witness: ") + e.what());
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
                                               const WitnessPolicy& policy) {
  auto bytes = fetch_witness_unchecked(ref, redis, policy);
  check_witness_claims(ref, bytes->bytes());
  return bytes;
}

namespace {

// The first bytes of a witness and its whole length (when known).
struct WitnessPrefix {
  std::vector<std::uint8_t> bytes;
  std::optional<std::uint64_t> total;
};

// Reads the first min(n, length) bytes of a witness: pread for a file,
// GETRANGE (with STRLEN) for a Redis key, one Range request for a URL, a copy
// for inline bytes. Throws WitnessUnavailable as fetch_witness does.
WitnessPrefix read_witness_prefix(const WitnessRef& ref, RedisClient* redis, const WitnessPolicy& policy,
                                  std::uint64_t n) {
  WitnessPrefix out;
  switch (ref.kind) {
    case WitnessRef::Kind::kFile: {
      std::uint64_t size = 0;
      out.bytes = read_confined_prefix(ref, policy, n, &size);
      out.total = size;
      return out;
    }
    case WitnessRef::Kind::kRedis: {
      check_redis_witness(ref, redis, policy);
      RedisReply type, length, range;
      try {
        // The key may change between these and the worker's GET, which
        // checks what it reads again.
        type = redis->command({"TYPE", ref.location});
        if (type.str == "string") {
          const RedisReply replies =
              redis->transaction({{"STRLEN", ref.location}, {"GETRANGE", ref.location, "0", std::to_string(n - 1)}});
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
      out.bytes.assign(range.str.begin(), range.str.end());
      out.total = static_cast<std::uint64_t>(length.as_integer());
      return out;
    }
    case WitnessRef::Kind::kInline: {
      const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(n, ref.inline_bytes.size()));
      out.bytes.assign(ref.inline_bytes.begin(), ref.inline_bytes.begin() + static_cast<std::ptrdiff_t>(take));
      out.total = ref.inline_bytes.size();
      return out;
    }
    case WitnessRef::Kind::kInput:
      throw WitnessUnavailable(ref.describe() + ": an input, not a witness (the worker computes its witness)");
    case WitnessRef::Kind::kHttp: {
      HttpPrefix prefix;
      try {
        prefix = http_get_prefix(ref.location, policy.http, n);
      } catch (const HttpError& e) {
        throw WitnessUnavailable(std::string("cannot fetch witness: ") + e.what());
      }
      out.bytes = std::move(prefix.bytes);
      out.total = prefix.total;
      return out;
    }
  }
  throw WitnessUnavailable("witness reference of unknown kind");
}

}  // namespace

WtnsSummary read_witness_summary(const WitnessRef& ref, RedisClient* redis, const WitnessPolicy& policy,
                                 std::uint32_t num_public) {
  const std::uint64_t want = std::max<std::uint64_t>(wtns_prefix_bytes(num_public), kWitnessPrefixMinBytes);
  WitnessPrefix prefix = read_witness_prefix(ref, redis, policy, want);
  // The length is free to check where it is known (stat, STRLEN, a stated
  // Content-Range); the sha256 is the worker's, which reads every byte.
  if (ref.size > 0 && prefix.total && *prefix.total != ref.size)
    throw WitnessChecksum("witness " + ref.describe() + ": " + std::to_string(*prefix.total) +
                          " bytes, the job says " + std::to_string(ref.size));
  // Named in errors as fetch_witness's bytes are: a file by its path.
  const std::string name = ref.kind == WitnessRef::Kind::kFile ? ref.location : ref.describe();
  if (auto summary = read_wtns_summary(prefix.bytes, prefix.total.value_or(0), num_public, name))
    return std::move(*summary);
  // An unusual layout (values before the header, or a header past the first
  // read): read it all. A mapped file is touched only where the summary reads.
  const auto whole = fetch_witness_unchecked(ref, redis, policy);
  return read_wtns_summary(*whole, num_public);
}

}  // namespace zkfarm
