// Unicode helpers for the tokenizer: per-code-point classes (letter, number, Oniguruma `\s`,
// NFC-stable), UTF-8 decoding/validation, lossy repair and NFC.
// Classes come from Oniguruma's own Unicode tables (the engine HF tokenizers runs the Split regex
// with), so `\p{L}`, `\p{N}` and `\s` agree with the reference by construction; NFC comes from
// utf8proc. Tables are built once on first use (thread-safe static init), then read-only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stoker::text::detail {

enum CharFlag : std::uint8_t {
  kLetter = 1,     // \p{L}
  kNumber = 2,     // \p{N}
  kSpace = 4,      // Oniguruma \s (Unicode White_Space; not U+FEFF, U+200B, U+180E)
  kNfcStable = 8,  // a string made only of such code points is already NFC
  kReferenceStarter = 16,  // a mark newer than HF's NFC tables: a plain starter there
};

struct ClassTable {
  const std::uint16_t* index;  // cp >> 8 → block number
  const std::uint8_t* blocks;  // block * 256 + (cp & 255) → CharFlag bits
  std::uint8_t ascii[128];
};

const ClassTable& class_table();

struct CpRange {
  char32_t first, last;
};
// Code points the tables add on top of the installed Oniguruma's (see unicode.cc); tests that
// compare with the installed Oniguruma skip them.
bool is_newer_unicode_letter_or_number(char32_t cp);

inline std::uint8_t char_flags(const ClassTable& t, char32_t cp) {
  if (cp < 128) return t.ascii[cp];
  return t.blocks[(static_cast<std::uint32_t>(t.index[cp >> 8]) << 8) | (cp & 0xFF)];
}

// Decodes one code point from VALID UTF-8 at p (p < end); returns its length in bytes.
inline int decode_utf8(const unsigned char* p, char32_t* cp) {
  unsigned char c = p[0];
  if (c < 0x80) { *cp = c; return 1; }
  if (c < 0xE0) { *cp = ((c & 0x1Fu) << 6) | (p[1] & 0x3Fu); return 2; }
  if (c < 0xF0) {
    *cp = ((c & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    return 3;
  }
  *cp = ((c & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
  return 4;
}

void append_utf8(char32_t cp, std::string* out);

// Perl/UTS#18 \w as Rust's regex_syntax::is_word_character has it (HF's single_word rule):
// Alphabetic, marks, decimal digits, connector punctuation, joiners.
bool is_word_char(char32_t cp);

bool is_valid_utf8(std::string_view s);
// Replaces each maximal invalid subsequence with U+FFFD (the Unicode "maximal subpart" practice,
// as Rust's String::from_utf8_lossy and Python's errors="replace" do).
std::string to_valid_utf8_lossy(std::string_view s);
// The same, and for each byte of the result (plus one past its end) the byte of `s` it comes
// from: a U+FFFD's three bytes map to the start of the subsequence it replaces.
std::string to_valid_utf8_lossy(std::string_view s, std::vector<std::size_t>* origin);

// True when every code point is NFC-stable (then nfc(s) == s). `s` must be valid UTF-8.
bool is_nfc_quick(std::string_view s);
// NFC of valid UTF-8 as HF tokenizers computes it: utf8proc, except that marks newer than the
// reference's tables (kReferenceStarter) stay where they are.
std::string nfc(std::string_view s);

}  // namespace stoker::text::detail
