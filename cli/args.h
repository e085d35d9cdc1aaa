// args.h -- a small command-line parser for the zkfarm CLI.
//
// Positional arguments keep their order (rapidsnark and snarkjs argument
// orders are part of the interface); options are --name VALUE or --name=VALUE,
// and flags are --name (parse_command_line, base/command_line.h, which the
// daemons' flags use too); -h is --help. Unknown options are errors, named in
// the message.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/command_line.h"

namespace zkfarm::cli {

// A usage error: the CLI prints the message and the command's help, exit 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  // value_options take a value; flags do not. Throws UsageError on an unknown
  // option or a value option without a value.
  Args(const std::vector<std::string>& argv, const std::set<std::string>& value_options,
       const std::set<std::string>& flags) {
    CommandLine line;
    try {
      line = parse_command_line(argv, [&](const std::string& name) {
        if (flags.count(name)) return OptionKind::kFlag;
        return value_options.count(name) ? OptionKind::kValue : OptionKind::kUnknown;
      });
    } catch (const CommandLineError& e) {
      throw UsageError(e.what());
    }
    options_ = std::move(line.values);
    flags_ = std::move(line.flags);
    for (auto& a : line.positional) {
      if (a == "-h") flags_.insert("help");
      else positional_.push_back(std::move(a));
    }
  }

  const std::vector<std::string>& positional() const { return positional_; }
  bool flag(const std::string& name) const { return flags_.count(name) > 0; }
  std::optional<std::string> option(const std::string& name) const {
    auto it = options_.find(name);
    if (it == options_.end()) return std::nullopt;
    return it->second;
  }
  // An unsigned integer option; throws UsageError if it does not parse.
  std::optional<std::uint64_t> uint_option(const std::string& name) const {
    auto v = option(name);
    if (!v) return std::nullopt;
    try {
      std::size_t used = 0;
      unsigned long long x = std::stoull(*v, &used, 0);
      if (used != v->size() || (*v)[0] == '-') throw std::invalid_argument("");
      return x;
    } catch (const std::exception&) {
      throw UsageError("option --" + name + " needs a non-negative integer, got '" + *v + "'");
    }
  }
  // Throws UsageError unless there are exactly n positional arguments.
  void expect_positional(std::size_t n, const std::string& usage) const {
    if (positional_.size() != n)
      throw UsageError("expected " + std::to_string(n) + " arguments, got " +
                       std::to_string(positional_.size()) + "\nusage: " + usage);
  }

 private:
  std::vector<std::string> positional_;
  std::map<std::string, std::string> options_;
  std::set<std::string> flags_;
};

}  // namespace zkfarm::cli
