// A model's chat template rendered by stoker's Jinja engine (jinja/) as transformers'
// apply_chat_template renders it: the variables are the conversation's messages in the OpenAI
// form templates read (role, content as a string or as parts {"type": "text" | "image" |
// "video", ...}, and the record's other message keys: tool_calls, tool_call_id, name,
// reasoning_content, ...), the record's "tools" and "documents", add_generation_prompt (false:
// SFT), the tokenizer's special tokens, then template kwargs — the option's, overridden by the
// record's "chat_template_kwargs" (enable_thinking, add_vision_id, ...).
// Labels: a template with {% generation %} blocks labels their spans (HF's
// return_assistant_tokens_mask rule); one without labels each assistant turn by the family's
// turn markers (Qwen: from after "<|im_start|>assistant\n" to after the "<|im_end|>" closing it
// and the "\n" after that — what LLaMA-Factory, ms-swift and Qwen's fine-tuning code supervise),
// and refuses a sample whose text holds another number of assistant turns than the
// conversation has assistant messages (a record whose text spells a turn header).
// The template is parsed once (syntax errors fail at creation with line:column); rendering is
// bounded (jinja::RenderLimits), and a failing render (raise_exception, an undefined macro, a
// limit) fails its sample with the reason. Thread-safe. Errors: InvalidArgument.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "stoker/jinja/template.h"
#include "stoker/text/labels.h"

namespace stoker::text {

// How assistant turns look in a family's rendered chats.
struct TurnMarkers {
  std::string begin;  // opens an assistant turn: "<|im_start|>assistant\n"
  std::string end;    // closes it (labelled): "<|im_end|>"
  std::string after;  // labelled too when it follows `end`: "\n"
};

struct JinjaChatOptions {
  std::string origin;               // where the template came from, for messages
  jinja::Variables special_tokens;  // jinja::special_tokens_from_folder
  jinja::Variables kwargs;          // template kwargs for every record
  TurnMarkers turns;                // the label rule of a template without generation blocks
  jinja::RenderLimits limits;
};

// Template kwargs from a JSON object text ("" = none). InvalidArgument naming `what`.
Result<jinja::Variables> template_kwargs(std::string_view json, std::string_view what);

class JinjaRenderer final : public ChatRenderer {
 public:
  // `tool_use`: a second template for records that carry tools (transformers' tokenizer picks
  // its "tool_use" template then); empty: none.
  static Result<std::unique_ptr<JinjaRenderer>> create(std::string_view source,
                                                       std::string_view tool_use,
                                                       JinjaChatOptions options);
  Result<ChatText> render(const dataset::Conversation& conversation) const override;
  std::string describe() const override;

  bool has_generation() const { return main_.info().has_generation; }
  bool has_kwargs() const { return !options_.kwargs.empty(); }
  // The variables a conversation gives the template (also for tools that show them).
  Result<jinja::Variables> variables(const dataset::Conversation& conversation) const;

 private:
  JinjaRenderer(jinja::Template main, std::optional<jinja::Template> tool_use,
                JinjaChatOptions options)
      : main_(std::move(main)), tool_use_(std::move(tool_use)), options_(std::move(options)) {}
  Status turn_spans(const dataset::Conversation& c, const std::string& text,
                    std::vector<TextSpan>* spans) const;

  jinja::Template main_;
  std::optional<jinja::Template> tool_use_;
  JinjaChatOptions options_;
};

}  // namespace stoker::text
