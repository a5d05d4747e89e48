// The audio families (qwen_omni_family.cc): stock templates byte-identical to the parity corpus
// copies; the presets open (the installed Qwen2.5 tokenizer with the Omni names), take audio, and
// expand each medium as the HF processors do (counts computed here from the grids/token counts).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "stoker/audio/processor.h"
#include "stoker/dataset/conversation.h"
#include "stoker/model/family.h"
#include "stoker/model/qwen_omni.h"

namespace stoker::model {
namespace {

std::string read(const std::string& rel) {
  std::ifstream f(std::string(STOKER_SOURCE_DIR_FOR_TESTS) + "/" + rel, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(QwenOmniFamily, StockTemplatesAreTheCorpusFiles) {
  EXPECT_EQ(qwen25_omni_template(), read("tests/jinja/templates/qwen2_5_omni.jinja"));
  EXPECT_EQ(qwen2_audio_template(), read("tests/jinja/templates/qwen2_audio.jinja"));
}

TEST(QwenOmniFamily, PresetExpandsImageVideoAndAudio) {
  auto m = open_model("qwen2.5-omni", {});
  if (!m.ok() && m.error().code() == ErrorCode::kNotFound) GTEST_SKIP() << m.error().to_string();
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const Model& model = **m;
  EXPECT_EQ(model.family(), "qwen2_5_omni");
  ASSERT_NE(model.audio_processor(), nullptr);
  EXPECT_EQ(model.audio_processor()->model(), audio::AudioModel::kQwen25Omni);
  EXPECT_EQ(model.position_rows(), 3);
  EXPECT_EQ(model.tokenizer().token_to_id("<|AUDIO|>"), 151646);
  EXPECT_EQ(model.tokenizer().token_to_id("<|audio_bos|>"), 151647);
  EXPECT_EQ(model.tokenizer().token_to_id("<|vision_bos|>"), 151652);
  EXPECT_EQ(model.tokenizer().token_to_id("<|IMAGE|>"), 151655);
  EXPECT_EQ(model.tokenizer().token_to_id("<|VIDEO|>"), 151656);
  auto conv = dataset::parse_record(R"({"messages":[{"role":"user","content":[
      {"type":"image","image":"a.png"},{"type":"audio","audio":"b.wav"},
      {"type":"video","video":"c.mp4"},{"type":"text","text":"Describe."}]},
      {"role":"assistant","content":"Fine."}]})");
  ASSERT_TRUE(conv.ok());
  const text::VisionGrid image{1, 4, 6, {}, 0, 0}, video{2, 4, 4, {}, 0, 0};
  text::VisionGrid clip;
  clip.tokens = 50;
  const text::MediaOfKind media[] = {{"image", {&image, 1}}, {"video", {&video, 1}},
                                     {"audio", {&clip, 1}}};
  auto s = text::build_sample(*conv, model.renderer(), model.placeholders(), model.tokenizer(), media);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  auto count = [&](int id) { return std::count(s->input_ids.begin(), s->input_ids.end(), id); };
  EXPECT_EQ(count(151655), 1 * 4 * 6 / 4);
  EXPECT_EQ(count(151656), 2 * 4 * 4 / 4);
  EXPECT_EQ(count(151646), 50);
  // Audio-in-video: the video block holds <|audio_bos|>, the interleave, <|audio_eos|>.
  text::VisionGrid with_track = video;
  with_track.tokens = 30;
  with_track.second_per_grid = 1.0;
  const text::MediaOfKind media2[] = {{"image", {&image, 1}}, {"video", {&with_track, 1}},
                                      {"audio", {&clip, 1}}};
  s = text::build_sample(*conv, model.renderer(), model.placeholders(), model.tokenizer(), media2);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(count(151646), 80);
  EXPECT_EQ(count(151647), 2);
  EXPECT_EQ(count(151656), 8);
  SampleMedia sm;
  sm.images = {&image, 1};
  sm.videos = {&with_track, 1};
  const double seconds[] = {1.0};
  sm.video_seconds = seconds;
  const std::int64_t frames[] = {200, 120};
  sm.audio_frames = frames;
  auto pos = model.positions(*s, sm);
  ASSERT_TRUE(pos.ok()) << pos.error().to_string();
  EXPECT_EQ(pos->size(), 3 * s->input_ids.size());
}

TEST(QwenOmniFamily, Qwen2AudioPresetTakesAudioOnly) {
  auto m = open_model("qwen2-audio", {});
  if (!m.ok() && m.error().code() == ErrorCode::kNotFound) GTEST_SKIP() << m.error().to_string();
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ((*m)->image_processor(), nullptr);
  EXPECT_EQ((*m)->video_processor(), nullptr);
  EXPECT_EQ((*m)->audio_processor()->model(), audio::AudioModel::kQwen2Audio);
  EXPECT_EQ((*m)->position_rows(), 1);
  EXPECT_NE((*m)->fingerprint(), (*open_model("qwen2.5-omni", {}))->fingerprint());
}

}  // namespace
}  // namespace stoker::model
