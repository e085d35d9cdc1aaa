// log.cc -- see log.h.
#include "cluster/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

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
  std::lock_guard<std::mutex> lock(log_mutex());
  std::fprintf(stderr, "%s.%03ldZ %s %s: %s\n", stamp, millis, level_name(level_),
               component().c_str(), stream_.str().c_str());
  std::fflush(stderr);
}

std::string printable(std::string_view text) {
  std::string out;
  for (char c : text) out += (c >= 32 && c < 127) ? c : '?';
  return out;
}

}  // namespace zkfarm
