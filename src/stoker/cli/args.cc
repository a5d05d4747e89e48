#include "stoker/cli/args.h"

#include <cstdlib>

namespace stoker::cli {

Result<Args> Args::parse(int argc, char** argv, std::set<std::string> value_flags,
                         std::set<std::string> bool_flags) {
  Args a;
  for (int i = 0; i < argc; ++i) {
    std::string s = argv[i];
    if (s.size() > 2 && s.rfind("--", 0) == 0) {
      std::string name = s.substr(2), value;
      bool has_value = false;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      if (bool_flags.count(name)) {
        if (has_value) return invalid_argument("--" + name + " takes no value");
        a.bools_.insert(name);
      } else if (value_flags.count(name)) {
        if (!has_value) {
          if (i + 1 >= argc) return invalid_argument("--" + name + " needs a value");
          value = argv[++i];
        }
        a.values_[name] = value;
      } else {
        return invalid_argument("unknown flag --" + name);
      }
    } else {
      a.positional_.push_back(s);
    }
  }
  return a;
}

bool Args::has(const std::string& name) const {
  return bools_.count(name) > 0 || values_.count(name) > 0;
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

Result<long long> Args::get_int(const std::string& name, long long fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0')
    return invalid_argument("--" + name + ": not an integer: '" + it->second + "'");
  return v;
}

Result<double> Args::get_double(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0')
    return invalid_argument("--" + name + ": not a number: '" + it->second + "'");
  return v;
}

}  // namespace stoker::cli
