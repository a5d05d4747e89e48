// Issue #28: the state file as untrusted input (bounded read, strict parse naming file/line/field,
// atomic write), the state's numbers against the data, and the order fingerprint — each input
// that decides the order changes exactly its own field; a resume across any of them is refused
// naming it (force_resume: resumed with a note); the world size is not part of it.
#include "stoker/pipeline/state_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "stoker/pipeline/test_util.h"

namespace stoker::pipeline {
namespace {
namespace fs = std::filesystem;

using testing::make_dataset;
using testing::run_loader;
using testing::small_config;

std::string temp_path(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("stoker-state-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

// Small and lazy: these tests create many loaders and take few batches.
LoaderConfig light_config(const std::string& data) {
  LoaderConfig c = small_config(data);
  c.arena.bytes = std::size_t{16} << 20;
  c.prefetch_on_create = false;
  return c;
}

std::string error_of(const Result<SavedRun>& r) { return r.ok() ? "" : r.error().to_string(); }

TEST(StateFileTest, RoundTripsWithTheFingerprint) {
  SavedRun run;
  run.state = LoaderState{.epoch = 2, .position = 40, .errors = 3, .packs = 5, .plan = 0xbeef};
  run.state.fingerprint.fields = {{"data", "64:0123456789abcdef"}, {"seed", "7"},
                                  {"model", "qwen2_5_vl:1a2b3c4d"}};
  run.batches = 12;
  const std::string text = state_file_text(run);
  EXPECT_EQ(text,
            "stoker-state v1 epoch=2 position=40 errors=3 packs=5 plan=0000beef "
            "fp.data=64:0123456789abcdef fp.seed=7 fp.model=qwen2_5_vl:1a2b3c4d\nbatches=12\n");
  Result<SavedRun> back = parse_state_file(text);
  ASSERT_TRUE(back.ok()) << error_of(back);
  EXPECT_EQ(back->state.serialize(), run.state.serialize());
  EXPECT_EQ(back->state.fingerprint, run.state.fingerprint);
  EXPECT_EQ(back->batches, 12u);
  // An older stoker's file: no fingerprint, maybe no batches line.
  back = parse_state_file("stoker-state v1 epoch=0 position=8 errors=0\n");
  ASSERT_TRUE(back.ok()) << error_of(back);
  EXPECT_TRUE(back->state.fingerprint.empty());
  EXPECT_EQ(back->batches, 0u);
}

TEST(StateFileTest, ParseErrorsNameTheLineAndTheField) {
  struct Case {
    std::string text, want;
  };
  const Case cases[] = {
      {"", "empty"},
      {"\x7f" "ELF\x01\x02", "expected 'stoker-state v1 ...', got '?ELF??'"},
      {"stoker-state v1 epoch=0 posit", "line 1: loader state: field 'posit' is not NAME=VALUE"},
      {"stoker-state v1 epoch=0 position=abc", "field 'position' must be a number"},
      {"stoker-state v1 epoch=0 position=-1", "field 'position' must be a number in [0, "},
      {"stoker-state v1 epoch=0 position=99999999999999999999", "field 'position' must be"},
      {"stoker-state v1 epoch=0", "field 'position' is missing"},
      {"stoker-state v1 position=0", "field 'epoch' is missing"},
      {"stoker-state v1 epoch=0 position=1 position=2", "field 'position' appears twice"},
      {"stoker-state v1 epoch=0 position=1 fp.seed=1 fp.seed=2", "'fp.seed' appears twice"},
      {"stoker-state v1 epoch=0 position=1 fp.Seed=1", "fingerprint field 'fp.Seed=1'"},
      {"stoker-state v1 epoch=0 position=1 fp.seed=a\"b", "fingerprint field 'fp.seed=a\"b'"},
      {"stoker-state v1 epoch=0 position=1\nbatches=x", "line 2: field 'batches' must be a number"},
      {"stoker-state v1 epoch=0 position=1\nbatches=-3", "line 2: field 'batches'"},
      {"stoker-state v1 epoch=0 position=1\nbatches=99999999999999999999", "field 'batches'"},
      {"stoker-state v1 epoch=0 position=1\nbatches=2\njunk", "unexpected text after line 2"},
      {"stoker-state v1 epoch=0 position=1\nbatch=2", "line 2: expected 'batches=N'"},
      {std::string("stoker-state v1 epoch=0 position=1\0", 36), "NUL bytes"},
  };
  for (const Case& k : cases) {
    Result<SavedRun> r = parse_state_file(k.text);
    ASSERT_FALSE(r.ok()) << "accepted: " << k.text;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().to_string().find(k.want), std::string::npos)
        << "want '" << k.want << "' in: " << r.error().to_string();
  }
  std::string many = "stoker-state v1 epoch=0 position=1";
  for (int i = 0; i < 17; ++i) many += " fp.f" + std::string(1, static_cast<char>('a' + i)) + "=1";
  EXPECT_NE(error_of(parse_state_file(many)).find("more than 16 fingerprint fields"),
            std::string::npos);
}

TEST(StateFileTest, ReadingRefusesSpecialAndHugeFilesAtOnceNamingThem) {
  using Clock = std::chrono::steady_clock;
  const std::string fifo = temp_path("fifo");
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string big = temp_path("big");
  {
    std::ofstream out(big);
    out << "stoker-state v1 epoch=0 position=1 ";
    out << std::string(kMaxStateFileBytes, 'x');
  }
  const std::string bad = temp_path("bad");
  std::ofstream(bad) << "stoker-state v1 epoch=0 position=zz\n";
  struct Case {
    std::string path, want;
    ErrorCode code;
  };
  const Case cases[] = {
      {fifo, fifo + " is a FIFO, not a regular file", ErrorCode::kInvalidArgument},
      {"/dev/zero", "/dev/zero is a character device", ErrorCode::kInvalidArgument},
      {::testing::TempDir(), "is a folder", ErrorCode::kInvalidArgument},
      {big, "over the 65536-byte limit", ErrorCode::kResourceExhausted},
      {temp_path("missing"), "No such file", ErrorCode::kNotFound},
      {bad, "state file " + bad + ": line 1: loader state: field 'position' must be",
       ErrorCode::kInvalidArgument},
  };
  for (const Case& k : cases) {
    const auto t0 = Clock::now();
    Result<SavedRun> r = read_state_file(k.path);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1)) << k.path;
    ASSERT_FALSE(r.ok()) << k.path;
    EXPECT_EQ(r.error().code(), k.code) << r.error().to_string();
    EXPECT_NE(r.error().to_string().find(k.want), std::string::npos) << r.error().to_string();
  }
}

TEST(StateFileTest, WritesAtomically) {
  const std::string p = temp_path("state");
  SavedRun run;
  run.state.position = 4;
  run.batches = 1;
  ASSERT_TRUE(write_state_file(p, run).ok());
  run.state.position = 8;
  run.batches = 2;
  ASSERT_TRUE(write_state_file(p, run).ok());
  Result<SavedRun> back = read_state_file(p);
  ASSERT_TRUE(back.ok()) << error_of(back);
  EXPECT_EQ(back->state.position, 8u);
  EXPECT_FALSE(fs::exists(p + ".tmp"));
  Status s = write_state_file(temp_path("no/such/folder/state"), run);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().to_string().find("saving the state: creating "), std::string::npos)
      << s.error().to_string();
}

