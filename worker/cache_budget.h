// cache_budget.h -- the worker's artifact cache on disk kept under a size
// budget (--cache-budget), least recently used circuits removed first.
//
// The cache directory holds one subdirectory per circuit, named by its id,
// with that circuit's files (zkey, PCE, verifying key, witness generator).
// Before a circuit's files are written, make_room() removes whole
// directories of other circuits, least recently used first, until the new
// bytes fit; a circuit in use (pinned: its files are being written or read,
// e.g. a witness generator about to run) is never removed, nor is the one
// making room. A removed circuit that is needed again is downloaded (or
// copied) and checked again like a new one. The order of use starts from
// the directories' modification times at construction (an earlier
// process's use) and follows used() afterwards; sizes are what the files
// occupy (their lengths), rescanned by stored().
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace zkfarm {

// No room under the budget: what is in use (pinned, or the circuit itself)
// leaves less than the new files need.
class CacheBudgetExceeded : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CacheBudget {
 public:
  // `dir`: the cache directory (created if missing); `budget_bytes`: at
  // most this many bytes of circuit files; nullopt: no budget (nothing is
  // removed). Scans dir's circuit subdirectories. Throws
  // std::filesystem::filesystem_error when dir cannot be created or read.
  CacheBudget(std::string dir, std::optional<std::uint64_t> budget_bytes);

  // Room for `bytes` more of circuit `id`'s files: removes least recently
  // used circuits (not id, not pinned) until the cache's files plus `bytes`
  // fit the budget. Returns the ids removed (logged, counted in evictions()).
  // Throws CacheBudgetExceeded naming the budget, the bytes needed and what
  // is in use when they cannot fit; nothing is removed then.
  std::vector<std::string> make_room(const std::string& id, std::uint64_t bytes);
  // Circuit id was used now (most recent).
  void used(const std::string& id);
  // Circuit id's files changed (written, removed): its size is read again.
  void stored(const std::string& id);
  // While pinned (counted), a circuit's files are never removed.
  void pin(const std::string& id);
  void unpin(const std::string& id);

  std::optional<std::uint64_t> budget() const { return budget_; }
  std::uint64_t bytes() const;      // the circuits' files now
  std::uint64_t evictions() const;  // circuits removed since construction

  // --cache-budget's text: "auto" (auto_bytes), "none", bytes, or a number
  // with GiB/G, MiB/M, GB, MB. Throws std::invalid_argument naming the flag
  // and the text.
  static std::optional<std::uint64_t> parse(const std::string& text, std::uint64_t auto_bytes);
  // The default budget (auto): 90% of what the cache could hold when the
  // worker starts, its files plus the free space of its file system, so
  // that the cache never takes the last 10% of a disk that logs, the
  // witness generators' run directories and other writers share. nullopt
  // when the free space cannot be read.
  static std::optional<std::uint64_t> auto_budget(const std::string& dir);

 private:
  std::uint64_t size_of(const std::string& id) const;  // bytes of dir/id's files

  const std::string dir_;
  const std::optional<std::uint64_t> budget_;
  mutable std::mutex mutex_;
  std::list<std::string> order_;            // front: most recently used
  std::map<std::string, std::uint64_t> size_;  // per circuit
  std::map<std::string, int> pins_;
  std::uint64_t total_ = 0, evictions_ = 0;
};

// Pins a circuit for its lifetime (CacheBudget::pin/unpin).
class CacheBudgetPin {
 public:
  CacheBudgetPin(CacheBudget& budget, std::string id) : budget_(budget), id_(std::move(id)) { budget_.pin(id_); }
  ~CacheBudgetPin() { budget_.unpin(id_); }
  CacheBudgetPin(const CacheBudgetPin&) = delete;
  CacheBudgetPin& operator=(const CacheBudgetPin&) = delete;

 private:
  CacheBudget& budget_;
  std::string id_;
};

}  // namespace zkfarm
