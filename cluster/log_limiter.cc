// log_limiter.cc -- see log_limiter.h.
#include "cluster/log_limiter.h"

namespace zkfarm {

LogLimiter::LogLimiter(std::chrono::milliseconds window, std::size_t burst, std::size_t max_sources)
    : window_(window), burst_(burst), max_sources_(max_sources) {}

bool LogLimiter::allow(const std::string& source, Clock::time_point now) {
  auto it = sources_.find(source);
  if (it == sources_.end()) {
    const std::string key = sources_.size() >= max_sources_ ? kOtherSources : source;
    it = sources_.emplace(key, Entry{now, 0, 0}).first;
  }
  Entry& e = it->second;
  if (e.logged < burst_) {
    ++e.logged;
    return true;
  }
  ++e.held_back;
  return false;
}

void LogLimiter::flush(Clock::time_point now,
                       const std::function<void(const std::string&, std::size_t, std::chrono::milliseconds)>& report) {
  for (auto it = sources_.begin(); it != sources_.end();) {
    Entry& e = it->second;
    if (now - e.window_start < window_) {
      ++it;
      continue;
    }
    if (e.held_back > 0) {
      report(it->first, e.held_back, window_);
      e = Entry{now, 0, 0};  // still noisy: a new window
      ++it;
    } else {
      it = sources_.erase(it);  // quiet for a whole window
    }
  }
}

}  // namespace zkfarm
