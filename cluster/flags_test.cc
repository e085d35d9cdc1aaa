// flags_test.cc -- flag parsing: config file, environment and command line,
// in that order of precedence; errors name the flag and the file line.
#include "cluster/flags.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "tests/harness/harness.h"

namespace zkfarm {
namespace {

Flags make_flags() {
  Flags flags;
  flags.value("redis", "redis://127.0.0.1:6379", "Redis URL")
      .value("heartbeat-ms", "1000", "heartbeat interval")
      .value("listen", "tcp://127.0.0.1:5555", "endpoint")
      .flag("cpu", "use the CPU");
  return flags;
}

void parse(Flags& flags, std::vector<std::string> args) {
  args.insert(args.begin(), "daemon");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  flags.parse(static_cast<int>(argv.size()), argv.data());
}

TEST(FlagsTest, ConfigFileEnvironmentAndFlagsInOrderOfPrecedence) {
  testing::TempDir dir;
  testing::write_file(dir.file("farm.conf"),
                      "# coordinator settings\n\n"
                      "redis = redis://:secret@10.0.0.5:6380/2\n"
                      "heartbeat-ms=250\n"
                      "  listen = \"tcp://0.0.0.0:7000\"  \n"
                      "cpu = true\n");
  Flags flags = make_flags();
  ::setenv("ZKFARM_HEARTBEAT_MS", "300", 1);
  parse(flags, {"--config", dir.file("farm.conf"), "--listen=tcp://127.0.0.1:9000"});
  ::unsetenv("ZKFARM_HEARTBEAT_MS");
  EXPECT_EQ(flags.get("redis"), "redis://:secret@10.0.0.5:6380/2");  // file
  EXPECT_EQ(flags.get_int("heartbeat-ms", 1, 100000), 300);         // environment beats file
  EXPECT_EQ(flags.get("listen"), "tcp://127.0.0.1:9000");            // flag beats file
  EXPECT_TRUE(flags.is_set("cpu"));
  EXPECT_NE(flags.help().find("--config"), std::string::npos);

  Flags from_env = make_flags();
  ::setenv("ZKFARM_CONFIG", dir.file("farm.conf").c_str(), 1);
  parse(from_env, {});
  ::unsetenv("ZKFARM_CONFIG");
  EXPECT_EQ(from_env.get("heartbeat-ms"), "250");
}

TEST(FlagsTest, ListFlagsRepeatAndTakeOneSourceWhole) {
  testing::TempDir dir;
  testing::write_file(dir.file("farm.conf"), "root = /srv/a\nroot = /srv/b\n");
  auto make = [] {
    Flags flags;
    flags.list("root", "a directory").value("listen", "x", "endpoint");
    return flags;
  };
  Flags none = make();
  parse(none, {});
  EXPECT_TRUE(none.get_list("root").empty());
  Flags file = make();
  parse(file, {"--config", dir.file("farm.conf")});
  EXPECT_EQ(file.get_list("root"), (std::vector<std::string>{"/srv/a", "/srv/b"}));
  // The environment replaces the file's lines; ':' separates values.
  ::setenv("ZKFARM_ROOT", "/env/a::/env/b", 1);
  Flags env = make();
  parse(env, {"--config", dir.file("farm.conf")});
  EXPECT_EQ(env.get_list("root"), (std::vector<std::string>{"/env/a", "/env/b"}));
  // Command-line occurrences replace both.
  Flags command_line = make();
  parse(command_line, {"--root", "/c/1", "--config", dir.file("farm.conf"), "--root=/c/2"});
  ::unsetenv("ZKFARM_ROOT");
  EXPECT_EQ(command_line.get_list("root"), (std::vector<std::string>{"/c/1", "/c/2"}));
  EXPECT_NE(command_line.help().find("--root=VALUE (repeatable)"), std::string::npos);
}

TEST(FlagsTest, BadConfigFilesAreErrorsNamingTheLine) {
  testing::TempDir dir;
  auto error_of = [&](const std::string& text) -> std::string {
    testing::write_file(dir.file("bad.conf"), text);
    Flags flags = make_flags();
    try {
      parse(flags, {"--config=" + dir.file("bad.conf")});
    } catch (const FlagError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of("redis = x\nheartbeat_ms = 5\n").find("bad.conf:2: unknown setting 'heartbeat_ms'"),
            std::string::npos);
  EXPECT_NE(error_of("listen tcp://x\n").find("bad.conf:1: expected `name = value`"), std::string::npos);
  EXPECT_NE(error_of("cpu = maybe\n").find("cpu must be true or false"), std::string::npos);
  EXPECT_NE(error_of("config = other.conf\n").find("unknown setting 'config'"), std::string::npos);
  Flags flags = make_flags();
  try {
    parse(flags, {"--config", dir.file("missing.conf")});
    FAIL() << "no error for a missing config file";
  } catch (const FlagError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.conf"), std::string::npos);
  }
  // A bad value from the file is still caught where the flag is read.
  testing::write_file(dir.file("range.conf"), "heartbeat-ms = fast\n");
  Flags range = make_flags();
  parse(range, {"--config", dir.file("range.conf")});
  EXPECT_THROW(range.get_int("heartbeat-ms", 1, 1000), FlagError);
}

}  // namespace
}  // namespace zkfarm
