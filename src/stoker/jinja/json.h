// JSON <-> Value with Python's json module semantics, so that a context read from a JSONL record
// renders exactly as transformers renders the same record after json.loads:
//   parse_json — ints stay ints (64-bit; larger is an error), floats are doubles, objects keep
//     key order (a repeated key keeps its first position, last value), NaN/Infinity accepted,
//     control characters in strings and lone surrogates refused, nesting bounded;
//   to_json — json.dumps as Hugging Face's `tojson` filter calls it: ensure_ascii=False,
//     separators (", ", ": ") (or (",", ": ") with an indent), insertion order, float repr.
// Pure functions, thread-safe. Errors: InvalidArgument with the byte offset / the reason.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "stoker/base/result.h"
#include "stoker/jinja/value.h"

namespace stoker::jinja {

Result<Value> parse_json(std::string_view text, int max_depth = 512);

struct JsonOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // None: one line; "" or "  ": newline + indent per level
  std::optional<std::string> item_separator, key_separator;  // default per json.dumps
  bool sort_keys = false;
};

// Errors: InvalidArgument "TypeError: Object of type Undefined is not JSON serializable", ...
Result<std::string> to_json(const Value& v, const JsonOptions& options = {});
Status append_json(std::string& out, const Value& v, const JsonOptions& options);

}  // namespace stoker::jinja
