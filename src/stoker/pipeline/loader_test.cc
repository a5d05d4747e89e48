// Loader unit tier: state text, config errors, batch contents, exact resume (same and different
// world size). Small synthetic datasets (images ≤ 160 px) so the whole file runs in seconds.
#include "stoker/pipeline/loader.h"

#include <gtest/gtest.h>

#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <atomic>
#include <cstring>
#include <chrono>
#include <set>
#include <thread>

#include "stoker/model/model_config.h"
#include "stoker/pipeline/fetcher.h"
#include "stoker/pipeline/test_util.h"

namespace stoker::pipeline {
namespace {

using testing::make_dataset;
using testing::run_loader;
using testing::small_config;

TEST(LoaderStateTest, RoundTripsAndRejectsGarbage) {
  LoaderState s{3, 12345, 7};
  EXPECT_EQ(s.serialize(), "stoker-state v1 epoch=3 position=12345 errors=7");
  auto p = LoaderState::parse(s.serialize() + "\n");
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->epoch, 3u);
  EXPECT_EQ(p->position, 12345u);
  EXPECT_EQ(p->errors, 7u);
  EXPECT_FALSE(LoaderState::parse("epoch=1 position=2").ok());
  EXPECT_FALSE(LoaderState::parse("stoker-state v1 epoch=x position=2").ok());
  EXPECT_FALSE(LoaderState::parse("stoker-state v1 epoch=1").ok());
}

// Fuzzer finding (src/stoker/fuzz, target state): "packs=3 plan=0" parsed, then serialised
// without its packs (plan 0 = not a packing state): a resume would have lost them.
TEST(LoaderStateTest, RefusesPacksWithPlanZero) {
  auto bad = LoaderState::parse("stoker-state v1 epoch=0 position=3 packs=3 plan=0");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("plan=0"), std::string::npos) << bad.error().to_string();
  LoaderState packing{.epoch = 0, .position = 3, .errors = 0, .packs = 3, .plan = 0x2a};
  auto p = LoaderState::parse(packing.serialize());
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->packs, 3u);
  EXPECT_EQ(p->plan, 0x2au);
}

// `stoker run`'s summary groups failures by kind: names, numbers and paths masked.
TEST(FailureTallyTest, GroupsByStageCodeAndMaskedReason) {
  EXPECT_EQ(reason_pattern("record \"synth-000020\": 8865 tokens exceed max_length 8192 (overflow "
                           "policy: drop)"),
            "record \"…\": N tokens exceed max_length N (overflow policy: drop)");
  EXPECT_EQ(reason_pattern("image 0: open /data/img/0_1.jpg: No such file or directory"),
            "image N: open PATH: No such file or directory");
  EXPECT_EQ(reason_pattern("rate 0.25 of 12."), "rate N of N.");
  EXPECT_EQ(reason_pattern("unterminated \"quote"), "unterminated \"quote");
  FailureTally t;
  auto f = [](std::uint64_t id, FailureStage stage, ErrorCode code, std::string reason) {
    return SampleFailure{.sample = id, .file = "d.jsonl", .line = id + 1, .stage = stage,
                         .code = code, .reason = std::move(reason)};
  };
  t.add(f(3, FailureStage::kFetch, ErrorCode::kNotFound, "image 0: open /a/3.jpg: No such file or directory"));
  t.add(f(5, FailureStage::kDecode, ErrorCode::kDataLoss, "image 0: truncated PNG"));
  t.add(f(7, FailureStage::kFetch, ErrorCode::kNotFound, "image 1: open /a/7.png: No such file or directory"));
  t.add(f(9, FailureStage::kFetch, ErrorCode::kPermissionDenied, "image 0: open /a/9.jpg: No such file or directory"));
  std::vector<FailureKind> top = t.top(10);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].count, 2);
  EXPECT_EQ(top[0].example.sample, 3u) << "the first of its kind";
  EXPECT_EQ(top[1].code, ErrorCode::kDataLoss) << "ties keep first-seen order";
  EXPECT_EQ(t.top(1).size(), 1u);
  for (int i = 0; i < 200; ++i) {  // 200 distinct kinds ("kind aa", "kind ba", ...)
    const char name[] = {static_cast<char>('a' + i % 26), static_cast<char>('a' + i / 26), 0};
    t.add(f(i, FailureStage::kParse, ErrorCode::kInvalidArgument, std::string("kind ") + name));
  }
  top = t.top(FailureTally::kMaxKinds);
  EXPECT_EQ(top.size(), FailureTally::kMaxKinds) << "bounded";
  std::int64_t sum = 0;
  for (const FailureKind& k : top) sum += k.count;
  EXPECT_EQ(sum, t.total()) << "the overflow kind keeps the count";
}

