// The Qwen2.5-Omni family behind the family seam (family.h): the thinker's inputs — images and
// videos as Qwen2.5-VL (patch 14, merge 2, temporal patch 2), audio as Whisper log-mel features
// (audio/processor.h: padding "max_length" to 300 s, tokens (L−1)//2+1 → (t−2)//2+1), the chat
// template through the Jinja engine with the Omni placeholders (<|vision_bos|><|IMAGE|>,
// <|vision_bos|><|VIDEO|>, <|audio_bos|><|AUDIO|>, each expanded to its medium's token run), and
// TMRoPE positions (batch/omni_rope.h: transformers' get_rope_index of Qwen2.5-Omni, int64).
// Specs: the preset "qwen2.5-omni", or a Hugging Face folder whose config.json says model_type
// "qwen2_5_omni" / "qwen2_5_omni_thinker" (its tokenizer files and chat template; the preset's
// template when it has none).
// Token ids: transformers' Qwen2_5OmniThinkerConfig defaults (audio 151646, image 151655, video
// 151656, vision_bos 151652, audio_bos 151647), the ids batch/omni_rope.h's parity test uses; the
// token names (<|AUDIO|>, <|audio_bos|>, <|audio_eos|>, <|vision_bos|>, <|vision_eos|>,
// <|IMAGE|>, <|VIDEO|>) are the processor's and the template's. The preset has no tokenizer of
// its own: it reads the installed Qwen2.5 files and renames the added tokens at those ids to the
// Omni names (Qwen2.5-Omni's vocabulary and merges are taken to be Qwen2.5's: UNCONFIRMED
// against the hub files; a folder with the real files is used as it is).
// use_audio_in_video (a video part's or the record's key): the video's audio track is an audio
// medium (pipeline/media_audio.cc) whose tokens the video's placeholder interleaves with the
// video's in 2-second chunks (batch::audio_in_video_layout), positions with use_audio_in_video
// (all of a sample's videos, or none: the processor's flag is per call).
// Qwen2-Audio ("qwen2-audio", folders of model_type "qwen2_audio") and Qwen3-Omni (folders only:
// its tokenizer and template come from the folder; position_ids float32 as transformers keeps
// them: a video's time index t·spg·13 may be fractional) below.
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "stoker/audio/processor.h"
#include "stoker/base/file.h"
#include "stoker/base/hash.h"
#include "stoker/base/option_name.h"
#include "stoker/batch/omni_rope.h"
#include "stoker/jinja/chat_template_files.h"
#include "stoker/jinja/chat_variables.h"
#include "stoker/model/family.h"
#include "stoker/model/model_config.h"
#include "stoker/model/qwen_omni.h"
#include "stoker/text/jinja_chat.h"
#include "stoker/text/qwen_vl.h"
#include "stoker/video/processor.h"