TEST(StateBoundsTest, NumbersPastTheDataAreRefusedNamingTheField) {
  const StateBounds b{.records = 64, .epochs = 3};
  EXPECT_TRUE(check_state_bounds({.epoch = 0, .position = 64}, b).ok());
  EXPECT_TRUE(check_state_bounds({.epoch = 3, .position = 0}, b).ok());  // a finished run
  EXPECT_TRUE(check_state_bounds({.epoch = 1, .position = 10, .errors = 74}, b).ok());
  struct Case {
    LoaderState s;
    StateBounds b;
    std::string want;
  };
  const Case cases[] = {
      {{.epoch = 0, .position = 65}, b, "position 65 is past the end of an epoch of this data "
                                        "(64 records; position must be in [0, 64])"},
      {{.epoch = 0, .position = ~0ull}, b, "position 18446744073709551615"},
      {{.epoch = 4, .position = 0}, b, "epoch 4 is past this run's 3 epochs"},
      {{.epoch = 3, .position = 1}, b, "epoch 3 position 1 is past this run's 3 epochs"},
      {{.epoch = ~0ull, .position = 0}, {.records = 64, .epochs = -1}, "epoch 18446744073709551615"},
      {{.epoch = 1, .position = 10, .errors = 75}, b, "errors 75 is more than the samples consumed"},
      {{.epoch = 0, .position = 0, .errors = 0, .packs = 17, .plan = 9},
       {.records = 64, .epochs = 1, .pack_window = 16}, "packs 17"},
  };
  for (const Case& k : cases) {
    Status s = check_state_bounds(k.s, k.b);
    ASSERT_FALSE(s.ok()) << k.s.serialize();
    EXPECT_NE(s.error().to_string().find(k.want), std::string::npos) << s.error().to_string();
  }
  // Packing: a window's start may lie past the data's end only by less than a window; failures
  // inside the window's consumed packs count.
  const StateBounds pb{.records = 64, .epochs = 1, .pack_window = 48};
  EXPECT_TRUE(check_state_bounds({.position = 96, .packs = 0, .plan = 1}, pb).ok());
  EXPECT_FALSE(check_state_bounds({.position = 144, .packs = 0, .plan = 1}, pb).ok());
  EXPECT_TRUE(check_state_bounds({.position = 0, .errors = 3, .packs = 2, .plan = 1}, pb).ok());
}

