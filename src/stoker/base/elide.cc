#include "stoker/base/elide.h"

#include <algorithm>

namespace stoker {
namespace {

bool continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The largest cut <= at that does not split a UTF-8 sequence (at most 3 steps back: a
// sequence is at most 4 bytes; a longer run of continuation bytes is not UTF-8 anyway).
std::size_t head_cut(std::string_view s, std::size_t at) {
  for (std::size_t back = 0; back < 4 && at > 0 && at < s.size(); ++back) {
    if (!continuation(static_cast<unsigned char>(s[at]))) break;
    --at;
  }
  return at;
}

// The smallest cut >= at that starts a character (at most 3 steps forward).
std::size_t tail_cut(std::string_view s, std::size_t at) {
  for (std::size_t fwd = 0; fwd < 4 && at < s.size(); ++fwd) {
    if (!continuation(static_cast<unsigned char>(s[at]))) break;
    ++at;
  }
  return at;
}

}  // namespace

std::string elide_middle(std::string_view text, std::size_t max) {
  max = std::max<std::size_t>(max, 64);
  if (text.size() <= max) return std::string(text);
  // The marker names at most 20 digits; reserve its longest form so the result fits `max`.
  const std::size_t marker_max = std::string_view("…[ bytes]…").size() + 20;
  const std::size_t keep = max - marker_max;
  const std::size_t head = head_cut(text, keep - keep / 2);
  const std::size_t tail = tail_cut(text, text.size() - keep / 2);
  std::string out(text.substr(0, head));
  out += "…[";
  out += std::to_string(tail - head);
  out += " bytes]…";
  out += text.substr(tail);
  return out;
}

}  // namespace stoker
