// Expression evaluation: operators with Python's semantics, attribute/item access as jinja2's
// sandbox does it (getattr first then item for `.`, item first then attribute for `[]`,
// mutating methods refused), slicing, iteration.
#include <cmath>
#include <limits>

#include "stoker/jinja/detail/interp.h"
#include "stoker/jinja/detail/pytext.h"
#include "stoker/jinja/detail/support.h"

namespace stoker::jinja::detail {
namespace {

// jinja2's object_type_repr, repr-quoted as its "has no attribute" message prints it.
std::string object_name(const Value& v) {
  if (v.is_none()) return "'None'";
  return "'" + std::string(type_name(v)) + " object'";
}
// ... and unquoted, as its "has no element" message prints it.
std::string object_name_bare(const Value& v) {
  if (v.is_none()) return "None";
  return std::string(type_name(v)) + " object";
}

bool add_overflows(std::int64_t a, std::int64_t b, std::int64_t* r) { return __builtin_add_overflow(a, b, r); }
bool sub_overflows(std::int64_t a, std::int64_t b, std::int64_t* r) { return __builtin_sub_overflow(a, b, r); }
bool mul_overflows(std::int64_t a, std::int64_t b, std::int64_t* r) { return __builtin_mul_overflow(a, b, r); }

const char* op_symbol(BinOp op) {
  switch (op) {
    case BinOp::kAdd: return "+";
    case BinOp::kSub: return "-";
    case BinOp::kMul: return "*";
    case BinOp::kDiv: return "/";
    case BinOp::kFloorDiv: return "//";
    case BinOp::kMod: return "%";
    case BinOp::kPow: return "** or pow()";
  }
  return "?";
}

// CPython's float floor division / modulo.
void float_divmod(double vx, double wx, double* floordiv, double* mod) {
  double m = std::fmod(vx, wx);
  double div = (vx - m) / wx;
  if (m != 0.0) {
    if ((wx < 0) != (m < 0)) {
      m += wx;
      div -= 1.0;
    }
  } else {
    m = std::copysign(0.0, wx);
  }
  double fd;
  if (div != 0.0) {
    fd = std::floor(div);
    if (div - fd > 0.5) fd += 1.0;
  } else {
    fd = std::copysign(0.0, vx / wx);
  }
  *floordiv = fd;
  *mod = m;
}

}  // namespace

Value Interp::eval(const Expr& e) {
  if (err_ || !step()) return Value();
  at_ = e.pos;
  switch (e.kind) {
    case ExprKind::kConst:
      return e.value;
    case ExprKind::kName:
      return lookup(e.name, e.text);
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      items.reserve(e.items.size());
      for (const auto& x : e.items) {
        items.push_back(eval(*x));
        if (err_) return Value();
      }
      return Value::list(std::move(items), e.kind == ExprKind::kTuple);
    }
    case ExprKind::kDict: {
      auto d = std::make_shared<DictObj>();
      for (std::size_t i = 0; i + 1 < e.items.size(); i += 2) {
        Value k = eval(*e.items[i]);
        if (err_) return Value();
        if (k.is_list() && !k.list().tuple) return fail("TypeError: unhashable type: 'list'");
        if (k.is_dict()) return fail("TypeError: unhashable type: 'dict'");
        Value v = eval(*e.items[i + 1]);
        if (err_) return Value();
        d->set(std::move(k), std::move(v));
      }
      return Value::dict(std::move(d));
    }
    case ExprKind::kNot: {
      Value tmp;
      const Value& v = eval_ref(*e.a, tmp);
      return err_ ? Value() : Value::boolean(!truthy(v));
    }
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      const Value v = eval(*e.a);
      if (err_) return Value();
      at_ = e.pos;
      if (v.is_undefined()) return fail_undefined(v);
      const bool neg = e.kind == ExprKind::kNeg;
      if (v.is_integral()) {
        if (!neg) return Value::integer(v.as_int());
        if (v.as_int() == std::numeric_limits<std::int64_t>::min())
          return fail("integer overflow (stoker holds integers in 64 bits)");
        return Value::integer(-v.as_int());
      }
      if (v.kind() == Kind::kFloat) return Value::number(neg ? -v.as_float() : v.as_float());
      return fail(std::string("TypeError: bad operand type for unary ") + (neg ? "-" : "+") +
                  ": '" + std::string(type_name(v)) + "'");
    }
    case ExprKind::kAnd: {
      Value a = eval(*e.a);
      if (err_ || !truthy(a)) return a;
      return eval(*e.b);
    }
    case ExprKind::kOr: {
      Value a = eval(*e.a);
      if (err_ || truthy(a)) return a;
      return eval(*e.b);
    }
    case ExprKind::kBinary: {
      const Value a = eval(*e.a);
      if (err_) return Value();
      const Value b = eval(*e.b);
      if (err_) return Value();
      at_ = e.pos;
      return eval_binary(e.bin, a, b);
    }
    case ExprKind::kConcat: {
      std::string s;
      for (const auto& x : e.items) {
        const Value v = eval(*x);
        if (err_) return Value();
        if (v.is_string()) {
          if (!check_size(s.size() + v.str().size())) return Value();
          s += v.str();
        } else {
          append_str(s, v);
          if (!check_size(s.size())) return Value();
        }
      }
      return Value::string(std::move(s));
    }
    case ExprKind::kCompare:
      return eval_compare(e);
    case ExprKind::kCond: {
      const Value t = eval(*e.a);
      if (err_) return Value();
      if (truthy(t)) return eval(*e.b);
      if (e.c) return eval(*e.c);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.pos.line) +
                              " evaluated to false and no else section was defined.");
    }
    case ExprKind::kGetattr: {
      Value tmp;
      const Value& obj = eval_ref(*e.a, tmp);
      if (err_) return Value();
      at_ = e.pos;
      return getattr(obj, e.text, e.name);
    }
    case ExprKind::kGetitem: {
      Value tmp, ktmp;
      const Value& obj = eval_ref(*e.a, tmp);
      if (err_) return Value();
      const Value& key = eval_ref(*e.b, ktmp);
      if (err_) return Value();
      at_ = e.pos;
      return getitem(obj, key, e.name);
    }
    case ExprKind::kSlice:
      return eval_slice(e);
    case ExprKind::kCall:
      return eval_call(e);
    case ExprKind::kFilter: {
      Value tmp;
      const Value& v = eval_ref(*e.a, tmp);
      if (err_) return Value();
      std::vector<Value> args;
      Kwargs kwargs;
      if (!eval_args(e, &args, &kwargs)) return Value();
      at_ = e.pos;
      return apply_filter(e.name, v, std::move(args), std::move(kwargs));
    }
    case ExprKind::kTest: {
      Value tmp;
      const Value& v = eval_ref(*e.a, tmp);
      if (err_) return Value();
      std::vector<Value> args;
      Kwargs kwargs;
      if (!eval_args(e, &args, &kwargs)) return Value();
      at_ = e.pos;
      const bool r = apply_test(e.name, v, std::move(args), std::move(kwargs));
      return err_ ? Value() : Value::boolean(r);
    }
  }
  return Value();
}

