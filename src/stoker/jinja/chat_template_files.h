// Which chat template(s) a model folder carries, found the way transformers' loaders find them
// (read in huggingface/transformers: tokenization_utils_base.py at 598a3dc3, processing_utils.py
// at 00511f2b — the v4.5x line, which deprecates `video_fps` for 4.58 — and utils/hub.py's
// CHAT_TEMPLATE_FILE "chat_template.jinja", LEGACY_PROCESSOR_CHAT_TEMPLATE_FILE
// "chat_template.json", CHAT_TEMPLATE_DIR "additional_chat_templates"):
//   processor (AutoProcessor, what a vision-language model uses):
//     1. chat_template.json {"chat_template": ...} (legacy; an error together with
//        additional_chat_templates/), else
//     2. additional_chat_templates/NAME.jinja + chat_template.jinja (as "default"), else
//     3. processor_config.json's "chat_template".
//   tokenizer (AutoTokenizer):
//     1. chat_template.jinja ("default") + additional_chat_templates/NAME.jinja, which replace
//     2. tokenizer_config.json's "chat_template": a string, or a list of {"name", "template"}.
//   A lone "default" is a single template. Choosing among named ones (select_chat_template):
//   an explicit name; else the tokenizer picks "tool_use" when tools are given and it exists,
//   else "default"; the processor takes "default". No default = an error naming the choices.
// transformers' processor does not fall back to the tokenizer's template; Loader::kAuto does
// (processor first), which is what a VLM folder saved by an older transformers needs.
// Blocking file reads; thread-safe. Errors: NotFound (no template), InvalidArgument (a malformed
// file, conflicting files, an unknown name) — each names the file.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::jinja {

enum class Loader { kProcessor, kTokenizer, kAuto };

struct ChatTemplates {
  // name -> source; a single template is one entry named "default" with single = true.
  std::vector<std::pair<std::string, std::string>> named;
  bool single = false;
  std::string origin;  // "chat_template.jinja", "tokenizer_config.json (3 named templates)", ...
  bool tokenizer_rules = false;  // found by the tokenizer's loader (its choice rules apply)
  const std::string* find(std::string_view name) const;
};

Result<ChatTemplates> discover_chat_templates(const std::string& folder, Loader loader);

// The template to render. `name` empty = transformers' default choice for `loader`.
Result<std::string> select_chat_template(const ChatTemplates& templates, std::string_view name,
                                         bool has_tools, Loader loader);

}  // namespace stoker::jinja
