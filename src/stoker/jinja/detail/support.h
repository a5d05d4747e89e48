// Helpers shared by the builtins: Python-style argument binding, ordering and membership,
// printf-style and str.format formatting, and the str operations whose exact Python behaviour
// templates see (strip with chars, replace with count, splitlines, float()/int() of strings).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/jinja/detail/interp.h"

namespace stoker::jinja::detail {

// Binds positional then keyword arguments to `names` (Python's rules: too many positional,
// unknown or repeated keywords are TypeErrors). out[i] is empty when not given.
bool bind(Interp& in, const char* fn, std::vector<Value>& args, Kwargs& kwargs,
          std::initializer_list<const char*> names, std::optional<Value>* out);

// -1/0/1, or 2 when unordered (NaN); *ok false (error set) when Python raises TypeError.
int py_order(Interp& in, const Value& a, const Value& b, bool* ok);
bool value_in(Interp& in, const Value& needle, const Value& container, bool* ok);
Value py_add(Interp& in, const Value& a, const Value& b);

// `fmt % args` (or `% kwargs` for %(name)s).
Value printf_format(Interp& in, const std::string& fmt, std::vector<Value>& args, Kwargs& kwargs);
// str.format(*args, **kwargs): {} {0} {name} {0.attr} {0[key]}, !r/!s, and specs
// [[fill]align][sign][#][0][width][,_][.precision][type].
Value str_format(Interp& in, const std::string& fmt, std::vector<Value>& args, Kwargs& kwargs);

std::string py_pad(std::string_view s, std::int64_t width, std::uint32_t fill, int align);  // -1 < 0 ^ 1 >
std::string html_escape(std::string_view s);
std::optional<double> py_float(const Value& v);
std::optional<std::int64_t> py_int(const Value& v, int base);
std::vector<std::string> py_splitlines(std::string_view s, bool keepends = false);
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  std::int64_t maxsplit, bool from_right);
std::string py_replace(std::string_view s, std::string_view old, std::string_view repl,
                       std::int64_t count);
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                     bool right);
std::string jinja_title(std::string_view s);  // jinja2's title filter (not str.title)
std::int64_t word_count(std::string_view s);
Value dict_items(const Value& dict);          // [(k, v), ...]

}  // namespace stoker::jinja::detail