TEST(FetcherTest, BudgetBlocksButAdmitsOneOversizedRequest) {
  ByteBudget budget(100);
  auto a = budget.acquire(60);
  ASSERT_TRUE(a.ok());
  std::atomic<bool> got{false};
  std::thread t([&] {
    auto b = budget.acquire(60);
    EXPECT_TRUE(b.ok());
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(got.load());
  a->reset();
  t.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(budget.in_flight(), 0);
  auto huge = budget.acquire(1000);  // nothing else in flight: granted
  ASSERT_TRUE(huge.ok());
  EXPECT_EQ(budget.peak(), 1000);
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(budget.acquire(1, stop.get_token()).ok());
}

TEST(LoaderConfigTest, ValidateNamesTheField) {
  LoaderConfig c;
  EXPECT_FALSE(c.validate().ok());  // no data
  c.data = {"x.jsonl"};
  c.batch_size = 0;
  Status st = c.validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().to_string().find("batch_size"), std::string::npos);
}

// Every front end's rule, now the engine's own: no tokenizer given means the model's — for a
// preset the Qwen tokenizer installed with stoker; when that is missing, an error naming it.
TEST(LoaderTest, PresetWithoutTokenizerUsesTheInstalledOne) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("preset-tokenizer", 4);
  LoaderConfig c = small_config(ds.data_path);
  c.tokenizer.clear();
  Result<std::string> installed = model::default_tokenizer_dir(*model::preset(c.model));
  auto l = Loader::create(c);
  if (!installed.ok()) {
    ASSERT_FALSE(l.ok());
    EXPECT_NE(l.error().to_string().find("tokenizer"), std::string::npos) << l.error().to_string();
    return;
  }
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  c.tokenizer = *installed;
  auto named = Loader::create(c);
  ASSERT_TRUE(named.ok()) << named.error().to_string();
  auto a = (*l)->next();
  auto b = (*named)->next();
  ASSERT_TRUE(a.ok() && a->has_value() && b.ok() && b->has_value());
  const batch::TensorView* ta = (**a).layout().find("input_ids");
  const batch::TensorView* tb = (**b).layout().find("input_ids");
  ASSERT_TRUE(ta != nullptr && tb != nullptr);
  ASSERT_EQ(ta->bytes(), tb->bytes());
  EXPECT_EQ(0, std::memcmp((**a).data(*ta), (**b).data(*tb), ta->bytes()));
}

// A preset takes the tokenizer installed with stoker (the family's default, the rule of every
// command); when it is not installed, the error says so and how to fix it.
TEST(LoaderTest, PresetWithoutInstalledTokenizerIsAClearError) {
  const std::string empty = ::testing::TempDir() + "stoker-no-data-" + std::to_string(getpid());
  std::filesystem::create_directories(empty);
  const char* before = std::getenv("STOKER_DATA_DIR");
  const std::string saved = before != nullptr ? before : "";
  setenv("STOKER_DATA_DIR", empty.c_str(), 1);
  LoaderConfig c;
  c.data = {"x.jsonl"};
  auto l = Loader::create(c);
  if (before != nullptr) {
    setenv("STOKER_DATA_DIR", saved.c_str(), 1);
  } else {
    unsetenv("STOKER_DATA_DIR");
  }
  std::filesystem::remove_all(empty);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(l.error().to_string().find("tokenizer"), std::string::npos) << l.error().to_string();
  EXPECT_NE(l.error().to_string().find("--tokenizer"), std::string::npos) << "names the remedy";
}

