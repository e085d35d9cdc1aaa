// cache_budget.cc -- see cache_budget.h.
#include "worker/cache_budget.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "cluster/log.h"
#include "prover/device_config.h"
#include "schema/job.h"

namespace zkfarm {

namespace fs = std::filesystem;

namespace {

std::string mib(std::uint64_t bytes) {
  char text[48];
  std::snprintf(text, sizeof text, "%.1f MiB (%llu bytes)", static_cast<double>(bytes) / (1 << 20),
                static_cast<unsigned long long>(bytes));
  return text;
}

}  // namespace

CacheBudget::CacheBudget(std::string dir, std::optional<std::uint64_t> budget_bytes)
    : dir_(std::move(dir)), budget_(budget_bytes) {
  fs::create_directories(dir_);
  // Least recently used first by modification time, then most recent to
  // the front.
  std::vector<std::pair<fs::file_time_type, std::string>> found;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string id = entry.path().filename().string();
    std::error_code ec;
    if (!entry.is_directory(ec) || !is_valid_circuit_id(id)) continue;
    found.emplace_back(fs::last_write_time(entry.path(), ec), id);
  }
  std::sort(found.begin(), found.end());
  for (const auto& [time, id] : found) {
    order_.push_front(id);
    size_[id] = size_of(id);
    total_ += size_[id];
  }
}

std::uint64_t CacheBudget::size_of(const std::string& id) const {
  std::uint64_t bytes = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir_ + "/" + id, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      const auto n = it->file_size(size_ec);
      if (!size_ec) bytes += n;
    }
  }
  return bytes;
}

std::vector<std::string> CacheBudget::make_room(const std::string& id, std::uint64_t bytes) {
  std::vector<std::string> removed;
  if (!budget_) return removed;
  std::lock_guard<std::mutex> lock(mutex_);
  // What may go, least recently used first; and whether that is enough.
  std::uint64_t freeable = 0;
  std::vector<std::string> candidates;
  for (auto it = order_.rbegin(); it != order_.rend(); ++it)
    if (*it != id && !pins_.count(*it)) {
      candidates.push_back(*it);
      freeable += size_[*it];
    }
  if (total_ + bytes <= *budget_) return removed;
  if (total_ - freeable + bytes > *budget_) {
    std::string in_use;
    for (const auto& [pinned, count] : pins_) in_use += (in_use.empty() ? "" : ", ") + pinned;
    throw CacheBudgetExceeded("--cache-budget " + mib(*budget_) + " has no room for circuit " + id + ": it needs " +
                              mib(bytes) + " more, and the circuits in use (" + (in_use.empty() ? id : in_use) +
                              ") already hold " + mib(total_ - freeable));
  }
  for (const std::string& victim : candidates) {
    if (total_ + bytes <= *budget_) break;
    std::error_code ec;
    fs::remove_all(dir_ + "/" + victim, ec);
    const std::uint64_t left = size_of(victim);  // what could not be removed stays counted
    ZKLOG(kInfo) << "cache budget " << mib(*budget_) << ": removed circuit " << victim << "'s files ("
                 << mib(size_[victim] - std::min(left, size_[victim])) << ", least recently used) to make room for "
                 << id << (ec ? " (not all: " + ec.message() + ")" : std::string());
    total_ -= size_[victim] - std::min(left, size_[victim]);
    if (left == 0) {
      size_.erase(victim);
      order_.remove(victim);
    } else {
      size_[victim] = left;
    }
    ++evictions_;
    removed.push_back(victim);
  }
  return removed;
}

void CacheBudget::used(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!order_.empty() && order_.front() == id) return;
  order_.remove(id);
  order_.push_front(id);
  size_.emplace(id, 0);
}

void CacheBudget::stored(const std::string& id) {
  const std::uint64_t now = size_of(id);
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = size_.emplace(id, 0);
  if (inserted) order_.push_front(id);
  total_ = total_ - it->second + now;
  it->second = now;
}

void CacheBudget::pin(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++pins_[id];
}

void CacheBudget::unpin(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = pins_.find(id); it != pins_.end() && --it->second <= 0) pins_.erase(it);
}

std::uint64_t CacheBudget::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_;
}

std::uint64_t CacheBudget::evictions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return evictions_;
}

std::optional<std::uint64_t> CacheBudget::parse(const std::string& text, std::uint64_t auto_bytes) {
  if (text == "auto") return auto_bytes;
  if (text == "none") return std::nullopt;
  try {
    if (text == "0") throw std::invalid_argument(text);
    return prover::parse_device_budget(text);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument("--cache-budget '" + text +
                                "': expected auto, none, a number of bytes above 0, or a number with GiB, MiB, GB "
                                "or MB (e.g. 200GiB)");
  }
}

std::optional<std::uint64_t> CacheBudget::auto_budget(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return std::nullopt;
  std::uint64_t held = 0;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      const auto n = it->file_size(size_ec);
      if (!size_ec) held += n;
    }
  }
  const std::uint64_t room = held + std::uint64_t(st.f_bavail) * st.f_frsize;
  return room / 10 * 9;
}

}  // namespace zkfarm
