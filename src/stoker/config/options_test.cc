// The option schema: every declaration is sound (defaults parse and sit in their range, names
// and flags are unique per command), machine-dependent ranges refuse what a machine cannot
// honour naming the option, the value and the range, environment variables are fallbacks read
// when the settings are built (strictly, naming the variable), the model folder's stoker.json
// sets what it may and no more, and the settings' defaults are the engine's.
#include "stoker/config/build.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

namespace stoker::config {
namespace {


// A small machine: 2 cores, 8 GiB.
const Machine kSmall{.cores = 2, .memory_bytes = std::int64_t{8} << 30};

EnvLookup env_of(std::map<std::string, std::string> vars) {
  auto owned = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [owned](const char* name) -> const char* {
    auto it = owned->find(name);
    return it == owned->end() ? nullptr : it->second.c_str();
  };
}

Result<Settings> build(Command c, Frontend fe, std::map<std::string, std::string> given,
                       std::map<std::string, std::string> env = {}, const Machine& m = kSmall) {
  Builder b(c, fe, m, env_of(std::move(env)));
  Value data;
  data.list = {"d.jsonl"};
  STOKER_RETURN_IF_ERROR(b.set(*find_option("data", c), data));
  for (const auto& [name, text] : given) {
    const OptionSpec* o = find_option(name, c);
    if (o == nullptr) return invalid_argument("no option " + name);
    STOKER_RETURN_IF_ERROR(b.set_text(*o, text));
  }
  return b.finish();
}

TEST(OptionSchemaTest, EveryDeclarationIsSound) {
  for (Command c : kAllCommands) {
    std::set<std::string_view> names, flags;
    for (const OptionSpec& o : options()) {
      if (!o.takes(c)) continue;
      EXPECT_TRUE(names.insert(o.name).second) << command_name(c) << ": " << o.name << " twice";
      if (!o.flag.empty()) EXPECT_TRUE(flags.insert(o.flag).second) << o.flag << " twice";
      EXPECT_FALSE(o.help.empty()) << o.name;
      EXPECT_FALSE(o.group.empty()) << o.name;
      for (std::string_view d : {o.def, o.def_serve}) {
        if (d.empty()) continue;
        Result<Value> v = parse_text(o, d, o.name, kSmall);
        EXPECT_TRUE(v.ok()) << o.name << " default '" << d << "': " << v.error().to_string();
      }
      if (o.kind == Kind::kChoice) EXPECT_FALSE(o.choices.empty()) << o.name;
      if ((c & kCliCommands) != 0 && o.set != nullptr) {
        EXPECT_FALSE(o.flag.empty()) << o.name << " reaches " << command_name(c) << " without a flag";
      }
    }
  }
}

TEST(OptionSchemaTest, DefaultsAreTheEngines) {
  auto s = build(kPyLoader, Frontend::kPython, {});
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  const pipeline::LoaderConfig engine;
  const pipeline::LoaderConfig& c = s->loader;
  EXPECT_EQ(c.model, engine.model);
  EXPECT_EQ(c.batch_size, engine.batch_size);
  EXPECT_EQ(c.max_length, engine.max_length);
  EXPECT_EQ(c.padding, engine.padding);
  EXPECT_EQ(c.pixel_dtype, engine.pixel_dtype);
  EXPECT_EQ(c.seed, engine.seed);
  EXPECT_EQ(c.epochs, engine.epochs);
  EXPECT_EQ(c.mode, engine.mode);
  EXPECT_EQ(c.threads, engine.threads);
  EXPECT_EQ(c.io_threads, engine.io_threads);
  EXPECT_EQ(c.prefetch, engine.prefetch);
  EXPECT_EQ(c.window, engine.window);
  EXPECT_EQ(c.fetch_bytes_in_flight, engine.fetch_bytes_in_flight);
  EXPECT_EQ(c.arena.bytes, engine.arena.bytes);
  EXPECT_EQ(c.arena.shared, engine.arena.shared);
  EXPECT_EQ(c.worker_sched, engine.worker_sched);
  EXPECT_EQ(c.errors.strict, engine.errors.strict);
  EXPECT_EQ(c.errors.max_errors, engine.errors.max_errors);
  EXPECT_EQ(c.errors.max_error_rate, engine.errors.max_error_rate);
  EXPECT_EQ(c.errors.min_seen, engine.errors.min_seen);
  EXPECT_EQ(c.max_object_bytes, engine.max_object_bytes);
  EXPECT_EQ(c.max_record_bytes, engine.max_record_bytes);
  EXPECT_EQ(c.max_manifest_bytes, engine.max_manifest_bytes);
  EXPECT_EQ(c.max_media_per_record, engine.max_media_per_record);
  EXPECT_EQ(c.io_deadline_ms, 120000);  // io's default, spelled out
  EXPECT_EQ(c.io_max_attempts, engine.io_max_attempts);
  EXPECT_EQ(c.manifest_chunk_bytes, engine.manifest_chunk_bytes);
  EXPECT_EQ(c.fetch_blocking, engine.fetch_blocking);
  EXPECT_EQ(c.cache_dir, engine.cache_dir);
  EXPECT_EQ(c.packing.batching, engine.packing.batching);
  EXPECT_EQ(c.packing.window, engine.packing.window);
  EXPECT_EQ(c.packing.format, engine.packing.format);
  EXPECT_EQ(c.packing.position_rows, engine.packing.position_rows);
  EXPECT_EQ(c.packing.align, engine.packing.align);
  EXPECT_EQ(c.apply_exif_orientation, engine.apply_exif_orientation);
  EXPECT_EQ(c.small_images, engine.small_images);
  EXPECT_EQ(c.truncate, engine.truncate);
  EXPECT_EQ(c.trace.max_events, engine.trace.max_events);
  EXPECT_EQ(c.trace.sample_every, engine.trace.sample_every);
}

TEST(OptionSchemaTest, RangesAMachineCanHonour) {
  struct Case {
    Command c;
    std::map<std::string, std::string> given;
    std::string want;
  };
  const Case cases[] = {
      // threads against the cores: 4 x 2 = 8, at least 64
      {kRun, {{"threads", "100000"}},
       "--threads must be an integer in [0, 64] (4 x 2 cores, at least 64, at most 1024), got '100000'"},
      {kRun, {{"io_threads", "100000"}},
       "--io-threads must be an integer in [1, 256] (16 x 2 cores, at least 256, at most 4096)"},
      {kRun, {{"batch_size", "2147483647"}}, "--batch-size must be an integer in [1, 65536]"},
      {kRun, {{"prefetch", "2147483647"}}, "--prefetch must be an integer in [1, 1024]"},
      {kRun, {{"sample_window", "2147483647"}}, "--sample-window must be an integer in [0, 65536]"},
      // sizes against the memory (8 GiB); the arena, mapped whole at start, 3/4 of it
      {kRun, {{"arena_bytes", "16384"}},
       "--arena-mb must be an integer in [1, 6144] (3/4 of this machine's memory, 6144 MiB), got "
       "'16384'"},
      {kPyLoader, {{"arena_bytes", "64T"}}, "arena_bytes must be a byte count in [4096, 6442450944]"},
      {kRun, {{"fetch_bytes_in_flight", "9G"}}, "--fetch-bytes-in-flight must be a byte count in [1, 8589934592]"},
      // prefetch and windows against the arena
      {kRun, {{"arena_bytes", "1"}, {"prefetch", "17"}},
       "--prefetch must be an integer in [1, 16] (one ready batch per 64 KiB of the 1 MiB arena, "
       "--arena-mb), got '17'"},
      {kPyLoader, {{"arena_bytes", "1M"}, {"sample_window", "100"}},
       "sample_window must be an int in [0, 64] (one sample in flight per 16 KiB of the 1 MiB "
       "arena, arena_bytes), got 100"},
      // every rank of a node server has its own arena
      {kServe, {{"arena_bytes", "2048"}, {"world_size", "8"}},
       "--arena-mb x --world-size = 2 GiB x 8 is more than 3/4 of this machine's memory (8 GiB)"},
  };
  for (const Case& k : cases) {
    const Frontend fe = (k.c & kPythonCommands) != 0 ? Frontend::kPython : Frontend::kCli;
    auto s = build(k.c, fe, k.given);
    ASSERT_FALSE(s.ok()) << k.want;
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().to_string().find(k.want), std::string::npos) << s.error().to_string();
  }
  // The same values fit a bigger machine: the bound is the machine's, not a constant.
  const Machine big{.cores = 64, .memory_bytes = std::int64_t{1} << 40};
  auto ok = build(kRun, Frontend::kCli, {{"threads", "200"}, {"arena_bytes", "16384"}}, {}, big);
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  EXPECT_EQ(ok->loader.threads, 200);
  EXPECT_EQ(ok->loader.arena.bytes, std::size_t{16384} << 20);
}

// Issue #28: every output path is declared as one (data or diagnostic) and probed when the
// settings are built — refused before any work, naming the option; an existing file keeps its
// content; a missing one is not left behind.
TEST(OptionSchemaTest, OutputPathsAreCheckedWhenBuilt) {
  std::set<std::string_view> data, diagnostic;
  for (const OptionSpec& o : options()) {
    if (o.output == Output::kData) data.insert(o.name);
    if (o.output == Output::kDiagnostic || o.output == Output::kDiagnosticFolder) {
      diagnostic.insert(o.name);
    }
  }
  EXPECT_EQ(data, (std::set<std::string_view>{"state_file", "delivered_log", "batch_hashes"}));
  EXPECT_EQ(diagnostic, (std::set<std::string_view>{"trace", "report", "error_report",
                                                    "summary_json"}));
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                                    ("stoker-outputs-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string kept = (dir / "delivered.log").string();
  std::ofstream(kept) << "0 0 1 2 3\n";
  auto ok = build(kRun, Frontend::kCli,
                  {{"delivered_log", kept}, {"trace", (dir / "t.json").string()},
                   {"report", (dir / "report").string()}, {"state_file", (dir / "s").string()}});
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  std::ifstream in(kept);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "0 0 1 2 3");
  EXPECT_FALSE(std::filesystem::exists(dir / "t.json"));
  EXPECT_FALSE(std::filesystem::exists(dir / "report"));
  struct Case {
    Command c;
    std::string option, value, want;
  };
  const Case cases[] = {
      {kRun, "trace", "/nonexistent/dir/t.json",
       "--trace /nonexistent/dir/t.json: cannot be written (checking the folder /nonexistent/dir"},
      {kPyLoader, "error_report", "/nonexistent/dir/e.jsonl", "error_report /nonexistent/dir"},
      {kRun, "batch_hashes", dir.string(), "is a folder"},
      {kCluster, "summary_json", "/nonexistent/dir/s.json", "--summary-json /nonexistent/dir"},
      {kRun, "report", kept + "/r", "--report " + kept + "/r: cannot be written"},
  };
  for (const Case& k : cases) {
    const Frontend fe = (k.c & kPythonCommands) != 0 ? Frontend::kPython : Frontend::kCli;
    auto s = build(k.c, fe, {{k.option, k.value}});
    ASSERT_FALSE(s.ok()) << k.option;
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().to_string().find(k.want), std::string::npos) << s.error().to_string();
  }
  std::filesystem::remove_all(dir);
}

