// command_line.cc -- see command_line.h.
#include "base/command_line.h"

namespace zkfarm {

CommandLine parse_command_line(const std::vector<std::string>& args,
                               const std::function<OptionKind(const std::string&)>& kind_of) {
  CommandLine out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() <= 2 || arg.rfind("--", 0) != 0) {
      out.positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    switch (kind_of(name)) {
      case OptionKind::kFlag:
        if (has_value) throw CommandLineError("option --" + name + " takes no value");
        out.flags.insert(name);
        break;
      case OptionKind::kValue:
        if (!has_value) {
          if (i + 1 >= args.size()) throw CommandLineError("option --" + name + " needs a value");
          value = args[++i];
        }
        out.values[name] = value;
        out.all_values[name].push_back(value);
        break;
      case OptionKind::kUnknown:
        throw CommandLineError("unknown option --" + name);
    }
  }
  return out;
}

}  // namespace zkfarm
