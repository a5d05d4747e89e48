// Expected values are derived by hand from spec/qwen-vl.md §1.1 (see the comment on each case),
// never printed by the code under test.
#include "stoker/image/smart_resize.h"

#include <gtest/gtest.h>

namespace stoker::image {
namespace {

constexpr std::int64_t kQwen25Min = 3136, kQwen25Max = 12845056;
constexpr std::int64_t kQwen3Min = 65536, kQwen3Max = 16777216;

ResizedSize ok(int h, int w, int factor, std::int64_t mn, std::int64_t mx) {
  auto r = smart_resize(h, w, factor, mn, mx);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
  return r.ok() ? *r : ResizedSize{};
}

TEST(SmartResizeTest, SpecWorkedExampleQwen25) {
  // W×H 1024×768, factor 28: round(768/28 = 27.43) = 27 → 756; round(1024/28 = 36.57) = 37 →
  // 1036; 756·1036 = 783216 lies inside [3136, 12845056].
  const ResizedSize s = ok(768, 1024, 28, kQwen25Min, kQwen25Max);
  EXPECT_EQ(s.height, 756);
  EXPECT_EQ(s.width, 1036);
}

TEST(SmartResizeTest, SpecWorkedExampleQwen3) {
  // factor 32: 768/32 = 24, 1024/32 = 32 exactly; 786432 pixels inside the bounds.
  const ResizedSize s = ok(768, 1024, 32, kQwen3Min, kQwen3Max);
  EXPECT_EQ(s.height, 768);
  EXPECT_EQ(s.width, 1024);
}

TEST(SmartResizeTest, RoundsHalfToEven) {
  // 720/32 = 22.5 → 22 (half-even; std::round would give 23 → 736). 1280/32 = 40.
  const ResizedSize s = ok(720, 1280, 32, kQwen3Min, kQwen3Max);
  EXPECT_EQ(s.height, 704);
  EXPECT_EQ(s.width, 1280);
  // 70/28 = 2.5 → 2 → 56; 42/28 = 1.5 → 2 → 56 (both ties go to the even neighbour).
  const ResizedSize t = ok(70, 42, 28, kQwen25Min, kQwen25Max);
  EXPECT_EQ(t.height, 56);
  EXPECT_EQ(t.width, 56);
}

TEST(SmartResizeTest, ShrinksAboveMaxPixelsWithFloor) {
  // 4000×4000, factor 28, max 1003520: round(142.86) = 143 → 4004² > max;
  // beta = sqrt(16e6 / 1003520) = 3.99298; 4000 / beta / 28 = 35.78 → floor 35 → 980.
  const ResizedSize s = ok(4000, 4000, 28, 3136, 1003520);
  EXPECT_EQ(s.height, 980);
  EXPECT_EQ(s.width, 980);
}

TEST(SmartResizeTest, GrowsBelowMinPixelsWithCeil) {
  // 28×28 → 784 < 3136: beta = sqrt(3136/784) = 2; ceil(28·2/28) = 2 → 56.
  const ResizedSize s = ok(28, 28, 28, kQwen25Min, kQwen25Max);
  EXPECT_EQ(s.height, 56);
  EXPECT_EQ(s.width, 56);
  // 40×36, factor 32, min 65536: round(1.25) = 1, round(1.125) = 1 → 32·32 < min;
  // beta = sqrt(65536/1440) = 6.7462; 40·6.7462/32 = 8.43 → 9 → 288; 36·6.7462/32 = 7.59 → 8 → 256.
  const ResizedSize t = ok(40, 36, 32, kQwen3Min, kQwen3Max);
  EXPECT_EQ(t.height, 288);
  EXPECT_EQ(t.width, 256);
  const ResizedSize u = ok(40, 40, 32, kQwen3Min, kQwen3Max);
  // 40×40: beta = sqrt(65536/1600) = 6.4; ceil(40·6.4/32 = 8.0) = 8 → 256.
  EXPECT_EQ(u.height, 256);
  EXPECT_EQ(u.width, 256);
}

TEST(SmartResizeTest, AspectRatioLimit) {
  // Exactly 200 is allowed (the check is "> 200"): 28×5600 → 28×5600, 156800 pixels.
  const ResizedSize s = ok(28, 5600, 28, kQwen25Min, kQwen25Max);
  EXPECT_EQ(s.height, 28);
  EXPECT_EQ(s.width, 5600);
  auto r = smart_resize(28, 28 * 201, 28, kQwen25Min, kQwen25Max);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("aspect ratio"), std::string::npos);
}

TEST(SmartResizeTest, SmallImagesAreEnlargedAsInTransformers453) {
  // Spec §1.1 step 2 (verified there against transformers' slow processor): H 9 × W 13.
  // Qwen2.5: round(9/28) = round(13/28) = 0 → 0 · 0 < 3136; beta = sqrt(3136/117) = 5.1772;
  // ceil(9·5.1772/28 = 1.66) = 2 → 56, ceil(13·5.1772/28 = 2.40) = 3 → 84: grid [1, 4, 6].
  const ResizedSize a = ok(9, 13, 28, kQwen25Min, kQwen25Max);
  EXPECT_EQ(a.height, 56);
  EXPECT_EQ(a.width, 84);
  // Qwen3: beta = sqrt(65536/117) = 23.667; ceil(6.66) = 7 → 224, ceil(9.61) = 10 → 320: [1, 14, 20].
  const ResizedSize b = ok(9, 13, 32, kQwen3Min, kQwen3Max);
  EXPECT_EQ(b.height, 224);
  EXPECT_EQ(b.width, 320);
  // Qwen3 28×28 → [1, 16, 16] (spec): round(0.875) = 1 → 32² < 65536; 28·(256/28)/32 = 8 → 256.
  const ResizedSize c = ok(28, 28, 32, kQwen3Min, kQwen3Max);
  EXPECT_EQ(c.height, 256);
  EXPECT_EQ(c.width, 256);
  // 1×1: beta = sqrt(3136) = 56; ceil(56/28) = 2 → 56.
  const ResizedSize d = ok(1, 1, 28, kQwen25Min, kQwen25Max);
  EXPECT_EQ(d.height, 56);
  EXPECT_EQ(d.width, 56);
}

TEST(SmartResizeTest, ASideRoundingToZeroSendsTheImageThroughStepFive) {
  // H 13 × W 2600 (aspect exactly 200): step 3 gives 0 × 2604, product 0 < 3136, so step 5
  // rescales by beta = sqrt(3136/33800) = 0.3046 — a shrink of the long side: ceil(0.141) = 1
  // → 28, ceil(2600·0.3046/28 = 28.29) = 29 → 812. (qwen-vl-utils' max(factor, ·) in step 3
  // would keep 28 × 2604 instead.)
  const ResizedSize s = ok(13, 2600, 28, kQwen25Min, kQwen25Max);
  EXPECT_EQ(s.height, 28);
  EXPECT_EQ(s.width, 812);
}

TEST(SmartResizeTest, ShrinkKeepsEachSideAtLeastTheFactor) {
  // H 30 × W 2000, max 15680: step 3 28 × 1988 > max; beta = sqrt(60000/15680) = 1.9561;
  // floor(30/1.9561/28 = 0.55) = 0 → max(28, 0) = 28; floor(36.51) = 36 → 1008.
  const ResizedSize s = ok(30, 2000, 28, 3136, 15680);
  EXPECT_EQ(s.height, 28);
  EXPECT_EQ(s.width, 1008);
  // transformers ≤ 4.52 had no clamp: 0 × 1008 cannot be resized to.
  EXPECT_FALSE(smart_resize(30, 2000, 28, 3136, 15680, SmartResizeRules::kRefuseBelowFactor).ok());
}

TEST(SmartResizeTest, LegacyRulesRefuseASideSmallerThanTheFactor) {
  const auto legacy = SmartResizeRules::kRefuseBelowFactor;
  auto r = smart_resize(27, 500, 28, kQwen25Min, kQwen25Max, legacy);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("factor"), std::string::npos);
  EXPECT_FALSE(smart_resize(28, 31, 32, kQwen3Min, kQwen3Max, legacy).ok());
  // At or above the factor both rules agree.
  auto l = smart_resize(768, 1024, 28, kQwen25Min, kQwen25Max, legacy);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->height, 756);
  EXPECT_EQ(l->width, 1036);
}

TEST(SmartResizeTest, EmptyAndTooNarrowImagesAreStillErrors) {
  EXPECT_FALSE(smart_resize(0, 100, 28, kQwen25Min, kQwen25Max).ok());
  EXPECT_FALSE(smart_resize(1, 201, 28, kQwen25Min, kQwen25Max).ok());  // aspect 201
  EXPECT_TRUE(smart_resize(1, 200, 28, kQwen25Min, kQwen25Max).ok());   // aspect 200
}

}  // namespace
}  // namespace stoker::image
