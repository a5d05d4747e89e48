// The model-family seam: a test-only family (model/testing/toy_family.h — 1-D positions, another
// pad id, a trivial image processor, its own template and placeholder expansion, no videos) runs
// through the Loader, padded and packed (HF varlen and Megatron THD), with nothing of it outside
// its own files but the registration below. Checked independently: positions are 0..n−1 (then
// 1), rows are padded with <|fim_pad|>, every image's pixel rows are its resized pixels patched
// and normalised here (8×8 patches, (x/255 − 0.5)/0.5), every image is one <|box_start|> per
// patch, the ids are the tokenizer's encoding of the toy template's text, and a pack holds
// exactly the samples' own ids, labels and positions.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "stoker/audio/features.h"
#include "stoker/audio/load.h"
#include "stoker/audio/plan.h"
#include "stoker/base/file.h"
#include "stoker/synth/audio.h"
#include "stoker/image/resample.h"
#include "stoker/model/model_config.h"
#include "stoker/model/testing/toy_family.h"
#include "stoker/pipeline/test_util.h"
#include "stoker/text/tokenizer.h"

namespace stoker::pipeline {
namespace {

using testing::make_dataset;
using testing::small_config;

void register_toy() {
  static const bool once = (model::register_family(&model::testing::toy_family()), true);
  (void)once;
}

// Sample id → its record (the synth manifest has no blank lines: id = line index).
std::vector<nlohmann::json> records(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    out.push_back(nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false));
  }
  return out;
}

struct Row {
  std::vector<std::int64_t> ids, labels;
};

// The toy template's text and images of a record (OpenAI messages, as synth writes them).
struct Rendered {
  std::vector<std::string> runs;  // text between images (runs.size() = images + 1)
  std::vector<std::string> images;
};
Rendered render_toy(const nlohmann::json& r) {
  Rendered out;
  out.runs.emplace_back();
  for (const auto& m : r["messages"]) {
    const std::string role = m["role"];
    out.runs.back() += role + ": ";
    if (m["content"].is_string()) {
      out.runs.back() += m["content"].get<std::string>();
    } else {
      for (const auto& p : m["content"]) {
        if (p["type"] == "text") {
          out.runs.back() += p["text"].get<std::string>();
        } else if (p["type"] == "image") {
          out.images.push_back(p["image"]);
          out.runs.emplace_back();
        }
      }
    }
    out.runs.back() += "\n";
  }
  return out;
}

