// credits_policy.h -- how many tasks the worker asks each coordinator for:
// its credit decisions, with no ZeroMQ, no threads and no clock of its own.
//
// Budget: the worker holds at most `budget` tasks at once across all its
// coordinators (WorkerConfig::task_budget(): slots + prefetch +
// witgen_workers, so while the provers prove, the preparer and the
// generator pool work on the next tasks). The credits granted and not yet
// used plus the tasks held never exceed it: the free credits are the budget
// less both, and none are offered while held tasks alone exceed it.
//
// Who gets a credit: only coordinators that welcomed us (Hello says 0
// credits: a coordinator that never answers must not hold part of the
// budget). Free credits go one at a time, round robin from the coordinator
// after the last one served; coordinators that recently left credits unused
// come last (for kIdleMemory after a withdrawal), so a coordinator with
// work is served before one without.
//
// Withdrawal: while more than one coordinator is welcomed, a coordinator
// that leaves its credits unused for kCreditIdleAfter (since its first
// credit of a grant, or its last task) has all of them withdrawn
// (Credit.withdraw) and offered to the others, so a coordinator without
// work never strands the device. A task that crosses a withdrawal on the
// wire is still taken (it waits in the worker's queue: the device never
// runs more than its slots); it counts as held, so the budget is exceeded
// only until it finishes. With one coordinator nothing is withdrawn: there
// is nobody else to offer the credit to.
//
// Draining: no credit moves at all (the coordinators were told Shutdown).
// A coordinator that dies or rejects us is forgotten (its credits count as
// unused by nobody), and a new Welcome starts from zero credits.
//
// Threading: none; the worker's link thread calls everything. balance()
// returns its decisions (the Credit messages to send, in order) for the
// caller to carry out.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace zkfarm {

// How long a coordinator may leave a credit unused while another coordinator
// is connected before the credit moves on, and how long a coordinator whose
// credit was withdrawn counts as idle (offered credits after the others).
// A coordinator with work uses a credit within one scheduling pass
// (milliseconds), so 200 ms only moves credits nobody wanted.
inline constexpr std::chrono::milliseconds kCreditIdleAfter{200};
inline constexpr std::chrono::milliseconds kIdleMemory{1000};

// One Credit message to send: grant `credits` more to a coordinator, or
// withdraw `credits` it holds unused.
struct CreditMove {
  enum class Kind { kGrant, kWithdraw };
  std::size_t coordinator = 0;  // index in the worker's coordinator list
  Kind kind = Kind::kGrant;
  std::uint32_t credits = 0;
  bool operator==(const CreditMove&) const = default;
};

class CreditsPolicy {
 public:
  using Clock = std::chrono::steady_clock;

  // `coordinators`: how many sessions the worker keeps (indices 0..n-1);
  // `budget`: the tasks it holds at most. Throws std::invalid_argument if
  // either is 0.
  CreditsPolicy(std::size_t coordinators, std::uint32_t budget);

  // Coordinator c welcomed us: it holds none of our credits yet.
  void welcomed(std::size_t c);
  // Coordinator c is gone (silent past dead-after, or it rejected us): it
  // gets no credits and those it held are forgotten.
  void ended(std::size_t c);
  // Coordinator c sent a task: it used one credit (if it held any: a task
  // that crossed a withdrawal used none), and it is using its credits.
  void task_received(std::size_t c, Clock::time_point now);

  // The Credit messages to send now, given the tasks the worker holds
  // (queued, preparing, prepared, proving or generating, not yet answered)
  // and whether it is draining. Updates the credits it records as granted.
  std::vector<CreditMove> balance(Clock::time_point now, std::size_t held, bool draining);

  // Credits coordinator c holds unused, as far as the worker knows.
  std::uint32_t granted(std::size_t c) const;
  std::uint32_t budget() const { return budget_; }

 private:
  struct Coordinator {
    bool welcomed = false;
    std::uint32_t granted = 0;
    // Since when its credits have gone unused; after a withdrawal, until
    // when it counts as idle (others are offered credits first).
    Clock::time_point credit_unused_since, idle_until;
  };
  // The welcomed coordinator to offer the next credit to, or nullptr.
  Coordinator* next_recipient(Clock::time_point now);

  std::vector<Coordinator> coordinators_;
  std::uint32_t budget_;
  std::size_t next_ = 0;  // round robin: where the next search starts
};

}  // namespace zkfarm
