#include "stoker/text/chat_template.h"

#include <gtest/gtest.h>

namespace stoker::text {
namespace {

using dataset::Conversation;
using dataset::Message;
using dataset::Part;
using dataset::Role;
using Kind = Part::Kind;

Message msg(Role r, std::vector<Part> parts) { return Message{r, std::move(parts), false}; }
Part txt(std::string s) { return {Kind::kText, std::move(s)}; }
Part img() { return {Kind::kImage, "a.jpg"}; }
Part vid() { return {Kind::kVideo, "v.mp4"}; }

std::string supervised_text(const RenderedChat& r) {
  std::string s;
  for (const Segment& seg : r.segments) {
    if (seg.supervised) s += seg.text;
  }
  return s;
}

TEST(ChatTemplateTest, PicksTemplateByModelName) {
  EXPECT_EQ(*template_for_model("qwen2_vl"), TemplateKind::kQwen2VL);
  EXPECT_EQ(*template_for_model("qwen2_5_vl"), TemplateKind::kQwen2VL);
  EXPECT_EQ(*template_for_model("qwen2.5-vl"), TemplateKind::kQwen2VL);
  EXPECT_EQ(*template_for_model("Qwen/Qwen2.5-VL-7B-Instruct"), TemplateKind::kQwen2VL);
  EXPECT_EQ(*template_for_model("qwen3_vl"), TemplateKind::kQwen3VLInstruct);
  EXPECT_EQ(*template_for_model("Qwen/Qwen3-VL-8B-Instruct"), TemplateKind::kQwen3VLInstruct);
  EXPECT_FALSE(template_for_model("Qwen/Qwen3-VL-8B-Thinking").ok());
  EXPECT_FALSE(template_for_model("llava-1.5").ok());
}

TEST(ChatTemplateTest, Qwen2DefaultSystemAndVisionBlocks) {
  Conversation c;
  c.messages = {msg(Role::kUser, {img(), txt("Hi"), vid()}), msg(Role::kAssistant, {txt("Yo")})};
  RenderedChat r = *render_chat(c, TemplateKind::kQwen2VL);
  EXPECT_EQ(r.text(),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Hi"
            "<|vision_start|><|video_pad|><|vision_end|><|im_end|>\n"
            "<|im_start|>assistant\nYo<|im_end|>\n");
  EXPECT_EQ(supervised_text(r), "Yo<|im_end|>\n");
  EXPECT_EQ(r.num_images, 1);
  EXPECT_EQ(r.num_videos, 1);
}

TEST(ChatTemplateTest, Qwen2OwnSystemNoDefault) {
  Conversation c;
  c.messages = {msg(Role::kSystem, {txt("Be terse.")}), msg(Role::kUser, {txt("a"), txt("b")}),
                msg(Role::kAssistant, {txt("1")}), msg(Role::kUser, {txt("c")}),
                msg(Role::kAssistant, {txt("2")})};
  RenderedChat r = *render_chat(c, TemplateKind::kQwen2VL);
  EXPECT_EQ(r.text(),
            "<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\nab<|im_end|>\n"
            "<|im_start|>assistant\n1<|im_end|>\n<|im_start|>user\nc<|im_end|>\n"
            "<|im_start|>assistant\n2<|im_end|>\n");
  EXPECT_EQ(supervised_text(r), "1<|im_end|>\n2<|im_end|>\n");
  RenderedChat last = *render_chat(c, TemplateKind::kQwen2VL, {.last_turn_only = true});
  EXPECT_EQ(last.text(), r.text());
  EXPECT_EQ(supervised_text(last), "2<|im_end|>\n");
  RenderedChat gen = *render_chat(c, TemplateKind::kQwen2VL, {.add_generation_prompt = true});
  EXPECT_EQ(gen.text(), r.text() + "<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, VisionIdCountsAcrossTheConversation) {
  Conversation c;
  c.messages = {msg(Role::kUser, {img(), img()}), msg(Role::kAssistant, {txt("x")}),
                msg(Role::kUser, {vid(), img()}), msg(Role::kAssistant, {txt("y")})};
  RenderedChat r = *render_chat(c, TemplateKind::kQwen2VL, {.add_vision_id = true});
  std::string t = r.text();
  EXPECT_NE(t.find("user\nPicture 1: <|vision_start|><|image_pad|><|vision_end|>Picture 2: "),
            std::string::npos) << t;
  EXPECT_NE(t.find("user\nVideo 1: <|vision_start|><|video_pad|><|vision_end|>Picture 3: "),
            std::string::npos) << t;
}

TEST(ChatTemplateTest, Qwen3NoDefaultSystemAndToolWrapping) {
  Conversation c;
  c.messages = {msg(Role::kUser, {img(), txt("Look")}), msg(Role::kAssistant, {txt("call")}),
                msg(Role::kTool, {txt("r1")}), msg(Role::kTool, {txt("r2")}),
                msg(Role::kAssistant, {txt("done")})};
  RenderedChat r = *render_chat(c, TemplateKind::kQwen3VLInstruct);
  EXPECT_EQ(r.text(),
            "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Look<|im_end|>\n"
            "<|im_start|>assistant\ncall<|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n"
            "</tool_response><|im_end|>\n<|im_start|>assistant\ndone<|im_end|>\n");
  EXPECT_EQ(supervised_text(r), "call<|im_end|>\ndone<|im_end|>\n");
}

TEST(ChatTemplateTest, Qwen3SystemListKeepsTextOnly) {
  Conversation c;
  c.messages = {msg(Role::kSystem, {txt("S1"), txt("S2")}), msg(Role::kUser, {txt("q")}),
                msg(Role::kAssistant, {txt("a")})};
  EXPECT_EQ(render_chat(c, TemplateKind::kQwen3VLInstruct)->text(),
            "<|im_start|>system\nS1S2<|im_end|>\n<|im_start|>user\nq<|im_end|>\n"
            "<|im_start|>assistant\na<|im_end|>\n");
  // A system image would vanish from the Qwen3 render while its pixels were still processed.
  c.messages[0].parts.push_back(img());
  EXPECT_FALSE(render_chat(c, TemplateKind::kQwen3VLInstruct).ok());
}

TEST(ChatTemplateTest, Qwen3ThinkModes) {
  Conversation c;
  c.messages = {msg(Role::kUser, {txt("q")}), msg(Role::kAssistant, {txt("a")})};
  RenderedChat none = *render_chat(c, TemplateKind::kQwen3VLInstruct);
  EXPECT_EQ(none.text(), "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\na<|im_end|>\n");
  RenderedChat ans = *render_chat(c, TemplateKind::kQwen3VLInstruct,
                                  {.think = ThinkMode::kEmptyThinkInAnswer});
  EXPECT_EQ(supervised_text(ans), "<think>\n\n</think>\n\na<|im_end|>\n");
  RenderedChat prompt = *render_chat(c, TemplateKind::kQwen3VLInstruct,
                                     {.think = ThinkMode::kEmptyThinkInPrompt});
  EXPECT_EQ(prompt.text(), ans.text());
  EXPECT_EQ(supervised_text(prompt), "a<|im_end|>\n");
  // An answer that already thinks is left alone.
  c.messages[1].parts[0].value = "<think>\nhm\n</think>\n\na";
  RenderedChat own = *render_chat(c, TemplateKind::kQwen3VLInstruct,
                                  {.think = ThinkMode::kEmptyThinkInAnswer});
  EXPECT_EQ(supervised_text(own), "<think>\nhm\n</think>\n\na<|im_end|>\n");
}

}  // namespace
}  // namespace stoker::text
