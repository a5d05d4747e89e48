// Loader unit tier: state text, determinism over modes / threads / I/O timing, exact resume
// (same and different world size), bounded arena memory. Small synthetic datasets (images ≤ 160
// px) so the whole file runs in seconds.
#include "stoker/pipeline/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>

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

TEST(LoaderConfigTest, ValidateNamesTheField) {
  LoaderConfig c;
  EXPECT_FALSE(c.validate().ok());  // no data
  c.data = {"x.jsonl"};
  c.batch_size = 0;
  Status st = c.validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().to_string().find("batch_size"), std::string::npos);
}

TEST(LoaderTest, PresetWithoutTokenizerIsAClearError) {
  LoaderConfig c;
  c.data = {"x.jsonl"};
  auto l = Loader::create(c);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().to_string().find("tokenizer"), std::string::npos);
}

// One epoch, every record exactly once; the bytes of every batch identical whatever the mode,
// the thread count and the I/O timing.
TEST(LoaderDeterminismTest, SameBytesForEveryModeThreadCountAndIoTiming) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("determinism", 22);
  LoaderConfig base = small_config(ds.data_path);
  base.mode = Mode::kSerial;
  testing::RunResult ref = run_loader(base);
  ASSERT_FALSE(ref.error) << ref.error->to_string();
  ASSERT_EQ(ref.ids.size(), 22u);
  EXPECT_EQ(std::set<std::uint64_t>(ref.ids.begin(), ref.ids.end()).size(), 22u);
  EXPECT_EQ(ref.hashes.size(), 6u);  // 5 × 4 + a short last batch of 2
  for (Mode mode : {Mode::kSerial, Mode::kConcurrent, Mode::kPrefetch}) {
    for (int threads : {1, 2, 8}) {
      for (bool jitter : {false, true}) {
        if (mode == Mode::kSerial && (threads > 1 || jitter)) continue;
        LoaderConfig c = base;
        c.mode = mode;
        c.threads = threads;
        c.io_threads = threads;
        if (jitter) {
          c.io_delay_hook = [](std::uint64_t id, int media) {
            thread_local std::mt19937 rng(std::random_device{}());
            std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
          };
        }
        testing::RunResult r = run_loader(c);
        ASSERT_FALSE(r.error) << r.error->to_string();
        EXPECT_EQ(r.ids, ref.ids) << "mode " << static_cast<int>(mode) << " threads " << threads;
        EXPECT_EQ(r.hashes, ref.hashes)
            << "mode " << static_cast<int>(mode) << " threads " << threads << " jitter " << jitter;
      }
    }
  }
  // A different seed is a different order (the check above is not vacuous).
  LoaderConfig other = base;
  other.seed = 99;
  EXPECT_NE(run_loader(other).ids, ref.ids);
}

TEST(LoaderDeterminismTest, BatchContentsAreConsistent) {
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
  EXPECT_GE((*loader)->arena().fd(), 0);
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

// The arena peak is set by the config (batch size, prefetch depth, image sizes), not by the
// dataset's size.
TEST(LoaderMemoryTest, ArenaPeakDoesNotGrowWithDatasetSize) {
  STOKER_REQUIRE_TOKENIZER();
  auto small = make_dataset("mem-small", 24);
  auto large = make_dataset("mem-large", 96);
  std::uint64_t peaks[2];
  std::int64_t samples[2];
  int i = 0;
  for (const auto* ds : {&small, &large}) {
    LoaderConfig c = small_config(ds->data_path);
    c.prefetch = 2;
    c.arena.bytes = std::size_t{24} << 20;  // a few batches of ≤ 160-px images fit
    testing::RunResult r = run_loader(c);
    ASSERT_FALSE(r.error) << r.error->to_string();
    peaks[i] = r.stats.arena_peak_bytes;
    samples[i] = r.stats.samples;
    EXPECT_LE(r.stats.fetch_peak_bytes, c.fetch_bytes_in_flight);
    ++i;
  }
  EXPECT_EQ(samples[0], 24);
  EXPECT_EQ(samples[1], 96);
  EXPECT_LE(peaks[0], std::uint64_t{24} << 20);
  EXPECT_LE(peaks[1], std::uint64_t{24} << 20);
  // Four times the data: the peak stays within a factor set by batch-size variance, not 4×.
  EXPECT_LT(static_cast<double>(peaks[1]), 2.5 * static_cast<double>(peaks[0]))
      << peaks[0] << " vs " << peaks[1];
}

}  // namespace
}  // namespace stoker::pipeline
