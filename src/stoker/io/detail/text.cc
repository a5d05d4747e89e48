#include "stoker/io/detail/text.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "stoker/base/elide.h"

namespace stoker::io::detail {

std::string percent_encode(std::string_view s, bool keep_slash) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string xml_text(std::string_view xml, std::string_view name) {
  const std::string open = "<" + std::string(name) + ">", close = "</" + std::string(name) + ">";
  std::size_t a = xml.find(open);
  if (a == std::string_view::npos) return "";
  a += open.size();
  const std::size_t b = xml.find(close, a);
  if (b == std::string_view::npos) return "";
  const std::string_view raw = xml.substr(a, b - a);
  // The five predefined entities (a role ARN path or an error message may hold '&').
  static const std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  std::string out;
  for (std::size_t i = 0; i < raw.size();) {
    bool replaced = false;
    for (const auto& [entity, c] : kEntities) {
      if (raw.substr(i, entity.size()) == entity) {
        out += c;
        i += entity.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += raw[i++];
  }
  return out;
}

std::string server_text(std::string_view text, std::size_t max) {
  // Only the first bytes can be shown: never scan (or copy) more than a few times `max`.
  text = text.substr(0, std::max<std::size_t>(max, 64) * 4);
  std::string out;
  bool space = true;  // drops leading whitespace and collapses runs
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f || c == ' ') {
      if (!space) out += ' ';
      space = true;
      ++i;
      continue;
    }
    space = false;
    // A UTF-8 sequence: its length from the lead byte, every following byte 10xxxxxx.
    const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = n > 0 && i + n <= text.size();
    for (std::size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (!ok) {
      out += '?';
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return elide_middle(out, max);
}

}  // namespace stoker::io::detail
