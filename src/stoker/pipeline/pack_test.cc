// Packing and token budgets through the Loader: a packed row is the concatenation of the same
// samples produced unpacked (all three models, both forms), the bytes do not depend on mode or
// threads, resume at every step gives the same stream, a world-size change loses and repeats
// nothing, states from other options are refused. Small synthetic datasets (images ≤ 160 px)
// and small windows, so that steps straddle windows and epochs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "stoker/pipeline/loader.h"
#include "stoker/pipeline/pack_schedule.h"
#include "stoker/pipeline/test_util.h"

namespace stoker::pipeline {
namespace {

using testing::make_dataset;
using testing::run_loader;
using testing::small_config;

LoaderConfig pack_config(const std::string& data, Batching how = Batching::kPack) {
  LoaderConfig c = small_config(data);
  c.packing.batching = how;
  c.packing.max_tokens = 2048;
  c.max_length = 2048;  // the unpacked reference drops what packing drops
  c.packing.window = 16;
  c.arena.bytes = std::size_t{64} << 20;
  return c;
}

// One sample as the unpacked loader gives it (batch size 1: no padding).
struct Sample {
  std::vector<std::int64_t> ids, labels, positions;  // positions: 3 rows of n
  std::vector<std::uint8_t> pixels;
  std::vector<std::int64_t> grids;
};

std::map<std::uint64_t, Sample> unpacked(LoaderConfig c) {
  c.packing = {};
  c.batch_size = 1;
  c.mode = Mode::kSerial;
  std::map<std::uint64_t, Sample> out;
  auto loader = Loader::create(c);
  EXPECT_TRUE(loader.ok()) << loader.error().to_string();
  for (;;) {
    auto b = (*loader)->next();
    EXPECT_TRUE(b.ok()) << b.error().to_string();
    if (!b.ok() || !b->has_value()) break;
    const Batch& batch = **b;
    const std::int64_t n = batch.layout().find("input_ids")->shape[1];
    Sample s;
    const std::int64_t* ids = batch.as<std::int64_t>("input_ids");
    const std::int64_t* labels = batch.as<std::int64_t>("labels");
    const std::int64_t* pos = batch.as<std::int64_t>("position_ids");
    s.ids.assign(ids, ids + n);
    s.labels.assign(labels, labels + n);
    s.positions.assign(pos, pos + 3 * n);
    const batch::TensorView* pv = batch.layout().find("pixel_values");
    s.pixels.assign(batch.data(*pv), batch.data(*pv) + pv->bytes());
    const batch::TensorView* g = batch.layout().find("image_grid_thw");
    const std::int64_t* gp = batch.as<std::int64_t>("image_grid_thw");
    s.grids.assign(gp, gp + 3 * g->shape[0]);
    out[testing::sample_ids(batch)[0]] = std::move(s);
  }
  return out;
}

template <typename T>
std::vector<T> slice(const Batch& b, const char* name, std::int64_t from, std::int64_t n) {
  const T* p = b.as<T>(name);
  return std::vector<T>(p + from, p + from + n);
}

// Checks every sub-sequence of every pack against the unpacked sample; returns samples seen.
std::size_t check_packs(const LoaderConfig& c, const std::map<std::uint64_t, Sample>& ref) {
  auto loader = Loader::create(c);
  EXPECT_TRUE(loader.ok()) << loader.error().to_string();
  std::size_t seen = 0;
  const bool hf = c.packing.format == batch::PackFormat::kHF;
  const int rows = c.packing.position_rows;
  for (;;) {
    auto b = (*loader)->next();
    EXPECT_TRUE(b.ok()) << b.error().to_string();
    if (!b.ok() || !b->has_value()) break;
    const Batch& batch = **b;
    const batch::BatchLayout& l = batch.layout();
    EXPECT_EQ(l.find("attention_mask"), nullptr);
    const std::int64_t N = l.find("input_ids")->shape[1];
    EXPECT_LE(N, c.packing.max_tokens);
    const std::vector<std::uint64_t> ids = testing::sample_ids(batch);
    const std::int32_t* cu = batch.as<std::int32_t>(hf ? "cu_seq_lens_q" : "cu_seqlens_q");
    const std::int32_t* cu_pad = hf ? cu : batch.as<std::int32_t>("cu_seqlens_q_padded");
    std::vector<std::uint8_t> pixels;
    std::vector<std::int64_t> grids;
    std::int64_t longest = 0;
    for (std::size_t k = 0; k < ids.size(); ++k) {
      const Sample& s = ref.at(ids[k]);
      const std::int64_t n = static_cast<std::int64_t>(s.ids.size()), at = cu_pad[k];
      EXPECT_EQ(cu[k + 1] - cu[k], n);
      longest = std::max(longest, cu_pad[k + 1] - cu_pad[k] + std::int64_t{0});
      EXPECT_EQ(slice<std::int64_t>(batch, "input_ids", at, n), s.ids) << "sample " << ids[k];
      std::vector<std::int64_t> labels = slice<std::int64_t>(batch, "labels", at, n);
      std::vector<std::int64_t> want = s.labels;
      if (hf) {
        want[0] = -100;  // the documented separator
      } else {
        want.erase(want.begin());  // Megatron: pre-shifted, the last position ignored
        want.push_back(-100);
        std::vector<float> loss = slice<float>(batch, "loss_mask", at, n);
        for (std::int64_t t = 0; t < n; ++t) EXPECT_EQ(loss[t], want[t] == -100 ? 0.f : 1.f);
      }
      EXPECT_EQ(labels, want) << "sample " << ids[k];
      const std::int64_t* pos = batch.as<std::int64_t>("position_ids");
      for (std::int64_t t = 0; t < n; ++t) {
        if (!hf || rows == 4) {
          EXPECT_EQ(pos[at + t], t);  // the text row
        }
        if (hf) {
          for (int r = 0; r < 3; ++r) {
            EXPECT_EQ(pos[(rows - 3 + r) * N + at + t], s.positions[r * n + t])
                << "sample " << ids[k] << " row " << r << " token " << t;
          }
        }
      }
      pixels.insert(pixels.end(), s.pixels.begin(), s.pixels.end());
      grids.insert(grids.end(), s.grids.begin(), s.grids.end());
      ++seen;
    }
    const batch::TensorView* pv = l.find("pixel_values");
    EXPECT_EQ(std::vector<std::uint8_t>(batch.data(*pv), batch.data(*pv) + pv->bytes()), pixels);
    EXPECT_EQ(slice<std::int64_t>(batch, "image_grid_thw", 0, l.find("image_grid_thw")->shape[0] * 3),
              grids);
    if (hf) EXPECT_EQ(*batch.as<std::int64_t>("max_length_q"), longest);
    else EXPECT_EQ(*batch.as<std::int32_t>("max_seqlen_q"), longest);
  }
  return seen;
}

class PackModelTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PackModelTest, PackedRowIsTheConcatenationOfUnpackedSamples) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset(std::string("exact-") + GetParam(), 40, 0, 200, 11);
  LoaderConfig c = pack_config(ds.data_path);
  c.model = GetParam();
  const std::map<std::uint64_t, Sample> ref = unpacked(c);
  ASSERT_GE(ref.size(), 36u);
  EXPECT_EQ(check_packs(c, ref), ref.size());  // HF, 4 rows
  c.packing.position_rows = 3;
  EXPECT_EQ(check_packs(c, ref), ref.size());
  c.packing.format = batch::PackFormat::kMegatron;
  c.packing.align = 8;
  EXPECT_EQ(check_packs(c, ref), ref.size());
}

