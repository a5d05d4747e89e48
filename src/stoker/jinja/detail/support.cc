#include "stoker/jinja/detail/support.h"

#include <utf8proc.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "stoker/jinja/detail/pytext.h"

namespace stoker::jinja::detail {

bool bind(Interp& in, const char* fn, std::vector<Value>& args, Kwargs& kwargs,
          std::initializer_list<const char*> names, std::optional<Value>* out) {
  const std::size_t n = names.size();
  if (args.size() > n) {
    in.fail(std::string("TypeError: ") + fn + "() takes at most " + std::to_string(n) +
            " argument(s) (" + std::to_string(args.size()) + " given)");
    return false;
  }
  for (std::size_t i = 0; i < args.size(); ++i) out[i] = args[i];
  for (auto& [k, v] : kwargs) {
    std::size_t i = 0;
    for (const char* name : names) {
      if (k == name) break;
      ++i;
    }
    if (i == n) {
      in.fail(std::string("TypeError: ") + fn + "() got an unexpected keyword argument '" + k + "'");
      return false;
    }
    if (out[i]) {
      in.fail(std::string("TypeError: ") + fn + "() got multiple values for argument '" + k + "'");
      return false;
    }
    out[i] = v;
  }
  return true;
}

// ---- printf-style -----------------------------------------------------------------------
namespace {

struct Spec {
  bool left = false, plus = false, space = false, zero = false, alt = false;
  int width = -1, prec = -1;
  char type = 's';
};

std::string pad_num(std::string body, const Spec& sp, bool negative) {
  std::string sign = negative ? "-" : sp.plus ? "+" : sp.space ? " " : "";
  const int len = static_cast<int>(count_code_points(body) + sign.size());
  if (sp.width > len) {
    const auto fill = static_cast<std::size_t>(sp.width - len);
    if (sp.left) return sign + body + std::string(fill, ' ');
    if (sp.zero) return sign + std::string(fill, '0') + body;
    return std::string(fill, ' ') + sign + body;
  }
  return sign + body;
}

bool format_one(Interp& in, const Spec& sp, const Value& v, std::string& out) {
  char buf[512];
  switch (sp.type) {
    case 's':
    case 'r':
    case 'a': {
      std::string s;
      if (sp.type == 's') append_str(s, v); else append_repr(s, v);
      if (sp.prec >= 0) s = s.substr(0, byte_offset_of(s, sp.prec));
      const int len = static_cast<int>(count_code_points(s));
      if (sp.width > len) {
        const auto fill = static_cast<std::size_t>(sp.width - len);
        s = sp.left ? s + std::string(fill, ' ') : std::string(fill, ' ') + s;
      }
      out += s;
      return true;
    }
    case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': {
      std::int64_t x = 0;
      if (v.is_integral()) {
        x = v.as_int();
      } else if (v.kind() == Kind::kFloat && (sp.type == 'd' || sp.type == 'i' || sp.type == 'u') &&
                 std::isfinite(v.as_float())) {
        x = static_cast<std::int64_t>(std::trunc(v.as_float()));
      } else {
        in.fail(std::string("TypeError: %") + sp.type + " format: a number is required, not " +
                std::string(type_name(v)));
        return false;
      }
      const bool neg = x < 0;
      const unsigned long long mag = neg ? 0ull - static_cast<unsigned long long>(x) : static_cast<unsigned long long>(x);
      const char* f = sp.type == 'x' ? "%llx" : sp.type == 'X' ? "%llX" : sp.type == 'o' ? "%llo" : "%llu";
      std::snprintf(buf, sizeof buf, f, mag);
      std::string body = buf;
      if (sp.prec > static_cast<int>(body.size())) body = std::string(static_cast<std::size_t>(sp.prec) - body.size(), '0') + body;
      if (sp.alt && sp.type != 'd' && sp.type != 'i' && sp.type != 'u')
        body = (sp.type == 'x' ? "0x" : sp.type == 'X' ? "0X" : "0o") + body;
      out += pad_num(body, sp, neg);
      return true;
    }
    case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': {
      if (!v.is_number()) {
        in.fail(std::string("TypeError: must be real number, not ") + std::string(type_name(v)));
        return false;
      }
      const double d = v.as_float();
      char f[8] = {'%', '.', '*', sp.type, 0};
      if (sp.alt) {
        f[1] = '#';
        f[2] = '.';
        f[3] = '*';
        f[4] = sp.type;
        f[5] = 0;
      }
      std::snprintf(buf, sizeof buf, f, sp.prec < 0 ? 6 : sp.prec, std::fabs(d));
      std::string body = buf;
      if (std::isinf(d)) body = (sp.type >= 'a') ? "inf" : "INF";
      if (std::isnan(d)) body = (sp.type >= 'a') ? "nan" : "NAN";
      out += pad_num(body, sp, std::signbit(d) && !std::isnan(d));
      return true;
    }
    case 'c': {
      std::string s;
      if (v.is_integral()) append_utf8(s, static_cast<std::uint32_t>(v.as_int()));
      else if (v.is_string() && count_code_points(v.str()) == 1) s = v.str();
      else {
        in.fail("TypeError: %c requires an int or a unicode character");
        return false;
      }
      out += s;
      return true;
    }
    default:
      in.fail(std::string("ValueError: unsupported format character '") + sp.type + "'");
      return false;
  }
}

}  // namespace

