// The shared loader flags reach pipeline::LoaderConfig whole: repeatable media flags keep every
// value in order, byte sizes take suffixes, defaults are the engine's, bad values name the flag.
#include "stoker/cli/loader_flags.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

namespace stoker::cli {
namespace {

Result<Args> parse(std::initializer_list<const char*> argv) {
  std::vector<std::string> owned(argv.begin(), argv.end());
  std::vector<char*> ptrs;
  for (std::string& s : owned) ptrs.push_back(s.data());
  return Args::parse(static_cast<int>(ptrs.size()), ptrs.data(), loader_value_flags(),
                     loader_switch_flags(), loader_repeat_flags());
}

// --tokenizer given: no model lookup, so the test needs no tokenizer files.
Result<pipeline::LoaderConfig> config(std::initializer_list<const char*> argv) {
  STOKER_ASSIGN_OR_RETURN(Args a, parse(argv));
  return loader_config_from_flags(a, {});
}

TEST(LoaderFlagsTest, MediaFlagsReachTheConfig) {
  testing::internal::CaptureStderr();
  auto c = config({"d.jsonl", "--tokenizer", "/tok", "--media-root", "/a", "--media-root=/b",
                   "--allow-bucket", "one", "--allow-bucket", "*", "--trust-media-paths",
                   "--max-object-bytes", "16MiB", "--max-record-bytes", "1m",
                   "--io-deadline-ms", "5000", "--imds"});
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->media_roots, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(c->allow_buckets, (std::vector<std::string>{"one", "*"}));
  EXPECT_TRUE(c->trust_media_paths);
  EXPECT_EQ(c->max_object_bytes, 16 << 20);
  EXPECT_EQ(c->max_record_bytes, 1 << 20);
  EXPECT_EQ(c->io_deadline_ms, 5000);
  EXPECT_TRUE(c->imds);
  // One loud line when a manifest may read any file.
  EXPECT_NE(err.find("WARNING: --trust-media-paths"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_TRUE(c->validate().ok());
}

TEST(LoaderFlagsTest, DefaultsAreTheEnginesAndNothingIsTrusted) {
  testing::internal::CaptureStderr();
  auto c = config({"d.jsonl", "--tokenizer", "/tok"});
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  const pipeline::LoaderConfig engine;
  EXPECT_TRUE(c->media_roots.empty());
  EXPECT_TRUE(c->allow_buckets.empty());
  EXPECT_FALSE(c->trust_media_paths);
  EXPECT_FALSE(c->imds);
  EXPECT_EQ(c->max_object_bytes, std::int64_t{256} << 20);
  EXPECT_EQ(c->max_object_bytes, engine.max_object_bytes);
  EXPECT_EQ(c->max_record_bytes, std::int64_t{16} << 20);
  EXPECT_EQ(c->io_deadline_ms, 0);  // the engine resolves $STOKER_IO_DEADLINE_MS, else 120 s
  EXPECT_EQ(c->batch_size, 8);
  EXPECT_EQ(c->arena.bytes, std::size_t{1024} << 20);
}

TEST(LoaderFlagsTest, BadValuesNameTheFlag) {
  struct Case {
    std::vector<const char*> flags;
    const char* want;
  };
  const Case cases[] = {
      {{"--batch-size", "99999999999"},
       "--batch-size must be an integer in [1, 2147483647], got '99999999999'"},
      {{"--batch-size", "0"}, "--batch-size must be an integer in [1, 2147483647], got '0'"},
      {{"--io-threads", "2147483648"}, "--io-threads must be an integer"},
      {{"--prefetch", "4x"}, "--prefetch must be an integer"},
      {{"--seed", "-1"}, "--seed must be an integer in [0, 18446744073709551615], got '-1'"},
      {{"--epochs", "0"}, "--epochs must be -1 (forever) or at least 1"},
      {{"--epochs", "-2"}, "--epochs must be an integer in [-1, "},
      {{"--max-length", "-1"}, "--max-length must be an integer in [0, "},
      {{"--arena-mb", "17592186044416"}, "--arena-mb must be an integer in [1, 4398046511104]"},
      {{"--max-object-bytes", "1.5G"}, "--max-object-bytes must be a byte count"},
      {{"--max-object-bytes", "0"}, "--max-object-bytes must be a byte count in [1, "},
      {{"--max-record-bytes", "5G"}, "--max-record-bytes must be a byte count in [1, 4294967296]"},
      {{"--io-deadline-ms", "0"}, "--io-deadline-ms must be an integer in [1, 2147483647]"},
      {{"--io-deadline-ms", "2147483648"}, "--io-deadline-ms must be an integer in [1, "},
      {{"--media-root="}, "--media-root needs a folder, got ''"},
      {{"--allow-bucket="}, "--allow-bucket needs a bucket name or '*', got ''"},
      {{"--worker-sched", "fast"}, "--worker-sched"},
      {{"--exif", "rotate"}, "--exif: exif orientation: 'apply' or 'ignore', not 'rotate'"},
      {{"--small-images", "drop"}, "--small-images: small images: 'resize'"},
  };
  for (const auto& [flags, want] : cases) {
    std::vector<std::string> owned = {"d.jsonl", "--tokenizer", "/tok"};
    owned.insert(owned.end(), flags.begin(), flags.end());
    std::vector<char*> ptrs;
    for (std::string& s : owned) ptrs.push_back(s.data());
    auto a = Args::parse(static_cast<int>(ptrs.size()), ptrs.data(), loader_value_flags(),
                         loader_switch_flags(), loader_repeat_flags());
    ASSERT_TRUE(a.ok()) << a.error().to_string();
    auto c = loader_config_from_flags(*a, {});
    ASSERT_FALSE(c.ok()) << flags.front() << " was accepted";
    EXPECT_EQ(c.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(c.error().to_string().find(want), std::string::npos) << c.error().to_string();
  }
}

TEST(LoaderFlagsTest, ImageCompatibilityFlagsReachTheConfig) {
  auto d = config({"d.jsonl", "--tokenizer", "/tok"});
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_TRUE(d->apply_exif_orientation);  // transformers' load_image
  EXPECT_EQ(d->small_images, image::SmartResizeRules::kCurrent);
  auto c = config({"d.jsonl", "--tokenizer", "/tok", "--exif", "ignore", "--small-images", "refuse"});
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_FALSE(c->apply_exif_orientation);
  EXPECT_EQ(c->small_images, image::SmartResizeRules::kRefuseBelowFactor);
}

TEST(LoaderFlagsTest, MediaFlagsAloneForInspect) {
  auto a = Args::parse(0, nullptr, media_value_flags(), media_switch_flags(),
                       media_repeat_flags());
  ASSERT_TRUE(a.ok());
  auto m = media_flags_from(*a);
  ASSERT_TRUE(m.ok());
  pipeline::LoaderConfig c;
  c.media_roots = {"stale"};
  m->apply_to(c);
  EXPECT_TRUE(c.media_roots.empty());
  EXPECT_EQ(c.max_record_bytes, pipeline::LoaderConfig{}.max_record_bytes);
}

TEST(LoaderFlagsTest, EveryMediaFlagIsInTheHelp) {
  const std::string help = kMediaFlagsHelp;
  std::set<std::string> all = media_value_flags();
  all.merge(media_repeat_flags());
  all.merge(media_switch_flags());
  EXPECT_EQ(all.size(), 9u);  // + --max-manifest-bytes, --max-media-per-record (issue 30)
  for (const std::string& f : all) EXPECT_NE(help.find("--" + f), std::string::npos) << f;
}

TEST(LoaderFlagsTest, PackingFlagsNeedTheirSwitchAndReachTheConfig) {
  auto c = config({"d.jsonl", "--tokenizer", "/tok", "--packing", "--max-tokens", "4096",
                   "--pack-format", "megatron", "--pack-align", "8", "--pack-window", "64",
                   "--truncate"});
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->packing.batching, pipeline::Batching::kPack);
  EXPECT_EQ(c->packing.max_tokens, 4096);
  EXPECT_EQ(c->packing.format, batch::PackFormat::kMegatron);
  EXPECT_EQ(c->packing.align, 8);
  EXPECT_EQ(c->packing.window, 64);
  EXPECT_TRUE(c->truncate);
  EXPECT_TRUE(c->validate().ok());
  auto b = config({"d.jsonl", "--tokenizer", "/tok", "--token-budget", "--position-rows", "3"});
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  EXPECT_EQ(b->packing.batching, pipeline::Batching::kTokenBudget);
  EXPECT_EQ(b->packing.position_rows, 3);
  auto refused = [](std::initializer_list<const char*> argv, const char* flag) {
    auto r = config(argv);
    ASSERT_FALSE(r.ok()) << flag;
    EXPECT_NE(r.error().to_string().find(flag), std::string::npos) << r.error().to_string();
  };
  refused({"d.jsonl", "--tokenizer", "/tok", "--max-tokens", "4096"}, "--max-tokens");
  refused({"d.jsonl", "--tokenizer", "/tok", "--packing", "--token-budget"}, "--token-budget");
  refused({"d.jsonl", "--tokenizer", "/tok", "--packing", "--pack-align", "8"}, "--pack-align");
  refused({"d.jsonl", "--tokenizer", "/tok", "--packing", "--pack-format", "thd"}, "--pack-format");
  refused({"d.jsonl", "--tokenizer", "/tok", "--packing", "--position-rows", "2"}, "position-rows");
  refused({"d.jsonl", "--tokenizer", "/tok", "--token-budget", "--pack-format", "hf"}, "--pack-format");
  refused({"d.jsonl", "--tokenizer", "/tok", "--packing", "--max-tokens", "0"}, "--max-tokens");
}

}  // namespace
}  // namespace stoker::cli
