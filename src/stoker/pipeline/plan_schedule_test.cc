// Issue 23's engine glue without a model: range URIs, RangeBytes, the mix= state field, and
// PlanSchedule's items (ranks' slices concatenate to the world-1 stream; one group per step; the
// state after a step resumes the same stream at another world size).
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "stoker/pipeline/context.h"
#include "stoker/pipeline/plan_schedule.h"
#include "stoker/pipeline/state.h"
#include "stoker/pipeline/store_fetcher.h"

namespace stoker::pipeline {
namespace {

TEST(RangeUriTest, RoundTripsAndRejectsOthers) {
  const std::string u = range_uri("s3://b/shards/x-001.tar", 1536, 4096);
  std::string uri;
  std::int64_t off = -1, len = -1;
  ASSERT_TRUE(parse_range_uri(u, &uri, &off, &len));
  EXPECT_EQ(uri, "s3://b/shards/x-001.tar");
  EXPECT_EQ(off, 1536);
  EXPECT_EQ(len, 4096);
  for (const char* bad : {"/data/x.tar", "stoker-range:", "stoker-range:12", "stoker-range:a:1:/x",
                          "stoker-range:1::/x", "stoker-range:1:2"}) {
    EXPECT_FALSE(parse_range_uri(bad, &uri, &off, &len)) << bad;
  }
}

TEST(RangeBytesTest, TakenOnceAndBounded) {
  RangeBytes r;
  auto buf = std::make_shared<const std::vector<std::uint8_t>>(std::vector<std::uint8_t>{1, 2, 3, 4, 5});
  r.offer("a", buf, 1, 3);
  r.offer("bad", buf, 4, 3);  // past the buffer: ignored
  auto got = r.take("a");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, (std::vector<std::uint8_t>{2, 3, 4}));
  EXPECT_FALSE(r.take("a").has_value());
  EXPECT_FALSE(r.take("bad").has_value());
  for (std::size_t i = 0; i < RangeBytes::kMaxEntries + 10; ++i) r.offer("k" + std::to_string(i), buf, 0, 1);
  EXPECT_FALSE(r.take("k0").has_value());  // evicted first
  EXPECT_TRUE(r.take("k" + std::to_string(RangeBytes::kMaxEntries + 9)).has_value());
}

TEST(MixStateTest, EncodeDecodeAndTheStateLine) {
  dataset::PlanState s;
  s.spec = 0x0123456789abcdefULL;
  s.mode = dataset::PlanMode::kWeighted;
  s.global_batch = 16;
  s.cursors = {10, 0, 7};
  const std::string m = encode_mix(s);
  EXPECT_EQ(m, "0123456789abcdef.w.16.10_0_7");
  auto d = decode_mix(m, 32, 5);
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->cursors, s.cursors);
  EXPECT_EQ(d->position, 32u);
  EXPECT_EQ(d->seed, 5u);
  EXPECT_EQ(d->mode, dataset::PlanMode::kWeighted);
  for (const char* bad : {"", "0123.e.8.1", "0123456789abcdef.x.8.1", "0123456789abcdef.e.0.1",
                          "0123456789abcdef.e.8.", "0123456789abcdef.e.8.1__2", "0123456789abcdef.e.8"}) {
    EXPECT_FALSE(decode_mix(bad, 0, 0).ok()) << bad;
  }
  LoaderState st;
  st.position = 32;
  st.mix = m;
  auto parsed = LoaderState::parse(st.serialize());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->mix, m);
  EXPECT_FALSE(LoaderState::parse("stoker-state v1 epoch=0 position=0 mix=ABC").ok());
  EXPECT_FALSE(LoaderState::parse("stoker-state v1 epoch=0 position=0 mix=1.e.8.1 mix=1.e.8.1").ok());
  EXPECT_FALSE(LoaderState::parse("stoker-state v1 epoch=0 position=0 mix=" + std::string(5000, '1')).ok());
}

