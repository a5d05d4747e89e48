// Tokens -> the Program the interpreter walks: jinja2 3.1's grammar (expression precedence,
// filters/tests/calls, tuples, slices, adjacent string literals) and the statements Hugging Face
// chat templates use (if/for/set/macro/call/filter/with/raw, loop controls, {% generation %}).
// Everything else — include/extends/import/block/autoescape, `do`, unknown filters and tests —
// fails here, at load, with line:column: never a silent mis-render at run time.
// Pure function; the Program is immutable afterwards and shared by every render.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/jinja/detail/ast.h"
#include "stoker/jinja/detail/builtins.h"
#include "stoker/jinja/detail/lexer.h"

namespace stoker::jinja::detail {

struct Program {
  Lexed lexed;                      // the normalised source and its line index (positions)
  Body body;
  std::vector<std::string> names;   // interned variable/attribute names
  std::vector<Global> globals;      // per name: the global function of that name, if any
  std::vector<MethodIds> methods;   // per name: the str/dict/list method of that name, if any
  // Per name, built once: the Undefined of an unset variable and of a missing dict key read as
  // an attribute (templates probe optional fields constantly: no allocation per probe).
  std::vector<Value> undefined_names, undefined_dict_attrs;
  std::vector<const MacroDef*> macros;  // every {% macro %} (for introspection)
  bool has_generation = false;
  int id_loop = -1, id_caller = -1, id_varargs = -1, id_kwargs = -1;
  std::unordered_map<std::string_view, int> ids;  // names -> id (views into `names`)
  int id(std::string_view name) const;  // -1 when the template never names it
};

struct ParseLimits {
  std::size_t max_source_bytes = 4u << 20;
  int max_nesting = 200;  // statements + expressions nested in each other
};

Result<std::unique_ptr<Program>> parse_program(std::string_view source, const ParseLimits& limits);

}  // namespace stoker::jinja::detail
