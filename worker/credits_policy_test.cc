// credits_policy_test -- the worker's credit decisions, driven directly:
// the budget, round robin, withdrawal of unused credits, draining and
// sessions that end or start again.
#include "worker/credits_policy.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace zkfarm {
namespace {

using Clock = CreditsPolicy::Clock;
using Kind = CreditMove::Kind;

CreditMove grant(std::size_t c) { return {c, Kind::kGrant, 1}; }
CreditMove withdraw(std::size_t c, std::uint32_t n) { return {c, Kind::kWithdraw, n}; }

const Clock::time_point t0 = Clock::now();
Clock::time_point at(int ms) { return t0 + std::chrono::milliseconds(ms); }

TEST(CreditsPolicy, RefusesAnEmptyFarmOrBudget) {
  EXPECT_THROW(CreditsPolicy(0, 3), std::invalid_argument);
  EXPECT_THROW(CreditsPolicy(1, 0), std::invalid_argument);
}

TEST(CreditsPolicy, NothingBeforeAWelcome) {
  CreditsPolicy policy(2, 3);
  EXPECT_TRUE(policy.balance(at(0), 0, false).empty());
  EXPECT_TRUE(policy.balance(at(5000), 0, false).empty());
}

TEST(CreditsPolicy, GrantsTheWholeBudgetOneCreditAtATime) {
  CreditsPolicy policy(1, 3);
  policy.welcomed(0);
  EXPECT_EQ(policy.balance(at(0), 0, false), (std::vector<CreditMove>{grant(0), grant(0), grant(0)}));
  EXPECT_EQ(policy.granted(0), 3u);
  // The budget is out: nothing more until a credit is used and its task answered.
  EXPECT_TRUE(policy.balance(at(10), 0, false).empty());
}

TEST(CreditsPolicy, HeldTasksAndCreditsOutNeverExceedTheBudget) {
  CreditsPolicy policy(1, 3);
  policy.welcomed(0);
  EXPECT_EQ(policy.balance(at(0), 2, false).size(), 1u);  // two tasks held: one credit free
  policy.task_received(0, at(5));                        // the credit used: three held, none out
  EXPECT_EQ(policy.granted(0), 0u);
  EXPECT_TRUE(policy.balance(at(6), 3, false).empty());
  // One task answered: one credit again.
  EXPECT_EQ(policy.balance(at(7), 2, false), std::vector<CreditMove>{grant(0)});
}

TEST(CreditsPolicy, HeldTasksOverTheBudgetGetNothing) {
  // A task that crossed a withdrawal: more held than the budget for a moment.
  CreditsPolicy policy(1, 2);
  policy.welcomed(0);
  EXPECT_TRUE(policy.balance(at(0), 3, false).empty());
  EXPECT_TRUE(policy.balance(at(1), 2, false).empty());
  EXPECT_EQ(policy.balance(at(2), 1, false), std::vector<CreditMove>{grant(0)});
}

TEST(CreditsPolicy, ATaskWithoutACreditUsesNone) {
  CreditsPolicy policy(1, 2);
  policy.welcomed(0);
  policy.task_received(0, at(0));
  EXPECT_EQ(policy.granted(0), 0u);
  EXPECT_EQ(policy.balance(at(1), 1, false), std::vector<CreditMove>{grant(0)});
}

TEST(CreditsPolicy, DrainingMovesNothing) {
  CreditsPolicy policy(2, 4);
  policy.welcomed(0);
  policy.welcomed(1);
  EXPECT_TRUE(policy.balance(at(0), 0, true).empty());
  EXPECT_EQ(policy.balance(at(1), 0, false).size(), 4u);
  // Unused credits stay where they are while draining, however long.
  EXPECT_TRUE(policy.balance(at(60000), 0, true).empty());
}

TEST(CreditsPolicy, RoundRobinBetweenCoordinators) {
  CreditsPolicy policy(3, 5);
  policy.welcomed(0);
  policy.welcomed(2);
  EXPECT_EQ(policy.balance(at(0), 0, false),
            (std::vector<CreditMove>{grant(0), grant(2), grant(0), grant(2), grant(0)}));
  // 0 uses a credit and its task is answered: the free credit goes on from
  // where the last one stopped.
  policy.task_received(0, at(10));
  EXPECT_EQ(policy.balance(at(11), 0, false), std::vector<CreditMove>{grant(2)});
}

TEST(CreditsPolicy, WithdrawsCreditsLeftUnusedWhileAnotherCoordinatorIsConnected) {
  CreditsPolicy policy(2, 2);
  policy.welcomed(0);
  policy.welcomed(1);
  EXPECT_EQ(policy.balance(at(0), 0, false), (std::vector<CreditMove>{grant(0), grant(1)}));
  policy.task_received(1, at(100));  // coordinator 1 has work; 0 has none
  EXPECT_TRUE(policy.balance(at(199), 1, false).empty());
  // 0's credit unused for kCreditIdleAfter: withdrawn and offered to 1.
  EXPECT_EQ(policy.balance(at(200), 1, false), (std::vector<CreditMove>{withdraw(0, 1), grant(1)}));
  EXPECT_EQ(policy.granted(0), 0u);
  EXPECT_EQ(policy.granted(1), 1u);
}

TEST(CreditsPolicy, AnIdleCoordinatorIsOfferedCreditsLast) {
  CreditsPolicy policy(2, 2);
  policy.welcomed(0);
  policy.welcomed(1);
  policy.balance(at(0), 0, false);   // one credit each
  policy.task_received(1, at(150));  // 1 uses its credit; its task is held
  // At 200 ms: 0's credit withdrawn; the free one goes to 1, not back to 0.
  EXPECT_EQ(policy.balance(at(200), 1, false), (std::vector<CreditMove>{withdraw(0, 1), grant(1)}));
  policy.task_received(1, at(210));
  // 1's two tasks answered: both free credits go to 1 while 0 counts as idle.
  EXPECT_EQ(policy.balance(at(300), 0, false), (std::vector<CreditMove>{grant(1), grant(1)}));
}

TEST(CreditsPolicy, AnIdleCoordinatorStillGetsCreditsNobodyElseCanTake) {
  CreditsPolicy policy(2, 1);
  policy.welcomed(0);
  policy.welcomed(1);
  EXPECT_EQ(policy.balance(at(0), 0, false), std::vector<CreditMove>{grant(0)});
  // 0 leaves it unused: withdrawn; 1 is the only one not idle and gets it.
  EXPECT_EQ(policy.balance(at(200), 0, false), (std::vector<CreditMove>{withdraw(0, 1), grant(1)}));
  // 1 goes away: 0, though idle, is the only coordinator left.
  policy.ended(1);
  EXPECT_EQ(policy.balance(at(210), 0, false), std::vector<CreditMove>{grant(0)});
}

TEST(CreditsPolicy, WithOneCoordinatorNothingIsWithdrawn) {
  CreditsPolicy policy(1, 2);
  policy.welcomed(0);
  EXPECT_EQ(policy.balance(at(0), 0, false).size(), 2u);
  EXPECT_TRUE(policy.balance(at(3600 * 1000), 0, false).empty());
  EXPECT_EQ(policy.granted(0), 2u);
}

TEST(CreditsPolicy, AnEndedSessionsCreditsGoToTheOthers) {
  CreditsPolicy policy(2, 2);
  policy.welcomed(0);
  policy.welcomed(1);
  policy.balance(at(0), 0, false);
  policy.ended(0);
  EXPECT_EQ(policy.granted(0), 0u);
  EXPECT_EQ(policy.balance(at(10), 0, false), std::vector<CreditMove>{grant(1)});
  EXPECT_EQ(policy.granted(1), 2u);
}

TEST(CreditsPolicy, ANewWelcomeStartsFromZeroCredits) {
  // A restarted coordinator holds none of the credits its predecessor had.
  CreditsPolicy policy(1, 2);
  policy.welcomed(0);
  EXPECT_EQ(policy.balance(at(0), 0, false).size(), 2u);
  policy.welcomed(0);
  EXPECT_EQ(policy.granted(0), 0u);
  EXPECT_EQ(policy.balance(at(10), 0, false).size(), 2u);
}

}  // namespace
}  // namespace zkfarm
