// Name tables of the builtins and the global functions (range, namespace, dict,
// raise_exception, strftime_now, joiner), with jinja2's sandbox limits (range ≤ 100,000 items).
#include "stoker/jinja/detail/builtins.h"

#include <string>

#include "stoker/jinja/detail/interp.h"
#include "stoker/jinja/detail/pytext.h"
#include "stoker/jinja/detail/support.h"

namespace stoker::jinja::detail {
namespace {

struct Named {
  const char* name;
  int id;
};

constexpr int kUnsupported = -2;

const Named kFilters[] = {
    {"abs", static_cast<int>(Filter::kAbs)}, {"attr", static_cast<int>(Filter::kAttr)},
    {"capitalize", static_cast<int>(Filter::kCapitalize)}, {"center", static_cast<int>(Filter::kCenter)},
    {"count", static_cast<int>(Filter::kCount)}, {"d", static_cast<int>(Filter::kDefault)},
    {"default", static_cast<int>(Filter::kDefault)}, {"dictsort", static_cast<int>(Filter::kDictsort)},
    {"e", static_cast<int>(Filter::kEscape)}, {"escape", static_cast<int>(Filter::kEscape)},
    {"first", static_cast<int>(Filter::kFirst)}, {"float", static_cast<int>(Filter::kFloat)},
    {"forceescape", static_cast<int>(Filter::kForceescape)}, {"format", static_cast<int>(Filter::kFormat)},
    {"indent", static_cast<int>(Filter::kIndent)}, {"int", static_cast<int>(Filter::kInt)},
    {"items", static_cast<int>(Filter::kItems)}, {"join", static_cast<int>(Filter::kJoin)},
    {"last", static_cast<int>(Filter::kLast)}, {"length", static_cast<int>(Filter::kLength)},
    {"list", static_cast<int>(Filter::kList)}, {"lower", static_cast<int>(Filter::kLower)},
    {"map", static_cast<int>(Filter::kMap)}, {"max", static_cast<int>(Filter::kMax)},
    {"min", static_cast<int>(Filter::kMin)}, {"reject", static_cast<int>(Filter::kReject)},
    {"rejectattr", static_cast<int>(Filter::kRejectattr)}, {"replace", static_cast<int>(Filter::kReplace)},
    {"reverse", static_cast<int>(Filter::kReverse)}, {"round", static_cast<int>(Filter::kRound)},
    {"safe", static_cast<int>(Filter::kSafe)}, {"select", static_cast<int>(Filter::kSelect)},
    {"selectattr", static_cast<int>(Filter::kSelectattr)}, {"sort", static_cast<int>(Filter::kSort)},
    {"string", static_cast<int>(Filter::kString)}, {"sum", static_cast<int>(Filter::kSum)},
    {"title", static_cast<int>(Filter::kTitle)}, {"tojson", static_cast<int>(Filter::kTojson)},
    {"trim", static_cast<int>(Filter::kTrim)}, {"unique", static_cast<int>(Filter::kUnique)},
    {"upper", static_cast<int>(Filter::kUpper)}, {"wordcount", static_cast<int>(Filter::kWordcount)},
    // jinja2 has these; stoker does not (yet): refused at load.
    {"batch", kUnsupported}, {"slice", kUnsupported}, {"truncate", kUnsupported},
    {"striptags", kUnsupported}, {"groupby", kUnsupported}, {"filesizeformat", kUnsupported},
    {"pprint", kUnsupported}, {"random", kUnsupported}, {"urlencode", kUnsupported},
    {"urlize", kUnsupported}, {"wordwrap", kUnsupported}, {"xmlattr", kUnsupported},
};

const Named kTests[] = {
    {"boolean", static_cast<int>(Test::kBoolean)}, {"callable", static_cast<int>(Test::kCallable)},
    {"defined", static_cast<int>(Test::kDefined)}, {"divisibleby", static_cast<int>(Test::kDivisibleby)},
    {"eq", static_cast<int>(Test::kEq)}, {"equalto", static_cast<int>(Test::kEq)}, {"==", static_cast<int>(Test::kEq)},
    {"escaped", static_cast<int>(Test::kEscaped)}, {"even", static_cast<int>(Test::kEven)},
    {"false", static_cast<int>(Test::kFalse)}, {"filter", static_cast<int>(Test::kFilter)},
    {"float", static_cast<int>(Test::kFloat)}, {"ge", static_cast<int>(Test::kGe)}, {">=", static_cast<int>(Test::kGe)},
    {"gt", static_cast<int>(Test::kGt)}, {">", static_cast<int>(Test::kGt)}, {"greaterthan", static_cast<int>(Test::kGt)},
    {"in", static_cast<int>(Test::kIn)}, {"integer", static_cast<int>(Test::kInteger)},
    {"iterable", static_cast<int>(Test::kIterable)}, {"le", static_cast<int>(Test::kLe)}, {"<=", static_cast<int>(Test::kLe)},
    {"lower", static_cast<int>(Test::kLower)}, {"lt", static_cast<int>(Test::kLt)}, {"<", static_cast<int>(Test::kLt)},
    {"lessthan", static_cast<int>(Test::kLt)}, {"mapping", static_cast<int>(Test::kMapping)},
    {"ne", static_cast<int>(Test::kNe)}, {"!=", static_cast<int>(Test::kNe)}, {"none", static_cast<int>(Test::kNone)},
    {"number", static_cast<int>(Test::kNumber)}, {"odd", static_cast<int>(Test::kOdd)},
    {"sameas", static_cast<int>(Test::kSameas)}, {"sequence", static_cast<int>(Test::kSequence)},
    {"string", static_cast<int>(Test::kString)}, {"test", static_cast<int>(Test::kTest)},
    {"true", static_cast<int>(Test::kTrue)}, {"undefined", static_cast<int>(Test::kUndefined)},
    {"upper", static_cast<int>(Test::kUpper)},
};

int find(const Named* table, std::size_t n, std::string_view name) {
  for (std::size_t i = 0; i < n; ++i)
    if (name == table[i].name) return table[i].id;
  return -1;
}

}  // namespace

int find_filter(std::string_view name) { return find(kFilters, std::size(kFilters), name); }
int find_test(std::string_view name) { return find(kTests, std::size(kTests), name); }

Global find_global(std::string_view name) {
  if (name == "range") return Global::kRange;
  if (name == "namespace") return Global::kNamespace;
  if (name == "dict") return Global::kDict;
  if (name == "raise_exception") return Global::kRaiseException;
  if (name == "strftime_now") return Global::kStrftimeNow;
  if (name == "cycler") return Global::kCycler;
  if (name == "joiner") return Global::kJoiner;
  return Global::kNone;
}

Value run_global(Interp& in, const CallableObj& c, std::vector<Value>& args, Kwargs& kwargs) {
  switch (c.global) {
    case Global::kRange: {
      if (!kwargs.empty()) return in.fail("TypeError: range() takes no keyword arguments");
      if (args.empty() || args.size() > 3) return in.fail("TypeError: range expected 1 to 3 arguments");
      for (const auto& a : args)
        if (!a.is_integral())
          return in.fail("TypeError: '" + std::string(type_name(a)) + "' object cannot be interpreted as an integer");
      std::int64_t start = 0, stop = 0, step = 1;
      if (args.size() == 1) {
        stop = args[0].as_int();
      } else {
        start = args[0].as_int();
        stop = args[1].as_int();
        if (args.size() == 3) step = args[2].as_int();
      }
      if (step == 0) return in.fail("ValueError: range() arg 3 must not be zero");
      __int128 n = 0;
      if (step > 0 && stop > start) n = ((__int128)stop - start + step - 1) / step;
      if (step < 0 && stop < start) n = ((__int128)start - stop - step - 1) / -step;
      if (n > 100000)
        return in.fail("OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
      std::vector<Value> items;
      items.reserve(static_cast<std::size_t>(n));
      for (std::int64_t i = 0, x = start; i < static_cast<std::int64_t>(n); ++i, x += step)
        items.push_back(Value::integer(x));
      return Value::list(std::move(items));
    }
    case Global::kNamespace:
    case Global::kDict: {
      auto d = std::make_shared<DictObj>();
      if (args.size() > 1) return in.fail("TypeError: " + c.name + " expected at most 1 argument");
      if (args.size() == 1) {
        const Value& a = args[0];
        if (a.is_dict()) {
          for (const auto& kv : a.dict().items) d->set(kv.first, kv.second);
        } else if (a.kind() == Kind::kNamespace) {
          for (const auto& kv : static_cast<const NamespaceObj*>(a.object())->attrs->items) d->set(kv.first, kv.second);
        } else {
          std::vector<Value> pairs;
          if (!in.iterate(a, &pairs)) return Value();
          for (const auto& p : pairs) {
            std::vector<Value> kv;
            if (!in.iterate(p, &kv)) return Value();
            if (kv.size() != 2)
              return in.fail("ValueError: dictionary update sequence element has length " + std::to_string(kv.size()) + "; 2 is required");
            d->set(kv[0], kv[1]);
          }
        }
      }
      for (auto& [k, v] : kwargs) d->set(Value::string(k), v);
      if (c.global == Global::kDict) return Value::dict(std::move(d));
      auto ns = std::make_shared<NamespaceObj>();
      ns->attrs = std::move(d);
      return Value::object(Kind::kNamespace, std::move(ns));
    }
    case Global::kRaiseException: {
      std::string msg;
      if (!args.empty()) append_str(msg, args[0]);
      return in.fail("raise_exception: " + msg);
    }
    case Global::kStrftimeNow: {
      if (args.size() != 1 || !args[0].is_string() || !kwargs.empty())
        return in.fail("TypeError: strftime_now() takes one string argument");
      return Value::string(strftime_c(args[0].str(), in.now()));
    }
    case Global::kJoiner: {
      std::optional<Value> p[1];
      if (!bind(in, "joiner", args, kwargs, {"sep"}, p)) return Value();
      auto j = std::make_shared<CallableObj>();
      j->kind = CallKind::kJoiner;
      j->name = "joiner";
      j->state = std::make_shared<std::vector<Value>>();
      j->self = p[0] ? *p[0] : Value::string(", ");
      return Value::object(Kind::kCallable, std::move(j));
    }
    case Global::kCycler:
      return in.fail("cycler() is not supported by stoker");
    case Global::kNone:
      break;
  }
  return in.fail("not callable");
}

}  // namespace stoker::jinja::detail
