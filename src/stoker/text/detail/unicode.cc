#include "stoker/text/detail/unicode.h"

#include <oniguruma.h>
#include <utf8proc.h>

#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace stoker::text::detail {
namespace {

constexpr char32_t kMaxCp = 0x10FFFF;

// Letters and numbers assigned in Unicode 15.0, 15.1 and 16.0. Debian's Oniguruma (6.9.8) has
// Unicode 14 tables; the Oniguruma bundled in HF tokenizers (6.9.10, via the onig crate) has 16.0
// and classifies these as \p{L} / \p{N}. Without them a Split piece breaks differently around,
// e.g., CJK Extension H/I ideographs. (Whitespace did not change.) Checked by the parity test.
constexpr CpRange kNewLetters[] = {
    {0x1C89, 0x1C8A}, {0xA7CB, 0xA7CD}, {0xA7DA, 0xA7DC}, {0x105C0, 0x105F3}, {0x10D4A, 0x10D65},
    {0x10D6F, 0x10D85}, {0x10EC2, 0x10EC4}, {0x1123F, 0x11240}, {0x11380, 0x11389},
    {0x1138B, 0x1138B}, {0x1138E, 0x1138E}, {0x11390, 0x113B5}, {0x113B7, 0x113B7},
    {0x113D1, 0x113D1}, {0x113D3, 0x113D3}, {0x11BC0, 0x11BE0}, {0x11F02, 0x11F02},
    {0x11F04, 0x11F10}, {0x11F12, 0x11F33}, {0x1342F, 0x1342F}, {0x13441, 0x13446},
    {0x13460, 0x143FA}, {0x16100, 0x1611D}, {0x16D40, 0x16D6C}, {0x18CFF, 0x18CFF},
    {0x1B132, 0x1B132}, {0x1B155, 0x1B155}, {0x1DF25, 0x1DF2A}, {0x1E030, 0x1E06D},
    {0x1E4D0, 0x1E4EB}, {0x1E5D0, 0x1E5ED}, {0x1E5F0, 0x1E5F0}, {0x2B739, 0x2B739},
    {0x2EBF0, 0x2EE5D}, {0x31350, 0x323AF},
};
constexpr CpRange kNewNumbers[] = {
    {0x10D40, 0x10D49}, {0x116D0, 0x116E3}, {0x11BF0, 0x11BF9}, {0x11F50, 0x11F59},
    {0x16130, 0x16139}, {0x16D70, 0x16D79}, {0x1CCF0, 0x1CCF9}, {0x1D2C0, 0x1D2D3},
    {0x1E4F0, 0x1E4F9}, {0x1E5F1, 0x1E5FA},
};

std::string utf8proc_nfc(std::string_view s) {
  utf8proc_uint8_t* dst = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                    static_cast<utf8proc_ssize_t>(s.size()), &dst,
                                    static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) return std::string(s);  // only for invalid UTF-8, which callers repair first
  std::string out(reinterpret_cast<const char*>(dst), static_cast<std::size_t>(n));
  std::free(dst);
  return out;
}

int onig_ctype(const char* name) {
  auto* p = reinterpret_cast<const OnigUChar*>(name);
  return ONIGENC_PROPERTY_NAME_TO_CTYPE(ONIG_ENCODING_UTF8, const_cast<OnigUChar*>(p),
                                        const_cast<OnigUChar*>(p + std::strlen(name)));
}

// Word characters (\w) assigned in Unicode 15.1-16.0 that utf8proc 2.8 (Unicode 15.0) does not
// know: letters, digits and marks. Rust's regex-syntax (HF's single_word rule) has Unicode 16.
constexpr CpRange kNewWordChars[] = {
    {0x897, 0x897}, {0x1C89, 0x1C8A}, {0xA7CB, 0xA7CD}, {0xA7DA, 0xA7DC}, {0x105C0, 0x105F3},
    {0x10D40, 0x10D65}, {0x10D69, 0x10D6D}, {0x10D6F, 0x10D85}, {0x10EC2, 0x10EC4},
    {0x10EFC, 0x10EFC}, {0x11380, 0x11389}, {0x1138B, 0x1138B}, {0x1138E, 0x1138E},
    {0x11390, 0x113B5}, {0x113B7, 0x113C0}, {0x113C2, 0x113C2}, {0x113C5, 0x113C5},
    {0x113C7, 0x113CA}, {0x113CC, 0x113D3}, {0x113E1, 0x113E2}, {0x116D0, 0x116E3},
    {0x11BC0, 0x11BE0}, {0x11BF0, 0x11BF9}, {0x11F5A, 0x11F5A}, {0x13460, 0x143FA},
    {0x16100, 0x16139}, {0x16D40, 0x16D6C}, {0x16D70, 0x16D79}, {0x18CFF, 0x18CFF},
    {0x1CCF0, 0x1CCF9}, {0x1E5D0, 0x1E5FA}, {0x2EBF0, 0x2EE5D},
};

