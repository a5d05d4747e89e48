#include "stoker/synth/synth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "stoker/base/file.h"
#include "stoker/dataset/conversation.h"
#include "stoker/image/decode.h"

namespace stoker::synth {
namespace {

namespace fs = std::filesystem;

class SynthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("stoker_synth_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string dir(const std::string& name) const { return (root_ / name).string(); }

  fs::path root_;
};

std::vector<std::string> lines_of(const std::string& path) {
  auto text = read_text_file(path);
  EXPECT_TRUE(text.ok()) << path;
  std::vector<std::string> out;
  std::istringstream in(text.ok() ? *text : "");
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Every regular file under `dir`, relative path → bytes.
std::map<std::string, std::vector<std::uint8_t>> snapshot(const std::string& dir) {
  std::map<std::string, std::vector<std::uint8_t>> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    auto bytes = read_file(e.path().string());
    EXPECT_TRUE(bytes.ok());
    files[fs::relative(e.path(), dir).string()] = bytes.ok() ? *bytes : std::vector<std::uint8_t>{};
  }
  return files;
}

TEST(RngTest, KnownSequenceAndRanges) {
  Rng a(42), b(42), c(43);
  EXPECT_EQ(a.next(), b.next());
  EXPECT_NE(a.next(), c.next());
  Rng r(7);
  for (int i = 0; i < 10000; ++i) {
    int v = r.range(-3, 5);
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 5);
    double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
  // Forks are independent of later use of the parent.
  Rng p(1);
  std::uint64_t f1 = p.fork(3).next();
  p.next();
  EXPECT_NE(f1, p.fork(3).next());
  EXPECT_EQ(Rng(1).fork(3).next(), f1);
}

TEST_F(SynthTest, SameSeedSameBytesWhateverTheThreads) {
  SynthConfig a{.out_dir = dir("a"), .records = 24, .seed = 5, .max_side = 400, .bad_fraction = 0.2, .threads = 1};
  SynthConfig b = a;
  b.out_dir = dir("b");
  b.threads = 3;
  SynthConfig c = a;
  c.out_dir = dir("c");
  c.seed = 6;
  ASSERT_TRUE(generate_dataset(a).ok());
  ASSERT_TRUE(generate_dataset(b).ok());
  ASSERT_TRUE(generate_dataset(c).ok());
  auto sa = snapshot(a.out_dir), sb = snapshot(b.out_dir), sc = snapshot(c.out_dir);
  EXPECT_GT(sa.size(), 10u);
  EXPECT_TRUE(sa == sb) << "same seed, different thread count: different files";
  EXPECT_NE(sa.at("data.jsonl"), sc.at("data.jsonl"));
}

// A default dataset (capped at 768 px so the unit tier stays fast; variants are chosen before
// the cap) holds every variant, and each file decodes to the size its record states.
TEST_F(SynthTest, DefaultRunCoversEveryVariantAndSizesMatch) {
  SynthConfig config{.out_dir = dir("d"), .max_side = 768};
  auto result = generate_dataset(config);
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  std::set<Variant> seen;
  std::map<std::string, std::pair<int, int>> claimed;  // from the records' image parts
  for (const std::string& line : lines_of(result->data_path)) {
    auto conv = dataset::parse_record(line);
    ASSERT_TRUE(conv.ok()) << conv.error().to_string() << "\n" << line;
    EXPECT_TRUE(dataset::validate_for_sft(*conv).ok()) << line;
    nlohmann::json j = nlohmann::json::parse(line);
    for (const auto& m : j["messages"]) {
      if (!m["content"].is_array()) continue;
      for (const auto& p : m["content"])
        if (p["type"] == "image") claimed[p["image"]] = {p["width"].get<int>(), p["height"].get<int>()};
    }
  }
  EXPECT_EQ(claimed.size(), result->images.size());
  std::set<std::string> formats_seen;
  for (const ImageEntry& e : result->images) {
    seen.insert(e.variant);
    const VariantInfo& info = variant_info(e.variant);
    auto bytes = read_file(config.out_dir + "/" + e.path);
    ASSERT_TRUE(bytes.ok()) << e.path;
    auto header = image::probe_image(*bytes);
    ASSERT_TRUE(header.ok()) << e.path << ": " << header.error().to_string();
    EXPECT_EQ(header->format, info.format) << e.path;
    EXPECT_EQ(header->mode, info.mode) << e.path << " (" << info.name << ")";
    if (info.format == image::ImageFormat::kJpeg) {
      EXPECT_EQ(header->progressive, info.progressive) << e.path;
    }
    auto rgb = image::decode_rgb(*bytes);
    ASSERT_TRUE(rgb.ok()) << e.path << ": " << rgb.error().to_string();
    EXPECT_EQ(rgb->width, e.width) << e.path;
    EXPECT_EQ(rgb->height, e.height) << e.path;
    EXPECT_LE(std::max(e.width, e.height), 768);
    ASSERT_TRUE(claimed.count(e.path)) << e.path;
    EXPECT_EQ(claimed[e.path], std::make_pair(e.width, e.height)) << e.path;
  }
  for (const VariantInfo& v : all_variants()) EXPECT_TRUE(seen.count(v.variant)) << "missing " << v.name;
  // The mix: every record kind, and images.jsonl has one line per image.
  EXPECT_EQ(result->records_by_kind.size(), 4u);
  EXPECT_EQ(lines_of(config.out_dir + "/images.jsonl").size(), result->images.size());
}

TEST_F(SynthTest, BrokenRecordsAreWhatBadJsonlSays) {
  SynthConfig config{.out_dir = dir("bad"), .records = 40, .seed = 3, .max_side = 256, .bad_fraction = 0.25};
  auto result = generate_dataset(config);
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  std::vector<std::string> data = lines_of(result->data_path);
  ASSERT_EQ(data.size(), 40u);
  std::vector<std::string> bad = lines_of(config.out_dir + "/bad.jsonl");
  ASSERT_EQ(bad.size(), 10u);
  std::set<std::string> kinds;
  std::set<int> bad_lines;
  for (const std::string& text : bad) {
    nlohmann::json b = nlohmann::json::parse(text);
    const int line = b["line"];
    const std::string kind = b["kind"];
    kinds.insert(kind);
    bad_lines.insert(line);
    ASSERT_GE(line, 1);
    ASSERT_LE(line, 40);
    const std::string& record = data[line - 1];
    EXPECT_NE(record.find(b["id"].get<std::string>()), std::string::npos) << text;
    EXPECT_FALSE(b["reason"].get<std::string>().empty());
    auto conv = dataset::parse_record(record);
    if (kind == "malformed_json") {
      EXPECT_FALSE(conv.ok()) << record;
      continue;
    }
    ASSERT_TRUE(conv.ok()) << conv.error().to_string();
    if (kind == "no_assistant") {
      EXPECT_FALSE(dataset::validate_for_sft(*conv).ok());
      continue;
    }
    const std::string image = b["image"];
    EXPECT_NE(record.find(image), std::string::npos);
    const std::string path = config.out_dir + "/" + image;
    if (kind == "missing_image") {
      EXPECT_FALSE(fs::exists(path)) << path;
    } else {
      ASSERT_TRUE(kind == "corrupt_image" || kind == "truncated_image") << kind;
      auto bytes = read_file(path);
      ASSERT_TRUE(bytes.ok());
      EXPECT_FALSE(image::decode_rgb(*bytes).ok()) << kind << " " << path << " decoded";
    }
  }
  EXPECT_EQ(kinds.size(), 5u) << "all five kinds of damage appear";
  // Every other line is a good record whose images all decode.
  for (int i = 1; i <= 40; ++i) {
    if (bad_lines.count(i)) continue;
    auto conv = dataset::parse_record(data[i - 1]);
    ASSERT_TRUE(conv.ok()) << "line " << i << ": " << conv.error().to_string();
    EXPECT_TRUE(dataset::validate_for_sft(*conv).ok()) << "line " << i;
    for (const auto& m : conv->messages)
      for (const auto& p : m.parts) {
        if (p.kind != dataset::Part::Kind::kImage) continue;
        auto bytes = read_file(config.out_dir + "/" + p.value);
        ASSERT_TRUE(bytes.ok()) << p.value;
        EXPECT_TRUE(image::decode_rgb(*bytes).ok()) << p.value;
      }
  }
}

TEST_F(SynthTest, ImagesOnlyMode) {
  ImagesOnlyConfig config{.out_dir = dir("io"), .count = 3, .width = 300, .height = 120,
                          .variant = Variant::kJpegProgressive444};
  auto result = generate_images_only(config);
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  ASSERT_EQ(result->images.size(), 3u);
  for (const ImageEntry& e : result->images) {
    auto bytes = read_file(config.out_dir + "/" + e.path);
    ASSERT_TRUE(bytes.ok());
    auto header = image::probe_image(*bytes);
    ASSERT_TRUE(header.ok());
    EXPECT_TRUE(header->progressive);
    EXPECT_EQ(header->width, 300);
    EXPECT_EQ(header->height, 120);
  }
  EXPECT_EQ(lines_of(result->data_path).size(), 3u);
  EXPECT_TRUE(parse_variant("jpeg444").ok());
  EXPECT_FALSE(parse_variant("gif").ok());
}

}  // namespace
}  // namespace stoker::synth
