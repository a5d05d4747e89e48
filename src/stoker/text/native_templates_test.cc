#include "stoker/text/native_templates.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace stoker::text {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  std::size_t start = 0;
  for (std::size_t at = s.find(from); at != std::string_view::npos; at = s.find(from, start)) {
    (out += s.substr(start, at - start)) += to;
    start = at + from.size();
  }
  return out += s.substr(start);
}

// The same text with one trailing newline added or, when it has one, removed.
std::string toggle_trailing_newline(std::string s) {
  if (!s.empty() && s.back() == '\n') s.pop_back();
  else s += '\n';
  return s;
}

constexpr TemplateKind kKinds[] = {TemplateKind::kQwen2VL, TemplateKind::kQwen3VLInstruct};

TEST(NativeTemplatesTest, CompiledInBytesAreTheShippedFiles) {
  EXPECT_EQ(native_template_source(TemplateKind::kQwen2VL),
            read_file(STOKER_TEMPLATES_DIR "/qwen2_vl.jinja"));
  EXPECT_EQ(native_template_source(TemplateKind::kQwen3VLInstruct),
            read_file(STOKER_TEMPLATES_DIR "/qwen3_vl_instruct.jinja"));
  // data/templates/PROVENANCE.md pins these sizes.
  EXPECT_EQ(native_template_source(TemplateKind::kQwen2VL).size(), 1017u);
  EXPECT_EQ(native_template_source(TemplateKind::kQwen3VLInstruct).size(), 5292u);
}

TEST(NativeTemplatesTest, JinjaNormalisationIsLineBreaksAndOneTrailingNewline) {
  EXPECT_EQ(jinja_normalized_source("a\r\nb\rc\n"), "a\nb\nc");
  EXPECT_EQ(jinja_normalized_source("a\n\n"), "a\n");  // only one newline is dropped
  EXPECT_EQ(jinja_normalized_source("a\r\n"), "a");
  EXPECT_EQ(jinja_normalized_source("a\n\r"), "a\n");  // "\n" then "\r": two line breaks
  EXPECT_EQ(jinja_normalized_source(""), "");
  EXPECT_EQ(jinja_normalized_source(" a \t"), " a \t");  // other whitespace is significant
}

TEST(NativeTemplatesTest, RecognisesEachShippedTemplateInTheFormsJinjaReadsAlike) {
  for (TemplateKind kind : kKinds) {
    const std::string src(native_template_source(kind));
    EXPECT_EQ(native_template_kind(src), kind);
    EXPECT_EQ(native_template_kind(toggle_trailing_newline(src)), kind);
    EXPECT_EQ(native_template_kind(replace_all(src, "\n", "\r\n")), kind);
    EXPECT_EQ(native_template_kind(replace_all(src, "\n", "\r")), kind);
  }
  // The two files differ here (Qwen2 ends without a newline, Qwen3 with one), so the toggle
  // above tried both directions.
  EXPECT_NE(native_template_source(TemplateKind::kQwen2VL).back(), '\n');
  EXPECT_EQ(native_template_source(TemplateKind::kQwen3VLInstruct).back(), '\n');
}

TEST(NativeTemplatesTest, RefusesAnythingElse) {
  for (TemplateKind kind : kKinds) {
    const std::string src(native_template_source(kind));
    EXPECT_FALSE(native_template_kind(src + "\n\n\n")) << "extra trailing newlines";
    EXPECT_FALSE(native_template_kind(" " + src));
    EXPECT_FALSE(native_template_kind("\xEF\xBB\xBF" + src)) << "a BOM stays in the template";
    EXPECT_FALSE(native_template_kind(src.substr(0, src.size() / 2)));
    EXPECT_FALSE(native_template_kind(replace_all(src, "<|im_end|>", "<|endoftext|>")));
  }
  EXPECT_FALSE(native_template_kind(""));
  EXPECT_FALSE(native_template_kind("{{ messages }}"));
}

TEST(NativeTemplatesTest, EveryOneCharacterEditIsRefused) {
  // Flip each byte of the Qwen2 template in turn (to another printable ASCII character): no
  // single edit may still be taken for a native template.
  const std::string src(native_template_source(TemplateKind::kQwen2VL));
  for (std::size_t i = 0; i < src.size(); ++i) {
    std::string edited = src;
    edited[i] = src[i] == 'x' ? 'y' : 'x';
    ASSERT_FALSE(native_template_kind(edited)) << "byte " << i;
  }
}

TEST(NativeTemplatesTest, DifferenceNamesLineColumnAndBothExcerpts) {
  const std::string src(native_template_source(TemplateKind::kQwen2VL));
  const std::string changed = replace_all(src, "You are a helpful assistant.", "You are a pirate.");
  const std::string d = first_template_difference(src, changed);
  // "You are a " starts line 2 of the file; the change is at its 11th character.
  EXPECT_NE(d.find("line 2, column 11:"), std::string::npos) << d;
  EXPECT_NE(d.find("system\\nYou are a helpful assistant.<|im_end|>"), std::string::npos) << d;
  EXPECT_NE(d.find("found \"…start|>system\\nYou are a pirate."), std::string::npos) << d;

  const std::string shorter = src.substr(0, 100);
  const std::string d2 = first_template_difference(src, shorter);
  EXPECT_NE(d2.find("found the end of the template"), std::string::npos) << d2;
  EXPECT_EQ(first_template_difference(src, src + "\n"), "no difference");

  // A change inside a multi-byte character is reported at the character's first byte.
  const std::string q3(native_template_source(TemplateKind::kQwen3VLInstruct));
  const std::string d3 = first_template_difference(q3, "é" + q3);
  EXPECT_NE(d3.find("line 1, column 1: expected \"{%- if tools"), std::string::npos) << d3;
  EXPECT_NE(d3.find("found \"é{%- if tools"), std::string::npos) << d3;
}

}  // namespace
}  // namespace stoker::text
