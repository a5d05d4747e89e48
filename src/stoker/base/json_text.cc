#include "stoker/base/json_text.h"

#include "stoker/base/printable.h"

namespace stoker {

void append_json_string(std::string& out, std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else if (c < 0x80) {
          out += ch;
        } else if (const std::size_t n = utf8_length_at(text, i); n >= 2) {
          out.append(text.substr(i, n));
          i += n - 1;
        } else {
          // Not UTF-8 (a file name's raw bytes): "\xNN" as text, so the line stays valid JSON.
          out += "\\\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        }
    }
  }
  out += '"';
}

std::string json_string(std::string_view text) {
  std::string s;
  append_json_string(s, text);
  return s;
}

}  // namespace stoker