TEST(FingerprintTest, DifferencesNameEveryField) {
  Fingerprint a, b;
  a.fields = {{"data", "1:aa"}, {"seed", "1"}, {"batch_size", "8"}};
  b.fields = {{"data", "1:aa"}, {"seed", "2"}, {"packing", "pack:4096:1000:hf:1"}};
  EXPECT_TRUE(differences(a, a).empty());
  EXPECT_EQ(describe(differences(a, b)),
            "seed: the state's 1, this run's 2; packing: the state's (none), this run's "
            "pack:4096:1000:hf:1; batch_size: the state's 8, this run's (none)");
}

// The fingerprint of real loaders: each input that decides the order changes exactly its own
// field (and the plan's), nothing else; what does not decide it (world size, threads, mode,
// prefetch, epochs) changes nothing.
TEST(FingerprintTest, EachInputChangesItsOwnField) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("fp", 12);
  auto other = make_dataset("fp-other", 12, 0, 160, 99);
  const LoaderConfig base = light_config(ds.data_path);
  auto fingerprint = [](const LoaderConfig& c) {
    auto l = Loader::create(c);
    EXPECT_TRUE(l.ok()) << l.error().to_string();
    return l.ok() ? (*l)->state().fingerprint : Fingerprint{};
  };
  const Fingerprint fp0 = fingerprint(base);
  ASSERT_FALSE(fp0.empty());
  // The data field counts the records: an independent count of the manifest's lines.
  std::ifstream in(ds.data_path);
  int lines = 0;
  for (std::string line; std::getline(in, line);) lines += line.empty() ? 0 : 1;
  EXPECT_EQ(fp0.find("data")->substr(0, fp0.find("data")->find(':')), std::to_string(lines));
  struct Case {
    std::string field;
    std::function<void(LoaderConfig&)> change;
  };
  const std::vector<Case> changes = {
      {"data", [&](LoaderConfig& c) { c.data = {other.data_path}; }},
      {"seed", [](LoaderConfig& c) { c.seed = 1; }},
      {"batch_size", [](LoaderConfig& c) { c.batch_size = 3; }},
      {"max_length", [](LoaderConfig& c) { c.max_length = 4096; }},
      {"max_length", [](LoaderConfig& c) { c.truncate = true; }},
      {"model", [](LoaderConfig& c) { c.model = "qwen2-vl"; }},
      {"model", [](LoaderConfig& c) { c.apply_exif_orientation = false; }},
  };
  for (const Case& k : changes) {
    LoaderConfig c = base;
    k.change(c);
    const std::vector<FieldDiff> d = differences(fp0, fingerprint(c));
    ASSERT_EQ(d.size(), 1u) << k.field << ": " << describe(d);
    EXPECT_EQ(d[0].name, k.field) << describe(d);
  }
  LoaderConfig same = base;
  same.rank.rank = 1;
  same.rank.world_size = 3;
  same.threads = 1;
  same.mode = Mode::kSerial;
  same.prefetch = 1;
  same.epochs = 5;
  EXPECT_EQ(fingerprint(same), fp0);
  // Packing replaces batch_size with the packing options.
  LoaderConfig pack = base;
  pack.packing.batching = Batching::kPack;
  pack.packing.max_tokens = 4096;
  const Fingerprint fpp = fingerprint(pack);
  EXPECT_EQ(describe(differences(fp0, fpp)),
            "packing: the state's (none), this run's pack:4096:1000:hf:1; batch_size: the "
            "state's 4, this run's (none)");
  // The same data, a byte longer (one more record): another version.
  const std::string copy = temp_path("fp-copy.jsonl");
  fs::copy_file(ds.data_path, copy, fs::copy_options::overwrite_existing);
  LoaderConfig moved = base;
  moved.data = {copy};
  moved.media_roots = {fs::path(ds.data_path).parent_path().string()};
  EXPECT_EQ(differences(fp0, fingerprint(moved)).at(0).name, "data");  // paths are part of it
}