TEST(FamilyTest, TheToyFamilyRunsThroughTheLoaderPaddedAndPacked) {
  STOKER_REQUIRE_TOKENIZER();
  register_toy();
  const synth::SynthResult ds = make_dataset("toyfamily", 20, 0.1, 96);
  const std::string dir = std::filesystem::path(ds.data_path).parent_path().string();
  const std::vector<nlohmann::json> recs = records(ds.data_path);
  auto tok = text::Tokenizer::load(testing::tokenizer_dir());
  ASSERT_TRUE(tok.ok());
  const std::int64_t pad = *(*tok)->token_to_id("<|fim_pad|>");
  const std::int64_t box = *(*tok)->token_to_id("<|box_start|>");
  ASSERT_NE(pad, 151643);
  auto proc = image::ImageProcessor::create(model::testing::toy_image_config());
  ASSERT_TRUE(proc.ok());

  LoaderConfig c = small_config(ds.data_path);
  c.model = model::testing::kToySpec;
  auto loader = Loader::create(c);
  ASSERT_TRUE(loader.ok()) << loader.error().to_string();
  std::map<std::uint64_t, Row> rows;
  std::int64_t images_checked = 0;
  for (;;) {
    auto b = (*loader)->next();
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    if (!b->has_value()) break;
    const Batch& batch = **b;
    const batch::TensorView* ids_t = batch.layout().find("input_ids");
    const std::int64_t B = ids_t->shape[0], L = ids_t->shape[1];
    EXPECT_EQ(batch.layout().find("position_ids")->shape, (std::vector<std::int64_t>{B, L}));
    EXPECT_EQ(batch.layout().find("pixel_values_videos"), nullptr);
    const std::int64_t* ids = batch.as<std::int64_t>("input_ids");
    const std::int64_t* labels = batch.as<std::int64_t>("labels");
    const std::int64_t* mask = batch.as<std::int64_t>("attention_mask");
    const std::int64_t* pos = batch.as<std::int64_t>("position_ids");
    const std::int64_t* grids = batch.as<std::int64_t>("image_grid_thw");
    const float* pixels = batch.as<float>("pixel_values");
    const std::int64_t cols = batch.layout().find("pixel_values")->shape[1];
    ASSERT_EQ(cols, 3 * 8 * 8);
    std::int64_t image = 0, pixel_row = 0;
    for (std::int64_t r = 0; r < B; ++r) {
      const std::uint64_t id = batch.as<std::uint64_t>("sample_ids")[r];
      std::int64_t n = 0;
      while (n < L && mask[r * L + n] == 1) ++n;
      for (std::int64_t t = 0; t < L; ++t) {
        EXPECT_EQ(pos[r * L + t], t < n ? t : 1) << "1-D positions, padded with 1";
        if (t >= n) {
          EXPECT_EQ(ids[r * L + t], pad) << "the toy pad id";
        }
      }
      rows[id] = {{ids + r * L, ids + r * L + n}, {labels + r * L, labels + r * L + n}};
      // The expected ids: the template's text runs encoded, one <|box_start|> per patch between.
      const Rendered want = render_toy(recs[id]);
      std::vector<std::int64_t> expect;
      for (std::size_t k = 0; k < want.runs.size(); ++k) {
        std::vector<text::TokenId> enc;
        (*tok)->encode(want.runs[k], &enc);
        expect.insert(expect.end(), enc.begin(), enc.end());
        if (k == want.images.size()) break;
        const std::int64_t* g = grids + 3 * image;
        EXPECT_EQ(g[0], 1);
        expect.insert(expect.end(), g[0] * g[1] * g[2], box);
        // Its pixel rows: the resized image patched (8×8, no merge, one frame) and normalised.
        Result<std::vector<std::uint8_t>> bytes = read_file(dir + "/" + want.images[k]);
        ASSERT_TRUE(bytes.ok());
        Result<image::ImagePlan> plan = proc->plan(*bytes);
        ASSERT_TRUE(plan.ok());
        EXPECT_EQ(plan->grid_h, g[1]);
        EXPECT_EQ(plan->grid_w, g[2]);
        image::RgbImage decoded, resized;
        ASSERT_TRUE(proc->decode(*bytes, *plan, &decoded).ok());
        image::resize_bicubic_exact(decoded, plan->width, plan->height, &resized);
        for (std::int64_t ph = 0; ph < g[1]; ++ph) {
          for (std::int64_t pw = 0; pw < g[2]; ++pw, ++pixel_row) {
            const float* row = pixels + pixel_row * cols;
            for (int ch = 0; ch < 3; ++ch) {
              for (int y = 0; y < 8; ++y) {
                for (int x = 0; x < 8; ++x) {
                  const std::uint8_t v =
                      resized.pixels[((ph * 8 + y) * resized.width + pw * 8 + x) * 3 + ch];
                  const float want_v = (static_cast<float>(v / 255.0) - 0.5f) / 0.5f;
                  ASSERT_NEAR(row[(ch * 8 + y) * 8 + x], want_v, 1e-6)
                      << "sample " << id << " image " << k << " patch " << ph << "," << pw;
                }
              }
            }
          }
        }
        ++image;
        ++images_checked;
      }
      EXPECT_EQ(rows[id].ids, expect) << "sample " << id;
      // Labels: the assistant's text (and its line end) supervised, nothing else.
      std::int64_t supervised = 0;
      for (std::int64_t t = 0; t < n; ++t) {
        const std::int64_t l = labels[r * L + t];
        EXPECT_TRUE(l == -100 || l == ids[r * L + t]);
        supervised += l != -100;
      }
      EXPECT_GT(supervised, 0) << "sample " << id;
      EXPECT_EQ(labels[r * L], -100) << "\"user: \" / \"system: \" is never supervised";
    }
  }
  EXPECT_GT(images_checked, 10);
  EXPECT_GT(rows.size(), 12u);

  // Packed: each sub-sequence is its sample's own ids, labels (the first one −100) and 0..n−1.
  for (batch::PackFormat format : {batch::PackFormat::kHF, batch::PackFormat::kMegatron}) {
    LoaderConfig pc = c;
    pc.packing.batching = Batching::kPack;
    pc.packing.max_tokens = 4096;
    pc.packing.window = 8;
    pc.packing.format = format;
    pc.packing.align = format == batch::PackFormat::kMegatron ? 8 : 1;
    auto packer = Loader::create(pc);
    ASSERT_TRUE(packer.ok()) << packer.error().to_string();
    std::size_t seen = 0;
    for (;;) {
      auto b = (*packer)->next();
      ASSERT_TRUE(b.ok()) << b.error().to_string();
      if (!b->has_value()) break;
      const Batch& batch = **b;
      const std::int64_t N = batch.layout().find("input_ids")->shape[1];
      const std::int64_t* ids = batch.as<std::int64_t>("input_ids");
      const std::int64_t* labels = batch.as<std::int64_t>("labels");
      const std::int64_t* pos = batch.as<std::int64_t>("position_ids");
      const bool hf = format == batch::PackFormat::kHF;
      EXPECT_EQ(batch.layout().find("position_ids")->shape, (std::vector<std::int64_t>{1, N}));
      const std::int32_t* cu = batch.as<std::int32_t>(hf ? "cu_seq_lens_q" : "cu_seqlens_q_padded");
      const std::int32_t* real = batch.as<std::int32_t>(hf ? "cu_seq_lens_q" : "cu_seqlens_q");
      for (std::int64_t k = 0; k < batch.size(); ++k) {
        const Row& want = rows.at(batch.as<std::uint64_t>("sample_ids")[k]);
        const std::int64_t start = cu[k], n = real[k + 1] - real[k];
        ASSERT_EQ(n, static_cast<std::int64_t>(want.ids.size()));
        for (std::int64_t t = 0; t < cu[k + 1] - start; ++t) {
          EXPECT_EQ(pos[start + t], t);
          if (t >= n) {
            EXPECT_EQ(ids[start + t], pad) << "a Megatron alignment gap holds the pad id";
            continue;
          }
          EXPECT_EQ(ids[start + t], want.ids[t]);
          const std::int64_t label = hf ? (t == 0 ? -100 : want.labels[t])
                                        : (t + 1 < n ? want.labels[t + 1] : -100);
          EXPECT_EQ(labels[start + t], label);
        }
        ++seen;
      }
    }
    EXPECT_EQ(seen, rows.size()) << "every sample once, packed";
  }
}

