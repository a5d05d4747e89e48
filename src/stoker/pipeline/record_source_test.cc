// The record-source seam: a kind registered from outside the engine (here an in-memory copy of
// a JSONL manifest, "mem:" + path) is what the Loader reads when a spec names it, and it
// delivers byte for byte what the JSONL manifest delivers; specs of different kinds in one run
// are chained, ids running over them in the order given (a ConcatSource).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "stoker/dataset/record_source.h"
#include "stoker/io/media_access.h"
#include "stoker/pipeline/store_fetcher.h"
#include "stoker/pipeline/test_util.h"

namespace stoker::pipeline {
namespace {

using testing::make_dataset;
using testing::run_loader;
using testing::small_config;

// A manifest read whole into memory at open; its media resolve as the file's would.
class MemorySource final : public dataset::RecordSource {
 public:
  MemorySource(std::vector<std::string> lines, std::string name, io::MediaScope scope)
      : lines_(std::move(lines)), name_(std::move(name)), scope_(std::move(scope)) {}
  std::uint64_t size() const override { return lines_.size(); }
  Status read(std::uint64_t id, std::string& out) const override {
    out = lines_[id];
    return ok_status();
  }
  dataset::RecordOrigin origin(std::uint64_t id) const override { return {name_, id + 1}; }
  const dataset::MediaResolver& media(std::uint64_t) const override { return scope_; }
  void prefetch(std::span<const std::uint64_t> ids) const override {
    hinted.push_back(std::vector<std::uint64_t>(ids.begin(), ids.end()));
  }
  mutable std::vector<std::vector<std::uint64_t>> hinted;  // each prefetch call's ids

 private:
  struct Scope final : dataset::MediaResolver {
    explicit Scope(io::MediaScope s) : scope(std::move(s)) {}
    Result<std::string> resolve(std::string_view ref) const override { return scope.resolve(ref); }
    io::MediaScope scope;
  };
  std::vector<std::string> lines_;
  std::string name_;
  Scope scope_;
};

std::atomic<int> opened{0};

Result<std::unique_ptr<dataset::RecordSource>> open_memory(SourceEnv env) {
  if (env.specs.size() != 1) return invalid_argument("one mem: spec at a time");
  const std::string path = env.specs[0].substr(4);
  std::ifstream in(path);
  if (!in) return not_found("mem: cannot read " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  ++opened;
  return std::unique_ptr<dataset::RecordSource>(
      new MemorySource(std::move(lines), env.names[0], std::move(env.scopes[0])));
}

const RecordSourceKind kMemory = {
    "memory", [](std::string_view spec) { return spec.rfind("mem:", 0) == 0; }, open_memory,
    [](std::string_view spec, const io::MediaAccess& access) {
      return io::MediaScope::make(spec.substr(4), access);
    }};

TEST(RecordSourceTest, ARegisteredKindDeliversWhatTheManifestDelivers) {
  STOKER_REQUIRE_TOKENIZER();
  static const bool registered = (register_record_source(&kMemory), true);
  (void)registered;
  const synth::SynthResult ds = make_dataset("memsource", 24, 0.1);
  LoaderConfig jsonl = small_config(ds.data_path);
  const testing::RunResult want = run_loader(jsonl);
  ASSERT_FALSE(want.hashes.empty());

  LoaderConfig mem = jsonl;
  mem.data = {"mem:" + ds.data_path};
  const int before = opened.load();
  const testing::RunResult got = run_loader(mem);
  EXPECT_EQ(opened.load(), before + 1) << "the registered kind opened the spec";
  EXPECT_EQ(got.hashes, want.hashes);
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_EQ(got.stats.failed, want.stats.failed);

  // Two kinds in one run: ids 0..23 from the memory copy, 24..47 from the file.
  LoaderConfig both = jsonl;
  both.data = {"mem:" + ds.data_path, ds.data_path};
  both.epochs = 1;
  const testing::RunResult chained = run_loader(both);
  ASSERT_FALSE(chained.error) << chained.error->to_string();
  std::vector<std::uint64_t> ids = chained.ids;
  std::sort(ids.begin(), ids.end());
  std::vector<std::uint64_t> expect;
  for (std::uint64_t id : want.ids) expect.push_back(id), expect.push_back(id + 24);
  std::sort(expect.begin(), expect.end());
  EXPECT_EQ(ids, expect) << "each record of both parts once, the same ones failing";
}

TEST(RecordSourceTest, ConcatSourceRunsIdsOverItsPartsInOrder) {
  const std::string dir = ::testing::TempDir();  // a folder that exists, ending in '/'
  auto part = [&](std::vector<std::string> lines, std::string name) {
    return std::unique_ptr<dataset::RecordSource>(
        new MemorySource(std::move(lines), std::move(name), *io::MediaScope::make(dir + "x.jsonl", {})));
  };
  std::vector<std::unique_ptr<dataset::RecordSource>> parts;
  parts.push_back(part({"a0", "a1"}, "a"));
  parts.push_back(part({}, "empty"));
  parts.push_back(part({"c0"}, "c"));
  dataset::ConcatSource all(std::move(parts));
  ASSERT_EQ(all.size(), 3u);
  std::string text;
  const char* want[] = {"a0", "a1", "c0"};
  const char* names[] = {"a", "a", "c"};
  const std::uint64_t lines[] = {1, 2, 1};
  for (std::uint64_t id = 0; id < 3; ++id) {
    ASSERT_TRUE(all.read(id, text).ok());
    EXPECT_EQ(text, want[id]);
    EXPECT_EQ(all.origin(id).name, names[id]);
    EXPECT_EQ(all.origin(id).line, lines[id]);
  }
  Result<std::string> uri = all.media(2).resolve("img/1.jpg");
  ASSERT_TRUE(uri.ok()) << uri.error().to_string();
  EXPECT_EQ(*uri, dir + "img/1.jpg");
}

// The engine's hint reaches each part as that part's own ids, in order; a part none of the ids
// fall in (the empty one, or one not hinted) is not called.
TEST(RecordSourceTest, ConcatSourceHandsEachPartItsOwnHintedIds) {
  const std::string dir = ::testing::TempDir();
  std::vector<const MemorySource*> seen;
  auto part = [&](std::vector<std::string> lines) {
    auto p = std::make_unique<MemorySource>(std::move(lines), "p", *io::MediaScope::make(dir + "x.jsonl", {}));
    seen.push_back(p.get());
    return std::unique_ptr<dataset::RecordSource>(std::move(p));
  };
  std::vector<std::unique_ptr<dataset::RecordSource>> parts;
  parts.push_back(part({"a0", "a1", "a2"}));  // ids 0..2
  parts.push_back(part({}));                  // none
  parts.push_back(part({"c0", "c1"}));        // ids 3..4
  parts.push_back(part({"d0"}));              // id 5
  dataset::ConcatSource all(std::move(parts));
  const std::vector<std::uint64_t> ids = {4, 0, 2, 3};
  all.prefetch(ids);
  ASSERT_EQ(seen[0]->hinted.size(), 1u);
  EXPECT_EQ(seen[0]->hinted[0], (std::vector<std::uint64_t>{0, 2}));
  EXPECT_TRUE(seen[1]->hinted.empty());
  ASSERT_EQ(seen[2]->hinted.size(), 1u);
  EXPECT_EQ(seen[2]->hinted[0], (std::vector<std::uint64_t>{1, 0}));
  EXPECT_TRUE(seen[3]->hinted.empty());
}

}  // namespace
}  // namespace stoker::pipeline