TEST(LoaderTest, BatchContentsAreConsistent) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("contents", 8);
  LoaderConfig c = small_config(ds.data_path);
  auto loader = Loader::create(c);
  ASSERT_TRUE(loader.ok()) << loader.error().to_string();
  auto b = (*loader)->next();
  ASSERT_TRUE(b.ok() && b->has_value());
  const Batch& batch = **b;
  const auto& layout = batch.layout();
  const std::int64_t B = batch.size(), L = layout.find("input_ids")->shape[1];
  EXPECT_EQ(B, 4);
  const std::int64_t* ids = batch.as<std::int64_t>("input_ids");
  const std::int64_t* mask = batch.as<std::int64_t>("attention_mask");
  std::int64_t image_pads = 0;
  for (std::int64_t i = 0; i < B * L; ++i) {
    if (mask[i] == 0) {
      EXPECT_EQ(ids[i], 151643);
    }
    if (ids[i] == 151655) ++image_pads;
  }
  const batch::TensorView* grid = layout.find("image_grid_thw");
  const std::int64_t* g = batch.as<std::int64_t>("image_grid_thw");
  std::int64_t rows = 0;
  for (std::int64_t i = 0; i < grid->shape[0]; ++i) rows += g[3 * i] * g[3 * i + 1] * g[3 * i + 2];
  EXPECT_EQ(layout.find("pixel_values")->shape[0], rows);
  EXPECT_EQ(image_pads * 4, rows);  // merge 2: one token per 4 patches
  EXPECT_EQ(layout.find("pixel_values")->shape[1], 1176);
  EXPECT_EQ(layout.block.offset % 4096, 0u);
  // In process the arena is anonymous memory (no fd); `shared` gives a memfd for other processes.
  EXPECT_EQ((*loader)->arena().fd(), -1);
}

// A consumer may hold batches (the arena then applies backpressure) and keep them after the
// Loader is gone: the Batch keeps the arena mapping alive.
TEST(LoaderTest, HeldBatchesOutliveTheLoader) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("hold", 12);
  LoaderConfig c = small_config(ds.data_path);
  c.arena.bytes = std::size_t{8} << 20;
  std::vector<Batch> held;
  std::vector<std::uint64_t> hashes;
  {
    auto loader = Loader::create(c);
    ASSERT_TRUE(loader.ok());
    for (int i = 0; i < 2; ++i) {
      auto b = (*loader)->next();
      ASSERT_TRUE(b.ok() && b->has_value()) << (b.ok() ? "end" : b.error().to_string());
      hashes.push_back(testing::batch_hash(**b));
      held.push_back(std::move(**b));
    }
    EXPECT_GT((*loader)->arena().in_use(), 0u);
  }  // the loader (producer blocked on a full ring / arena) shuts down here
  for (std::size_t i = 0; i < held.size(); ++i) EXPECT_EQ(testing::batch_hash(held[i]), hashes[i]);
  held.clear();
}

// A batch larger than the whole arena is a clear error at next(), and the state does not move.
TEST(LoaderTest, ArenaTooSmallForOneBatchIsAnErrorAndKeepsTheState) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("tiny-arena", 8);
  LoaderConfig c = small_config(ds.data_path);
  c.arena.bytes = 4096;
  for (Mode mode : {Mode::kSerial, Mode::kPrefetch}) {
    c.mode = mode;
    testing::RunResult r = run_loader(c);
    ASSERT_TRUE(r.error);
    EXPECT_EQ(r.error->code(), ErrorCode::kResourceExhausted);
    EXPECT_NE(r.error->to_string().find("arena"), std::string::npos);
    EXPECT_EQ(r.state.position, 0u);
    EXPECT_TRUE(r.ids.empty());
  }
}

// Resume from the state after k batches delivers exactly what an uninterrupted run delivers
// after those k batches, also across an epoch boundary.
TEST(LoaderResumeTest, ResumeContinuesExactly) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("resume", 14);
  LoaderConfig c = small_config(ds.data_path);
  c.epochs = 2;
  testing::RunResult full = run_loader(c);
  ASSERT_FALSE(full.error);
  ASSERT_EQ(full.ids.size(), 28u);
  EXPECT_EQ(full.state.epoch, 2u);
  for (std::int64_t k : {1, 3, 4, 6}) {
    testing::RunResult head = run_loader(c, std::nullopt, k);
    testing::RunResult tail = run_loader(c, head.state);
    std::vector<std::uint64_t> joined = head.ids;
    joined.insert(joined.end(), tail.ids.begin(), tail.ids.end());
    EXPECT_EQ(joined, full.ids) << "resumed after " << k << " batches from "
                                << head.state.serialize();
    std::vector<std::uint64_t> hashes = head.hashes;  // no failures: same batch boundaries
    hashes.insert(hashes.end(), tail.hashes.begin(), tail.hashes.end());
    EXPECT_EQ(hashes, full.hashes);
  }
  // Resume must come before the first next().
  auto loader = Loader::create(c);
  ASSERT_TRUE(loader.ok());
  ASSERT_TRUE((*loader)->next().ok());
  EXPECT_FALSE((*loader)->resume(LoaderState{}).ok());
}