Value printf_format(Interp& in, const std::string& fmt, std::vector<Value>& args, Kwargs& kwargs) {
  std::string out;
  std::size_t next = 0;
  bool used_mapping = false;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) return in.fail("ValueError: incomplete format");
    const Value* arg = nullptr;
    if (fmt[i] == '(') {
      const std::size_t close = fmt.find(')', i);
      if (close == std::string::npos) return in.fail("ValueError: incomplete format key");
      const std::string key = fmt.substr(i + 1, close - i - 1);
      for (const auto& kv : kwargs)
        if (kv.first == key) arg = &kv.second;
      if (arg == nullptr) return in.fail("KeyError: '" + key + "'");
      used_mapping = true;
      i = close + 1;
    }
    Spec sp;
    for (; i < fmt.size(); ++i) {
      const char c = fmt[i];
      if (c == '-') sp.left = true;
      else if (c == '+') sp.plus = true;
      else if (c == ' ') sp.space = true;
      else if (c == '0') sp.zero = true;
      else if (c == '#') sp.alt = true;
      else break;
    }
    auto number = [&](int* dst) {
      if (i < fmt.size() && fmt[i] == '*') {
        if (next >= args.size() || !args[next].is_integral()) return false;
        *dst = static_cast<int>(args[next++].as_int());
        ++i;
        return true;
      }
      int x = -1;
      while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') x = (x < 0 ? 0 : x * 10) + (fmt[i++] - '0');
      *dst = x;
      return true;
    };
    if (!number(&sp.width)) return in.fail("TypeError: * wants int");
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      if (!number(&sp.prec)) return in.fail("TypeError: * wants int");
      if (sp.prec < 0) sp.prec = 0;
    }
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) return in.fail("ValueError: incomplete format");
    sp.type = fmt[i];
    if (sp.type == '%') {
      out += '%';
      continue;
    }
    if (arg == nullptr) {
      if (next >= args.size()) return in.fail("TypeError: not enough arguments for format string");
      arg = &args[next++];
    }
    if (!format_one(in, sp, *arg, out)) return Value();
    if (!in.check_size(out.size())) return Value();
  }
  if (!used_mapping && next < args.size())
    return in.fail("TypeError: not all arguments converted during string formatting");
  return Value::string(std::move(out));
}

