#include "stoker/cli/args.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace stoker::cli {
namespace {

// The value as the user typed it, on one line: control characters shown as '?', long values cut.
std::string shown(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 80)) out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  if (text.size() > 80) out += "...";
  return "'" + out + "'";
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

template <typename T>
Error out_of_range(std::string_view what, std::string_view kind, T lo, T hi,
                   std::string_view text, std::string_view hint = {}) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on a chain of +.
  std::string m(what);
  m.append(" must be ").append(kind).append(" in [");
  if constexpr (std::is_floating_point_v<T>) {
    m.append(number_text(lo)).append(", ").append(number_text(hi));
  } else {
    m.append(std::to_string(lo)).append(", ").append(std::to_string(hi));
  }
  m.append("]").append(hint).append(", got ").append(shown(text));
  return invalid_argument(std::move(m));
}

// from_chars over the whole text: no leading '+' or spaces, no trailing junk, no overflow.
template <typename T>
bool whole(std::string_view text, T* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && !text.empty();
}

}  // namespace

Result<long long> parse_int(std::string_view what, std::string_view text, long long lo,
                            long long hi) {
  long long v = 0;
  if (!whole(text, &v) || v < lo || v > hi) return out_of_range(what, "an integer", lo, hi, text);
  return v;
}

Result<unsigned long long> parse_uint(std::string_view what, std::string_view text,
                                      unsigned long long lo, unsigned long long hi) {
  unsigned long long v = 0;
  // from_chars<unsigned> already refuses '-'; "-0" is refused with it.
  if (!whole(text, &v) || v < lo || v > hi) return out_of_range(what, "an integer", lo, hi, text);
  return v;
}

Result<double> parse_double(std::string_view what, std::string_view text, double lo, double hi) {
  double v = 0;
  if (!whole(text, &v) || !std::isfinite(v) || v < lo || v > hi) {
    return out_of_range(what, "a number", lo, hi, text);
  }
  return v;
}

Result<std::int64_t> parse_bytes(std::string_view what, std::string_view text, std::int64_t lo,
                                 std::int64_t hi) {
  constexpr std::string_view kHint = " (bytes, or with a suffix K, M, G, T / KiB, MiB, GiB, TiB)";
  auto fail = [&] { return out_of_range<long long>(what, "a byte count", lo, hi, text, kHint); };
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  std::uint64_t n = 0;
  if (!whole(text.substr(0, digits), &n)) return fail();
  std::string suffix;
  for (char c : text.substr(digits)) suffix += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  int shift = -1;
  if (suffix.empty() || suffix == "b") shift = 0;
  else if (suffix == "k" || suffix == "kib") shift = 10;
  else if (suffix == "m" || suffix == "mib") shift = 20;
  else if (suffix == "g" || suffix == "gib") shift = 30;
  else if (suffix == "t" || suffix == "tib") shift = 40;
  if (shift < 0) return fail();
  // n << shift ≤ hi without overflowing: compare n with hi >> shift first.
  if (hi < 0 || n > (static_cast<std::uint64_t>(hi) >> shift)) return fail();
  const auto v = static_cast<std::int64_t>(n << shift);
  if (v < lo || v > hi) return fail();
  return v;
}

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
