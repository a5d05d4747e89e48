// A small command-line flag reader shared by the subcommands: `--name value`, `--name=value`,
// boolean `--flag`, repeatable `--name A --name B`, and positionals. Each subcommand declares what
// it accepts, so a typo ("--batchsize") or a single-valued flag given twice is an error rather
// than silently ignored. Typed getters parse the whole value and check it against the range of
// the field it goes into: `--batch-size 99999999999` is an error naming the flag and the value,
// never a wrapped int. Errors are InvalidArgument (report() maps them to exit status 2).
// Not thread-safe; used once per run.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "stoker/base/parse_number.h"
#include "stoker/base/result.h"

namespace stoker::cli {

// parse_int, parse_uint, parse_double, parse_bytes: base/parse_number.h.

class Args {
 public:
  // value_flags take one value each; repeat_flags take a value each time they appear (all kept,
  // in order); bool_flags take none. Names without the leading "--".
  static Result<Args> parse(int argc, char** argv, std::set<std::string> value_flags,
                            std::set<std::string> bool_flags,
                            std::set<std::string> repeat_flags = {});

  bool has(const std::string& name) const;
  std::string get(const std::string& name, const std::string& fallback = "") const;
  // Every value of a repeatable flag, in command-line order; empty when absent.
  std::vector<std::string> get_all(const std::string& name) const;

  // The flag's value as a T in [lo, hi] (default: all that T holds, so it always fits its
  // field); `fallback` when the flag is absent (not range-checked: it may be a sentinel such as
  // -1 "auto"). T is spelled at each call (get_int<int>): it is the consumer's field type.
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  Result<T> get_int(const std::string& name, std::type_identity_t<T> fallback,
                    std::type_identity_t<T> lo = std::numeric_limits<T>::min(),
                    std::type_identity_t<T> hi = std::numeric_limits<T>::max()) const;
  Result<double> get_double(const std::string& name, double fallback, double lo, double hi) const;
  Result<std::int64_t> get_bytes(const std::string& name, std::int64_t fallback, std::int64_t lo,
                                 std::int64_t hi) const;

  const std::vector<std::string>& positional() const { return positional_; }

 private:
  const std::string* find(const std::string& name) const;

  std::map<std::string, std::vector<std::string>> values_;
  std::set<std::string> bools_;
  std::vector<std::string> positional_;
};

template <std::integral T>
  requires(!std::same_as<T, bool>)
Result<T> Args::get_int(const std::string& name, std::type_identity_t<T> fallback,
                        std::type_identity_t<T> lo, std::type_identity_t<T> hi) const {
  static_assert(sizeof(T) <= sizeof(long long));
  const std::string* v = find(name);
  if (v == nullptr) return fallback;
  if constexpr (std::is_signed_v<T>) {
    STOKER_ASSIGN_OR_RETURN(long long x, parse_int("--" + name, *v, lo, hi));
    return static_cast<T>(x);
  } else {
    STOKER_ASSIGN_OR_RETURN(unsigned long long x, parse_uint("--" + name, *v, lo, hi));
    return static_cast<T>(x);
  }
}

}  // namespace stoker::cli
