#include "stoker/jinja/value.h"

#include <cmath>
#include <cstring>

#include "stoker/base/hash.h"
#include "stoker/jinja/detail/objects.h"
#include "stoker/jinja/detail/pytext.h"

namespace stoker::jinja {
namespace {

constexpr std::size_t kIndexFrom = 8;  // dicts this small are scanned

const std::string kEmpty;

}  // namespace

// ---- DictObj ----------------------------------------------------------------------------
const Value* DictObj::find(std::string_view key) const {
  if (!hash_.empty()) {
    const std::size_t mask = hash_.size() - 1;
    for (std::size_t i = fnv1a64(key) & mask;; i = (i + 1) & mask) {
      const std::uint32_t slot = hash_[i];
      if (slot == 0) break;
      const auto& kv = items[slot - 1];
      if (kv.first.is_string() && kv.first.str() == key) return &kv.second;
    }
    return nullptr;
  }
  for (const auto& kv : items)
    if (kv.first.is_string() && kv.first.str() == key) return &kv.second;
  return nullptr;
}

const Value* DictObj::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.str()));
  for (const auto& kv : items)
    if (equal(kv.first, key)) return &kv.second;
  return nullptr;
}

void DictObj::set(Value key, Value value) {
  for (auto& kv : items) {
    if (equal(kv.first, key)) {
      kv.second = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
  if (items.size() >= kIndexFrom) reindex();
}

void DictObj::reindex() {
  hash_.clear();
  if (items.size() < kIndexFrom) return;
  std::size_t cap = 16;
  while (cap < items.size() * 2) cap *= 2;
  hash_.assign(cap, 0);
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (!items[k].first.is_string()) continue;
    std::size_t i = fnv1a64(items[k].first.str()) & (cap - 1);
    while (hash_[i] != 0) i = (i + 1) & (cap - 1);
    hash_[i] = static_cast<std::uint32_t>(k + 1);
  }
}

// ---- Value ------------------------------------------------------------------------------
Value Value::undefined(std::string hint, bool unsafe) {
  Value v;
  auto u = std::make_shared<UndefinedObj>();
  u->hint = std::move(hint);
  u->unsafe = unsafe;
  v.obj_ = std::move(u);
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.obj_ = std::make_shared<StrObj>(std::move(s));
  return v;
}

Value Value::string(std::shared_ptr<const StrObj> s) {
  Value v;
  v.kind_ = Kind::kString;
  v.obj_ = std::const_pointer_cast<StrObj>(std::move(s));
  return v;
}

Value Value::list(std::vector<Value> items, bool tuple) {
  Value v;
  v.kind_ = Kind::kList;
  auto l = std::make_shared<ListObj>();
  l->items = std::move(items);
  l->tuple = tuple;
  v.obj_ = std::move(l);
  return v;
}

Value Value::dict(std::shared_ptr<DictObj> d) {
  Value v;
  v.kind_ = Kind::kDict;
  v.obj_ = std::move(d);
  return v;
}

Value Value::object(Kind kind, std::shared_ptr<Obj> obj) {
  Value v;
  v.kind_ = kind;
  v.obj_ = std::move(obj);
  return v;
}

const std::string& Value::undefined_hint() const {
  const auto* u = dynamic_cast<const UndefinedObj*>(obj_.get());
  return u != nullptr ? u->hint : kEmpty;
}

bool Value::undefined_unsafe() const {
  const auto* u = dynamic_cast<const UndefinedObj*>(obj_.get());
  return u != nullptr && u->unsafe;
}

// ---- Python semantics -------------------------------------------------------------------
bool truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
    case Kind::kInt:
      return v.as_int() != 0;
    case Kind::kFloat:
      return v.as_float() != 0.0;
    case Kind::kString:
      return !v.str().empty();
    case Kind::kList:
      return !v.list().items.empty();
    case Kind::kDict:
      return !v.dict().items.empty();
    default:
      return true;
  }
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() == b.as_int();
    return a.as_float() == b.as_float();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return a.str() == b.str();
    case Kind::kList: {
      const auto& x = a.list();
      const auto& y = b.list();
      if (x.tuple != y.tuple || x.items.size() != y.items.size()) return false;
      for (std::size_t i = 0; i < x.items.size(); ++i)
        if (!equal(x.items[i], y.items[i])) return false;
      return true;
    }
    case Kind::kDict: {
      const auto& x = a.dict();
      const auto& y = b.dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& kv : x.items) {
        const Value* other = y.find(kv.first);
        if (other == nullptr || !equal(kv.second, *other)) return false;
      }
      return true;
    }
    default:
      return a.object() == b.object();
  }
}

void append_str(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return;
    case Kind::kString:
      out += v.str();
      return;
    default:
      append_repr(out, v);
  }
}

std::string to_str(const Value& v) {
  if (v.is_string()) return v.str();
  std::string out;
  append_str(out, v);
  return out;
}

void append_repr(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return;  // repr(Undefined) is '' in jinja2 as well
    case Kind::kNone:
      out += "None";
      return;
    case Kind::kBool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Kind::kFloat:
      detail::append_float_repr(out, v.as_float());
      return;
    case Kind::kString:
      detail::append_str_repr(out, v.str());
      return;
    case Kind::kList: {
      const auto& l = v.list();
      out += l.tuple ? '(' : '[';
      for (std::size_t i = 0; i < l.items.size(); ++i) {
        if (i > 0) out += ", ";
        append_repr(out, l.items[i]);
      }
      if (l.tuple && l.items.size() == 1) out += ',';
      out += l.tuple ? ')' : ']';
      return;
    }
    case Kind::kDict: {
      out += '{';
      bool first = true;
      for (const auto& kv : v.dict().items) {
        if (!first) out += ", ";
        first = false;
        append_repr(out, kv.first);
        out += ": ";
        append_repr(out, kv.second);
      }
      out += '}';
      return;
    }
    case Kind::kNamespace: {
      out += "<Namespace ";
      const auto* ns = static_cast<const detail::NamespaceObj*>(v.object());
      append_repr(out, Value::dict(ns->attrs));
      out += '>';
      return;
    }
    case Kind::kLoop:
      out += "<LoopContext>";
      return;
    case Kind::kCallable:
      out += "<callable ";
      out += static_cast<const detail::CallableObj*>(v.object())->name;
      out += '>';
      return;
  }
}

std::string_view type_name(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return v.list().tuple ? "tuple" : "list";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kCallable: return "function";
    case Kind::kLoop: return "LoopContext";
  }
  return "object";
}

}  // namespace stoker::jinja
