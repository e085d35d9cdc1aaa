// circuit_cache.cc -- see circuit_cache.h.
#include "worker/circuit_cache.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <system_error>

#include "base/digest.h"
#include "base/files.h"
#include "base/sealed_copy.h"
#include "schema/job.h"
#include "cluster/log.h"

namespace zkfarm {

namespace fs = std::filesystem;

namespace {

std::string mib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

// "4.4 KiB (4549 bytes)": a size in an error message, exact and readable.
std::string size_text(std::uint64_t bytes) {
  char text[64];
  if (bytes < (1u << 20))
    std::snprintf(text, sizeof text, "%.1f KiB (%llu bytes)", static_cast<double>(bytes) / 1024,
                  static_cast<unsigned long long>(bytes));
  else
    std::snprintf(text, sizeof text, "%.1f MiB (%llu bytes)", static_cast<double>(bytes) / (1 << 20),
                  static_cast<unsigned long long>(bytes));
  return text;
}

// Free bytes for an unprivileged writer on the filesystem holding `dir`
// (nullopt: unknown).
std::optional<std::uint64_t> free_space(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return std::nullopt;
  return std::uint64_t(st.f_bavail) * st.f_frsize;
}

// Hex sha256 of a file, as prover::Error(kInternal) on a read error.
std::string digest_of(const std::string& path) {
  try {
    return sha256_file_hex(path);
  } catch (const std::exception& e) {
    throw prover::Error(ErrorCode::kInternal, e.what());
  }
}

// The file at path read once into a sealed copy and hashed, as
// prover::Error(kInternal) on a read error.
SealedCopy sealed_copy(const std::string& path) {
  try {
    return SealedCopy::of_file(path);
  } catch (const std::exception& e) {
    throw prover::Error(ErrorCode::kInternal, e.what());
  }
}

// The bytes of a sealed copy, mapped (the mapping keeps the copy alive).
std::shared_ptr<const FileBytes> mapped(const SealedCopy& copy, const std::string& name) {
  const int fd = ::dup(copy.fd());
  if (fd < 0) throw prover::Error(ErrorCode::kInternal, "dup: " + std::string(std::strerror(errno)));
  try {
    return FileBytes::map_descriptor(fd, copy.size(), name);
  } catch (const std::exception& e) {
    throw prover::Error(ErrorCode::kInternal, e.what());
  }
}

std::string mismatch(const std::string& path, const SealedCopy& copy, const std::string& expected) {
  return path + ": sha256 is " + copy.sha256() + ", the circuit record says " + expected;
}

}  // namespace

CircuitCache::CircuitCache(std::string artifacts, std::string cache_dir, prover::Prover& prover,
                           std::size_t max_resident, std::string key_prefix, HttpLimits http,
                           std::optional<std::uint64_t> disk_budget)
    : store_(is_http_url(artifacts) ? std::string() : artifacts), remote_(is_http_url(artifacts)),
      base_url_(remote_ ? artifacts : std::string()), cache_dir_(std::move(cache_dir)), prover_(prover),
      max_resident_(std::max<std::size_t>(1, max_resident)), keys_(std::move(key_prefix)), http_(std::move(http)) {
  if (remote_ && base_url_.back() != '/') base_url_ += '/';
  if (remote_ && cache_dir_.empty())
    throw std::invalid_argument("--artifacts " + redact_url(base_url_) + " is a URL: give --cache-dir too");
  if (!cache_dir_.empty()) budget_ = std::make_unique<CacheBudget>(cache_dir_, disk_budget);
}

void CircuitCache::make_room(const std::string& id, std::uint64_t bytes) {
  if (!budget_) return;
  try {
    budget_->make_room(id, bytes);
  } catch (const CacheBudgetExceeded& e) {
    throw prover::Error(ErrorCode::kInternal, e.what());
  }
}

std::vector<std::string> CircuitCache::resident() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {lru_.begin(), lru_.end()};
}

CircuitCache::Placement CircuitCache::placement() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Placement p;
  for (const auto& [id, circuit] : loaded_) {
    p.resident_bytes += circuit->device_bytes;
    p.streamed_bytes += circuit->streamed_bytes;
    p.host_pinned_bytes += circuit->host_pinned_bytes;
  }
  return p;
}

std::uint64_t CircuitCache::evictions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return evictions_;
}

