// keys.cc -- see keys.h.
#include "cluster/keys.h"

#include <stdexcept>

namespace zkfarm {

const char* priority_name(Priority p) {
  switch (p) {
    case Priority::kCritical: return "critical";
    case Priority::kHigh: return "high";
    case Priority::kNormal: return "normal";
    case Priority::kLow: return "low";
  }
  return "normal";
}

std::optional<Priority> parse_priority(std::string_view name) {
  for (Priority p : kAllPriorities)
    if (name == priority_name(p)) return p;
  return std::nullopt;
}

KeyLayout::KeyLayout(std::string prefix) : prefix_(std::move(prefix)) {
  if (prefix_.empty()) throw std::invalid_argument("Redis key prefix must not be empty");
  for (char c : prefix_)
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
      throw std::invalid_argument("Redis key prefix '" + prefix_ + "' contains whitespace");
}

bool is_terminal_state(std::string_view state) {
  return state == kStateDone || state == kStateFailed || state == kStateCancelled;
}

}  // namespace zkfarm