Value Interp::eval_call(const Expr& e) {
  if (e.a->kind == ExprKind::kGetattr) {  // obj.method(...): no bound-method object built
    Value tmp;
    const Value& obj = eval_ref(*e.a->a, tmp);
    if (err_) return Value();
    const int m = method_for(obj, prog_.methods[static_cast<std::size_t>(e.a->name)]);
    if (m >= 0) {
      const Value self = obj;
      std::vector<Value> args;
      Kwargs kwargs;
      if (!eval_args(e, &args, &kwargs)) return Value();
      at_ = e.pos;
      return call_method(*this, self, m, e.a->text, args, kwargs);
    }
    at_ = e.a->pos;
    const Value callee = getattr(obj, e.a->text, e.a->name);
    if (err_) return Value();
    std::vector<Value> args;
    Kwargs kwargs;
    if (!eval_args(e, &args, &kwargs)) return Value();
    at_ = e.pos;
    return call(callee, std::move(args), std::move(kwargs));
  }
  const Value callee = eval(*e.a);
  if (err_) return Value();
  std::vector<Value> args;
  Kwargs kwargs;
  if (!eval_args(e, &args, &kwargs)) return Value();
  at_ = e.pos;
  return call(callee, std::move(args), std::move(kwargs));
}

Value Interp::eval_binary(BinOp op, const Value& a, const Value& b) {
  if (a.is_undefined()) return fail_undefined(a);
  if (b.is_undefined()) return fail_undefined(b);
  auto unsupported = [&]() {
    return fail("TypeError: unsupported operand type(s) for " + std::string(op_symbol(op)) +
                ": '" + std::string(type_name(a)) + "' and '" + std::string(type_name(b)) + "'");
  };
  const bool ints = a.is_integral() && b.is_integral();
  const bool nums = a.is_number() && b.is_number();
  std::int64_t r = 0;
  switch (op) {
    case BinOp::kAdd:
      if (ints) {
        if (add_overflows(a.as_int(), b.as_int(), &r)) return fail("integer overflow (stoker holds integers in 64 bits)");
        return Value::integer(r);
      }
      if (nums) return Value::number(a.as_float() + b.as_float());
      if (a.is_string() && b.is_string()) {
        if (!check_size(a.str().size() + b.str().size())) return Value();
        std::string s;
        s.reserve(a.str().size() + b.str().size());
        s += a.str();
        s += b.str();
        return Value::string(std::move(s));
      }
      if (a.is_list() && b.is_list() && a.list().tuple == b.list().tuple) {
        if (!check_items(a.list().items.size() + b.list().items.size())) return Value();
        std::vector<Value> items = a.list().items;
        items.insert(items.end(), b.list().items.begin(), b.list().items.end());
        return Value::list(std::move(items), a.list().tuple);
      }
      if (a.is_string() || a.is_list())
        return fail("TypeError: can only concatenate " + std::string(type_name(a)) + " (not \"" +
                    std::string(type_name(b)) + "\") to " + std::string(type_name(a)));
      return unsupported();
    case BinOp::kSub:
      if (ints) {
        if (sub_overflows(a.as_int(), b.as_int(), &r)) return fail("integer overflow (stoker holds integers in 64 bits)");
        return Value::integer(r);
      }
      if (nums) return Value::number(a.as_float() - b.as_float());
      return unsupported();
    case BinOp::kMul: {
      if (ints) {
        if (mul_overflows(a.as_int(), b.as_int(), &r)) return fail("integer overflow (stoker holds integers in 64 bits)");
        return Value::integer(r);
      }
      if (nums) return Value::number(a.as_float() * b.as_float());
      const Value* seq = a.is_integral() ? &b : &a;
      const Value* times = a.is_integral() ? &a : &b;
      if (!times->is_integral() || !(seq->is_string() || seq->is_list())) return unsupported();
      const std::int64_t n = std::max<std::int64_t>(0, times->as_int());
      if (seq->is_string()) {
        const std::size_t len = seq->str().size();
        if (len > 0 && static_cast<std::uint64_t>(n) > options_.limits.max_output_bytes / len + 1) {
          check_size(std::numeric_limits<std::size_t>::max());
          return Value();
        }
        if (!check_size(len * static_cast<std::size_t>(n))) return Value();
        std::string s;
        s.reserve(len * static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) s += seq->str();
        return Value::string(std::move(s));
      }
      const std::size_t len = seq->list().items.size();
      if (len > 0 && static_cast<std::uint64_t>(n) > options_.limits.max_items / len + 1) {
        check_items(std::numeric_limits<std::size_t>::max());
        return Value();
      }
      if (!check_items(len * static_cast<std::size_t>(n))) return Value();
      std::vector<Value> items;
      for (std::int64_t i = 0; i < n; ++i)
        items.insert(items.end(), seq->list().items.begin(), seq->list().items.end());
      return Value::list(std::move(items), seq->list().tuple);
    }
    case BinOp::kDiv:
      if (!nums) return unsupported();
      if (b.as_float() == 0.0) return fail("ZeroDivisionError: division by zero");
      return Value::number(a.as_float() / b.as_float());
    case BinOp::kFloorDiv:
    case BinOp::kMod:
      if (ints) {
        const std::int64_t x = a.as_int(), y = b.as_int();
        if (y == 0) return fail("ZeroDivisionError: integer division or modulo by zero");
        if (x == std::numeric_limits<std::int64_t>::min() && y == -1)
          return op == BinOp::kMod ? Value::integer(0) : fail("integer overflow (stoker holds integers in 64 bits)");
        std::int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          m += y;
          q -= 1;
        }
        return Value::integer(op == BinOp::kFloorDiv ? q : m);
      }
      if (nums) {
        if (b.as_float() == 0.0)
          return fail(op == BinOp::kMod ? "ZeroDivisionError: float modulo" : "ZeroDivisionError: float floor division by zero");
        double fd = 0, m = 0;
        float_divmod(a.as_float(), b.as_float(), &fd, &m);
        return Value::number(op == BinOp::kFloorDiv ? fd : m);
      }
      if (op == BinOp::kMod && a.is_string()) {
        std::vector<Value> args;
        Kwargs kwargs;
        if (b.is_list() && b.list().tuple) {
          args = b.list().items;
        } else if (b.is_dict()) {
          for (const auto& kv : b.dict().items)
            if (kv.first.is_string()) kwargs.emplace_back(kv.first.str(), kv.second);
        } else {
          args.push_back(b);
        }
        return printf_format(*this, a.str(), args, kwargs);
      }
      return unsupported();
    case BinOp::kPow:
      if (ints && b.as_int() >= 0) {
        std::int64_t base = a.as_int(), exp = b.as_int(), acc = 1;
        while (exp > 0) {
          if ((exp & 1) && mul_overflows(acc, base, &acc)) return fail("integer overflow (stoker holds integers in 64 bits)");
          exp >>= 1;
          if (exp > 0 && mul_overflows(base, base, &base)) return fail("integer overflow (stoker holds integers in 64 bits)");
        }
        return Value::integer(acc);
      }
      if (nums) {
        if (a.as_float() == 0.0 && b.as_float() < 0)
          return fail("ZeroDivisionError: 0.0 cannot be raised to a negative power");
        return Value::number(std::pow(a.as_float(), b.as_float()));
      }
      return unsupported();
  }
  return unsupported();
}