SealedCopy CircuitCache::checked_local(const std::string& id, const std::string& relative,
                                       const std::string& expected) {
  const std::string source = store_.absolute(relative);
  if (!fs::exists(source))
    throw prover::Error(ErrorCode::kUnknownCircuit,
                        "circuit " + id + " has no artifact " + source + " in the artifact store");
  std::string path = source;
  const auto cache = [&] {
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    try {
      copy_file_atomically(source, path);
    } catch (const std::exception& e) {
      throw prover::Error(ErrorCode::kInternal, std::string("cannot cache the artifact: ") + e.what());
    }
  };
  if (!cache_dir_.empty()) {
    path = cache_dir_ + "/" + relative;
    if (!fs::exists(path)) cache();
  }
  SealedCopy copy = sealed_copy(path);
  if (expected.empty() || copy.sha256() == expected) return copy;
  if (path != source) {
    ZKLOG(kWarning) << mismatch(path, copy, expected) << "; copying it from the artifact store again";
    std::error_code ec;
    fs::remove(path, ec);
    cache();
    copy = sealed_copy(path);
    if (copy.sha256() == expected) return copy;
    fs::remove(path, ec);
  }
  throw prover::Error(ErrorCode::kBadCircuit, mismatch(path, copy, expected));
}

SealedCopy CircuitCache::checked_remote(const ArtifactFile& file) {
  const std::string path = cache_dir_ + "/" + file.path;
  SealedCopy copy = sealed_copy(path);
  if (file.sha256.empty() || copy.sha256() == file.sha256) return copy;
  ZKLOG(kWarning) << mismatch(path, copy, file.sha256) << "; downloading it again";
  std::error_code ec;
  fs::remove(path, ec);
  checked_.erase(path);
  fetch(file, true);
  copy = sealed_copy(path);
  if (copy.sha256() == file.sha256) return copy;
  fs::remove(path, ec);
  throw prover::Error(ErrorCode::kBadCircuit, mismatch(path, copy, file.sha256));
}

std::string CircuitCache::recorded_sha256(const std::string& id, const std::string& tenant,
                                          const std::string& relative, RedisClient* redis) {
  if (!redis) return "";
  try {
    const std::optional<CircuitInfo> info = load_task_circuit(*redis, keys_, tenant, id);
    if (info)
      for (const ArtifactFile& file : info->files)
        if (file.path == relative) return file.sha256;
  } catch (const std::exception& e) {
    ZKLOG(kWarning) << "circuit " << id << ": cannot read its record (" << e.what() << "); " << relative
                    << " is checked by its own checksum only";
  }
  return "";
}

void CircuitCache::discard(const std::string& relative) {
  if (!remote_) return;
  std::lock_guard<std::mutex> load_lock(load_mutex_);
  const std::string path = cache_dir_ + "/" + relative;
  std::error_code ec;
  fs::remove(path, ec);
  checked_.erase(path);
}

