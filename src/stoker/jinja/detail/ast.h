// The parsed form of a template: expression and statement nodes, built once by the parser and
// then only read (a Template is rendered by many threads at once). Every node carries its source
// position for error messages. Names are interned to small integers at parse time so that the
// interpreter looks variables up by index, never by string.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stoker/jinja/value.h"

namespace stoker::jinja::detail {

struct Pos {
  int line = 1;
  int col = 1;
};

enum class ExprKind : std::uint8_t {
  kConst, kName, kList, kTuple, kDict, kNot, kNeg, kPos, kBinary, kAnd, kOr, kConcat, kCompare,
  kCond, kGetattr, kGetitem, kSlice, kCall, kFilter, kTest,
};

enum class BinOp : std::uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };
enum class CmpOp : std::uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Kwarg {
  int name = -1;  // interned
  std::string text;
  ExprPtr value;
};

struct Expr {
  ExprKind kind;
  Pos pos;
  Value value;                 // kConst
  int name = -1;               // kName (interned id), kGetattr (attribute id), kFilter/kTest (builtin id)
  std::string text;            // kName/kGetattr: the name; kFilter/kTest: the filter/test name
  BinOp bin = BinOp::kAdd;
  ExprPtr a, b, c;             // operands: unary a; binary a,b; cond a(test) b(then) c(else);
                               // getattr a; getitem a[b]; slice a[b:c:d]; filter/test a = operand
  ExprPtr d;                   // slice step
  std::vector<ExprPtr> items;  // list/tuple/concat/dict (key,value pairs flattened)/call args
  std::vector<CmpOp> ops;      // compare: a op0 items[0] op1 items[1] ...
  std::vector<Kwarg> kwargs;   // call/filter/test keyword arguments
  ExprPtr dyn_args, dyn_kwargs;  // *args, **kwargs in a call
  explicit Expr(ExprKind k, Pos p) : kind(k), pos(p) {}
};

enum class StmtKind : std::uint8_t {
  kText, kPrint, kIf, kFor, kSet, kSetBlock, kMacro, kCallBlock, kFilterBlock, kWith, kBreak,
  kContinue, kGeneration,
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Target {      // assignment / loop target
  std::vector<int> names;         // one name, or a tuple of names to unpack
  std::vector<std::string> texts;
  bool tuple = false;
  int ns_attr = -1;               // `ns.attr = ...`: names[0] is the namespace, ns_attr the attribute
  std::string ns_attr_text;
};

struct MacroParam {
  int name = -1;
  std::string text;
  ExprPtr default_value;  // may be null
};

struct MacroDef {           // shared by {% macro %} and the caller of {% call %}
  int name = -1;            // -1 for a call block's caller
  std::string text;
  std::vector<MacroParam> params;
  Body body;
  bool uses_caller = false, uses_varargs = false, uses_kwargs = false;
  Pos pos;
};

struct Stmt {
  StmtKind kind;
  Pos pos;
  std::string text;                 // kText
  ExprPtr expr;                     // kPrint, kSet, kFor (iterable), kCallBlock (the call)
  ExprPtr cond;                     // kFor's `if` filter
  std::vector<ExprPtr> conds;       // kIf: condition per branch
  std::vector<Body> bodies;         // kIf: one body per branch (+ else); kFor: body, else
  Target target;                    // kSet, kSetBlock, kFor
  std::vector<ExprPtr> filters;     // kSetBlock / kFilterBlock: filter chain (operand null)
  std::unique_ptr<MacroDef> macro;  // kMacro; kCallBlock's caller
  std::vector<std::pair<Target, ExprPtr>> withs;  // kWith
  explicit Stmt(StmtKind k, Pos p) : kind(k), pos(p) {}
};

}  // namespace stoker::jinja::detail
