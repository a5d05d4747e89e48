#include "stoker/jinja/detail/pytext.h"

#include <locale.h>
#include <utf8proc.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace stoker::jinja::detail {

void append_float_repr(std::string& out, double d) {
  if (std::isnan(d)) {
    out += "nan";
    return;
  }
  if (std::isinf(d)) {
    out += d < 0 ? "-inf" : "inf";
    return;
  }
  // Shortest round-trip digits in scientific form ("-1.2345e+16"), then Python's layout:
  // exponent notation when the decimal point sits before -4 or after 16 digits (repr's rule).
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<std::size_t>(r.ptr - buf));
  bool neg = false;
  if (!sci.empty() && sci[0] == '-') {
    neg = true;
    sci.remove_prefix(1);
  }
  const std::size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e))
    if (c != '.') digits += c;
  const int exp10 = std::atoi(std::string(sci.substr(e + 1)).c_str());
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  if (neg) out += '-';
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1);
    }
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += eb;
    return;
  }
  if (decpt <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-decpt), '0');
    out += digits;
  } else if (static_cast<std::size_t>(decpt) >= digits.size()) {
    out += digits;
    out.append(static_cast<std::size_t>(decpt) - digits.size(), '0');
    out += ".0";
  } else {
    out.append(digits, 0, static_cast<std::size_t>(decpt));
    out += '.';
    out.append(digits, static_cast<std::size_t>(decpt));
  }
}

double round_float(double x, int ndigits) {
  if (!std::isfinite(x)) return x;
  if (ndigits > 300) return x;
  if (ndigits < 0) {
    const double p = std::pow(10.0, -ndigits);
    const double q = std::nearbyint(x / p);  // half-even in the default rounding mode
    return q * p;
  }
  // glibc's printf rounds the exact binary value correctly (half-even on exact ties), which is
  // what CPython's round() computes through dtoa.
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", ndigits, x);
  return std::strtod(buf, nullptr);
}

void append_str_repr(std::string& out, std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  out += quote;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 1;
    const std::uint32_t cp = decode_utf8(s, i, &len);
    char buf[16];
    if (cp == static_cast<std::uint32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02x", cp);
      out += buf;
    } else if (cp < 0x7f) {
      out += static_cast<char>(cp);
    } else {
      const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
      const bool printable =
          !(cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF ||
            cat == UTF8PROC_CATEGORY_CS || cat == UTF8PROC_CATEGORY_CO ||
            cat == UTF8PROC_CATEGORY_CN || cat == UTF8PROC_CATEGORY_ZL ||
            cat == UTF8PROC_CATEGORY_ZP || cat == UTF8PROC_CATEGORY_ZS);
      if (printable) {
        out.append(s.substr(i, len));
      } else {
        if (cp < 0x100)
          std::snprintf(buf, sizeof buf, "\\x%02x", cp);
        else if (cp < 0x10000)
          std::snprintf(buf, sizeof buf, "\\u%04x", cp);
        else
          std::snprintf(buf, sizeof buf, "\\U%08x", cp);
        out += buf;
      }
    }
    i += len;
  }
  out += quote;
}

std::uint32_t decode_utf8(std::string_view s, std::size_t i, std::size_t* len) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  *len = 1;
  if (b0 < 0x80) return b0;
  int n = 0;
  std::uint32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0) {
    n = 1;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 2;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 3;
    cp = b0 & 0x07;
  } else {
    return b0;
  }
  if (i + static_cast<std::size_t>(n) >= s.size()) return b0;  // truncated sequence
  for (int k = 1; k <= n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
    if ((b & 0xC0) != 0x80) return b0;
    cp = (cp << 6) | (b & 0x3F);
  }
  *len = static_cast<std::size_t>(n) + 1;
  return cp;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::size_t count_code_points(std::string_view s) {
  std::size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

std::size_t byte_offset_of(std::string_view s, std::int64_t cp) {
  std::size_t i = 0;
  for (std::int64_t k = 0; k < cp && i < s.size(); ++k) {
    std::size_t len = 1;
    decode_utf8(s, i, &len);
    i += len;
  }
  return i;
}

bool is_py_space(std::uint32_t cp) {
  if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::size_t leading_space(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t len = 1;
    if (!is_py_space(decode_utf8(s, i, &len))) break;
    i += len;
  }
  return i;
}

std::size_t trailing_space(std::string_view s) {
  std::size_t end = s.size();
  while (end > 0) {
    std::size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80 && end - start < 4)
      --start;
    std::size_t len = 1;
    const std::uint32_t cp = decode_utf8(s, start, &len);
    if (start + len != end) {  // not a well-formed character ending here: a byte of its own
      if (!is_py_space(static_cast<unsigned char>(s[end - 1]))) break;
      --end;
      continue;
    }
    if (!is_py_space(cp)) break;
    end = start;
  }
  return s.size() - end;
}

