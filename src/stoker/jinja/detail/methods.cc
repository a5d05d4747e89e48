// Methods of str, dict and list values as templates call them (`message.content.split('x')`,
// `d.items()`, `d.get('k', v)`), with the ImmutableSandboxedEnvironment's rule that mutating
// methods (list.append, dict.update, ...) are refused, and the helpers loop.cycle/changed and
// joiner.
#include <algorithm>

#include "stoker/jinja/detail/interp.h"
#include "stoker/jinja/detail/pytext.h"
#include "stoker/jinja/detail/support.h"

namespace stoker::jinja::detail {
namespace {

enum M : int {
  // str
  kCapitalize, kCasefold, kCenter, kCount, kEndswith, kFind, kFormat, kIndex, kIsalnum, kIsalpha,
  kIsdigit, kIslower, kIsspace, kIsupper, kJoin, kLjust, kLower, kLstrip, kPartition,
  kRemoveprefix, kRemovesuffix, kReplace, kRfind, kRindex, kRjust, kRpartition, kRsplit, kRstrip,
  kSplit, kSplitlines, kStartswith, kStrip, kSwapcase, kTitle, kUpper, kZfill, kStrUnsupported,
  // dict
  kDictItems, kDictKeys, kDictValues, kDictGet, kDictCopy,
  // list / tuple
  kListCount, kListIndex, kListCopy,
};

struct MethodName {
  const char* name;
  int id;
};

const MethodName kStr[] = {
    {"capitalize", kCapitalize}, {"casefold", kCasefold}, {"center", kCenter}, {"count", kCount},
    {"endswith", kEndswith}, {"find", kFind}, {"format", kFormat}, {"index", kIndex},
    {"isalnum", kIsalnum}, {"isalpha", kIsalpha}, {"isdigit", kIsdigit}, {"isdecimal", kIsdigit},
    {"isnumeric", kIsdigit}, {"islower", kIslower}, {"isspace", kIsspace}, {"isupper", kIsupper},
    {"join", kJoin}, {"ljust", kLjust}, {"lower", kLower}, {"lstrip", kLstrip},
    {"partition", kPartition}, {"removeprefix", kRemoveprefix}, {"removesuffix", kRemovesuffix},
    {"replace", kReplace}, {"rfind", kRfind}, {"rindex", kRindex}, {"rjust", kRjust},
    {"rpartition", kRpartition}, {"rsplit", kRsplit}, {"rstrip", kRstrip}, {"split", kSplit},
    {"splitlines", kSplitlines}, {"startswith", kStartswith}, {"strip", kStrip},
    {"swapcase", kSwapcase}, {"title", kTitle}, {"upper", kUpper}, {"zfill", kZfill},
    // real str methods stoker does not implement: calling one is an error, never a silent ""
    {"encode", kStrUnsupported}, {"expandtabs", kStrUnsupported}, {"format_map", kStrUnsupported},
    {"isascii", kStrUnsupported}, {"isidentifier", kStrUnsupported}, {"isprintable", kStrUnsupported},
    {"istitle", kStrUnsupported}, {"maketrans", kStrUnsupported}, {"translate", kStrUnsupported},
};

Value bound(const Value& self, int id, std::string name) {
  auto c = std::make_shared<CallableObj>();
  c->kind = CallKind::kMethod;
  c->method = id;
  c->self = self;
  c->name = std::move(name);
  return Value::object(Kind::kCallable, std::move(c));
}

Value unsafe(const Value& self, std::string_view name) {
  return Value::undefined("access to attribute '" + std::string(name) + "' of '" +
                              std::string(type_name(self)) + "' object is unsafe.",
                          true);
}

std::optional<std::string> opt_str(const std::optional<Value>& v) {
  if (!v || v->is_none()) return std::nullopt;
  return to_str(*v);
}

// str.find/index/count bounds: Python slice indices in code points.
std::string_view window(const std::string& s, const std::optional<Value>& start, const std::optional<Value>& end, std::size_t* offset_cp) {
  const std::int64_t n = static_cast<std::int64_t>(count_code_points(s));
  auto fix = [&](const std::optional<Value>& v, std::int64_t dflt) {
    if (!v || !v->is_integral()) return dflt;
    std::int64_t i = v->as_int();
    if (i < 0) i = std::max<std::int64_t>(0, i + n);
    return std::min(i, n);
  };
  const std::int64_t b = fix(start, 0), e = std::max(b, fix(end, n));
  *offset_cp = static_cast<std::size_t>(b);
  const std::size_t bb = byte_offset_of(s, b), eb = byte_offset_of(s, e);
  return std::string_view(s).substr(bb, eb - bb);
}

Value affix_test(Interp& in, const std::string& s, const std::optional<Value>* p, bool ends) {
  std::size_t off = 0;
  const std::string_view w = window(s, p[1], p[2], &off);
  std::vector<Value> cands;
  if (p[0]->is_list() && p[0]->list().tuple)
    cands = p[0]->list().items;
  else
    cands.push_back(*p[0]);
  for (const auto& c : cands) {
    if (!c.is_string())
      return in.fail(std::string("TypeError: ") + (ends ? "endswith" : "startswith") +
                     " first arg must be str or a tuple of str, not " + std::string(type_name(c)));
    const std::string& x = c.str();
    if (x.size() <= w.size() && (ends ? w.substr(w.size() - x.size()) == x : w.substr(0, x.size()) == x))
      return Value::boolean(true);
  }
  return Value::boolean(false);
}

Value strs(const std::vector<std::string>& parts) {
  std::vector<Value> out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.push_back(Value::string(p));
  return Value::list(std::move(out));
}

Value str_method(Interp& in, const CallableObj& c, std::vector<Value>& args, Kwargs& kwargs) {
  const std::string& s = c.self.str();
  std::optional<Value> p[3];
  auto b = [&](const char* fn, std::initializer_list<const char*> names) {
    return bind(in, fn, args, kwargs, names, p);
  };
  switch (c.method) {
    case kCapitalize: return Value::string(py_capitalize(s));
    case kCasefold:
    case kLower: return Value::string(py_lower(s));
    case kUpper: return Value::string(py_upper(s));
    case kTitle: return Value::string(py_title(s));
    case kSwapcase: return Value::string(py_swapcase(s));
    case kIsalnum: return Value::boolean(py_isalnum(s));
    case kIsalpha: return Value::boolean(py_isalpha(s));
    case kIsdigit: return Value::boolean(py_isdigit(s));
    case kIslower: return Value::boolean(py_islower(s));
    case kIsupper: return Value::boolean(py_isupper(s));
    case kIsspace: return Value::boolean(py_isspace(s));
    case kStrip:
    case kLstrip:
    case kRstrip:
      if (!b("strip", {"chars"})) return Value();
      return Value::string(py_strip(s, opt_str(p[0]), c.method != kRstrip, c.method != kLstrip));
    case kSplit:
    case kRsplit: {
      if (!b("split", {"sep", "maxsplit"})) return Value();
      const auto sep = opt_str(p[0]);
      if (sep && sep->empty()) return in.fail("ValueError: empty separator");
      const std::int64_t maxsplit = p[1] && p[1]->is_integral() ? p[1]->as_int() : -1;
      return strs(py_split(s, sep, maxsplit, c.method == kRsplit));
    }
    case kSplitlines:
      if (!b("splitlines", {"keepends"})) return Value();
      return strs(py_splitlines(s, p[0] && truthy(*p[0])));
    case kStartswith:
    case kEndswith:
      if (!b(c.method == kEndswith ? "endswith" : "startswith", {"prefix", "start", "end"}) || !p[0])
        return in.failed() ? Value() : in.fail("TypeError: startswith/endswith takes at least 1 argument");
      return affix_test(in, s, p, c.method == kEndswith);
    case kReplace: {
      if (!b("replace", {"old", "new", "count"}) || !p[0] || !p[1])
        return in.failed() ? Value() : in.fail("TypeError: replace expected at least 2 arguments");
      if (!p[0]->is_string() || !p[1]->is_string())
        return in.fail("TypeError: replace() arguments must be str");
      std::string r = py_replace(s, p[0]->str(), p[1]->str(), p[2] && p[2]->is_integral() ? p[2]->as_int() : -1);
      if (!in.check_size(r.size())) return Value();
      return Value::string(std::move(r));
    }
    case kFind:
    case kRfind:
    case kIndex:
    case kRindex:
    case kCount: {
      if (!b("find", {"sub", "start", "end"}) || !p[0] || !p[0]->is_string())
        return in.failed() ? Value() : in.fail("TypeError: must be str");
      std::size_t off = 0;
      const std::string_view w = window(s, p[1], p[2], &off);
      const std::string& sub = p[0]->str();
      if (c.method == kCount) {
        if (sub.empty()) return Value::integer(static_cast<std::int64_t>(count_code_points(w) + 1));
        std::int64_t n = 0;
        for (std::size_t at = w.find(sub); at != std::string_view::npos; at = w.find(sub, at + sub.size())) ++n;
        return Value::integer(n);
      }
      const bool right = c.method == kRfind || c.method == kRindex;
      const std::size_t at = right ? w.rfind(sub) : w.find(sub);
      if (at == std::string_view::npos) {
        if (c.method == kIndex || c.method == kRindex) return in.fail("ValueError: substring not found");
        return Value::integer(-1);
      }
      return Value::integer(static_cast<std::int64_t>(off + count_code_points(w.substr(0, at))));
    }
    case kJoin: {
      if (!b("join", {"iterable"}) || !p[0]) return in.failed() ? Value() : in.fail("TypeError: join() takes exactly one argument");
      std::vector<Value> items;
      if (!in.iterate(*p[0], &items)) return Value();
      std::string out;
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (!items[i].is_string())
          return in.fail("TypeError: sequence item " + std::to_string(i) + ": expected str instance, " +
                         std::string(type_name(items[i])) + " found");
        if (i > 0) out += s;
        out += items[i].str();
        if (!in.check_size(out.size())) return Value();
      }
      return Value::string(std::move(out));
    }
    case kCenter:
    case kLjust:
    case kRjust: {
      if (!b("center", {"width", "fillchar"}) || !p[0] || !p[0]->is_integral())
        return in.failed() ? Value() : in.fail("TypeError: an integer width is required");
      std::uint32_t fill = ' ';
      if (p[1]) {
        if (!p[1]->is_string() || count_code_points(p[1]->str()) != 1)
          return in.fail("TypeError: The fill character must be exactly one character long");
        std::size_t l = 1;
        fill = decode_utf8(p[1]->str(), 0, &l);
      }
      if (!in.check_size(static_cast<std::size_t>(std::max<std::int64_t>(0, p[0]->as_int())) * 4)) return Value();
      return Value::string(py_pad(s, p[0]->as_int(), fill, c.method == kCenter ? 0 : c.method == kLjust ? -1 : 1));
    }
    case kZfill: {
      if (!b("zfill", {"width"}) || !p[0] || !p[0]->is_integral()) return in.failed() ? Value() : in.fail("TypeError: an integer width is required");
      const std::int64_t len = static_cast<std::int64_t>(count_code_points(s));
      if (p[0]->as_int() <= len) return c.self;
      if (!in.check_size(static_cast<std::size_t>(p[0]->as_int()))) return Value();
      const std::size_t sign = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
      return Value::string(s.substr(0, sign) + std::string(static_cast<std::size_t>(p[0]->as_int() - len), '0') + s.substr(sign));
    }
    case kPartition:
    case kRpartition: {
      if (!b("partition", {"sep"}) || !p[0] || !p[0]->is_string() || p[0]->str().empty())
        return in.failed() ? Value() : in.fail("ValueError: partition needs a non-empty str separator");
      const std::string& sep = p[0]->str();
      const std::size_t at = c.method == kPartition ? s.find(sep) : s.rfind(sep);
      if (at == std::string::npos) {
        if (c.method == kPartition) return Value::list({c.self, Value::string(""), Value::string("")}, true);
        return Value::list({Value::string(""), Value::string(""), c.self}, true);
      }
      return Value::list({Value::string(s.substr(0, at)), p[0].value(), Value::string(s.substr(at + sep.size()))}, true);
    }
    case kRemoveprefix:
    case kRemovesuffix: {
      if (!b("removeprefix", {"affix"}) || !p[0] || !p[0]->is_string()) return in.failed() ? Value() : in.fail("TypeError: must be str");
      const std::string& a = p[0]->str();
      if (c.method == kRemoveprefix && s.compare(0, a.size(), a) == 0) return Value::string(s.substr(a.size()));
      if (c.method == kRemovesuffix && !a.empty() && s.size() >= a.size() && s.compare(s.size() - a.size(), a.size(), a) == 0)
        return Value::string(s.substr(0, s.size() - a.size()));
      return c.self;
    }
    case kFormat:
      return str_format(in, s, args, kwargs);
    default:
      return in.fail("str." + c.name + "() is not supported by stoker");
  }
}

}  // namespace

