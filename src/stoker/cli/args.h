// A small command-line flag reader shared by the subcommands: `--name value`, `--name=value`,
// boolean `--flag`, and positionals. Each subcommand declares what it accepts so that a typo
// ("--batchsize") is an error rather than silently ignored. Not thread-safe; used once per run.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::cli {

class Args {
 public:
  // value_flags take a value; bool_flags do not. Names without the leading "--".
  static Result<Args> parse(int argc, char** argv, std::set<std::string> value_flags,
                            std::set<std::string> bool_flags);

  bool has(const std::string& name) const;
  std::string get(const std::string& name, const std::string& fallback = "") const;
  Result<long long> get_int(const std::string& name, long long fallback) const;
  Result<double> get_double(const std::string& name, double fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> bools_;
  std::vector<std::string> positional_;
};

}  // namespace stoker::cli