std::shared_ptr<const dataset::Plan> make_plan(dataset::PlanMode mode) {
  dataset::PlanConfig c;
  c.mode = mode;
  c.seed = 9;
  c.global_batch = 8;
  c.sources = {{.samples = 40, .weight = 5, .repetitions = 1},
               {.samples = 30, .weight = 2, .repetitions = 2},
               {.samples = 20, .weight = 1, .repetitions = 0.5}};
  return std::make_shared<const dataset::Plan>(*dataset::Plan::create(c));
}

// Every item of `world` ranks over `epochs`, step by step in rank order, with the groups seen.
std::vector<std::vector<std::uint64_t>> stream(std::shared_ptr<const dataset::Plan> plan, int world, int epochs,
                                               const LoaderState& start = {}) {
  std::vector<std::vector<std::vector<std::uint64_t>>> per(world);  // rank -> step -> ids
  for (int r = 0; r < world; ++r) {
    auto s = PlanSchedule::make(plan, {0, 40, 70}, {.rank = r, .world_size = world}, epochs, start, false, nullptr);
    EXPECT_TRUE(s.ok()) << s.error().to_string();
    Item it;
    std::uint64_t group = ~0ull;
    while ((*s)->next(true, {}, &it) == ItemSource::Next::kItem) {
      if (it.group != group) per[r].emplace_back();
      group = it.group;
      per[r].back().push_back(it.sample);
      EXPECT_EQ((*s)->source_of(it.sample), it.sample < 40 ? 0u : it.sample < 70 ? 1u : 2u);
    }
  }
  std::vector<std::vector<std::uint64_t>> out(per[0].size());
  for (std::size_t t = 0; t < out.size(); ++t)
    for (int r = 0; r < world; ++r) {
      EXPECT_EQ(per[r].size(), out.size());
      out[t].insert(out[t].end(), per[r][t].begin(), per[r][t].end());
    }
  return out;
}

TEST(PlanScheduleTest, RanksConcatenateToOneStreamInBothModes) {
  for (auto mode : {dataset::PlanMode::kEpochized, dataset::PlanMode::kWeighted}) {
    auto plan = make_plan(mode);
    const auto one = stream(plan, 1, 2);
    EXPECT_EQ(one.size(), plan->steps_for_epochs(2));
    for (int w : {2, 4, 8}) EXPECT_EQ(stream(plan, w, 2), one) << w;
  }
}

TEST(PlanScheduleTest, StateAfterAStepResumesAtAnotherWorldSize) {
  auto plan = make_plan(dataset::PlanMode::kWeighted);
  const auto one = stream(plan, 1, 2);
  auto s = *PlanSchedule::make(plan, {0, 40, 70}, {.rank = 0, .world_size = 1}, 2, {}, false, nullptr);
  Item it;
  LoaderState st;
  for (int k = 0; k < 5 * 8; ++k) {
    ASSERT_EQ(s->next(true, {}, &it), ItemSource::Next::kItem);
    st = LoaderState{it.next_epoch, it.next_position, 0};
    st.mix = *it.mix_after;
  }
  EXPECT_EQ(st.position, 40u);
  const auto rest = stream(plan, 4, 2, st);
  ASSERT_EQ(rest.size() + 5, one.size());
  for (std::size_t t = 0; t < rest.size(); ++t) EXPECT_EQ(rest[t], one[t + 5]);
  // Another global batch, or a state not of a mixture: refused.
  LoaderState plain{0, 16, 0};
  EXPECT_FALSE(PlanSchedule::make(plan, {0, 40, 70}, {.rank = 0, .world_size = 1}, 2, plain, false, nullptr).ok());
  LoaderState other = st;
  other.mix = other.mix.replace(other.mix.find(".8."), 3, ".4.");
  EXPECT_FALSE(PlanSchedule::make(plan, {0, 40, 70}, {.rank = 0, .world_size = 1}, 2, other, false, nullptr).ok());
}

}  // namespace
}  // namespace stoker::pipeline