MethodIds method_ids(std::string_view name) {
  MethodIds m;
  if (name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__") {
    m.str = m.dict = m.list = m.tuple = kMethodUnsafe;  // Python internals: the sandbox refuses them
    return m;
  }
  for (const auto& x : kStr)
    if (name == x.name) m.str = x.id;
  if (name == "items") m.dict = kDictItems;
  else if (name == "keys") m.dict = kDictKeys;
  else if (name == "values") m.dict = kDictValues;
  else if (name == "get") m.dict = kDictGet;
  else if (name == "copy") m.dict = kDictCopy;
  else if (name == "pop" || name == "popitem" || name == "update" || name == "clear" || name == "setdefault")
    m.dict = kMethodUnsafe;
  if (name == "count") m.list = m.tuple = kListCount;
  else if (name == "index") m.list = m.tuple = kListIndex;
  else if (name == "copy") m.list = kListCopy;
  else if (name == "append" || name == "extend" || name == "insert" || name == "pop" ||
           name == "remove" || name == "clear" || name == "sort" || name == "reverse")
    m.list = kMethodUnsafe;
  return m;
}

int method_for(const Value& self, const MethodIds& m) {
  switch (self.kind()) {
    case Kind::kString: return m.str;
    case Kind::kDict: return m.dict;
    case Kind::kList: return self.list().tuple ? m.tuple : m.list;
    default: return m.str == kMethodUnsafe ? kMethodUnsafe : -1;
  }
}