namespace {

template <typename F>
std::string map_cps(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 1;
    const std::uint32_t cp = decode_utf8(s, i, &len);
    if (len == 1 && cp < 0x80) {
      out += static_cast<char>(f(cp));
    } else if (len == 1) {
      out += s[i];  // a stray byte stays as it is
    } else {
      append_utf8(out, f(cp));
    }
    i += len;
  }
  return out;
}

std::uint32_t up(std::uint32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
  return static_cast<std::uint32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(cp)));
}
std::uint32_t low(std::uint32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  return static_cast<std::uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}
std::uint32_t titlec(std::uint32_t cp) {
  if (cp < 0x80) return up(cp);
  return static_cast<std::uint32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(cp)));
}
bool is_upper_cp(std::uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z';
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_LU ||
         utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_LT;
}
bool is_lower_cp(std::uint32_t cp) {
  if (cp < 0x80) return cp >= 'a' && cp <= 'z';
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_LL;
}

template <typename Pred>
bool all_cps(std::string_view s, Pred p) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 1;
    if (!p(decode_utf8(s, i, &len))) return false;
    i += len;
  }
  return true;
}

}  // namespace

bool is_cased(std::uint32_t cp) { return is_upper_cp(cp) || is_lower_cp(cp); }

std::string py_upper(std::string_view s) { return map_cps(s, up); }
std::string py_lower(std::string_view s) { return map_cps(s, low); }
std::string py_swapcase(std::string_view s) {
  return map_cps(s, [](std::uint32_t cp) {
    return is_upper_cp(cp) ? low(cp) : is_lower_cp(cp) ? up(cp) : cp;
  });
}

std::string py_title(std::string_view s) {
  bool prev_cased = false;
  return map_cps(s, [&](std::uint32_t cp) {
    const std::uint32_t r = prev_cased ? low(cp) : titlec(cp);
    prev_cased = is_cased(cp);
    return r;
  });
}

std::string py_capitalize(std::string_view s) {
  bool first = true;
  return map_cps(s, [&](std::uint32_t cp) {
    const std::uint32_t r = first ? titlec(cp) : low(cp);
    first = false;
    return r;
  });
}

// isupper/islower: at least one cased character and none of the other case.
bool py_isupper(std::string_view s) {
  bool cased = false;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 1;
    const std::uint32_t cp = decode_utf8(s, i, &len);
    if (is_lower_cp(cp)) return false;
    cased = cased || is_upper_cp(cp);
    i += len;
  }
  return cased;
}
bool py_islower(std::string_view s) {
  bool cased = false;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 1;
    const std::uint32_t cp = decode_utf8(s, i, &len);
    if (is_upper_cp(cp)) return false;
    cased = cased || is_lower_cp(cp);
    i += len;
  }
  return cased;
}
bool py_isdigit(std::string_view s) {
  return all_cps(s, [](std::uint32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_ND;
  });
}
bool py_isalpha(std::string_view s) {
  return all_cps(s, [](std::uint32_t cp) {
    if (cp < 0x80) return (cp | 32) >= 'a' && (cp | 32) <= 'z';
    const auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
    return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT ||
           c == UTF8PROC_CATEGORY_LM || c == UTF8PROC_CATEGORY_LO;
  });
}
bool py_isalnum(std::string_view s) {
  return all_cps(s, [](std::uint32_t cp) {
    std::string one;
    append_utf8(one, cp);
    return py_isalpha(one) || py_isdigit(one);
  });
}
bool py_isspace(std::string_view s) { return all_cps(s, is_py_space); }

std::string strftime_c(std::string_view fmt, const std::tm& tm) {
  static locale_t c_locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(0));
  const std::string f(fmt);
  std::string out(f.size() * 4 + 64, '\0');
  for (int attempt = 0; attempt < 6; ++attempt) {
    const std::size_t n = strftime_l(out.data(), out.size(), f.c_str(), &tm, c_locale);
    if (n > 0 || f.empty()) {
      out.resize(n);
      return out;
    }
    out.resize(out.size() * 4);
  }
  return std::string();
}

}  // namespace stoker::jinja::detail