INSTANTIATE_TEST_SUITE_P(Models, PackModelTest,
                         ::testing::Values("qwen2-vl", "qwen2.5-vl", "qwen3-vl"));

TEST(PackTest, TokenBudgetRowsAreTheUnpaddedSamplesPadded) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("budget", 30);
  LoaderConfig c = pack_config(ds.data_path, Batching::kTokenBudget);
  const std::map<std::uint64_t, Sample> ref = unpacked(c);
  auto loader = Loader::create(c);
  ASSERT_TRUE(loader.ok());
  std::size_t seen = 0;
  for (;;) {
    auto b = (*loader)->next();
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    if (!b->has_value()) break;
    const Batch& batch = **b;
    const std::int64_t B = batch.size(), L = batch.layout().find("input_ids")->shape[1];
    EXPECT_LE(B * L, c.packing.max_tokens);
    const std::vector<std::uint64_t> ids = testing::sample_ids(batch);
    for (std::int64_t r = 0; r < B; ++r) {
      const Sample& s = ref.at(ids[r]);
      const std::int64_t n = static_cast<std::int64_t>(s.ids.size());
      EXPECT_EQ(slice<std::int64_t>(batch, "input_ids", r * L, n), s.ids);
      EXPECT_EQ(slice<std::int64_t>(batch, "labels", r * L, n), s.labels);
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(slice<std::int64_t>(batch, "position_ids", (k * B + r) * L, n),
                  std::vector<std::int64_t>(s.positions.begin() + k * n, s.positions.begin() + (k + 1) * n));
      }
      ++seen;
    }
  }
  EXPECT_EQ(seen, ref.size());
}

