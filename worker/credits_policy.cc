// credits_policy.cc -- see credits_policy.h.
#include "worker/credits_policy.h"

#include <stdexcept>
#include <string>

namespace zkfarm {

CreditsPolicy::CreditsPolicy(std::size_t coordinators, std::uint32_t budget)
    : coordinators_(coordinators), budget_(budget) {
  if (coordinators == 0) throw std::invalid_argument("credits policy: no coordinator");
  if (budget == 0) throw std::invalid_argument("credits policy: a budget of 0 tasks");
}

void CreditsPolicy::welcomed(std::size_t c) {
  Coordinator& coordinator = coordinators_.at(c);
  coordinator.welcomed = true;
  coordinator.granted = 0;  // a new session: the coordinator holds none of our credits
}

void CreditsPolicy::ended(std::size_t c) {
  Coordinator& coordinator = coordinators_.at(c);
  coordinator.welcomed = false;
  coordinator.granted = 0;
}

void CreditsPolicy::task_received(std::size_t c, Clock::time_point now) {
  Coordinator& coordinator = coordinators_.at(c);
  if (coordinator.granted > 0) --coordinator.granted;
  coordinator.credit_unused_since = now;
}

std::uint32_t CreditsPolicy::granted(std::size_t c) const { return coordinators_.at(c).granted; }

CreditsPolicy::Coordinator* CreditsPolicy::next_recipient(Clock::time_point now) {
  for (bool allow_idle : {false, true}) {
    for (std::size_t k = 0; k < coordinators_.size(); ++k) {
      Coordinator& candidate = coordinators_[(next_ + k) % coordinators_.size()];
      if (candidate.welcomed && (allow_idle || candidate.idle_until <= now)) return &candidate;
    }
  }
  return nullptr;
}

std::vector<CreditMove> CreditsPolicy::balance(Clock::time_point now, std::size_t held, bool draining) {
  std::vector<CreditMove> moves;
  std::uint64_t granted = 0;
  std::size_t open = 0;
  for (const Coordinator& coordinator : coordinators_) {
    granted += coordinator.granted;
    if (coordinator.welcomed) ++open;
  }
  if (draining || open == 0) return moves;
  // Withdraw credits left unused while another coordinator could use them.
  if (open > 1) {
    for (std::size_t c = 0; c < coordinators_.size(); ++c) {
      Coordinator& coordinator = coordinators_[c];
      if (!coordinator.welcomed || coordinator.granted == 0 || now - coordinator.credit_unused_since < kCreditIdleAfter)
        continue;
      moves.push_back({c, CreditMove::Kind::kWithdraw, coordinator.granted});
      granted -= coordinator.granted;
      coordinator.granted = 0;
      coordinator.idle_until = now + kIdleMemory;
      next_ = c + 1;
    }
  }
  // Free credits: the budget less the tasks held and the credits out.
  const std::uint64_t used = held + granted;
  std::uint64_t free = budget_ > used ? budget_ - used : 0;
  while (free > 0) {
    Coordinator* chosen = next_recipient(now);
    if (!chosen) break;
    const std::size_t c = static_cast<std::size_t>(chosen - coordinators_.data());
    next_ = c + 1;
    if (chosen->granted == 0) chosen->credit_unused_since = now;
    ++chosen->granted;
    --free;
    // One message per credit, as the coordinators have always received them.
    moves.push_back({c, CreditMove::Kind::kGrant, 1});
  }
  return moves;
}

}  // namespace zkfarm
