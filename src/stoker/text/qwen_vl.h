// The Qwen-VL families' text side: their media placeholders and the native renderer.
// Placeholders (QwenPlaceholders), as the HF Qwen processors read the rendered text: every
// `<|image_pad|>` / `<|video_pad|>` is a medium, in order, expanded to a run of that token
// grid_t·grid_h·grid_w / merge² long; with the Qwen3-VL rule a video's whole
// `<|vision_start|><|video_pad|><|vision_end|>` becomes one block per temporal group, each after
// its "<t seconds>" timestamp (spec §2.3). A pad must sit right after `<|vision_start|>` (where
// the mRoPE rule looks for media; a record's text spelling one elsewhere fails its sample); the
// medium's block (`<|vision_start|>` … `<|vision_end|>`) is never labelled.
// NativeRenderer: the stock Qwen2-VL / Qwen3-VL Instruct templates written in C++
// (chat_template.h) giving the text and the per-turn label spans — a fast path the model uses
// only for templates proven byte-identical to the Jinja rendering (model/qwen_vl_family.cc).
// The TemplateKind overloads are for tools and tests that name a template directly; the engine
// gets these through its model family (model/family.h). Thread-safe. Errors: InvalidArgument
// (a tokenizer without the Qwen special tokens, bad grids, misplaced pads).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "stoker/text/chat_template.h"
#include "stoker/text/jinja_chat.h"
#include "stoker/text/labels.h"

namespace stoker::text {

// A native rendering as text + label spans (consecutive supervised segments merged).
ChatText chat_text(const RenderedChat& chat);

class NativeRenderer final : public ChatRenderer {
 public:
  NativeRenderer(TemplateKind kind, ChatTemplateOptions options = {})
      : kind_(kind), options_(options) {}
  Result<ChatText> render(const dataset::Conversation& conversation) const override;
  std::string describe() const override;

 private:
  TemplateKind kind_;
  ChatTemplateOptions options_;
};

// The Qwen families' renderer: the model's template through the Jinja engine; when that template
// is a stock one stoker also writes natively (`native`), a conversation the native renderer
// models — no tools, documents, template kwargs or extra message keys, no "<|im_start|>" /
// "<|im_end|>" in its text, and no template kwargs option — takes the native fast path
// (byte-identical text, the same labels: proven over the synth set by
// native_equivalence_test), and the Jinja engine when the native renderer refuses it.
class QwenRenderer final : public ChatRenderer {
 public:
  QwenRenderer(std::unique_ptr<JinjaRenderer> jinja, std::optional<TemplateKind> native);
  Result<ChatText> render(const dataset::Conversation& conversation) const override;
  std::string describe() const override;
  const JinjaRenderer& jinja() const { return *jinja_; }
  bool native_for(const dataset::Conversation& conversation) const;

 private:
  std::unique_ptr<JinjaRenderer> jinja_;
  std::optional<NativeRenderer> native_;
  std::optional<TemplateKind> kind_;
};

// Qwen's turn markers (the per-turn label rule of a template without generation blocks).
TurnMarkers qwen_turn_markers();

struct QwenTokens {
  TokenId vision_start = 0, vision_end = 0, image_pad = 0, video_pad = 0;
};
Result<QwenTokens> qwen_tokens(const Tokenizer& tokenizer);

class QwenPlaceholders final : public MediaPlaceholders {
 public:
  // `video_timestamps`: the Qwen3-VL video rule (timestamped groups).
  QwenPlaceholders(QwenTokens tokens, int merge_size, bool video_timestamps)
      : ids_(tokens), merge_(merge_size), timestamps_(video_timestamps) {}
  std::span<const std::string_view> modalities() const override;
  Status find(std::string_view text, std::vector<Placeholder>* out) const override;
  Status expand(const Placeholder& p, const VisionGrid& medium,
                std::vector<Expansion>* out) const override;

 private:
  QwenTokens ids_;
  int merge_;
  bool timestamps_;
};

// build_sample / tokenize_chat with a native template and the Qwen placeholders
// (options.merge_size; Qwen3-VL timestamps with the Qwen3-VL template).
Result<TokenizedSample> build_sample(const dataset::Conversation& conversation, TemplateKind kind,
                                     const ChatTemplateOptions& template_options,
                                     const Tokenizer& tokenizer,
                                     std::span<const VisionGrid> images,
                                     std::span<const VisionGrid> videos,
                                     const SampleOptions& options = {});
Result<TokenizedSample> tokenize_chat(const RenderedChat& chat,
                                      const dataset::Conversation& conversation,
                                      const Tokenizer& tokenizer,
                                      std::span<const VisionGrid> images,
                                      std::span<const VisionGrid> videos, int merge_size = 2);

}  // namespace stoker::text
