#include "stoker/io/detail/text.h"

#include <cctype>
#include <utility>

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

}  // namespace stoker::io::detail
