// The variables transformers passes to a chat template, built in its order (apply_chat_template
// in tokenization_utils_base / processing_utils): messages, tools, documents,
// add_generation_prompt, then the tokenizer's special tokens (special_tokens_map: bos_token,
// eos_token, unk_token, sep_token, pad_token, cls_token, mask_token, additional_special_tokens —
// only those set), then the caller's kwargs (enable_thinking, add_vision_id, ...), which override
// a special token of the same name. tools/documents absent = None, as transformers passes them.
// Pure functions except special_tokens_from_folder (reads files). Thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/jinja/template.h"

namespace stoker::jinja {

struct ChatInputs {
  Value messages;                 // a list of message dicts (OpenAI form: role, content, tool_calls)
  Value tools = Value::none();    // a list of JSON schemas, or None
  Value documents = Value::none();
  bool add_generation_prompt = false;
  Variables special_tokens;       // special_tokens_from_folder()
  Variables kwargs;               // template kwargs
};

Variables chat_variables(const ChatInputs& inputs);

// special_tokens_map of the folder's tokenizer: tokenizer_config.json's token fields (a string
// or an AddedToken object's "content"), falling back to special_tokens_map.json per field.
// A folder without either file gives no special tokens. Errors: InvalidArgument (bad JSON).
Result<Variables> special_tokens_from_folder(const std::string& folder);

}  // namespace stoker::jinja
