#include "stoker/base/parse_number.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

namespace stoker {
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
                            long long hi, std::string_view hint) {
  long long v = 0;
  if (!whole(text, &v) || v < lo || v > hi) {
    return out_of_range(what, "an integer", lo, hi, text, hint);
  }
  return v;
}

Result<unsigned long long> parse_uint(std::string_view what, std::string_view text,
                                      unsigned long long lo, unsigned long long hi,
                                      std::string_view hint) {
  unsigned long long v = 0;
  // from_chars<unsigned> already refuses '-'; "-0" is refused with it.
  if (!whole(text, &v) || v < lo || v > hi) {
    return out_of_range(what, "an integer", lo, hi, text, hint);
  }
  return v;
}

Result<double> parse_double(std::string_view what, std::string_view text, double lo, double hi,
                            std::string_view hint) {
  double v = 0;
  if (!whole(text, &v) || !std::isfinite(v) || v < lo || v > hi) {
    return out_of_range(what, "a number", lo, hi, text, hint);
  }
  return v;
}

Result<std::int64_t> parse_bytes(std::string_view what, std::string_view text, std::int64_t lo,
                                 std::int64_t hi, std::string_view hint) {
  const std::string why =
      std::string(hint) + " (bytes, or with a suffix K, M, G, T / KiB, MiB, GiB, TiB)";
  auto fail = [&] { return out_of_range<long long>(what, "a byte count", lo, hi, text, why); };
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


}  // namespace stoker
