#include "stoker/jinja/json.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "stoker/jinja/detail/pytext.h"

namespace stoker::jinja {
namespace {

class JsonParser {
 public:
  JsonParser(std::string_view s, int max_depth) : s_(s), max_depth_(max_depth) {}

  Result<Value> run() {
    Value v = value(0);
    if (err_) return std::move(*err_);
    ws();
    if (i_ != s_.size()) return fail("extra data after the JSON value");
    return v;
  }

 private:
  Error fail(const std::string& what) {
    if (!err_) err_ = invalid_argument("JSON at byte " + std::to_string(i_) + ": " + what);
    return *err_;
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool lit(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }

  Value value(int depth) {
    if (depth > max_depth_) {
      fail("nested deeper than " + std::to_string(max_depth_));
      return Value();
    }
    ws();
    if (i_ >= s_.size()) {
      fail("unexpected end of input");
      return Value();
    }
    const char c = s_[i_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') {
      std::string str;
      if (!string(&str)) return Value();
      return Value::string(std::move(str));
    }
    if (lit("null")) return Value::none();
    if (lit("true")) return Value::boolean(true);
    if (lit("false")) return Value::boolean(false);
    if (lit("NaN")) return Value::number(std::numeric_limits<double>::quiet_NaN());
    if (lit("Infinity")) return Value::number(std::numeric_limits<double>::infinity());
    if (lit("-Infinity")) return Value::number(-std::numeric_limits<double>::infinity());
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail(std::string("unexpected character '") + c + "'");
    return Value();
  }

  Value number() {
    const std::size_t start = i_;
    if (s_[i_] == '-') ++i_;
    auto digits = [&] {
      const std::size_t b = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      return i_ - b;
    };
    const std::size_t int_start = i_;
    if (digits() == 0) {
      fail("invalid number");
      return Value();
    }
    if (s_[int_start] == '0' && i_ - int_start > 1) i_ = int_start + 1;  // "01" = 0 then junk
    bool is_float = false;
    if (i_ < s_.size() && s_[i_] == '.') {
      const std::size_t save = i_++;
      if (digits() == 0)
        i_ = save;
      else
        is_float = true;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      const std::size_t save = i_++;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (digits() == 0)
        i_ = save;
      else
        is_float = true;
    }
    const std::string text(s_.substr(start, i_ - start));
    if (is_float) return Value::number(std::strtod(text.c_str(), nullptr));
    errno = 0;
    const long long v = std::strtoll(text.c_str(), nullptr, 10);
    if (errno == ERANGE) {
      fail("integer " + text + " does not fit in 64 bits (stoker's limit)");
      return Value();
    }
    return Value::integer(v);
  }

  bool hex4(std::uint32_t* out) {
    if (i_ + 4 > s_.size()) return false;
    std::uint32_t x = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_ + static_cast<std::size_t>(k)];
      int d = (h >= '0' && h <= '9') ? h - '0' : ((h | 32) >= 'a' && (h | 32) <= 'f') ? (h | 32) - 'a' + 10 : -1;
      if (d < 0) return false;
      x = x * 16 + static_cast<std::uint32_t>(d);
    }
    i_ += 4;
    *out = x;
    return true;
  }

  bool string(std::string* out) {
    ++i_;  // "
    while (true) {
      if (i_ >= s_.size()) {
        fail("unterminated string");
        return false;
      }
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) {
        fail("invalid control character in a string");
        return false;
      }
      if (c == '\\') {
        if (i_ + 1 >= s_.size()) {
          fail("unterminated string");
          return false;
        }
        const char e = s_[i_ + 1];
        i_ += 2;
        switch (e) {
          case '"': *out += '"'; break;
          case '\\': *out += '\\'; break;
          case '/': *out += '/'; break;
          case 'b': *out += '\b'; break;
          case 'f': *out += '\f'; break;
          case 'n': *out += '\n'; break;
          case 'r': *out += '\r'; break;
          case 't': *out += '\t'; break;
          case 'u': {
            std::uint32_t cp = 0;
            if (!hex4(&cp)) {
              fail("invalid \\u escape");
              return false;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              std::uint32_t lo = 0;
              if (i_ + 1 < s_.size() && s_[i_] == '\\' && s_[i_ + 1] == 'u') {
                i_ += 2;
                if (!hex4(&lo) || lo < 0xDC00 || lo > 0xDFFF) {
                  fail("lone surrogate in a string (not valid UTF-8 text)");
                  return false;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              } else {
                fail("lone surrogate in a string (not valid UTF-8 text)");
                return false;
              }
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
              fail("lone surrogate in a string (not valid UTF-8 text)");
              return false;
            }
            detail::append_utf8(*out, cp);
            break;
          }
          default:
            fail(std::string("invalid escape '\\") + e + "'");
            return false;
        }
        continue;
      }
      if (c < 0x80) {
        *out += static_cast<char>(c);
        ++i_;
        continue;
      }
      std::size_t len = 1;
      const std::uint32_t cp = detail::decode_utf8(s_, i_, &len);
      if (len == 1 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF ||
          (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) {
        fail("invalid UTF-8");
        return false;
      }
      out->append(s_.substr(i_, len));
      i_ += len;
    }
  }

  Value array(int depth) {
    ++i_;
    std::vector<Value> items;
    ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return Value::list(std::move(items));
    }
    while (true) {
      items.push_back(value(depth + 1));
      if (err_) return Value();
      ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return Value::list(std::move(items));
      }
      fail("expected ',' or ']'");
      return Value();
    }
  }

