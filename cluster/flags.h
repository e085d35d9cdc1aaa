// flags.h -- command-line flags with a config file and ZKFARM_ environment
// fallbacks.
//
// Each daemon declares its flags once (name, default, help); a value comes
// from --name=VALUE or --name VALUE, else from the environment variable
// ZKFARM_<NAME> (upper case, '-' -> '_'), else from the config file, else the
// default. Boolean flags are given as --name (or ZKFARM_NAME=1).
//
// A list flag (list()) may be given several times: every --name VALUE on the
// command line adds one value; if there is none, ZKFARM_<NAME> holds the
// values separated by ':' (as in PATH; list(name, help, ',') for values that
// contain ':', such as endpoints); if that is unset too, each
// `name = value` line of the config file adds one.
//
// Every Flags knows --config FILE (or ZKFARM_CONFIG): a text file of
// `name = value` lines (the flag names without "--"; '#' starts a comment
// line; blank lines are ignored; a boolean is `name = true|false|1|0`).
// Unknown flags -- on the command line or in the file -- are errors
// (FlagError naming the flag, and the file:line), so a misspelt option never
// silently keeps its default.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace zkfarm {

class FlagError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Flags {
 public:
  Flags();  // declares --config
  // Declares a flag taking a value.
  Flags& value(const std::string& name, const std::string& default_value, const std::string& help);
  // Declares a boolean flag.
  Flags& flag(const std::string& name, const std::string& help);
  // Declares a flag that may be repeated (see above); its default is empty.
  Flags& list(const std::string& name, const std::string& help, char env_separator = ':');

  // Parses argv[1..] (and the config file, if any). Throws FlagError on
  // unknown flags, missing values, positional arguments, or an unreadable or
  // malformed config file.
  void parse(int argc, char** argv);

  const std::string& get(const std::string& name) const;
  bool is_set(const std::string& name) const;  // boolean flags
  // The values of a list() flag, in the order given (empty if none).
  std::vector<std::string> get_list(const std::string& name) const;
  // get() as an integer in [lo, hi]; throws FlagError naming the flag.
  std::int64_t get_int(const std::string& name, std::int64_t lo, std::int64_t hi) const;
  // Help text listing every flag with its default and environment variable.
  std::string help() const;

 private:
  struct Spec {
    std::string default_value, help;
    bool boolean = false;
    bool repeatable = false;
    char env_separator = ':';
  };
  static std::string env_name(const std::string& name);
  // name -> value from a config file (list flags' values go to *lists);
  // throws FlagError naming path:line.
  std::map<std::string, std::string> read_config(const std::string& path,
                                                 std::map<std::string, std::vector<std::string>>* lists) const;
  std::map<std::string, Spec> specs_;
  std::vector<std::string> order_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> lists_;
};

}  // namespace zkfarm
