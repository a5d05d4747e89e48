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

#include "stoker/jinja/detail/special_casing.inc"

const SpecialCase* special_case(std::uint32_t cp) {
  if (cp < 0xDF) return nullptr;
  std::size_t lo = 0, hi = std::size(kSpecialCases);
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (kSpecialCases[mid].cp < cp) lo = mid + 1;
    else hi = mid;
  }
  return lo < std::size(kSpecialCases) && kSpecialCases[lo].cp == cp ? &kSpecialCases[lo] : nullptr;
}

enum class Case { kUpper, kLower, kTitle };

std::uint32_t simple(std::uint32_t cp, Case c) {
  if (cp < 0x80) {
    if (c == Case::kLower) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
  }
  const auto x = static_cast<utf8proc_int32_t>(cp);
  return static_cast<std::uint32_t>(c == Case::kUpper ? utf8proc_toupper(x)
                                    : c == Case::kLower ? utf8proc_tolower(x)
                                                        : utf8proc_totitle(x));
}

// Python's full case mapping of one code point (SpecialCasing first).
void append_case(std::string& out, std::uint32_t cp, Case c) {
  if (const SpecialCase* sc = special_case(cp)) {
    out += c == Case::kUpper ? sc->upper : c == Case::kLower ? sc->lower : sc->title;
    return;
  }
  append_utf8(out, simple(cp, c));
}

bool case_ignorable(std::uint32_t cp) {
  if (cp == '\'' || cp == '.' || cp == ':' || cp == '^' || cp == '`' || cp == 0xB7 || cp == 0x2019) return true;
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_ME || cat == UTF8PROC_CATEGORY_CF ||
         cat == UTF8PROC_CATEGORY_LM || cat == UTF8PROC_CATEGORY_SK;
}

// Python's Uppercase/Lowercase properties: the letter categories, plus characters that have a
// mapping to the other case (Other_Uppercase Ⓐ, Other_Lowercase ͅ); titlecase letters are neither.
bool is_upper_cp(std::uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z';
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  if (cat == UTF8PROC_CATEGORY_LT) return false;
  return cat == UTF8PROC_CATEGORY_LU || simple(cp, Case::kLower) != cp;
}
bool is_lower_cp(std::uint32_t cp) {
  if (cp < 0x80) return cp >= 'a' && cp <= 'z';
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  if (cat == UTF8PROC_CATEGORY_LT) return false;
  return cat == UTF8PROC_CATEGORY_LL || simple(cp, Case::kUpper) != cp;
}
bool is_title_cp(std::uint32_t cp) {
  return cp >= 0x80 && utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_LT;
}

// Applies `f(index, cp, out)` to every code point; stray bytes are kept as they are.
template <typename F>
std::string each_cp(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  std::size_t k = 0;
  for (std::size_t i = 0; i < s.size(); ++k) {
    std::size_t len = 1;
    const std::uint32_t cp = decode_utf8(s, i, &len);
    if (len == 1 && cp >= 0x80) out += s[i];
    else f(i, cp, out);
    i += len;
  }
  return out;
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

bool is_cased(std::uint32_t cp) { return is_upper_cp(cp) || is_lower_cp(cp) || is_title_cp(cp); }

bool final_sigma(std::string_view s, std::size_t at);

std::string py_upper(std::string_view s) {
  return each_cp(s, [](std::size_t, std::uint32_t cp, std::string& out) { append_case(out, cp, Case::kUpper); });
}

// Final sigma (Python's lower()): a capital sigma preceded by a cased letter and not followed by
// one (case-ignorable characters skipped) becomes ς.
bool final_sigma(std::string_view s, std::size_t at) {
  bool before = false;
  for (std::size_t i = at; i > 0;) {
    std::size_t start = i - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    std::size_t len = 1;
    const std::uint32_t cp = decode_utf8(s, start, &len);
    i = start;
    if (case_ignorable(cp)) continue;
    before = is_cased(cp);
    break;
  }
  if (!before) return false;
  std::size_t len = 1;
  decode_utf8(s, at, &len);
  for (std::size_t i = at + len; i < s.size();) {
    std::size_t l2 = 1;
    const std::uint32_t cp = decode_utf8(s, i, &l2);
    i += l2;
    if (case_ignorable(cp)) continue;
    return !is_cased(cp);
  }
  return true;
}

std::string py_lower(std::string_view s) {
  return each_cp(s, [&](std::size_t i, std::uint32_t cp, std::string& out) {
    if (cp == 0x3A3) append_utf8(out, final_sigma(s, i) ? 0x3C2 : 0x3C3);
    else append_case(out, cp, Case::kLower);
  });
}

std::string py_swapcase(std::string_view s) {
  return each_cp(s, [](std::size_t, std::uint32_t cp, std::string& out) {
    if (is_upper_cp(cp)) append_case(out, cp, Case::kLower);
    else if (is_lower_cp(cp)) append_case(out, cp, Case::kUpper);
    else append_utf8(out, cp);
  });
}

std::string py_title(std::string_view s) {
  bool prev_cased = false;
  return each_cp(s, [&](std::size_t i, std::uint32_t cp, std::string& out) {
    if (prev_cased) {
      if (cp == 0x3A3) append_utf8(out, final_sigma(s, i) ? 0x3C2 : 0x3C3);
      else append_case(out, cp, Case::kLower);
    } else {
      append_case(out, cp, Case::kTitle);
    }
    prev_cased = is_cased(cp);
  });
}

std::string py_capitalize(std::string_view s) {
  bool first = true;
  return each_cp(s, [&](std::size_t i, std::uint32_t cp, std::string& out) {
    if (first) append_case(out, cp, Case::kTitle);
    else if (cp == 0x3A3) append_utf8(out, final_sigma(s, i) ? 0x3C2 : 0x3C3);
    else append_case(out, cp, Case::kLower);
    first = false;
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
