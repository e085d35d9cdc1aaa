// witness_access.cc -- see witness_access.h.
#include "cluster/witness_access.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <system_error>

#include "base/digest.h"
#include "cluster/defaults.h"
#include "cluster/keys.h"
#include "formats/wtns.h"

namespace zkfarm {

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
