// Value: what a Jinja template computes with — Python's None/bool/int/float/str/list/tuple/dict
// as jinja2 sees them, plus Jinja's Undefined, namespaces and callables. Scalars are held inline;
// strings, lists and dicts are immutable shared objects (copying a Value is a refcount bump, so a
// context built once can be rendered many times and by several threads). A namespace is the one
// mutable object (`{% set ns.x = ... %}`), shared by reference like Python's.
// Dicts keep insertion order (Python ≥ 3.7, what json.dumps and printing show).
// Thread-safety: a Value may be read from several threads; namespaces are mutated only by the
// render that created them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stoker::jinja {

enum class Kind : std::uint8_t {
  kUndefined,  // a missing variable/attribute (jinja2.Undefined); prints as ""
  kNone,
  kBool,
  kInt,        // Python int, held in 64 bits (overflow is a render error, never a wrap)
  kFloat,
  kString,     // UTF-8
  kList,       // list or tuple (ListObj::tuple)
  kDict,
  kNamespace,
  kCallable,   // macro, global function, bound method, loop.cycle ...
  kLoop,       // the `loop` variable of a for loop
};

struct Obj {
  virtual ~Obj() = default;
};

struct StrObj;
struct ListObj;
struct DictObj;

class Value {
 public:
  Value() : i_(0) {}  // undefined, no hint
  static Value undefined(std::string hint, bool unsafe = false);
  static Value none() { Value v; v.kind_ = Kind::kNone; return v; }
  static Value boolean(bool b) { Value v; v.kind_ = Kind::kBool; v.i_ = b ? 1 : 0; return v; }
  static Value integer(std::int64_t i) { Value v; v.kind_ = Kind::kInt; v.i_ = i; return v; }
  static Value number(double f) { Value v; v.kind_ = Kind::kFloat; v.f_ = f; return v; }
  static Value string(std::string s);
  static Value string(std::shared_ptr<const StrObj> s);
  static Value list(std::vector<Value> items, bool tuple = false);
  static Value dict(std::shared_ptr<DictObj> d);
  static Value object(Kind kind, std::shared_ptr<Obj> obj);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  // int or bool (Python: bool is an int)
  bool is_integral() const { return kind_ == Kind::kInt || kind_ == Kind::kBool; }
  bool is_number() const { return is_integral() || kind_ == Kind::kFloat; }

  bool as_bool() const { return i_ != 0; }
  std::int64_t as_int() const { return i_; }  // int or bool
  double as_float() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(i_); }
  const std::string& str() const;  // kString
  const ListObj& list() const;     // kList
  const DictObj& dict() const;     // kDict
  const std::string& undefined_hint() const;
  bool undefined_unsafe() const;
  Obj* object() const { return obj_.get(); }
  const std::shared_ptr<Obj>& object_ptr() const { return obj_; }

 private:
  Kind kind_ = Kind::kUndefined;
  union {
    std::int64_t i_;
    double f_;
  };
  std::shared_ptr<Obj> obj_;
};

struct StrObj final : Obj {
  explicit StrObj(std::string s) : str(std::move(s)) {}
  std::string str;
};

struct ListObj final : Obj {
  std::vector<Value> items;
  bool tuple = false;
};

// Ordered dict. Lookups by string key are the hot path (message['role']); a hash index is built
// once a dict grows past a few entries.
struct DictObj final : Obj {
  std::vector<std::pair<Value, Value>> items;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // Inserts or replaces (Python semantics: a replaced key keeps its position).
  void set(Value key, Value value);
  void reindex();

 private:
  std::vector<std::uint32_t> hash_;  // open addressing over string keys; empty when small
};

struct UndefinedObj final : Obj {
  std::string hint;     // jinja2's message: "'x' is undefined", "'dict object' has no attribute 'a'"
  bool unsafe = false;  // a sandbox-refused attribute (list.append): calling it is SecurityError
};

inline const std::string& Value::str() const { return static_cast<const StrObj*>(obj_.get())->str; }
inline const ListObj& Value::list() const { return *static_cast<const ListObj*>(obj_.get()); }
inline const DictObj& Value::dict() const { return *static_cast<const DictObj*>(obj_.get()); }

// ---- Python semantics -------------------------------------------------------------------
bool truthy(const Value& v);
// Python ==: 1 == 1.0 == True; lists/dicts element-wise; Undefined == Undefined only.
bool equal(const Value& a, const Value& b);
// Python str(): True, None, 1.0, "['a', 1]", "{'k': 'v'}"; Undefined -> "".
void append_str(std::string& out, const Value& v);
std::string to_str(const Value& v);
// Python repr(): strings quoted as Python quotes them.
void append_repr(std::string& out, const Value& v);
// "str", "int", "dict", ... as Python names the type (for error messages).
std::string_view type_name(const Value& v);

}  // namespace stoker::jinja
