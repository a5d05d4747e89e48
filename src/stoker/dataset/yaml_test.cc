// The YAML subset against PyYAML (Debian python3-yaml 6.0, `yaml.compose`: the node tree with
// each scalar's text and style) on the files Energon writes and documents, hand-made edge cases
// and random PyYAML dumps; refusals name line:col; Energon's scalar typing; JSON configs.
#include "stoker/dataset/yaml.h"

#include <gtest/gtest.h>

#include "stoker/dataset/sources_test_util.h"

namespace stoker::dataset {
namespace {

using testing::TempDir;

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

// The same canonical form the Python side prints for a composed node.
std::string dump(const YamlNode& n) {
  switch (n.kind) {
    case YamlNode::Kind::kNull: return "S0";
    case YamlNode::Kind::kScalar: return std::string("S") + (n.quoted ? "1" : "0") + hex(n.scalar);
    case YamlNode::Kind::kSeq: {
      std::string s = "[";
      for (std::size_t i = 0; i < n.items.size(); ++i) s += (i ? "," : "") + dump(n.items[i]);
      return s + "]";
    }
    case YamlNode::Kind::kMap: {
      std::string s = "{";
      for (std::size_t i = 0; i < n.entries.size(); ++i)
        s += (i ? "," : "") + hex(n.entries[i].first) + ":" + dump(n.entries[i].second);
      return s + "}";
    }
  }
  return "?";
}

constexpr char kComposer[] = R"PY(
import sys, yaml
def h(s): return s.encode("utf-8").hex()
def dump(n):
    if isinstance(n, yaml.ScalarNode):
        return "S%d%s" % (1 if n.style in ("'", '"') else 0, h(n.value))
    if isinstance(n, yaml.SequenceNode):
        return "[" + ",".join(dump(c) for c in n.value) + "]"
    return "{" + ",".join(h(k.value) + ":" + dump(v) for k, v in n.value) + "}"
for path in sys.argv[1:]:
    node = yaml.compose(open(path, "rb"))
    print("S0" if node is None else dump(node))
)PY";

// Documents inside the subset: Energon's documented files and what PyYAML writes for them.
const std::vector<std::string> kAccepted = {
    // MetadatasetV2 (docs/source/basic/metadataset.md)
    "__module__: megatron.energon\n__class__: MetadatasetV2\nsplits:\n  # Split defines the train/val/test subsets composition \n"
    "  train:\n    # Mix the following datasets\n    blend:\n      - weight: 5\n        path: ./coco\n      - weight: 2\n"
    "        path: ./coyo\n        split_part: train\n        subflavors:\n          augmentation_type: large_images\n"
    "          text_length: short\n  val:\n    path: ./coco\n  test:\n    path: ./coyo\n",
    // ChatMLWebdataset dataset.yaml (Megatron-Bridge tutorial)
    "__module__: megatron.bridge.data.energon.task_encoder_utils\n__class__: ChatMLWebdataset\nfield_map:\n"
    "  imgs: image.png\n  conversation: conversation.json\nsubflavors: {}\n",
    // split.yaml as `yaml.dump(..., sort_keys=False)` writes it (indentless lists, braces in plain scalars)
    "split_parts:\n  train:\n  - shards/data-{000000..000099}.tar\n  - shards/extra.tar\n  val:\n  - shards/val-{0..3}.tar\n"
    "exclude:\n- shards/data-000003.tar\n- shards/data-000004.tar/00000012\n",
    // .info.yaml (older Energon)
    "energon_version: 7.1.0\nshard_counts:\n  shards/000.tar: 1223\n  shards/001.tar: 1000\n",
    // flow, JSON-ish, multi-line flow, comments, quoting, folding, escapes
    "{\"a\": [1, 2, {\"b\": null}], 'c': \"d\"}\n",
    "a: [x, y,\n   z]   # trailing\nb: {p: 1,\n    q: [ ]}\n",
    "- - a\n  - b\n- c: d\n  e: f\n-\n  - g\n- \n",
    "key with spaces: value with spaces   \nurl: http://example.com:8080/x#frag\nhash: a#b\n",
    "s: 'it''s'\nd: \"tab\\there\\u00e9\\x41\\\\\"\nf: \"line one\n  line two\n\n  para\"\ne: \"joined\\\n   here\"\n",
    "---\nx: 1\n...\n",
    "\xEF\xBB\xBF" "a: 1\r\nb:\r\n  - 2\r\n",
    "empty:\nalso_empty:\nlist:\n- \n- x\n",
    "n: -1\nm: -x\no: ':x'\np: a:b\n",
    "nested:\n    deep:\n        deeper: [1, [2, [3]]]\n",
    "# only a comment\n",
    "",
};

TEST(YamlTest, MatchesPyYamlOnTheSubset) {
  if (!testing::have_python_module("yaml")) GTEST_SKIP() << "needs python3-yaml";
  TempDir dir;
  std::string args;
  for (std::size_t i = 0; i < kAccepted.size(); ++i) args += " " + dir.write("doc" + std::to_string(i) + ".yaml", kAccepted[i]);
  const std::string out = testing::python(dir, kComposer, args);
  std::istringstream lines(out);
  std::string line;
  for (std::size_t i = 0; i < kAccepted.size(); ++i) {
    ASSERT_TRUE(std::getline(lines, line));
    auto ours = parse_yaml(kAccepted[i], "doc" + std::to_string(i) + ".yaml");
    ASSERT_TRUE(ours.ok()) << ours.error().to_string() << "\n---\n" << kAccepted[i];
    EXPECT_EQ(dump(*ours), line) << kAccepted[i];
  }
}

TEST(YamlTest, RandomPyYamlDumpsAreReadExactlyOrRefusedWithAReason) {
  if (!testing::have_python_module("yaml")) GTEST_SKIP() << "needs python3-yaml";
  TempDir dir;
  const std::string out = testing::python(dir, std::string(R"PY(
import os, random, sys, yaml
)PY") + R"PY(
rng = random.Random(11)
alphabet = ["a", "b", " ", ":", "#", "-", "'", '"', "\\", "\n", "{", "[", ",", "\u00e9", "\u540d", "1", ".", "e", "yes", "null", "~", "\t", "/", "*", "&", "!", "%", "?", "|", ">"]
def s():
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
def obj(d):
    r = rng.random()
    if d > 3 or r < 0.4:
        return rng.choice([s(), s(), rng.randint(-5, 5), rng.random(), True, None])
    if r < 0.7:
        return [obj(d + 1) for _ in range(rng.randint(0, 4))]
    return {s() or "k": obj(d + 1) for _ in range(rng.randint(0, 4))}
exec(open(sys.argv[2]).read())
for i in range(int(sys.argv[1])):
    o = {"root": obj(0)}
    text = yaml.dump(o, default_flow_style=rng.choice([False, None, True]), width=rng.choice([20, 60, 200]),
                     allow_unicode=rng.choice([True, False]), indent=rng.choice([2, 4]))
    path = os.path.join(os.path.dirname(sys.argv[2]), "rand%d.yaml" % i)
    open(path, "w", encoding="utf-8").write(text)
    print(path + " " + dump(yaml.compose(text)))
)PY", "300 " + dir.write("composer.py", std::string(kComposer).substr(0, std::string(kComposer).find("for path"))));
  std::istringstream lines(out);
  std::string line;
  int accepted = 0, refused = 0;
  while (std::getline(lines, line)) {
    const std::string path = line.substr(0, line.find(' '));
    const std::string expected = line.substr(line.find(' ') + 1);
    auto ours = parse_yaml(testing::read_all(path), path);
    if (ours.ok()) {
      ++accepted;
      EXPECT_EQ(dump(*ours), expected) << testing::read_all(path);
    } else {
      ++refused;
      const std::string m = ours.error().message();
      // PyYAML wraps long plain scalars over lines and writes long or multi-line keys as "? key".
      EXPECT_TRUE(m.find("multi-line plain scalars are not supported") != std::string::npos ||
                  m.find("complex keys") != std::string::npos)
          << m << "\n" << testing::read_all(path);
    }
  }
  EXPECT_EQ(accepted + refused, 300);
  EXPECT_GT(accepted, 200) << refused << " refused";
}

TEST(YamlTest, RefusesWhatItDoesNotSupportWithLineAndColumn) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a: &x 1\nb: *x\n", "f.yaml:1:4: anchors are not supported"},
      {"a: 1\nb: *x\n", "f.yaml:2:4: aliases are not supported"},
      {"a: !!str 1\n", "f.yaml:1:4: tags are not supported"},
      {"a: |\n  text\n", "f.yaml:1:4: block scalars"},
      {"? a\n: b\n", "f.yaml:1:1: complex keys"},
      {"%YAML 1.2\n---\na: 1\n", "f.yaml:1:1: directives"},
      {"a: 1\n---\nb: 2\n", "f.yaml:2:1: several documents"},
      {"a:\n\tb: 1\n", "f.yaml:2:1: tab in indentation"},
      {"a: 1\nb: 2\na: 3\n", "f.yaml:3:1: duplicate key 'a'"},
      {"a: this is\n  continued\n", "f.yaml:2:3: unexpected indentation (multi-line plain scalars"},
      {"a:\n  b: 1\n c: 2\n", "f.yaml:3:2:"},
      {"a: [1, 2\n", "f.yaml:1:4: unclosed '['"},
      {"a: 'open\n", "f.yaml:1:4: unclosed quoted string"},
      {"a: b: c\n", "f.yaml:1:5: unexpected ':'"},
      {"a: x\x01y\n", "f.yaml:1:5: control character"},
      {"a: \xff\n", "f.yaml:1:4: invalid UTF-8"},
      {"- a\nb: 1\n", "f.yaml:2:1: unexpected content after the document"},
      {"a: {b: 1, b: 2}\n", "f.yaml:1:11: duplicate key 'b'"},
      {"a: [b: 1]\n", "key: value pair inside a flow list"},
      {"a: \"\\q\"\n", "unknown escape"},
      {std::string(70, '[') + std::string(70, ']') + "\n", "nested deeper than 64"},
  };
  for (const auto& [text, want] : cases) {
    auto r = parse_yaml(text, "f.yaml");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message().find(want), std::string::npos) << "got: " << r.error().message() << "\nfor: " << text;
  }
}

