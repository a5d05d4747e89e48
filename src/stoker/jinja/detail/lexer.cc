#include "stoker/jinja/detail/lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "stoker/jinja/detail/pytext.h"

namespace stoker::jinja::detail {
namespace {

std::string normalise(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\r') {
      out += '\n';
      if (i + 1 < in.size() && in[i + 1] == '\n') ++i;
    } else {
      out += in[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

class Lexer {
 public:
  explicit Lexer(std::string src) { out_.source = std::move(src); }

  Result<Lexed> run() {
    const std::string& s = out_.source;
    std::size_t pos = 0;
    bool line_starting = true;
    while (pos < s.size()) {
      std::size_t p = pos;
      char kind = 0;
      while ((p = s.find('{', p)) != std::string::npos) {
        if (p + 1 < s.size() && (s[p + 1] == '{' || s[p + 1] == '%' || s[p + 1] == '#')) {
          kind = s[p + 1];
          break;
        }
        ++p;
      }
      if (kind == 0) {
        data(pos, s.substr(pos));
        break;
      }
      std::size_t after = p + 2;
      char sign = 0;
      if (after < s.size() && (s[after] == '-' || s[after] == '+')) sign = s[after++];
      std::string text = s.substr(pos, p - pos);
      // Whitespace control of the text before the tag (jinja2's OptionalLStrip).
      if (sign == '-') {
        text.resize(text.size() - trailing_space(text));
      } else if (sign != '+' && kind != '{') {
        strip_line_start(text, line_starting);
      }
      data(pos, std::move(text));
      std::size_t raw_end = 0;
      if (kind == '%' && is_raw_begin(after, &raw_end)) {
        STOKER_ASSIGN_OR_RETURN(pos, raw(p, raw_end, &line_starting));
        continue;
      }
      if (kind == '#') {
        STOKER_ASSIGN_OR_RETURN(pos, comment(p, after, &line_starting));
        continue;
      }
      push(kind == '{' ? Tok::kVarBegin : Tok::kBlockBegin, p);
      STOKER_ASSIGN_OR_RETURN(pos, tag(p, after, kind == '%', &line_starting));
    }
    push(Tok::kEof, static_cast<std::uint32_t>(s.size()));
    return std::move(out_);
  }

 private:
  Error fail(std::size_t offset, const std::string& what) const {
    const Pos at = out_.pos_of(static_cast<std::uint32_t>(offset));
    return invalid_argument("template syntax error at " + std::to_string(at.line) + ":" +
                            std::to_string(at.col) + ": " + what);
  }

  void push(Tok t, std::size_t offset, std::string text = {}) {
    Token tok;
    tok.type = t;
    tok.offset = static_cast<std::uint32_t>(offset);
    tok.text = std::move(text);
    out_.tokens.push_back(std::move(tok));
  }

  void data(std::size_t offset, std::string text) {
    if (!text.empty()) push(Tok::kData, offset, std::move(text));
  }

  // lstrip_blocks: the text between the last newline (or the template start / a tag that ended
  // a line) and the tag is dropped when it is all whitespace.
  static void strip_line_start(std::string& text, bool line_starting) {
    const std::size_t nl = text.rfind('\n');
    const std::size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if (l_pos == 0 && !line_starting) return;
    const std::string_view tail = std::string_view(text).substr(l_pos);
    if (!tail.empty() && leading_space(tail) == tail.size()) text.resize(l_pos);
  }

  std::size_t skip_space(std::size_t i) const {
    return i + leading_space(std::string_view(out_.source).substr(i));
  }

  // `{%[-+]? \s* raw \s* (-%} \s* | %})`; no trim_blocks newline after it (jinja2's rule).
  bool is_raw_begin(std::size_t after, std::size_t* end) const {
    const std::string& s = out_.source;
    std::size_t i = skip_space(after);
    if (s.compare(i, 3, "raw") != 0) return false;
    i = skip_space(i + 3);
    if (s.compare(i, 3, "-%}") == 0) {
      *end = skip_space(i + 3);
      return true;
    }
    if (s.compare(i, 2, "%}") == 0) {
      *end = i + 2;
      return true;
    }
    return false;
  }

  Result<std::size_t> raw(std::size_t begin, std::size_t content, bool* line_starting) {
    const std::string& s = out_.source;
    bool starting = content > 0 && s[content - 1] == '\n';
    for (std::size_t p = content; (p = s.find("{%", p)) != std::string::npos; ++p) {
      std::size_t i = p + 2;
      char sign = 0;
      if (i < s.size() && (s[i] == '-' || s[i] == '+')) sign = s[i++];
      i = skip_space(i);
      if (s.compare(i, 6, "endraw") != 0) continue;
      i = skip_space(i + 6);
      std::size_t end = 0;
      if (s.compare(i, 3, "+%}") == 0) {
        end = i + 3;
      } else if (s.compare(i, 3, "-%}") == 0) {
        end = skip_space(i + 3);
      } else if (s.compare(i, 2, "%}") == 0) {
        end = i + 2;
        if (end < s.size() && s[end] == '\n') ++end;
      } else {
        continue;
      }
      std::string text = s.substr(content, p - content);
      if (sign == '-')
        text.resize(text.size() - trailing_space(text));
      else if (sign != '+')
        strip_line_start(text, starting);
      data(content, std::move(text));
      *line_starting = s[end - 1] == '\n';
      return end;
    }
    return fail(begin, "missing end of raw directive");
  }

  Result<std::size_t> comment(std::size_t begin, std::size_t after, bool* line_starting) {
    const std::string& s = out_.source;
    const std::size_t q = s.find("#}", after);
    if (q == std::string::npos) return fail(begin, "missing end of comment tag");
    std::size_t end = q + 2;
    const char before = q > after ? s[q - 1] : 0;
    if (before == '-') {
      end = skip_space(end);
    } else if (before != '+') {
      if (end < s.size() && s[end] == '\n') ++end;  // trim_blocks
    }
    *line_starting = s[end - 1] == '\n';
    return end;
  }

  Result<std::size_t> tag(std::size_t begin, std::size_t i, bool block, bool* line_starting) {
    const std::string& s = out_.source;
    std::string stack;  // closers expected
    while (true) {
      if (i >= s.size())
        return fail(begin, block ? "unexpected end of template: a {% tag is not closed"
                                 : "unexpected end of template: a {{ tag is not closed");
      if (stack.empty()) {
        std::size_t end = 0;
        if (block) {
          if (s.compare(i, 3, "+%}") == 0) {
            end = i + 3;
          } else if (s.compare(i, 3, "-%}") == 0) {
            end = skip_space(i + 3);
          } else if (s.compare(i, 2, "%}") == 0) {
            end = i + 2;
            if (end < s.size() && s[end] == '\n') ++end;  // trim_blocks
          }
        } else {
          if (s.compare(i, 3, "-}}") == 0)
            end = skip_space(i + 3);
          else if (s.compare(i, 2, "}}") == 0)
            end = i + 2;
        }
        if (end != 0) {
          push(block ? Tok::kBlockEnd : Tok::kVarEnd, i);
          *line_starting = s[end - 1] == '\n';
          return end;
        }
      }
      const std::size_t ws = skip_space(i);
      if (ws != i) {
        i = ws;
        continue;
      }
      const char c = s[i];
      if (is_digit(c)) {
        STOKER_ASSIGN_OR_RETURN(i, number(i));
        continue;
      }
      if (is_name_start(c)) {
        std::size_t j = i;
        while (j < s.size() && is_name_char(s[j])) ++j;
        push(Tok::kName, i, s.substr(i, j - i));
        i = j;
        continue;
      }
      if (c == '\'' || c == '"') {
        STOKER_ASSIGN_OR_RETURN(i, string(i));
        continue;
      }
      static const char* const kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                         "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                         ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};
      const char* op = nullptr;
      for (const char* o : kOps) {
        if (s.compare(i, std::char_traits<char>::length(o), o) == 0) {
          op = o;
          break;
        }
      }
      if (op == nullptr) {
        std::size_t len = 1;
        decode_utf8(s, i, &len);
        return fail(i, "unexpected character '" + s.substr(i, len) + "'");
      }
      const std::string o(op);
      if (o == "(" || o == "[" || o == "{") {
        stack.push_back(o == "(" ? ')' : o == "[" ? ']' : '}');
      } else if (o == ")" || o == "]" || o == "}") {
        if (stack.empty()) return fail(i, "unexpected '" + o + "'");
        if (stack.back() != o[0])
          return fail(i, "unexpected '" + o + "', expected '" + std::string(1, stack.back()) + "'");
        stack.pop_back();
      }
      push(Tok::kOp, i, o);
      i += o.size();
    }
  }

  // jinja2's float_re / integer_re (underscores between digits; 0b/0o/0x; a float needs a
  // fraction or an exponent; not right after a '.').
  Result<std::size_t> number(std::size_t i) {
    const std::string& s = out_.source;
    auto digits = [&](std::size_t j) {  // (\d+_)*\d+ ; returns j unchanged on no match
      std::size_t k = j;
      if (k >= s.size() || !is_digit(s[k])) return j;
      while (true) {
        while (k < s.size() && is_digit(s[k])) ++k;
        if (k + 1 < s.size() && s[k] == '_' && is_digit(s[k + 1])) {
          ++k;
          continue;
        }
        return k;
      }
    };
    const bool after_dot = i > 0 && s[i - 1] == '.';
    if (!after_dot) {
      const std::size_t int_end = digits(i);
      std::size_t j = int_end;
      bool frac = false, exp = false;
      if (j + 1 < s.size() && s[j] == '.' && is_digit(s[j + 1])) {
        j = digits(j + 1);
        frac = true;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        std::size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        const std::size_t e = digits(k);
        if (e != k) {
          j = e;
          exp = true;
        }
      }
      if (frac || exp) {
        std::string clean;
        for (std::size_t k = i; k < j; ++k)
          if (s[k] != '_') clean += s[k];
        Token t;
        t.type = Tok::kFloat;
        t.offset = static_cast<std::uint32_t>(i);
        t.fval = std::strtod(clean.c_str(), nullptr);
        out_.tokens.push_back(std::move(t));
        return j;
      }
    }
    int base = 10;
    std::size_t j = i;
    if (s[i] == '0' && i + 1 < s.size()) {
      const char b = static_cast<char>(s[i + 1] | 32);
      if (b == 'b' || b == 'o' || b == 'x') base = b == 'b' ? 2 : b == 'o' ? 8 : 16;
    }
    std::string clean;
    auto is_base_digit = [&](char c) {
      if (base == 2) return c == '0' || c == '1';
      if (base == 8) return c >= '0' && c <= '7';
      if (base == 16) return is_digit(c) || ((c | 32) >= 'a' && (c | 32) <= 'f');
      return is_digit(c);
    };
    if (base != 10) {
      j = i + 2;
      while (j < s.size()) {
        if (s[j] == '_' && j + 1 < s.size() && is_base_digit(s[j + 1])) ++j;
        if (!is_base_digit(s[j])) break;
        clean += s[j++];
      }
      if (clean.empty()) {  // "0x" alone: the integer is the 0
        base = 10;
        j = i + 1;
        clean = "0";
      }
    } else if (s[i] == '0') {  // 0(_?0)*
      j = i + 1;
      clean = "0";
      while (j < s.size()) {
        if (s[j] == '0') {
          ++j;
        } else if (s[j] == '_' && j + 1 < s.size() && s[j + 1] == '0') {
          j += 2;
        } else {
          break;
        }
      }
    } else {
      j = digits(i);
      for (std::size_t k = i; k < j; ++k)
        if (s[k] != '_') clean += s[k];
    }
    errno = 0;
    const unsigned long long v = std::strtoull(clean.c_str(), nullptr, base);
    if (errno == ERANGE || v > static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max()))
      return fail(i, "integer literal does not fit in 64 bits (stoker's limit)");
    Token t;
    t.type = Tok::kInt;
    t.offset = static_cast<std::uint32_t>(i);
    t.ival = static_cast<std::int64_t>(v);
    out_.tokens.push_back(std::move(t));
    return j;
  }

  // A quoted literal decoded as jinja2 does (Python's unicode-escape after backslashreplace).
  Result<std::size_t> string(std::size_t i) {
    const std::string& s = out_.source;
    const char q = s[i];
    std::size_t j = i + 1;
    while (j < s.size() && s[j] != q) j += s[j] == '\\' ? 2 : 1;
    if (j >= s.size()) return fail(i, std::string("unexpected character '") + q + "'");
    const std::string_view body(s.data() + i + 1, j - i - 1);
    std::string v;
    v.reserve(body.size());
    for (std::size_t k = 0; k < body.size();) {
      if (body[k] != '\\') {
        v += body[k++];
        continue;
      }
      if (k + 1 >= body.size()) return fail(i, "string literal ends with a backslash");
      const char e = body[k + 1];
      k += 2;
      auto hex = [&](int n, std::uint32_t* cp) {
        if (k + static_cast<std::size_t>(n) > body.size()) return false;
        std::uint32_t x = 0;
        for (int m = 0; m < n; ++m) {
          const char h = body[k + static_cast<std::size_t>(m)];
          int d = is_digit(h) ? h - '0' : ((h | 32) >= 'a' && (h | 32) <= 'f') ? (h | 32) - 'a' + 10 : -1;
          if (d < 0) return false;
          x = x * 16 + static_cast<std::uint32_t>(d);
        }
        k += static_cast<std::size_t>(n);
        *cp = x;
        return true;
      };
      std::uint32_t cp = 0;
      switch (e) {
        case '\n': break;  // line continuation
        case '\\': v += '\\'; break;
        case '\'': v += '\''; break;
        case '"': v += '"'; break;
        case 'a': v += '\a'; break;
        case 'b': v += '\b'; break;
        case 'f': v += '\f'; break;
        case 'n': v += '\n'; break;
        case 'r': v += '\r'; break;
        case 't': v += '\t'; break;
        case 'v': v += '\v'; break;
        case 'x':
          if (!hex(2, &cp)) return fail(i, "truncated \\xXX escape");
          append_utf8(v, cp);
          break;
        case 'u':
          if (!hex(4, &cp)) return fail(i, "truncated \\uXXXX escape");
          append_utf8(v, cp);
          break;
        case 'U':
          if (!hex(8, &cp) || cp > 0x10FFFF) return fail(i, "illegal \\UXXXXXXXX escape");
          append_utf8(v, cp);
          break;
        case 'N':
          return fail(i, "\\N{...} escapes are not supported by stoker");
        default:
          if (e >= '0' && e <= '7') {  // up to three octal digits
            std::uint32_t x = static_cast<std::uint32_t>(e - '0');
            for (int m = 0; m < 2 && k < body.size() && body[k] >= '0' && body[k] <= '7'; ++m)
              x = x * 8 + static_cast<std::uint32_t>(body[k++] - '0');
            append_utf8(v, x);
          } else if (static_cast<unsigned char>(e) >= 0x80) {
            // backslashreplace turned the character into \xNN/\uNNNN text first, so the
            // backslash escapes a backslash: the result is a backslash + that escape text.
            std::size_t len = 1;
            const std::uint32_t c = decode_utf8(body, k - 1, &len);
            char buf[16];
            if (c < 0x100)
              std::snprintf(buf, sizeof buf, "\\x%02x", c);
            else if (c < 0x10000)
              std::snprintf(buf, sizeof buf, "\\u%04x", c);
            else
              std::snprintf(buf, sizeof buf, "\\U%08x", c);
            v += buf;
            k = k - 1 + len;
          } else {
            v += '\\';
            v += e;
          }
      }
    }
    push(Tok::kString, i, std::move(v));
    return j + 1;
  }

  Lexed out_;
};

}  // namespace

Pos Lexed::pos_of(std::uint32_t offset) const {
  const std::size_t end = std::min<std::size_t>(offset, source.size());
  if (line_starts.empty()) {  // not indexed yet (errors during lexing)
    Pos p;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < end; ++i) {
      if (source[i] == '\n') {
        ++p.line;
        line_start = i + 1;
      }
    }
    p.col = static_cast<int>(count_code_points(std::string_view(source).substr(line_start, end - line_start))) + 1;
    return p;
  }
  const auto it = std::upper_bound(line_starts.begin(), line_starts.end(), end);
  const std::size_t line = static_cast<std::size_t>(it - line_starts.begin());  // >= 1
  const std::size_t start = line_starts[line - 1];
  Pos p;
  p.line = static_cast<int>(line);
  p.col = static_cast<int>(count_code_points(std::string_view(source).substr(start, end - start))) + 1;
  return p;
}

Result<Lexed> lex(std::string_view source) {
  STOKER_ASSIGN_OR_RETURN(Lexed out, Lexer(normalise(source)).run());
  out.line_starts.push_back(0);
  for (std::size_t i = 0; i < out.source.size(); ++i)
    if (out.source[i] == '\n') out.line_starts.push_back(static_cast<std::uint32_t>(i + 1));
  return out;
}

}  // namespace stoker::jinja::detail
