// The Qwen-VL family's text side: its template renderer (the native Qwen2-VL / Qwen3-VL Instruct
// templates, chat_template.h) and its placeholder expansion — every `<|image_pad|>` /
// `<|video_pad|>` placeholder becomes a run of that token, grid_t·grid_h·grid_w / merge² long,
// between the template's `<|vision_start|>` and `<|vision_end|>`; with the Qwen3-VL template a
// video becomes one block per temporal group, each after its "<t seconds>" timestamp (spec
// §2.3). A record whose text spells a pad token is refused (it would read as a placeholder).
// The TemplateKind overloads are for tools and tests that name a template directly; the engine
// gets these through its model family (model/family.h). Thread-safe. Errors: InvalidArgument
// (a tokenizer without the Qwen special tokens, bad grids, pad text in a record).
#pragma once

#include "stoker/text/chat_template.h"
#include "stoker/text/labels.h"

namespace stoker::text {

class NativeRenderer final : public ChatRenderer {
 public:
  NativeRenderer(TemplateKind kind, ChatTemplateOptions options = {})
      : kind_(kind), options_(options) {}
  Result<RenderedChat> render(const dataset::Conversation& conversation) const override {
    return render_chat(conversation, kind_, options_);
  }

 private:
  TemplateKind kind_;
  ChatTemplateOptions options_;
};

class QwenVisionExpander final : public PlaceholderExpander {
 public:
  explicit QwenVisionExpander(int merge_size) : merge_(merge_size) {}
  Status expand(const RenderedChat& chat, const Tokenizer& tokenizer,
                std::span<const VisionGrid> images, std::span<const VisionGrid> videos,
                std::vector<Piece>* pieces, std::vector<VisionSpan>* spans) const override;

 private:
  int merge_;
};

// build_sample / tokenize_chat with a native template and the Qwen expansion
// (options.merge_size).
Result<TokenizedSample> build_sample(const dataset::Conversation& conversation, TemplateKind kind,
                                     const ChatTemplateOptions& template_options,
                                     const Tokenizer& tokenizer,
                                     std::span<const VisionGrid> images,
                                     std::span<const VisionGrid> videos,
                                     const SampleOptions& options = {});
Result<TokenizedSample> tokenize_chat(const RenderedChat& chat, const Tokenizer& tokenizer,
                                      std::span<const VisionGrid> images,
                                      std::span<const VisionGrid> videos, int merge_size = 2);

}  // namespace stoker::text
