// Text from data made safe for a terminal or a log line. A record's id, a media path, a
// manifest name or a server's message can hold ESC sequences (recolour, move the cursor, retitle
// the terminal), a "\n{fake json}" that forges a log line, or bytes that are not UTF-8; printed
// raw they act on the reader's terminal or log parser. printable() keeps valid UTF-8 text as it is
// and writes the rest as visible escapes: \n \r \t, \xNN for other C0 controls, DEL and bytes
// that are not UTF-8, \u0085-style for C1 controls and the bidirectional overrides (U+202A-202E,
// U+2066-2069: "Trojan source" reordering). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace stoker {

std::string printable(std::string_view text);
void append_printable(std::string& out, std::string_view text);

// Length (2-4) of the well-formed UTF-8 sequence (RFC 3629: no overlongs, no surrogates, at most
// U+10FFFF) starting at text[i], 1 for ASCII, 0 when text[i] does not start one.
std::size_t utf8_length_at(std::string_view text, std::size_t i);

}  // namespace stoker
