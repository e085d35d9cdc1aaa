// command_line.h -- the one parser of command-line options in zkfarm, shared
// by the CLI's subcommands (cli/args.h) and the daemons' flags
// (cluster/flags.h).
//
// An option is --name VALUE or --name=VALUE; a boolean flag is --name. Every
// other argument (including "-" and "--") is positional and keeps its order.
// Unknown options are errors naming the option, so a misspelt one never
// silently keeps its default.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace zkfarm {

class CommandLineError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class OptionKind { kUnknown, kValue, kFlag };

struct CommandLine {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  // the last value given wins
  std::map<std::string, std::vector<std::string>> all_values;  // every value, in order (repeatable options)
  std::set<std::string> flags;
};

// Splits args (without the program name) by kind_of(name). Throws
// CommandLineError: "unknown option --NAME", "option --NAME takes no value",
// "option --NAME needs a value".
CommandLine parse_command_line(const std::vector<std::string>& args,
                               const std::function<OptionKind(const std::string&)>& kind_of);

}  // namespace zkfarm
