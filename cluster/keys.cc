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
  job_prefix_ = prefix_;
}

KeyLayout KeyLayout::for_tenant(std::string_view tenant) const {
  if (!is_valid_tenant_name(tenant))
    throw std::invalid_argument("'" + std::string(tenant) + "' is not a tenant name (" + kTenantNameRule + ")");
  KeyLayout out(prefix_);
  out.tenant_ = std::string(tenant);
  out.job_prefix_ = tenant_prefix(tenant);
  return out;
}

bool is_valid_tenant_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxTenantNameLength || name == kDefaultTenant) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (i > 0 && (c == '-' || c == '_'));
    if (!ok) return false;
  }
  return true;
}

bool is_terminal_state(std::string_view state) {
  return state == kStateDone || state == kStateFailed || state == kStateCancelled;
}

}  // namespace zkfarm