// prefetch_on_create: the ring fills before the first next(); a resume() arriving after that
// throws the early batches away and restarts at its state — nothing from the discarded start
// leaks into the delivered stream.
TEST(LoaderResumeTest, ResumeAfterEagerProductionRestartsAtTheState) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("eager", 16);
  LoaderConfig c = small_config(ds.data_path);
  c.mode = Mode::kPrefetch;
  c.prefetch_on_create = true;
  testing::RunResult full = run_loader(c);
  ASSERT_EQ(full.ids.size(), 16u);
  testing::RunResult head = run_loader(c, std::nullopt, 2);
  auto loader = Loader::create(c);
  ASSERT_TRUE(loader.ok());
  // Production is under way before any next(): batches appear in the arena.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((*loader)->arena().in_use() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_GT((*loader)->arena().in_use(), 0u) << "nothing produced before the first next()";
  ASSERT_TRUE((*loader)->resume(head.state).ok());
  std::vector<std::uint64_t> joined = head.ids;
  for (;;) {
    auto b = (*loader)->next();
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    if (!*b) break;
    const auto* ids = (*b)->as<std::uint64_t>("sample_ids");
    joined.insert(joined.end(), ids, ids + (*b)->size());
  }
  EXPECT_EQ(joined, full.ids);
}

// The loader's own threads run in worker_sched; the caller's thread is left alone.
TEST(LoaderTest, WorkerThreadsTakeTheConfiguredSchedulingClass) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("sched", 8);
  for (exec::SchedClass want : {exec::SchedClass::kBatch, exec::SchedClass::kIdle}) {
    LoaderConfig c = small_config(ds.data_path);
    c.mode = Mode::kPrefetch;
    c.worker_sched = want;
    const int caller = sched_getscheduler(0);
    auto loader = Loader::create(c);
    ASSERT_TRUE(loader.ok());
    auto b = (*loader)->next();  // every pool has started and run work
    ASSERT_TRUE(b.ok() && *b);
    const int policy = want == exec::SchedClass::kBatch ? SCHED_BATCH : SCHED_IDLE;
    int checked = 0;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      if (name.rfind("stoker-", 0) != 0) continue;  // not a loader thread
      const pid_t tid = static_cast<pid_t>(std::stol(task.path().filename().string()));
      // The arena's prefault thread only ever takes spare CPU, whatever worker_sched says.
      EXPECT_EQ(sched_getscheduler(tid), name == "stoker-arena" ? SCHED_IDLE : policy) << name;
      ++checked;
    }
    // cpu (2) + io (2) + emit (1) + the producer (+ the arena's prefault thread).
    EXPECT_GE(checked, 6);
    EXPECT_EQ(sched_getscheduler(0), caller);
  }
}

// One rank runs part of the epoch; the rest is re-split over two ranks from the same global
// position: together they deliver every remaining sample, none twice.
TEST(LoaderResumeTest, DifferentWorldSizeFromTheSamePosition) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("world", 20);
  LoaderConfig c = small_config(ds.data_path);
  c.rank.rank = 0;
  c.rank.world_size = 1;
  testing::RunResult head = run_loader(c, std::nullopt, 2);  // 8 samples
  ASSERT_EQ(head.ids.size(), 8u);
  EXPECT_EQ(head.state.position, 8u);
  std::multiset<std::uint64_t> all(head.ids.begin(), head.ids.end());
  for (int r = 0; r < 2; ++r) {
    LoaderConfig cr = c;
    cr.rank.rank = r;
    cr.rank.world_size = 2;
    testing::RunResult part = run_loader(cr, head.state);
    ASSERT_FALSE(part.error);
    EXPECT_EQ(part.ids.size(), 6u) << "rank " << r;
    EXPECT_EQ(part.state.epoch, 1u);
    all.insert(part.ids.begin(), part.ids.end());
  }
  EXPECT_EQ(all.size(), 20u);
  EXPECT_EQ(std::set<std::uint64_t>(all.begin(), all.end()).size(), 20u);
  // And from the state of a 2-rank job back to one rank.
  LoaderConfig c2 = c;
  c2.rank.world_size = 2;
  testing::RunResult two = run_loader(c2, std::nullopt, 1);  // rank 0: 4 items → position 8
  EXPECT_EQ(two.state.position, 8u);
}

}  // namespace
}  // namespace stoker::pipeline
