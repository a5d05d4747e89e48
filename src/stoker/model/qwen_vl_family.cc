// The Qwen-VL families behind the family seam (family.h): Qwen2-VL, Qwen2.5-VL and Qwen3-VL,
// one registry entry each. A model is its ModelConfig (presets, HF folders: model_config.h), its
// tokenizer, the image and video processors from the folder's preprocessor settings, the chat
// template chat_template() chooses rendered by the Jinja engine (text/jinja_chat.h; the native
// renderers of text/chat_template.h as a fast path for the stock templates) with the Qwen
// placeholders (text/qwen_vl.h), 3-D mRoPE positions (batch/mrope.h with the family's rule) and
// <|endoftext|> as the pad id.
#include <memory>

#include "stoker/base/hash.h"
#include "stoker/base/option_name.h"
#include "stoker/batch/mrope.h"
#include "stoker/jinja/chat_variables.h"
#include "stoker/model/family.h"
#include "stoker/model/model_config.h"
#include "stoker/text/qwen_vl.h"
#include "stoker/video/processor.h"

namespace stoker::model {
namespace {

class QwenVLModel final : public Model {
 public:
  QwenVLModel(ModelConfig config, std::unique_ptr<text::Tokenizer> tokenizer,
              image::ImageProcessor image, video::VideoProcessor video,
              std::unique_ptr<text::QwenRenderer> renderer, std::uint64_t template_hash,
              text::QwenPlaceholders placeholders, batch::TimeIndexMode time_mode)
      : config_(std::move(config)),
        tokenizer_(std::move(tokenizer)),
        image_(std::move(image)),
        video_(std::move(video)),
        renderer_(std::move(renderer)),
        template_hash_(template_hash),
        placeholders_(placeholders),
        rope_(rope_config(config_, time_mode)),
        pad_(model::pad_id(*tokenizer_)) {}

  std::string_view family() const override { return family_name(config_.family); }
  const image::ImageProcessor* image_processor() const override { return &image_; }
  const video::VideoProcessor* video_processor() const override { return &video_; }
  const text::Tokenizer& tokenizer() const override { return *tokenizer_; }
  const text::ChatRenderer& renderer() const override { return *renderer_; }
  const text::MediaPlaceholders& placeholders() const override { return placeholders_; }
  int position_rows() const override { return 3; }
  Result<std::vector<double>> positions(const text::TokenizedSample& sample,
                                        const SampleMedia& media) const override {
    STOKER_ASSIGN_OR_RETURN(batch::RopeIndex rope,
                            batch::get_rope_index(sample, media.images, media.videos, rope_,
                                                  media.video_seconds));
    return std::vector<double>(rope.positions.begin(), rope.positions.end());
  }
  std::int64_t pad_id() const override { return pad_; }
  // The seam's default (processors, vocabulary, positions, pad) and what else decides a Qwen-VL
  // sample's tokens: the vision token ids, tokens per second (video positions), the template
  // (its text, the tool_use one, the kwargs option: FNV-1a 64).
  std::string fingerprint() const override {
    return Model::fingerprint() + "\nimage_token=" + std::to_string(config_.image_token_id) +
           "\nvideo_token=" + std::to_string(config_.video_token_id) +
           "\nvision_start=" + std::to_string(config_.vision_start_token_id) +
           "\nvision_end=" + std::to_string(config_.vision_end_token_id) +
           "\ntokens_per_second=" + std::to_string(config_.tokens_per_second) +
           "\ntemplate=" + std::to_string(template_hash_);
  }

