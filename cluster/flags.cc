// flags.cc -- see flags.h.
#include "cluster/flags.h"

#include <cstdlib>

namespace zkfarm {

Flags& Flags::value(const std::string& name, const std::string& default_value, const std::string& help) {
  specs_[name] = Spec{default_value, help, false};
  order_.push_back(name);
  return *this;
}

Flags& Flags::flag(const std::string& name, const std::string& help) {
  specs_[name] = Spec{"", help, true};
  order_.push_back(name);
  return *this;
}

std::string Flags::env_name(const std::string& name) {
  std::string out = "ZKFARM_";
  for (char c : name) out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

void Flags::parse(int argc, char** argv) {
  for (const auto& [name, spec] : specs_) {
    if (const char* env = std::getenv(env_name(name).c_str())) {
      values_[name] = spec.boolean ? (std::string(env) == "0" || std::string(env).empty() ? "" : "1") : env;
    }
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) throw FlagError("unexpected argument '" + arg + "'");
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto it = specs_.find(name);
    if (it == specs_.end()) throw FlagError("unknown flag --" + name);
    if (it->second.boolean) {
      if (has_value) throw FlagError("--" + name + " takes no value");
      values_[name] = "1";
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) throw FlagError("--" + name + " needs a value");
      value = argv[++i];
    }
    values_[name] = value;
  }
}

const std::string& Flags::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  auto spec = specs_.find(name);
  if (spec == specs_.end()) throw std::logic_error("undeclared flag " + name);
  return spec->second.default_value;
}

bool Flags::is_set(const std::string& name) const { return !get(name).empty(); }

std::int64_t Flags::get_int(const std::string& name, std::int64_t lo, std::int64_t hi) const {
  const std::string& text = get(name);
  try {
    std::size_t used = 0;
    long long v = std::stoll(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
    if (v < lo || v > hi)
      throw FlagError("--" + name + "=" + text + " is outside [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]");
    return v;
  } catch (const FlagError&) {
    throw;
  } catch (const std::exception&) {
    throw FlagError("--" + name + ": '" + text + "' is not an integer");
  }
}

std::string Flags::help() const {
  std::string out;
  for (const auto& name : order_) {
    const Spec& s = specs_.at(name);
    out += "  --" + name + (s.boolean ? "" : "=VALUE") + "\n      " + s.help;
    if (!s.boolean && !s.default_value.empty()) out += " (default " + s.default_value + ")";
    out += " [" + env_name(name) + "]\n";
  }
  return out;
}

}  // namespace zkfarm
