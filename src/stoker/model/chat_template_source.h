// Which chat template a Hugging Face model folder carries, found as transformers finds it
// (jinja/chat_template_files.h: the processor's files, then the tokenizer's), and which one a run
// renders. Precedence, as transformers' loaders read the folder (tokenization_utils_base.py
// @598a3dc3, processing_utils.py @00511f2b):
//   processor: chat_template.json (legacy) > chat_template.jinja (+ additional_chat_templates/
//              *.jinja, named) > processor_config.json's "chat_template";
//   tokenizer: chat_template.jinja (+ additional_chat_templates/) > tokenizer_config.json's
//              "chat_template" (a string, or a list of {name, template}).
// A vision-language model renders with its processor's template (TRL, Qwen's fine-tuning code);
// a folder whose only template is the tokenizer's (saved by an older transformers) uses that one,
// with the tokenizer's choice rules: the template named "tool_use" for records with tools when
// there is one, else "default". When both loaders find a template and the two differ (for the
// default choice, or for the name asked), the folder is refused: which one a run used depends on
// whether the trainer called the processor or the tokenizer. `name` (--chat-template NAME,
// chat_template=) picks a named template (processor's first). No template in the folder: the
// family's stock one. Blocking file reads; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "stoker/base/result.h"
#include "stoker/jinja/chat_template_files.h"
#include "stoker/text/chat_template.h"

namespace stoker::model {

// What a folder's loaders found (load_model keeps it; never fails as a call: a malformed file is
// kept as the refusal, so image-only tools still work on such a folder).
struct ChatTemplateChoice {
  std::string folder;                                // empty for a preset
  std::optional<jinja::ChatTemplates> processor, tokenizer;  // nullopt: that loader finds none
  std::optional<Error> refusal;                      // a malformed or contradictory file
};
ChatTemplateChoice find_chat_template(const std::string& folder);

// The template a run renders.
struct SelectedTemplate {
  std::string source;    // the template
  std::string tool_use;  // the tokenizer's "tool_use" template for records with tools ("": none)
  std::string origin;    // for people: "/m/chat_template.json", "stock Qwen2.5-VL template (preset)"
  std::optional<text::TemplateKind> native;  // the source is a stock template stoker also writes
  bool stock = false;    // the folder (or preset) has none: the family's stock template
};
// `stock` / `stock_label` ("Qwen2.5-VL"): the family's template. Errors: the refusal;
// InvalidArgument for an unknown name (listing the names) or templates that disagree.
Result<SelectedTemplate> select_chat_template(const ChatTemplateChoice& choice,
                                              std::string_view name, text::TemplateKind stock,
                                              std::string_view stock_label);

}  // namespace stoker::model