TEST(YamlTest, EnergonScalarTyping) {
  auto typed = [](const std::string& text) {
    auto r = parse_yaml("v: " + text + "\n", "t");
    EXPECT_TRUE(r.ok()) << text;
    return energon_scalar(*r->get("v"));
  };
  using T = ScalarValue::Type;
  EXPECT_EQ(typed("null").type, T::kNull);
  EXPECT_EQ(typed("~").type, T::kNull);
  EXPECT_EQ(typed("NULL").type, T::kNull);
  EXPECT_TRUE(typed("Yes").b);
  EXPECT_EQ(typed("no").type, T::kBool);
  EXPECT_EQ(typed("5").i, 5);
  EXPECT_EQ(typed("-12").i, -12);
  EXPECT_EQ(typed("+7").i, 7);
  EXPECT_DOUBLE_EQ(typed("0.25").f, 0.25);
  EXPECT_DOUBLE_EQ(typed("1e3").f, 1000.0);  // Energon: an 'e' makes a float (PyYAML: a string)
  EXPECT_EQ(typed("1e").type, T::kString);
  EXPECT_EQ(typed("0x10").type, T::kString);
  EXPECT_EQ(typed("inf").type, T::kString);
  EXPECT_EQ(typed("'5'").type, T::kString);
  EXPECT_EQ(typed("7.1.0").type, T::kString);
  EXPECT_EQ(typed("99999999999999999999").type, T::kString);
  auto r = parse_yaml("a: {x: 1, y: [true, 'q', 2.5, ~]}\n", "t");
  EXPECT_EQ(yaml_to_json(*r), R"({"a":{"x":1,"y":[true,"q",2.5,null]}})");
}

TEST(YamlTest, JsonConfigsLoadIntoTheSameTree) {
  auto r = parse_config(R"({"energon_version": "7.4.0", "shard_counts": {"b.tar": 3, "a.tar": 2}, "f": 1.5, "t": true})",
                        "x/.info.json");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const YamlNode* counts = r->get("shard_counts");
  ASSERT_TRUE(counts && counts->is_map());
  EXPECT_EQ(counts->entries[0].first, "b.tar");  // order kept
  EXPECT_EQ(energon_scalar(counts->entries[1].second).i, 2);
  EXPECT_DOUBLE_EQ(energon_scalar(*r->get("f")).f, 1.5);
  EXPECT_TRUE(energon_scalar(*r->get("t")).b);
  EXPECT_FALSE(parse_config("{\"a\": 1, \"a\": 2}", "d.json").ok());
  auto bad = parse_config("{\"a\": ", "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("bad.json: not valid JSON"), std::string::npos);
}

}  // namespace
}  // namespace stoker::dataset
