// Chat templates for the Qwen-VL families, rendered in C++ (no Jinja engine): a Conversation
// becomes a list of segments whose concatenation is exactly what the model's HF template
// (data/templates/*.jinja) renders, each segment tagged supervised or not, so SFT labels follow
// from character spans. Vision items render as one `<|image_pad|>` / `<|video_pad|>` each;
// expansion to grid-sized runs happens when the sample is tokenised (text/labels.h).
// Pure functions on values; thread-safe. Errors: InvalidArgument (unknown template name).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/dataset/conversation.h"

namespace stoker::text {

enum class TemplateKind {
  kQwen2VL,          // Qwen2-VL and Qwen2.5-VL Instruct (same template)
  kQwen3VLInstruct,  // Qwen3-VL Instruct
};
std::string_view template_name(TemplateKind kind);  // "qwen2_vl", "qwen3_vl_instruct"

// Accepts model family names ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe"), preset
// names ("qwen2.5-vl"), template names, and HF model names ("Qwen/Qwen3-VL-8B-Instruct").
// Qwen3-VL *Thinking* checkpoints are refused: their template is not shipped.
Result<TemplateKind> template_for_model(std::string_view name);

// What to do about Qwen3's `<think>` block (spec §4.1). The HF Qwen3-VL Instruct template has
// no think handling, so the default renders exactly that template.
enum class ThinkMode {
  kNone,               // HF Instruct template, byte for byte (default)
  kEmptyThinkInAnswer, // LLaMA-Factory `qwen3_vl` (enable_thinking=True): an answer without
                       // `<think>` gets "<think>\n\n</think>\n\n" prepended, inside the
                       // supervised span
  kEmptyThinkInPrompt, // LLaMA-Factory enable_thinking=False: the same empty block goes after
                       // "assistant\n", in the prompt (not supervised)
};

struct ChatTemplateOptions {
  bool last_turn_only = false;         // supervise only the last assistant turn (mask_history)
  bool add_generation_prompt = false;  // append "<|im_start|>assistant\n" (inference)
  bool add_vision_id = false;          // "Picture N: " / "Video N: " before each vision block
  ThinkMode think = ThinkMode::kNone;  // Qwen3-VL only
};

struct Segment {
  enum class Kind {
    kText,     // ordinary text (BPE)
    kSpecial,  // exactly one added token the template emits (<|im_start|>, <|im_end|>,
               // <|vision_start|>, <|vision_end|>): always a pre-token boundary
    kImage,    // one <|image_pad|>, expanded to the image's token count when tokenised
    kVideo,    // one <|video_pad|>, likewise (Qwen3-VL: per-frame blocks with timestamps)
  };
  Kind kind = Kind::kText;
  std::string text;
  bool supervised = false;
  int media_index = -1;    // kImage / kVideo: index among the conversation's images / videos
  int message_index = -1;  // the message this segment renders (-1: template-only text)
};

struct RenderedChat {
  TemplateKind kind = TemplateKind::kQwen2VL;
  std::vector<Segment> segments;
  int num_images = 0;
  int num_videos = 0;

  std::string text() const;  // == the HF template's output
};

// Renders `conversation` (assumed valid for SFT; see dataset::validate_for_sft). Media in
// turns the template drops (Qwen3-VL system turns) are an error rather than silently lost.
Result<RenderedChat> render_chat(const dataset::Conversation& conversation, TemplateKind kind,
                                 const ChatTemplateOptions& options = {});

}  // namespace stoker::text
