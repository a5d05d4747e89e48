// The tree-walking interpreter behind Template::render: one Interp per render, single-threaded,
// reading the shared immutable Program. No exceptions: the first error is stored (with the
// line:column of the node) and every evaluation returns early once one is set.
// The builtins (filters, tests, globals, methods) are free functions taking the Interp, so they
// can call back into it (map/select call filters and tests, `caller()` renders a body) and
// report errors the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/jinja/detail/ast.h"
#include "stoker/jinja/detail/objects.h"
#include "stoker/jinja/detail/parser.h"
#include "stoker/jinja/template.h"

namespace stoker::jinja::detail {

struct Scope {
  Scope* parent = nullptr;  // nullptr: the next one is the template's root
  std::vector<std::pair<int, Value>> vars;
  Value* find(int id) {
    for (auto& kv : vars)
      if (kv.first == id) return &kv.second;
    return nullptr;
  }
  void set(int id, Value v) {
    if (Value* x = find(id)) {
      *x = std::move(v);
      return;
    }
    vars.emplace_back(id, std::move(v));
  }
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
  Value getattr(const Value& obj, std::string_view name);
  Value getitem(const Value& obj, const Value& key);
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
  Value call_macro(const CallableObj& c, std::vector<Value> args, Kwargs kwargs);
  bool eval_args(const Expr& e, std::vector<Value>* args, Kwargs* kwargs);
  bool step();

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
};

// Builtins (filters.cc, methods.cc).
Value run_filter(Interp& in, Filter f, const Value& v, std::vector<Value>& args, Kwargs& kwargs);
bool run_test(Interp& in, Test t, const Value& v, std::vector<Value>& args, Kwargs& kwargs);
Value run_global(Interp& in, const CallableObj& c, std::vector<Value>& args, Kwargs& kwargs);
Value run_method(Interp& in, const CallableObj& c, std::vector<Value>& args, Kwargs& kwargs);
// The bound method `name` of a str/dict/list value; undefined (unsafe when the sandbox refuses
// a mutating method) when there is none.
Value find_method(const Value& self, std::string_view name);

}  // namespace stoker::jinja::detail