// ---- str.format --------------------------------------------------------------------------
Value str_format(Interp& in, const std::string& fmt, std::vector<Value>& args, Kwargs& kwargs) {
  std::string out;
  std::size_t auto_index = 0;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      return in.fail("ValueError: Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const std::size_t close = fmt.find('}', i);
    if (close == std::string::npos) return in.fail("ValueError: Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    std::string spec, conv;
    if (const std::size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    if (const std::size_t bang = field.find('!'); bang != std::string::npos) {
      conv = field.substr(bang + 1);
      field.resize(bang);
    }
    std::size_t head_end = field.find_first_of(".[");
    const std::string head = field.substr(0, head_end);
    Value v;
    if (head.empty()) {
      if (auto_index >= args.size()) return in.fail("IndexError: Replacement index " + std::to_string(auto_index) + " out of range for positional args tuple");
      v = args[auto_index++];
    } else if (head.find_first_not_of("0123456789") == std::string::npos) {
      const std::size_t k = std::strtoul(head.c_str(), nullptr, 10);
      if (k >= args.size()) return in.fail("IndexError: Replacement index " + head + " out of range for positional args tuple");
      v = args[k];
    } else {
      bool found = false;
      for (const auto& kv : kwargs)
        if (kv.first == head) {
          v = kv.second;
          found = true;
        }
      if (!found) return in.fail("KeyError: '" + head + "'");
    }
    while (head_end != std::string::npos && head_end < field.size()) {  // .attr and [key]
      if (field[head_end] == '.') {
        const std::size_t e = field.find_first_of(".[", head_end + 1);
        v = in.getattr(v, field.substr(head_end + 1, e == std::string::npos ? std::string::npos : e - head_end - 1));
        head_end = e;
      } else {
        const std::size_t e = field.find(']', head_end);
        if (e == std::string::npos) return in.fail("ValueError: Missing ']' in format string");
        const std::string key = field.substr(head_end + 1, e - head_end - 1);
        v = key.find_first_not_of("0123456789") == std::string::npos && !key.empty()
                ? in.getitem(v, Value::integer(std::atoll(key.c_str())))
                : in.getitem(v, Value::string(key));
        head_end = e + 1;
      }
      if (in.failed()) return Value();
    }
    if (conv == "r" || conv == "a") {
      std::string r;
      append_repr(r, v);
      v = Value::string(std::move(r));
    } else if (conv == "s") {
      v = Value::string(to_str(v));
    } else if (!conv.empty()) {
      return in.fail("ValueError: Unknown conversion specifier " + conv);
    }
    // [[fill]align][sign][#][0][width][,_][.precision][type]
    std::uint32_t fill = ' ';
    int align = 0;  // 0: default
    std::size_t k = 0;
    auto is_align = [](char a) { return a == '<' || a == '>' || a == '^' || a == '='; };
    std::size_t l0 = 1;
    if (!spec.empty()) decode_utf8(spec, 0, &l0);
    if (spec.size() > l0 && is_align(spec[l0])) {
      fill = decode_utf8(spec, 0, &l0);
      align = spec[l0];
      k = l0 + 1;
    } else if (!spec.empty() && is_align(spec[0])) {
      align = spec[0];
      k = 1;
    }
    Spec sp;
    if (k < spec.size() && (spec[k] == '+' || spec[k] == '-' || spec[k] == ' ')) {
      sp.plus = spec[k] == '+';
      sp.space = spec[k] == ' ';
      ++k;
    }
    if (k < spec.size() && spec[k] == '#') {
      sp.alt = true;
      ++k;
    }
    if (k < spec.size() && spec[k] == '0') {
      sp.zero = true;
      ++k;
    }
    int width = -1;
    while (k < spec.size() && spec[k] >= '0' && spec[k] <= '9') width = (width < 0 ? 0 : width * 10) + (spec[k++] - '0');
    if (k < spec.size() && (spec[k] == ',' || spec[k] == '_')) return in.fail("format spec '" + spec + "' (grouping) is not supported by stoker");
    if (k < spec.size() && spec[k] == '.') {
      ++k;
      sp.prec = 0;
      while (k < spec.size() && spec[k] >= '0' && spec[k] <= '9') sp.prec = sp.prec * 10 + (spec[k++] - '0');
    }
    char type = 0;
    if (k < spec.size()) type = spec[k++];
    if (k != spec.size()) return in.fail("ValueError: Invalid format specifier '" + spec + "'");
    std::string body;
    if (type == 0 && !v.is_number()) type = 's';
    if (type == 0) type = v.kind() == Kind::kFloat ? 'r' : 'd';
    if (type == 's') {
      if (!v.is_string()) return in.fail("ValueError: Unknown format code 's' for object of type '" + std::string(type_name(v)) + "'");
      body = v.str();
      if (sp.prec >= 0) body = body.substr(0, byte_offset_of(body, sp.prec));
      if (align == 0) align = '<';
    } else if (type == 'r') {  // a float without a type: repr unless a precision is given
      if (sp.prec >= 0) {
        Spec g = sp;
        g.type = 'g';
        if (!format_one(in, g, v, body)) return Value();
      } else {
        const double d = v.as_float();
        append_float_repr(body, std::fabs(d));
        if (std::signbit(d) && !std::isnan(d)) body = "-" + body;
        else if (sp.plus) body = "+" + body;
      }
    } else {
      if (type == 'd' && v.kind() == Kind::kFloat) return in.fail("ValueError: Unknown format code 'd' for object of type 'float'");
      Spec s2 = sp;
      s2.type = type == 'n' ? 'd' : type == '%' ? 'f' : type;
      s2.width = -1;
      Value x = v;
      if (type == '%') x = Value::number(v.as_float() * 100.0);
      if (!format_one(in, s2, x, body)) return Value();
      if (type == '%') body += '%';
    }
    if (align == 0) align = '>';
    if (sp.zero && align == '>' && fill == ' ' && (type != 's')) {
      fill = '0';
      align = '=';
    }
    const std::int64_t len = static_cast<std::int64_t>(count_code_points(body));
    if (width > len) {
      if (align == '=') {
        std::size_t sign = (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) ? 1 : 0;
        std::string f;
        for (std::int64_t m = 0; m < width - len; ++m) append_utf8(f, fill);
        body = body.substr(0, sign) + f + body.substr(sign);
      } else {
        body = py_pad(body, width, fill, align == '<' ? -1 : align == '^' ? 0 : 1);
      }
    }
    out += body;
    if (!in.check_size(out.size())) return Value();
  }
  return Value::string(std::move(out));
}

// ---- strings ----------------------------------------------------------------------------
std::string py_pad(std::string_view s, std::int64_t width, std::uint32_t fill, int align) {
  const std::int64_t len = static_cast<std::int64_t>(count_code_points(s));
  if (width <= len) return std::string(s);
  const std::int64_t total = width - len;
  std::int64_t left = 0;
  if (align > 0) left = total;
  else if (align == 0) left = total / 2 + (total & width & 1);  // CPython's str.center split
  std::string f;
  append_utf8(f, fill);
  std::string out;
  for (std::int64_t i = 0; i < left; ++i) out += f;
  out += s;
  for (std::int64_t i = 0; i < total - left; ++i) out += f;
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

// Python's float()/int() of a string: surrounding whitespace, a sign, single underscores
// between digits.
std::optional<std::string> clean_number(std::string_view s) {
  s.remove_prefix(leading_space(s));
  s.remove_suffix(trailing_space(s));
  if (s.empty()) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      const bool ok = i > 0 && i + 1 < s.size() && std::isalnum(static_cast<unsigned char>(s[i - 1])) &&
                      std::isalnum(static_cast<unsigned char>(s[i + 1]));
      if (!ok) return std::nullopt;
      continue;
    }
    if (static_cast<unsigned char>(s[i]) >= 0x80) return std::nullopt;
    out += s[i];
  }
  return out;
}

}  // namespace