TEST(PackTest, SameBytesWhateverTheModeThreadsAndTiming) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("modes", 48);
  LoaderConfig c = pack_config(ds.data_path);
  c.mode = Mode::kSerial;
  const testing::RunResult ref = run_loader(c);
  ASSERT_FALSE(ref.error);
  ASSERT_GT(ref.hashes.size(), 4u);
  for (Mode mode : {Mode::kConcurrent, Mode::kPrefetch}) {
    for (int threads : {1, 3}) {
      c.mode = mode;
      c.threads = threads;
      c.io_threads = threads;
      c.io_delay_hook = [](std::uint64_t id, int) {
        thread_local std::mt19937 rng(static_cast<unsigned>(id));
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
      };
      EXPECT_EQ(run_loader(c).hashes, ref.hashes) << "mode " << static_cast<int>(mode)
                                                  << " threads " << threads;
    }
  }
}

TEST(PackTest, ResumeAtEveryStepContinuesTheSameStream) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("resume", 28);
  for (Batching how : {Batching::kPack, Batching::kTokenBudget}) {
    LoaderConfig c = pack_config(ds.data_path, how);
    c.epochs = 2;
    const testing::RunResult full = run_loader(c);
    ASSERT_FALSE(full.error);
    ASSERT_GE(full.hashes.size(), how == Batching::kPack ? 11u : 4u);
    // Packs: every step boundary of both epochs (≥ 10); budgets: a few.
    const std::size_t stride = how == Batching::kPack ? 1 : 4;
    for (std::size_t k = 1; k < full.hashes.size(); k += stride) {
      const testing::RunResult head = run_loader(c, std::nullopt, static_cast<std::int64_t>(k));
      EXPECT_NE(head.state.plan, 0u);
      auto text = LoaderState::parse(head.state.serialize());
      ASSERT_TRUE(text.ok());
      const testing::RunResult tail = run_loader(c, *text);
      ASSERT_FALSE(tail.error);
      std::vector<std::uint64_t> joined = head.hashes;
      joined.insert(joined.end(), tail.hashes.begin(), tail.hashes.end());
      EXPECT_EQ(joined, full.hashes) << "resumed after " << k << " of " << full.hashes.size()
                                     << " from " << head.state.serialize();
    }
  }
}

// Samples delivered by `world` ranks that each take `steps` batches (all of them: -1), resumed
// from `from`; tail repeats apart. Returns the common state after.
LoaderState run_world(const LoaderConfig& base, int world, std::optional<LoaderState> from,
                      std::int64_t steps, std::multiset<std::uint64_t>* delivered,
                      std::int64_t* repeats) {
  std::optional<LoaderState> after;
  for (int r = 0; r < world; ++r) {
    LoaderConfig c = base;
    c.rank.rank = r;
    c.rank.world_size = world;
    auto loader = Loader::create(c);
    EXPECT_TRUE(loader.ok());
    if (from) {
      EXPECT_TRUE((*loader)->resume(*from).ok());
    }
    for (std::int64_t i = 0; steps < 0 || i < steps; ++i) {
      auto b = (*loader)->next();
      EXPECT_TRUE(b.ok());
      if (!b.ok() || !b->has_value()) break;
      if ((*b)->is_repeat()) {
        ++*repeats;
        continue;
      }
      for (std::uint64_t id : testing::sample_ids(**b)) delivered->insert(id);
    }
    LoaderState s = (*loader)->state();
    if (after) {
      EXPECT_EQ(s.serialize(), after->serialize()) << "ranks disagree on the state";
    }
    after = s;
  }
  return *after;
}

TEST(PackTest, WorldSizeChangeLosesAndRepeatsNothing) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("world", 60);
  LoaderConfig c = pack_config(ds.data_path);
  c.packing.max_tokens = 1024;  // more, smaller packs: more steps to cut
  const testing::RunResult one = run_loader(c);
  const std::set<std::uint64_t> all(one.ids.begin(), one.ids.end());
  ASSERT_EQ(all.size(), one.ids.size());
  ASSERT_GE(all.size(), 50u);
  for (auto [before, after, steps] : {std::tuple{2, 3, 3}, std::tuple{4, 1, 2}, std::tuple{3, 2, 1}}) {
    std::multiset<std::uint64_t> delivered;
    std::int64_t repeats = 0;
    LoaderState mid = run_world(c, before, std::nullopt, steps, &delivered, &repeats);
    EXPECT_EQ(repeats, 0);
    EXPECT_EQ(mid.epoch, 0u);
    run_world(c, after, mid, -1, &delivered, &repeats);
    EXPECT_EQ(delivered, std::multiset<std::uint64_t>(all.begin(), all.end()))
        << before << " -> " << after << " ranks at step " << steps;
  }
}