  Value object(int depth) {
    ++i_;
    auto d = std::make_shared<DictObj>();
    ws();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return Value::dict(std::move(d));
    }
    while (true) {
      ws();
      if (i_ >= s_.size() || s_[i_] != '"') {
        fail("expected a string key");
        return Value();
      }
      std::string key;
      if (!string(&key)) return Value();
      ws();
      if (i_ >= s_.size() || s_[i_] != ':') {
        fail("expected ':'");
        return Value();
      }
      ++i_;
      Value v = value(depth + 1);
      if (err_) return Value();
      d->set(Value::string(std::move(key)), std::move(v));
      ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return Value::dict(std::move(d));
      }
      fail("expected ',' or '}'");
      return Value();
    }
  }

  std::string_view s_;
  int max_depth_;
  std::size_t i_ = 0;
  std::optional<Error> err_;
};

void append_json_str(std::string& out, std::string_view s, bool ascii) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    char buf[16];
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\b') {
      out += "\\b";
    } else if (c == '\f') {
      out += "\\f";
    } else if (c < 0x20) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c < 0x80 || !ascii) {
      out += static_cast<char>(c);
    } else {
      std::size_t len = 1;
      std::uint32_t cp = detail::decode_utf8(s, i, &len);
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      }
      out += buf;
      i += len;
      continue;
    }
    ++i;
  }
  out += '"';
}

void append_json_float(std::string& out, double d) {
  if (std::isnan(d)) {
    out += "NaN";
  } else if (std::isinf(d)) {
    out += d < 0 ? "-Infinity" : "Infinity";
  } else {
    detail::append_float_repr(out, d);
  }
}

Status dump(std::string& out, const Value& v, const JsonOptions& o, int level) {
  const bool pretty = o.indent.has_value();
  const std::string item_sep = o.item_separator ? *o.item_separator : (pretty ? "," : ", ");
  const std::string key_sep = o.key_separator ? *o.key_separator : ": ";
  auto newline = [&](int lv) {
    out += '\n';
    for (int k = 0; k < lv; ++k) out += *o.indent;
  };
  switch (v.kind()) {
    case Kind::kNone:
      out += "null";
      return ok_status();
    case Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return ok_status();
    case Kind::kInt:
      out += std::to_string(v.as_int());
      return ok_status();
    case Kind::kFloat:
      append_json_float(out, v.as_float());
      return ok_status();
    case Kind::kString:
      append_json_str(out, v.str(), o.ensure_ascii);
      return ok_status();
    case Kind::kList: {
      const auto& items = v.list().items;
      if (items.empty()) {
        out += "[]";
        return ok_status();
      }
      out += '[';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += item_sep;
        if (pretty) newline(level + 1);
        STOKER_RETURN_IF_ERROR(dump(out, items[i], o, level + 1));
      }
      if (pretty) newline(level);
      out += ']';
      return ok_status();
    }
    case Kind::kDict: {
      const auto& items = v.dict().items;
      if (items.empty()) {
        out += "{}";
        return ok_status();
      }
      std::vector<std::size_t> order(items.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      if (o.sort_keys) {
        for (const auto& kv : items)
          if (!kv.first.is_string())
            return invalid_argument("TypeError: sort_keys needs str keys, got " + std::string(type_name(kv.first)));
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
          return items[a].first.str() < items[b].first.str();
        });
      }
      out += '{';
      bool first = true;
      for (std::size_t i : order) {
        const auto& [k, val] = items[i];
        if (!first) out += item_sep;
        first = false;
        if (pretty) newline(level + 1);
        switch (k.kind()) {
          case Kind::kString: append_json_str(out, k.str(), o.ensure_ascii); break;
          case Kind::kNone: out += "\"null\""; break;
          case Kind::kBool: out += k.as_bool() ? "\"true\"" : "\"false\""; break;
          case Kind::kInt: out += '"' + std::to_string(k.as_int()) + '"'; break;
          case Kind::kFloat: {
            out += '"';
            append_json_float(out, k.as_float());
            out += '"';
            break;
          }
          default:
            return invalid_argument("TypeError: keys must be str, int, float, bool or None, not " +
                                    std::string(type_name(k)));
        }
        out += key_sep;
        STOKER_RETURN_IF_ERROR(dump(out, val, o, level + 1));
      }
      if (pretty) newline(level);
      out += '}';
      return ok_status();
    }
    default:
      return invalid_argument("TypeError: Object of type " + std::string(type_name(v)) +
                              " is not JSON serializable");
  }
}

}  // namespace

Result<Value> parse_json(std::string_view text, int max_depth) {
  return JsonParser(text, max_depth).run();
}

Status append_json(std::string& out, const Value& v, const JsonOptions& options) {
  return dump(out, v, options, 0);
}

Result<std::string> to_json(const Value& v, const JsonOptions& options) {
  std::string out;
  STOKER_RETURN_IF_ERROR(dump(out, v, options, 0));
  return out;
}

}  // namespace stoker::jinja