std::optional<double> py_float(const Value& v) {
  if (v.is_number()) return v.as_float();
  if (!v.is_string()) return std::nullopt;
  auto c = clean_number(v.str());
  if (!c) return std::nullopt;
  std::string t = *c;
  std::string low = py_lower(t);
  std::string_view body = low;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) body.remove_prefix(1);
  if (body == "inf" || body == "infinity" || body == "nan") {
    const double x = body == "nan" ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    return low[0] == '-' ? -x : x;
  }
  for (char ch : body)
    if (!(std::isdigit(static_cast<unsigned char>(ch)) || ch == '.' || ch == 'e' || ch == '+' || ch == '-'))
      return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || *end != '\0') return std::nullopt;
  return d;
}

std::optional<std::int64_t> py_int(const Value& v, int base) {
  if (v.is_integral()) return v.as_int();
  if (v.kind() == Kind::kFloat) {
    const double d = v.as_float();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return std::nullopt;
    return static_cast<std::int64_t>(std::trunc(d));
  }
  if (!v.is_string()) return std::nullopt;
  if (auto c = clean_number(v.str())) {
    std::string t = *c;
    std::size_t i = 0;
    bool neg = false;
    if (t[0] == '+' || t[0] == '-') {
      neg = t[0] == '-';
      i = 1;
    }
    int b = base;
    if (i + 1 < t.size() && t[i] == '0' && (b == 0 || b == 16 || b == 8 || b == 2)) {
      const char p = static_cast<char>(t[i + 1] | 32);
      if ((p == 'x' && (b == 0 || b == 16)) || (p == 'o' && (b == 0 || b == 8)) || (p == 'b' && (b == 0 || b == 2))) {
        b = p == 'x' ? 16 : p == 'o' ? 8 : 2;
        i += 2;
      }
    }
    if (b == 0) b = 10;
    if (b >= 2 && b <= 36 && i < t.size()) {
      errno = 0;
      char* end = nullptr;
      const std::string digits = t.substr(i);
      if (digits[0] != '+' && digits[0] != '-') {
        const unsigned long long x = std::strtoull(digits.c_str(), &end, b);
        if (end != digits.c_str() && *end == '\0' && errno != ERANGE &&
            x <= static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max()))
          return neg ? -static_cast<std::int64_t>(x) : static_cast<std::int64_t>(x);
      }
    }
  }
  // jinja2 falls back to int(float(value)).
  const auto f = py_float(v);
  if (!f || !std::isfinite(*f) || std::fabs(*f) >= 9.2e18) return std::nullopt;
  return static_cast<std::int64_t>(std::trunc(*f));
}

