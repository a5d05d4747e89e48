// Finding a model folder's chat template (jinja/chat_template_files.h does the reading, with
// transformers' precedence per loader) and choosing the one a run renders.
#include "stoker/model/chat_template_source.h"

#include <filesystem>

#include "stoker/text/native_templates.h"

namespace stoker::model {
namespace {

namespace fs = std::filesystem;

std::string where(const ChatTemplateChoice& c, const jinja::ChatTemplates& t) {
  return (fs::path(c.folder) / t.origin).string();
}

// The template `t` gives for `name` under `loader`'s rules; nullopt when `name` is not one of
// its templates (the other loader may have it).
Result<std::optional<std::string>> pick(const jinja::ChatTemplates& t, std::string_view name,
                                        jinja::Loader loader) {
  if (!name.empty() && t.find(name) == nullptr) return std::optional<std::string>();
  STOKER_ASSIGN_OR_RETURN(std::string s, jinja::select_chat_template(t, name, false, loader));
  return std::optional<std::string>(std::move(s));
}

std::string names(const jinja::ChatTemplates& t) {
  std::string s;
  for (const auto& [n, _] : t.named) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

ChatTemplateChoice find_chat_template(const std::string& folder) {
  ChatTemplateChoice c;
  c.folder = folder;
  for (const jinja::Loader loader : {jinja::Loader::kProcessor, jinja::Loader::kTokenizer}) {
    Result<jinja::ChatTemplates> t = jinja::discover_chat_templates(folder, loader);
    if (!t.ok()) {
      if (t.error().code() == ErrorCode::kNotFound) continue;
      c.refusal = std::move(t).error().with_context("model folder " + folder);
      return c;
    }
    (loader == jinja::Loader::kProcessor ? c.processor : c.tokenizer) = std::move(t).value();
  }
  return c;
}

Result<SelectedTemplate> select_chat_template(const ChatTemplateChoice& c, std::string_view name,
                                              text::TemplateKind stock,
                                              std::string_view stock_label) {
  if (c.refusal) return *c.refusal;
  const std::string asked = name.empty() ? "" : " named '" + std::string(name) + "'";
  SelectedTemplate sel;
  if (!c.processor && !c.tokenizer) {
    const std::string whose = c.folder.empty() ? "preset" : "the model folder has no chat template";
    if (!name.empty()) {
      return invalid_argument("no chat template" + asked + ": the model has no named templates (" +
                              whose + "; the family's stock template applies)");
    }
    sel.source = std::string(text::native_template_source(stock));
    sel.native = stock;
    sel.stock = true;
    sel.origin = "stock " + std::string(stock_label) + " template (" + whose + ")";
    return sel;
  }
  auto context = [&](Error e) { return std::move(e.with_context("model folder " + c.folder)); };
  std::optional<std::string> p, t;
  if (c.processor) {
    Result<std::optional<std::string>> r = pick(*c.processor, name, jinja::Loader::kProcessor);
    if (!r.ok()) return context(std::move(r).error().with_context(where(c, *c.processor)));
    p = std::move(r).value();
  }
  if (c.tokenizer) {
    Result<std::optional<std::string>> r = pick(*c.tokenizer, name, jinja::Loader::kTokenizer);
    if (!r.ok()) return context(std::move(r).error().with_context(where(c, *c.tokenizer)));
    t = std::move(r).value();
  }
  if (!p && !t) {
    std::string have;
    if (c.processor) have += where(c, *c.processor) + " has " + names(*c.processor);
    if (c.tokenizer) have += std::string(have.empty() ? "" : "; ") + where(c, *c.tokenizer) + " has " + names(*c.tokenizer);
    return context(invalid_argument("no chat template" + asked + " (" + have + ")"));
  }
  if (p && t && text::jinja_normalized_source(*p) != text::jinja_normalized_source(*t)) {
    return context(invalid_argument(
        where(c, *c.processor) + " and " + where(c, *c.tokenizer) + " hold different chat "
        "templates" + asked + " (" + text::first_template_difference(*p, *t) +
        "): transformers' processor reads the first, its tokenizer the second, so the template a "
        "run used depends on how it was run; stoker will not pick one. Make them the same"));
  }
  if (p) {
    sel.source = std::move(*p);
    sel.origin = where(c, *c.processor);
  } else {
    sel.source = std::move(*t);
    sel.origin = where(c, *c.tokenizer);
    if (name.empty() && !c.tokenizer->single) {
      if (const std::string* tools = c.tokenizer->find("tool_use"); tools != nullptr && *tools != sel.source) {
        sel.tool_use = *tools;
      }
    }
  }
  if (!name.empty()) sel.origin += " (\"" + std::string(name) + "\")";
  sel.native = text::native_template_kind(sel.source);
  return sel;
}

}  // namespace stoker::model
