// circuit_cache.h -- the worker's resident circuits.
//
// get(id) returns the circuit loaded into the backend, loading it on first
// use: the zkey and PCE are copied from the artifact store into the local
// cache directory (when one is configured) while hashing the zkey; a zkey
// whose sha256 is not the circuit id is deleted and refused
// (artifactChecksum). A cached copy is re-hashed once per process start
// before first use. The PCE carries its own checksum, verified by
// Pce::load. Loaded circuits stay resident (up to max_resident, least
// recently used evicted first) so later partitions move only the witness.
//
// Thread-safe; loads are serialized (one at a time is what the disk and
// the backend want anyway).
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/artifacts.h"
#include "worker/prover_backend.h"

namespace zkfarm {

class CircuitCache {
 public:
  CircuitCache(ArtifactStore store, std::string cache_dir, ProverBackend& backend, std::size_t max_resident);
  // Throws ProverFailure: unknownCircuit (no artifacts for id),
  // artifactChecksum, outOfMemory, internal (I/O).
  std::shared_ptr<const LoadedCircuit> get(const std::string& id, bool* was_resident);
  std::vector<std::string> resident() const;
  // Circuits evicted since construction (zkfarm_circuit_cache_evictions_total).
  std::uint64_t evictions() const;

 private:
  std::string local_copy(const std::string& id, const std::string& relative, bool verify_as_zkey);

  ArtifactStore store_;
  std::string cache_dir_;
  ProverBackend& backend_;
  std::size_t max_resident_;
  mutable std::mutex mutex_;
  std::mutex load_mutex_;
  std::map<std::string, std::shared_ptr<const LoadedCircuit>> loaded_;
  std::list<std::string> lru_;  // front: most recent
  std::uint64_t evictions_ = 0;  // guarded by mutex_
};

}  // namespace zkfarm