 private:
  ModelConfig config_;
  std::unique_ptr<text::Tokenizer> tokenizer_;
  image::ImageProcessor image_;
  video::VideoProcessor video_;
  std::unique_ptr<text::QwenRenderer> renderer_;
  std::uint64_t template_hash_;
  text::QwenPlaceholders placeholders_;
  batch::RopeConfig rope_;
  std::int64_t pad_;
};

// The model's template (chat_template()) through the Jinja engine, with the native fast path
// when it is a stock template; special tokens from the tokenizer's files; the kwargs option.
Result<std::unique_ptr<text::QwenRenderer>> make_renderer(const ModelConfig& m,
                                                          const std::string& tok_dir,
                                                          const ModelOptions& options,
                                                          std::uint64_t* template_hash) {
  STOKER_ASSIGN_OR_RETURN(SelectedTemplate t, chat_template(m, options.chat_template));
  std::uint64_t h = fnv1a64(t.source);
  h = fnv1a64(std::string_view("\0", 1), h);
  h = fnv1a64(t.tool_use, h);
  h = fnv1a64(std::string_view("\0", 1), h);
  *template_hash = fnv1a64(options.chat_template_kwargs, h);
  text::JinjaChatOptions o;
  o.origin = t.origin;
  o.turns = text::qwen_turn_markers();
  STOKER_ASSIGN_OR_RETURN(o.special_tokens,
                          jinja::special_tokens_from_folder(m.folder.empty() ? tok_dir : m.folder));
  STOKER_ASSIGN_OR_RETURN(o.kwargs, text::template_kwargs(options.chat_template_kwargs,
                                                          option_name("chat_template_kwargs",
                                                                      "--chat-template-kwargs")));
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<text::JinjaRenderer> jinja,
                          text::JinjaRenderer::create(t.source, t.tool_use, std::move(o)));
  return std::make_unique<text::QwenRenderer>(std::move(jinja), t.native);
}

class QwenVLFamily final : public Family {
 public:
  explicit QwenVLFamily(ModelFamily variant) : variant_(variant) {}
  std::string_view name() const override { return family_name(variant_); }
  bool claims(const std::string& spec) const override { return detect_family(spec) == variant_; }

  Result<std::unique_ptr<Model>> open(const std::string& spec,
                                      const ModelOptions& options) const override {
    // The spec parsed once for the run (load_config, shared), else read here; the image
    // settings applied.
    STOKER_ASSIGN_OR_RETURN(ModelConfig m, load_model(spec, options));
    std::string tok_dir = options.tokenizer;
    if (tok_dir.empty()) {
      STOKER_ASSIGN_OR_RETURN(tok_dir, model::default_tokenizer_dir(m));
    }
    STOKER_ASSIGN_OR_RETURN(std::unique_ptr<text::Tokenizer> tokenizer, text::Tokenizer::load(tok_dir));
    std::uint64_t template_hash = 0;
    STOKER_ASSIGN_OR_RETURN(std::unique_ptr<text::QwenRenderer> renderer,
                            make_renderer(m, tok_dir, options, &template_hash));
    STOKER_ASSIGN_OR_RETURN(text::QwenTokens ids, text::qwen_tokens(*tokenizer));
    // The placeholders are the processor's: Qwen3-VL's video processor timestamps each group.
    const text::QwenPlaceholders placeholders(ids, m.image.merge_size,
                                              m.family == ModelFamily::kQwen3VL);
    STOKER_ASSIGN_OR_RETURN(image::ImageProcessor image, image::ImageProcessor::create(m.image));
    video::VideoProcessorConfig vcfg;
    vcfg.patch_size = m.image.patch_size;
    vcfg.temporal_patch_size = m.image.temporal_patch_size;
    vcfg.merge_size = m.image.merge_size;
    vcfg.mean = m.image.image_mean;
    vcfg.std = m.image.image_std;
    STOKER_ASSIGN_OR_RETURN(video::VideoProcessor video, video::VideoProcessor::create(vcfg));
    return std::unique_ptr<Model>(new QwenVLModel(std::move(m), std::move(tokenizer),
                                                  std::move(image), std::move(video),
                                                  std::move(renderer), template_hash, placeholders,
                                                  options.video_time_index));
  }

  Result<std::shared_ptr<const ModelConfig>> load_config(const std::string& spec) const override {
    STOKER_ASSIGN_OR_RETURN(ModelConfig m, load_model(spec));
    return std::shared_ptr<const ModelConfig>(std::make_shared<const ModelConfig>(std::move(m)));
  }

  Result<std::string> default_tokenizer_dir(const std::string& spec) const override {
    STOKER_ASSIGN_OR_RETURN(ModelConfig m, load_model(spec));
    return model::default_tokenizer_dir(m);
  }

  std::vector<std::string> presets() const override {
    switch (variant_) {
      case ModelFamily::kQwen2VL: return {"qwen2-vl"};
      case ModelFamily::kQwen25VL: return {"qwen2.5-vl"};
      case ModelFamily::kQwen3VL: return {"qwen3-vl"};
    }
    return {};
  }

 private:
  ModelFamily variant_;
};

}  // namespace

std::vector<const Family*> qwen_vl_families() {
  static const QwenVLFamily k2(ModelFamily::kQwen2VL), k25(ModelFamily::kQwen25VL),
      k3(ModelFamily::kQwen3VL);
  return {&k2, &k25, &k3};
}

}  // namespace stoker::model
