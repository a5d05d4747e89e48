// Folder discovery (transformers' loader order) and the assistant-mask rules, on hand-made
// folders and hand-computed token layouts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "stoker/jinja/assistant_mask.h"
#include "stoker/jinja/chat_template_files.h"
#include "stoker/jinja/chat_variables.h"
#include "stoker/jinja/json.h"

namespace stoker::jinja {
namespace {

namespace fs = std::filesystem;

class Folder {
 public:
  Folder() {
    char tmpl[] = "/tmp/stoker-jinja-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~Folder() { fs::remove_all(path_); }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((fs::path(path_) / rel).parent_path());
    std::ofstream(fs::path(path_) / rel) << text;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string pick(const std::string& folder, Loader loader, std::string_view name = {}, bool tools = false) {
  auto t = discover_chat_templates(folder, loader);
  if (!t.ok()) return "ERR " + t.error().to_string();
  auto s = select_chat_template(*t, name, tools, loader);
  return s.ok() ? *s : "ERR " + s.error().to_string();
}

TEST(ChatTemplateFilesTest, ProcessorPrefersTheLegacyJsonThenJinjaThenProcessorConfig) {
  Folder f;
  f.write("processor_config.json", R"({"chat_template": "from processor_config"})");
  EXPECT_EQ(pick(f.path(), Loader::kProcessor), "from processor_config");
  f.write("chat_template.jinja", "from jinja");
  EXPECT_EQ(pick(f.path(), Loader::kProcessor), "from jinja");
  f.write("chat_template.json", R"({"chat_template": "from json"})");
  EXPECT_EQ(pick(f.path(), Loader::kProcessor), "from json");
  f.write("additional_chat_templates/tool_use.jinja", "tools");
  EXPECT_NE(pick(f.path(), Loader::kProcessor).find("legacy chat_template.json together with"), std::string::npos);
}

TEST(ChatTemplateFilesTest, TokenizerFilesReplaceTokenizerConfig) {
  Folder f;
  f.write("tokenizer_config.json",
          R"({"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}]})");
  EXPECT_EQ(pick(f.path(), Loader::kTokenizer), "D");
  EXPECT_EQ(pick(f.path(), Loader::kTokenizer, {}, true), "T");       // tools -> tool_use
  EXPECT_EQ(pick(f.path(), Loader::kTokenizer, "tool_use"), "T");
  EXPECT_NE(pick(f.path(), Loader::kTokenizer, "rag").find("has: default, tool_use"), std::string::npos);
  f.write("additional_chat_templates/rag.jinja", "R");
  // Any template file replaces tokenizer_config's templates entirely: no default left.
  EXPECT_NE(pick(f.path(), Loader::kTokenizer).find("none is named 'default'"), std::string::npos);
  EXPECT_EQ(pick(f.path(), Loader::kTokenizer, "rag"), "R");
  f.write("chat_template.jinja", "J");
  EXPECT_EQ(pick(f.path(), Loader::kTokenizer), "J");
  // A named default.jinja beside chat_template.jinja: the tokenizer takes the named file, the
  // processor chat_template.jinja (each loader's dict filling order).
  f.write("additional_chat_templates/default.jinja", "N");
  EXPECT_EQ(pick(f.path(), Loader::kTokenizer), "N");
  EXPECT_EQ(pick(f.path(), Loader::kProcessor), "J");
}

TEST(ChatTemplateFilesTest, AutoFallsBackToTheTokenizerAndSaysSo) {
  Folder f;
  EXPECT_NE(pick(f.path(), Loader::kAuto).find("no chat template for the tokenizer"), std::string::npos);
  f.write("tokenizer_config.json", R"({"chat_template": "T", "eos_token": {"content": "<e>", "special": true}})");
  auto t = discover_chat_templates(f.path(), Loader::kAuto);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->origin, "tokenizer_config.json (no processor template: the tokenizer's)");
  EXPECT_EQ(pick(f.path(), Loader::kProcessor).substr(0, 4), "ERR ");
  f.write("tokenizer_config.json", "{not json");
  EXPECT_NE(pick(f.path(), Loader::kTokenizer).find("parsing"), std::string::npos);
}

TEST(ChatTemplateFilesTest, SpecialTokensFollowTransformersMap) {
  Folder f;
  f.write("tokenizer_config.json",
          R"({"bos_token": null, "eos_token": "<|im_end|>", "pad_token": {"content": "<pad>"},
              "additional_special_tokens": ["<a>", {"content": "<b>"}]})");
  f.write("special_tokens_map.json", R"({"unk_token": "<unk>", "eos_token": "ignored"})");
  auto v = special_tokens_from_folder(f.path());
  ASSERT_TRUE(v.ok());
  std::string got;
  for (const auto& [k, val] : *v) got += k + "=" + to_json(val).value() + ";";
  EXPECT_EQ(got, R"(eos_token="<|im_end|>";unk_token="<unk>";pad_token="<pad>";additional_special_tokens=["<a>", "<b>"];)");
}

