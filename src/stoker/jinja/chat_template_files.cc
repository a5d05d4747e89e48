#include "stoker/jinja/chat_template_files.h"

#include <algorithm>
#include <filesystem>

#include "stoker/base/file.h"
#include "stoker/jinja/json.h"

namespace stoker::jinja {
namespace {

namespace fs = std::filesystem;

constexpr char kJinja[] = "chat_template.jinja";
constexpr char kLegacyJson[] = "chat_template.json";
constexpr char kDir[] = "additional_chat_templates";

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

Result<std::string> read(const fs::path& p) {
  auto t = read_text_file(p.string());
  if (!t.ok()) return std::move(t).error().with_context("reading " + p.string());
  return t;
}

Result<Value> read_json(const fs::path& p) {
  STOKER_ASSIGN_OR_RETURN(std::string text, read(p));
  auto v = parse_json(text);
  if (!v.ok()) return std::move(v).error().with_context("parsing " + p.string());
  return v;
}

// additional_chat_templates/*.jinja, sorted by name (transformers globs; the order is not used).
Result<std::vector<std::pair<std::string, std::string>>> additional(const fs::path& folder) {
  std::vector<std::pair<std::string, std::string>> out;
  const fs::path dir = folder / kDir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".jinja" || !is_file(e.path())) continue;
    STOKER_ASSIGN_OR_RETURN(std::string text, read(e.path()));
    out.emplace_back(e.path().stem().string(), std::move(text));
  }
  std::sort(out.begin(), out.end());
  return out;
}

void finish(ChatTemplates* t) {
  t->single = t->named.size() == 1 && t->named[0].first == "default";
}

// chat_template.jinja + additional_chat_templates/ (both loaders' modern files). A named
// "default.jinja" beside chat_template.jinja: the tokenizer lets the named file win, the
// processor chat_template.jinja (the order each loader fills its dict in).
Result<ChatTemplates> jinja_files(const fs::path& folder, bool jinja_wins) {
  ChatTemplates t;
  STOKER_ASSIGN_OR_RETURN(auto extra, additional(folder));
  const fs::path main = folder / kJinja;
  if (is_file(main)) {
    STOKER_ASSIGN_OR_RETURN(std::string text, read(main));
    t.named.emplace_back("default", std::move(text));
    t.origin = kJinja;
  }
  for (auto& e : extra) {
    if (e.first == "default" && !t.named.empty() && t.named[0].first == "default") {
      if (!jinja_wins) t.named[0].second = std::move(e.second);
      continue;
    }
    t.named.push_back(std::move(e));
  }
  if (!extra.empty())
    t.origin += (t.origin.empty() ? "" : " + ") + std::string(kDir) + "/ (" + std::to_string(extra.size()) + " named)";
  finish(&t);
  return t;
}

Result<ChatTemplates> processor(const fs::path& folder) {
  const fs::path legacy = folder / kLegacyJson;
  if (is_file(legacy)) {
    STOKER_ASSIGN_OR_RETURN(auto extra, additional(folder));
    if (!extra.empty())
      return invalid_argument(legacy.string() + ": a legacy chat_template.json together with " +
                              kDir + "/ (transformers refuses this combination)");
    STOKER_ASSIGN_OR_RETURN(Value j, read_json(legacy));
    const Value* ct = j.is_dict() ? j.dict().find("chat_template") : nullptr;
    if (ct == nullptr || !ct->is_string())
      return invalid_argument(legacy.string() + ": no \"chat_template\" string");
    ChatTemplates t;
    t.named.emplace_back("default", ct->str());
    t.origin = kLegacyJson;
    finish(&t);
    return t;
  }
  STOKER_ASSIGN_OR_RETURN(ChatTemplates t, jinja_files(folder, true));
  if (!t.named.empty()) return t;
  const fs::path pc = folder / "processor_config.json";
  if (is_file(pc)) {
    STOKER_ASSIGN_OR_RETURN(Value j, read_json(pc));
    const Value* ct = j.is_dict() ? j.dict().find("chat_template") : nullptr;
    if (ct != nullptr && !ct->is_none()) {
      if (!ct->is_string()) return invalid_argument(pc.string() + ": \"chat_template\" is not a string");
      t.named.emplace_back("default", ct->str());
      t.origin = "processor_config.json";
      finish(&t);
      return t;
    }
  }
  return not_found("no chat template for the processor in " + folder.string() + " (looked for " +
                   kLegacyJson + ", " + kJinja + ", " + kDir + "/, processor_config.json)");
}

