// cache_budget_test.cc -- CacheBudget on real files in a temporary
// directory: least recently used circuits removed first, never a pinned one
// nor the one making room, the budget refused when what is in use leaves
// too little, the order of an earlier process taken from modification
// times, and --cache-budget's texts.
#include "worker/cache_budget.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace zkfarm {
namespace {

namespace fs = std::filesystem;

// A circuit id: 64 hex digits ending in `c`.
std::string id(char c) { return std::string(63, 'a') + c; }

class CacheBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/zkfarm-cache-budget-XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Writes `bytes` bytes as circuit c's zkey (and a 100-byte vk).
  void write_circuit(char c, std::size_t bytes) {
    fs::create_directories(dir_ + "/" + id(c));
    std::ofstream(dir_ + "/" + id(c) + "/circuit.zkey") << std::string(bytes - 100, 'z');
    std::ofstream(dir_ + "/" + id(c) + "/vk.json") << std::string(100, 'v');
  }
  bool cached(char c) const { return fs::exists(dir_ + "/" + id(c)); }
  // Loads circuit c as the cache does: room first, then the files.
  void load(CacheBudget& budget, char c, std::size_t bytes) {
    budget.make_room(id(c), bytes);
    write_circuit(c, bytes);
    budget.stored(id(c));
    budget.used(id(c));
  }
  std::string dir_;
};

TEST_F(CacheBudgetTest, LeastRecentlyUsedCircuitsGoFirstAndTheDiskStaysUnderBudget) {
  CacheBudget budget(dir_, 3000);
  load(budget, 'a', 1000);
  load(budget, 'b', 1000);
  load(budget, 'c', 1000);
  EXPECT_EQ(budget.bytes(), 3000u);
  budget.used(id('a'));  // a re-used: b is now the oldest
  load(budget, 'd', 1000);
  EXPECT_TRUE(cached('a'));
  EXPECT_FALSE(cached('b'));
  EXPECT_TRUE(cached('c'));
  EXPECT_TRUE(cached('d'));
  EXPECT_EQ(budget.bytes(), 3000u);
  EXPECT_EQ(budget.evictions(), 1u);
  // A large one takes the room of two.
  const auto removed = budget.make_room(id('e'), 2000);
  EXPECT_EQ(removed, (std::vector<std::string>{id('c'), id('a')}));
  EXPECT_EQ(budget.bytes(), 1000u);
}

TEST_F(CacheBudgetTest, APinnedCircuitIsNeverRemoved) {
  CacheBudget budget(dir_, 2000);
  load(budget, 'a', 1000);
  load(budget, 'b', 1000);
  {
    CacheBudgetPin pin(budget, id('a'));  // the oldest, but in use
    load(budget, 'c', 1000);
    EXPECT_TRUE(cached('a'));
    EXPECT_FALSE(cached('b'));
    // a and c in use: no room for d, and nothing is removed.
    CacheBudgetPin also(budget, id('c'));
    try {
      budget.make_room(id('d'), 1000);
      ADD_FAILURE() << "room was made past pinned circuits";
    } catch (const CacheBudgetExceeded& e) {
      EXPECT_NE(std::string(e.what()).find("has no room for circuit " + id('d')), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(id('a')), std::string::npos) << e.what();
    }
    EXPECT_TRUE(cached('a'));
    EXPECT_TRUE(cached('c'));
  }
  // Unpinned: a goes.
  load(budget, 'd', 1000);
  EXPECT_FALSE(cached('a'));
  EXPECT_TRUE(cached('c'));
}

TEST_F(CacheBudgetTest, TheCircuitMakingRoomKeepsItsOwnFiles) {
  CacheBudget budget(dir_, 1500);
  load(budget, 'a', 1000);
  // a resumes (its files are there): only others may go, and there are none.
  EXPECT_THROW(budget.make_room(id('a'), 1000), CacheBudgetExceeded);
  EXPECT_TRUE(cached('a'));
}

TEST_F(CacheBudgetTest, AnEarlierProcesssOrderComesFromModificationTimes) {
  write_circuit('a', 1000);
  write_circuit('b', 1000);
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(dir_ + "/" + id('a'), now - std::chrono::hours(2));
  fs::last_write_time(dir_ + "/" + id('b'), now - std::chrono::hours(1));
  fs::create_directories(dir_ + "/not-a-circuit");  // left alone
  CacheBudget budget(dir_, 2000);
  EXPECT_EQ(budget.bytes(), 2000u);
  budget.make_room(id('c'), 1000);
  EXPECT_FALSE(cached('a'));
  EXPECT_TRUE(cached('b'));
  EXPECT_TRUE(fs::exists(dir_ + "/not-a-circuit"));
}

TEST_F(CacheBudgetTest, NoBudgetRemovesNothing) {
  CacheBudget budget(dir_, std::nullopt);
  load(budget, 'a', 1000);
  EXPECT_TRUE(budget.make_room(id('b'), std::uint64_t{1} << 50).empty());
  EXPECT_TRUE(cached('a'));
}

TEST(CacheBudgetParse, Texts) {
  EXPECT_EQ(CacheBudget::parse("auto", 1234), std::optional<std::uint64_t>(1234));
  EXPECT_EQ(CacheBudget::parse("none", 1234), std::nullopt);
  EXPECT_EQ(CacheBudget::parse("4096", 0), std::optional<std::uint64_t>(4096));
  EXPECT_EQ(CacheBudget::parse("2GiB", 0), std::optional<std::uint64_t>(std::uint64_t{2} << 30));
  for (const char* bad : {"", "0", "-1", "12TB", "lots"}) {
    try {
      CacheBudget::parse(bad, 0);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--cache-budget '" + std::string(bad) + "'"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace zkfarm
