#include "stoker/jinja/detail/parser.h"

#include <optional>
#include <unordered_map>

namespace stoker::jinja::detail {
namespace {

// Statement contexts that restrict what may appear inside them.
struct Ctx {
  int loops = 0;           // enclosing for loops (break/continue)
  bool buffered = false;   // inside a macro/call/set/filter block (output is not top-level)
  bool top = true;         // macro definitions only here (top level, or ifs at top level)
};

class Parser {
 public:
  Parser(Lexed lexed, const ParseLimits& limits) : limits_(limits) {
    prog_ = std::make_unique<Program>();
    prog_->lexed = std::move(lexed);
    toks_ = &prog_->lexed.tokens;
  }

  Result<std::unique_ptr<Program>> run() {
    prog_->id_loop = intern("loop");
    prog_->id_caller = intern("caller");
    prog_->id_varargs = intern("varargs");
    prog_->id_kwargs = intern("kwargs");
    Ctx ctx;
    std::string end;
    prog_->body = body(ctx, {}, &end);
    if (err_) return std::move(*err_);
    for (std::size_t i = 0; i < prog_->names.size(); ++i)
      prog_->ids.emplace(prog_->names[i], static_cast<int>(i));
    prog_->globals.reserve(prog_->names.size());
    for (const auto& n : prog_->names) prog_->globals.push_back(find_global(n));
    for (const auto& n : prog_->names) {
      prog_->methods.push_back(method_ids(n));
      prog_->undefined_names.push_back(Value::undefined("'" + n + "' is undefined"));
      prog_->undefined_dict_attrs.push_back(Value::undefined("'dict object' has no attribute '" + n + "'"));
    }
    return std::move(prog_);
  }

 private:
  // ---- token helpers --------------------------------------------------------------------
  const Token& cur() const { return (*toks_)[i_]; }
  const Token& peek(std::size_t k = 1) const {
    return (*toks_)[std::min(i_ + k, toks_->size() - 1)];
  }
  Pos pos() const { return prog_->lexed.pos_of(cur().offset); }
  bool is_op(const char* op) const { return cur().type == Tok::kOp && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == Tok::kName && cur().text == n; }
  void advance() {
    if (i_ + 1 < toks_->size()) ++i_;
  }
  std::string describe(const Token& t) const {
    switch (t.type) {
      case Tok::kData: return "template data";
      case Tok::kVarBegin: return "'{{'";
      case Tok::kVarEnd: return "end of print statement";
      case Tok::kBlockBegin: return "'{%'";
      case Tok::kBlockEnd: return "end of statement block";
      case Tok::kName: return "'" + t.text + "'";
      case Tok::kString: return "string";
      case Tok::kInt: return "integer";
      case Tok::kFloat: return "float";
      case Tok::kOp: return "'" + t.text + "'";
      case Tok::kEof: return "end of template";
    }
    return "token";
  }
  std::nullptr_t fail(const std::string& what) { return fail_at(cur().offset, what); }
  std::nullptr_t fail_at(std::uint32_t offset, const std::string& what) {
    if (!err_) {
      const Pos p = prog_->lexed.pos_of(offset);
      err_ = invalid_argument("template error at " + std::to_string(p.line) + ":" +
                              std::to_string(p.col) + ": " + what);
    }
    return nullptr;
  }
  bool expect_op(const char* op) {
    if (is_op(op)) {
      advance();
      return true;
    }
    fail(std::string("expected '") + op + "', got " + describe(cur()));
    return false;
  }
  bool expect(Tok t, const char* what) {
    if (cur().type == t) {
      advance();
      return true;
    }
    fail(std::string("expected ") + what + ", got " + describe(cur()));
    return false;
  }
  int intern(std::string_view n) {
    auto it = ids_.find(std::string(n));
    if (it != ids_.end()) return it->second;
    const int id = static_cast<int>(prog_->names.size());
    prog_->names.emplace_back(n);
    ids_.emplace(std::string(n), id);
    return id;
  }
  struct Depth {
    Parser* p;
    explicit Depth(Parser* parser) : p(parser) { ++p->depth_; }
    ~Depth() { --p->depth_; }
  };
  bool too_deep() {
    if (depth_ > limits_.max_nesting) {
      fail("template nests deeper than " + std::to_string(limits_.max_nesting) + " levels");
      return true;
    }
    return false;
  }

