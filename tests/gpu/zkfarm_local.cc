// zkfarm_local.cc -- the zkfarm CLI's local commands (prove, verify, setup,
// gen-circuit, ...) without the farm client commands, for the GPU bundle
// (build_bundle.sh): the farm commands need ZeroMQ and Cap'n Proto, which a
// bare GPU host lacks. Same arguments, output and exit codes as `zkfarm`.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/local_commands.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: zkfarm_local COMMAND [ARGS...]\ncommands:");
    for (const auto& c : zkfarm::cli::local_commands()) std::fprintf(stderr, " %s", c.name);
    std::fprintf(stderr, "\n");
    return 2;
  }
  const std::string name = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  for (const auto& c : zkfarm::cli::local_commands())
    if (name == c.name) return c.run(args);
  std::fprintf(stderr, "zkfarm_local: unknown command '%s'\n", name.c_str());
  return 2;
}
