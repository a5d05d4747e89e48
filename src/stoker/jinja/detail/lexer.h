// Template source -> tokens, with jinja2 3.1's whitespace rules under Hugging Face's settings:
// newlines normalised to \n and one trailing newline dropped (keep_trailing_newline off),
// trim_blocks (the first \n after %} or #} is removed; `+%}` keeps it), lstrip_blocks (spaces and
// tabs before {% or {# at a line start are removed; `{%+` keeps them), `{%-`/`-%}` strip all
// (Unicode) whitespace, {% raw %} passes text through, string literals decoded with Python's
// escapes. Brackets are balanced inside tags, so `}}` closes a tag only at depth 0.
// Errors name line:column. Pure function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/jinja/detail/ast.h"

namespace stoker::jinja::detail {

enum class Tok : std::uint8_t {
  kData,        // template text
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,      // text = decoded value
  kInt,         // ival
  kFloat,       // fval
  kOp,          // text = the operator
  kEof,
};

struct Token {
  Tok type;
  std::uint32_t offset = 0;  // byte offset of the token in the normalised source
  std::string text;
  std::int64_t ival = 0;
  double fval = 0;
};

struct Lexed {
  std::string source;  // normalised source (newlines, trailing newline)
  std::vector<Token> tokens;
  std::vector<std::uint32_t> line_starts;  // byte offset of each line's start
  Pos pos_of(std::uint32_t offset) const;  // 1-based line and column (code points)
};

Result<Lexed> lex(std::string_view source);

}  // namespace stoker::jinja::detail