std::string CircuitCache::fetch(const ArtifactFile& file, bool hash_cached) {
  const std::string path = cache_dir_ + "/" + file.path;
  const std::string url = base_url_ + file.path;
  std::error_code ec;
  if (checked_.count(path) && fs::exists(path, ec)) return path;
  if (fs::exists(path, ec)) {
    // Cached by an earlier process: hashed once before this one uses it
    // (the zkey and PCE: at every load instead, by checked_remote()).
    if (!hash_cached) return path;
    if (file.sha256.empty() || digest_of(path) == file.sha256) {
      checked_.insert(path);
      return path;
    }
    ZKLOG(kWarning) << path << " does not match its recorded sha256; downloading it again";
    fs::remove(path, ec);
  }
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) throw prover::Error(ErrorCode::kInternal, "cannot create " + fs::path(path).parent_path().string() + ": " + ec.message());
  const std::string partial = path + ".part";
  for (int attempt = 0;; ++attempt) {
    // Room for what is still to come (a partial file from a broken transfer
    // is resumed where the server allows).
    const std::uint64_t have = fs::exists(partial, ec) ? fs::file_size(partial, ec) : 0;
    if (file.bytes > have) {
      const auto free_bytes = free_space(fs::path(path).parent_path());
      if (free_bytes && *free_bytes < file.bytes - have)
        throw prover::Error(ErrorCode::kInternal,
                            "no room in --cache-dir " + cache_dir_ + " for " + file.path + ": it needs " +
                                size_text(file.bytes - have) + ", " + size_text(*free_bytes) + " are free");
    }
    ZKLOG(kInfo) << "downloading " << redact_url(url) << (file.bytes ? " (" + mib(file.bytes) + ")" : std::string())
                 << (have ? ", resuming after " + mib(have) : std::string());
    auto last_log = std::chrono::steady_clock::now();
    const auto started = last_log;
    try {
      http_download(url, partial, http_, file.bytes ? std::optional<std::uint64_t>(file.bytes) : std::nullopt,
                    [&](std::uint64_t done, std::uint64_t total) {
                      const auto now = std::chrono::steady_clock::now();
                      if (now - last_log < std::chrono::seconds(5)) return;
                      last_log = now;
                      ZKLOG(kInfo) << "downloading " << redact_url(url) << ": " << mib(done)
                                   << (total ? " of " + mib(total) + " (" + std::to_string(done * 100 / total) + "%)"
                                             : std::string());
                    });
    } catch (const HttpError& e) {
      // Not in the store (yet): like a missing file in a local store.
      if (e.status() == 404) throw prover::Error(ErrorCode::kUnknownCircuit, e.what());
      throw prover::Error(ErrorCode::kInternal, e.what());
    } catch (const std::system_error& e) {
      // A local write failure (a full disk): the partial file is no use.
      fs::remove(partial, ec);
      throw prover::Error(ErrorCode::kInternal, e.what());
    }
    const std::uint64_t size = fs::file_size(partial, ec);
    const std::string digest = file.sha256.empty() ? "" : digest_of(partial);
    std::string problem;
    if (file.bytes && size != file.bytes)
      problem = std::to_string(size) + " bytes, the record says " + std::to_string(file.bytes);
    else if (digest != file.sha256)
      problem = "sha256 is " + digest + ", the record says " + file.sha256;
    if (problem.empty()) {
      if (file.executable) fs::permissions(partial, fs::perms(0755), ec);
      fs::rename(partial, path, ec);
      if (ec) throw prover::Error(ErrorCode::kInternal, "cannot install " + path + ": " + ec.message());
      checked_.insert(path);
      ZKLOG(kInfo) << "downloaded " << redact_url(url) << ": " << mib(size) << " in "
                   << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() << " s";
      return path;
    }
    fs::remove(partial, ec);
    if (attempt == 0) {
      ZKLOG(kWarning) << redact_url(url) << ": " << problem << "; downloading it again";
      continue;
    }
    throw prover::Error(ErrorCode::kBadCircuit, redact_url(url) + ": " + problem + " (downloaded twice)");
  }
}

CircuitInfo CircuitCache::fetch_all(const std::string& id, const std::string& tenant, RedisClient* redis) {
  if (!redis)
    throw prover::Error(ErrorCode::kInternal,
                        "the artifact store is a URL: the worker needs --redis to read circuit records");
  std::optional<CircuitInfo> info;
  try {
    // A tenant's own circuit is recorded in its namespace only.
    info = load_task_circuit(*redis, keys_, tenant, id);
  } catch (const std::exception& e) {
    throw prover::Error(ErrorCode::kInternal, std::string("circuit record: ") + e.what());
  }
  if (!info)
    throw prover::Error(ErrorCode::kUnknownCircuit,
                        "circuit " + id + " is not registered" + (tenant.empty() ? "" : " (nor by tenant " + tenant + ")"));
  // Room for all of the circuit's files still to come, before downloading
  // any of them: a circuit that cannot fit leaves nothing behind.
  const std::vector<ArtifactFile> files = circuit_files(*info);
  std::uint64_t needed = 0;
  std::error_code ec;
  for (const auto& file : files) {
    const std::string path = cache_dir_ + "/" + file.path;
    if (fs::exists(path, ec)) continue;
    const std::string partial = path + ".part";
    const std::uint64_t have = fs::exists(partial, ec) ? fs::file_size(partial, ec) : 0;
    if (file.bytes > have) needed += file.bytes - have;
  }
  if (needed > 0) {
    make_room(id, needed);
    fs::create_directories(cache_dir_, ec);
    const auto free_bytes = free_space(cache_dir_);
    if (free_bytes && *free_bytes < needed)
      throw prover::Error(ErrorCode::kInternal,
                          "no room in --cache-dir " + cache_dir_ + " for circuit " + id + ": its files need " +
                              size_text(needed) + ", " + size_text(*free_bytes) + " are free");
  }
  bool zkey = false, pce = false;
  for (const auto& file : files) {
    if (file.path == info->zkey_path && file.sha256 != id)
      throw prover::Error(ErrorCode::kBadCircuit,
                          "circuit " + id + ": its record gives the zkey the sha256 '" + file.sha256 + "'");
    fetch(file, file.path != info->zkey_path && file.path != info->pce_path);
    zkey = zkey || file.path == info->zkey_path;
    pce = pce || file.path == info->pce_path;
  }
  if (budget_) {
    budget_->stored(id);
    budget_->used(id);
  }
  if (!zkey || !pce)
    throw prover::Error(ErrorCode::kBadCircuit, "circuit " + id + ": its record lists no zkey or no PCE");
  return *info;
}

