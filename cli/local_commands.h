// local_commands.h -- the zkfarm CLI commands that run on this machine alone:
// prove, verify, verify-batch, setup, export-vk, gen-circuit, pce, plan, encode-proof,
// decode-proof.
//
// Each command takes its arguments (after the command name) and returns the
// process exit code: 0 success; for verify 1 = invalid proof; 2 = error
// (bad input, I/O); for prove 3 = the machine failed (out of memory, a device
// fault; exit_code() in schema/error_code.h), with the message already printed on stderr.
#pragma once

#include <string>
#include <vector>

namespace zkfarm::cli {

struct Command {
  const char* name;
  const char* summary;
  const char* help;  // full --help text
  int (*run)(const std::vector<std::string>& args);
};

// The local commands, in the order `zkfarm --help` lists them.
const std::vector<Command>& local_commands();

}  // namespace zkfarm::cli
