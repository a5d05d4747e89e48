// MetadatasetV2 and JSON mixtures: shares as Energon computes them (hand-worked from
// metadataset_v2.py's MetadatasetBlend / MetadatasetBlendEpochized), relative paths, split
// parts, subflavor overrides, merged duplicate leaves, refusals with file:line:col, the hash.
#include "stoker/dataset/mixture.h"

#include <gtest/gtest.h>

#include <map>

namespace stoker::dataset {
namespace {

struct Files {
  std::map<std::string, std::string> files;
  TextReader reader() const {
    return [this](const std::string& p) -> Result<std::string> {
      auto it = files.find(p);
      if (it == files.end()) return not_found(p + ": no such file");
      return it->second;
    };
  }
  Result<MixtureSpec> load(const std::string& p, MixtureOptions o = {}) const { return load_mixture(p, reader(), o); }
};

constexpr char kHead[] = "__module__: megatron.energon\n__class__: MetadatasetV2\n";

TEST(MixtureTest, EnergonDocsBlend) {
  Files f;
  f.files["/m/demo.yaml"] = std::string(kHead) +
                            "splits:\n  train:\n    blend:\n      - weight: 5\n        path: ./coco\n"
                            "        subflavors:\n          augmentation_type: small_images\n"
                            "      - weight: 2\n        path: ./coyo\n        split_part: train\n"
                            "      - weight: 1\n        path: ./coyo\n        split_part: val  # the val set in train\n"
                            "  val:\n    path: ./coco\n";
  auto s = f.load("/m/demo.yaml");
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->mode, MixMode::kWeighted);
  ASSERT_EQ(s->leaves.size(), 3u);
  EXPECT_EQ(s->leaves[0].path, "/m/coco");
  EXPECT_DOUBLE_EQ(s->leaves[0].weight, 0.625);
  EXPECT_EQ(s->leaves[0].subflavors, R"({"augmentation_type":"small_images"})");
  EXPECT_DOUBLE_EQ(s->leaves[1].weight, 0.25);
  EXPECT_EQ(s->leaves[2].split_part, "val");
  EXPECT_DOUBLE_EQ(s->leaves[2].weight, 0.125);
  EXPECT_EQ(s->leaves[2].kind, MixtureLeaf::Kind::kEnergonFolder);
  EXPECT_EQ(s->leaves[2].where, "/m/demo.yaml:13:9");
  MixtureOptions val;
  val.split_part = "val";
  auto v = f.load("/m/demo.yaml", val);
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->leaves.size(), 1u);
  EXPECT_EQ(v->mode, MixMode::kEpochized);  // a plain reference: one pass
  EXPECT_EQ(v->leaves[0].split_part, "val");
}

TEST(MixtureTest, NestingMultipliesShares) {
  Files f;
  f.files["/m/outer.yaml"] = std::string(kHead) +
                             "splits:\n  train:\n    blend:\n    - {weight: 3, path: sub/inner.yaml, subflavors: {src: outer, level: 1}}\n"
                             "    - {weight: 1, path: c.jsonl}\n";
  f.files["/m/sub/inner.yaml"] = std::string(kHead) +
                                 "splits:\n  train:\n    blend:\n    - weight: 1\n      path: a.jsonl.gz\n"
                                 "      subflavors: {src: inner, mine: yes}\n    - weight: 3\n      path: ../b\n";
  auto s = f.load("/m/outer.yaml");
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  ASSERT_EQ(s->leaves.size(), 3u);
  EXPECT_EQ(s->leaves[0].path, "/m/sub/a.jsonl.gz");
  EXPECT_EQ(s->leaves[0].kind, MixtureLeaf::Kind::kJsonl);
  EXPECT_DOUBLE_EQ(s->leaves[0].weight, 0.75 * 0.25);
  EXPECT_EQ(s->leaves[0].subflavors, R"({"src":"outer","mine":true,"level":1})");  // outer overrides
  EXPECT_EQ(s->leaves[1].path, "/m/sub/../b");
  EXPECT_DOUBLE_EQ(s->leaves[1].weight, 0.75 * 0.75);
  EXPECT_DOUBLE_EQ(s->leaves[2].weight, 0.25);
}

