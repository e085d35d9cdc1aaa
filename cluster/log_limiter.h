// log_limiter.h -- rate limits repeated warnings per source (a peer), with
// a count of what was held back, so a peer sending garbage cannot flood the
// log (5,000 garbage frames once gave 5,008 warning lines).
//
//   if (limiter.allow(peer, now)) ZKLOG(kWarning) << "dropped ... from " << peer;
//   ...
//   limiter.flush(now, [](const std::string& peer, std::size_t n, auto window) {
//     ZKLOG(kWarning) << "(" << n << " more from peer " << peer << " in the last " << ...);
//   });
//
// Per source, the first `burst` warnings of a window are logged; the rest
// are counted and reported by flush() once the window has passed. Sources
// beyond max_sources share one entry ("other peers"), so a flood of distinct
// identities is bounded too. Not thread-safe: one per thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <string>

namespace zkfarm {

class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  // The key flush() reports for sources over max_sources.
  static constexpr const char* kOtherSources = "(other peers)";

  LogLimiter(std::chrono::milliseconds window, std::size_t burst, std::size_t max_sources);

  // True when a warning from `source` should be logged now; false when it is
  // held back (and counted).
  bool allow(const std::string& source, Clock::time_point now);
  // For every source whose window has ended with warnings held back, calls
  // report(source, held_back, window) and starts it afresh; forgets sources
  // idle for a whole window.
  void flush(Clock::time_point now,
             const std::function<void(const std::string& source, std::size_t held_back,
                                      std::chrono::milliseconds window)>& report);
  std::chrono::milliseconds window() const { return window_; }

 private:
  struct Entry {
    Clock::time_point window_start;
    std::size_t logged = 0, held_back = 0;
  };
  std::chrono::milliseconds window_;
  std::size_t burst_, max_sources_;
  std::map<std::string, Entry> sources_;
};

}  // namespace zkfarm
