#include "stoker/jinja/chat_variables.h"

#include <filesystem>

#include "stoker/base/file.h"
#include "stoker/jinja/json.h"

namespace stoker::jinja {
namespace {

constexpr const char* kAttributes[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                       "pad_token", "cls_token", "mask_token",
                                       "additional_special_tokens"};

// A token field: "text", {"content": "text", ...} (AddedToken), or a list of those.
Value token_value(const Value& v) {
  if (v.is_string()) return v;
  if (v.is_dict()) {
    const Value* c = v.dict().find("content");
    return c != nullptr && c->is_string() ? *c : Value();
  }
  if (v.is_list()) {
    std::vector<Value> items;
    for (const auto& x : v.list().items) {
      Value t = token_value(x);
      if (t.is_string()) items.push_back(std::move(t));
    }
    return Value::list(std::move(items));
  }
  return Value();
}

Result<Value> load(const std::filesystem::path& p) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec)) return Value();
  auto text = read_text_file(p.string());
  if (!text.ok()) return std::move(text).error().with_context("reading " + p.string());
  auto v = parse_json(*text);
  if (!v.ok()) return std::move(v).error().with_context("parsing " + p.string());
  return v;
}

}  // namespace

Variables chat_variables(const ChatInputs& in) {
  Variables v;
  v.reserve(4 + in.special_tokens.size() + in.kwargs.size());
  v.emplace_back("messages", in.messages);
  v.emplace_back("tools", in.tools);
  v.emplace_back("documents", in.documents);
  v.emplace_back("add_generation_prompt", Value::boolean(in.add_generation_prompt));
  for (const auto& kv : in.special_tokens) v.push_back(kv);
  for (const auto& kv : in.kwargs) v.push_back(kv);
  return v;
}

Result<Variables> special_tokens_from_folder(const std::string& folder) {
  const std::filesystem::path f(folder);
  STOKER_ASSIGN_OR_RETURN(Value config, load(f / "tokenizer_config.json"));
  STOKER_ASSIGN_OR_RETURN(Value map, load(f / "special_tokens_map.json"));
  Variables out;
  for (const char* name : kAttributes) {
    Value t;
    if (config.is_dict())
      if (const Value* x = config.dict().find(name)) t = token_value(*x);
    if (t.is_undefined() && map.is_dict())
      if (const Value* x = map.dict().find(name)) t = token_value(*x);
    if (t.is_string() || (t.is_list() && !t.list().items.empty())) out.emplace_back(name, std::move(t));
  }
  return out;
}

}  // namespace stoker::jinja
