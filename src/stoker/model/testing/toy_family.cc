#include "stoker/model/testing/toy_family.h"

#include <numeric>
#include <optional>

#include "stoker/audio/processor.h"

namespace stoker::model::testing {
namespace {

constexpr std::string_view kImageMarker = "<|box_start|>";
constexpr std::string_view kAudioMarker = "<|box_end|>";  // toy-audio: one per audio token
constexpr std::string_view kModalities[] = {"image", "audio"};

// "<role>: " (never supervised), the message's parts (an assistant's supervised; an image is
// one <|box_start|>), "\n" (supervised after an assistant message, as an end of turn).
class ToyRenderer final : public text::ChatRenderer {
 public:
  Result<text::ChatText> render(const dataset::Conversation& c) const override {
    text::ChatText out;
    for (const dataset::Message& msg : c.messages) {
      const bool assistant = msg.role == dataset::Role::kAssistant;
      const char* role = assistant ? "assistant" : msg.role == dataset::Role::kSystem ? "system" : "user";
      out.text += std::string(role) + ": ";
      const std::size_t begin = out.text.size();
      for (const dataset::Part& p : msg.parts) {
        if (p.kind == dataset::Part::Kind::kText) {
          out.text += p.value;
        } else if (p.kind == dataset::Part::Kind::kImage) {
          out.text += kImageMarker;
        } else if (p.kind == dataset::Part::Kind::kAudio) {
          out.text += kAudioMarker;  // a model without audio fails it when planning
        } else {
          return invalid_argument("the toy model takes no videos");
        }
      }
      out.text += "\n";
      if (assistant) out.supervised.push_back({begin, out.text.size()});
    }
    return out;
  }
  std::string describe() const override { return "the toy template; labels: assistant turns"; }
};

// An image: one <|box_start|> per patch (no merge).
class ToyPlaceholders final : public text::MediaPlaceholders {
 public:
  ToyPlaceholders(text::TokenId box, text::TokenId box_end) : box_(box), box_end_(box_end) {}
  std::span<const std::string_view> modalities() const override { return kModalities; }
  Status find(std::string_view text, std::vector<text::Placeholder>* out) const override {
    for (std::size_t pos = 0; pos < text.size(); ++pos) {
      for (int m = 0; m < 2; ++m) {
        const std::string_view marker = m == 0 ? kImageMarker : kAudioMarker;
        if (text.compare(pos, marker.size(), marker) == 0) {
          out->push_back({pos, pos + marker.size(), pos, pos + marker.size(), m});
          pos += marker.size() - 1;
          break;
        }
      }
    }
    return ok_status();
  }
  Status expand(const text::Placeholder& p, const text::VisionGrid& g,
                std::vector<text::Expansion>* out) const override {
    if (p.modality == 1) {
      out->push_back({text::Expansion::Kind::kRun, {}, box_end_, g.tokens, 0});
      return ok_status();
    }
    const std::int64_t count = std::int64_t{g.grid_t} * g.grid_h * g.grid_w;
    out->push_back({text::Expansion::Kind::kRun, {}, box_, count, 0});
    return ok_status();
  }

 private:
  text::TokenId box_, box_end_;
};

class ToyModel final : public Model {
 public:
  ToyModel(std::unique_ptr<text::Tokenizer> tok, image::ImageProcessor image, std::int64_t pad,
           text::TokenId box, text::TokenId box_end, std::optional<audio::AudioProcessor> audio)
      : tok_(std::move(tok)), image_(std::move(image)), pad_(pad), placeholders_(box, box_end),
        audio_(std::move(audio)) {}
  std::string_view family() const override { return "toy"; }
  const image::ImageProcessor* image_processor() const override { return &image_; }
  const audio::AudioProcessor* audio_processor() const override {
    return audio_ ? &*audio_ : nullptr;
  }
  const video::VideoProcessor* video_processor() const override { return nullptr; }
  const text::Tokenizer& tokenizer() const override { return *tok_; }
  const text::ChatRenderer& renderer() const override { return renderer_; }
  const text::MediaPlaceholders& placeholders() const override { return placeholders_; }
  int position_rows() const override { return 1; }
  Result<std::vector<double>> positions(const text::TokenizedSample& s,
                                        const SampleMedia&) const override {
    std::vector<double> p(s.input_ids.size());
    std::iota(p.begin(), p.end(), 0);
    return p;
  }
  std::int64_t pad_id() const override { return pad_; }

 private:
  std::unique_ptr<text::Tokenizer> tok_;
  image::ImageProcessor image_;
  std::int64_t pad_;
  ToyRenderer renderer_;
  ToyPlaceholders placeholders_;
  std::optional<audio::AudioProcessor> audio_;
};

class ToyFamily final : public Family {
 public:
  std::string_view name() const override { return "toy"; }
  bool claims(const std::string& spec) const override {
    return spec == kToySpec || spec == kToyAudioSpec;
  }
  Result<std::unique_ptr<Model>> open(const std::string& spec,
                                      const ModelOptions& options) const override {
    if (options.tokenizer.empty()) return default_tokenizer_dir(spec).error();
    STOKER_ASSIGN_OR_RETURN(std::unique_ptr<text::Tokenizer> tok,
                            text::Tokenizer::load(options.tokenizer));
    image::ImageProcessorConfig c = toy_image_config();
    c.apply_exif_orientation = options.apply_exif_orientation;
    c.resize_rules = options.small_images;
    STOKER_ASSIGN_OR_RETURN(image::ImageProcessor image, image::ImageProcessor::create(c));
    std::optional<text::TokenId> pad = tok->token_to_id("<|fim_pad|>");
    if (!pad) return invalid_argument("toy model: the tokenizer has no <|fim_pad|> token");
    std::optional<text::TokenId> box = tok->token_to_id(kImageMarker);
    if (!box) return invalid_argument("toy model: the tokenizer has no <|box_start|> token");
    std::optional<text::TokenId> box_end = tok->token_to_id(kAudioMarker);
    if (!box_end) return invalid_argument("toy model: the tokenizer has no <|box_end|> token");
    std::optional<audio::AudioProcessor> audio;
    if (spec == kToyAudioSpec) {
      STOKER_ASSIGN_OR_RETURN(audio, audio::AudioProcessor::create(audio::AudioModel::kQwen3Omni));
    }
    return std::unique_ptr<Model>(
        new ToyModel(std::move(tok), std::move(image), *pad, *box, *box_end, std::move(audio)));
  }
  Result<std::string> default_tokenizer_dir(const std::string&) const override {
    return not_found("the toy model has no tokenizer of its own: pass one (--tokenizer DIR)");
  }
  std::vector<std::string> presets() const override { return {kToySpec, kToyAudioSpec}; }
};

}  // namespace

image::ImageProcessorConfig toy_image_config() {
  image::ImageProcessorConfig c;
  c.patch_size = 8;
  c.temporal_patch_size = 1;
  c.merge_size = 1;
  c.min_pixels = 8 * 8;
  c.max_pixels = 64 * 64;
  c.image_mean = {0.5f, 0.5f, 0.5f};
  c.image_std = {0.5f, 0.5f, 0.5f};
  return c;
}

const Family& toy_family() {
  static const ToyFamily kFamily;
  return kFamily;
}

}  // namespace stoker::model::testing
