#include "stoker/jinja/assistant_mask.h"

#include <algorithm>

namespace stoker::jinja {
namespace {

bool continuation(std::string_view s, std::size_t i) {
  return i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80;
}

// Widens [begin, end) to whole UTF-8 characters of `text`.
Span widen(std::string_view text, Span o) {
  std::size_t b = std::min(o.begin, text.size());
  while (b > 0 && continuation(text, b)) --b;
  std::size_t e = std::min(o.end, text.size());
  while (e < text.size() && continuation(text, e)) ++e;
  return Span{b, std::max(b, e)};
}

}  // namespace

std::vector<std::uint8_t> assistant_mask(std::string_view text, std::span<const Span> spans,
                                         std::span<const Span> token_offsets, MaskRule rule) {
  const std::size_t n = token_offsets.size();
  std::vector<std::uint8_t> mask(n, 0);
  std::vector<Span> off(n);
  for (std::size_t t = 0; t < n; ++t) off[t] = widen(text, token_offsets[t]);
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  // Token offsets in order (begins and ends never decreasing, as a tokenizer gives them): the
  // first token covering pos is the first whose end is past pos, if it starts at or before pos
  // (a later one starts later still). Otherwise the scan transformers does.
  bool sorted = true;
  for (std::size_t t = 1; t < n && sorted; ++t)
    sorted = off[t - 1].begin <= off[t].begin && off[t - 1].end <= off[t].end;
  auto char_to_token = [&](std::size_t pos) {
    if (sorted) {
      const auto it = std::upper_bound(off.begin(), off.end(), pos,
                                       [](std::size_t p, const Span& o) { return p < o.end; });
      return it != off.end() && it->begin <= pos ? static_cast<std::size_t>(it - off.begin()) : kNone;
    }
    for (std::size_t t = 0; t < n; ++t)
      if (off[t].begin <= pos && pos < off[t].end) return t;
    return kNone;
  };
  if (rule == MaskRule::kTokenizer) {
    for (const Span& s : spans) {
      const std::size_t first = char_to_token(s.begin);
      // end - 1 of an empty span at 0 is position -1 in Python: the last character.
      const std::size_t last = s.end == 0 ? (text.empty() ? kNone : char_to_token(text.size() - 1))
                                          : char_to_token(s.end - 1);
      if (first == kNone) break;  // transformers: "start_token is out of bounds maybe due to truncation"
      const std::size_t stop = (last == kNone || last == 0) ? n : last + 1;
      for (std::size_t t = first; t < stop && t < n; ++t) mask[t] = 1;
    }
    return mask;
  }
  std::vector<std::size_t> starts(n);
  for (std::size_t t = 0; t < n; ++t) starts[t] = off[t].begin;
  for (const Span& s : spans) {
    const auto start_pos = static_cast<std::size_t>(
        std::lower_bound(starts.begin(), starts.end(), s.begin) - starts.begin());
    const auto end_pos = static_cast<std::size_t>(
        std::lower_bound(starts.begin(), starts.end(), s.end) - starts.begin());
    if (start_pos >= n || !(off[start_pos].begin <= s.begin && s.begin < off[start_pos].end)) continue;
    const std::size_t stop = end_pos == 0 ? n : end_pos;
    for (std::size_t t = start_pos; t < stop && t < n; ++t) mask[t] = 1;
  }
  return mask;
}

}  // namespace stoker::jinja