std::vector<std::string> py_splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 1;
    const std::uint32_t cp = decode_utf8(s, i, &len);
    std::size_t brk = 0;
    if (cp == '\r' && i + 1 < s.size() && s[i + 1] == '\n') brk = 2;
    else if (cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) ||
             cp == 0x85 || cp == 0x2028 || cp == 0x2029)
      brk = len;
    if (brk == 0) {
      i += len;
      continue;
    }
    out.emplace_back(s.substr(start, (keepends ? i + brk : i) - start));
    i += brk;
    start = i;
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  std::int64_t maxsplit, bool from_right) {
  std::vector<std::string> out;
  if (sep) {
    const std::string& d = *sep;
    if (!from_right) {
      std::size_t start = 0;
      while (maxsplit != 0) {
        const std::size_t at = s.find(d, start);
        if (at == std::string_view::npos) break;
        out.emplace_back(s.substr(start, at - start));
        start = at + d.size();
        if (maxsplit > 0) --maxsplit;
      }
      out.emplace_back(s.substr(start));
    } else {
      std::size_t end = s.size();
      std::vector<std::string> rev;
      while (maxsplit != 0 && end >= d.size()) {
        const std::size_t at = s.rfind(d, end - d.size());
        if (at == std::string_view::npos) break;
        rev.emplace_back(s.substr(at + d.size(), end - at - d.size()));
        end = at;
        if (maxsplit > 0) --maxsplit;
      }
      rev.emplace_back(s.substr(0, end));
      out.assign(rev.rbegin(), rev.rend());
    }
    return out;
  }
  // Whitespace split: runs of whitespace, no empty strings.
  std::vector<std::pair<std::size_t, std::size_t>> words;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 1;
    if (is_py_space(decode_utf8(s, i, &len))) {
      i += len;
      continue;
    }
    std::size_t j = i;
    while (j < s.size()) {
      std::size_t l2 = 1;
      if (is_py_space(decode_utf8(s, j, &l2))) break;
      j += l2;
    }
    words.emplace_back(i, j);
    i = j;
  }
  if (maxsplit < 0 || static_cast<std::size_t>(maxsplit) + 1 >= words.size()) {
    for (auto [a, b] : words) out.emplace_back(s.substr(a, b - a));
    return out;
  }
  const std::size_t m = static_cast<std::size_t>(maxsplit);
  if (!from_right) {
    for (std::size_t k = 0; k < m; ++k) out.emplace_back(s.substr(words[k].first, words[k].second - words[k].first));
    std::string_view rest = s.substr(words[m].first);
    rest.remove_suffix(trailing_space(rest));
    out.emplace_back(rest);
  } else {
    const std::size_t first = words.size() - m;
    std::string_view rest = s.substr(0, words[first - 1].second);
    rest.remove_prefix(leading_space(rest));
    out.emplace_back(rest);
    for (std::size_t k = first; k < words.size(); ++k) out.emplace_back(s.substr(words[k].first, words[k].second - words[k].first));
  }
  return out;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view repl, std::int64_t count) {
  std::string out;
  if (old.empty()) {  // inserts repl before every character and at the end
    std::int64_t n = 0;
    std::size_t i = 0;
    while (i <= s.size()) {
      if (count >= 0 && n >= count) break;
      out += repl;
      ++n;
      if (i == s.size()) {
        i = s.size() + 1;
        break;
      }
      std::size_t len = 1;
      decode_utf8(s, i, &len);
      out += s.substr(i, len);
      i += len;
    }
    if (i < s.size()) out += s.substr(i);
    return out;
  }
  std::size_t start = 0;
  std::int64_t n = 0;
  while (count < 0 || n < count) {
    const std::size_t at = s.find(old, start);
    if (at == std::string_view::npos) break;
    out += s.substr(start, at - start);
    out += repl;
    start = at + old.size();
    ++n;
  }
  out += s.substr(start);
  return out;
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  if (!chars) {
    if (left) s.remove_prefix(leading_space(s));
    if (right) s.remove_suffix(trailing_space(s));
    return std::string(s);
  }
  std::vector<std::uint32_t> set;
  for (std::size_t i = 0; i < chars->size();) {
    std::size_t len = 1;
    set.push_back(decode_utf8(*chars, i, &len));
    i += len;
  }
  auto in_set = [&](std::uint32_t cp) {
    for (auto c : set)
      if (c == cp) return true;
    return false;
  };
  std::size_t b = 0, e = s.size();
  if (left) {
    while (b < e) {
      std::size_t len = 1;
      if (!in_set(decode_utf8(s, b, &len))) break;
      b += len;
    }
  }
  if (right) {
    while (e > b) {
      std::size_t start = e - 1;
      while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
      std::size_t len = 1;
      if (!in_set(decode_utf8(s, start, &len))) break;
      e = start;
    }
  }
  return std::string(s.substr(b, e - b));
}

