#include "stoker/model/testing/toy_family.h"

#include <numeric>

namespace stoker::model::testing {
namespace {

using text::Segment;

// "<role>: " (never supervised), the message's parts (an assistant's supervised), "\n"
// (supervised after an assistant message, as an end of turn).
class ToyRenderer final : public text::ChatRenderer {
 public:
  Result<text::RenderedChat> render(const dataset::Conversation& c) const override {
    text::RenderedChat out;
    for (std::size_t m = 0; m < c.messages.size(); ++m) {
      const dataset::Message& msg = c.messages[m];
      const int mi = static_cast<int>(m);
      const bool assistant = msg.role == dataset::Role::kAssistant;
      const char* role = assistant ? "assistant" : msg.role == dataset::Role::kSystem ? "system" : "user";
      out.segments.push_back({Segment::Kind::kText, std::string(role) + ": ", false, -1, mi});
      for (const dataset::Part& p : msg.parts) {
        if (p.kind == dataset::Part::Kind::kText) {
          out.segments.push_back({Segment::Kind::kText, p.value, assistant, -1, mi});
        } else if (p.kind == dataset::Part::Kind::kImage) {
          out.segments.push_back({Segment::Kind::kImage, "<image>", false, out.num_images++, mi});
        } else {
          return invalid_argument("the toy model takes no videos");
        }
      }
      out.segments.push_back({Segment::Kind::kText, "\n", assistant, -1, mi});
    }
    return out;
  }
};

// An image: one <|box_start|> per patch (no merge); text is text.
class ToyExpander final : public text::PlaceholderExpander {
 public:
  Status expand(const text::RenderedChat& chat, const text::Tokenizer& tok,
                std::span<const text::VisionGrid> images, std::span<const text::VisionGrid>,
                std::vector<text::Piece>* pieces, std::vector<text::VisionSpan>* spans) const override {
    std::optional<text::TokenId> box = tok.token_to_id("<|box_start|>");
    if (!box) return invalid_argument("tokenizer has no <|box_start|> token");
    for (const Segment& s : chat.segments) {
      if (s.kind == Segment::Kind::kText) {
        pieces->push_back({true, s.text, 0, 1, s.supervised, s.message_index, -1});
        continue;
      }
      const text::VisionGrid& g = images[static_cast<std::size_t>(s.media_index)];
      const std::int64_t count = std::int64_t{g.grid_t} * g.grid_h * g.grid_w;
      spans->push_back({false, s.media_index, 0, 0, count});
      pieces->push_back({false, {}, *box, count, false, s.message_index,
                         static_cast<int>(spans->size()) - 1});
    }
    return ok_status();
  }
};

class ToyModel final : public Model {
 public:
  ToyModel(std::unique_ptr<text::Tokenizer> tok, image::ImageProcessor image, std::int64_t pad)
      : tok_(std::move(tok)), image_(std::move(image)), pad_(pad) {}
  std::string_view family() const override { return "toy"; }
  const image::ImageProcessor* image_processor() const override { return &image_; }
  const video::VideoProcessor* video_processor() const override { return nullptr; }
  const text::Tokenizer& tokenizer() const override { return *tok_; }
  const text::ChatRenderer& renderer() const override { return renderer_; }
  const text::PlaceholderExpander& expander() const override { return expander_; }
  int position_rows() const override { return 1; }
  Result<std::vector<std::int64_t>> positions(const text::TokenizedSample& s,
                                              const SampleMedia&) const override {
    std::vector<std::int64_t> p(s.input_ids.size());
    std::iota(p.begin(), p.end(), 0);
    return p;
  }
  std::int64_t pad_id() const override { return pad_; }

 private:
  std::unique_ptr<text::Tokenizer> tok_;
  image::ImageProcessor image_;
  std::int64_t pad_;
  ToyRenderer renderer_;
  ToyExpander expander_;
};

class ToyFamily final : public Family {
 public:
  std::string_view name() const override { return "toy"; }
  bool claims(const std::string& spec) const override { return spec == kToySpec; }
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
    return std::unique_ptr<Model>(new ToyModel(std::move(tok), std::move(image), *pad));
  }
  Result<std::string> default_tokenizer_dir(const std::string&) const override {
    return not_found("the toy model has no tokenizer of its own: pass one (--tokenizer DIR)");
  }
  std::vector<std::string> presets() const override { return {kToySpec}; }
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
