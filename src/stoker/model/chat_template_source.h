// Which chat template a Hugging Face model folder carries, found as transformers 4.5x finds it,
// and whether it is one stoker renders natively (text/native_templates.h). Readers:
//   processor: chat_template.json ("chat_template"), else chat_template.jinja, else the
//              "chat_template" key of processor_config.json;
//   tokenizer: chat_template.jinja, else tokenizer_config.json "chat_template" (a string, or a
//              list of {name, template}: the one named "default").
// When both readers find a template and the two differ, the folder is refused: which one a run
// uses depends on the transformers version and on whether the trainer calls the processor or the
// tokenizer. Never fails as a call: problems are kept in the returned choice (a folder whose
// template is refused still serves image-only tools). Blocking file reads; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "stoker/base/result.h"
#include "stoker/text/chat_template.h"

namespace stoker::model {

struct ChatTemplateChoice {
  // The folder's template is this native kind; nullopt: the folder (or preset) has no template
  // and the family's stock template applies.
  std::optional<text::TemplateKind> kind;
  std::string source;            // the file the template was read from ("" for stock)
  std::optional<Error> refusal;  // set when the folder's template cannot be rendered natively
};

// `stock` / `stock_label` ("Qwen2.5-VL"): the family's template, for the difference in the
// refusal message.
ChatTemplateChoice find_chat_template(const std::string& folder, text::TemplateKind stock,
                                      std::string_view stock_label);

}  // namespace stoker::model