// Combining marks (canonical combining class > 0) assigned in Unicode 10.0-15.0. HF's NFC
// (the unicode-normalization-alignments crate) has older tables in which they are unassigned, so
// class 0: starters that block reordering and never compose. utf8proc (Unicode 15) would reorder
// them. nfc() keeps them verbatim and normalises the text between them separately, which is exactly
// what a starter with no compositions does. (Probed against the reference for every code point.)
constexpr CpRange kReferenceStarters[] = {
    {0x7FD, 0x7FD}, {0x898, 0x89F}, {0x8CA, 0x8D3}, {0x9FE, 0x9FE}, {0xC3C, 0xC3C}, {0xD3B, 0xD3C},
    {0xEBA, 0xEBA}, {0x1715, 0x1715}, {0x1ABF, 0x1ACE}, {0x1DF6, 0x1DFA}, {0xA82C, 0xA82C},
    {0x10D24, 0x10D27}, {0x10EAB, 0x10EAC}, {0x10EFD, 0x10EFF}, {0x10F46, 0x10F50},
    {0x10F82, 0x10F85}, {0x11070, 0x11070}, {0x1133B, 0x1133B}, {0x1145E, 0x1145E},
    {0x11839, 0x1183A}, {0x1193D, 0x1193E}, {0x11943, 0x11943}, {0x119E0, 0x119E0},
    {0x11A34, 0x11A34}, {0x11A47, 0x11A47}, {0x11A99, 0x11A99}, {0x11D42, 0x11D42},
    {0x11D44, 0x11D45}, {0x11D97, 0x11D97}, {0x11F41, 0x11F42}, {0x16FF0, 0x16FF1},
    {0x1E08F, 0x1E08F}, {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE}, {0x1E2EC, 0x1E2EF},
    {0x1E4EC, 0x1E4EF},
};

// Marks code points that can never take part in NFC changes: combining class 0, not a mark, not
// the second half of any canonical composition, and unchanged by NFC on their own.
std::vector<bool> nfc_unstable() {
  std::vector<bool> bad(kMaxCp + 1, false);
  for (char32_t cp = 0x1100; cp <= 0x11FF; ++cp) bad[cp] = true;  // Hangul jamo (LV+T etc.)
  for (char32_t cp = 0xD800; cp <= 0xDFFF; ++cp) bad[cp] = true;
  for (char32_t cp = 0; cp <= kMaxCp; ++cp) {
    const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
    if (p->combining_class != 0 || p->category == UTF8PROC_CATEGORY_MN ||
        p->category == UTF8PROC_CATEGORY_MC || p->category == UTF8PROC_CATEGORY_ME ||
        p->comp_exclusion) {
      bad[cp] = true;
    }
    if (p->decomp_seqindex == UINT16_MAX || p->decomp_type != 0) continue;  // no canonical decomp
    utf8proc_int32_t buf[16];
    int last = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 16,
                                                 UTF8PROC_DECOMPOSE, &last);
    for (utf8proc_ssize_t i = 1; i < n && i < 16; ++i) bad[buf[i]] = true;
    // Singletons and exclusions: NFC maps the code point itself to something else.
    std::string one;
    append_utf8(cp, &one);
    if (utf8proc_nfc(one) != one) bad[cp] = true;
  }
  return bad;
}

struct Tables {
  std::vector<std::uint16_t> index;
  std::vector<std::uint8_t> blocks;
  ClassTable table;

  Tables() {
    OnigEncoding encs[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encs, 1);
    const int ct_l = onig_ctype("L");
    const int ct_n = onig_ctype("N");
    std::vector<bool> unstable = nfc_unstable();
    std::unordered_map<std::string, std::uint16_t> seen;  // block bytes → block number
    index.resize((kMaxCp + 1) >> 8);
    std::vector<std::uint8_t> block(256);
    for (char32_t hi = 0; hi < index.size(); ++hi) {
      for (char32_t lo = 0; lo < 256; ++lo) {
        const char32_t cp = (hi << 8) | lo;
        std::uint8_t f = 0;
        if (ONIGENC_IS_CODE_CTYPE(ONIG_ENCODING_UTF8, cp, ct_l)) f |= kLetter;
        if (ONIGENC_IS_CODE_CTYPE(ONIG_ENCODING_UTF8, cp, ct_n)) f |= kNumber;
        if (ONIGENC_IS_CODE_CTYPE(ONIG_ENCODING_UTF8, cp, ONIGENC_CTYPE_SPACE)) f |= kSpace;
        if (!unstable[cp]) f |= kNfcStable;
        for (const CpRange& r : kReferenceStarters)
          if (cp >= r.first && cp <= r.last) f |= kReferenceStarter;
        block[lo] = f;
      }
      auto [it, fresh] = seen.emplace(std::string(block.begin(), block.end()),
                                      static_cast<std::uint16_t>(seen.size()));
      if (fresh) blocks.insert(blocks.end(), block.begin(), block.end());
      index[hi] = it->second;
    }
    // Apply the Unicode 15-16 additions (blocks are shared, so copy-on-write the touched ones).
    auto set = [&](const CpRange& r, std::uint8_t flag) {
      for (char32_t cp = r.first; cp <= r.last; ++cp) {
        const std::size_t hi = cp >> 8;
        std::vector<std::uint8_t> b(blocks.begin() + index[hi] * 256, blocks.begin() + index[hi] * 256 + 256);
        b[cp & 0xFF] = static_cast<std::uint8_t>((b[cp & 0xFF] & ~(kLetter | kNumber)) | flag);
        auto [it, fresh] = seen.emplace(std::string(b.begin(), b.end()),
                                        static_cast<std::uint16_t>(seen.size()));
        if (fresh) blocks.insert(blocks.end(), b.begin(), b.end());
        index[hi] = it->second;
      }
    };
    for (const CpRange& r : kNewLetters) set(r, kLetter);
    for (const CpRange& r : kNewNumbers) set(r, kNumber);
    table.index = index.data();
    table.blocks = blocks.data();
    for (char32_t cp = 0; cp < 128; ++cp)
      table.ascii[cp] = blocks[(static_cast<std::uint32_t>(index[0]) << 8) | cp];
  }
};

}  // namespace

