// Pre-tokenizers: cut normalised text into "words" that BPE then encodes one at a time.
// - split_qwen(): a hand-written matcher for the one regex every Qwen2/2.5/3 tokenizer uses
//   (kQwenPattern), with Oniguruma's semantics (leftmost alternative wins, greedy with backtracking).
// - RegexSplitter: any other Split regex, run by Oniguruma itself (the engine HF uses) — the
//   fallback, and the test oracle for split_qwen().
// Both emit "Isolated" pieces: every match and every gap between matches, in order.
// Input must be valid UTF-8. Thread-safe: split_qwen is pure; a RegexSplitter is immutable after
// create() and may be shared by threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::text::detail {

inline constexpr std::string_view kQwenPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// GPT-2's pattern, used by ByteLevel(use_regex=true).
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Appends the end offset of each piece of `text` to `ends` (pieces are [prev end, end)).
void split_qwen(std::string_view text, std::vector<std::size_t>* ends);

class RegexSplitter {
 public:
  // InvalidArgument when Oniguruma rejects the pattern.
  static Result<std::unique_ptr<RegexSplitter>> create(std::string_view pattern);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  void split(std::string_view text, std::vector<std::size_t>* ends) const;

 private:
  explicit RegexSplitter(void* regex) : regex_(regex) {}
  void* regex_;  // OnigRegex, kept out of the header
};

}  // namespace stoker::text::detail