TEST(FamilyTest, TheRegistryNamesEveryPresetAndTheToyNeedsItsTokenizer) {
  register_toy();
  Result<const model::Family*> f = model::family_for("toy");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->name(), "toy");
  EXPECT_EQ((*model::family_for("qwen3-vl"))->name(), "qwen3_vl");
  Result<const model::Family*> none = model::family_for("llama-7b");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().to_string().find("qwen2.5-vl"), std::string::npos);
  EXPECT_NE(none.error().to_string().find("toy"), std::string::npos);
  EXPECT_EQ(model::open_model("toy", {}).error().code(), ErrorCode::kNotFound);
}

// The spec is parsed once (load_config: the Qwen-VL families' ModelConfig, null for a family
// without one) and the models opened with that parse; the video time index is a choice within
// the family's position rule. Expected temporal positions from transformers' formula: a video
// of grid [2, 4, 4] (8 merged tokens, 4 per temporal group) at 0.5 s per grid after "x <vs>"
// starts at 2; Qwen2.5-VL float: t_idx = long(t · 0.5 · tps); int: t · long(0.5) · tps = 0;
// Qwen2-VL: t whatever the option.
TEST(FamilyTest, TheSpecIsParsedOnceAndTheTimeIndexIsAChoiceOfThePositionRule) {
  STOKER_REQUIRE_TOKENIZER();
  register_toy();
  Result<std::shared_ptr<const model::ModelConfig>> toy = model::load_config("toy");
  ASSERT_TRUE(toy.ok());
  EXPECT_EQ(*toy, nullptr);
  Result<std::shared_ptr<const model::ModelConfig>> q = model::load_config("qwen2.5-vl");
  ASSERT_TRUE(q.ok() && *q != nullptr);
  EXPECT_EQ((*q)->family, model::ModelFamily::kQwen25VL);

  text::TokenizedSample sample;
  sample.input_ids = {100, (*q)->vision_start_token_id};
  for (int i = 0; i < 8; ++i) sample.input_ids.push_back((*q)->video_token_id);
  sample.input_ids.push_back((*q)->vision_end_token_id);
  sample.num_videos = 1;
  const std::vector<text::VisionGrid> videos = {{2, 4, 4, {}}};
  const std::vector<double> seconds = {0.5};
  const model::SampleMedia media{.images = {}, .videos = videos, .video_seconds = seconds};
  auto temporal = [&](const std::string& spec, batch::TimeIndexMode mode,
                      std::shared_ptr<const model::ModelConfig> parsed) {
    model::ModelOptions o;
    o.tokenizer = testing::tokenizer_dir();
    o.video_time_index = mode;
    o.parsed = std::move(parsed);
    Result<std::unique_ptr<model::Model>> m = model::open_model(spec, o);
    EXPECT_TRUE(m.ok()) << m.error().to_string();
    Result<std::vector<double>> p = (*m)->positions(sample, media);
    EXPECT_TRUE(p.ok()) << p.error().to_string();
    EXPECT_EQ((*m)->position_rows(), 3);
    return std::vector<std::int64_t>(p->begin() + 2, p->begin() + 10);  // row 0, the video
  };
  using V = std::vector<std::int64_t>;
  EXPECT_EQ(temporal("qwen2.5-vl", batch::TimeIndexMode::kFloatThenTruncate, *q),
            (V{2, 2, 2, 2, 3, 3, 3, 3}));  // long(1 · 0.5 · 2) = 1
  EXPECT_EQ(temporal("qwen2.5-vl", batch::TimeIndexMode::kIntCastFirst, *q),
            (V{2, 2, 2, 2, 2, 2, 2, 2}));  // 1 · long(0.5) · 2 = 0
  EXPECT_EQ(temporal("qwen2.5-vl", batch::TimeIndexMode::kIntCastFirst, nullptr),
            (V{2, 2, 2, 2, 2, 2, 2, 2}));  // no parse given: the family reads the spec
  // The parse given is the one used (not read again): tokens_per_second 4 → long(1 · 0.5 · 4).
  auto fast = std::make_shared<model::ModelConfig>(**q);
  fast->tokens_per_second = 4;
  EXPECT_EQ(temporal("qwen2.5-vl", batch::TimeIndexMode::kFloatThenTruncate, fast),
            (V{2, 2, 2, 2, 4, 4, 4, 4}));
  for (batch::TimeIndexMode mode :
       {batch::TimeIndexMode::kFloatThenTruncate, batch::TimeIndexMode::kIntCastFirst}) {
    EXPECT_EQ(temporal("qwen2-vl", mode, nullptr), (V{2, 2, 2, 2, 3, 3, 3, 3}));
  }
}

