#include "stoker/cli/args.h"


namespace stoker::cli {
namespace {

// The value as the user typed it, on one line: control characters shown as '?', long values cut.
std::string shown(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 80)) out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  if (text.size() > 80) out += "...";
  return "'" + out + "'";
}

}  // namespace

Result<Args> Args::parse(int argc, char** argv, std::set<std::string> value_flags,
                         std::set<std::string> bool_flags, std::set<std::string> repeat_flags) {
  Args a;
  for (int i = 0; i < argc; ++i) {
    std::string s = argv[i];
    if (s.size() <= 2 || s.rfind("--", 0) != 0) {
      a.positional_.push_back(s);
      continue;
    }
    std::string name = s.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const bool repeats = repeat_flags.count(name) > 0;
    if (bool_flags.count(name)) {
      if (has_value) return invalid_argument("--" + name + " takes no value");
      a.bools_.insert(name);
      continue;
    }
    if (!repeats && !value_flags.count(name)) return invalid_argument("unknown flag --" + name);
    if (!has_value) {
      if (i + 1 >= argc) return invalid_argument("--" + name + " needs a value");
      value = argv[++i];
      // "--model --batch-size 8": the value was forgotten; taking the next flag as it would
      // shift every later argument.
      if (value.size() > 2 && value.rfind("--", 0) == 0) {
        return invalid_argument("--" + name + " needs a value, got the flag " + value +
                                " (write --" + name + "=VALUE for a value that starts with --)");
      }
    }
    std::vector<std::string>& slot = a.values_[name];
    if (!repeats && !slot.empty()) {
      return invalid_argument("--" + name + " given twice (" + shown(slot.front()) + ", then " +
                              shown(value) + "); it takes one value");
    }
    slot.push_back(std::move(value));
  }
  return a;
}

const std::string* Args::find(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() || it->second.empty() ? nullptr : &it->second.back();
}

bool Args::has(const std::string& name) const {
  return bools_.count(name) > 0 || find(name) != nullptr;
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  const std::string* v = find(name);
  return v == nullptr ? fallback : *v;
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

Result<double> Args::get_double(const std::string& name, double fallback, double lo,
                                double hi) const {
  const std::string* v = find(name);
  if (v == nullptr) return fallback;
  return parse_double("--" + name, *v, lo, hi);
}

Result<std::int64_t> Args::get_bytes(const std::string& name, std::int64_t fallback,
                                     std::int64_t lo, std::int64_t hi) const {
  const std::string* v = find(name);
  if (v == nullptr) return fallback;
  return parse_bytes("--" + name, *v, lo, hi);
}

}  // namespace stoker::cli
