// log.cc -- see log.h.
#include "cluster/log.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

#include "cluster/log_limiter.h"

namespace zkfarm {
namespace {

std::mutex& log_mutex() {
  static std::mutex m;
  return m;
}
std::string& component() {
  static std::string c = "zkfarm";
  return c;
}
std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARN";
    case LogLevel::kError: return "ERROR";
  }
  return "?";
}

}  // namespace

void set_log_component(std::string name) {
  std::lock_guard<std::mutex> lock(log_mutex());
  component() = std::move(name);
}

void set_log_level(LogLevel level) { min_level = static_cast<int>(level); }

void init_log_from_env() {
  const char* env = std::getenv("ZKFARM_LOG_LEVEL");
  if (!env) return;
  std::string v(env);
  if (v == "debug") set_log_level(LogLevel::kDebug);
  if (v == "info") set_log_level(LogLevel::kInfo);
  if (v == "warning") set_log_level(LogLevel::kWarning);
  if (v == "error") set_log_level(LogLevel::kError);
}

bool log_enabled(LogLevel level) { return static_cast<int>(level) >= min_level.load(); }

LogLine::~LogLine() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t seconds = system_clock::to_time_t(now);
  const long millis = static_cast<long>(duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  // One line whatever was streamed: control bytes escaped (a NUL would also
  // cut the line short), the length capped.
  static constexpr char kHex[] = "0123456789abcdef";
  const std::string raw = stream_.str();
  std::string text;
  text.reserve(std::min(raw.size(), kMaxLogLineBytes) + 32);
  for (char c : raw) {
    if (text.size() >= kMaxLogLineBytes) {
      text += "...(line of " + std::to_string(raw.size()) + " bytes cut)";
      break;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      text += "\\x";
      text += kHex[byte >> 4];
      text += kHex[byte & 15];
    } else {
      text += c;
    }
  }
  std::lock_guard<std::mutex> lock(log_mutex());
  std::fprintf(stderr, "%s.%03ldZ %s %s: %s\n", stamp, millis, level_name(level_),
               component().c_str(), text.c_str());
  std::fflush(stderr);
}

std::string printable(std::string_view text) {
  std::string out;
  for (char c : text) out += (c >= 32 && c < 127) ? c : '?';
  return out;
}

std::string peer_text(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  const std::string_view kept = text.substr(0, kPeerTextMaxBytes);
  out.reserve(kept.size() + 24);
  for (char c : kept) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    }
  }
  if (kept.size() < text.size()) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

namespace {

// The process's limiter of lines peers cause, and its lock.
struct PeerLog {
  std::mutex mutex;
  LogLimiter limiter{kPeerLogWindow, kPeerLogBurst, kPeerLogSources};
  LogLimiter::Clock::time_point last_flush = LogLimiter::Clock::now();
};
PeerLog& peer_log() {
  static PeerLog log;
  return log;
}

// Needs peer_log().mutex. Logs the held-back counts of ended windows; at
// most once a second (flush walks every source).
void flush_locked(PeerLog& log, LogLimiter::Clock::time_point now) {
  if (now - log.last_flush < std::chrono::seconds(1)) return;
  log.last_flush = now;
  log.limiter.flush(now, [](const std::string& source, std::size_t held_back, std::chrono::milliseconds window) {
    ZKLOG(kWarning) << "suppressed " << held_back << " more lines about " << peer_text(source) << " in the last "
                    << window.count() / 1000 << " s";
  });
}

}  // namespace

bool peer_log_allowed(std::string_view source) {
  PeerLog& log = peer_log();
  const auto now = LogLimiter::Clock::now();
  std::lock_guard<std::mutex> lock(log.mutex);
  flush_locked(log, now);
  return log.limiter.allow(std::string(source), now);
}

void flush_peer_log() {
  PeerLog& log = peer_log();
  std::lock_guard<std::mutex> lock(log.mutex);
  flush_locked(log, LogLimiter::Clock::now());
}

}  // namespace zkfarm