std::string CircuitCache::local_root(const std::string& id, const std::string& tenant, RedisClient* redis) {
  if (!remote_) return store_.root();
  if (!is_valid_circuit_id(id)) throw prover::Error(ErrorCode::kUnknownCircuit, "bad circuit id " + id);
  std::lock_guard<std::mutex> load_lock(load_mutex_);
  fetch_all(id, tenant, redis);
  return cache_dir_;
}

std::shared_ptr<const prover::Circuit> CircuitCache::get(const std::string& id, const std::string& tenant,
                                                         bool* was_resident, RedisClient* redis) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = loaded_.find(id); it != loaded_.end()) {
      lru_.remove(id);
      lru_.push_front(id);
      if (budget_) budget_->used(id);
      if (was_resident) *was_resident = true;
      return it->second;
    }
  }
  if (was_resident) *was_resident = false;
  if (!is_valid_circuit_id(id)) throw prover::Error(ErrorCode::kUnknownCircuit, "bad circuit id " + id);
  std::lock_guard<std::mutex> load_lock(load_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = loaded_.find(id); it != loaded_.end()) return it->second;
  }
  ZKLOG(kInfo) << "loading circuit " << id;
  // Every load hashes the bytes it loads (sealed copies), whatever an
  // earlier load or an earlier process found.
  std::optional<SealedCopy> zkey, pce;
  if (remote_) {
    const CircuitInfo info = fetch_all(id, tenant, redis);
    for (const ArtifactFile& file : circuit_files(info)) {
      if (file.path == info.zkey_path) zkey.emplace(checked_remote(file));
      else if (file.path == info.pce_path) pce.emplace(checked_remote(file));
    }
  } else {
    if (budget_) {
      // The store's zkey and PCE not yet copied into the cache.
      std::uint64_t needed = 0;
      std::error_code ec;
      for (const std::string& relative : {ArtifactStore::zkey_relative(id), ArtifactStore::pce_relative(id)})
        if (!fs::exists(cache_dir_ + "/" + relative, ec)) {
          const auto n = fs::file_size(store_.absolute(relative), ec);
          if (!ec) needed += n;
        }
      if (needed > 0) make_room(id, needed);
    }
    zkey.emplace(checked_local(id, ArtifactStore::zkey_relative(id), id));
    const std::string pce_relative = ArtifactStore::pce_relative(id);
    pce.emplace(checked_local(id, pce_relative, recorded_sha256(id, tenant, pce_relative, redis)));
  }
  if (budget_) {
    budget_->stored(id);
    budget_->used(id);
  }
  prover::CircuitSource source{zkey->source(), pce->source(), ""};
  source.zkey_file = mapped(*zkey, zkey->source());
  source.pce_file = mapped(*pce, pce->source());
  auto circuit = prover_.load(source);
  if (!circuit->memory_plan.empty()) ZKLOG(kInfo) << "circuit " << id << " placed: " << circuit->memory_plan;
  std::lock_guard<std::mutex> lock(mutex_);
  loaded_[id] = circuit;
  lru_.push_front(id);
  while (lru_.size() > max_resident_) {
    ZKLOG(kInfo) << "evicting circuit " << lru_.back();
    loaded_.erase(lru_.back());
    lru_.pop_back();
    ++evictions_;
  }
  return circuit;
}

}  // namespace zkfarm