namespace stoker::model {
namespace {

constexpr std::string_view kPreset = "qwen2.5-omni";

// transformers @134856d3 tests/models/qwen2_5_omni/test_processor_qwen2_5_omni.py
// prepare_processor_dict()["chat_template"] (byte-identical to tests/jinja/templates/
// qwen2_5_omni.jinja, PROVENANCE.md there; qwen_omni_family_test checks it).
constexpr std::string_view kTemplate =
    R"TPL({% set audio_count = namespace(value=0) %}{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}{% for message in messages %}{% if loop.first and message['role'] != 'system' %}<|im_start|>system
You are a helpful assistant.<|im_end|>
{% endif %}<|im_start|>{{ message['role'] }}
{% if message['content'] is string %}{{ message['content'] }}<|im_end|>
{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}<|vision_bos|><|IMAGE|><|vision_eos|>{% elif content['type'] == 'audio' or 'audio' in content or 'audio_url' in content %}{% set audio_count.value = audio_count.value + 1 %}{% if add_audio_id %}Audio {{ audio_count.value }}: {% endif %}<|audio_bos|><|AUDIO|><|audio_eos|>{% elif content['type'] == 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}<|vision_bos|><|VIDEO|><|vision_eos|>{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>
{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %})TPL";

struct OmniNames {
  int id;
  const char* name;
};
// The Omni names of the added tokens at the Qwen2.5 ids (the preset's tokenizer).
constexpr OmniNames kOmniTokens[] = {
    {151646, "<|AUDIO|>"},      {151647, "<|audio_bos|>"}, {151648, "<|audio_eos|>"},
    {151652, "<|vision_bos|>"}, {151653, "<|vision_eos|>"}, {151655, "<|IMAGE|>"},
    {151656, "<|VIDEO|>"}};

constexpr std::string_view kImage = "<|IMAGE|>", kVideo = "<|VIDEO|>", kAudio = "<|AUDIO|>";
constexpr std::string_view kVisionBos = "<|vision_bos|>", kVisionEos = "<|vision_eos|>";
constexpr std::string_view kAudioBos = "<|audio_bos|>", kAudioEos = "<|audio_eos|>";

// The placeholder tokens of a family, as its processor spells them.
struct OmniTokenNames {
  std::string_view image, video, audio, vision_bos, vision_eos, audio_bos, audio_eos;
};
constexpr OmniTokenNames kQwen25Names = {kImage, kVideo, kAudio, kVisionBos, kVisionEos,
                                         kAudioBos, kAudioEos};
// Qwen3-Omni (processing_qwen3_omni_moe.py; ms-swift template/templates/qwen.py l.893–925).
constexpr OmniTokenNames kQwen3Names = {"<|image_pad|>", "<|video_pad|>", "<|audio_pad|>",
                                        "<|vision_start|>", "<|vision_end|>", "<|audio_start|>",
                                        "<|audio_end|>"};
constexpr std::string_view kModalities[] = {"image", "video", "audio"};

// A model folder's file (base/file.h: the reader the other families use).
Result<std::string> read_text(const std::filesystem::path& p) { return read_text_file(p.string()); }

// The Qwen2.5 tokenizer files with the Omni names at the Omni ids.
Result<std::unique_ptr<text::Tokenizer>> preset_tokenizer(const std::string& dir) {
  namespace fs = std::filesystem;
  STOKER_ASSIGN_OR_RETURN(std::string tok, read_text(fs::path(dir) / "tokenizer.json"));
  std::string cfg;
  if (Result<std::string> c = read_text(fs::path(dir) / "tokenizer_config.json"); c.ok()) cfg = *c;
  nlohmann::json t = nlohmann::json::parse(tok, nullptr, false);
  if (t.is_discarded() || !t.contains("added_tokens")) {
    return invalid_argument(dir + "/tokenizer.json: not a tokenizer with added tokens");
  }
  for (auto& a : t["added_tokens"]) {
    for (const OmniNames& n : kOmniTokens) {
      if (a.value("id", -1) == n.id) a["content"] = n.name;
    }
  }
  if (!cfg.empty()) {
    nlohmann::json c = nlohmann::json::parse(cfg, nullptr, false);
    if (!c.is_discarded() && c.contains("added_tokens_decoder")) {
      for (const OmniNames& n : kOmniTokens) {
        const std::string key = std::to_string(n.id);
        if (c["added_tokens_decoder"].contains(key)) c["added_tokens_decoder"][key]["content"] = n.name;
      }
      c.erase("additional_special_tokens");
      cfg = c.dump();
    }
  }
  return text::Tokenizer::from_json(t.dump(), cfg);
}

// The tokenizer a model opens: a folder's own (or --tokenizer's) as it is, a preset's installed
// Qwen2.5 files with the Omni names (preset_tokenizer).
Result<std::unique_ptr<text::Tokenizer>> open_tokenizer(const std::string& dir, bool own) {
  if (own) return text::Tokenizer::load(dir);
  return preset_tokenizer(dir);
}

// Each named special token's id; InvalidArgument naming the model, the folder and the token.
using TokenWant = std::pair<std::string_view, text::TokenId*>;
Status token_ids(const text::Tokenizer& tok, std::string_view model, const std::string& dir,
                 std::initializer_list<TokenWant> want) {
  for (auto [text, id] : want) {
    std::optional<text::TokenId> t = tok.token_to_id(text);
    if (!t) {
      return invalid_argument("the " + std::string(model) + " tokenizer in " + dir + " has no " +
                              std::string(text));
    }
    *id = *t;
  }
  return ok_status();
}

bool preceded_by(std::string_view text, std::size_t pos, std::string_view s) {
  return pos >= s.size() && text.compare(pos - s.size(), s.size(), s) == 0;
}

struct OmniIds {
  text::TokenId image = 0, video = 0, audio = 0, audio_bos = 0, audio_eos = 0;
};

// <|vision_bos|><|IMAGE|>, <|vision_bos|><|VIDEO|>, <|audio_bos|><|AUDIO|>: the pad is the medium
// (a run of its tokens), the block (bos … eos) never labelled.
class OmniPlaceholders final : public text::MediaPlaceholders {
 public:
  OmniPlaceholders(OmniIds ids, batch::OmniRopeConfig rope, OmniTokenNames names = kQwen25Names)
      : ids_(ids), merge_(rope.spatial_merge_size), rope_(rope), names_(names) {}
  std::span<const std::string_view> modalities() const override { return kModalities; }
  Status find(std::string_view text, std::vector<text::Placeholder>* out) const override {
    std::size_t pos = 0;
    while ((pos = text.find("<|", pos)) != std::string_view::npos) {
      int m = -1;
      std::string_view pad;
      for (int k = 0; k < 3; ++k) {
        const std::string_view cand = k == 0 ? names_.image : k == 1 ? names_.video : names_.audio;
        if (text.compare(pos, cand.size(), cand) == 0) {
          m = k;
          pad = cand;
        }
      }
      if (m < 0) {
        pos += 2;
        continue;
      }
      const std::string_view bos = m == 2 ? names_.audio_bos : names_.vision_bos;
      const std::string_view eos = m == 2 ? names_.audio_eos : names_.vision_eos;
      if (!preceded_by(text, pos, bos)) {
        return invalid_argument("the rendered chat has " + std::string(pad) + " at byte " +
                                std::to_string(pos) + " outside " + std::string(bos) +
                                std::string(pad) + std::string(eos) +
                                " (a record's text that spells the token a medium expands to)");
      }
      text::Placeholder p;
      p.modality = m;
      p.begin = pos;
      p.end = pos + pad.size();
      p.block_begin = pos - bos.size();
      p.block_end = text.compare(p.end, eos.size(), eos) == 0 ? p.end + eos.size() : p.end;
      out->push_back(p);
      pos = p.end;
    }
    return ok_status();
  }
  Status expand(const text::Placeholder& p, const text::VisionGrid& g,
                std::vector<text::Expansion>* out) const override {
    if (p.modality == 2) {
      if (g.tokens <= 0) return invalid_argument("audio with no tokens");
      out->push_back({text::Expansion::Kind::kRun, {}, ids_.audio, g.tokens, 0});
      return ok_status();
    }
    const std::int64_t n = std::int64_t{g.grid_t} * g.grid_h * g.grid_w;
    if (g.grid_h <= 0 || g.grid_w <= 0 || g.grid_t <= 0 || n % (merge_ * merge_) != 0) {
      return invalid_argument("bad grid");
    }
    if (p.modality == 1 && g.tokens > 0) {
      // use_audio_in_video (processing_qwen2_5_omni.py): <|vision_bos|><|audio_bos|> + the
      // video's and its track's tokens in 2-second chunks + <|audio_eos|><|vision_eos|>.
      out->push_back({text::Expansion::Kind::kToken, {}, ids_.audio_bos, 1, 0});
      for (const batch::TokenRun& r : batch::audio_in_video_layout(
               rope_, {g.grid_t, g.grid_h, g.grid_w}, g.second_per_grid, g.tokens)) {
        out->push_back({text::Expansion::Kind::kRun, {}, r.audio ? ids_.audio : ids_.video, r.count, 0});
      }
      out->push_back({text::Expansion::Kind::kToken, {}, ids_.audio_eos, 1, 0});
      return ok_status();
    }
    out->push_back({text::Expansion::Kind::kRun, {}, p.modality == 0 ? ids_.image : ids_.video,
                    n / (merge_ * merge_), 0});
    return ok_status();
  }

