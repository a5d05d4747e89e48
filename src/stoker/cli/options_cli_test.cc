// The command line reaches Settings through the option schema: repeatable media flags keep every
// value in order, byte sizes take suffixes, defaults are the engine's, bad values name the flag,
// data files are positional arguments (a comma is part of a file name).
#include "stoker/cli/options_cli.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

namespace stoker::cli {
namespace {

Result<config::Settings> parse(std::vector<std::string> argv, config::Command c = config::kRun) {
  std::vector<char*> ptrs;
  for (std::string& s : argv) ptrs.push_back(s.data());
  bool help = false;
  return parse_command_line(static_cast<int>(ptrs.size()), ptrs.data(), c, &help);
}

TEST(OptionsCliTest, MediaFlagsReachTheConfig) {
  auto s = parse({"d.jsonl", "--media-root", "/a", "--media-root=/b", "--allow-bucket", "one",
                  "--allow-bucket", "*", "--trust-media-paths", "--max-object-bytes", "16MiB",
                  "--max-record-bytes", "1m", "--io-deadline-ms", "5000", "--imds"});
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  const pipeline::LoaderConfig& c = s->loader;
  EXPECT_EQ(c.media_roots, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(c.allow_buckets, (std::vector<std::string>{"one", "*"}));
  EXPECT_TRUE(c.trust_media_paths);
  EXPECT_EQ(c.max_object_bytes, 16 << 20);
  EXPECT_EQ(c.max_record_bytes, 1 << 20);
  EXPECT_EQ(c.io_deadline_ms, 5000);
  EXPECT_TRUE(c.imds);
  // One loud line when a manifest may read any file.
  testing::internal::CaptureStderr();
  warn_settings(*s, "run");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("WARNING: --trust-media-paths"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST(OptionsCliTest, DefaultsAreTheEnginesAndNothingIsTrusted) {
  ::unsetenv("STOKER_IO_DEADLINE_MS");
  auto s = parse({"d.jsonl"});
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  const pipeline::LoaderConfig& c = s->loader;
  const pipeline::LoaderConfig engine;
  EXPECT_TRUE(c.media_roots.empty());
  EXPECT_TRUE(c.allow_buckets.empty());
  EXPECT_FALSE(c.trust_media_paths);
  EXPECT_FALSE(c.imds);
  EXPECT_EQ(c.max_object_bytes, engine.max_object_bytes);
  EXPECT_EQ(c.max_record_bytes, engine.max_record_bytes);
  EXPECT_EQ(c.io_deadline_ms, 120000);
  EXPECT_EQ(c.batch_size, 8);
  EXPECT_EQ(c.arena.bytes, std::size_t{1024} << 20);
  EXPECT_EQ(c.io_threads, 4);
  ASSERT_NE(c.model_config, nullptr);  // the model parsed once, here
  // serve's own defaults: 2 I/O threads and a 512 MiB arena per rank
  auto v = parse({"d.jsonl"}, config::kServe);
  ASSERT_TRUE(v.ok()) << v.error().to_string();
  EXPECT_EQ(v->loader.io_threads, 2);
  EXPECT_EQ(v->loader.arena.bytes, std::size_t{512} << 20);
}

TEST(OptionsCliTest, BadValuesNameTheFlag) {
  struct Case {
    std::vector<std::string> flags;
    std::string want;
  };
  const Case cases[] = {
      {{"--batch-size", "99999999999"}, "--batch-size must be an integer in [1, 65536], got '99999999999'"},
      {{"--batch-size", "0"}, "--batch-size must be an integer in [1, 65536], got '0'"},
      {{"--io-threads", "100000"}, "--io-threads must be an integer in [1, "},
      {{"--threads", "100000"}, "cores"},
      {{"--prefetch", "4x"}, "--prefetch must be an integer"},
      {{"--prefetch", "2000"}, "--prefetch must be an integer in [1, 1024], got '2000'"},
      {{"--seed", "-1"}, "--seed must be an integer in [0, 18446744073709551615], got '-1'"},
      {{"--epochs", "0"}, "--epochs must be -1 (forever) or an integer in [1, "},
      {{"--epochs", "-2"}, "--epochs must be -1 (forever) or an integer in [1, "},
      {{"--max-length", "-1"}, "--max-length must be an integer in [0, 2147483647]"},
      {{"--arena-mb", "17592186044416"}, "--arena-mb must be an integer in [1, "},
      {{"--max-object-bytes", "1.5G"}, "--max-object-bytes must be a byte count"},
      {{"--max-object-bytes", "0"}, "--max-object-bytes must be a byte count in [1, "},
      {{"--max-record-bytes", "5G"}, "--max-record-bytes must be a byte count in [1, 4294967296]"},
      {{"--io-deadline-ms", "0"}, "--io-deadline-ms must be an integer in [1, 2147483647]"},
      {{"--media-root="}, "--media-root needs a value, got ''"},
      {{"--allow-bucket="}, "--allow-bucket needs a value, got ''"},
      {{"--worker-sched", "fast"}, "--worker-sched must be one of batch, idle, normal, got 'fast'"},
      {{"--exif", "rotate"}, "--exif must be one of apply, ignore, got 'rotate'"},
      {{"--small-images", "drop"}, "--small-images must be one of resize, refuse"},
      {{"--bf16=yes"}, "--bf16 takes no value"},
      {{"--batchsize", "4"}, "unknown flag --batchsize (stoker run --help lists them)"},
      {{"--batch-size", "4", "--batch-size", "8"}, "--batch-size given twice ('4', then '8')"},
      {{"--rank", "3", "--world-size", "2"}, "--rank must be an integer in [0, 1], got '3'"},
      {{"--rank", "0"}, "--rank and --world-size go together"},
      {{"--trace-sample", "2"}, "--trace-sample needs --trace FILE (or --report DIR)"},
      {{"--arena-mb", "1", "--prefetch", "20"},
       "--prefetch must be an integer in [1, 16] (one ready batch per 64 KiB of the 1 MiB arena, "
       "--arena-mb), got '20'"},
  };
  for (const auto& [flags, want] : cases) {
    std::vector<std::string> argv = {"d.jsonl"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto s = parse(argv);
    ASSERT_FALSE(s.ok()) << flags.front() << " was accepted";
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().to_string().find(want), std::string::npos) << s.error().to_string();
  }
}

TEST(OptionsCliTest, ImageCompatibilityFlagsReachTheConfig) {
  auto d = parse({"d.jsonl"});
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_TRUE(d->loader.apply_exif_orientation);  // transformers' load_image
  EXPECT_EQ(d->loader.small_images, image::SmartResizeRules::kCurrent);
  auto c = parse({"d.jsonl", "--exif", "ignore", "--small-images", "refuse", "--bf16",
                  "--pad-to-max"});
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_FALSE(c->loader.apply_exif_orientation);
  EXPECT_EQ(c->loader.small_images, image::SmartResizeRules::kRefuseBelowFactor);
  EXPECT_EQ(c->loader.pixel_dtype, image::PixelDType::kBFloat16);
  EXPECT_EQ(c->loader.padding, pipeline::Padding::kFixed);
}

TEST(OptionsCliTest, InspectTakesTheMediaFlagsButNoLoaderFlags) {
  auto s = parse({"d.jsonl", "--media-root", "/r", "--limit", "3", "--json"}, config::kInspect);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->loader.media_roots, std::vector<std::string>{"/r"});
  EXPECT_EQ(s->inspect.limit, 3);
  EXPECT_TRUE(s->inspect.json);
  auto b = parse({"d.jsonl", "--batch-size", "4"}, config::kInspect);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().to_string().find("unknown flag --batch-size"), std::string::npos);
}

TEST(OptionsCliTest, EveryFlagOfACommandIsInItsHelp) {
  for (config::Command c : config::kAllCommands) {
    if ((c & config::kCliCommands) == 0) continue;
    const std::string help = options_help(c);
    for (const config::OptionSpec& o : config::options()) {
      if (!o.takes(c) || o.flag.empty() || o.positional) continue;
      EXPECT_NE(help.find("--" + std::string(o.flag)), std::string::npos)
          << config::command_name(c) << " --" << o.flag;
    }
  }
}

TEST(OptionsCliTest, PackingFlagsNeedTheirSwitchAndReachTheConfig) {
  auto c = parse({"d.jsonl", "--packing", "--max-tokens", "4096", "--pack-format", "megatron",
                  "--pack-align", "8", "--pack-window", "64", "--truncate"});
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->loader.packing.batching, pipeline::Batching::kPack);
  EXPECT_EQ(c->loader.packing.max_tokens, 4096);
  EXPECT_EQ(c->loader.packing.format, batch::PackFormat::kMegatron);
  EXPECT_EQ(c->loader.packing.align, 8);
  EXPECT_EQ(c->loader.packing.window, 64);
  EXPECT_TRUE(c->loader.truncate);
  auto b = parse({"d.jsonl", "--token-budget", "--position-rows", "3"});
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  EXPECT_EQ(b->loader.packing.batching, pipeline::Batching::kTokenBudget);
  EXPECT_EQ(b->loader.packing.position_rows, 3);
  const std::pair<std::vector<std::string>, std::string> refused[] = {
      {{"--max-tokens", "4096"}, "--max-tokens needs --packing or --token-budget"},
      {{"--packing", "--token-budget"}, "--packing and --token-budget exclude each other"},
      {{"--packing", "--pack-align", "8"}, "--pack-align is for --pack-format megatron"},
      {{"--packing", "--pack-format", "thd"}, "--pack-format must be one of hf, megatron"},
      {{"--packing", "--position-rows", "2"}, "--position-rows must be an integer in [3, 4]"},
      {{"--token-budget", "--pack-format", "hf"}, "--pack-format is for --packing"},
      {{"--packing", "--max-tokens", "0"}, "--max-tokens must be an integer in [1, "},
  };
  for (const auto& [flags, want] : refused) {
    std::vector<std::string> argv = {"d.jsonl"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto r = parse(argv);
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_NE(r.error().to_string().find(want), std::string::npos) << r.error().to_string();
  }
}

TEST(OptionsCliTest, DataFilesArePositionalAndACommaIsPartOfAName) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("stoker-opts-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* n : {"a.jsonl", "b.jsonl", "c,d.jsonl"}) std::ofstream(dir / n) << "\n";
  const std::string a = (dir / "a.jsonl").string(), b = (dir / "b.jsonl").string();
  auto two = parse({a, b});
  ASSERT_TRUE(two.ok()) << two.error().to_string();
  EXPECT_EQ(two->loader.data, (std::vector<std::string>{a, b}));
  // A manifest whose name has a comma opens as that one file.
  auto comma = parse({(dir / "c,d.jsonl").string()});
  ASSERT_TRUE(comma.ok()) << comma.error().to_string();
  EXPECT_EQ(comma->loader.data, std::vector<std::string>{(dir / "c,d.jsonl").string()});
  // The old comma list is not guessed: it is refused, naming the separate arguments.
  auto old = parse({a + "," + b});
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().to_string().find("several data files are separate arguments"),
            std::string::npos) << old.error().to_string();
  auto none = parse({"--batch-size", "4"});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().to_string().find("expected DATA.jsonl"), std::string::npos);
  fs::remove_all(dir);
}

TEST(OptionsCliTest, Issue30CapsReachTheConfig) {
  auto s = parse({"d.jsonl", "--max-manifest-bytes", "20G", "--max-media-per-record", "2"});
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->loader.max_manifest_bytes, std::int64_t{20} << 30);
  EXPECT_EQ(s->loader.max_media_per_record, 2);
  auto d = parse({"d.jsonl"});
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->loader.max_manifest_bytes, std::int64_t{4} << 30);  // the issue's stated default
  EXPECT_EQ(d->loader.max_media_per_record, 1024);
  auto bad = parse({"d.jsonl", "--max-media-per-record", "0"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().to_string().find("--max-media-per-record must be an integer in [1, "
                                         "16777216], got '0'"), std::string::npos)
      << bad.error().to_string();
}

