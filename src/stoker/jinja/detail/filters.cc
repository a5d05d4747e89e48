// The filters and tests of jinja2 3.1 that chat templates use, with their Python behaviour
// (argument names and defaults, what they accept, their error cases), and HF's tojson.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "stoker/jinja/detail/interp.h"
#include "stoker/jinja/detail/pytext.h"
#include "stoker/jinja/detail/support.h"
#include "stoker/jinja/json.h"

namespace stoker::jinja::detail {
namespace {

std::string soft_str(const Value& v) { return to_str(v); }

Value length_of(Interp& in, const Value& v) {
  switch (v.kind()) {
    case Kind::kString: return Value::integer(static_cast<std::int64_t>(count_code_points(v.str())));
    case Kind::kList: return Value::integer(static_cast<std::int64_t>(v.list().items.size()));
    case Kind::kDict: return Value::integer(static_cast<std::int64_t>(v.dict().items.size()));
    case Kind::kUndefined: return Value::integer(0);
    case Kind::kNamespace: return Value::integer(static_cast<std::int64_t>(static_cast<const NamespaceObj*>(v.object())->attrs->items.size()));
    default:
      return in.fail("TypeError: object of type '" + std::string(type_name(v)) + "' has no len()");
  }
}

// Python's sort key for the case-insensitive filters: strings lowered.
Value ignore_case(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(py_lower(v.str()));
  return v;
}

// jinja2's make_attrgetter: "a.b.0" -> getitem per part (ints for digit parts).
Value attr_path(Interp& in, const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return in.getitem(item, attribute);
  Value cur = item;
  const std::string& path = attribute.str();
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = digits ? in.getitem(cur, Value::integer(std::atoll(part.c_str()))) : in.getitem(cur, Value::string(part));
    if (in.failed() || dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

bool sort_values(Interp& in, std::vector<Value>& items, const std::vector<Value>& keys, bool reverse) {
  std::vector<std::size_t> order(items.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  bool ok = true;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (!ok) return false;
    const int c = py_order(in, keys[reverse ? b : a], keys[reverse ? a : b], &ok);
    return c < 0;
  });
  if (!ok) return false;
  std::vector<Value> out;
  out.reserve(items.size());
  for (std::size_t i : order) out.push_back(items[i]);
  items = std::move(out);
  return true;
}

// select/reject/selectattr/rejectattr.
Value select(Interp& in, const Value& seq, std::vector<Value>& args, Kwargs& kwargs, bool attr, bool keep) {
  std::vector<Value> items;
  if (!in.iterate(seq, &items)) return Value();
  std::size_t k = 0;
  Value attribute;
  if (attr) {
    if (args.empty()) return in.fail("TypeError: missing the attribute argument");
    attribute = args[k++];
  }
  int test = -1;
  if (k < args.size()) {
    if (!args[k].is_string()) return in.fail("TypeError: the test name must be a string");
    test = find_test(args[k].str());
    if (test < 0) return in.fail("TemplateRuntimeError: no test named '" + args[k].str() + "'");
    ++k;
  }
  std::vector<Value> rest(args.begin() + static_cast<std::ptrdiff_t>(k), args.end());
  std::vector<Value> out;
  for (const auto& item : items) {
    const Value v = attr ? attr_path(in, item, attribute) : item;
    if (in.failed()) return Value();
    const bool r = test < 0 ? truthy(v) : in.apply_test(test, v, rest, kwargs);
    if (in.failed()) return Value();
    if (r == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value map_filter(Interp& in, const Value& seq, std::vector<Value>& args, Kwargs& kwargs) {
  std::vector<Value> items;
  if (!in.iterate(seq, &items)) return Value();
  std::vector<Value> out;
  out.reserve(items.size());
  const Value* attribute = nullptr;
  std::optional<Value> dflt;
  for (const auto& [k, v] : kwargs) {
    if (k == "attribute") attribute = &v;
    else if (k == "default") dflt = v;
  }
  if (attribute != nullptr) {
    for (const auto& item : items) {
      Value v = attr_path(in, item, *attribute);
      if (in.failed()) return Value();
      if (dflt && v.is_undefined()) v = *dflt;
      out.push_back(std::move(v));
    }
    return Value::list(std::move(out));
  }
  if (args.empty() || !args[0].is_string()) return in.fail("TypeError: map() needs a filter name or attribute=");
  const int f = find_filter(args[0].str());
  if (f < 0) return in.fail("TemplateRuntimeError: no filter named '" + args[0].str() + "'");
  std::vector<Value> rest(args.begin() + 1, args.end());
  for (const auto& item : items) {
    out.push_back(in.apply_filter(f, item, rest, kwargs));
    if (in.failed()) return Value();
  }
  return Value::list(std::move(out));
}

Value minmax(Interp& in, const Value& seq, std::vector<Value>& args, Kwargs& kwargs, bool max) {
  std::optional<Value> p[2];
  if (!bind(in, max ? "max" : "min", args, kwargs, {"case_sensitive", "attribute"}, p)) return Value();
  std::vector<Value> items;
  if (!in.iterate(seq, &items)) return Value();
  if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
  const bool cs = p[0] && truthy(*p[0]);
  std::size_t best = 0;
  Value best_key;
  for (std::size_t i = 0; i < items.size(); ++i) {
    Value key = p[1] ? attr_path(in, items[i], *p[1]) : items[i];
    if (in.failed()) return Value();
    key = ignore_case(key, cs);
    if (i == 0) {
      best_key = key;
      continue;
    }
    bool ok = true;
    const int c = py_order(in, key, best_key, &ok);
    if (!ok) return Value();
    if (max ? c > 0 : c < 0) {
      best = i;
      best_key = key;
    }
  }
  return items[best];
}

}  // namespace

Value run_filter(Interp& in, Filter f, const Value& v, std::vector<Value>& args, Kwargs& kwargs) {
  std::optional<Value> p[4];
  switch (f) {
    case Filter::kAbs:
      if (!bind(in, "abs", args, kwargs, {}, p)) return Value();
      if (v.is_integral()) {
        if (v.as_int() == std::numeric_limits<std::int64_t>::min()) return in.fail("integer overflow");
        return Value::integer(std::llabs(v.as_int()));
      }
      if (v.kind() == Kind::kFloat) return Value::number(std::fabs(v.as_float()));
      if (v.is_undefined()) return in.fail_undefined(v);
      return in.fail("TypeError: bad operand type for abs(): '" + std::string(type_name(v)) + "'");
    case Filter::kAttr:
      if (!bind(in, "attr", args, kwargs, {"name"}, p) || !p[0]) return in.failed() ? Value() : in.fail("TypeError: attr() needs a name");
      if (!p[0]->is_string()) return Value::undefined("attribute name must be a string");
      return in.getattr(v, p[0]->str());
    case Filter::kCapitalize:
      return Value::string(py_capitalize(soft_str(v)));
    case Filter::kCenter: {
      if (!bind(in, "center", args, kwargs, {"width"}, p)) return Value();
      const std::int64_t w = p[0] && p[0]->is_integral() ? p[0]->as_int() : 80;
      return Value::string(py_pad(soft_str(v), w, ' ', 0));
    }
    case Filter::kCount:
    case Filter::kLength:
      return length_of(in, v);
    case Filter::kDefault:
      if (!bind(in, "default", args, kwargs, {"default_value", "boolean"}, p)) return Value();
      if (v.is_undefined() || (p[1] && truthy(*p[1]) && !truthy(v)))
        return p[0] ? *p[0] : Value::string("");
      return v;
    case Filter::kDictsort: {
      if (!bind(in, "dictsort", args, kwargs, {"case_sensitive", "by", "reverse"}, p)) return Value();
      if (!v.is_dict()) return in.fail("FilterArgumentError: dictsort needs a mapping");
      const bool by_value = p[1] && p[1]->is_string() && p[1]->str() == "value";
      if (p[1] && !(p[1]->is_string() && (p[1]->str() == "key" || p[1]->str() == "value")))
        return in.fail("FilterArgumentError: You can only sort by either \"key\" or \"value\"");
      std::vector<Value> items, keys;
      for (const auto& [k, x] : v.dict().items) {
        items.push_back(Value::list({k, x}, true));
        keys.push_back(ignore_case(by_value ? x : k, p[0] && truthy(*p[0])));
      }
      if (!sort_values(in, items, keys, p[2] && truthy(*p[2]))) return Value();
      return Value::list(std::move(items));
    }
    case Filter::kEscape:
    case Filter::kForceescape:
      return Value::string(html_escape(soft_str(v)));
    case Filter::kFirst: {
      std::vector<Value> items;
      if (!in.iterate(v, &items)) return Value();
      if (items.empty()) return Value::undefined("No first item, sequence was empty.");
      return items.front();
    }
    case Filter::kLast: {
      std::vector<Value> items;
      if (!in.iterate(v, &items)) return Value();
      if (items.empty()) return Value::undefined("No last item, sequence was empty.");
      return items.back();
    }
    case Filter::kFloat: {
      if (!bind(in, "float", args, kwargs, {"default"}, p)) return Value();
      const auto r = py_float(v);
      if (r) return Value::number(*r);
      return p[0] ? *p[0] : Value::number(0.0);
    }
    case Filter::kInt: {
      if (!bind(in, "int", args, kwargs, {"default", "base"}, p)) return Value();
      const int base = p[1] && p[1]->is_integral() ? static_cast<int>(p[1]->as_int()) : 10;
      const auto r = py_int(v, base);
      if (r) return Value::integer(*r);
      return p[0] ? *p[0] : Value::integer(0);
    }
    case Filter::kFormat: {
      if (!kwargs.empty() && !args.empty())
        return in.fail("FilterArgumentError: can't handle positional and keyword arguments at the same time");
      return printf_format(in, soft_str(v), args, kwargs);
    }
    case Filter::kIndent: {
      if (!bind(in, "indent", args, kwargs, {"width", "first", "blank"}, p)) return Value();
      std::string ind = "    ";
      if (p[0]) {
        if (p[0]->is_string())
          ind = p[0]->str();
        else if (p[0]->is_integral())
          ind = std::string(static_cast<std::size_t>(std::max<std::int64_t>(0, p[0]->as_int())), ' ');
      }
      std::vector<std::string> lines = py_splitlines(soft_str(v) + "\n");
      std::string rv;
      if (p[2] && truthy(*p[2])) {
        for (std::size_t i = 0; i < lines.size(); ++i) {
          if (i > 0) rv += "\n" + ind;
          rv += lines[i];
        }
      } else {
        rv = lines.empty() ? std::string() : lines[0];
        for (std::size_t i = 1; i < lines.size(); ++i) {
          rv += "\n";
          if (!lines[i].empty()) rv += ind;
          rv += lines[i];
        }
      }
      if (p[1] && truthy(*p[1])) rv = ind + rv;
      if (!in.check_size(rv.size())) return Value();
      return Value::string(std::move(rv));
    }
    case Filter::kItems:
      if (v.is_undefined()) return Value::list({});
      if (!v.is_dict()) return in.fail("TypeError: Can only get item pairs from a mapping.");
      return dict_items(v);
    case Filter::kJoin: {
      if (!bind(in, "join", args, kwargs, {"d", "attribute"}, p)) return Value();
      std::vector<Value> items;
      if (!in.iterate(v, &items)) return Value();
      const std::string sep = p[0] ? soft_str(*p[0]) : std::string();
      std::string out;
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += sep;
        const Value x = p[1] ? attr_path(in, items[i], *p[1]) : items[i];
        if (in.failed()) return Value();
        append_str(out, x);
        if (!in.check_size(out.size())) return Value();
      }
      return Value::string(std::move(out));
    }
    case Filter::kList: {
      std::vector<Value> items;
      if (!in.iterate(v, &items)) return Value();
      return Value::list(std::move(items));
    }
    case Filter::kLower:
      return Value::string(py_lower(soft_str(v)));
    case Filter::kUpper:
      return Value::string(py_upper(soft_str(v)));
    case Filter::kMap:
      return map_filter(in, v, args, kwargs);
    case Filter::kMax:
    case Filter::kMin:
      return minmax(in, v, args, kwargs, f == Filter::kMax);
    case Filter::kReject:
      return select(in, v, args, kwargs, false, false);
    case Filter::kRejectattr:
      return select(in, v, args, kwargs, true, false);
    case Filter::kSelect:
      return select(in, v, args, kwargs, false, true);
    case Filter::kSelectattr:
      return select(in, v, args, kwargs, true, true);
    case Filter::kReplace: {
      if (!bind(in, "replace", args, kwargs, {"old", "new", "count"}, p) || !p[0] || !p[1])
        return in.failed() ? Value() : in.fail("TypeError: replace() needs old and new");
      const std::int64_t count = p[2] && p[2]->is_integral() ? p[2]->as_int() : -1;
      std::string r = py_replace(soft_str(v), soft_str(*p[0]), soft_str(*p[1]), count);
      if (!in.check_size(r.size())) return Value();
      return Value::string(std::move(r));
    }
    case Filter::kReverse: {
      if (v.is_string()) {
        std::vector<Value> chars;
        in.iterate(v, &chars);
        std::string out;
        for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += it->str();
        return Value::string(std::move(out));
      }
      std::vector<Value> items;
      if (!in.iterate(v, &items)) return Value();
      std::reverse(items.begin(), items.end());
      return Value::list(std::move(items));
    }
    case Filter::kRound: {
      if (!bind(in, "round", args, kwargs, {"precision", "method"}, p)) return Value();
      const std::int64_t prec = p[0] && p[0]->is_integral() ? p[0]->as_int() : 0;
      const std::string method = p[1] && p[1]->is_string() ? p[1]->str() : "common";
      if (method != "common" && method != "ceil" && method != "floor")
        return in.fail("FilterArgumentError: method must be common, ceil or floor");
      if (!v.is_number()) {
        if (v.is_undefined()) return in.fail_undefined(v);
        return in.fail("TypeError: type " + std::string(type_name(v)) + " doesn't define __round__ method");
      }
      if (method == "common") {
        if (v.is_integral()) return Value::integer(v.as_int());  // round(int, n) is the int
        return Value::number(round_float(v.as_float(), static_cast<int>(prec)));
      }
      const double scale = std::pow(10.0, static_cast<double>(prec));
      const double x = v.as_float() * scale;
      return Value::number((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
    }
    case Filter::kSafe:
      return v.is_string() ? v : Value::string(soft_str(v));
    case Filter::kSort: {
      if (!bind(in, "sort", args, kwargs, {"reverse", "case_sensitive", "attribute"}, p)) return Value();
      std::vector<Value> items, keys;
      if (!in.iterate(v, &items)) return Value();
      for (const auto& x : items) {
        Value key = p[2] ? attr_path(in, x, *p[2]) : x;
        if (in.failed()) return Value();
        keys.push_back(ignore_case(key, p[1] && truthy(*p[1])));
      }
      if (!sort_values(in, items, keys, p[0] && truthy(*p[0]))) return Value();
      return Value::list(std::move(items));
    }
    case Filter::kString:
      return v.is_string() ? v : Value::string(soft_str(v));
    case Filter::kSum: {
      if (!bind(in, "sum", args, kwargs, {"attribute", "start"}, p)) return Value();
      std::vector<Value> items;
      if (!in.iterate(v, &items)) return Value();
      Value acc = p[1] ? *p[1] : Value::integer(0);
      for (const auto& x : items) {
        const Value y = p[0] ? attr_path(in, x, *p[0]) : x;
        if (in.failed()) return Value();
        acc = py_add(in, acc, y);
        if (in.failed()) return Value();
      }
      return acc;
    }
    case Filter::kTitle:
      return Value::string(jinja_title(soft_str(v)));
    case Filter::kTojson: {
      if (!bind(in, "tojson", args, kwargs, {"ensure_ascii", "indent", "separators", "sort_keys"}, p))
        return Value();
      JsonOptions o;
      o.ensure_ascii = p[0] && truthy(*p[0]);
      if (p[1] && !p[1]->is_none()) {
        if (p[1]->is_integral())
          o.indent = std::string(static_cast<std::size_t>(std::max<std::int64_t>(0, p[1]->as_int())), ' ');
        else if (p[1]->is_string())
          o.indent = p[1]->str();
        else
          return in.fail("TypeError: indent must be an int or a string");
      }
      if (p[2] && !p[2]->is_none()) {
        if (!p[2]->is_list() || p[2]->list().items.size() != 2 || !p[2]->list().items[0].is_string() ||
            !p[2]->list().items[1].is_string())
          return in.fail("TypeError: separators must be a pair of strings");
        o.item_separator = p[2]->list().items[0].str();
        o.key_separator = p[2]->list().items[1].str();
      }
      o.sort_keys = p[3] && truthy(*p[3]);
      std::string out;
      const Status s = append_json(out, v, o);
      if (!s.ok()) return in.fail(s.error().message());
      if (!in.check_size(out.size())) return Value();
      return Value::string(std::move(out));
    }
    case Filter::kTrim: {
      if (!bind(in, "trim", args, kwargs, {"chars"}, p)) return Value();
      return Value::string(py_strip(soft_str(v), p[0] && !p[0]->is_none() ? std::optional<std::string>(soft_str(*p[0])) : std::nullopt, true, true));
    }
    case Filter::kUnique: {
      if (!bind(in, "unique", args, kwargs, {"case_sensitive", "attribute"}, p)) return Value();
      std::vector<Value> items, out, seen;
      if (!in.iterate(v, &items)) return Value();
      for (const auto& x : items) {
        Value key = p[1] ? attr_path(in, x, *p[1]) : x;
        if (in.failed()) return Value();
        key = ignore_case(key, p[0] && truthy(*p[0]));
        bool dup = false;
        for (const auto& s : seen) dup = dup || equal(s, key);
        if (dup) continue;
        seen.push_back(key);
        out.push_back(x);
      }
      return Value::list(std::move(out));
    }
    case Filter::kWordcount:
      return Value::integer(word_count(soft_str(v)));
    default:
      return in.fail("filter not supported by stoker");
  }
}

bool run_test(Interp& in, Test t, const Value& v, std::vector<Value>& args, Kwargs& kwargs) {
  std::optional<Value> p[1];
  auto other = [&](const char* name) -> const Value* {
    if (!bind(in, name, args, kwargs, {"other"}, p)) return nullptr;
    if (!p[0]) {
      in.fail(std::string("TypeError: test '") + name + "' needs an argument");
      return nullptr;
    }
    return &*p[0];
  };
  switch (t) {
    case Test::kBoolean: return v.kind() == Kind::kBool;
    case Test::kCallable: return v.kind() == Kind::kCallable;
    case Test::kDefined: return !v.is_undefined();
    case Test::kUndefined: return v.is_undefined();
    case Test::kNone: return v.is_none();
    case Test::kTrue: return v.kind() == Kind::kBool && v.as_bool();
    case Test::kFalse: return v.kind() == Kind::kBool && !v.as_bool();
    case Test::kString: return v.is_string();
    case Test::kMapping: return v.is_dict();
    case Test::kNumber: return v.is_number();
    case Test::kInteger: return v.kind() == Kind::kInt;
    case Test::kFloat: return v.kind() == Kind::kFloat;
    case Test::kIterable:
      return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined() || v.kind() == Kind::kLoop;
    case Test::kSequence:
      return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
    case Test::kEscaped: return false;
    case Test::kLower: return py_islower(to_str(v));
    case Test::kUpper: return py_isupper(to_str(v));
    case Test::kFilter: return v.is_string() && find_filter(v.str()) >= 0;
    case Test::kTest: return v.is_string() && find_test(v.str()) >= 0;
    case Test::kEven:
    case Test::kOdd: {
      if (!v.is_number()) {
        in.fail("TypeError: not all arguments converted during string formatting");
        return false;
      }
      const double m = v.is_integral() ? static_cast<double>(((v.as_int() % 2) + 2) % 2) : std::fmod(std::fmod(v.as_float(), 2.0) + 2.0, 2.0);
      return t == Test::kEven ? m == 0.0 : m == 1.0;
    }
    case Test::kDivisibleby: {
      const Value* o = other("divisibleby");
      if (o == nullptr) return false;
      if (!v.is_number() || !o->is_number()) {
        in.fail("TypeError: divisibleby needs numbers");
        return false;
      }
      if (o->as_float() == 0.0) {
        in.fail("ZeroDivisionError: integer division or modulo by zero");
        return false;
      }
      if (v.is_integral() && o->is_integral()) return v.as_int() % o->as_int() == 0;
      return std::fmod(v.as_float(), o->as_float()) == 0.0;
    }
    case Test::kEq:
    case Test::kNe: {
      const Value* o = other(t == Test::kEq ? "eq" : "ne");
      if (o == nullptr) return false;
      return equal(v, *o) == (t == Test::kEq);
    }
    case Test::kLt:
    case Test::kLe:
    case Test::kGt:
    case Test::kGe: {
      const Value* o = other("compare");
      if (o == nullptr) return false;
      bool ok = true;
      const int c = py_order(in, v, *o, &ok);
      if (!ok || c == 2) return false;
      return t == Test::kLt ? c < 0 : t == Test::kLe ? c <= 0 : t == Test::kGt ? c > 0 : c >= 0;
    }
    case Test::kIn: {
      const Value* o = other("in");
      if (o == nullptr) return false;
      bool ok = true;
      const bool r = value_in(in, v, *o, &ok);
      return ok && r;
    }
    case Test::kSameas: {
      const Value* o = other("sameas");
      if (o == nullptr) return false;
      if (v.kind() != o->kind()) return false;
      switch (v.kind()) {
        case Kind::kNone:
        case Kind::kUndefined: return true;
        case Kind::kBool: return v.as_bool() == o->as_bool();
        case Kind::kInt: return v.as_int() == o->as_int() && v.as_int() >= -5 && v.as_int() <= 256;
        default: return v.object() == o->object();
      }
    }
  }
  return false;
}

}  // namespace stoker::jinja::detail
