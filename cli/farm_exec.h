// farm_exec.h -- how the `zkfarm` binary runs a farm command: by replacing
// itself (execv) with `zkfarm-farm`, the binary that holds the farm commands
// (cli/farm_commands.h) and the libraries only they need (ZeroMQ, hiredis,
// Cap'n Proto and what those pull in; not libcurl, which only the daemons'
// witness and artifact reads use).
//
// Why two binaries: a process that links those libraries spends ~26 ms more
// CPU starting (the loader's mapping and relocation of 44 shared libraries
// against 7), which the local commands (`zkfarm prove` above all: a script
// or server proving small circuits starts one process per proof) never use.
// `zkfarm` links the local commands alone; the farm commands cost their
// libraries only when one runs. Behaviour, output and exit codes are those
// of the farm command itself: execv keeps the process id, the standard
// streams, the environment and the exit status.
//
// Where zkfarm-farm is looked for, in order: beside the running executable
// (/proc/self/exe, symbolic links resolved: an installed /usr/local/bin/zkfarm
// finds /usr/local/bin/zkfarm-farm), then beside argv[0] as it was called
// when that names a directory (a symbolic link to zkfarm, as in Bazel's
// runfiles, finds the link to zkfarm-farm beside it). Install both binaries
// into one directory.
#pragma once

#include <string>
#include <vector>

namespace zkfarm::cli {

// The file name of the farm commands' binary.
inline constexpr const char* kFarmBinaryName = "zkfarm-farm";

struct CommandSummary {
  const char* name;
  const char* summary;
};

// The farm commands' names and one-line summaries, in the order
// `zkfarm --help` lists them: the same as farm_commands() in
// cli/farm_commands.cc (cli:farm_exec_test checks it), kept here so that
// `zkfarm` lists them without linking them.
const std::vector<CommandSummary>& farm_command_summaries();

// Whether `name` is a farm command (one of farm_command_summaries()).
bool is_farm_command(const std::string& name);

// The candidate paths of zkfarm-farm for a process started as `argv0`, in
// the order above (duplicates removed; none when neither location is known).
std::vector<std::string> farm_binary_candidates(const char* argv0);

// Runs farm command `argv[1]` (argv as main() received it) by executing
// zkfarm-farm with the same arguments. Returns only on failure: 2, after
// printing on stderr which paths were tried and why none could run.
int exec_farm_command(int argc, char** argv);

}  // namespace zkfarm::cli
