// zkfarm.cc -- the `zkfarm` command: local proving tools and the farm
// client commands. Dispatches on the first argument; `zkfarm --help` lists
// the commands and `zkfarm COMMAND --help` describes one.
//
// The local commands (prove, verify, setup, ...) run in this process, which
// links only their libraries so that it starts fast; a farm command (submit,
// status, ...) is handed to the zkfarm-farm binary installed beside it, which
// this process becomes (cli/farm_exec.h).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/farm_exec.h"
#include "cli/local_commands.h"

namespace {

void print_usage(std::FILE* out) {
  std::fprintf(out,
               "zkfarm -- Groth16 proving for circom/snarkjs and Filecoin-style circuits\n\n"
               "usage: zkfarm COMMAND [ARGS...]   (zkfarm COMMAND --help for details)\n\n"
               "commands:\n");
  for (const auto& c : zkfarm::cli::local_commands())
    std::fprintf(out, "  %-14s %s\n", c.name, c.summary);
  std::fprintf(out, "\nfarm commands (--redis URL, default $ZKFARM_REDIS):\n");
  for (const auto& c : zkfarm::cli::farm_command_summaries())
    std::fprintf(out, "  %-14s %s\n", c.name, c.summary);
}

const zkfarm::cli::Command* find_local_command(const std::string& name) {
  for (const auto& c : zkfarm::cli::local_commands())
    if (name == c.name) return &c;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string name = argv[1];
  if (const auto* c = find_local_command(name)) {
    std::vector<std::string> args(argv + 2, argv + argc);
    for (const auto& a : args) {
      if (a == "--help" || a == "-h") {
        std::fputs(c->help, stdout);
        return 0;
      }
    }
    return c->run(args);
  }
  if (zkfarm::cli::is_farm_command(name)) return zkfarm::cli::exec_farm_command(argc, argv);
  std::fprintf(stderr, "zkfarm: unknown command '%s'\n\n", name.c_str());
  print_usage(stderr);
  return 2;
}
