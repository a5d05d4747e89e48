#include "stoker/base/printable.h"

#include <cstdint>
#include <cstdio>

namespace stoker {
namespace {

void hex_byte(std::string& out, unsigned char c) {
  static const char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

std::uint32_t decode(std::string_view t, std::size_t i, std::size_t n) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(t[i + k]); };
  if (n == 2) return (b(0) & 0x1Fu) << 6 | (b(1) & 0x3Fu);
  if (n == 3) return (b(0) & 0x0Fu) << 12 | (b(1) & 0x3Fu) << 6 | (b(2) & 0x3Fu);
  return (b(0) & 0x07u) << 18 | (b(1) & 0x3Fu) << 12 | (b(2) & 0x3Fu) << 6 | (b(3) & 0x3Fu);
}

bool hidden_code_point(std::uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) ||     // C1 controls (U+009B is a one-byte CSI)
         (cp >= 0x202A && cp <= 0x202E) ||  // bidi embeddings and overrides
         (cp >= 0x2066 && cp <= 0x2069);    // bidi isolates
}

}  // namespace

std::size_t utf8_length_at(std::string_view t, std::size_t i) {
  const auto c = static_cast<unsigned char>(t[i]);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range (RFC 3629 table)
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // at most U+10FFFF
  } else {
    return 0;
  }
  if (i + n > t.size()) return 0;
  const auto c1 = static_cast<unsigned char>(t[i + 1]);
  if (c1 < lo || c1 > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    const auto ck = static_cast<unsigned char>(t[i + k]);
    if (ck < 0x80 || ck > 0xBF) return 0;
  }
  return n;
}

void append_printable(std::string& out, std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c == '\n') { out += "\\n"; ++i; continue; }
    if (c == '\r') { out += "\\r"; ++i; continue; }
    if (c == '\t') { out += "\\t"; ++i; continue; }
    const std::size_t n = c < 0x80 ? 0 : utf8_length_at(text, i);
    if (n < 2) {  // other C0, DEL, or not UTF-8
      hex_byte(out, c);
      ++i;
      continue;
    }
    const std::uint32_t cp = decode(text, i, n);
    if (hidden_code_point(cp)) {
      char buf[12];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  append_printable(out, text);
  return out;
}

}  // namespace stoker