TEST(OptionSchemaTest, EnvironmentVariablesAreFallbacksReadWhenBuilt) {
  const std::map<std::string, std::string> env = {
      {"STOKER_IO_DEADLINE_MS", "1500"}, {"STOKER_IO_MAX_ATTEMPTS", "30"},
      {"STOKER_CACHE_DIR", "/x/y"},      {"STOKER_MANIFEST_CHUNK_BYTES", "4096"},
      {"STOKER_FETCH_BLOCKING", "1"},    {"WORLD_SIZE", "3"}};
  auto s = build(kRun, Frontend::kCli, {}, env);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->loader.io_deadline_ms, 1500);
  EXPECT_EQ(s->loader.io_max_attempts, 30);
  EXPECT_EQ(s->loader.cache_dir, "/x/y");
  EXPECT_EQ(s->loader.manifest_chunk_bytes, 4096);
  EXPECT_TRUE(s->loader.fetch_blocking);
  // A flag wins over its variable.
  auto f = build(kRun, Frontend::kCli, {{"io_deadline_ms", "99"}}, env);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->loader.io_deadline_ms, 99);
  // The node server's world size: --world-size, else $WORLD_SIZE, else 1.
  auto v = build(kServe, Frontend::kCli, {}, env);
  ASSERT_TRUE(v.ok()) << v.error().to_string();
  EXPECT_EQ(v->serve.world_size, 3);
  // Parsed as strictly as a flag, naming the variable.
  for (const auto& [var, value, want] : std::initializer_list<std::tuple<const char*, const char*, const char*>>{
           {"STOKER_IO_DEADLINE_MS", "2s", "$STOKER_IO_DEADLINE_MS must be an integer in [1, 2147483647], got '2s'"},
           {"STOKER_FETCH_BLOCKING", "yes", "$STOKER_FETCH_BLOCKING must be 1 or 0 (true or false), got 'yes'"},
           {"STOKER_MANIFEST_CHUNK_BYTES", "0", "$STOKER_MANIFEST_CHUNK_BYTES must be a byte count in [1, 1073741824]"},
           {"WORLD_SIZE", "4x", "$WORLD_SIZE must be an integer in [1, 4096], got '4x'"}}) {
    auto bad = build(kServe, Frontend::kCli, {}, {{var, value}});
    ASSERT_FALSE(bad.ok()) << var;
    EXPECT_NE(bad.error().to_string().find(want), std::string::npos) << bad.error().to_string();
  }
}

