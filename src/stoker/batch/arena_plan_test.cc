#include "stoker/batch/arena_plan.h"

#include <gtest/gtest.h>

namespace stoker::batch {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

// Hand-computed: depth x largest (page-rounded) + slack (half the largest, 2 MiB-rounded, at
// least 2 MiB), 2 MiB-rounded, at most the cap.
TEST(ArenaPlanTest, PlannedIsDepthTimesLargestPlusSlackUnderTheCap) {
  ArenaPlan p{.cap = 1024 * kMiB, .depth = 6};
  EXPECT_EQ(p.planned(), 0u);
  EXPECT_TRUE(p.add(3 * kMiB + 1));  // 3 MiB + 4 KiB
  EXPECT_EQ(p.largest, 3 * kMiB + 4096);
  EXPECT_EQ(p.slack(), 2 * kMiB);
  EXPECT_EQ(p.planned(), 22 * kMiB);  // 6 x 3.004 + 2 = 20.02 MiB, up to a 2 MiB multiple
  EXPECT_FALSE(p.add(kMiB));          // smaller: no change
  EXPECT_TRUE(p.add(100 * kMiB));
  EXPECT_EQ(p.slack(), 50 * kMiB);
  EXPECT_EQ(p.planned(), 650 * kMiB);
  EXPECT_FALSE(p.capped());
  EXPECT_TRUE(p.add(200 * kMiB));
  EXPECT_EQ(p.planned(), 1024 * kMiB);  // 1300 MiB wanted
  EXPECT_TRUE(p.capped());
}

TEST(ArenaPlanTest, WarmsOneLargestAheadWhileItFits) {
  ArenaPlan p{.cap = 100 * kMiB, .depth = 4};
  EXPECT_EQ(p.warm_to(0), 0u);  // nothing planned
  p.add(10 * kMiB);             // planned 4 x 10 + 6 = 46 MiB
  EXPECT_EQ(p.warm_to(0), 10 * kMiB);
  EXPECT_EQ(p.warm_to(30 * kMiB), 40 * kMiB);
  EXPECT_EQ(p.warm_to(40 * kMiB), 46 * kMiB);  // bounded by the plan
  EXPECT_EQ(p.warm_to(60 * kMiB), 60 * kMiB);  // above the plan: nothing ahead
  EXPECT_EQ(p.warm_to(95 * kMiB), 95 * kMiB);  // a largest block no longer fits
}

TEST(ArenaPlanTest, DescribeSaysSizeAndWhy) {
  ArenaPlan p{.cap = 64 * kMiB, .depth = 6};
  EXPECT_NE(p.describe("x").find("no batch planned yet"), std::string::npos);
  p.add(4 * kMiB);
  EXPECT_EQ(p.describe("prefetch 4 + 2"),
            "planned 26.0 MiB: 6 batches (prefetch 4 + 2) x largest 4.0 MiB + 2.0 MiB slack; "
            "cap 64 MiB (--arena-mb)");
  p.add(16 * kMiB);
  EXPECT_EQ(p.describe("prefetch 4 + 2"),
            "planned 64.0 MiB: 6 batches (prefetch 4 + 2) x largest 16.0 MiB + 8.0 MiB slack = "
            "104.0 MiB, capped; cap 64 MiB (--arena-mb)");
}

}  // namespace
}  // namespace stoker::batch
