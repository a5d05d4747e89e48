#include "stoker/jinja/detail/interp.h"

#include <chrono>

#include "stoker/jinja/detail/pytext.h"

namespace stoker::jinja::detail {

Interp::Interp(const Program& program, const Variables& variables, const RenderOptions& options)
    : prog_(program), options_(options) {
  root_.resize(prog_.names.size());
  root_set_.assign(prog_.names.size(), 0);
  for (const auto& [name, value] : variables) {
    const int id = prog_.id(name);
    if (id < 0) continue;
    root_[static_cast<std::size_t>(id)] = value;
    root_set_[static_cast<std::size_t>(id)] = 1;
  }
}

Result<Rendered> Interp::run() {
  text_.reserve(std::min<std::size_t>(prog_.lexed.source.size() * 2 + 256, options_.limits.max_output_bytes));
  exec(prog_.body);
  if (err_) return std::move(*err_);
  Rendered r;
  r.text = std::move(text_);
  r.generation = std::move(spans_);
  return r;
}

// ---- errors and limits ------------------------------------------------------------------
Value Interp::fail(std::string message) {
  if (!err_)
    err_ = invalid_argument("template error at " + std::to_string(at_.line) + ":" +
                            std::to_string(at_.col) + ": " + std::move(message));
  return Value();
}

Value Interp::fail_undefined(const Value& u) {
  if (u.undefined_unsafe()) return fail("SecurityError: " + u.undefined_hint());
  return fail("UndefinedError: " + (u.undefined_hint().empty() ? std::string("value is undefined")
                                                               : u.undefined_hint()));
}

bool Interp::step() {
  if (++steps_ <= options_.limits.max_steps) return true;
  fail("the render exceeded " + std::to_string(options_.limits.max_steps) +
       " evaluation steps (RenderLimits::max_steps)");
  return false;
}

bool Interp::check_size(std::size_t bytes) {
  if (bytes <= options_.limits.max_output_bytes) return true;
  fail("a string of " + std::to_string(bytes) + " bytes exceeds the output limit of " +
       std::to_string(options_.limits.max_output_bytes) + " (RenderLimits::max_output_bytes)");
  return false;
}

bool Interp::check_items(std::size_t n) {
  if (n <= options_.limits.max_items) return true;
  fail("a list of " + std::to_string(n) + " items exceeds the limit of " +
       std::to_string(options_.limits.max_items) + " (RenderLimits::max_items)");
  return false;
}

std::tm Interp::now() const {
  if (options_.clock) return options_.clock();
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

void Interp::emit(std::string_view text) {
  if (err_) return;
  if (total_out_ + text.size() > options_.limits.max_output_bytes) {
    fail("the output exceeds " + std::to_string(options_.limits.max_output_bytes) +
         " bytes (RenderLimits::max_output_bytes)");
    return;
  }
  total_out_ += text.size();
  out_->append(text);
  if (top_) emitted_ = true;
}

// ---- statements -------------------------------------------------------------------------
Interp::Flow Interp::exec(const Body& body) {
  for (const auto& s : body) {
    const Flow f = exec(*s);
    if (err_) return Flow::kNormal;
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

std::string Interp::render_body(const Body& body, Scope* scope) {
  std::string buf;
  std::string* saved_out = out_;
  const bool saved_top = top_;
  Scope* saved_scope = scope_;
  out_ = &buf;
  top_ = false;
  scope_ = scope;
  exec(body);
  out_ = saved_out;
  top_ = saved_top;
  scope_ = saved_scope;
  return buf;
}

Interp::Flow Interp::exec(const Stmt& s) {
  at_ = s.pos;
  switch (s.kind) {
    case StmtKind::kText:
      emit(s.text);
      return Flow::kNormal;
    case StmtKind::kPrint:
      emit_expr(*s.expr);
      return Flow::kNormal;
    case StmtKind::kIf:
      for (std::size_t i = 0; i < s.conds.size(); ++i) {
        Value tmp;
        const Value& c = eval_ref(*s.conds[i], tmp);
        if (err_) return Flow::kNormal;
        if (truthy(c)) return exec(s.bodies[i]);
      }
      if (s.bodies.size() > s.conds.size()) return exec(s.bodies.back());
      return Flow::kNormal;
    case StmtKind::kFor:
      return exec_for(s);
    case StmtKind::kSet:
      exec_set(s);
      return Flow::kNormal;
    case StmtKind::kSetBlock:
    case StmtKind::kFilterBlock: {
      Scope inner;
      inner.parent = scope_;
      std::string* saved_out = out_;
      const bool saved_top = top_;
      std::string buf;
      out_ = &buf;
      top_ = false;
      scope_ = &inner;
      const Flow f = exec(s.bodies[0]);
      out_ = saved_out;
      top_ = saved_top;
      scope_ = inner.parent;
      if (err_ || f != Flow::kNormal) return f;  // a break inside skips the assignment
      at_ = s.pos;
      Value v = Value::string(std::move(buf));
      for (const auto& fe : s.filters) {
        std::vector<Value> args;
        Kwargs kwargs;
        if (!eval_args(*fe, &args, &kwargs)) return Flow::kNormal;
        v = apply_filter(fe->name, v, std::move(args), std::move(kwargs));
        if (err_) return Flow::kNormal;
      }
      if (s.kind == StmtKind::kSetBlock) {
        assign(s.target, std::move(v));
      } else {
        emit(to_str(v));
      }
      return Flow::kNormal;
    }
    case StmtKind::kMacro: {
      auto c = std::make_shared<CallableObj>();
      c->kind = CallKind::kMacro;
      c->macro = s.macro.get();
      c->name = s.macro->text;
      Target t;
      t.names.push_back(s.macro->name);
      assign(t, Value::object(Kind::kCallable, std::move(c)));
      return Flow::kNormal;
    }
    case StmtKind::kCallBlock:
      exec_call_block(s);
      return Flow::kNormal;
    case StmtKind::kWith: {
      Scope inner;
      inner.parent = scope_;
      std::vector<Value> values;
      for (const auto& w : s.withs) {
        values.push_back(eval(*w.second));
        if (err_) return Flow::kNormal;
      }
      scope_ = &inner;
      for (std::size_t i = 0; i < s.withs.size(); ++i) assign(s.withs[i].first, values[i]);
      const Flow f = err_ ? Flow::kNormal : exec(s.bodies[0]);
      scope_ = inner.parent;
      return f;
    }
    case StmtKind::kBreak:
      return Flow::kBreak;
    case StmtKind::kContinue:
      return Flow::kContinue;
    case StmtKind::kGeneration:
      exec_generation(s);
      return Flow::kNormal;
  }
  return Flow::kNormal;
}

void Interp::assign(const Target& t, Value v) {
  if (err_) return;
  if (t.ns_attr >= 0) {
    const Value ns = lookup(t.names[0], t.texts[0]);
    if (err_) return;
    if (ns.kind() != Kind::kNamespace) {
      fail("cannot assign attribute on non-namespace object ('" + t.texts[0] + "' is " +
           std::string(type_name(ns)) + ")");
      return;
    }
    static_cast<NamespaceObj*>(ns.object())->attrs->set(Value::string(t.ns_attr_text), std::move(v));
    return;
  }
  auto put = [&](int id, Value x) {
    if (scope_ == nullptr) {
      root_[static_cast<std::size_t>(id)] = std::move(x);
      root_set_[static_cast<std::size_t>(id)] = 1;
    } else {
      scope_->set(id, std::move(x));
    }
  };
  if (!t.tuple) {
    put(t.names[0], std::move(v));
    return;
  }
  std::vector<Value> parts;
  if (!iterate(v, &parts)) return;
  if (parts.size() != t.names.size()) {
    fail(std::string("ValueError: ") +
         (parts.size() > t.names.size() ? "too many values to unpack" : "not enough values to unpack") +
         " (expected " + std::to_string(t.names.size()) + ", got " + std::to_string(parts.size()) + ")");
    return;
  }
  for (std::size_t i = 0; i < parts.size(); ++i) put(t.names[i], std::move(parts[i]));
}

void Interp::exec_set(const Stmt& s) {
  Value v = eval(*s.expr);
  if (err_) return;
  at_ = s.pos;
  assign(s.target, std::move(v));
}

Interp::Flow Interp::exec_for(const Stmt& s) {
  const Value iterable = eval(*s.expr);
  if (err_) return Flow::kNormal;
  std::shared_ptr<ListObj> items;
  if (iterable.is_list() && !s.cond) {  // values are immutable: the loop can share the list
    items = std::static_pointer_cast<ListObj>(iterable.object_ptr());
  } else {
    items = std::make_shared<ListObj>();
    if (!iterate(iterable, &items->items)) return Flow::kNormal;
  }
  if (s.cond) {  // `for x in y if cond`: filtered first; loop.* counts the kept items
    std::vector<Value> kept;
    for (auto& item : items->items) {
      Scope probe;
      probe.parent = scope_;
      scope_ = &probe;
      assign(s.target, item);
      const Value c = err_ ? Value() : eval(*s.cond);
      scope_ = probe.parent;
      if (err_) return Flow::kNormal;
      if (truthy(c)) kept.push_back(std::move(item));
    }
    items->items = std::move(kept);
  }
  auto loop = std::make_shared<LoopObj>();
  loop->items = items;
  const Value loop_value = Value::object(Kind::kLoop, loop);
  const std::size_t n = items->items.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (++iterations_ > options_.limits.max_loop_iterations) {
      at_ = s.pos;
      fail("the render exceeded " + std::to_string(options_.limits.max_loop_iterations) +
           " loop iterations (RenderLimits::max_loop_iterations)");
      return Flow::kNormal;
    }
    loop->index0 = static_cast<std::int64_t>(i);
    Scope iter;
    iter.parent = scope_;
    scope_ = &iter;
    assign(s.target, items->items[i]);
    iter.set(prog_.id_loop, loop_value);
    const Flow f = err_ ? Flow::kNormal : exec(s.bodies[0]);
    scope_ = iter.parent;
    if (err_ || f == Flow::kBreak) break;
  }
  if (!err_ && n == 0 && s.bodies.size() > 1) {
    Scope inner;
    inner.parent = scope_;
    scope_ = &inner;
    exec(s.bodies[1]);
    scope_ = inner.parent;
  }
  return Flow::kNormal;
}

void Interp::exec_call_block(const Stmt& s) {
  const Expr& call = *s.expr;
  const Value callee = eval(*call.a);
  if (err_) return;
  std::vector<Value> args;
  Kwargs kwargs;
  if (!eval_args(call, &args, &kwargs)) return;
  auto caller = std::make_shared<CallableObj>();
  caller->kind = CallKind::kCaller;
  caller->name = "caller";
  caller->macro = s.macro.get();
  caller->closure = scope_;
  caller->alive = std::make_shared<bool>(true);
  const auto alive = caller->alive;
  kwargs.emplace_back("caller", Value::object(Kind::kCallable, std::move(caller)));
  at_ = s.pos;
  const Value r = this->call(callee, std::move(args), std::move(kwargs));
  *alive = false;
  if (err_) return;
  emit(to_str(r));
}

void Interp::exec_generation(const Stmt& s) {
  // Hugging Face (transformers' AssistantTracker): the span starts at the length of everything
  // output so far and is recorded only once the tracker is "active" — something was output at
  // the top level or a span was recorded already. The body runs as a caller (own scope).
  const bool active = emitted_ || !spans_.empty();
  const std::size_t start = text_.size();
  Scope inner;
  inner.parent = scope_;
  const std::string body = render_body(s.bodies[0], &inner);
  if (err_) return;
  if (active) spans_.push_back(Span{start, start + body.size()});
  emit(body);
}

// ---- calls ------------------------------------------------------------------------------
bool Interp::eval_args(const Expr& e, std::vector<Value>* args, Kwargs* kwargs) {
  args->reserve(e.items.size());
  for (const auto& a : e.items) {
    args->push_back(eval(*a));
    if (err_) return false;
  }
  for (const auto& k : e.kwargs) {
    kwargs->emplace_back(k.text, eval(*k.value));
    if (err_) return false;
  }
  if (e.dyn_args) {
    const Value v = eval(*e.dyn_args);
    if (err_) return false;
    std::vector<Value> more;
    if (!iterate(v, &more)) return false;
    for (auto& x : more) args->push_back(std::move(x));
  }
  if (e.dyn_kwargs) {
    const Value v = eval(*e.dyn_kwargs);
    if (err_) return false;
    if (!v.is_dict()) {
      fail("TypeError: argument after ** must be a mapping, not " + std::string(type_name(v)));
      return false;
    }
    for (const auto& kv : v.dict().items) {
      if (!kv.first.is_string()) {
        fail("TypeError: keywords must be strings");
        return false;
      }
      kwargs->emplace_back(kv.first.str(), kv.second);
    }
  }
  return true;
}

Value Interp::call(const Value& callee, std::vector<Value> args, Kwargs kwargs) {
  if (err_) return Value();
  if (callee.is_undefined()) return fail_undefined(callee);
  if (callee.kind() != Kind::kCallable)
    return fail("TypeError: '" + std::string(type_name(callee)) + "' object is not callable");
  const auto& c = *static_cast<const CallableObj*>(callee.object());
  switch (c.kind) {
    case CallKind::kMacro:
    case CallKind::kCaller:
      return call_macro(c, std::move(args), std::move(kwargs));
    case CallKind::kGlobal:
      return run_global(*this, c, args, kwargs);
    default:
      return run_method(*this, c, args, kwargs);
  }
}

Value Interp::call_macro(const CallableObj& c, std::vector<Value> args, Kwargs kwargs) {
  const MacroDef& m = *c.macro;
  const std::string who = c.kind == CallKind::kCaller ? "caller" : "macro '" + m.text + "'";
  if (c.kind == CallKind::kCaller && !*c.alive)
    return fail("a call block's caller was called after its call block ended");
  if (depth_ >= options_.limits.max_call_depth)
    return fail("macro calls nested deeper than " + std::to_string(options_.limits.max_call_depth) +
                " (RenderLimits::max_call_depth)");
  Scope s;
  s.parent = c.kind == CallKind::kCaller ? c.closure : nullptr;
  const std::size_t np = m.params.size();
  std::vector<Value> bound(np);
  std::vector<std::uint8_t> given(np, 0);
  for (std::size_t i = 0; i < args.size() && i < np; ++i) {
    bound[i] = std::move(args[i]);
    given[i] = 1;
  }
  std::vector<Value> extra;
  for (std::size_t i = np; i < args.size(); ++i) extra.push_back(std::move(args[i]));
  if (!extra.empty() && !m.uses_varargs)
    return fail("TypeError: " + who + " takes not more than " + std::to_string(np) + " argument(s)");
  auto extra_kw = std::make_shared<DictObj>();
  Value caller_value;
  bool have_caller = false;
  for (auto& [name, value] : kwargs) {
    bool matched = false;
    for (std::size_t i = 0; i < np; ++i) {
      if (m.params[i].text != name) continue;
      if (given[i]) return fail("TypeError: " + who + " got multiple values for argument '" + name + "'");
      bound[i] = std::move(value);
      given[i] = 1;
      matched = true;
      break;
    }
    if (matched) continue;
    if (name == "caller" && m.uses_caller) {
      caller_value = std::move(value);
      have_caller = true;
      continue;
    }
    if (!m.uses_kwargs) return fail("TypeError: " + who + " takes no keyword argument '" + name + "'");
    extra_kw->set(Value::string(name), std::move(value));
  }
  Scope* saved = scope_;
  scope_ = &s;
  for (std::size_t i = 0; i < np; ++i) {
    if (!given[i]) {
      if (m.params[i].default_value) {
        bound[i] = eval(*m.params[i].default_value);
        if (err_) {
          scope_ = saved;
          return Value();
        }
      } else {
        bound[i] = Value::undefined("parameter '" + m.params[i].text + "' was not provided");
      }
    }
    s.set(m.params[i].name, bound[i]);
  }
  scope_ = saved;
  if (m.uses_varargs) s.set(prog_.id_varargs, Value::list(std::move(extra), true));
  if (m.uses_kwargs) s.set(prog_.id_kwargs, Value::dict(extra_kw));
  if (m.uses_caller)
    s.set(prog_.id_caller, have_caller ? caller_value : Value::undefined("'caller' is undefined"));
  ++depth_;
  std::string out = render_body(m.body, &s);
  --depth_;
  if (err_) return Value();
  return Value::string(std::move(out));
}

// ---- names ------------------------------------------------------------------------------
const Value* Interp::lookup_ptr(int id) {
  for (Scope* s = scope_; s != nullptr; s = s->parent)
    if (Value* v = s->find(id)) return v;
  const auto i = static_cast<std::size_t>(id);
  return root_set_[i] ? &root_[i] : nullptr;
}

const Value& Interp::eval_ref(const Expr& e, Value& tmp) {
  if (e.kind == ExprKind::kName && !err_ && step()) {
    if (const Value* v = lookup_ptr(e.name)) return *v;
  }
  tmp = eval(e);
  return tmp;
}

void Interp::emit_expr(const Expr& e) {
  if (e.kind == ExprKind::kConcat) {
    std::string s;
    for (const auto& x : e.items) {
      Value tmp;
      const Value& v = eval_ref(*x, tmp);
      if (err_) return;
      if (v.is_string()) {
        if (!check_size(s.size() + v.str().size())) return;
        s += v.str();
      } else {
        append_str(s, v);
        if (!check_size(s.size())) return;
      }
    }
    emit(s);
    return;
  }
  if (e.kind == ExprKind::kBinary && e.bin == BinOp::kAdd) {
    // a + b + c parses as ((a + b) + c): walk down the left spine, then fold left to right,
    // keeping string sums in one buffer (Python's order of evaluation and of errors).
    const Expr* spine[64];
    int n = 0;
    const Expr* x = &e;
    while (x->kind == ExprKind::kBinary && x->bin == BinOp::kAdd && n < 63) {
      spine[n++] = x;
      x = x->a.get();
    }
    Value acc_value;
    const Value& first = eval_ref(*x, acc_value);
    if (err_) return;
    std::string buf;
    bool in_buf = first.is_string();
    if (in_buf) buf = first.str();
    else acc_value = first;
    for (int k = n - 1; k >= 0; --k) {
      Value tmp;
      const Value& v = eval_ref(*spine[k]->b, tmp);
      if (err_) return;
      at_ = spine[k]->pos;
      if (in_buf && v.is_string()) {
        if (!check_size(buf.size() + v.str().size())) return;
        buf += v.str();
        continue;
      }
      if (in_buf) {
        acc_value = Value::string(std::move(buf));
        buf.clear();
        in_buf = false;
      }
      acc_value = eval_binary(BinOp::kAdd, acc_value, v);
      if (err_) return;
    }
    if (in_buf) {
      emit(buf);
      return;
    }
    std::string t;
    append_str(t, acc_value);
    emit(t);
    return;
  }
  Value tmp;
  const Value& v = eval_ref(e, tmp);
  if (err_) return;
  if (v.is_string()) {
    emit(v.str());
    return;
  }
  std::string t;
  append_str(t, v);
  emit(t);
}

Value Interp::lookup(int id, const std::string& text) {
  for (Scope* s = scope_; s != nullptr; s = s->parent)
    if (Value* v = s->find(id)) return *v;
  const auto i = static_cast<std::size_t>(id);
  if (root_set_[i]) return root_[i];
  const Global g = prog_.globals[i];
  if (g != Global::kNone) {
    auto c = std::make_shared<CallableObj>();
    c->kind = CallKind::kGlobal;
    c->global = g;
    c->name = text;
    root_[i] = Value::object(Kind::kCallable, std::move(c));
    root_set_[i] = 1;
    return root_[i];
  }
  (void)text;
  return prog_.undefined_names[i];
}

Value Interp::apply_filter(int filter, const Value& operand, std::vector<Value> args, Kwargs kwargs) {
  return run_filter(*this, static_cast<Filter>(filter), operand, args, kwargs);
}

bool Interp::apply_test(int test, const Value& operand, std::vector<Value> args, Kwargs kwargs) {
  return run_test(*this, static_cast<Test>(test), operand, args, kwargs);
}

}  // namespace stoker::jinja::detail
