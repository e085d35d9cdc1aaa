// circuit_cache.h -- the worker's resident circuits.
//
// get(id) returns the circuit loaded into the prover (prover/prover.h), loading it on first
// use: the zkey and PCE are copied from the artifact store into the local
// cache directory (when one is configured) while hashing the zkey; a zkey
// whose sha256 is not the circuit id is deleted and refused
// (artifactChecksum). A cached copy is re-hashed once per process start
// before first use. The PCE carries its own checksum, verified by
// Pce::load. Loaded circuits stay resident (up to max_resident, least
// recently used evicted first) so later partitions move only the witness.
//
// Thread-safe; loads are serialized (one at a time is what the disk and
// the prover want anyway).
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/artifacts.h"
#include "prover/prover.h"

namespace zkfarm {

class CircuitCache {
 public:
  CircuitCache(ArtifactStore store, std::string cache_dir, prover::Prover& prover, std::size_t max_resident);
  // Throws prover::Error: kUnknownCircuit (no artifacts for id), kBadCircuit
  // (a zkey whose hash is not id, or files that do not load), kOutOfMemory,
  // kDeviceFault, kInternal (I/O).
  std::shared_ptr<const prover::Circuit> get(const std::string& id, bool* was_resident);
  std::vector<std::string> resident() const;
  // Over the loaded circuits: device bytes of their resident key and PCE,
  // key bytes streamed from host memory at every proof, page-locked host
  // bytes held for them (a device memory budget's plan; 0 on the CPU).
  struct Placement {
    std::uint64_t resident_bytes = 0, streamed_bytes = 0, host_pinned_bytes = 0;
  };
  Placement placement() const;
  // Circuits evicted since construction (zkfarm_circuit_cache_evictions_total).
  std::uint64_t evictions() const;

 private:
  std::string local_copy(const std::string& id, const std::string& relative, bool verify_as_zkey);

  ArtifactStore store_;
  std::string cache_dir_;
  prover::Prover& prover_;
  std::size_t max_resident_;
  mutable std::mutex mutex_;
  std::mutex load_mutex_;
  std::map<std::string, std::shared_ptr<const prover::Circuit>> loaded_;
  std::list<std::string> lru_;  // front: most recent
  std::uint64_t evictions_ = 0;  // guarded by mutex_
};

}  // namespace zkfarm
