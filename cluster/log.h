// log.h -- one-line structured logging to stderr for the farm's daemons.
//
//   ZKLOG(kInfo) << "task " << id << " sent to " << worker;
//
// Each statement emits exactly one line "2026-11-30T08:50:01.123Z INFO
// coordinator: ..." under a process-wide mutex, so lines from different
// threads never interleave. The component name is set once at start
// (set_log_component). Never log secrets (Redis passwords, CURVE keys):
// redact URLs with RedisUrl::redacted().
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace zkfarm {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Sets the name printed on every line (e.g. "coordinator", "worker[gpu3]").
void set_log_component(std::string component);
// Lines below level are dropped. ZKFARM_LOG_LEVEL=debug|info|warning|error
// sets it at start (read by init_log_from_env()).
void set_log_level(LogLevel level);
void init_log_from_env();
bool log_enabled(LogLevel level);
// text with every byte outside printable ASCII replaced by '?': for logging
// what a peer sent (worker ids, ZeroMQ routing ids) without control bytes.
std::string printable(std::string_view text);

class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine();
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;
  template <class T>
  LogLine& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

}  // namespace zkfarm

namespace zkfarm {
// Turns "LogLine << ..." into void so ZKLOG can be a single expression (safe
// inside an unbraced if/else).
struct LogVoidify {
  void operator&(const LogLine&) {}
};
}  // namespace zkfarm

#define ZKLOG(level)                                           \
  !::zkfarm::log_enabled(::zkfarm::LogLevel::level)            \
      ? (void)0                                                \
      : ::zkfarm::LogVoidify() & ::zkfarm::LogLine(::zkfarm::LogLevel::level)