std::string jinja_title(std::string_view s) {
  // re.split(r"([-\s({\[<]+)", s): words and separator runs alternate; each non-empty piece
  // gets its first character upper-cased and the rest lower-cased.
  auto is_sep = [](std::uint32_t cp) { return cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || is_py_space(cp); };
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t len = 1;
    const bool sep = is_sep(decode_utf8(s, i, &len));
    std::size_t j = i;
    while (j < s.size()) {
      std::size_t l2 = 1;
      if (is_sep(decode_utf8(s, j, &l2)) != sep) break;
      j += l2;
    }
    const std::string_view piece = s.substr(i, j - i);
    std::size_t l1 = 1;
    decode_utf8(piece, 0, &l1);
    out += py_upper(piece.substr(0, l1));
    out += py_lower(piece.substr(l1));
    i = j;
  }
  return out;
}

std::int64_t word_count(std::string_view s) {
  std::int64_t n = 0;
  bool in_word = false;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 1;
    const std::uint32_t cp = decode_utf8(s, i, &len);
    bool w = cp == '_';
    if (!w) {
      if (cp < 0x80) {
        w = std::isalnum(static_cast<int>(cp)) != 0;
      } else {
        const auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
        w = (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
            (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
      }
    }
    if (w && !in_word) ++n;
    in_word = w;
    i += len;
  }
  return n;
}

Value dict_items(const Value& dict) {
  std::vector<Value> items;
  items.reserve(dict.dict().items.size());
  for (const auto& kv : dict.dict().items) items.push_back(Value::list({kv.first, kv.second}, true));
  return Value::list(std::move(items));
}

}  // namespace stoker::jinja::detail
