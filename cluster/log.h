// log.h -- one-line structured logging to stderr for the farm's daemons.
//
//   ZKLOG(kInfo) << "task " << id << " sent to " << worker;
//
// Each statement emits exactly one line "2026-11-30T08:50:01.123Z INFO
// coordinator: ..." under a process-wide mutex, so lines from different
// threads never interleave. The component name is set once at start
// (set_log_component). Never log secrets (Redis passwords, CURVE keys):
// redact URLs with RedisUrl::redacted().
//
// What a peer sent or controls (worker ids, routing ids, job ids and error
// texts from a worker, Hello fields, task fields from a coordinator, HTTP
// paths) is logged through peer_text(), escaped and capped, and each line it
// can cause through ZKLOG_PEER, rate limited per source:
//
//   ZKLOG_PEER(kWarning, peer) << "dropped ... from worker " << peer_text(id);
//
// Whatever a call site does, a line never spans two lines: the sink escapes
// control bytes and cuts a line at kMaxLogLineBytes.
#pragma once

#include <chrono>
#include <cstddef>
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
// text with every byte outside printable ASCII replaced by '?' (for text
// stored for users, such as a worker's error in a job's error).
std::string printable(std::string_view text);

// What peer_text() keeps of a peer's text: 200 bytes show any real worker id,
// job id or error (the longest real error, a CUDA error with its call site,
// is under 300 bytes of which the first 200 name it) while a 10 KB string
// costs a line of at most ~220 bytes.
inline constexpr std::size_t kPeerTextMaxBytes = 200;
// Returns text for a log line: every byte outside printable ASCII (control
// bytes such as \n, \r and ESC, and bytes >= 0x7f) as \xNN, a backslash as
// \\, cut after kPeerTextMaxBytes bytes of text with "...(N bytes)" naming
// the whole length. Never throws but bad_alloc.
std::string peer_text(std::string_view text);

// A backstop for text a call site did not pass through peer_text() (an
// exception's what() quoting a server): the sink escapes every control byte
// of a line as \xNN and cuts the line after 4096 bytes (no real line is
// longer than ~600 bytes).
inline constexpr std::size_t kMaxLogLineBytes = 4096;

// Lines a peer can cause are rate limited per source (a peer's routing id,
// a worker id, "job submissions"): the first kPeerLogBurst of each
// kPeerLogWindow are logged, the rest counted and reported in one line once
// the window has passed; at most kPeerLogSources sources are told apart (the
// rest share one count). A worker's ordinary life (a join, a death, the
// join of its restart, a few late results) is a handful of lines per 10 s,
// all kept; a peer repeating a message thousands of times costs at most 11
// lines per 10 s, and a flood of distinct ids at most ~11,000.
inline constexpr std::chrono::milliseconds kPeerLogWindow{10000};
inline constexpr std::size_t kPeerLogBurst = 10;
inline constexpr std::size_t kPeerLogSources = 1024;
// True when a line caused by `source` may be logged now; false when it is
// held back (and counted). Thread-safe (one limiter per process). Also
// reports the counts of windows that have ended (as flush_peer_log()).
bool peer_log_allowed(std::string_view source);
// Logs one "suppressed ..." line per source whose window has ended with
// lines held back. Call it periodically (the daemons' loops do) so a flood
// that stops is still reported. Thread-safe.
void flush_peer_log();

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

// ZKLOG for a line that a peer can cause, rate limited per source (see
// peer_log_allowed); the peer's text still goes through peer_text().
#define ZKLOG_PEER(level, source)                                                             \
  !::zkfarm::log_enabled(::zkfarm::LogLevel::level) || !::zkfarm::peer_log_allowed(source) \
      ? (void)0                                                                               \
      : ::zkfarm::LogVoidify() & ::zkfarm::LogLine(::zkfarm::LogLevel::level)