Result<ChatTemplates> tokenizer(const fs::path& folder) {
  STOKER_ASSIGN_OR_RETURN(ChatTemplates t, jinja_files(folder, false));
  t.tokenizer_rules = true;
  if (!t.named.empty()) return t;
  const fs::path tc = folder / "tokenizer_config.json";
  if (is_file(tc)) {
    STOKER_ASSIGN_OR_RETURN(Value j, read_json(tc));
    const Value* ct = j.is_dict() ? j.dict().find("chat_template") : nullptr;
    if (ct != nullptr && !ct->is_none()) {
      if (ct->is_string()) {
        t.named.emplace_back("default", ct->str());
        t.origin = "tokenizer_config.json";
      } else if (ct->is_list()) {
        for (const auto& e : ct->list().items) {
          const Value* n = e.is_dict() ? e.dict().find("name") : nullptr;
          const Value* s = e.is_dict() ? e.dict().find("template") : nullptr;
          if (n == nullptr || s == nullptr || !n->is_string() || !s->is_string())
            return invalid_argument(tc.string() + ": a \"chat_template\" list entry without string "
                                    "\"name\" and \"template\"");
          t.named.emplace_back(n->str(), s->str());  // later duplicates win, as dict() would
        }
        t.origin = "tokenizer_config.json (" + std::to_string(t.named.size()) + " named templates)";
      } else {
        return invalid_argument(tc.string() + ": \"chat_template\" is neither a string nor a list");
      }
      t.single = t.named.size() == 1 && t.named[0].first == "default" && ct->is_string();
      if (!t.named.empty()) return t;
    }
  }
  return not_found("no chat template for the tokenizer in " + folder.string() + " (looked for " +
                   kJinja + ", " + kDir + "/, tokenizer_config.json)");
}

}  // namespace

const std::string* ChatTemplates::find(std::string_view name) const {
  const std::string* hit = nullptr;
  for (const auto& [n, s] : named)
    if (n == name) hit = &s;  // the last of duplicates, as a dict keeps it
  return hit;
}

Result<ChatTemplates> discover_chat_templates(const std::string& folder, Loader loader) {
  const fs::path f(folder);
  std::error_code ec;
  if (!fs::is_directory(f, ec)) return not_found("model folder " + folder + " does not exist");
  if (loader == Loader::kTokenizer) return tokenizer(f);
  auto p = processor(f);
  if (p.ok() || loader == Loader::kProcessor || p.error().code() != ErrorCode::kNotFound) return p;
  auto t = tokenizer(f);
  if (t.ok()) t->origin += " (no processor template: the tokenizer's)";
  return t;
}

Result<std::string> select_chat_template(const ChatTemplates& t, std::string_view name,
                                         bool has_tools, Loader loader) {
  auto names = [&] {
    std::vector<std::string> n;
    for (const auto& e : t.named) n.push_back(e.first);
    std::sort(n.begin(), n.end());
    n.erase(std::unique(n.begin(), n.end()), n.end());
    std::string s;
    for (const auto& x : n) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!name.empty()) {
    if (const std::string* s = t.find(name)) return *s;
    return invalid_argument("no chat template named '" + std::string(name) + "' (" + t.origin +
                            " has: " + names() + ")");
  }
  if (t.single) return t.named[0].second;
  const bool tokenizer_rules = loader == Loader::kTokenizer || (loader == Loader::kAuto && t.tokenizer_rules);
  if (tokenizer_rules && has_tools)
    if (const std::string* s = t.find("tool_use")) return *s;
  if (const std::string* s = t.find("default")) return *s;
  return invalid_argument("the model has several chat templates and none is named 'default': pick "
                          "one by name (" + t.origin + " has: " + names() + ")");
}

}  // namespace stoker::jinja