TEST(MixtureTest, EpochizedRepetitionsMultiplyAndAllowFractions) {
  Files f;
  f.files["/e/top.yaml"] = std::string(kHead) +
                           "splits:\n  train:\n    blend_epochized:\n    - repetitions: 2\n      path: inner.yaml\n"
                           "    - repetitions: 0.3\n      path: /abs/x.jsonl\n    - path: y.jsonl\n";
  f.files["/e/inner.yaml"] = std::string(kHead) +
                             "splits:\n  train:\n    blend_epochized:\n    - {repetitions: 1.5, path: a}\n    - {path: b, split_part: val}\n";
  auto s = f.load("/e/top.yaml");
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->mode, MixMode::kEpochized);
  ASSERT_EQ(s->leaves.size(), 4u);
  EXPECT_DOUBLE_EQ(s->leaves[0].repetitions, 3.0);
  EXPECT_DOUBLE_EQ(s->leaves[1].repetitions, 2.0);
  EXPECT_EQ(s->leaves[1].split_part, "val");
  EXPECT_EQ(s->leaves[2].path, "/abs/x.jsonl");
  EXPECT_DOUBLE_EQ(s->leaves[2].repetitions, 0.3);
  EXPECT_DOUBLE_EQ(s->leaves[3].repetitions, 1.0);
}

TEST(MixtureTest, SameLeafTwiceIsMergedWithAWarning) {
  Files f;
  f.files["/d/m.yaml"] = std::string(kHead) +
                         "splits:\n  train:\n    blend:\n    - {weight: 1, path: a.jsonl}\n    - {weight: 1, path: n.yaml}\n"
                         "    - {weight: 2, path: a.jsonl, subflavors: {k: 1}}\n";
  f.files["/d/n.yaml"] = std::string(kHead) + "splits:\n  train:\n    path: ./a.jsonl\n";
  auto s = f.load("/d/m.yaml");
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  ASSERT_EQ(s->leaves.size(), 2u);
  EXPECT_DOUBLE_EQ(s->leaves[0].weight, 0.5);  // 1/4 + 1/4, merged
  EXPECT_DOUBLE_EQ(s->leaves[1].weight, 0.5);
  std::string w;
  for (const auto& x : s->warnings) w += x + "\n";
  EXPECT_NE(w.find("is already a source (/d/m.yaml:6:7): merged into one, weights summed"), std::string::npos) << w;
  EXPECT_NE(w.find("with other subflavors: both are kept"), std::string::npos) << w;
}

TEST(MixtureTest, RefusalsNameTheirPlace) {
  Files f;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"splits:\n  train:\n    blend:\n    - {weight: 1, path: a}\n    - {weight: x, path: b}\n", "/r.yaml:7:16: weight must be a number >= 0"},
      {"splits:\n  train:\n    blend:\n    - {weight: -1, path: a}\n", "weight must be a number >= 0"},
      {"splits:\n  train:\n    blend:\n    - {weight: 1}\n", "/r.yaml:6:7: a dataset reference needs path"},
      {"splits:\n  train:\n    blend:\n    - {weight: 1, path: a, aux: {x: y}}\n", "/r.yaml:6:33: 'aux' is not supported"},
      {"splits:\n  train:\n    blend:\n    - {weight: 1, path: a, subset: {range: [0, 1]}}\n", "'subset' is not supported"},
      {"splits:\n  train:\n    blend:\n    - {repetitions: 1, path: a}\n", "unknown key 'repetitions' here"},
      {"splits:\n  train:\n    join: [{path: a}]\n", "join is not supported"},
      {"splits:\n  train:\n    blend:\n    - {weight: 1, path: e.yaml}\n", "cannot mix blend with blend_epochized"},
      {"splits:\n  train:\n    blend:\n    - {weight: 1, path: r.yaml}\n", "/r.yaml: includes itself"},
      {"splits:\n  train:\n    blend: []\n", "expected a non-empty list"},
      {"splits:\n  val: {path: a}\n", "no split 'train'"},
      {"splits:\n  train:\n    blend:\n    - {weight: 0, path: a}\n", "/r.yaml:6:5: the weights sum to 0"},
      {"splits:\n  train:\n    blend:\n    - {weight: 1, path: missing.yaml}\n", "missing.yaml: no such file"},
  };
  f.files["/e.yaml"] = std::string(kHead) + "splits:\n  train:\n    blend_epochized: [{path: z}]\n";
  for (const auto& [body, want] : cases) {
    f.files["/r.yaml"] = std::string(kHead) + body;
    auto s = f.load("/r.yaml");
    ASSERT_FALSE(s.ok()) << body;
    EXPECT_NE(s.error().to_string().find(want), std::string::npos) << s.error().to_string() << "\nfor:\n" << body;
  }
  f.files["/v1.yaml"] = "__module__: megatron.energon\n__class__: Metadataset\nsplits: {}\n";
  EXPECT_NE(f.load("/v1.yaml").error().to_string().find("/v1.yaml:2:12: __class__ must be MetadatasetV2"), std::string::npos);
}

