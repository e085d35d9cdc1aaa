// resident_cache.h -- device-resident circuit state (proving key + PCE) per
// circuit id, least recently used evicted first when device memory runs out.
//
// A worker proves many partitions of few circuits: the key and PCE are
// uploaded once and reused, so a proof moves only its witness. Device memory
// is the limit (a PoRep-32G BLS12-381 key is ~75 GB of an H200's 141), so
// the cache does not count circuits: it loads until an upload (or a proof's
// scratch) fails with DeviceOutOfMemory, then evicts the least recently
// used entries one at a time and retries. An optional byte budget makes it
// evict before the device is full (tests, or leaving room for other work).
//
// Entries are shared_ptrs: get() hands one out, so an entry evicted while a
// proof still uses it is freed when that proof drops it (stream-ordered
// frees: the memory returns after the proof's work).
//
// The state type T (e.g. DeviceCircuit<Curve> below) must have
// device_bytes(). Thread-safe: one mutex; loads run under it (uploads are
// serialized anyway: one copy engine direction, one stream).
#ifndef ZKFARM_KERNELS_CUDA_RESIDENT_CACHE_H_
#define ZKFARM_KERNELS_CUDA_RESIDENT_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/device_context.h"
#include "kernels/cuda/device_key.h"
#include "kernels/cuda/groth16_device.h"

namespace zkfarm::cuda {

// A circuit's device-resident state: key and PCE.
template <class Curve>
struct DeviceCircuit {
  DeviceProvingKey<Curve> key;
  DevicePce<typename Curve::Fr> pce;
  std::string plan;  // MemoryPlan::summary() of the placement, for logs ("" when not planned)
  // How proofs use the key's placement (DeviceProver::prove's plan).
  MemoryPlan memory_plan = MemoryPlan::unplanned();
  std::size_t device_bytes() const { return key.device_bytes() + pce.device_bytes(); }
};

struct ResidentCacheUsage {
  std::size_t entries = 0;
  std::size_t resident_bytes = 0;  // sum of the entries' device_bytes()
  std::uint64_t loads = 0, hits = 0, evictions = 0;
  MemoryInfo device;  // cudaMemGetInfo now
};

class ResidentCache {
 public:
  // budget_bytes = 0: no budget, evict only on DeviceOutOfMemory.
  explicit ResidentCache(const DeviceContext& ctx, std::size_t budget_bytes = 0)
      : ctx_(ctx), budget_bytes_(budget_bytes) {}

  // The state for id, made by make() (which uploads and returns a T) when
  // not resident. On DeviceOutOfMemory from make(), or when the budget
  // would be exceeded, evicts the least recently used other entry and
  // retries; rethrows DeviceOutOfMemory once nothing is left to evict.
  // Other exceptions from make() pass through. *loaded (optional) tells
  // whether make() ran.
  template <class T, class Make>
  std::shared_ptr<const T> get(const std::string& id, Make&& make, bool* loaded = nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    ctx_.activate();  // uploads and frees may run on any host thread
    if (loaded) *loaded = false;
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->id == id) {
        entries_.splice(entries_.begin(), entries_, it);  // most recent first
        ++hits_;
        return std::static_pointer_cast<const T>(entries_.front().state);
      }
    }
    for (;;) {
      try {
        auto state = std::make_shared<const T>(make());
        const std::size_t bytes = state->device_bytes();
        if (budget_bytes_ != 0 && resident_bytes_locked() + bytes > budget_bytes_ && !entries_.empty()) {
          state.reset();
          evict_lru_locked();
          continue;
        }
        entries_.push_front(Entry{id, state, bytes});
        ++loads_;
        if (loaded) *loaded = true;
        return state;
      } catch (const DeviceOutOfMemory&) {
        if (entries_.empty()) throw;
        evict_lru_locked();
      }
    }
  }

  // Runs body(); on DeviceOutOfMemory evicts the least recently used entry
  // other than keep_id and runs it again, until nothing else is left (then
  // rethrows). For a proof's scratch memory.
  template <class Body>
  auto run_evicting(const std::string& keep_id, Body&& body) {
    for (;;) {
      try {
        return body();
      } catch (const DeviceOutOfMemory&) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!evict_lru_locked(&keep_id)) throw;
      }
    }
  }

  // Drops id's entry if resident; returns whether it was.
  bool evict(const std::string& id) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->id == id) {
        ctx_.activate();  // the frees are queued on this device's stream
        entries_.erase(it);
        ++evictions_;
        return true;
      }
    }
    return false;
  }

  // Resident ids, most recently used first.
  std::vector<std::string> resident() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> ids;
    for (const auto& e : entries_) ids.push_back(e.id);
    return ids;
  }

  ResidentCacheUsage usage() const {
    ResidentCacheUsage u;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      u.entries = entries_.size();
      u.resident_bytes = resident_bytes_locked();
      u.loads = loads_;
      u.hits = hits_;
      u.evictions = evictions_;
    }
    u.device = ctx_.memory();
    return u;
  }

 private:
  struct Entry {
    std::string id;
    std::shared_ptr<const void> state;
    std::size_t bytes = 0;
  };

  std::size_t resident_bytes_locked() const {
    std::size_t total = 0;
    for (const auto& e : entries_) total += e.bytes;
    return total;
  }

  // Evicts the least recently used entry (other than *keep); false if none.
  // Waits for the device's queued work so the freed memory is reusable by
  // the retry (the pool releases stream-ordered frees after their stream).
  bool evict_lru_locked(const std::string* keep = nullptr) {
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
      if (keep && it->id == *keep) continue;
      ctx_.activate();
      entries_.erase(std::next(it).base());
      ++evictions_;
      ctx_.synchronize();
      return true;
    }
    return false;
  }

  const DeviceContext& ctx_;
  const std::size_t budget_bytes_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // front: most recently used
  std::uint64_t loads_ = 0, hits_ = 0, evictions_ = 0;
};

}  // namespace zkfarm::cuda

#endif  // ZKFARM_KERNELS_CUDA_RESIDENT_CACHE_H_
