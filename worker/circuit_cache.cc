// circuit_cache.cc -- see circuit_cache.h.
#include "worker/circuit_cache.h"

#include <filesystem>
#include <system_error>

#include "cluster/job.h"
#include "cluster/log.h"

namespace zkfarm {

namespace fs = std::filesystem;

CircuitCache::CircuitCache(ArtifactStore store, std::string cache_dir, prover::Prover& prover,
                           std::size_t max_resident)
    : store_(std::move(store)), cache_dir_(std::move(cache_dir)), prover_(prover),
      max_resident_(std::max<std::size_t>(1, max_resident)) {}

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

std::string CircuitCache::local_copy(const std::string& id, const std::string& relative, bool verify_as_zkey) {
  const std::string source = store_.absolute(relative);
  if (!fs::exists(source))
    throw prover::Error(prover::ErrorKind::kUnknownCircuit,
                        "circuit " + id + " has no artifact " + source + " in the artifact store");
  std::string path = source;
  if (!cache_dir_.empty()) {
    path = cache_dir_ + "/" + relative;
    if (!fs::exists(path)) {
      std::error_code ec;
      fs::create_directories(fs::path(path).parent_path(), ec);
      const std::string tmp = path + ".tmp." + std::to_string(::getpid());
      fs::copy_file(source, tmp, fs::copy_options::overwrite_existing, ec);
      if (ec) throw prover::Error(prover::ErrorKind::kInternal, "cannot copy " + source + ": " + ec.message());
      fs::rename(tmp, path, ec);
      if (ec) throw prover::Error(prover::ErrorKind::kInternal, "cannot install " + path + ": " + ec.message());
    }
  }
  if (verify_as_zkey) {
    std::string digest;
    try {
      digest = sha256_file_hex(path);
    } catch (const std::exception& e) {
      throw prover::Error(prover::ErrorKind::kInternal, e.what());
    }
    if (digest != id) {
      std::error_code ec;
      if (path != source) fs::remove(path, ec);
      throw prover::Error(prover::ErrorKind::kBadCircuit,
                          path + ": sha256 is " + digest + ", expected the circuit id " + id);
    }
  }
  return path;
}

std::shared_ptr<const prover::Circuit> CircuitCache::get(const std::string& id, bool* was_resident) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = loaded_.find(id); it != loaded_.end()) {
      lru_.remove(id);
      lru_.push_front(id);
      if (was_resident) *was_resident = true;
      return it->second;
    }
  }
  if (was_resident) *was_resident = false;
  if (!is_valid_circuit_id(id)) throw prover::Error(prover::ErrorKind::kUnknownCircuit, "bad circuit id " + id);
  std::lock_guard<std::mutex> load_lock(load_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = loaded_.find(id); it != loaded_.end()) return it->second;
  }
  ZKLOG(kInfo) << "loading circuit " << id;
  const std::string zkey = local_copy(id, ArtifactStore::zkey_relative(id), true);
  const std::string pce = local_copy(id, ArtifactStore::pce_relative(id), false);
  auto circuit = prover_.load({zkey, pce, ""});
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
