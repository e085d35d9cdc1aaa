// zkfarm_prove.cc -- `zkfarm-prove`: `zkfarm prove` on its own, a drop-in
// for rapidsnark's prover (same argument order:
//   zkfarm-prove <circuit.zkey> <witness.wtns> <proof.json> <public.json> [options]).
// The same command as `zkfarm prove` (cli/local_commands.cc), linked without
// the farm commands' libraries (ZeroMQ, hiredis, libcurl and what they pull
// in), so a process starts in about a third of the time: what a prover
// server or a script that proves many small circuits one process each pays
// per proof.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/local_commands.h"

int main(int argc, char** argv) {
  const zkfarm::cli::Command* prove = nullptr;
  for (const auto& c : zkfarm::cli::local_commands())
    if (std::strcmp(c.name, "prove") == 0) prove = &c;
  if (!prove) {
    std::fprintf(stderr, "zkfarm-prove: built without the prove command\n");
    return 3;
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs("zkfarm-prove: the same as `zkfarm prove`, in a binary without the farm commands.\n\n", stdout);
      std::fputs(prove->help, stdout);
      return 0;
    }
  }
  return prove->run(args);
}