TEST(OptionSchemaTest, TheModelFolderSetsWhatItMayAndIsParsedOnce) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("stoker-schema-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "qwen2_5_vl"})";
  std::ofstream(dir / "stoker.json") << R"({"exif": "ignore", "small_images": "refuse"})";
  auto s = build(kRun, Frontend::kCli, {{"model", dir.string()}});
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_FALSE(s->loader.apply_exif_orientation);
  EXPECT_EQ(s->loader.small_images, image::SmartResizeRules::kRefuseBelowFactor);
  ASSERT_NE(s->loader.model_config, nullptr);
  EXPECT_EQ(s->loader.model_config->folder, dir.string());
  // A flag wins over the folder.
  auto f = build(kRun, Frontend::kCli, {{"model", dir.string()}, {"exif", "apply"}});
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->loader.apply_exif_orientation);
  // Only the options marked model_folder, each checked like a flag, naming the file.
  std::ofstream(dir / "stoker.json") << R"({"batch_size": 4})";
  auto other = build(kRun, Frontend::kCli, {{"model", dir.string()}});
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().to_string().find("stoker.json: 'batch_size' is not an option a model "
                                           "folder may set"), std::string::npos)
      << other.error().to_string();
  std::ofstream(dir / "stoker.json") << R"({"exif": "rotate"})";
  auto bad = build(kRun, Frontend::kCli, {{"model", dir.string()}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().to_string().find("stoker.json: exif must be one of apply, ignore"),
            std::string::npos) << bad.error().to_string();
  fs::remove_all(dir);
}

