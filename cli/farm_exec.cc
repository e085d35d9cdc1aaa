// farm_exec.cc -- `zkfarm`'s handoff of a farm command to zkfarm-farm (see
// farm_exec.h for why and where it is looked for).
#include "cli/farm_exec.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace zkfarm::cli {
namespace {

// The directory part of `path` ("" when it has none).
std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string joined(const std::string& directory, const char* name) {
  return directory == "/" ? "/" + std::string(name) : directory + "/" + name;
}

}  // namespace

const std::vector<CommandSummary>& farm_command_summaries() {
  static const std::vector<CommandSummary> summaries = {
      {"circuit", "register a circuit (zkey) with the farm: circuit add"},
      {"submit", "queue a proving job on the farm; prints its id"},
      {"status", "a farm job's state as JSON"},
      {"wait", "wait for a farm job to end (progress bar on a terminal)"},
      {"result", "fetch a done job's proofs (snarkjs JSON, Filecoin binary)"},
      {"workers", "the farm's workers: device, circuits, faults, quarantine"},
      {"cancel", "cancel a farm job"},
      {"tenant", "the farm's tenants and their credentials (admin): add, set, list, rotate, remove"},
      {"keygen", "make a CURVE key pair for coordinator/worker encryption"},
  };
  return summaries;
}

bool is_farm_command(const std::string& name) {
  for (const auto& c : farm_command_summaries())
    if (name == c.name) return true;
  return false;
}

std::vector<std::string> farm_binary_candidates(const char* argv0) {
  std::vector<std::string> candidates;
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    const std::string directory = directory_of(self);
    if (!directory.empty()) candidates.push_back(joined(directory, kFarmBinaryName));
  }
  if (argv0 != nullptr) {
    const std::string directory = directory_of(argv0);
    if (!directory.empty()) {
      const std::string path = joined(directory, kFarmBinaryName);
      if (candidates.empty() || candidates.front() != path) candidates.push_back(path);
    }
  }
  return candidates;
}

int exec_farm_command(int argc, char** argv) {
  const auto candidates = farm_binary_candidates(argc > 0 ? argv[0] : nullptr);
  std::vector<char*> args(argv, argv + argc);
  args.push_back(nullptr);
  std::string tried;
  for (const auto& path : candidates) {
    args[0] = const_cast<char*>(path.c_str());
    execv(path.c_str(), args.data());  // returns only on failure
    tried += "\n  " + path + ": " + std::strerror(errno);
  }
  if (candidates.empty()) tried = "\n  (the location of this zkfarm is unknown: /proc/self/exe unreadable)";
  std::fprintf(stderr,
               "zkfarm: '%s' is a farm command, run by %s, which could not be started:%s\n"
               "install %s in the same directory as zkfarm (both are built by bazel build //cli:zkfarm)\n",
               argc > 1 ? argv[1] : "?", kFarmBinaryName, tried.c_str(), kFarmBinaryName);
  return 2;
}

}  // namespace zkfarm::cli
