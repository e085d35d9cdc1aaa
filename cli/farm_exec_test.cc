// farm_exec_test.cc -- the farm commands `zkfarm` lists and hands to
// zkfarm-farm (cli/farm_exec.h) are exactly those zkfarm-farm runs, and the
// places zkfarm-farm is looked for.
#include "cli/farm_exec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "cli/farm_commands.h"
#include "cli/local_commands.h"

namespace zkfarm::cli {
namespace {

TEST(FarmExec, SummariesMatchTheFarmCommands) {
  const auto& summaries = farm_command_summaries();
  const auto& commands = farm_commands();
  ASSERT_EQ(summaries.size(), commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    EXPECT_STREQ(summaries[i].name, commands[i].name) << "entry " << i;
    EXPECT_STREQ(summaries[i].summary, commands[i].summary) << "entry " << i;
    EXPECT_TRUE(is_farm_command(commands[i].name));
  }
}

TEST(FarmExec, LocalCommandsAreNotFarmCommands) {
  for (const auto& c : local_commands()) EXPECT_FALSE(is_farm_command(c.name)) << c.name;
  EXPECT_FALSE(is_farm_command(""));
  EXPECT_FALSE(is_farm_command("submitx"));
}

TEST(FarmExec, CandidatesAreBesideTheExecutableThenBesideArgv0) {
  const auto plain = farm_binary_candidates("zkfarm");  // called through PATH: no directory
  ASSERT_EQ(plain.size(), 1u);
  const std::string self_dir = plain[0].substr(0, plain[0].rfind('/'));
  EXPECT_EQ(plain[0], self_dir + "/" + kFarmBinaryName);

  const auto linked = farm_binary_candidates("/opt/links/zkfarm");
  ASSERT_EQ(linked.size(), 2u);
  EXPECT_EQ(linked[0], plain[0]);
  EXPECT_EQ(linked[1], std::string("/opt/links/") + kFarmBinaryName);

  EXPECT_EQ(farm_binary_candidates("/zkfarm").back(), std::string("/") + kFarmBinaryName);
  EXPECT_EQ(farm_binary_candidates((self_dir + "/zkfarm").c_str()).size(), 1u);  // no duplicate
}

}  // namespace
}  // namespace zkfarm::cli