// Resume: refused naming the field (seed, batch size, dataset); force_resume proceeds and says
// so; an old state without a fingerprint resumes with a note; another world size is no mismatch.
TEST(FingerprintTest, ResumeAcrossAnotherOrderIsRefusedUnlessForced) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("fp-resume", 16);
  auto other = make_dataset("fp-resume-other", 16, 0, 160, 5);
  const LoaderConfig base = light_config(ds.data_path);
  testing::RunResult head = run_loader(base, std::nullopt, 2);
  ASSERT_FALSE(head.error);
  ASSERT_EQ(head.state.position, 8u);
  struct Case {
    std::string field;
    std::function<void(LoaderConfig&)> change;
  };
  const std::vector<Case> cases = {
      {"seed: the state's 0, this run's 9", [](LoaderConfig& c) { c.seed = 9; }},
      {"batch_size: the state's 4, this run's 2", [](LoaderConfig& c) { c.batch_size = 2; }},
      {"data: the state's 16:", [&](LoaderConfig& c) { c.data = {other.data_path}; }},
  };
  for (const Case& k : cases) {
    LoaderConfig c = base;
    k.change(c);
    auto l = Loader::create(c);
    ASSERT_TRUE(l.ok()) << l.error().to_string();
    Status s = (*l)->resume(head.state);
    ASSERT_FALSE(s.ok()) << k.field;
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().to_string().find(k.field), std::string::npos) << s.error().to_string();
    EXPECT_NE(s.error().to_string().find("--force-resume"), std::string::npos);
    c.force_resume = true;
    auto f = Loader::create(c);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->resume(head.state).ok());
    EXPECT_NE((*f)->resume_note().find(k.field), std::string::npos) << (*f)->resume_note();
    EXPECT_NE((*f)->resume_note().find("samples may repeat or be skipped"), std::string::npos);
    auto b = (*f)->next();
    ASSERT_TRUE(b.ok() && b->has_value());
    // It continues at the state's position of this run's order; states now carry this run's.
    EXPECT_EQ(differences((*f)->state().fingerprint, Loader::create(c).value()->state().fingerprint).size(), 0u);
  }
  // An old state: resumed as it says, with a note.
  LoaderState old = head.state;
  old.fingerprint = {};
  auto l = Loader::create(base);
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE((*l)->resume(old).ok());
  EXPECT_NE((*l)->resume_note().find("no order fingerprint"), std::string::npos);
  // Same order, no note; and the remaining samples are exactly the rest.
  testing::RunResult full = run_loader(base);
  testing::RunResult tail = run_loader(base, head.state);
  std::vector<std::uint64_t> joined = head.ids;
  joined.insert(joined.end(), tail.ids.begin(), tail.ids.end());
  EXPECT_EQ(joined, full.ids);
  // Another world size: no mismatch.
  LoaderConfig two = base;
  two.rank.rank = 0;
  two.rank.world_size = 2;
  auto w = Loader::create(two);
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE((*w)->resume(head.state).ok());
  EXPECT_EQ((*w)->resume_note(), "");
  // A huge position is refused naming it (the fingerprint matches; a forced resume too).
  LoaderState huge = head.state;
  huge.position = 1'000'000'000'000;
  auto h = Loader::create(base);
  ASSERT_TRUE(h.ok());
  Status s = (*h)->resume(huge);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().to_string().find("position 1000000000000 is past the end"),
            std::string::npos) << s.error().to_string();
}

}  // namespace
}  // namespace stoker::pipeline