  // ---- statements -----------------------------------------------------------------------
  // Parses until a block tag named in `ends` (left unconsumed, its name in *end) or EOF.
  Body body(const Ctx& ctx, std::initializer_list<const char*> ends, std::string* end) {
    Body out;
    Depth d(this);
    if (too_deep()) return out;
    while (!err_) {
      const Token& t = cur();
      if (t.type == Tok::kEof) {
        if (ends.size() > 0) {
          std::string want;
          for (const char* e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
          fail("unexpected end of template, expected " + want);
        }
        return out;
      }
      if (t.type == Tok::kData) {
        auto s = std::make_unique<Stmt>(StmtKind::kText, pos());
        s->text = t.text;
        out.push_back(std::move(s));
        advance();
        continue;
      }
      if (t.type == Tok::kVarBegin) {
        auto s = std::make_unique<Stmt>(StmtKind::kPrint, pos());
        advance();
        s->expr = tuple_expr(true, {}, false);
        if (err_ || !expect(Tok::kVarEnd, "end of print statement")) return out;
        out.push_back(std::move(s));
        continue;
      }
      if (t.type != Tok::kBlockBegin) {
        fail("unexpected " + describe(t));
        return out;
      }
      const Token& tag = peek();
      if (tag.type != Tok::kName) {
        i_ += 1;
        fail("tag name expected");
        return out;
      }
      for (const char* e : ends) {
        if (tag.text == e) {
          *end = e;
          return out;
        }
      }
      advance();  // the {%
      StmtPtr s = statement(ctx);
      if (err_) return out;
      if (s) out.push_back(std::move(s));
    }
    return out;
  }

  // After `{% name`: consumes the closing %} unless told otherwise.
  bool close() { return expect(Tok::kBlockEnd, "end of statement block"); }
  void end_tag(const char* /*name*/) {  // `{% endX %}` after body() stopped on it
    advance();  // {%
    advance();  // endX
    close();
  }

  StmtPtr statement(const Ctx& ctx) {
    const Pos p = pos();
    const std::string tag = cur().text;
    const std::uint32_t at = cur().offset;
    advance();
    if (tag == "if") return if_stmt(ctx, p);
    if (tag == "for") return for_stmt(ctx, p);
    if (tag == "set") return set_stmt(ctx, p);
    if (tag == "macro") return macro_stmt(ctx, p, at);
    if (tag == "call") return call_stmt(ctx, p);
    if (tag == "filter") return filter_stmt(ctx, p);
    if (tag == "with") return with_stmt(ctx, p);
    if (tag == "print") {
      auto s = std::make_unique<Stmt>(StmtKind::kPrint, p);
      s->expr = tuple_expr(true, {}, false);
      if (err_ || !close()) return nullptr;
      return s;
    }
    if (tag == "break" || tag == "continue") {
      if (ctx.loops == 0) return fail_at(at, "'" + tag + "' outside of a loop");
      if (!close()) return nullptr;
      return std::make_unique<Stmt>(tag == "break" ? StmtKind::kBreak : StmtKind::kContinue, p);
    }
    if (tag == "generation") return generation_stmt(ctx, p, at);
    if (tag == "include" || tag == "extends" || tag == "import" || tag == "from" ||
        tag == "block" || tag == "autoescape" || tag == "trans" || tag == "pluralize")
      return fail_at(at, "the '" + tag + "' tag is not supported by stoker (a chat template "
                         "has no loader; Hugging Face's environment cannot resolve it either)");
    return fail_at(at, "encountered unknown tag '" + tag + "'");
  }

  StmtPtr if_stmt(const Ctx& ctx, Pos p) {
    auto s = std::make_unique<Stmt>(StmtKind::kIf, p);
    Ctx inner = ctx;
    while (true) {
      s->conds.push_back(tuple_expr(false, {}, false));
      if (err_ || !close()) return nullptr;
      std::string end;
      s->bodies.push_back(body(inner, {"elif", "else", "endif"}, &end));
      if (err_) return nullptr;
      advance();  // {%
      advance();  // the tag name
      if (end == "elif") continue;
      if (end == "else") {
        if (!close()) return nullptr;
        s->bodies.push_back(body(inner, {"endif"}, &end));
        if (err_) return nullptr;
        end_tag("endif");
      } else {
        close();
      }
      return err_ ? nullptr : std::move(s);
    }
  }

  bool assign_target(Target* t, bool with_namespace, const char* end_name) {
    const bool paren = is_op("(");
    if (paren) advance();
    while (true) {
      if (cur().type != Tok::kName) {
        fail("expected a name to assign to, got " + describe(cur()));
        return false;
      }
      const std::string n = cur().text;
      if (n == "true" || n == "false" || n == "none" || n == "True" || n == "False" || n == "None") {
        fail("can't assign to '" + n + "'");
        return false;
      }
      advance();
      if (with_namespace && is_op(".") && t->names.empty()) {
        advance();
        if (cur().type != Tok::kName) {
          fail("expected an attribute name after '.'");
          return false;
        }
        t->names.push_back(intern(n));
        t->texts.push_back(n);
        t->ns_attr = intern(cur().text);
        t->ns_attr_text = cur().text;
        advance();
        return true;
      }
      t->names.push_back(intern(n));
      t->texts.push_back(n);
      if (!is_op(",")) break;
      t->tuple = true;
      advance();
      if ((paren && is_op(")")) || (end_name != nullptr && is_name(end_name)) || is_op("=")) break;
    }
    if (paren) {
      if (!expect_op(")")) return false;
      t->tuple = true;
    }
    return true;
  }

  StmtPtr for_stmt(const Ctx& ctx, Pos p) {
    auto s = std::make_unique<Stmt>(StmtKind::kFor, p);
    if (!assign_target(&s->target, false, "in")) return nullptr;
    if (!is_name("in")) return fail("expected 'in', got " + describe(cur()));
    advance();
    s->expr = tuple_expr(false, {"recursive"}, false);
    if (err_) return nullptr;
    if (is_name("if")) {
      advance();
      s->cond = expression(true);
      if (err_) return nullptr;
    }
    if (is_name("recursive")) return fail("recursive for loops are not supported by stoker");
    if (!close()) return nullptr;
    Ctx inner = ctx;
    inner.loops += 1;
    inner.top = false;
    std::string end;
    s->bodies.push_back(body(inner, {"else", "endfor"}, &end));
    if (err_) return nullptr;
    if (end == "else") {
      advance();
      advance();
      if (!close()) return nullptr;
      Ctx outer = ctx;
      outer.top = false;
      s->bodies.push_back(body(outer, {"endfor"}, &end));
      if (err_) return nullptr;
    }
    end_tag("endfor");
    return err_ ? nullptr : std::move(s);
  }

  StmtPtr set_stmt(const Ctx& ctx, Pos p) {
    Target target;
    if (!assign_target(&target, true, nullptr)) return nullptr;
    if (is_op("=")) {
      advance();
      auto s = std::make_unique<Stmt>(StmtKind::kSet, p);
      s->target = std::move(target);
      s->expr = tuple_expr(true, {}, false);
      if (err_ || !close()) return nullptr;
      return s;
    }
    if (target.tuple) return fail("expected '=' after a tuple of names");
    auto s = std::make_unique<Stmt>(StmtKind::kSetBlock, p);
    s->target = std::move(target);
    if (!filter_chain(&s->filters, false) || !close()) return nullptr;
    Ctx inner = ctx;
    inner.buffered = true;
    inner.top = false;
    std::string end;
    s->bodies.push_back(body(inner, {"endset"}, &end));
    if (err_) return nullptr;
    end_tag("endset");
    return err_ ? nullptr : std::move(s);
  }

  bool signature(MacroDef* m) {
    if (!expect_op("(")) return false;
    bool defaults = false;
    while (!is_op(")")) {
      if (!m->params.empty() && !expect_op(",")) return false;
      if (is_op(")")) break;
      if (cur().type != Tok::kName) {
        fail("expected a parameter name, got " + describe(cur()));
        return false;
      }
      MacroParam param;
      param.text = cur().text;
      param.name = intern(param.text);
      advance();
      if (is_op("=")) {
        advance();
        param.default_value = expression(true);
        if (err_) return false;
        defaults = true;
      } else if (defaults) {
        fail("non-default argument follows default argument");
        return false;
      }
      m->params.push_back(std::move(param));
    }
    advance();
    return true;
  }

  // Which of caller/varargs/kwargs a macro body reads (jinja2 only passes them when used).
  void scan_names(const Body& b, MacroDef* m);
  void scan_expr(const Expr* e, MacroDef* m);

  StmtPtr macro_stmt(const Ctx& ctx, Pos p, std::uint32_t at) {
    if (!ctx.top)
      return fail_at(at, "macros defined inside loops, macros or blocks are not supported by "
                         "stoker (define them at the top level)");
    auto s = std::make_unique<Stmt>(StmtKind::kMacro, p);
    s->macro = std::make_unique<MacroDef>();
    MacroDef* m = s->macro.get();
    m->pos = p;
    if (cur().type != Tok::kName) return fail("expected a macro name");
    m->text = cur().text;
    m->name = intern(m->text);
    advance();
    if (!signature(m) || !close()) return nullptr;
    Ctx inner;
    inner.buffered = true;
    inner.top = false;
    std::string end;
    m->body = body(inner, {"endmacro"}, &end);
    if (err_) return nullptr;
    end_tag("endmacro");
    scan_names(m->body, m);
    prog_->macros.push_back(m);
    return err_ ? nullptr : std::move(s);
  }

  StmtPtr call_stmt(const Ctx& ctx, Pos p) {
    auto s = std::make_unique<Stmt>(StmtKind::kCallBlock, p);
    s->macro = std::make_unique<MacroDef>();
    s->macro->pos = p;
    if (is_op("(") && !signature(s->macro.get())) return nullptr;
    const std::uint32_t at = cur().offset;
    s->expr = expression(true);
    if (err_) return nullptr;
    if (s->expr->kind != ExprKind::kCall) return fail_at(at, "expected a call after 'call'");
    if (!close()) return nullptr;
    Ctx inner = ctx;
    inner.buffered = true;
    inner.top = false;
    inner.loops = 0;
    std::string end;
    s->macro->body = body(inner, {"endcall"}, &end);
    if (err_) return nullptr;
    end_tag("endcall");
    scan_names(s->macro->body, s->macro.get());
    return err_ ? nullptr : std::move(s);
  }

  StmtPtr filter_stmt(const Ctx& ctx, Pos p) {
    auto s = std::make_unique<Stmt>(StmtKind::kFilterBlock, p);
    if (!filter_chain(&s->filters, true) || !close()) return nullptr;
    Ctx inner = ctx;
    inner.buffered = true;
    inner.top = false;
    std::string end;
    s->bodies.push_back(body(inner, {"endfilter"}, &end));
    if (err_) return nullptr;
    end_tag("endfilter");
    return err_ ? nullptr : std::move(s);
  }

  StmtPtr with_stmt(const Ctx& ctx, Pos p) {
    auto s = std::make_unique<Stmt>(StmtKind::kWith, p);
    while (cur().type != Tok::kBlockEnd) {
      if (!s->withs.empty() && !expect_op(",")) return nullptr;
      Target t;
      if (!assign_target(&t, false, nullptr) || !expect_op("=")) return nullptr;
      ExprPtr e = expression(true);
      if (err_) return nullptr;
      s->withs.emplace_back(std::move(t), std::move(e));
    }
    if (!close()) return nullptr;
    Ctx inner = ctx;
    inner.top = false;
    std::string end;
    s->bodies.push_back(body(inner, {"endwith"}, &end));
    if (err_) return nullptr;
    end_tag("endwith");
    return err_ ? nullptr : std::move(s);
  }

  StmtPtr generation_stmt(const Ctx& ctx, Pos p, std::uint32_t at) {
    // Hugging Face measures a generation block's start as the length of the output already
    // yielded at the top level; inside a macro, call, set or filter block (or another
    // generation block) that is not where the text lands, so its labels would be wrong.
    if (ctx.buffered)
      return fail_at(at, "{% generation %} inside a macro, call, set, filter or generation "
                         "block: Hugging Face records a wrong span for it (refused rather than "
                         "mislabelled)");
    if (!close()) return nullptr;
    auto s = std::make_unique<Stmt>(StmtKind::kGeneration, p);
    Ctx inner = ctx;
    inner.buffered = true;
    inner.top = false;
    inner.loops = 0;  // the body is a caller (a function in jinja2): no break/continue out of it
    std::string end;
    s->bodies.push_back(body(inner, {"endgeneration"}, &end));
    if (err_) return nullptr;
    end_tag("endgeneration");
    prog_->has_generation = true;
    return err_ ? nullptr : std::move(s);
  }

  // ---- expressions ----------------------------------------------------------------------
  bool tuple_end(std::initializer_list<const char*> extra) const {
    const Token& t = cur();
    if (t.type == Tok::kVarEnd || t.type == Tok::kBlockEnd || t.type == Tok::kEof) return true;
    if (t.type == Tok::kOp && t.text == ")") return true;
    for (const char* e : extra)
      if (t.type == Tok::kName && t.text == e) return true;
    return false;
  }

  ExprPtr tuple_expr(bool with_cond, std::initializer_list<const char*> extra, bool parens) {
    const Pos p = pos();
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty() && !expect_op(",")) return nullptr;
      if (tuple_end(extra)) break;
      args.push_back(expression(with_cond));
      if (err_) return nullptr;
      if (is_op(","))
        is_tuple = true;
      else
        break;
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!parens) return fail("expected an expression, got " + describe(cur()));
    }
    auto e = std::make_unique<Expr>(ExprKind::kTuple, p);
    e->items = std::move(args);
    return e;
  }