// <, <=, >, >= with Python's rules (numbers across types, str, list/tuple lexicographic).
static int order(Interp& in, const Value& a, const Value& b, const char* sym, bool* ok);
int py_order(Interp& in, const Value& a, const Value& b, bool* ok) { return order(in, a, b, "<", ok); }
Value py_add(Interp& in, const Value& a, const Value& b) { return in.eval_binary(BinOp::kAdd, a, b); }

static int order(Interp& in, const Value& a, const Value& b, const char* sym, bool* ok) {
  *ok = true;
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int();
    const double x = a.as_float(), y = b.as_float();
    if (std::isnan(x) || std::isnan(y)) return 2;  // unordered: every comparison false
    return x < y ? -1 : x > y;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.str().compare(b.str());  // UTF-8 byte order = code point order
    return c < 0 ? -1 : c > 0;
  }
  if (a.is_list() && b.is_list() && a.list().tuple == b.list().tuple) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equal(x[i], y[i])) continue;
      return order(in, x[i], y[i], sym, ok);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size();
  }
  *ok = false;
  if (a.is_undefined()) {
    in.fail_undefined(a);
  } else if (b.is_undefined()) {
    in.fail_undefined(b);
  } else {
    in.fail("TypeError: '" + std::string(sym) + "' not supported between instances of '" +
            std::string(type_name(a)) + "' and '" + std::string(type_name(b)) + "'");
  }
  return 0;
}

