// flags.cc -- see flags.h.
#include "cluster/flags.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "base/command_line.h"

namespace zkfarm {

Flags::Flags() { value("config", "", "config file of `name = value` lines (environment and flags override it)"); }

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

Flags& Flags::list(const std::string& name, const std::string& help, char env_separator) {
  specs_[name] = Spec{"", help, false, true, env_separator};
  order_.push_back(name);
  return *this;
}

std::string Flags::env_name(const std::string& name) {
  std::string out = "ZKFARM_";
  for (char c : name) out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

namespace {

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const auto end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

}  // namespace

std::map<std::string, std::string> Flags::read_config(
    const std::string& path, std::map<std::string, std::vector<std::string>>* lists) const {
  std::ifstream in(path);
  if (!in) throw FlagError("--config: cannot read " + path);
  std::map<std::string, std::string> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = path + ":" + std::to_string(number);
    const std::string text = trim(line);
    if (text.empty() || text[0] == '#') continue;
    const auto eq = text.find('=');
    if (eq == std::string::npos) throw FlagError(where + ": expected `name = value`, got '" + text + "'");
    std::string name = trim(text.substr(0, eq));
    std::string value = trim(text.substr(eq + 1));
    if (name.rfind("--", 0) == 0) name = name.substr(2);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    auto it = specs_.find(name);
    if (it == specs_.end() || name == "config") throw FlagError(where + ": unknown setting '" + name + "'");
    if (it->second.boolean) {
      if (value == "true" || value == "1" || value == "yes") value = "1";
      else if (value == "false" || value == "0" || value == "no") value = "";
      else throw FlagError(where + ": " + name + " must be true or false, got '" + value + "'");
    }
    if (it->second.repeatable) {
      (*lists)[name].push_back(value);
      continue;
    }
    out[name] = value;
  }
  return out;
}

void Flags::parse(int argc, char** argv) {
  CommandLine line;
  try {
    line = parse_command_line(std::vector<std::string>(argv + std::min(argc, 1), argv + argc), [&](const std::string& name) {
      auto it = specs_.find(name);
      if (it == specs_.end()) return OptionKind::kUnknown;
      return it->second.boolean ? OptionKind::kFlag : OptionKind::kValue;
    });
  } catch (const CommandLineError& e) {
    throw FlagError(e.what());
  }
  if (!line.positional.empty()) throw FlagError("unexpected argument '" + line.positional.front() + "'");
  // The config file comes first so the environment and flags override it.
  std::string config_path;
  if (const char* env = std::getenv(env_name("config").c_str())) config_path = env;
  if (auto it = line.values.find("config"); it != line.values.end()) config_path = it->second;
  std::map<std::string, std::vector<std::string>> config_lists;
  if (!config_path.empty())
    for (auto& [name, v] : read_config(config_path, &config_lists)) values_[name] = v;
  for (const auto& [name, spec] : specs_) {
    if (spec.repeatable) {
      if (const char* env = std::getenv(env_name(name).c_str())) {
        std::vector<std::string> values;
        std::string text = env;
        for (std::size_t begin = 0; begin <= text.size();) {
          std::size_t end = text.find(spec.env_separator, begin);
          if (end == std::string::npos) end = text.size();
          if (end > begin) values.push_back(text.substr(begin, end - begin));
          begin = end + 1;
        }
        lists_[name] = std::move(values);
      } else if (auto it = config_lists.find(name); it != config_lists.end()) {
        lists_[name] = it->second;
      }
      continue;
    }
    if (const char* env = std::getenv(env_name(name).c_str())) {
      values_[name] = spec.boolean ? (std::string(env) == "0" || std::string(env).empty() ? "" : "1") : env;
    }
  }
  for (const auto& name : line.flags) values_[name] = "1";
  for (auto& [name, value] : line.values) {
    if (specs_.at(name).repeatable) lists_[name] = line.all_values.at(name);
    else values_[name] = value;
  }
}

std::vector<std::string> Flags::get_list(const std::string& name) const {
  auto spec = specs_.find(name);
  if (spec == specs_.end() || !spec->second.repeatable) throw std::logic_error("undeclared list flag " + name);
  auto it = lists_.find(name);
  return it == lists_.end() ? std::vector<std::string>{} : it->second;
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
    out += "  --" + name + (s.boolean ? "" : "=VALUE") + (s.repeatable ? " (repeatable)" : "") + "\n      " + s.help;
    if (!s.boolean && !s.default_value.empty()) out += " (default " + s.default_value + ")";
    out += " [" + env_name(name) + "]\n";
  }
  return out;
}

}  // namespace zkfarm