 private:
  OmniIds ids_;
  int merge_;
  batch::OmniRopeConfig rope_;
  OmniTokenNames names_;
};

// The chat template a model renders — the folder's (processor's, then tokenizer's default
// choice), else `stock` (empty: none, an error) — through the Jinja engine with the tokenizer
// folder's special tokens and the kwargs option; `*hash`: FNV-1a of the template and the kwargs.
Result<std::unique_ptr<text::JinjaRenderer>> omni_renderer(const std::string& spec, bool folder,
                                                           std::string_view stock,
                                                           std::string_view stock_label,
                                                           const std::string& tok_dir,
                                                           const ModelOptions& options,
                                                           std::uint64_t* hash) {
  std::string source(stock), origin = std::string(stock_label) + " template (preset)";
  if (folder) {
    for (jinja::Loader l : {jinja::Loader::kProcessor, jinja::Loader::kTokenizer}) {
      Result<jinja::ChatTemplates> t = jinja::discover_chat_templates(spec, l);
      if (!t.ok() || t->named.empty()) continue;
      STOKER_ASSIGN_OR_RETURN(source, jinja::select_chat_template(*t, options.chat_template, false, l));
      origin = spec + "/" + t->origin;
      break;
    }
  }
  if (source.empty()) {
    return invalid_argument(spec + ": no chat template in the folder (stoker has no stock " +
                            std::string(stock_label) + " template)");
  }
  std::uint64_t h = fnv1a64(source);
  h = fnv1a64(std::string_view("\0", 1), h);
  *hash = fnv1a64(options.chat_template_kwargs, h);
  text::JinjaChatOptions o;
  o.origin = origin;
  o.turns = text::qwen_turn_markers();
  STOKER_ASSIGN_OR_RETURN(o.special_tokens, jinja::special_tokens_from_folder(tok_dir));
  STOKER_ASSIGN_OR_RETURN(o.kwargs, text::template_kwargs(options.chat_template_kwargs,
                                                          option_name("chat_template_kwargs",
                                                                      "--chat-template-kwargs")));
  return text::JinjaRenderer::create(source, "", std::move(o));
}

// The video processor of a vision config (patch, temporal patch, merge, mean/std).
Result<video::VideoProcessor> omni_video(const image::ImageProcessorConfig& c) {
  video::VideoProcessorConfig v;
  v.patch_size = c.patch_size;
  v.temporal_patch_size = c.temporal_patch_size;
  v.merge_size = c.merge_size;
  v.mean = c.image_mean;
  v.std = c.image_std;
  return video::VideoProcessor::create(v);
}

// A folder's config.json model_type ("" when it is not a folder with one).
std::string folder_model_type(const std::string& spec, nlohmann::json* config = nullptr) {
  std::error_code ec;
  if (!std::filesystem::is_directory(spec, ec)) return {};
  Result<std::string> cfg = read_text(std::filesystem::path(spec) / "config.json");
  if (!cfg.ok()) return {};
  nlohmann::json j = nlohmann::json::parse(*cfg, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return {};
  std::string t = j.value("model_type", "");
  if (config != nullptr) *config = std::move(j);
  return t;
}

class OmniModel final : public Model {
 public:
  OmniModel(std::unique_ptr<text::Tokenizer> tok, image::ImageProcessor image,
            video::VideoProcessor video, audio::AudioProcessor audio,
            std::unique_ptr<text::JinjaRenderer> renderer, std::uint64_t template_hash,
            OmniIds ids, batch::OmniRopeConfig rope, OmniTokenNames names)
      : tok_(std::move(tok)),
        image_(std::move(image)),
        video_(std::move(video)),
        audio_(std::move(audio)),
        renderer_(std::move(renderer)),
        template_hash_(template_hash),
        placeholders_(ids, rope, names),
        rope_(rope),
        pad_(model::pad_id(*tok_)) {}

  std::string_view family() const override {
    return rope_.family == batch::OmniFamily::kQwen3Omni ? "qwen3_omni" : "qwen2_5_omni";
  }
  const image::ImageProcessor* image_processor() const override { return &image_; }
  const video::VideoProcessor* video_processor() const override { return &video_; }
  const audio::AudioProcessor* audio_processor() const override { return &audio_; }
  const text::Tokenizer& tokenizer() const override { return *tok_; }
  const text::ChatRenderer& renderer() const override { return *renderer_; }
  const text::MediaPlaceholders& placeholders() const override { return placeholders_; }
  int position_rows() const override { return 3; }
  Result<std::vector<double>> positions(const text::TokenizedSample& s,
                                        const SampleMedia& media) const override {
    std::vector<batch::GridTHW> ig, vg;
    // use_audio_in_video is per call in transformers: every video of the sample, or none.
    int with_track = 0;
    for (int i = 0; i < s.num_videos; ++i) with_track += media.videos[i].tokens > 0;
    if (with_track != 0 && with_track != s.num_videos) {
      return invalid_argument("use_audio_in_video on " + std::to_string(with_track) + " of the " +
                              std::to_string(s.num_videos) + " videos of the sample (the model's "
                              "processor takes it for all of a call's videos or none)");
    }
    for (int i = 0; i < s.num_images; ++i) {
      ig.push_back({media.images[i].grid_t, media.images[i].grid_h, media.images[i].grid_w});
    }
    for (int i = 0; i < s.num_videos; ++i) {
      vg.push_back({media.videos[i].grid_t, media.videos[i].grid_h, media.videos[i].grid_w});
    }
    std::size_t n_audio = 0;
    for (const text::VisionSpan& v : s.vision) n_audio += v.modality == "audio";
    if (with_track > 0) n_audio += static_cast<std::size_t>(s.num_videos);
    if (n_audio > media.audio_frames.size()) return invalid_argument("audio runs without lengths");
    std::span<const std::int32_t> ids(s.input_ids.data(), s.input_ids.size());
    STOKER_ASSIGN_OR_RETURN(
        batch::OmniRopeIndex r,
        batch::get_omni_rope_index(ids, ig, vg,
                                   media.video_seconds.subspan(0, std::min<std::size_t>(
                                                                      media.video_seconds.size(), vg.size())),
                                   media.audio_frames.subspan(0, n_audio), with_track > 0, rope_));
    // 2.5-Omni: whole numbers (transformers' `.long()` of the time index); 3-Omni: float32
    // values as transformers keeps them (a video's t·second_per_grid·13 unrounded), written as
    // float32 position_ids (float_positions()).
    return std::move(r.positions);
  }
  bool float_positions() const override { return rope_.family == batch::OmniFamily::kQwen3Omni; }
  std::int64_t pad_id() const override { return pad_; }
  std::string fingerprint() const override {
    return Model::fingerprint() + "\nomni.rope=" +
           std::to_string(static_cast<int>(rope_.family)) + ":" +
           std::to_string(rope_.position_id_per_seconds) + "\ntemplate=" +
           std::to_string(template_hash_);
  }

 private:
  std::unique_ptr<text::Tokenizer> tok_;
  image::ImageProcessor image_;
  video::VideoProcessor video_;
  audio::AudioProcessor audio_;
  std::unique_ptr<text::JinjaRenderer> renderer_;
  std::uint64_t template_hash_;
  OmniPlaceholders placeholders_;
  batch::OmniRopeConfig rope_;
  std::int64_t pad_;
};

bool is_omni_folder(const std::string& spec) {
  const std::string t = folder_model_type(spec);
  return t == "qwen2_5_omni" || t == "qwen2_5_omni_thinker";
}

class QwenOmniFamily final : public Family {
 public:
  std::string_view name() const override { return "qwen2_5_omni"; }
  bool claims(const std::string& spec) const override {
    return spec == kPreset || is_omni_folder(spec);
  }
  Result<std::unique_ptr<Model>> open(const std::string& spec,
                                      const ModelOptions& options) const override {
    const bool folder = spec != kPreset;
    // Vision as Qwen2.5-VL's processor (patch 14): the folder's preprocessor settings over it.
    STOKER_ASSIGN_OR_RETURN(ModelConfig vl, preset("qwen2.5-vl"));
    if (folder) {
      if (Result<std::string> pp = read_text(std::filesystem::path(spec) / "preprocessor_config.json");
          pp.ok()) {
        STOKER_RETURN_IF_ERROR(parse_preprocessor_config(*pp, &vl.image));
      }
    }
    vl.image.apply_exif_orientation = options.apply_exif_orientation;
    vl.image.resize_rules = options.small_images;
    std::string tok_dir = options.tokenizer;
    if (tok_dir.empty()) {
      STOKER_ASSIGN_OR_RETURN(tok_dir, default_tokenizer_dir(spec));
    }
    STOKER_ASSIGN_OR_RETURN(std::unique_ptr<text::Tokenizer> tok,
                            open_tokenizer(tok_dir, folder || !options.tokenizer.empty()));
    OmniIds ids;
    STOKER_RETURN_IF_ERROR(token_ids(*tok, "Qwen2.5-Omni", tok_dir,
                                     {{kImage, &ids.image}, {kVideo, &ids.video},
                                      {kAudio, &ids.audio}, {kAudioBos, &ids.audio_bos},
                                      {kAudioEos, &ids.audio_eos}}));
    batch::OmniRopeConfig rope = batch::OmniRopeConfig::qwen25_omni();
    rope.spatial_merge_size = vl.image.merge_size;
    rope.image_token_id = ids.image;
    rope.video_token_id = ids.video;
    rope.audio_token_id = ids.audio;
    STOKER_RETURN_IF_ERROR(token_ids(*tok, "Qwen2.5-Omni", tok_dir,
                                     {{kVisionBos, &rope.vision_start_token_id},
                                      {kAudioBos, &rope.audio_start_token_id}}));
    std::uint64_t template_hash = 0;
    STOKER_ASSIGN_OR_RETURN(std::unique_ptr<text::JinjaRenderer> renderer,
                            omni_renderer(spec, folder, kTemplate, "Qwen2.5-Omni", tok_dir, options,
                                          &template_hash));
    STOKER_ASSIGN_OR_RETURN(image::ImageProcessor image, image::ImageProcessor::create(vl.image));
    STOKER_ASSIGN_OR_RETURN(video::VideoProcessor video, omni_video(vl.image));
    STOKER_ASSIGN_OR_RETURN(audio::AudioProcessor audio,
                            audio::AudioProcessor::create(audio::AudioModel::kQwen25Omni));
    return std::unique_ptr<Model>(new OmniModel(std::move(tok), std::move(image), std::move(video),
                                                std::move(audio), std::move(renderer),
                                                template_hash, ids, rope, kQwen25Names));
  }
  Result<std::string> default_tokenizer_dir(const std::string& spec) const override {
    if (spec != kPreset) return spec;
    STOKER_ASSIGN_OR_RETURN(ModelConfig vl, preset("qwen2.5-vl"));
    return model::default_tokenizer_dir(vl);
  }
  std::vector<std::string> presets() const override { return {std::string(kPreset)}; }
};

// transformers @0851a87d src/transformers/models/qwen2_audio/processing_qwen2_audio.py
// default_chat_template (byte-identical to tests/jinja/templates/qwen2_audio.jinja).
constexpr std::string_view kQwen2AudioTemplate =
    R"TPL({% set audio_count = namespace(value=0) %}{% for message in messages %}{% if loop.first and message['role'] != 'system' %}<|im_start|>system
You are a helpful assistant.<|im_end|>
{% endif %}<|im_start|>{{ message['role'] }}
{% if message['content'] is string %}{{ message['content'] }}<|im_end|>
{% else %}{% for content in message['content'] %}{% if 'audio' in content or 'audio_url' in content %}{% set audio_count.value = audio_count.value + 1 %}Audio {{ audio_count.value }}: <|audio_bos|><|AUDIO|><|audio_eos|>
{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>
{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %})TPL";

// Qwen2-Audio (Qwen2AudioForConditionalGeneration): audio only — Whisper features padded to 30 s
// (truncated beyond), the same token formula as Qwen2.5-Omni, `<|audio_bos|><|AUDIO|>` expanded,
// and the language model's own 1-D positions (0 … L−1; no mRoPE). Images and videos: none (a
// record with one fails its sample at plan). Preset tokenizer: as the Omni preset's (the
// Qwen2.5 files with <|AUDIO|>/<|audio_bos|>/<|audio_eos|> at 151646–151648, the ids of
// Qwen2AudioConfig.audio_token_index and the processor; the rest of the vocabulary taken to be
// Qwen2's: UNCONFIRMED against the hub files).
class Qwen2AudioModel final : public Model {
 public:
  Qwen2AudioModel(std::unique_ptr<text::Tokenizer> tok, audio::AudioProcessor audio,
                  std::unique_ptr<text::JinjaRenderer> renderer, std::uint64_t template_hash,
                  OmniIds ids)
      : tok_(std::move(tok)),
        audio_(std::move(audio)),
        renderer_(std::move(renderer)),
        template_hash_(template_hash),
        placeholders_(ids, batch::OmniRopeConfig::qwen25_omni()),
        pad_(model::pad_id(*tok_)) {}
  std::string_view family() const override { return "qwen2_audio"; }
  const image::ImageProcessor* image_processor() const override { return nullptr; }
  const video::VideoProcessor* video_processor() const override { return nullptr; }
  const audio::AudioProcessor* audio_processor() const override { return &audio_; }
  const text::Tokenizer& tokenizer() const override { return *tok_; }
  const text::ChatRenderer& renderer() const override { return *renderer_; }
  const text::MediaPlaceholders& placeholders() const override { return placeholders_; }
  int position_rows() const override { return 1; }
  Result<std::vector<double>> positions(const text::TokenizedSample& s,
                                        const SampleMedia&) const override {
    std::vector<double> p(s.input_ids.size());
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<double>(i);
    return p;
  }
  std::int64_t pad_id() const override { return pad_; }
  std::string fingerprint() const override {
    return Model::fingerprint() + "\ntemplate=" + std::to_string(template_hash_);
  }

 private:
  std::unique_ptr<text::Tokenizer> tok_;
  audio::AudioProcessor audio_;
  std::unique_ptr<text::JinjaRenderer> renderer_;
  std::uint64_t template_hash_;
  OmniPlaceholders placeholders_;
  std::int64_t pad_;
};

bool is_qwen2_audio_folder(const std::string& spec) {
  return folder_model_type(spec) == "qwen2_audio";
}

class Qwen2AudioFamily final : public Family {
 public:
  std::string_view name() const override { return "qwen2_audio"; }
  bool claims(const std::string& spec) const override {
    return spec == "qwen2-audio" || is_qwen2_audio_folder(spec);
  }
  Result<std::unique_ptr<Model>> open(const std::string& spec,
                                      const ModelOptions& options) const override {
    const bool folder = spec != "qwen2-audio";
    std::string tok_dir = options.tokenizer;
    if (tok_dir.empty()) {
      STOKER_ASSIGN_OR_RETURN(tok_dir, default_tokenizer_dir(spec));
    }
    STOKER_ASSIGN_OR_RETURN(std::unique_ptr<text::Tokenizer> tok,
                            open_tokenizer(tok_dir, folder || !options.tokenizer.empty()));
    OmniIds ids;
    STOKER_RETURN_IF_ERROR(token_ids(*tok, "Qwen2-Audio", tok_dir,
                                     {{kAudio, &ids.audio}, {kAudioBos, &ids.audio_bos},
                                      {kAudioEos, &ids.audio_eos}}));
    std::uint64_t template_hash = 0;
    STOKER_ASSIGN_OR_RETURN(std::unique_ptr<text::JinjaRenderer> renderer,
                            omni_renderer(spec, folder, kQwen2AudioTemplate, "Qwen2-Audio", tok_dir,
                                          options, &template_hash));
    STOKER_ASSIGN_OR_RETURN(audio::AudioProcessor audio,
                            audio::AudioProcessor::create(audio::AudioModel::kQwen2Audio));
    return std::unique_ptr<Model>(new Qwen2AudioModel(std::move(tok), std::move(audio),
                                                      std::move(renderer), template_hash, ids));
  }
  Result<std::string> default_tokenizer_dir(const std::string& spec) const override {
    if (spec != "qwen2-audio") return spec;
    STOKER_ASSIGN_OR_RETURN(ModelConfig vl, preset("qwen2.5-vl"));
    return model::default_tokenizer_dir(vl);
  }
  std::vector<std::string> presets() const override { return {"qwen2-audio"}; }
};

// Qwen3-Omni (folders only: model_type "qwen3_omni_moe" / "qwen3_omni_moe_thinker"; stoker ships
// no Qwen3-Omni tokenizer or template): the folder's tokenizer and chat template, vision as
// Qwen3-VL's processor (patch 16, merge 2: factor 32) under the folder's preprocessor_config.json,
// audio with Qwen3-Omni's rules (a sample's clips padded to its longest, no truncation, 13 tokens
// per 100 frames), the Qwen3 placeholder names, TMRoPE with position_id_per_seconds from
// config.json (thinker_config, default 13) and token-level audio-in-video merging. position_ids
// are float32 (transformers' dtype; fractional where t·second_per_grid·13 is).
bool is_qwen3_omni_folder(const std::string& spec, nlohmann::json* config = nullptr) {
  const std::string t = folder_model_type(spec, config);
  return t == "qwen3_omni_moe" || t == "qwen3_omni_moe_thinker";
}

class Qwen3OmniFamily final : public Family {
 public:
  std::string_view name() const override { return "qwen3_omni"; }
  bool claims(const std::string& spec) const override { return is_qwen3_omni_folder(spec); }
  Result<std::unique_ptr<Model>> open(const std::string& spec,
                                      const ModelOptions& options) const override {
    nlohmann::json cfg;
    if (!is_qwen3_omni_folder(spec, &cfg)) {
      return invalid_argument(spec + ": not a Qwen3-Omni model folder (config.json model_type)");
    }
    const nlohmann::json& thinker =
        cfg.contains("thinker_config") && cfg["thinker_config"].is_object() ? cfg["thinker_config"] : cfg;
    STOKER_ASSIGN_OR_RETURN(ModelConfig vl, preset("qwen3-vl"));
    if (Result<std::string> pp = read_text(std::filesystem::path(spec) / "preprocessor_config.json");
        pp.ok()) {
      STOKER_RETURN_IF_ERROR(parse_preprocessor_config(*pp, &vl.image));
    }
    vl.image.apply_exif_orientation = options.apply_exif_orientation;
    vl.image.resize_rules = options.small_images;
    const std::string tok_dir = options.tokenizer.empty() ? spec : options.tokenizer;
    STOKER_ASSIGN_OR_RETURN(std::unique_ptr<text::Tokenizer> tok, text::Tokenizer::load(tok_dir));
    OmniIds ids;
    batch::OmniRopeConfig rope = batch::OmniRopeConfig::qwen3_omni();
    STOKER_RETURN_IF_ERROR(token_ids(*tok, "Qwen3-Omni", tok_dir,
                                     {{kQwen3Names.image, &ids.image},
                                      {kQwen3Names.video, &ids.video},
                                      {kQwen3Names.audio, &ids.audio},
                                      {kQwen3Names.audio_bos, &ids.audio_bos},
                                      {kQwen3Names.audio_eos, &ids.audio_eos},
                                      {kQwen3Names.vision_bos, &rope.vision_start_token_id}}));
    rope.spatial_merge_size = vl.image.merge_size;
    rope.image_token_id = ids.image;
    rope.video_token_id = ids.video;
    rope.audio_token_id = ids.audio;
    rope.audio_start_token_id = ids.audio_bos;
    if (thinker.contains("position_id_per_seconds") && thinker["position_id_per_seconds"].is_number()) {
      rope.position_id_per_seconds = thinker["position_id_per_seconds"].get<double>();
    }
    std::uint64_t template_hash = 0;
    STOKER_ASSIGN_OR_RETURN(std::unique_ptr<text::JinjaRenderer> renderer,
                            omni_renderer(spec, true, "", "Qwen3-Omni", tok_dir, options,
                                          &template_hash));
    STOKER_ASSIGN_OR_RETURN(image::ImageProcessor image, image::ImageProcessor::create(vl.image));
    STOKER_ASSIGN_OR_RETURN(video::VideoProcessor video, omni_video(vl.image));
    STOKER_ASSIGN_OR_RETURN(audio::AudioProcessor audio,
                            audio::AudioProcessor::create(audio::AudioModel::kQwen3Omni));
    return std::unique_ptr<Model>(new OmniModel(std::move(tok), std::move(image), std::move(video),
                                                std::move(audio), std::move(renderer),
                                                template_hash, ids, rope, kQwen3Names));
  }
  Result<std::string> default_tokenizer_dir(const std::string& spec) const override { return spec; }
};

}  // namespace

std::vector<const Family*> qwen_omni_families() {
  static const QwenOmniFamily k25;
  static const Qwen2AudioFamily k2a;
  static const Qwen3OmniFamily k3;
  return {&k25, &k2a, &k3};
}

std::string_view qwen2_audio_template() { return kQwen2AudioTemplate; }

std::string_view qwen25_omni_template() { return kTemplate; }

}  // namespace stoker::model