Value find_method(const Value& self, std::string_view name, const MethodIds& ids) {
  const int m = method_for(self, ids);
  if (m == kMethodUnsafe) return unsafe(self, name);
  if (m >= 0) return bound(self, m, std::string(name));
  return Value();
}

Value find_method(const Value& self, std::string_view name) {
  return find_method(self, name, method_ids(name));
}

Value call_method(Interp& in, const Value& self, int method, std::string_view name,
                  std::vector<Value>& args, Kwargs& kwargs) {
  CallableObj c;
  c.kind = CallKind::kMethod;
  c.method = method;
  c.self = self;
  c.name = std::string(name);
  return run_method(in, c, args, kwargs);
}

Value run_method(Interp& in, const CallableObj& c, std::vector<Value>& args, Kwargs& kwargs) {
  std::optional<Value> p[2];
  switch (c.kind) {
    case CallKind::kLoopCycle: {
      if (args.empty()) return in.fail("TypeError: no items for cycling given");
      const auto* loop = static_cast<const LoopObj*>(c.self.object());
      return args[static_cast<std::size_t>(loop->index0) % args.size()];
    }
    case CallKind::kLoopChanged: {
      auto* loop = static_cast<LoopObj*>(c.self.object());
      Value now = Value::list(args);
      auto& last = *loop->changed_state;
      if (!last.empty() && equal(last[0], now)) return Value::boolean(false);
      last.assign(1, now);
      return Value::boolean(true);
    }
    case CallKind::kJoiner: {
      if (c.state->empty()) {
        c.state->push_back(Value::boolean(true));
        return Value::string("");
      }
      return c.self;
    }
    case CallKind::kMethod:
      break;
    default:
      return in.fail("not callable");
  }
  if (c.self.is_string()) return str_method(in, c, args, kwargs);
  switch (c.method) {
    case kDictItems:
      if (!args.empty() || !kwargs.empty()) return in.fail("TypeError: items() takes no arguments");
      return dict_items(c.self);
    case kDictKeys:
    case kDictValues: {
      if (!args.empty() || !kwargs.empty()) return in.fail("TypeError: keys()/values() take no arguments");
      std::vector<Value> out;
      for (const auto& kv : c.self.dict().items) out.push_back(c.method == kDictKeys ? kv.first : kv.second);
      return Value::list(std::move(out));
    }
    case kDictGet: {
      if (!kwargs.empty()) return in.fail("TypeError: get() takes no keyword arguments");
      if (args.empty() || args.size() > 2) return in.fail("TypeError: get expected 1 or 2 arguments");
      if ((args[0].is_list() && !args[0].list().tuple) || args[0].is_dict())
        return in.fail("TypeError: unhashable type: '" + std::string(type_name(args[0])) + "'");
      if (const Value* v = c.self.dict().find(args[0])) return *v;
      return args.size() == 2 ? args[1] : Value::none();
    }
    case kDictCopy:
    case kListCopy:
      return c.self;  // values are immutable: a copy is the same value
    case kListCount: {
      if (args.size() != 1) return in.fail("TypeError: count() takes exactly one argument");
      std::int64_t n = 0;
      for (const auto& x : c.self.list().items) n += equal(x, args[0]) ? 1 : 0;
      return Value::integer(n);
    }
    case kListIndex: {
      if (args.empty()) return in.fail("TypeError: index expected at least 1 argument");
      const auto& items = c.self.list().items;
      for (std::size_t i = 0; i < items.size(); ++i)
        if (equal(items[i], args[0])) return Value::integer(static_cast<std::int64_t>(i));
      return in.fail("ValueError: value is not in list");
    }
    default:
      (void)p;
      return in.fail("method not supported by stoker");
  }
}

}  // namespace stoker::jinja::detail
