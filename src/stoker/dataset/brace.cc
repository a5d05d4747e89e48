#include "stoker/dataset/brace.h"

#include <limits>
#include <optional>

namespace stoker::dataset {
namespace {

constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();
constexpr int kMaxDepth = 64;
constexpr std::uint64_t kMaxOutputBytes = std::uint64_t{64} << 20;
constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

struct Item;
using Pattern = std::vector<Item>;  // the product of its items

struct Item {
  enum class Kind { kLiteral, kProduct, kChain, kInt, kChars } kind = Kind::kLiteral;
  std::string text;                  // kLiteral; kChars: the letters in order
  Pattern product;                   // kProduct
  std::vector<Pattern> chain;        // kChain: alternatives in order
  std::int64_t start = 0, end = 0;   // kInt
  std::uint64_t step = 1;
  int pad = 0;
};

std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) { return a > kSaturated - b ? kSaturated : a + b; }
std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kSaturated / b ? kSaturated : a * b;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// "-?\d+" starting at *p; advances *p.
std::optional<std::string_view> take_int(std::string_view s, std::size_t* p) {
  const std::size_t b = *p;
  std::size_t i = b;
  if (i < s.size() && s[i] == '-') ++i;
  const std::size_t digits = i;
  while (i < s.size() && is_digit(s[i])) ++i;
  if (i == digits) return std::nullopt;
  *p = i;
  return s.substr(b, i - b);
}

bool take_dots(std::string_view s, std::size_t* p) {
  if (s.substr(*p, 2) != "..") return false;
  *p += 2;
  return true;
}

// The optional "..-?\d+" step; python: (int(step) or 1). Saturates (a huge step = one element).
std::optional<std::uint64_t> take_step(std::string_view s, std::size_t* p) {
  if (*p == s.size()) return std::uint64_t{1};
  if (!take_dots(s, p)) return std::nullopt;
  if (*p < s.size() && s[*p] == '-') ++*p;
  const std::size_t b = *p;
  std::uint64_t v = 0;
  while (*p < s.size() && is_digit(s[*p])) {
    v = sat_add(sat_mul(v, 10), static_cast<std::uint64_t>(s[*p] - '0'));
    ++*p;
  }
  if (*p == b || *p != s.size()) return std::nullopt;
  return v == 0 ? 1 : v;
}

Result<std::optional<Item>> parse_int_range(std::string_view expr, std::string_view whole) {
  std::size_t p = 0;
  const auto a = take_int(expr, &p);
  if (!a || !take_dots(expr, &p)) return std::optional<Item>();
  const auto b = take_int(expr, &p);
  if (!b) return std::optional<Item>();
  const auto step = take_step(expr, &p);
  if (!step) return std::optional<Item>();
  Item it;
  it.kind = Item::Kind::kInt;
  for (auto [sv, out] : {std::pair{*a, &it.start}, std::pair{*b, &it.end}}) {
    const bool neg = sv[0] == '-';
    std::uint64_t v = 0;
    for (char c : sv.substr(neg ? 1 : 0)) {
      if (v > (std::uint64_t{1} << 62) / 5) return invalid_argument("brace pattern '" + std::string(whole) + "': range bound " + std::string(sv) + " beyond 64 bits");
      v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return invalid_argument("brace pattern '" + std::string(whole) + "': range bound " + std::string(sv) + " beyond 64 bits");
    *out = neg ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
  }
  bool padded = false;
  for (std::string_view sv : {*a, *b})
    if (sv != "0" && sv != "-0" && (sv[0] == '0' || sv.substr(0, 2) == "-0")) padded = true;
  it.pad = padded ? static_cast<int>(std::max(a->size(), b->size())) : 0;
  it.step = *step;
  return std::optional<Item>(std::move(it));
}

std::optional<Item> parse_char_range(std::string_view expr) {
  auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
  if (expr.size() < 4 || !letter(expr[0]) || expr.substr(1, 2) != ".." || !letter(expr[3])) return std::nullopt;
  std::size_t p = 4;
  const auto step = take_step(expr, &p);
  if (!step) return std::nullopt;
  const std::int64_t s = static_cast<std::int64_t>(kAlphabet.find(expr[0]));
  const std::int64_t e = static_cast<std::int64_t>(kAlphabet.find(expr[3]));
  const std::int64_t st = *step > 64 ? 64 : static_cast<std::int64_t>(*step);
  Item it;
  it.kind = Item::Kind::kChars;
  if (s < e) {
    for (std::int64_t i = s; i <= e; i += st) it.text += kAlphabet[i];
  } else {  // alphabet[s : (e or -52) - 1 : -step]: down to e inclusive (to 0 when e == 0)
    for (std::int64_t i = s; i >= e; i -= st) it.text += kAlphabet[i];
  }
  return it;
}

Result<Pattern> parse_pattern(std::string_view pattern, std::string_view whole, int depth);

// braceexpand's parse_sequence: top-level commas split alternatives; none = not a sequence.
Result<std::optional<Item>> parse_sequence(std::string_view seq, std::string_view whole, int depth) {
  std::vector<std::string_view> pieces;
  std::size_t start = 0;
  int bracket = 0;
  for (std::size_t pos = 0; pos < seq.size(); ++pos) {
    if (seq[pos] == '\\') {
      ++pos;
      continue;
    }
    if (seq[pos] == '{') ++bracket;
    else if (seq[pos] == '}') --bracket;
    else if (seq[pos] == ',' && bracket == 0) {
      pieces.push_back(seq.substr(start, pos - start));
      start = pos + 1;
    }
  }
  if (bracket != 0 || pieces.empty()) return std::optional<Item>();
  pieces.push_back(seq.substr(start));
  Item it;
  it.kind = Item::Kind::kChain;
  for (std::string_view piece : pieces) {
    STOKER_ASSIGN_OR_RETURN(Pattern p, parse_pattern(piece, whole, depth + 1));
    it.chain.push_back(std::move(p));
  }
  return std::optional<Item>(std::move(it));
}

Result<Pattern> parse_pattern(std::string_view pattern, std::string_view whole, int depth) {
  if (depth > kMaxDepth)
    return invalid_argument("brace pattern '" + std::string(whole.substr(0, 200)) +
                            "': braces nested deeper than " + std::to_string(kMaxDepth));
  Pattern items;
  std::size_t start = 0, pos = 0;
  int bracket = 0;
  auto literal = [](std::string_view s) {
    Item it;
    it.text = std::string(s);
    return it;
  };
  while (pos < pattern.size()) {
    if (pattern[pos] == '\\') {
      pos += 2;
      continue;
    }
    if (pattern[pos] == '{') {
      if (bracket == 0 && pos > start) {
        items.push_back(literal(pattern.substr(start, pos - start)));
        start = pos;
      }
      ++bracket;
    } else if (pattern[pos] == '}') {
      --bracket;
      if (bracket == 0) {
        const std::string_view expr = pattern.substr(start + 1, pos - start - 1);
        STOKER_ASSIGN_OR_RETURN(auto range, parse_int_range(expr, whole));
        std::optional<Item> item = std::move(range);
        if (!item) item = parse_char_range(expr);
        if (!item) {
          STOKER_ASSIGN_OR_RETURN(auto seq, parse_sequence(expr, whole, depth));
          item = std::move(seq);
        }
        if (item) {
          items.push_back(std::move(*item));
        } else {  // not a range or sequence: "{" + expansions of the inside + "}"
          items.push_back(literal("{"));
          Item inner;
          inner.kind = Item::Kind::kProduct;
          STOKER_ASSIGN_OR_RETURN(inner.product, parse_pattern(expr, whole, depth + 1));
          items.push_back(std::move(inner));
          items.push_back(literal("}"));
        }
        start = pos + 1;
      }
    }
    ++pos;
  }
  if (bracket != 0)
    return invalid_argument("brace pattern '" + std::string(whole.substr(0, 200)) + "': unbalanced braces");
  if (start < pos) items.push_back(literal(pattern.substr(start)));
  return items;
}

std::uint64_t count_of(const Pattern& p);
std::uint64_t count_of(const Item& it) {
  switch (it.kind) {
    case Item::Kind::kLiteral: return 1;
    case Item::Kind::kChars: return it.text.size();
    case Item::Kind::kProduct: return count_of(it.product);
    case Item::Kind::kChain: {
      std::uint64_t n = 0;
      for (const Pattern& p : it.chain) n = sat_add(n, count_of(p));
      return n;
    }
    case Item::Kind::kInt: {
      const std::uint64_t diff = it.start < it.end
                                     ? static_cast<std::uint64_t>(it.end) - static_cast<std::uint64_t>(it.start)
                                     : static_cast<std::uint64_t>(it.start) - static_cast<std::uint64_t>(it.end);
      return sat_add(diff / it.step, 1);
    }
  }
  return 1;
}
std::uint64_t count_of(const Pattern& p) {
  std::uint64_t n = 1;
  for (const Item& it : p) n = sat_mul(n, count_of(it));
  return n;
}

std::string format_int(std::int64_t v, int pad) {  // python '%0{pad}d'
  const std::uint64_t mag = v < 0 ? static_cast<std::uint64_t>(-(v + 1)) + 1 : static_cast<std::uint64_t>(v);
  std::string digits = std::to_string(mag);
  const std::size_t width = pad > 0 ? static_cast<std::size_t>(pad) - (v < 0 ? 1 : 0) : 0;
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return (v < 0 ? "-" : "") + digits;
}

void expand_into(const Pattern& p, std::vector<std::string>* out);
void expand_item(const Item& it, std::vector<std::string>* out) {
  switch (it.kind) {
    case Item::Kind::kLiteral: out->push_back(it.text); return;
    case Item::Kind::kChars:
      for (char c : it.text) out->push_back(std::string(1, c));
      return;
    case Item::Kind::kProduct: expand_into(it.product, out); return;
    case Item::Kind::kChain:
      for (const Pattern& p : it.chain) expand_into(p, out);
      return;
    case Item::Kind::kInt: {
      const std::uint64_t n = count_of(it);
      for (std::uint64_t k = 0; k < n; ++k) {
        const __int128 v = it.start < it.end ? static_cast<__int128>(it.start) + static_cast<__int128>(k) * it.step
                                             : static_cast<__int128>(it.start) - static_cast<__int128>(k) * it.step;
        out->push_back(format_int(static_cast<std::int64_t>(v), it.pad));
      }
      return;
    }
  }
}
void expand_into(const Pattern& p, std::vector<std::string>* out) {
  std::vector<std::string> acc = {""};
  for (const Item& it : p) {
    std::vector<std::string> alts;
    expand_item(it, &alts);
    std::vector<std::string> next;
    next.reserve(acc.size() * alts.size());
    for (const std::string& a : acc)
      for (const std::string& b : alts) next.push_back(a + b);
    acc = std::move(next);
  }
  for (std::string& s : acc) out->push_back(std::move(s));
}

// braceexpand's final step: "\x" -> "x" (not across a newline, like Python's '.').
std::string unescape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] != '\n') ++i;
    out += s[i];
  }
  return out;
}

}  // namespace