TEST(PackTest, StepsAreBalancedAndStatsCountTokens) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("balance", 64, 0, 400);
  LoaderConfig c = pack_config(ds.data_path);
  c.packing.window = 64;
  c.rank.rank = 0;
  c.rank.world_size = 2;
  const testing::RunResult r = run_loader(c);
  ASSERT_FALSE(r.error);
  EXPECT_EQ(r.stats.steps, static_cast<std::int64_t>(r.hashes.size()));
  EXPECT_GT(r.stats.real_tokens, 0);
  EXPECT_EQ(r.stats.computed_tokens, 2048 * r.stats.steps);
  EXPECT_GE(r.stats.patch_balance(), 1.0);
  EXPECT_LT(r.stats.patch_balance(), 1.5);
}

TEST(PackTest, StatesFromOtherOptionsAreRefused) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("refuse", 20);
  LoaderConfig c = pack_config(ds.data_path);
  const testing::RunResult head = run_loader(c, std::nullopt, 1);
  ASSERT_NE(head.state.plan, 0u);
  auto text = LoaderState::parse(head.state.serialize());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->packs, head.state.packs);
  EXPECT_EQ(text->plan, head.state.plan);
  LoaderConfig other = c;
  other.packing.max_tokens = 1024;
  auto l = Loader::create(other);
  ASSERT_TRUE(l.ok());
  EXPECT_FALSE((*l)->resume(head.state).ok());
  LoaderConfig fixed = small_config(ds.data_path);
  auto f = Loader::create(fixed);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE((*f)->resume(head.state).ok());
  // An unpacked state resumes packing only at a window's start.
  auto p = Loader::create(c);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE((*p)->resume(LoaderState{.epoch = 0, .position = 3}).ok());
  EXPECT_TRUE((*p)->resume(LoaderState{.epoch = 0, .position = 16}).ok());
}

// Failures found while measuring are reported by every rank (the plan is global); an image
// that passes its header check and fails to decode is found by the rank that owns its pack.
TEST(PackTest, FailuresAreReportedOnceEachAndMeasuredOnesByEveryRank) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("bad", 40, 0.2);
  LoaderConfig c = pack_config(ds.data_path);
  std::vector<std::set<std::uint64_t>> failed(2);
  std::set<std::uint64_t> delivered;
  for (int r = 0; r < 2; ++r) {
    c.rank.rank = r;
    c.rank.world_size = 2;
    c.errors.report_path = ::testing::TempDir() + "pack-bad-" + std::to_string(getpid()) + "-" +
                           std::to_string(r) + ".jsonl";
    const testing::RunResult run = run_loader(c);
    ASSERT_FALSE(run.error) << run.error->to_string();
    delivered.insert(run.ids.begin(), run.ids.end());
    std::ifstream in(c.errors.report_path);
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      EXPECT_TRUE(failed[r].insert(j["sample"].get<std::uint64_t>()).second) << "twice: " << line;
    }
    std::filesystem::remove(c.errors.report_path);
    EXPECT_EQ(run.stats.failed, static_cast<std::int64_t>(failed[r].size()));
  }
  std::set<std::uint64_t> bad, both, any;
  for (const synth::BadEntry& b : ds.bad) bad.insert(static_cast<std::uint64_t>(b.line - 1));
  std::set_union(failed[0].begin(), failed[0].end(), failed[1].begin(), failed[1].end(),
                 std::inserter(any, any.end()));
  std::set_intersection(failed[0].begin(), failed[0].end(), failed[1].begin(), failed[1].end(),
                        std::inserter(both, both.end()));
  for (std::uint64_t id : bad) EXPECT_TRUE(any.count(id)) << "bad record " << id << " not reported";
  for (std::uint64_t id : any) EXPECT_FALSE(delivered.count(id)) << id;
  EXPECT_GE(both.size(), bad.size() / 2);  // missing, corrupt, bad JSON, no assistant: measured
  for (const synth::BadEntry& b : ds.bad) {
    if (b.kind == synth::BadKind::kTruncatedImage) continue;  // may pass the header check
    EXPECT_TRUE(both.count(static_cast<std::uint64_t>(b.line - 1))) << b.id << " " << b.reason;
  }
}

