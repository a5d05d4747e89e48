// The global plan: epochized counts exact per source and per sample (counted), weighted fractions
// within binomial 4σ, the stream identical for world sizes 1, 2, 8 (ranks concatenated), exact
// resume from a serialized state at another world size, refusals, read locality, a pinned order.
#include "stoker/dataset/plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

namespace stoker::dataset {
namespace {

PlanConfig three_sources(PlanMode mode) {
  PlanConfig c;
  c.mode = mode;
  c.seed = 1234;
  c.global_batch = 64;
  c.sources = {{1000, 5, 1}, {333, 2, 2.5}, {57, 1, 0.3}};  // {samples, weight, repetitions}
  c.mixture_hash = 0xabc;
  return c;
}

std::vector<PlanItem> stream(const Plan& plan, int world, std::uint64_t steps) {
  std::vector<std::vector<PlanItem>> per_step(steps);
  for (int r = 0; r < world; ++r) {
    auto c = PlanCursor::start(plan, r, world);
    EXPECT_TRUE(c.ok());
    for (std::uint64_t t = 0; t < steps; ++t) {
      auto items = c->next_step();
      EXPECT_EQ(items.size(), plan.config().global_batch / world);
      per_step[t].insert(per_step[t].end(), items.begin(), items.end());
    }
  }
  std::vector<PlanItem> out;
  for (auto& s : per_step) out.insert(out.end(), s.begin(), s.end());
  return out;
}

TEST(PlanTest, EpochizedEverySampleExactlyFloorRNPerEpoch) {
  for (auto [block, window] : {std::pair{64u, 16u}, std::pair{7u, 3u}, std::pair{1u, 1u}, std::pair{500u, 2u}}) {
    SCOPED_TRACE(std::to_string(block) + "x" + std::to_string(window));
    PlanConfig c = three_sources(PlanMode::kEpochized);
    c.block = block;
    c.window_blocks = window;
    auto plan = Plan::create(c);
    ASSERT_TRUE(plan.ok()) << plan.error().to_string();
    EXPECT_EQ(plan->epoch_counts(), (std::vector<std::uint64_t>{1000, 832, 17}));  // floor(r·N)
    const std::uint64_t T = plan->epoch_length();
    ASSERT_EQ(T, 1849u);
    for (std::uint64_t e = 0; e < 3; ++e) {
      std::vector<std::map<std::uint64_t, int>> seen(3);
      const Plan::Layout l = plan->layout(e);
      for (std::uint64_t t = 0; t < T; ++t) {
        const auto [s, d] = plan->draw_at(l, t);
        ++seen[s][plan->draw_sample(s, e, d)];
      }
      // source 0: r = 1, each of its 1000 samples exactly once
      ASSERT_EQ(seen[0].size(), 1000u);
      for (auto& [k, n] : seen[0]) ASSERT_EQ(n, 1);
      // source 1: r = 2.5: every sample 2 or 3 times, 832 in all, 166 samples thrice
      ASSERT_EQ(seen[1].size(), 333u);
      int total = 0, thrice = 0;
      for (auto& [k, n] : seen[1]) {
        ASSERT_TRUE(n == 2 || n == 3) << n;
        total += n;
        thrice += n == 3;
      }
      EXPECT_EQ(total, 832);
      EXPECT_EQ(thrice, 166);
      // source 2: r = 0.3: 17 distinct samples once each
      ASSERT_EQ(seen[2].size(), 17u);
      for (auto& [k, n] : seen[2]) ASSERT_EQ(n, 1);
    }
  }
}

TEST(PlanTest, FractionalPassesVisitDifferentSamples) {
  PlanConfig c = three_sources(PlanMode::kEpochized);
  auto plan = *Plan::create(c);
  std::set<std::uint64_t> union_of_epochs;
  for (std::uint64_t e = 0; e < 12; ++e) {
    const Plan::Layout l = plan.layout(e);
    for (std::uint64_t t = 0; t < plan.epoch_length(); ++t) {
      const auto [s, d] = plan.draw_at(l, t);
      if (s == 2) union_of_epochs.insert(plan.draw_sample(s, e, d));
    }
  }
  EXPECT_GT(union_of_epochs.size(), 40u);  // 12 epochs × 17 of 57: not the same 17 every time
}

TEST(PlanTest, WeightedFractionsWithinBinomialBounds) {
  PlanConfig c;
  c.mode = PlanMode::kWeighted;
  c.seed = 99;
  c.global_batch = 100;
  c.sources = {{500, 0.5}, {300, 0.3}, {70, 0.15}, {9, 0.05}};
  auto plan = *Plan::create(c);
  auto cur = *PlanCursor::start(plan, 0, 1);
  const int n = 100000;
  std::vector<std::map<std::uint64_t, int>> seen(4);
  for (int t = 0; t < n / 100; ++t)
    for (const PlanItem& it : cur.next_step()) ++seen[it.source][it.sample];
  for (int s = 0; s < 4; ++s) {
    const double p = c.sources[s].weight, mean = n * p, sigma = std::sqrt(n * p * (1 - p));
    const auto count = static_cast<double>(cur.planned()[static_cast<std::size_t>(s)]);
    EXPECT_LE(std::fabs(count - mean), 4 * sigma) << "source " << s << ": " << count << " vs " << mean;
    std::printf("weighted source %d: weight %.2f, %.0f of %d drawn (expected %.0f, %+.2f sigma)\n", s, p, count, n, mean,
                (count - mean) / sigma);
    // each source cycles through permutations: counts per sample differ by at most one
    int lo = n, hi = 0;
    for (auto& [k, m] : seen[s]) {
      lo = std::min(lo, m);
      hi = std::max(hi, m);
    }
    EXPECT_EQ(seen[s].size(), c.sources[s].samples);
    EXPECT_LE(hi - lo, 1) << "source " << s;
  }
}

TEST(PlanTest, StreamIsTheSameForWorldSizes1_2_8) {
  for (PlanMode mode : {PlanMode::kEpochized, PlanMode::kWeighted}) {
    auto plan = *Plan::create(three_sources(mode));
    const auto one = stream(plan, 1, 70);  // 4480 positions: over two epochs
    EXPECT_EQ(stream(plan, 2, 70), one);
    EXPECT_EQ(stream(plan, 8, 70), one);
    for (std::size_t k = 0; k < one.size(); ++k) ASSERT_EQ(one[k].position, k);
    if (mode == PlanMode::kEpochized) {
      for (std::size_t k = 0; k < one.size(); k += 97) EXPECT_EQ(plan.at(k), one[k]);
    }
  }
}

TEST(PlanTest, ResumeAtAnyStepAndWorldSizeIsExact) {
  std::mt19937 rng(5);
  for (PlanMode mode : {PlanMode::kEpochized, PlanMode::kWeighted}) {
    auto plan = *Plan::create(three_sources(mode));
    const auto reference = stream(plan, 1, 80);
    for (int trial = 0; trial < 20; ++trial) {
      const int worlds[] = {1, 2, 4, 8};
      const int w1 = worlds[rng() % 4], w2 = worlds[rng() % 4];
      const std::uint64_t stop = 1 + rng() % 60;
      // run to `stop` at world w1: every rank ends with the same state
      std::string text;
      for (int r = 0; r < w1; ++r) {
        auto c = *PlanCursor::start(plan, r, w1);
        for (std::uint64_t t = 0; t < stop; ++t) c.next_step();
        const std::string s = c.state().serialize();
        if (r == 0) text = s;
        ASSERT_EQ(s, text) << "ranks disagree on the state";
      }
      EXPECT_LT(text.size(), 300u) << text;
      auto state = PlanState::parse(text);
      ASSERT_TRUE(state.ok()) << state.error().to_string();
      ASSERT_EQ(state->serialize(), text);
      // resume at world w2: the rest of the stream is the reference's
      std::vector<std::vector<PlanItem>> per_step(80 - stop);
      for (int r = 0; r < w2; ++r) {
        auto c = PlanCursor::resume(plan, *state, r, w2);
        ASSERT_TRUE(c.ok()) << c.error().to_string();
        for (std::uint64_t t = 0; t < 80 - stop; ++t) {
          auto items = c->next_step();
          per_step[t].insert(per_step[t].end(), items.begin(), items.end());
        }
      }
      std::vector<PlanItem> rest;
      for (auto& s : per_step) rest.insert(rest.end(), s.begin(), s.end());
      ASSERT_EQ(rest, std::vector<PlanItem>(reference.begin() + static_cast<std::ptrdiff_t>(stop * 64), reference.end()))
          << "mode " << static_cast<int>(mode) << " stop " << stop << " " << w1 << " -> " << w2;
    }
  }
}

TEST(PlanTest, StateRefusals) {
  auto plan = *Plan::create(three_sources(PlanMode::kEpochized));
  auto c = *PlanCursor::start(plan, 0, 4);
  for (int i = 0; i < 3; ++i) c.next_step();
  const PlanState st = c.state();
  std::string text = st.serialize();
  // damaged or edited text
  std::string edited = text;
  edited[edited.find("position=") + 9] = '9';
  EXPECT_NE(PlanState::parse(edited).error().message().find("the check does not match"), std::string::npos);
  EXPECT_FALSE(PlanState::parse("stoker-state v1 epoch=0 position=3").ok());
  EXPECT_FALSE(PlanState::parse("").ok());
  // another mixture: refused, unless allowed
  PlanConfig other = three_sources(PlanMode::kEpochized);
  other.sources[1].samples = 334;
  auto plan2 = *Plan::create(other);
  auto refused = PlanCursor::resume(plan2, st, 0, 2);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("the mixture changed since it was saved"), std::string::npos);
  EXPECT_NE(refused.error().message().find("--allow-spec-change starts the new plan at position 192"), std::string::npos)
      << refused.error().to_string();
  std::vector<std::string> warnings;
  auto allowed = PlanCursor::resume(plan2, st, 0, 2, true, &warnings);
  ASSERT_TRUE(allowed.ok());
  EXPECT_EQ(allowed->state().position, 192u);
  EXPECT_EQ(warnings.size(), 1u);
  // another global batch, a world size that does not divide it, another seed
  PlanConfig g = three_sources(PlanMode::kEpochized);
  g.global_batch = 32;
  EXPECT_NE(PlanCursor::resume(*Plan::create(g), st, 0, 1).error().message().find("same global batch"), std::string::npos);
  EXPECT_FALSE(PlanCursor::start(plan, 0, 3).ok());
  PlanConfig seed = three_sources(PlanMode::kEpochized);
  seed.seed = 1;
  EXPECT_FALSE(PlanCursor::resume(*Plan::create(seed), st, 0, 1).ok());
}

TEST(PlanTest, ConfigRefusals) {
  PlanConfig c = three_sources(PlanMode::kWeighted);
  c.sources[2].samples = 0;
  EXPECT_NE(Plan::create(c).error().message().find("source 2 has weight 1 but no samples"), std::string::npos);
  c = three_sources(PlanMode::kEpochized);
  for (auto& s : c.sources) s.repetitions = 0;
  EXPECT_FALSE(Plan::create(c).ok());
  c = three_sources(PlanMode::kEpochized);
  c.sources[0].repetitions = -1;
  EXPECT_FALSE(Plan::create(c).ok());
  c.sources.clear();
  EXPECT_FALSE(Plan::create(c).ok());
}

TEST(PlanTest, EpochizedKeepsBlocksTogetherWithinAWindow) {
  PlanConfig c = three_sources(PlanMode::kEpochized);
  c.sources = {{100000, 1, 1}};
  auto plan = *Plan::create(c);
  const Plan::Layout l = plan.layout(0);
  // A window of 16 blocks × 64 positions reads from at most 16 runs of 64 adjacent samples.
  for (std::uint64_t w = 0; w < 5; ++w) {
    std::set<std::uint64_t> runs;
    for (std::uint64_t t = w * 1024; t < (w + 1) * 1024; ++t) {
      const auto [s, d] = plan.draw_at(l, t);
      runs.insert(d / 64);
    }
    EXPECT_LE(runs.size(), 16u);
  }
}

TEST(PlanTest, OrderIsPinned) {
  // A changed plan function changes every saved state's meaning: this golden catches it.
  auto plan = *Plan::create(three_sources(PlanMode::kEpochized));
  auto cur = *PlanCursor::start(plan, 0, 1);
  const auto items = cur.next_step();
  std::string got;
  for (int k = 0; k < 8; ++k) got += std::to_string(items[k].source) + ":" + std::to_string(items[k].sample) + " ";
  auto wplan = *Plan::create(three_sources(PlanMode::kWeighted));
  auto wcur = *PlanCursor::start(wplan, 0, 1);
  const auto w = wcur.next_step();
  for (int k = 0; k < 8; ++k) got += std::to_string(w[k].source) + ":" + std::to_string(w[k].sample) + " ";
  EXPECT_EQ(got, "0:553 0:618 0:652 0:611 0:87 1:212 1:93 0:310 0:496 1:207 0:547 0:246 1:50 1:21 0:641 0:980 ");
}

}  // namespace
}  // namespace stoker::dataset