static bool contains(Interp& in, const Value& container, const Value& needle, bool* ok) {
  *ok = true;
  switch (container.kind()) {
    case Kind::kString:
      if (!needle.is_string()) {
        *ok = false;
        in.fail("TypeError: 'in <string>' requires string as left operand, not " +
                std::string(type_name(needle)));
        return false;
      }
      return container.str().find(needle.str()) != std::string::npos;
    case Kind::kList:
      for (const auto& x : container.list().items)
        if (equal(x, needle)) return true;
      return false;
    case Kind::kDict:
      if ((needle.is_list() && !needle.list().tuple) || needle.is_dict()) {
        *ok = false;
        in.fail("TypeError: unhashable type: '" + std::string(type_name(needle)) + "'");
        return false;
      }
      return container.dict().find(needle) != nullptr;
    case Kind::kUndefined:
      return false;  // iterating an Undefined yields nothing
    default:
      *ok = false;
      in.fail("TypeError: argument of type '" + std::string(type_name(container)) +
              "' is not iterable");
      return false;
  }
}

bool value_in(Interp& in, const Value& needle, const Value& container, bool* ok) {
  return contains(in, container, needle, ok);
}

Value Interp::eval_compare(const Expr& e) {
  Value left = eval(*e.a);
  if (err_) return Value();
  for (std::size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.items[i]);
    if (err_) return Value();
    at_ = e.pos;
    bool r = false, ok = true;
    switch (e.ops[i]) {
      case CmpOp::kEq: r = equal(left, right); break;
      case CmpOp::kNe: r = !equal(left, right); break;
      case CmpOp::kIn: r = contains(*this, right, left, &ok); break;
      case CmpOp::kNotIn: r = !contains(*this, right, left, &ok); break;
      default: {
        const char* sym = e.ops[i] == CmpOp::kLt ? "<" : e.ops[i] == CmpOp::kLe ? "<=" : e.ops[i] == CmpOp::kGt ? ">" : ">=";
        const int c = order(*this, left, right, sym, &ok);
        if (c == 2) {
          r = false;
        } else {
          r = e.ops[i] == CmpOp::kLt ? c < 0 : e.ops[i] == CmpOp::kLe ? c <= 0 : e.ops[i] == CmpOp::kGt ? c > 0 : c >= 0;
        }
      }
    }
    if (!ok || err_) return Value();
    if (!r) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

// Python slicing: list/tuple/str, negative steps, None bounds; a non-int bound makes jinja2's
// getitem give up (undefined); step 0 is a ValueError.
Value Interp::eval_slice(const Expr& e) {
  const Value obj = eval(*e.a);
  if (err_) return Value();
  Value bounds[3];
  const Expr* parts[3] = {e.b.get(), e.c.get(), e.d.get()};
  for (int k = 0; k < 3; ++k) {
    if (parts[k] != nullptr) {
      bounds[k] = eval(*parts[k]);
      if (err_) return Value();
    } else {
      bounds[k] = Value::none();
    }
  }
  at_ = e.pos;
  if (obj.is_undefined()) return fail_undefined(obj);
  for (const auto& b : bounds)
    if (!b.is_none() && !b.is_integral()) return Value::undefined(object_name_bare(obj) + " has no element slice");
  if (!obj.is_string() && !obj.is_list()) return Value::undefined(object_name_bare(obj) + " has no element slice");
  const bool ascii_str = obj.is_string() && count_code_points(obj.str()) == obj.str().size();
  const std::int64_t len = obj.is_list() ? static_cast<std::int64_t>(obj.list().items.size())
                                         : static_cast<std::int64_t>(count_code_points(obj.str()));
  const std::int64_t step = bounds[2].is_none() ? 1 : bounds[2].as_int();
  if (step == 0) return fail("ValueError: slice step cannot be zero");
  auto clamp = [&](const Value& b, bool is_start) {
    if (b.is_none()) return step < 0 ? (is_start ? len - 1 : -1) : (is_start ? 0 : len);
    std::int64_t i = b.as_int();
    if (i < 0) {
      i += len;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= len) {
      i = step < 0 ? len - 1 : len;
    }
    return i;
  };
  const std::int64_t start = clamp(bounds[0], true), stop = clamp(bounds[1], false);
  std::vector<std::int64_t> idx;
  if (step > 0)
    for (std::int64_t i = start; i < stop; i += step) idx.push_back(i);
  else
    for (std::int64_t i = start; i > stop; i += step) idx.push_back(i);
  if (obj.is_list()) {
    std::vector<Value> items;
    items.reserve(idx.size());
    for (auto i : idx) items.push_back(obj.list().items[static_cast<std::size_t>(i)]);
    return Value::list(std::move(items), obj.list().tuple);
  }
  const std::string& s = obj.str();
  std::string out;
  if (ascii_str) {
    for (auto i : idx) out += s[static_cast<std::size_t>(i)];
    return Value::string(std::move(out));
  }
  std::vector<std::size_t> starts;  // byte offset of each code point
  for (std::size_t i = 0; i < s.size();) {
    starts.push_back(i);
    std::size_t l = 1;
    decode_utf8(s, i, &l);
    i += l;
  }
  starts.push_back(s.size());
  for (auto i : idx) {
    const auto k = static_cast<std::size_t>(i);
    out.append(s, starts[k], starts[k + 1] - starts[k]);
  }
  return Value::string(std::move(out));
}

bool Interp::iterate(const Value& v, std::vector<Value>* out) {
  switch (v.kind()) {
    case Kind::kList:
      *out = v.list().items;
      return true;
    case Kind::kDict:
      out->reserve(v.dict().items.size());
      for (const auto& kv : v.dict().items) out->push_back(kv.first);
      return true;
    case Kind::kString: {
      const std::string& s = v.str();
      for (std::size_t i = 0; i < s.size();) {
        std::size_t l = 1;
        decode_utf8(s, i, &l);
        out->push_back(Value::string(s.substr(i, l)));
        i += l;
      }
      return true;
    }
    case Kind::kUndefined:
      return true;
    default:
      fail("TypeError: '" + std::string(type_name(v)) + "' object is not iterable");
      return false;
  }
}

// ---- attribute and item access ----------------------------------------------------------
// "'str object' has no attribute 'type'": made once per (type, name) and render when the name is
// interned (templates probe fields of every item of a loop).
Value Interp::missing_attr(const Value& obj, std::string_view name, int name_id) {
  if (name_id < 0) return Value::undefined(object_name(obj) + " has no attribute '" + std::string(name) + "'");
  const std::uint64_t key = (static_cast<std::uint64_t>(obj.kind()) << 33) |
                            (static_cast<std::uint64_t>(obj.is_list() && obj.list().tuple) << 32) |
                            static_cast<std::uint32_t>(name_id);
  auto it = missing_.find(key);
  if (it != missing_.end()) return it->second;
  Value u = Value::undefined(object_name(obj) + " has no attribute '" + std::string(name) + "'");
  missing_.emplace(key, u);
  return u;
}

Value Interp::getattr(const Value& obj, std::string_view name, int name_id) {
  MethodIds computed;
  const MethodIds* ids = &computed;
  if (name_id >= 0)
    ids = &prog_.methods[static_cast<std::size_t>(name_id)];
  else if (obj.is_dict() || obj.is_string() || obj.is_list())
    computed = method_ids(name);
  switch (obj.kind()) {
    case Kind::kUndefined:
      return fail_undefined(obj);
    case Kind::kDict: {
      if (method_for(obj, *ids) != -1) return find_method(obj, name, *ids);
      if (const Value* v = obj.dict().find(name)) return *v;
      if (name_id >= 0) return prog_.undefined_dict_attrs[static_cast<std::size_t>(name_id)];
      return Value::undefined("'dict object' has no attribute '" + std::string(name) + "'");
    }
    case Kind::kString:
    case Kind::kList: {
      if (method_for(obj, *ids) != -1) return find_method(obj, name, *ids);
      return missing_attr(obj, name, name_id);
    }
    case Kind::kNamespace: {
      const auto* ns = static_cast<const NamespaceObj*>(obj.object());
      if (const Value* v = ns->attrs->find(name)) return *v;
      return Value::undefined("'jinja2.utils.Namespace object' has no attribute '" + std::string(name) + "'");
    }
    case Kind::kLoop: {
      auto* loop = static_cast<LoopObj*>(obj.object());
      const auto& items = loop->items->items;
      const std::int64_t n = static_cast<std::int64_t>(items.size());
      const std::int64_t i = loop->index0;
      if (name == "index") return Value::integer(i + 1);
      if (name == "index0") return Value::integer(i);
      if (name == "revindex") return Value::integer(n - i);
      if (name == "revindex0") return Value::integer(n - i - 1);
      if (name == "first") return Value::boolean(i == 0);
      if (name == "last") return Value::boolean(i == n - 1);
      if (name == "length") return Value::integer(n);
      if (name == "depth") return Value::integer(1);
      if (name == "depth0") return Value::integer(0);
      if (name == "previtem")
        return i > 0 ? items[static_cast<std::size_t>(i - 1)] : Value::undefined("there is no previous item");
      if (name == "nextitem")
        return i + 1 < n ? items[static_cast<std::size_t>(i + 1)] : Value::undefined("there is no next item");
      if (name == "cycle" || name == "changed") {
        auto c = std::make_shared<CallableObj>();
        c->kind = name == "cycle" ? CallKind::kLoopCycle : CallKind::kLoopChanged;
        c->name = "loop." + std::string(name);
        c->self = obj;
        return Value::object(Kind::kCallable, std::move(c));
      }
      return Value::undefined("'jinja2.runtime.LoopContext object' has no attribute '" + std::string(name) + "'");
    }
    default:
      return missing_attr(obj, name, name_id);
  }
}

Value Interp::getitem(const Value& obj, const Value& key, int name_id) {
  switch (obj.kind()) {
    case Kind::kUndefined:
      return fail_undefined(obj);
    case Kind::kList:
    case Kind::kString:
      if (key.is_integral()) {
        const bool list = obj.is_list();
        const std::int64_t n = list ? static_cast<std::int64_t>(obj.list().items.size())
                                    : static_cast<std::int64_t>(count_code_points(obj.str()));
        std::int64_t i = key.as_int();
        if (i < 0) i += n;
        if (i >= 0 && i < n) {
          if (list) return obj.list().items[static_cast<std::size_t>(i)];
          const std::size_t b = byte_offset_of(obj.str(), i);
          std::size_t l = 1;
          decode_utf8(obj.str(), b, &l);
          return Value::string(obj.str().substr(b, l));
        }
        return Value::undefined(object_name_bare(obj) + " has no element " + std::to_string(key.as_int()));
      }
      break;
    case Kind::kDict: {
      if (!((key.is_list() && !key.list().tuple) || key.is_dict()))
        if (const Value* v = obj.dict().find(key)) return *v;
      break;
    }
    default:
      break;
  }
  if (key.is_string()) return getattr(obj, key.str(), name_id);  // jinja2: then the attribute
  std::string repr;
  append_repr(repr, key);
  return Value::undefined(object_name_bare(obj) + " has no element " + repr);
}

}  // namespace stoker::jinja::detail
