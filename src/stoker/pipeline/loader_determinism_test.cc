// Loader integration tier: identical bytes for every mode × 1/2/8 threads × random I/O delays,
// and an arena peak that does not grow with the dataset.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>
#include <thread>

#include "stoker/pipeline/loader.h"
#include "stoker/pipeline/test_util.h"

namespace stoker::pipeline {
namespace {

using testing::make_dataset;
using testing::run_loader;
using testing::small_config;

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

// The arena peak is set by the config (batch size, prefetch depth, image sizes), not by the
// dataset's size: at most the ring's `prefetch` batches + one being pushed + one being emitted +
// the one the consumer holds. The arena is large enough that its capacity is not what bounds it.
TEST(LoaderMemoryTest, ArenaPeakDoesNotGrowWithDatasetSize) {
  STOKER_REQUIRE_TOKENIZER();
  auto small = make_dataset("mem-small", 24);
  auto large = make_dataset("mem-large", 120);
  for (const auto* ds : {&small, &large}) {
    LoaderConfig c = small_config(ds->data_path);
    c.prefetch = 2;
    c.arena.bytes = std::size_t{512} << 20;
    testing::RunResult r = run_loader(c);
    ASSERT_FALSE(r.error) << r.error->to_string();
    EXPECT_EQ(static_cast<std::size_t>(r.stats.samples), ds->data_path == small.data_path ? 24u : 120u);
    ASSERT_GT(r.max_block, 0u);
    EXPECT_LE(r.stats.arena_peak_bytes, (c.prefetch + 3) * r.max_block)
        << "peak " << r.stats.arena_peak_bytes << ", largest batch " << r.max_block;
    EXPECT_LE(r.stats.fetch_peak_bytes, c.fetch_bytes_in_flight);
  }
}

}  // namespace
}  // namespace stoker::pipeline
