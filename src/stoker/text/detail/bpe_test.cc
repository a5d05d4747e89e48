#include "stoker/text/detail/bpe.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace stoker::text::detail {
namespace {

// The O(n^2) scan (short words) and HF's heap algorithm (long words) must merge identically,
// including when two different pairs produce the same token.
TEST(BpeTest, ScanAndHeapMergeIdentically) {
  std::mt19937 rng(11);
  std::array<Id, 256> bytes;
  std::map<std::string, Id> vocab;
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) {
    bytes[b] = b;
    vocab[std::string(1, static_cast<char>(b))] = b;
  }
  for (char c : std::string("abcd ")) tokens.push_back(std::string(1, c));
  std::vector<BpeModel::Merge> merges;
  std::vector<Id> merged;
  for (int k = 0; k < 400; ++k) {
    const std::string& l = tokens[rng() % tokens.size()];
    const std::string& r = tokens[rng() % tokens.size()];
    if (l.size() + r.size() > 10) continue;
    const std::string joined = l + r;
    auto [it, fresh] = vocab.emplace(joined, static_cast<Id>(vocab.size()));
    merges.push_back({vocab[l], vocab[r]});
    merged.push_back(it->second);
    if (fresh) tokens.push_back(joined);
  }
  BpeModel model(bytes, merges, merged, false, {});
  for (int iter = 0; iter < 5000; ++iter) {
    std::string word;
    const int n = 2 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) word += "abcd "[rng() % 5];
    std::vector<Id> scan, heap, cached;
    model.encode_word_uncached(word, &scan, false);
    model.encode_word_uncached(word, &heap, true);
    model.encode_word(word, &cached);
    ASSERT_EQ(scan, heap) << word;
    ASSERT_EQ(cached, heap) << word;
  }
}

TEST(BpeTest, ByteLevelMapIsGpt2s) {
  EXPECT_EQ(byte_to_char(' '), U'\u0120');   // Ġ
  EXPECT_EQ(byte_to_char('\n'), U'\u010A');  // Ċ
  EXPECT_EQ(byte_to_char('A'), U'A');
  EXPECT_EQ(byte_to_char(0xAD), U'\u0143');
  std::string raw;
  ASSERT_TRUE(byte_level_to_bytes("ĠhelloĊ", &raw));
  EXPECT_EQ(raw, " hello\n");
  EXPECT_FALSE(byte_level_to_bytes("a b", &raw));  // a plain space is not a byte-level char
}

}  // namespace
}  // namespace stoker::text::detail
