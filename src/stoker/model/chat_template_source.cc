// Finding a model folder's chat template in the files transformers 4.5x reads it from.
// References (huggingface/transformers): processing_utils.py `ProcessorMixin.get_processor_dict`
// (reads chat_template.json first — "the legacy path" — and only without it chat_template.jinja;
// a processor_config.json "chat_template" key is overridden by either file);
// tokenization_utils_base.py `_from_pretrained` ("If independent chat template file(s) exist, they
// take priority over template entries in the tokenizer config") and `__init__` (a list-valued
// chat_template becomes {name: template}; apply_chat_template then uses "default"). The processor
// never falls back to the tokenizer's template (its apply_chat_template raises without one).
#include "stoker/model/chat_template_source.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "stoker/base/file.h"
#include "stoker/text/native_templates.h"

namespace stoker::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Found {
  std::string file;  // path, for messages
  std::string text;
};
using MaybeFound = std::optional<Found>;

// The text of folder/name, or nullopt when there is no such file.
Result<MaybeFound> read_if_present(const std::string& folder, const char* name) {
  const std::string path = (fs::path(folder) / name).string();
  std::error_code ec;
  if (!fs::exists(path, ec)) return MaybeFound{};
  STOKER_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  return MaybeFound(Found{path, std::move(text)});
}

Result<json> parse_object(const Found& f) {
  json j;
  try {
    j = json::parse(f.text);
  } catch (const json::exception& e) {
    return invalid_argument(f.file + ": invalid JSON: " + e.what());
  }
  if (!j.is_object()) return invalid_argument(f.file + ": top level is not an object");
  return j;
}

// The "chat_template" value of a JSON config file: absent or null → none; a string; and, where
// `allow_list` (tokenizer_config.json), a list of {"name", "template"}, of which the "default" one.
Result<MaybeFound> template_value(const Found& f, bool allow_list, bool required = false) {
  STOKER_ASSIGN_OR_RETURN(json j, parse_object(f));
  if (required && !j.contains("chat_template")) {
    return invalid_argument(f.file + ": no \"chat_template\" key");
  }
  auto it = j.find("chat_template");
  if (it == j.end() || it->is_null()) return MaybeFound{};
  if (it->is_string()) return MaybeFound(Found{f.file, it->get<std::string>()});
  if (allow_list && it->is_array()) {
    std::string names;
    for (const json& t : *it) {
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string() ||
          !t.contains("template") || !t["template"].is_string()) {
        return invalid_argument(f.file + ": chat_template list entries must be {\"name\": string, " +
                                "\"template\": string}");
      }
      const std::string name = t["name"].get<std::string>();
      if (name == "default") return MaybeFound(Found{f.file, t["template"].get<std::string>()});
      names += (names.empty() ? "" : ", ") + name;
    }
    return invalid_argument(f.file + ": chat_template lists named templates (" + names +
                            ") but none named \"default\", the one apply_chat_template uses");
  }
  return invalid_argument(f.file + ": chat_template must be a string" +
                          (allow_list ? " or a list of named templates" : "") + ", got " +
                          std::string(it->type_name()));
}

Result<MaybeFound> processor_template(const std::string& folder, const MaybeFound& jinja) {
  STOKER_ASSIGN_OR_RETURN(MaybeFound legacy, read_if_present(folder, "chat_template.json"));
  if (legacy) {
    // transformers indexes ["chat_template"] (a KeyError without it); a null value leaves the
    // processor without a file template, and then processor_config.json's key applies.
    STOKER_ASSIGN_OR_RETURN(MaybeFound t, template_value(*legacy, false, /*required=*/true));
    if (t) return t;
  } else if (jinja) {
    return jinja;
  }
  STOKER_ASSIGN_OR_RETURN(MaybeFound config, read_if_present(folder, "processor_config.json"));
  if (!config) return MaybeFound{};
  return template_value(*config, false);
}

Result<MaybeFound> tokenizer_template(const std::string& folder, const MaybeFound& jinja) {
  if (jinja) return jinja;
  STOKER_ASSIGN_OR_RETURN(MaybeFound config, read_if_present(folder, "tokenizer_config.json"));
  if (!config) return MaybeFound{};
  return template_value(*config, true);
}

// The template both readers agree on (or the only one found); an error when they disagree.
Result<MaybeFound> agreed_template(const std::string& folder) {
  STOKER_ASSIGN_OR_RETURN(MaybeFound jinja, read_if_present(folder, "chat_template.jinja"));
  STOKER_ASSIGN_OR_RETURN(MaybeFound proc, processor_template(folder, jinja));
  STOKER_ASSIGN_OR_RETURN(MaybeFound tok, tokenizer_template(folder, jinja));
  if (proc && tok &&
      text::jinja_normalized_source(proc->text) != text::jinja_normalized_source(tok->text)) {
    return invalid_argument(
        proc->file + " and " + tok->file + " hold different chat templates (" +
        text::first_template_difference(proc->text, tok->text) +
        "): transformers' processor reads the first, its tokenizer the second, so the template a "
        "run used depends on how it was run; stoker will not pick one. Make them the same");
  }
  return proc ? std::move(proc) : std::move(tok);
}

}  // namespace

ChatTemplateChoice find_chat_template(const std::string& folder, text::TemplateKind stock,
                                      std::string_view stock_label) {
  ChatTemplateChoice choice;
  Result<MaybeFound> found = agreed_template(folder);
  if (!found.ok()) {
    choice.refusal = std::move(found.error()).with_context("model folder " + folder);
    return choice;
  }
  if (!*found) return choice;  // no template in the folder: the family's stock one
  const Found& f = **found;
  if (std::optional<text::TemplateKind> kind = text::native_template_kind(f.text)) {
    choice.kind = kind;
    choice.source = f.file;
    return choice;
  }
  choice.refusal =
      unimplemented("chat template in " + f.file + " is not one stoker renders natively " +
                    "(differs from the stock " + std::string(stock_label) + " template at " +
                    text::first_template_difference(text::native_template_source(stock), f.text) +
                    "); stoker renders only the stock Qwen2-VL/Qwen2.5-VL and Qwen3-VL Instruct "
                    "templates (data/templates/) and never substitutes one for a model's own. If "
                    "the model was trained with the stock template, put data/templates/" +
                    std::string(text::template_name(stock)) + ".jinja in its place")
          .with_context("model folder " + folder);
  return choice;
}

}  // namespace stoker::model
