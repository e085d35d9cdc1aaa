// keys.cc -- see keys.h.
#include "cluster/keys.h"

#include <stdexcept>
#include <string>

namespace zkfarm {

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
