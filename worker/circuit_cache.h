// circuit_cache.h -- the worker's resident circuits.
//
// get(id) returns the circuit loaded into the prover (prover/prover.h), loading it on first
// use. Every load reads the zkey and the PCE once into sealed memory copies
// (base/sealed_copy.h), hashes those copies and hands the prover exactly
// them: the zkey's sha256 must be the circuit id, the PCE's the one its
// circuit record lists (when the record can be read); a file replaced or
// rewritten in the cache or the store after an earlier load is never used
// unchecked. From a store on a file system (--artifacts DIR): the zkey and
// PCE are copied into the local cache directory (when one is configured);
// a cached copy that does not match is copied from the store once more, a
// store file that does not match is refused (artifactChecksum). From a store served over HTTP (--artifacts
// http(s)://host/prefix/): every file of the circuit's record in Redis (the
// record the task's tenant uses: load_task_circuit)
// (circuit_files(): zkey, PCE, verifying key, and whatever else a circuit
// lists) is downloaded into the cache directory as a stream -- progress in
// the log, a broken transfer resumed (Range) or started over, the free space
// checked first -- and its sha256 checked against the record before use; a
// mismatch deletes the file and downloads it once more, then fails
// artifactChecksum; a cached zkey or PCE is checked at every load as
// above, other cached files (the verifying key, the witness generator,
// which witgen::run_generator hashes at every run) once per process start.
// The PCE also carries its own checksum, verified when it is parsed. Loaded circuits stay resident (up to max_resident, least
// recently used evicted first) so later partitions move only the witness.
// The cache directory on disk is kept under a size budget (cache_budget.h):
// before a circuit's files are written there, least recently used
// circuits' files are removed (never the circuit's own, nor one pinned by a
// witness generator about to run); a circuit removed and needed again is
// fetched and checked again like a new one.
//
// Thread-safe; loads are serialized (one at a time is what the disk, the
// network and the prover want anyway).
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/sealed_copy.h"
#include "cluster/artifacts.h"
#include "cluster/defaults.h"
#include "cluster/http_fetch.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "worker/cache_budget.h"
#include "prover/prover.h"

namespace zkfarm {

class CircuitCache {
 public:
  // `artifacts`: the store's directory, or its http(s):// URL (then
  // cache_dir must be set, and get() needs a Redis connection for the
  // circuit records under `key_prefix`). disk_budget: at most this many
  // bytes of circuit files in cache_dir (nullopt: no budget).
  CircuitCache(std::string artifacts, std::string cache_dir, prover::Prover& prover, std::size_t max_resident,
               std::string key_prefix = kDefaultKeyPrefix, HttpLimits http = {},
               std::optional<std::uint64_t> disk_budget = std::nullopt);
  // `tenant`: the task's (QueuedTask::tenant, "" for the default tenant),
  // whose record of the circuit is read when the circuit is not resident
  // (load_task_circuit: a tenant's own circuit, else the farm's); a
  // resident circuit serves every tenant, its bytes having been checked
  // against the id and a record when loaded.
  // Throws prover::Error: kUnknownCircuit (no artifacts for id), kBadCircuit
  // (a file whose hash is not the recorded one, or files that do not load),
  // kOutOfMemory, kDeviceFault, kInternal (I/O, a failed download, no room
  // in the cache directory, no Redis for a store served over HTTP, a record
  // that cannot be read or is refused).
  std::shared_ptr<const prover::Circuit> get(const std::string& id, const std::string& tenant, bool* was_resident,
                                             RedisClient* redis = nullptr);
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
  bool remote() const { return remote_; }
  // The cache directory's budget (nullptr without a cache directory): pin a
  // circuit there while its files are read outside this class.
  CacheBudget* budget() { return budget_.get(); }
  // A store served over HTTP: removes the cached file at `relative` (found
  // not to match its record), so the next local_root() or get() downloads
  // it again. No-op for a store on a file system.
  void discard(const std::string& relative);
  // A store served over HTTP: downloads and checks every file of circuit id
  // (as get() does, without loading it) and returns the cache directory,
  // where they lie under their store paths. A store on a file system:
  // returns its root. Throws prover::Error like get().
  std::string local_root(const std::string& id, const std::string& tenant, RedisClient* redis);

 private:
  // A store on a file system: the file at `relative` (its cached copy when
  // there is a cache directory), sealed and checked against `expected`
  // ("" = not recorded). Throws prover::Error (kUnknownCircuit, kBadCircuit,
  // kInternal).
  SealedCopy checked_local(const std::string& id, const std::string& relative, const std::string& expected);
  // A store served over HTTP: the cached file (fetched), sealed and checked
  // against its record; downloaded once more on a mismatch.
  SealedCopy checked_remote(const ArtifactFile& file);
  // The sha256 the circuit's record lists for `relative` ("" when there is
  // no record, no Redis or no digest).
  std::string recorded_sha256(const std::string& id, const std::string& tenant, const std::string& relative,
                              RedisClient* redis);
  // Downloads (if needed) and checks one file into the cache; returns its
  // path. hash_cached: hash a file an earlier process cached before use.
  std::string fetch(const ArtifactFile& file, bool hash_cached);
  // Room under the budget for `bytes` more of circuit id (load_mutex_ held).
  // Throws prover::Error(kInternal) when what is in use leaves too little.
  void make_room(const std::string& id, std::uint64_t bytes);
  // Fetches every file of circuit id into the cache (load_mutex_ held).
  CircuitInfo fetch_all(const std::string& id, const std::string& tenant, RedisClient* redis);

  ArtifactStore store_;
  bool remote_ = false;
  std::string base_url_;  // remote: ends with '/'
  std::string cache_dir_;
  prover::Prover& prover_;
  std::size_t max_resident_;
  KeyLayout keys_;
  HttpLimits http_;
  mutable std::mutex mutex_;
  std::mutex load_mutex_;
  std::set<std::string> checked_;  // cached files hashed by this process (under load_mutex_)
  std::map<std::string, std::shared_ptr<const prover::Circuit>> loaded_;
  std::list<std::string> lru_;  // front: most recent
  std::uint64_t evictions_ = 0;  // guarded by mutex_
  std::unique_ptr<CacheBudget> budget_;  // with a cache directory
};

}  // namespace zkfarm