// Fails every fetch while `down` (a store that is unreachable: Unavailable), counts the others.
class FlakyFetcher final : public Fetcher {
 public:
  explicit FlakyFetcher(std::unique_ptr<Fetcher> real) : real_(std::move(real)) {}
  Result<std::vector<std::uint8_t>> fetch(const std::string& uri) const override {
    if (down) return unavailable("test: the store is down");
    ++fetched;
    return real_->fetch(uri);
  }
  mutable std::atomic<int> fetched{0};
  std::atomic<bool> down{false};

 private:
  std::unique_ptr<Fetcher> real_;
};

// Units (their sample ids) a PackSchedule hands out until the end or an outage item.
std::vector<std::vector<std::uint64_t>> units_until_stop(PackSchedule& s, LoaderState* last,
                                                         std::optional<SampleFailure>* outage) {
  std::vector<std::vector<std::uint64_t>> units;
  Item item;
  while (s.next(true, {}, &item) == ItemSource::Next::kItem) {
    if (item.preset) {
      *outage = item.preset;
      break;
    }
    if (item.unit_index == 0 || units.empty()) units.emplace_back();
    units.back().push_back(item.sample);
    if (item.unit_index + 1 == item.unit_size) *last = item.unit->after;
  }
  return units;
}

TEST(PackTest, OutageWhileMeasuringStopsBeforeTheWindowAndResumesExactly) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("outage", 40);
  LoaderConfig c = pack_config(ds.data_path);
  PackPlanOptions po{.capacity = 2048, .window = 16, .plan_id = 7};
  const dataset::OrderConfig order{.seed = c.seed};
  const dataset::RankInfo one;
  auto healthy = make_context(c);
  ASSERT_TRUE(healthy.ok()) << healthy.error().to_string();
  const std::uint64_t n = (*healthy)->records->size();
  auto ref_s = PackSchedule::make(**healthy, n, order, one, 1, {}, po, nullptr);
  ASSERT_TRUE(ref_s.ok());
  LoaderState end;
  std::optional<SampleFailure> none;
  const auto ref = units_until_stop(**ref_s, &end, &none);
  ASSERT_FALSE(none);
  ASSERT_GT(ref.size(), 4u);

  auto ctx = make_context(c);
  ASSERT_TRUE(ctx.ok());
  auto flaky = std::make_unique<FlakyFetcher>(std::move((*ctx)->fetcher));
  FlakyFetcher* f = flaky.get();
  (*ctx)->fetcher = std::move(flaky);
  auto s = PackSchedule::make(**ctx, n, order, one, 1, {}, po, nullptr);
  ASSERT_TRUE(s.ok());
  Item first;
  ASSERT_EQ((*s)->next(true, {}, &first), ItemSource::Next::kItem);  // window 0 measured
  ASSERT_GT(f->fetched.load(), 0);
  f->down = true;  // window 1 cannot be measured
  LoaderState last;
  std::optional<SampleFailure> outage;
  auto got = units_until_stop(**s, &last, &outage);
  ASSERT_TRUE(outage.has_value());
  EXPECT_TRUE(is_outage(*outage)) << error_code_name(outage->code) << " "
                                  << failure_stage_name(outage->stage);
  EXPECT_EQ((*s)->next(true, {}, &first), ItemSource::Next::kEnd);  // nothing after it
  got.front().insert(got.front().begin(), first.sample);
  ASSERT_GE(got.size(), 1u);
  ASSERT_LT(got.size(), ref.size());
  EXPECT_EQ(last.position, 0u);  // still inside window 0: its units were all that could go
  // The store is back: resume from the last unit's state, on a fresh schedule.
  auto back = PackSchedule::make(**healthy, n, order, one, 1, last, po, nullptr);
  ASSERT_TRUE(back.ok());
  const auto rest = units_until_stop(**back, &end, &none);
  ASSERT_FALSE(none);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(got, ref);
}

TEST(PackTest, TruncationKeepsSamplesThatDropWouldLose) {
  STOKER_REQUIRE_TOKENIZER();
  auto ds = make_dataset("truncate", 30);
  LoaderConfig c = pack_config(ds.data_path);
  c.packing.max_tokens = c.max_length = 384;
  const testing::RunResult drop = run_loader(c);
  c.truncate = true;
  const testing::RunResult cut = run_loader(c);
  ASSERT_FALSE(drop.error);
  ASSERT_FALSE(cut.error);
  EXPECT_GT(drop.stats.failed, 0);
  EXPECT_LT(cut.stats.failed, drop.stats.failed);
  EXPECT_GT(cut.ids.size(), drop.ids.size());
  EXPECT_LE(cut.stats.real_tokens, 384 * cut.stats.steps);
}

}  // namespace
}  // namespace stoker::pipeline