// Audio through the seam with clips of different widths in one batch (toy-audio: Qwen3-Omni's
// rules pad a sample's clips to its longest, so samples differ in frames): every clip's rows equal
// the extractor run on that sample's call (audio/plan.h), zeros past its own frames; its mask row
// ones for its mask sum then zeros; its tokens = the placeholder's run. Padded and packed.
TEST(FamilyTest, AudioClipsOfDifferentWidthsThroughTheLoader) {
  STOKER_REQUIRE_TOKENIZER();
  register_toy();
  const std::string dir = ::testing::TempDir() + "toyaudio";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto mix = synth::add_audio_records(dir, 10, 5);
  ASSERT_TRUE(mix.ok()) << mix.error().to_string();
  // Audio-only records (the video kind of the mix needs a video processor), then records of two
  // and three clips (a call of several clips: the longest sets the width).
  std::vector<std::string> clips;
  for (const std::string& p : mix->paths) {
    if (p.ends_with(".mp4")) continue;
    clips.push_back(p);
  }
  ASSERT_GE(clips.size(), 6u);
  auto record = [](const std::vector<std::string>& paths) {
    nlohmann::json content = nlohmann::json::array();
    for (const std::string& p : paths) content.push_back({{"type", "audio"}, {"audio", p}});
    content.push_back({{"type", "text"}, {"text", "What do you hear?"}});
    return nlohmann::json{{"messages", {{{"role", "user"}, {"content", content}},
                                        {{"role", "assistant"}, {"content", "Sounds."}}}}};
  };
  std::vector<std::vector<std::string>> samples;
  for (const std::string& p : clips) samples.push_back({p});
  samples.push_back({clips[0], clips[1]});
  samples.push_back({clips[2], clips[3], clips[4]});
  samples.push_back({clips[5], clips[0]});
  const std::string path = dir + "/toy_audio.jsonl";
  {
    std::ofstream f(path);
    for (const auto& s : samples) f << record(s).dump() << "\n";
  }
  auto extractor = audio::WhisperFeatureExtractor::create(
      audio::WhisperConfig::for_model(audio::AudioModel::kQwen3Omni));
  ASSERT_TRUE(extractor.ok());
  auto tok = text::Tokenizer::load(testing::tokenizer_dir());
  ASSERT_TRUE(tok.ok());
  const std::int64_t box_end = *(*tok)->token_to_id("<|box_end|>");

  for (bool packed : {false, true}) {
    LoaderConfig c = small_config(path);
    c.model = model::testing::kToyAudioSpec;
    c.errors.max_error_rate = 0;
    if (packed) {
      c.packing.batching = Batching::kPack;
      c.packing.max_tokens = 4096;
      c.packing.window = 8;
    }
    auto loader = Loader::create(c);
    ASSERT_TRUE(loader.ok()) << loader.error().to_string();
    std::size_t delivered = 0, widths_seen = 0, narrower = 0;
    std::set<std::int64_t> frames_seen;
    for (;;) {
      auto b = (*loader)->next();
      ASSERT_TRUE(b.ok()) << b.error().to_string();
      if (!b->has_value()) break;
      const Batch& batch = **b;
      const batch::TensorView* ft = batch.layout().find("input_features");
      ASSERT_NE(ft, nullptr);
      ASSERT_EQ(ft->shape.size(), 3u);
      ASSERT_EQ(ft->shape[1], 128);
      const std::int64_t W = ft->shape[2];
      EXPECT_EQ(batch.layout().find("feature_attention_mask")->shape,
                (std::vector<std::int64_t>{ft->shape[0], W}));
      const float* feats = batch.as<float>("input_features");
      const std::int32_t* mask = batch.as<std::int32_t>("feature_attention_mask");
      const std::int64_t* ids = batch.as<std::int64_t>("input_ids");
      const std::int64_t n_ids = batch.layout().find("input_ids")->bytes() / 8;
      std::int64_t clip = 0, want_tokens = 0;
      for (std::uint64_t sid : testing::sample_ids(batch)) {
        ++delivered;
        std::vector<std::vector<float>> waves;
        std::vector<std::int64_t> lengths;
        for (const std::string& p : samples[sid]) {
          auto bytes = read_file(dir + "/" + p);
          ASSERT_TRUE(bytes.ok());
          auto w = audio::load(*bytes);
          ASSERT_TRUE(w.ok()) << w.error().to_string();
          lengths.push_back(static_cast<std::int64_t>(w->samples.size()));
          waves.push_back(std::move(w->samples));
        }
        auto call = audio::plan_call(audio::AudioModel::kQwen3Omni, lengths);
        ASSERT_TRUE(call.ok());
        const std::int64_t F = call->layout.frames;
        frames_seen.insert(F);
        ASSERT_LE(F, W);
        narrower += F < W ? waves.size() : 0;
        std::vector<float> want(static_cast<std::size_t>(128 * F));
        for (std::size_t k = 0; k < waves.size(); ++k, ++clip) {
          auto m = extractor->extract(waves[k], call->layout, want.data());
          ASSERT_TRUE(m.ok());
          for (std::int64_t r = 0; r < 128; ++r) {
            const float* row = feats + (clip * 128 + r) * W;
            ASSERT_EQ(std::memcmp(row, want.data() + r * F, static_cast<std::size_t>(F) * 4), 0)
                << "sample " << sid << " clip " << k << " mel " << r;
            for (std::int64_t x = F; x < W; ++x) ASSERT_EQ(row[x], 0.0f);
          }
          for (std::int64_t x = 0; x < W; ++x) {
            ASSERT_EQ(mask[clip * W + x], x < call->mask_frames[k] ? 1 : 0) << sid << " " << x;
          }
          want_tokens += call->tokens[k];
        }
      }
      EXPECT_EQ(clip, ft->shape[0]);
      EXPECT_EQ(std::count(ids, ids + n_ids, box_end), want_tokens);
      widths_seen += 1;
    }
    EXPECT_EQ(delivered, samples.size()) << (packed ? "packed" : "padded");
    EXPECT_GE(frames_seen.size(), 4u) << "samples of several widths";
    EXPECT_GT(narrower, 0u) << "clips narrower than their batch (spread to its width)";
  }
}

}  // namespace
}  // namespace stoker::pipeline