// Token layout of "ab€c" (bytes a=0 b=1 €=2..5 c=5): tokens [a][b][€ first half][€ rest][c]; the
// split € gives both of its tokens the whole character, as HF's character offsets do.
TEST(AssistantMaskTest, TokenizerRuleAsTransformers) {
  const std::string text = "ab\xe2\x82\xac" "c";
  const std::vector<Span> toks = {{0, 1}, {1, 2}, {2, 4}, {4, 5}, {5, 6}};
  auto mask = [&](std::vector<Span> spans, MaskRule r = MaskRule::kTokenizer) {
    std::string s;
    for (auto m : assistant_mask(text, spans, toks, r)) s += static_cast<char>('0' + m);
    return s;
  };
  EXPECT_EQ(mask({{1, 5}}), "01100");  // end-1 lands in € -> its FIRST token: the 2nd half unmarked
  EXPECT_EQ(mask({{1, 6}}), "01111");
  EXPECT_EQ(mask({{0, 1}}), "11111");  // end token 0 is falsy in transformers: to the end
  EXPECT_EQ(mask({{9, 10}, {0, 2}}), "00000");  // start beyond the tokens: stop (truncation)
  EXPECT_EQ(mask({{5, 6}, {9, 10}, {1, 2}}), "00001");
  EXPECT_EQ(mask({{3, 6}}), "00111");   // a span starting inside € starts at its first token
}

TEST(AssistantMaskTest, ProcessorRuleSkipsInsteadOfStopping) {
  const std::string text = "ab\xe2\x82\xac" "c";
  const std::vector<Span> toks = {{0, 1}, {1, 2}, {2, 4}, {4, 5}, {5, 6}};
  auto mask = [&](std::vector<Span> spans) {
    std::string s;
    for (auto m : assistant_mask(text, spans, toks, MaskRule::kProcessor)) s += static_cast<char>('0' + m);
    return s;
  };
  // bisect on starts: [2,5) -> tokens from start 2 to the first start >= 5 (token 4): 2 and 3.
  EXPECT_EQ(mask({{2, 5}}), "00110");
  EXPECT_EQ(mask({{9, 10}, {0, 1}}), "10000");  // the truncated span is skipped, not a stop
  EXPECT_EQ(mask({{0, 0}}), "11111");           // end_pos 0: to the end
}

// Token offsets in order (as a tokenizer gives them) take a bisection; any other list the scan
// transformers does. Both must give the same masks: random ordered layouts with empty and
// repeated tokens (a medium's run), random spans, against the scan on a shuffled copy's order.
TEST(AssistantMaskTest, OrderedOffsetsGiveTheScansMasks) {
  std::uint64_t seed = 7;
  auto next = [&](std::uint64_t n) { seed = seed * 6364136223846793005ull + 1442695040888963407ull; return (seed >> 33) % n; };
  for (int round = 0; round < 2000; ++round) {
    const std::string text(40, 'x');
    std::vector<Span> toks;
    std::size_t at = 0;
    while (at < text.size()) {
      const std::size_t len = next(4) == 0 ? 0 : 1 + next(3);
      const std::size_t end = std::min(text.size(), at + len);
      const std::size_t copies = next(6) == 0 ? 2 + next(3) : 1;
      for (std::size_t k = 0; k < copies; ++k) toks.push_back({at, end});
      at = end == at ? at + (next(2) ? 0 : 1) : end;
      if (toks.size() > 200) break;
    }
    std::vector<Span> spans;
    for (std::size_t k = next(4); k > 0; --k) {
      const std::size_t b = next(44), e = b + next(10);
      spans.push_back({b, e});
    }
    // The scan, written out (transformers' char_to_token is a first match over all tokens).
    std::vector<std::uint8_t> want(toks.size(), 0);
    auto first = [&](std::size_t pos) -> long {
      for (std::size_t t = 0; t < toks.size(); ++t)
        if (toks[t].begin <= pos && pos < toks[t].end) return static_cast<long>(t);
      return -1;
    };
    for (const Span& sp : spans) {
      const long f = first(sp.begin), l = sp.end == 0 ? first(text.size() - 1) : first(sp.end - 1);
      if (f < 0) break;
      const std::size_t stop = l <= 0 ? toks.size() : static_cast<std::size_t>(l) + 1;
      for (std::size_t t = static_cast<std::size_t>(f); t < stop; ++t) want[t] = 1;
    }
    ASSERT_EQ(assistant_mask(text, spans, toks), want) << "round " << round;
  }
}

}  // namespace
}  // namespace stoker::jinja