bool is_newer_unicode_letter_or_number(char32_t cp) {
  for (const CpRange& r : kNewLetters)
    if (cp >= r.first && cp <= r.last) return true;
  for (const CpRange& r : kNewNumbers)
    if (cp >= r.first && cp <= r.last) return true;
  return false;
}

const ClassTable& class_table() {
  static const Tables* tables = new Tables();  // leaked on purpose: used until exit
  return tables->table;
}

void append_utf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 with *bad = length of the maximal invalid
// subpart to replace by one U+FFFD (Unicode 15 §3.9, "U+FFFD substitution of maximal subparts").
std::size_t valid_len(std::string_view s, std::size_t i, std::size_t* bad) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  const unsigned char c = p[i];
  if (c < 0x80) return 1;
  std::size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    *bad = 1;
    return 0;
  }
  std::size_t k = 1;
  for (; k <= need; ++k) {
    if (i + k >= n) break;
    const unsigned char b = p[i + k];
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) break;
  }
  if (k == need + 1) return need + 1;
  *bad = k;
  return 0;
}

}  // namespace

bool is_word_char(char32_t cp) {
  if (cp == 0x200C || cp == 0x200D) return true;  // Join_Control
  for (const CpRange& r : kNewWordChars)
    if (cp >= r.first && cp <= r.last) return true;
  // Other_Alphabetic symbols: circled / squared / negative Latin letters.
  if ((cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) ||
      (cp >= 0x1F150 && cp <= 0x1F169) || (cp >= 0x1F170 && cp <= 0x1F189))
    return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

bool is_valid_utf8(std::string_view s) {
  std::size_t i = 0, bad = 0;
  const std::size_t n = s.size();
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      std::uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    const std::size_t len = valid_len(s, i, &bad);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string to_valid_utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  std::size_t i = 0, bad = 0;
  while (i < s.size()) {
    const std::size_t len = valid_len(s, i, &bad);
    if (len) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");
      i += bad;
    }
  }
  return out;
}

std::string to_valid_utf8_lossy(std::string_view s, std::vector<std::size_t>* origin) {
  std::string out;
  out.reserve(s.size() + 8);
  origin->clear();
  std::size_t i = 0, bad = 0;
  while (i < s.size()) {
    const std::size_t len = valid_len(s, i, &bad);
    if (len) {
      out.append(s.substr(i, len));
      for (std::size_t k = 0; k < len; ++k) origin->push_back(i + k);
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");
      origin->insert(origin->end(), 3, i);
      i += bad;
    }
  }
  origin->push_back(s.size());
  return out;
}

bool is_nfc_quick(std::string_view s) {
  const ClassTable& t = class_table();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    // Everything below U+0300 is NFC-stable; in UTF-8 those are bytes < 0xCC as lead bytes.
    if (*p < 0xCC) {
      p += *p < 0x80 ? 1 : 2;
      continue;
    }
    char32_t cp;
    p += decode_utf8(p, &cp);
    if (!(char_flags(t, cp) & kNfcStable)) return false;
  }
  return true;
}

std::string nfc(std::string_view s) {
  // Split at the reference's extra starters (see kReferenceStarters), if any.
  const ClassTable& t = class_table();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::string out;
  std::size_t begin = 0, i = 0;
  bool split = false;
  while (i < s.size()) {
    char32_t cp;
    const int len = decode_utf8(p + i, &cp);
    if (cp >= 0x7FD && (char_flags(t, cp) & kReferenceStarter)) {
      split = true;
      out += utf8proc_nfc(s.substr(begin, i - begin));
      out.append(s.substr(i, static_cast<std::size_t>(len)));
      begin = i + static_cast<std::size_t>(len);
    }
    i += static_cast<std::size_t>(len);
  }
  if (!split) return utf8proc_nfc(s);
  out += utf8proc_nfc(s.substr(begin));
  return out;
}

}  // namespace stoker::text::detail
