// The Jinja sources of the chat templates stoker renders natively (data/templates/*.jinja,
// compiled in at build time), and the rule that says whether a model folder's template is one of
// them. Two sources count as the same template when Jinja2 — the engine transformers renders chat
// templates with — lexes the same text from both: before anything else its lexer turns "\r\n" and
// "\r" into "\n" and drops one trailing newline (transformers leaves keep_trailing_newline off), so
// sources equal after that step compile to the same program and render the same for every input.
// Nothing looser (whitespace, comments, trim_blocks effects) is accepted. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "stoker/text/chat_template.h"

namespace stoker::text {

// The shipped template's bytes, as in data/templates/.
std::string_view native_template_source(TemplateKind kind);

// Jinja2's own source normalisation (lexer.tokeniter): every newline sequence becomes "\n", and
// one trailing newline, if any, is dropped.
std::string jinja_normalized_source(std::string_view source);

// The native template `source` is, by the rule above; nullopt for any other template.
std::optional<TemplateKind> native_template_kind(std::string_view source);

// Where template `found` first departs from template `expected`, for error messages, e.g.
// `line 2, column 11: expected "…system\nYou are a helpful…", found "…system\nYou are a pirate…"`
// (compared after normalisation; 1-based line and byte column; excerpts escaped, cut on UTF-8
// boundaries). "no difference" when the two are the same template.
std::string first_template_difference(std::string_view expected, std::string_view found);

}  // namespace stoker::text
