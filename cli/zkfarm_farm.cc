// zkfarm_farm.cc -- `zkfarm-farm`: the farm commands of `zkfarm` (circuit,
// submit, status, wait, result, workers, cancel, tenant, keygen;
// cli/farm_commands.h)
// in the binary that links their libraries. `zkfarm COMMAND ...` execs
// `zkfarm-farm COMMAND ...` for these (cli/farm_exec.h), so the arguments,
// output and exit codes are those documented for `zkfarm`; it can also be
// called directly the same way.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/farm_commands.h"

int main(int argc, char** argv) {
  const zkfarm::cli::Command* command = nullptr;
  if (argc >= 2)
    for (const auto& c : zkfarm::cli::farm_commands())
      if (std::strcmp(c.name, argv[1]) == 0) command = &c;
  if (!command) {
    std::fprintf(stderr, "zkfarm-farm: %s%s%s; the farm commands are:", argc < 2 ? "no command" : "unknown command '",
                 argc < 2 ? "" : argv[1], argc < 2 ? "" : "'");
    for (const auto& c : zkfarm::cli::farm_commands()) std::fprintf(stderr, " %s", c.name);
    std::fprintf(stderr, " (zkfarm --help describes them)\n");
    return 2;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(command->help, stdout);
      return 0;
    }
  }
  return command->run(args);
}