  ExprPtr expression(bool with_cond) {
    Depth d(this);
    if (too_deep()) return nullptr;
    return with_cond ? cond_expr() : or_expr();
  }

  ExprPtr cond_expr() {
    ExprPtr e = or_expr();
    while (!err_ && is_name("if")) {
      const Pos p = pos();
      advance();
      ExprPtr test = or_expr();
      if (err_) return nullptr;
      ExprPtr other;
      if (is_name("else")) {
        advance();
        other = cond_expr();
        if (err_) return nullptr;
      }
      auto c = std::make_unique<Expr>(ExprKind::kCond, p);
      c->a = std::move(test);
      c->b = std::move(e);
      c->c = std::move(other);
      e = std::move(c);
    }
    return err_ ? nullptr : std::move(e);
  }

  ExprPtr binary(ExprKind k, Pos p, ExprPtr a, ExprPtr b) {
    auto e = std::make_unique<Expr>(k, p);
    e->a = std::move(a);
    e->b = std::move(b);
    return e;
  }

  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (!err_ && is_name("or")) {
      const Pos p = pos();
      advance();
      ExprPtr r = and_expr();
      if (err_) return nullptr;
      e = binary(ExprKind::kOr, p, std::move(e), std::move(r));
    }
    return err_ ? nullptr : std::move(e);
  }

  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (!err_ && is_name("and")) {
      const Pos p = pos();
      advance();
      ExprPtr r = not_expr();
      if (err_) return nullptr;
      e = binary(ExprKind::kAnd, p, std::move(e), std::move(r));
    }
    return err_ ? nullptr : std::move(e);
  }

  ExprPtr not_expr() {
    if (is_name("not")) {
      const Pos p = pos();
      advance();
      Depth d(this);
      if (too_deep()) return nullptr;
      ExprPtr inner = not_expr();
      if (err_) return nullptr;
      auto e = std::make_unique<Expr>(ExprKind::kNot, p);
      e->a = std::move(inner);
      return e;
    }
    return compare();
  }

  ExprPtr compare();
  ExprPtr math1();
  ExprPtr concat();
  ExprPtr math2();
  ExprPtr power();
  ExprPtr unary(bool with_filter);
  ExprPtr primary();
  ExprPtr postfix(ExprPtr node);
  ExprPtr filter_expr(ExprPtr node);
  ExprPtr subscript(ExprPtr node);
  ExprPtr subscribed();
  bool call_args(Expr* call);
  ExprPtr filter_one(ExprPtr node);
  ExprPtr filter_chain_item(ExprPtr node);
  ExprPtr test(ExprPtr node);
  bool filter_chain(std::vector<ExprPtr>* out, bool required);

  const ParseLimits& limits_;
  std::unique_ptr<Program> prog_;
  const std::vector<Token>* toks_ = nullptr;
  std::size_t i_ = 0;
  int depth_ = 0;
  std::optional<Error> err_;
  std::unordered_map<std::string, int> ids_;
};

// The expression half of the parser (and the macro-body name scan): its own file for size.
#include "stoker/jinja/detail/parser_expr.inc"

}  // namespace

int Program::id(std::string_view name) const {
  const auto it = ids.find(name);
  return it == ids.end() ? -1 : it->second;
}

Result<std::unique_ptr<Program>> parse_program(std::string_view source, const ParseLimits& limits) {
  if (source.size() > limits.max_source_bytes)
    return invalid_argument("template is " + std::to_string(source.size()) +
                            " bytes; the limit is " + std::to_string(limits.max_source_bytes));
  STOKER_ASSIGN_OR_RETURN(Lexed lexed, lex(source));
  return Parser(std::move(lexed), limits).run();
}

}  // namespace stoker::jinja::detail
