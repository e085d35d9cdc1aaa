// args.h -- a small command-line parser for the zkfarm CLI.
//
// Positional arguments keep their order (rapidsnark and snarkjs argument
// orders are part of the interface); options are --name VALUE or --name=VALUE,
// and flags are --name. Unknown options are errors, named in the message.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

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
    for (std::size_t i = 0; i < argv.size(); ++i) {
      const std::string& a = argv[i];
      if (a.size() > 2 && a.rfind("--", 0) == 0) {
        std::string name = a.substr(2), value;
        bool has_value = false;
        if (auto eq = name.find('='); eq != std::string::npos) {
          value = name.substr(eq + 1);
          name = name.substr(0, eq);
          has_value = true;
        }
        if (flags.count(name)) {
          if (has_value) throw UsageError("option --" + name + " takes no value");
          flags_.insert(name);
        } else if (value_options.count(name)) {
          if (!has_value) {
            if (i + 1 >= argv.size()) throw UsageError("option --" + name + " needs a value");
            value = argv[++i];
          }
          options_[name] = value;
        } else {
          throw UsageError("unknown option --" + name);
        }
      } else if (a == "-h") {
        flags_.insert("help");
      } else {
        positional_.push_back(a);
      }
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