TEST(OptionSchemaTest, MessagesNameTheOptionAsTheFrontEndSpellsIt) {
  auto cli = build(kRun, Frontend::kCli, {{"max_tokens", "5"}});
  ASSERT_FALSE(cli.ok());
  EXPECT_NE(cli.error().to_string().find("--max-tokens needs --packing or --token-budget"),
            std::string::npos) << cli.error().to_string();
  auto py = build(kPyLoader, Frontend::kPython, {{"max_tokens", "5"}});
  ASSERT_FALSE(py.ok());
  EXPECT_NE(py.error().to_string().find("max_tokens needs packing=True or token_budget=True"),
            std::string::npos) << py.error().to_string();
  EXPECT_EQ(py.error().to_string().find("--"), std::string::npos) << py.error().to_string();
}

TEST(OptionSchemaTest, TheTablesListEveryOption) {
  const std::string md = markdown_table();
  for (const OptionSpec& o : options()) {
    EXPECT_NE(md.find("| `" + std::string(o.name) + "` |"), std::string::npos) << o.name;
    if (!o.unit_name.empty()) {  // the unit keyword (arena_mb) beside its option's flag
      EXPECT_NE(md.find("Python also `" + std::string(o.unit_name) + "`"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace stoker::config

namespace stoker::config {
namespace {

TEST(OptionSchemaTest, VideoTimeIndexFromTheFlagAndTheModelFolder) {
  auto d = build(kRun, Frontend::kCli, {});
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->loader.video_time_index, batch::TimeIndexMode::kFloatThenTruncate);
  auto i = build(kRun, Frontend::kCli, {{"video_time_index", "int"}});
  ASSERT_TRUE(i.ok()) << i.error().to_string();
  EXPECT_EQ(i->loader.video_time_index, batch::TimeIndexMode::kIntCastFirst);
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("stoker-tix-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "qwen2_5_vl"})";
  std::ofstream(dir / "stoker.json") << R"({"video_time_index": "int"})";
  auto f = build(kPyLoader, Frontend::kPython, {{"model", dir.string()}});
  ASSERT_TRUE(f.ok()) << f.error().to_string();
  EXPECT_EQ(f->loader.video_time_index, batch::TimeIndexMode::kIntCastFirst);
  auto bad = build(kRun, Frontend::kCli, {{"video_time_index", "round"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().to_string().find("--video-time-index must be one of float, int, got "
                                         "'round'"), std::string::npos) << bad.error().to_string();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stoker::config

namespace stoker::config {
namespace {

// Issue 30's options live in the table like any other: STOKER_SERVER_UID is server_uid's
// environment fallback (read and checked by the schema, for the front ends that connect), and
// render takes the "media and I/O" options it applies and the two chat-template options (#24) —
// no other.
TEST(OptionSchemaTest, Issue30OptionsAreDeclaredInTheTable) {
  const OptionSpec* uid = find_option("server_uid", kPyLoader);
  ASSERT_NE(uid, nullptr);
  EXPECT_EQ(uid->env, "STOKER_SERVER_UID");
  auto none = env_value(*uid, kSmall, env_of({}));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto named = env_value(*uid, kSmall, env_of({{"STOKER_SERVER_UID", "65534"}}));
  ASSERT_TRUE(named.ok()) << named.error().to_string();
  ASSERT_TRUE(named->has_value());
  EXPECT_EQ((*named)->i, 65534);
  for (const char* bad : {"-1", "nobody", "4294967295"}) {
    auto r = env_value(*uid, kSmall, env_of({{"STOKER_SERVER_UID", bad}}));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().to_string().find("$STOKER_SERVER_UID must be an integer in [0, "
                                         "4294967294]"), std::string::npos)
        << r.error().to_string();
  }
  std::set<std::string_view> render;
  for (const OptionSpec& o : options()) {
    if (!o.takes(kRender)) continue;
    const bool template_option = o.name == "chat_template" || o.name == "chat_template_kwargs";
    if (!template_option) EXPECT_EQ(o.group, "media and I/O") << o.name;
    render.insert(o.name);
  }
  EXPECT_TRUE(render.count("max_media_per_record") && render.count("media_root") &&
              render.count("max_object_bytes") && render.count("max_record_bytes"));
  EXPECT_FALSE(render.count("max_manifest_bytes") || render.count("cache_dir"));
  Builder b(kRender, Frontend::kCli, kSmall, env_of({}));
  auto s = b.finish();  // no data, no model: render names its record itself
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->loader.max_media_per_record, 1024);
  EXPECT_EQ(s->loader.io_deadline_ms, 120000);
}

}  // namespace
}  // namespace stoker::config
