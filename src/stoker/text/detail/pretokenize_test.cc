// The hand-written Qwen matcher and the class tables against Oniguruma itself.
#include "stoker/text/detail/pretokenize.h"

#include <gtest/gtest.h>
// gtest pulls in POSIX <regex.h>, whose struct re_registers Oniguruma also defines.
#define re_registers onig_re_registers
#include <oniguruma.h>

#include <cstring>
#include <random>

#include "stoker/text/detail/unicode.h"

namespace stoker::text::detail {
namespace {

std::string u8(char32_t cp) {
  std::string s;
  append_utf8(cp, &s);
  return s;
}

std::vector<std::string> pieces(std::string_view s, const std::vector<std::size_t>& ends) {
  std::vector<std::string> out;
  std::size_t b = 0;
  for (std::size_t e : ends) {
    out.emplace_back(s.substr(b, e - b));
    b = e;
  }
  return out;
}

TEST(PretokenizeTest, QwenMatcherAgreesWithOnigurumaOnRandomStrings) {
  auto onig = RegexSplitter::create(kQwenPattern);
  ASSERT_TRUE(onig.ok()) << onig.error().to_string();
  // A pool of characters where the pattern's alternatives meet.
  const std::vector<char32_t> pool = {
      'a', 'Z', 's', 'S', 't', 'T', 'r', 'R', 'e', 'E', 'v', 'V', 'm', 'l', 'L', 'd', 'D', '\'',
      '\'', '\'', ' ', ' ', ' ', '\t', '\n', '\r', '\v', '\f', '0', '7', '.', ',', '!', '-', '_',
      0x00A0, 0x0085, 0x1680, 0x180E, 0x2000, 0x200A, 0x200B, 0x2028, 0x2029, 0x202F, 0x205F,
      0x3000, 0xFEFF, 0x017F, 0x212A, 0x00E9, 0x0301, 0x4E2D, 0xAC00, 0x0660, 0x00B2, 0x2460,
      0x1F600, 0x1F3FD, 0x200D, 0xFE0F, 0x0915, 0x093F, 0x0E01, 0x05D0, 0x0627, 0x2019, 0x02BC,
      0xFB05, 0xFB06, 0x1E9E, 0x00DF, 0x0130, 0x0131, 0x01C9, 0x1E9B, 0x0345, 0x03C2, 0x1C88};
  std::mt19937 rng(7);
  std::vector<std::size_t> a, b;
  for (int iter = 0; iter < 30000; ++iter) {
    std::string s;
    const int n = 1 + static_cast<int>(rng() % 14);
    for (int i = 0; i < n; ++i) s += u8(pool[rng() % pool.size()]);
    a.clear();
    b.clear();
    split_qwen(s, &a);
    (*onig)->split(s, &b);
    ASSERT_EQ(pieces(s, a), pieces(s, b)) << "input: " << s;
  }
}

// \p{L}, \p{N}, \s of the tables equal Oniguruma's regex matching for every code point.
TEST(PretokenizeTest, ClassTablesMatchOnigurumaRegexForAllCodePoints) {
  const ClassTable& t = class_table();
  struct Probe {
    const char* pattern;
    CharFlag flag;
  } probes[] = {{"\\A\\p{L}\\z", kLetter}, {"\\A\\p{N}\\z", kNumber}, {"\\A\\s\\z", kSpace}};
  for (const Probe& p : probes) {
    OnigRegex re;
    OnigErrorInfo einfo;
    const auto* pat = reinterpret_cast<const OnigUChar*>(p.pattern);
    ASSERT_EQ(onig_new(&re, pat, pat + std::strlen(p.pattern), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                       ONIG_SYNTAX_DEFAULT, &einfo),
              ONIG_NORMAL);
    for (char32_t cp = 1; cp <= 0x10FFFF; cp += (cp < 0x30000 ? 1 : 61)) {
      if ((cp >= 0xD800 && cp <= 0xDFFF) || is_newer_unicode_letter_or_number(cp)) continue;
      const std::string s = u8(cp);
      const auto* str = reinterpret_cast<const OnigUChar*>(s.data());
      const bool regex = onig_search(re, str, str + s.size(), str, str + s.size(), nullptr,
                                     ONIG_OPTION_NONE) >= 0;
      ASSERT_EQ(regex, (char_flags(t, cp) & p.flag) != 0) << p.pattern << " U+" << std::hex << static_cast<std::uint32_t>(cp);
    }
    onig_free(re);
  }
}

TEST(PretokenizeTest, KnowsLettersAndNumbersNewerThanTheInstalledOniguruma) {
  const ClassTable& t = class_table();
  EXPECT_TRUE(char_flags(t, 0x31350) & kLetter);  // CJK Extension H (Unicode 15.0)
  EXPECT_TRUE(char_flags(t, 0x2EBF0) & kLetter);  // CJK Extension I (15.1)
  EXPECT_TRUE(char_flags(t, 0x10D4A) & kLetter);  // Garay (16.0)
  EXPECT_TRUE(char_flags(t, 0x16D70) & kNumber);  // Kirat Rai digits (16.0)
  EXPECT_FALSE(char_flags(t, 0x11F00) & (kLetter | kNumber));  // Kawi sign (a mark)
}

TEST(PretokenizeTest, WhitespaceIsOnigurumasNotJavaScripts) {
  const ClassTable& t = class_table();
  for (char32_t cp : {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x200A,
                      0x2028, 0x2029, 0x202F, 0x205F, 0x3000})
    EXPECT_TRUE(char_flags(t, cp) & kSpace) << std::hex << static_cast<std::uint32_t>(cp);
  for (char32_t cp : {0xFEFF, 0x200B, 0x180E, 0x1C, 0x1F})
    EXPECT_FALSE(char_flags(t, cp) & kSpace) << std::hex << static_cast<std::uint32_t>(cp);
}

TEST(PretokenizeTest, NfcStableCodePointsAreUnchangedByNfc) {
  std::mt19937 rng(3);
  const ClassTable& t = class_table();
  std::vector<char32_t> stable;
  for (char32_t cp = 0x80; cp < 0x30000; ++cp)
    if (!(cp >= 0xD800 && cp <= 0xDFFF) && (char_flags(t, cp) & kNfcStable)) stable.push_back(cp);
  for (int iter = 0; iter < 20000; ++iter) {
    std::string s;
    for (int i = 0; i < 6; ++i) s += u8(stable[rng() % stable.size()]);
    ASSERT_TRUE(is_nfc_quick(s));
    ASSERT_EQ(nfc(s), s);
  }
  EXPECT_FALSE(is_nfc_quick("e\u0301"));
  EXPECT_EQ(nfc("e\u0301"), "\u00E9");
  EXPECT_EQ(nfc("\u1100\u1161\u11A8"), "\uAC01");
  // U+0898 (Unicode 14, class 230) is a plain starter to the reference's older NFC tables: it is
  // neither reordered nor does it stop the marks after it from being reordered among themselves.
  EXPECT_EQ(nfc("x\u0898\u0334"), "x\u0898\u0334");
  EXPECT_EQ(nfc("x\u0898\u0301\u0334"), "x\u0898\u0334\u0301");
}

TEST(PretokenizeTest, LossyUtf8ReplacesMaximalSubparts) {
  EXPECT_TRUE(is_valid_utf8("héllo 中文 😀"));
  EXPECT_FALSE(is_valid_utf8("\xC0\x80"));
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));  // surrogate
  EXPECT_EQ(to_valid_utf8_lossy("a\xF0\x9F\x98" "b"), "a\uFFFD" "b");       // truncated 4-byte: one
  EXPECT_EQ(to_valid_utf8_lossy("\xC0\x80"), "\uFFFD\uFFFD");              // invalid lead: each
  EXPECT_EQ(to_valid_utf8_lossy("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");    // surrogate: each byte
  EXPECT_EQ(to_valid_utf8_lossy("\xE2\x82"), "\uFFFD");
}

}  // namespace
}  // namespace stoker::text::detail