Result<std::uint64_t> brace_count(std::string_view pattern) {
  STOKER_ASSIGN_OR_RETURN(Pattern p, parse_pattern(pattern, pattern, 0));
  return count_of(p);
}

Result<std::vector<std::string>> brace_expand(std::string_view pattern, std::uint64_t max_names) {
  STOKER_ASSIGN_OR_RETURN(Pattern p, parse_pattern(pattern, pattern, 0));
  const std::uint64_t n = count_of(p);
  if (n > max_names)
    return invalid_argument("brace pattern '" + std::string(pattern.substr(0, 200)) + "' expands to " +
                            (n == kSaturated ? std::string("more than 2^64") : std::to_string(n)) +
                            " names, over the cap of " + std::to_string(max_names));
  // Each name is at most as long as the pattern (every piece is a substring or a number no wider
  // than its bound): bound the bytes before making them.
  if (sat_mul(n, pattern.size() + 1) > kMaxOutputBytes)
    return invalid_argument("brace pattern '" + std::string(pattern.substr(0, 200)) + "' expands to " +
                            std::to_string(n) + " names of up to " + std::to_string(pattern.size()) +
                            " bytes: over the 64 MiB cap");
  std::vector<std::string> raw;
  expand_into(p, &raw);
  for (std::string& s : raw) s = unescape(s);
  return raw;
}

Result<std::vector<std::string>> expand_shard_list(std::string_view spec, std::uint64_t max_names) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (true) {
    const std::size_t sep = spec.find("::", from);
    const std::string_view piece = spec.substr(from, sep == std::string_view::npos ? std::string_view::npos : sep - from);
    const std::uint64_t left = max_names - out.size();
    STOKER_ASSIGN_OR_RETURN(auto names, brace_expand(piece, left));
    for (auto& n : names) out.push_back(std::move(n));
    if (sep == std::string_view::npos) break;
    from = sep + 2;
  }
  return out;
}

}  // namespace stoker::dataset
