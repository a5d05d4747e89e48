// Minimal JSON text output for generated JSONL, error reports and the CLI's JSON lines: a quoted,
// escaped string (", \, control characters; UTF-8 passes through unchanged; a byte that is not
// UTF-8 is written as the text \xNN, so every line stays valid JSON), so the bytes are fully
// determined by the input. Pure function, thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace stoker {

// Appends `"text"` with JSON escapes to `out`.
void append_json_string(std::string& out, std::string_view text);
std::string json_string(std::string_view text);

}  // namespace stoker
