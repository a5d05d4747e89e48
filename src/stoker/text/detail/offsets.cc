#include "stoker/text/detail/offsets.h"

#include <algorithm>

#include "stoker/text/detail/unicode.h"

namespace stoker::text::detail {

TextSpan OffsetMap::operator()(std::size_t b, std::size_t e) const {
  if (chunks.empty()) return {base + b, base + e};
  auto at = [&](std::size_t pos, bool end) -> std::size_t {
    // The chunk holding normalised byte pos (an end: byte pos - 1).
    const std::size_t key = end && pos > 0 ? pos - 1 : pos;
    auto it = std::upper_bound(chunks.begin(), chunks.end(), key,
                               [](std::size_t k, const Chunk& c) { return k < c.ne; });
    if (it == chunks.end()) return base + chunks.back().oe;
    if (it->same) return base + it->ob + (pos - it->nb);
    if (end) return base + (pos == it->nb ? it->ob : it->oe);
    return base + it->ob;
  };
  return {at(b, false), std::max(at(b, false), at(e, true))};
}

std::vector<OffsetMap::Chunk> nfc_chunks(std::string_view s, const std::string& normalized) {
  const ClassTable& t = class_table();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::vector<std::size_t> cuts{0};
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp;
    const int len = decode_utf8(p + i, &cp);
    const std::uint8_t f = char_flags(t, cp);
    if (i > 0 && (f & (kNfcStable | kReferenceStarter))) cuts.push_back(i);
    i += static_cast<std::size_t>(len);
    if ((f & kReferenceStarter) && i < s.size()) cuts.push_back(i);
  }
  cuts.push_back(s.size());
  std::vector<OffsetMap::Chunk> chunks;
  std::string rebuilt;
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    if (cuts[k] == cuts[k + 1]) continue;
    const std::string_view part = s.substr(cuts[k], cuts[k + 1] - cuts[k]);
    const std::string n = is_nfc_quick(part) ? std::string(part) : nfc(part);
    const bool same = n == part;
    const std::size_t nb = rebuilt.size();
    rebuilt += n;
    if (same && !chunks.empty() && chunks.back().same) {
      chunks.back().oe = cuts[k + 1];
      chunks.back().ne = rebuilt.size();
    } else {
      chunks.push_back({cuts[k], cuts[k + 1], nb, rebuilt.size(), same});
    }
  }
  if (rebuilt != normalized) return {{0, s.size(), 0, normalized.size(), false}};
  return chunks;
}

}  // namespace stoker::text::detail