// render: its own flags (Args) and the schema's media options, one parse; nothing else of the
// schema (no Loader flags, no manifest cache: render reads no manifest).
TEST(OptionsCliTest, RenderTakesTheSchemasMediaOptionsBesideItsOwnFlags) {
  const SchemaFlagSets f = schema_flag_sets(config::kRender);
  EXPECT_TRUE(f.repeats.count("media-root") && f.repeats.count("allow-bucket"));
  EXPECT_TRUE(f.switches.count("trust-media-paths") && f.switches.count("imds"));
  for (const char* v : {"max-object-bytes", "max-record-bytes", "max-media-per-record",
                        "io-deadline-ms"}) {
    EXPECT_TRUE(f.values.count(v)) << v;
  }
  for (const char* no : {"batch-size", "max-manifest-bytes", "cache-dir", "model", "max-length"}) {
    EXPECT_FALSE(f.values.count(no) || f.switches.count(no) || f.repeats.count(no)) << no;
  }
  std::vector<std::string> argv = {"conv.json", "--model", "qwen2-vl", "--media-root", "/a",
                                   "--media-root=/b", "--max-object-bytes", "1M",
                                   "--max-media-per-record", "3", "--no-images"};
  std::vector<char*> ptrs;
  for (std::string& a : argv) ptrs.push_back(a.data());
  std::set<std::string> values = f.values, switches = f.switches;
  values.insert("model");
  switches.insert("no-images");
  auto args = Args::parse(static_cast<int>(ptrs.size()), ptrs.data(), values, switches, f.repeats);
  ASSERT_TRUE(args.ok()) << args.error().to_string();
  EXPECT_EQ(args->get("model"), "qwen2-vl");  // render's own
  auto s = settings_from_args(*args, config::kRender);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->loader.media_roots, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(s->loader.max_object_bytes, 1 << 20);
  EXPECT_EQ(s->loader.max_media_per_record, 3);
  EXPECT_EQ(s->loader.max_record_bytes, std::int64_t{16} << 20);  // the schema's default
  // Checked as run checks it, naming the flag.
  std::vector<std::string> bad_argv = {"conv.json", "--max-record-bytes", "5G"};
  std::vector<char*> bad_ptrs;
  for (std::string& a : bad_argv) bad_ptrs.push_back(a.data());
  auto bad_args = Args::parse(2 + 1, bad_ptrs.data(), f.values, f.switches, f.repeats);
  ASSERT_TRUE(bad_args.ok());
  auto bad = settings_from_args(*bad_args, config::kRender);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().to_string().find("--max-record-bytes must be a byte count in [1, "
                                         "4294967296]"), std::string::npos)
      << bad.error().to_string();
  EXPECT_NE(options_help(config::kRender).find("--max-media-per-record"), std::string::npos);
}

}  // namespace
}  // namespace stoker::cli
