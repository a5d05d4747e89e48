// The tree-walking interpreter behind Template::render: one Interp per render, single-threaded,
// reading the shared immutable Program. No exceptions: the first error is stored (with the
// line:column of the node) and every evaluation returns early once one is set.
// The builtins (filters, tests, globals, methods) are free functions taking the Interp, so they
// can call back into it (map/select call filters and tests, `caller()` renders a body) and
// report errors the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/jinja/detail/ast.h"
#include "stoker/jinja/detail/objects.h"
#include "stoker/jinja/detail/parser.h"
#include "stoker/jinja/template.h"

namespace stoker::jinja::detail {

// Variables of one frame (a loop iteration, a macro call, a with/set/filter block). Frames hold
// a few names: the first kInline live inside the frame (no allocation per loop iteration).
struct Scope {
  static constexpr int kInline = 4;
  Scope* parent = nullptr;  // nullptr: the next one is the template's root
  Value* find(int id) {
    for (int i = 0; i < n_inline_; ++i)
      if (ids_[i] == id) return &vals_[i];
    for (auto& kv : more_)
      if (kv.first == id) return &kv.second;
    return nullptr;
  }
  void set(int id, Value v) {
    if (Value* x = find(id)) {
      *x = std::move(v);
    } else if (n_inline_ < kInline) {
      ids_[n_inline_] = id;
      vals_[n_inline_++] = std::move(v);
    } else {
      more_.emplace_back(id, std::move(v));
    }
  }

 private:
  int n_inline_ = 0;
  int ids_[kInline];
  Value vals_[kInline];
  std::vector<std::pair<int, Value>> more_;
};

using Kwargs = std::vector<std::pair<std::string, Value>>;

class Interp {
 public:
  Interp(const Program& program, const Variables& variables, const RenderOptions& options);
  Result<Rendered> run();

  // ---- for the builtins -----------------------------------------------------------------
  bool failed() const { return err_.has_value(); }
  // Records the first error (kind: "TypeError", "UndefinedError", ...); returns undefined.
  Value fail(std::string message);
  Value fail_undefined(const Value& undefined);  // using an Undefined: jinja2's UndefinedError
  Value call(const Value& callee, std::vector<Value> args, Kwargs kwargs);
  Value apply_filter(int filter, const Value& operand, std::vector<Value> args, Kwargs kwargs);
  bool apply_test(int test, const Value& operand, std::vector<Value> args, Kwargs kwargs);
  // name_id: the interned name when the template spelled it (fast paths), else -1.
  Value getattr(const Value& obj, std::string_view name, int name_id = -1);
  Value getitem(const Value& obj, const Value& key, int name_id = -1);
  // Python iteration: list/tuple items, dict keys, str characters, Undefined nothing.
  bool iterate(const Value& v, std::vector<Value>* out);
  Value eval_binary(BinOp op, const Value& a, const Value& b);  // Python's + - * / // % **
  bool check_size(std::size_t bytes);  // a string about to be built
  bool check_items(std::size_t n);      // a list about to be built
  std::tm now() const;
  const RenderOptions& options() const { return options_; }

 private:
  enum class Flow : std::uint8_t { kNormal, kBreak, kContinue };

  Flow exec(const Body& body);
  Flow exec(const Stmt& s);
  Flow exec_for(const Stmt& s);
  void exec_set(const Stmt& s);
  void exec_call_block(const Stmt& s);
  void exec_generation(const Stmt& s);
  void assign(const Target& t, Value v);
  std::string render_body(const Body& body, Scope* scope);
  void emit(std::string_view text);

  Value eval(const Expr& e);
  Value eval_call(const Expr& e);
  Value eval_compare(const Expr& e);
  Value eval_slice(const Expr& e);
  Value lookup(int id, const std::string& text);
  // The stored value of a variable (no copy), or nullptr when it is unset or a global.
  const Value* lookup_ptr(int id);
  // Evaluates `e`; a variable is returned by reference to its storage, anything else via tmp.
  const Value& eval_ref(const Expr& e, Value& tmp);
  // {{ a + b + c }} / {{ a ~ b ~ c }}: string pieces appended to the output, no intermediates.
  void emit_expr(const Expr& e);
  Value call_macro(const CallableObj& c, std::vector<Value> args, Kwargs kwargs);
  bool eval_args(const Expr& e, std::vector<Value>* args, Kwargs* kwargs);
  bool step();
  Value missing_attr(const Value& obj, std::string_view name, int name_id);

  const Program& prog_;
  const RenderOptions& options_;
  std::vector<Value> root_;         // top-level variables by name id
  std::vector<std::uint8_t> root_set_;
  Scope* scope_ = nullptr;          // innermost scope; nullptr = root
  std::string text_;                // the top-level output
  std::string* out_ = &text_;       // where output goes now
  bool top_ = true;                 // out_ is the top-level output
  bool emitted_ = false;            // anything emitted at the top level yet (HF's tracker)
  std::vector<Span> spans_;
  std::size_t total_out_ = 0;
  std::int64_t iterations_ = 0;
  std::int64_t steps_ = 0;
  int depth_ = 0;
  Pos at_;                          // position of the node being evaluated (for errors)
  std::optional<Error> err_;
  std::unordered_map<std::uint64_t, Value> missing_;  // missing_attr's cache
};

// Builtins (filters.cc, methods.cc).
Value run_filter(Interp& in, Filter f, const Value& v, std::vector<Value>& args, Kwargs& kwargs);
bool run_test(Interp& in, Test t, const Value& v, std::vector<Value>& args, Kwargs& kwargs);
Value run_global(Interp& in, const CallableObj& c, std::vector<Value>& args, Kwargs& kwargs);
Value run_method(Interp& in, const CallableObj& c, std::vector<Value>& args, Kwargs& kwargs);
// The bound method `name` of a str/dict/list value; undefined (unsafe when the sandbox refuses
// a mutating method) when there is none. MethodIds: the method a name means for each type,
// computed once per interned name (Program::methods), so attribute access compares no strings.
Value find_method(const Value& self, std::string_view name);
Value find_method(const Value& self, std::string_view name, const MethodIds& ids);
int method_for(const Value& self, const MethodIds& ids);  // id, -1 none, kMethodUnsafe
Value call_method(Interp& in, const Value& self, int method, std::string_view name,
                  std::vector<Value>& args, Kwargs& kwargs);

}  // namespace stoker::jinja::detail