TEST(MixtureTest, JsonForm) {
  Files f;
  f.files["/j/mix.json"] = R"([{"path": "a.jsonl", "weight": 3}, {"path": "../b.jsonl.zst", "weight": 1, "subflavors": {"t": "x"}}])";
  auto s = f.load("/j/mix.json");
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->mode, MixMode::kWeighted);
  EXPECT_EQ(s->leaves[0].path, "/j/a.jsonl");
  EXPECT_DOUBLE_EQ(s->leaves[0].weight, 0.75);
  EXPECT_EQ(s->leaves[1].path, "/j/../b.jsonl.zst");
  EXPECT_EQ(s->leaves[1].subflavors, R"({"t":"x"})");
  f.files["/j/rep.json"] = R"([{"path": "a.jsonl", "repeat": 2.5}, {"path": "folder", "split_part": "val"}])";
  auto r = f.load("/j/rep.json");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->mode, MixMode::kEpochized);
  EXPECT_DOUBLE_EQ(r->leaves[0].repetitions, 2.5);
  EXPECT_DOUBLE_EQ(r->leaves[1].repetitions, 1.0);
  EXPECT_EQ(r->leaves[1].kind, MixtureLeaf::Kind::kEnergonFolder);
  f.files["/j/bad.json"] = R"([{"path": "a.jsonl", "weight": 1}, {"path": "b.jsonl", "repeat": 1}])";
  EXPECT_NE(f.load("/j/bad.json").error().message().find("mix \"weight\" and \"repeat\""), std::string::npos);
  f.files["/j/bad2.json"] = R"([{"path": "a.jsonl", "wieght": 1}])";
  EXPECT_NE(f.load("/j/bad2.json").error().message().find("entry 0: unknown or malformed key 'wieght'"), std::string::npos);
}

TEST(MixtureTest, HashFollowsTheMixtureNotItsText) {
  Files f;
  f.files["/h/a.yaml"] = std::string(kHead) + "splits:\n  train:\n    blend:\n    - {weight: 1, path: x}\n    - {weight: 3, path: y}\n";
  f.files["/h/b.yaml"] = std::string(kHead) + "# same, spelled differently\nsplits:\n  train:\n    blend:\n"
                         "      - path: x\n        weight: 2\n      - path: ./y\n        weight: 6.0\n";
  f.files["/h/c.yaml"] = std::string(kHead) + "splits:\n  train:\n    blend:\n    - {weight: 1, path: x}\n    - {weight: 4, path: y}\n";
  const auto a = *f.load("/h/a.yaml"), b = *f.load("/h/b.yaml"), c = *f.load("/h/c.yaml");
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_NE(a.hash, c.hash);
  EXPECT_EQ(a.hash_hex().size(), 16u);
  EXPECT_NE(plain_mixture({"a.jsonl"}).hash, plain_mixture({"b.jsonl"}).hash);
}

}  // namespace
}  // namespace stoker::dataset
