#include "stoker/text/detail/pretokenize.h"

#include <oniguruma.h>

#include "stoker/text/detail/unicode.h"

namespace stoker::text::detail {
namespace {

struct Char {
  char32_t cp;
  int len;
  std::uint8_t flags;
};

class Scanner {
 public:
  Scanner(std::string_view s)
      : t_(class_table()),
        p_(reinterpret_cast<const unsigned char*>(s.data())),
        n_(static_cast<std::size_t>(s.size())) {}

  std::size_t size() const { return n_; }
  Char at(std::size_t i) const {
    Char c;
    c.len = decode_utf8(p_ + i, &c.cp);
    c.flags = char_flags(t_, c.cp);
    return c;
  }
  // End of the run of characters starting at i whose flags satisfy pred.
  template <typename Pred>
  std::size_t run(std::size_t i, Pred pred) const {
    while (i < n_) {
      const unsigned char b = p_[i];
      if (b < 0x80) {
        if (!pred(b, t_.ascii[b])) break;
        ++i;
        continue;
      }
      Char c = at(i);
      if (!pred(c.cp, c.flags)) break;
      i += static_cast<std::size_t>(c.len);
    }
    return i;
  }

 private:
  const ClassTable& t_;
  const unsigned char* p_;
  std::size_t n_;
};

inline bool is_crlf(char32_t cp) { return cp == '\r' || cp == '\n'; }
inline bool is_other(std::uint8_t f) { return !(f & (kLetter | kNumber | kSpace)); }

// Case-insensitive ASCII letter match as Oniguruma folds it: 's' also matches U+017F (long s),
// 'k' would match U+212A (not in the pattern).
inline bool fold_eq(char32_t cp, char lower) {
  if (cp < 128) return (cp | 0x20) == static_cast<char32_t>(lower);
  return lower == 's' && cp == 0x17F;
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d) at i (text[i] == '\''); returns the match end or 0.
std::size_t match_contraction(const Scanner& s, std::size_t i) {
  std::size_t k = i + 1;
  if (k >= s.size()) return 0;
  const Char a = s.at(k);
  const std::size_t k2 = k + static_cast<std::size_t>(a.len);
  if (fold_eq(a.cp, 's') || fold_eq(a.cp, 't') || fold_eq(a.cp, 'm') || fold_eq(a.cp, 'd'))
    return k2;
  if (k2 >= s.size()) return 0;
  const Char b = s.at(k2);
  const std::size_t k3 = k2 + static_cast<std::size_t>(b.len);
  if ((fold_eq(a.cp, 'r') || fold_eq(a.cp, 'v')) && fold_eq(b.cp, 'e')) return k3;
  if (fold_eq(a.cp, 'l') && fold_eq(b.cp, 'l')) return k3;
  return 0;
}

std::size_t match_at(const Scanner& s, std::size_t i) {
  const std::size_t n = s.size();
  const Char c = s.at(i);
  const std::size_t next = i + static_cast<std::size_t>(c.len);
  auto letters = [](char32_t, std::uint8_t f) { return (f & kLetter) != 0; };
  auto others = [](char32_t, std::uint8_t f) { return is_other(f); };
  auto crlf = [](char32_t cp, std::uint8_t) { return is_crlf(cp); };
  // 1. (?i:'s|'t|'re|'ve|'m|'ll|'d)
  if (c.cp == '\'') {
    if (std::size_t e = match_contraction(s, i)) return e;
  }
  // 2. [^\r\n\p{L}\p{N}]?\p{L}+
  if (c.flags & kLetter) return s.run(next, letters);
  if (!(c.flags & kNumber) && !is_crlf(c.cp) && next < n && (s.at(next).flags & kLetter))
    return s.run(next, letters);
  // 3. \p{N}
  if (c.flags & kNumber) return next;
  // 4. ' '?[^\s\p{L}\p{N}]+[\r\n]*
  if (c.cp == ' ' && next < n && is_other(s.at(next).flags))
    return s.run(s.run(next, others), crlf);
  if (is_other(c.flags)) return s.run(s.run(next, others), crlf);
  // Only whitespace is left. 5. \s*[\r\n]+ : the run up to its last CR/LF.
  std::size_t last_crlf = 0, last_start = i;
  bool has_crlf = false;
  std::size_t j = i;
  while (j < n) {
    const Char w = s.at(j);
    if (!(w.flags & kSpace)) break;
    if (is_crlf(w.cp)) {
      has_crlf = true;
      last_crlf = j;
    }
    last_start = j;
    j += static_cast<std::size_t>(w.len);
  }
  if (has_crlf) return last_crlf + 1;
  // 6. \s+(?!\S) : the whole run at the end of text, else the run minus its last character.
  if (j == n || last_start > i) return j == n ? j : last_start;
  // 7. \s+
  return j;
}

}  // namespace

void split_qwen(std::string_view text, std::vector<std::size_t>* ends) {
  Scanner s(text);
  std::size_t i = 0;
  while (i < s.size()) {
    i = match_at(s, i);
    ends->push_back(i);
  }
}

Result<std::unique_ptr<RegexSplitter>> RegexSplitter::create(std::string_view pattern) {
  (void)class_table();  // runs onig_initialize once
  OnigRegex regex = nullptr;
  OnigErrorInfo einfo;
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
  // The onig crate's Regex::new (what HF calls): no options, Oniguruma's default syntax.
  int r = onig_new(&regex, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                   ONIG_SYNTAX_DEFAULT, &einfo);
  if (r != ONIG_NORMAL) {
    OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig_error_code_to_str(msg, r, &einfo);
    return invalid_argument("Split regex rejected by Oniguruma: " +
                            std::string(reinterpret_cast<char*>(msg)));
  }
  return std::unique_ptr<RegexSplitter>(new RegexSplitter(regex));
}

RegexSplitter::~RegexSplitter() { onig_free(static_cast<OnigRegex>(regex_)); }

void RegexSplitter::split(std::string_view text, std::vector<std::size_t>* ends) const {
  auto* regex = static_cast<OnigRegex>(regex_);
  const auto* str = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = str + text.size();
  OnigRegion* region = onig_region_new();
  std::size_t pos = 0, last = 0;
  while (pos <= text.size()) {
    const int r = onig_search(regex, str, end, str + pos, end, region, ONIG_OPTION_NONE);
    if (r < 0) break;
    const auto b = static_cast<std::size_t>(region->beg[0]);
    const auto e = static_cast<std::size_t>(region->end[0]);
    if (e == b) {  // empty match: not a piece; step over one character
      if (b >= text.size()) break;
      char32_t cp;
      pos = b + static_cast<std::size_t>(decode_utf8(str + b, &cp));
      continue;
    }
    if (b > last) ends->push_back(b);  // the gap before the match is its own piece
    ends->push_back(e);
    last = pos = e;
  }
  if (last < text.size()) ends->push_back(static_cast<std::size_t>(text.size()));
  onig_region_free(region, 1);
}

}  // namespace stoker::text::detail
