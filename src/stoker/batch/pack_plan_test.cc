#include "stoker/batch/pack_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

namespace stoker::batch {
namespace {

std::vector<PlanItem> items_of(const std::vector<std::int64_t>& tokens) {
  std::vector<PlanItem> out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    out.push_back({static_cast<std::uint32_t>(i), tokens[i], 0});
  }
  return out;
}

// The textbook best-fit decreasing, written independently: a stable sort by length, then a
// linear scan of every open bin for the smallest remaining space that fits (the first such bin
// on a tie). O(n²), obviously right.
std::vector<std::vector<std::uint32_t>> naive_bfd(const std::vector<PlanItem>& items,
                                                  std::int64_t capacity) {
  std::vector<std::uint32_t> order;
  for (std::uint32_t i = 0; i < items.size(); ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return items[a].tokens > items[b].tokens; });
  std::vector<std::vector<std::uint32_t>> bins;
  std::vector<std::int64_t> left;
  for (std::uint32_t i : order) {
    int best = -1;
    for (std::size_t b = 0; b < bins.size(); ++b) {
      if (left[b] >= items[i].tokens && (best < 0 || left[b] < left[best])) best = static_cast<int>(b);
    }
    if (best < 0) {
      bins.push_back({});
      left.push_back(capacity);
      best = static_cast<int>(bins.size() - 1);
    }
    bins[best].push_back(i);
    left[best] -= items[i].tokens;
  }
  return bins;
}

TEST(PackPlanTest, BestFitPutsEachItemInTheFullestBinThatHoldsIt) {
  // 6 opens bin 0 (4 left), 5 opens bin 1 (5 left); 4 fits both, best fit is bin 0 (fills it);
  // 3 and 2 go to bin 1.
  std::vector<PlanItem> items = items_of({3, 6, 2, 5, 4});
  std::vector<std::vector<std::uint32_t>> bins = best_fit_decreasing(items, 10);
  ASSERT_EQ(bins.size(), 2u);
  EXPECT_EQ(bins[0], (std::vector<std::uint32_t>{1, 4}));
  EXPECT_EQ(bins[1], (std::vector<std::uint32_t>{3, 0, 2}));
}

TEST(PackPlanTest, BestFitEqualsTheTextbookAlgorithmOnRandomWindows) {
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 200; ++trial) {
    const std::int64_t capacity = 64 + static_cast<std::int64_t>(rng() % 4000);
    std::vector<std::int64_t> tokens(1 + rng() % 300);
    for (std::int64_t& t : tokens) {
      // Many duplicates (ties) and a long tail, like real lengths.
      t = 1 + static_cast<std::int64_t>(rng() % 8 == 0 ? rng() % capacity : rng() % (capacity / 8 + 1));
    }
    std::vector<PlanItem> items = items_of(tokens);
    ASSERT_EQ(best_fit_decreasing(items, capacity), naive_bfd(items, capacity)) << "trial " << trial;
  }
}

TEST(PackPlanTest, UnitsCoverEveryItemOnceWithinCapacity) {
  std::mt19937_64 rng(7);
  for (UnitKind kind : {UnitKind::kPack, UnitKind::kPaddedBudget}) {
    std::vector<PlanItem> items;
    for (std::uint32_t i = 0; i < 1000; ++i) {
      items.push_back({i, 1 + static_cast<std::int64_t>(rng() % 8192),
                       static_cast<std::int64_t>(rng() % 3 == 0 ? 0 : rng() % 5000)});
    }
    std::vector<Unit> units = plan_units(items, {.kind = kind, .capacity = 8192});
    std::multiset<std::uint32_t> seen;
    for (const Unit& u : units) {
      ASSERT_FALSE(u.members.empty());
      EXPECT_TRUE(std::is_sorted(u.members.begin(), u.members.end()));
      std::int64_t tokens = 0, longest = 0, patches = 0;
      for (std::uint32_t m : u.members) {
        seen.insert(m);
        tokens += items[m].tokens;
        longest = std::max(longest, items[m].tokens);
        patches += items[m].patches;
      }
      EXPECT_EQ(u.tokens, tokens);
      EXPECT_EQ(u.longest, longest);
      EXPECT_EQ(u.patches, patches);
      if (kind == UnitKind::kPack) {
        EXPECT_LE(tokens, 8192);
        EXPECT_EQ(u.computed, 8192);
      } else {
        EXPECT_LE(static_cast<std::int64_t>(u.members.size()) * longest, 8192);
        EXPECT_EQ(u.computed, static_cast<std::int64_t>(u.members.size()) * longest);
      }
    }
    ASSERT_EQ(seen.size(), items.size());
    for (std::uint32_t i = 0; i < items.size(); ++i) EXPECT_EQ(seen.count(i), 1u);
  }
}

TEST(PackPlanTest, CanonicalOrderIsByVisionLoadEitherWay) {
  std::vector<PlanItem> items = {{0, 50, 0}, {1, 60, 900}, {2, 70, 100}, {3, 80, 400}};
  // Capacity 100: every item alone (no two fit together).
  std::vector<Unit> heavy = plan_units(items, {.capacity = 100, .heaviest_first = true});
  std::vector<Unit> light = plan_units(items, {.capacity = 100, .heaviest_first = false});
  ASSERT_EQ(heavy.size(), 4u);
  std::vector<std::uint32_t> order, reverse;
  for (const Unit& u : heavy) order.push_back(u.members[0]);
  for (const Unit& u : light) reverse.push_back(u.members[0]);
  EXPECT_EQ(order, (std::vector<std::uint32_t>{1, 3, 2, 0}));
  EXPECT_EQ(reverse, (std::vector<std::uint32_t>{0, 2, 3, 1}));
}

TEST(PackPlanTest, PaddedBudgetGroupsSimilarLengths) {
  std::vector<PlanItem> items = items_of({100, 30, 90, 31, 29, 95});
  // Budget 300: [100, 95, 90] (3 × 100), then [31, 30, 29] (3 × 31 = 93 ≤ 300).
  std::vector<Unit> units = plan_units(items, {.kind = UnitKind::kPaddedBudget, .capacity = 300});
  ASSERT_EQ(units.size(), 2u);
  std::set<std::vector<std::uint32_t>> got = {units[0].members, units[1].members};
  EXPECT_TRUE(got.count({0, 2, 5}));
  EXPECT_TRUE(got.count({1, 3, 4}));
}

}  // namespace
}  // namespace stoker::batch
