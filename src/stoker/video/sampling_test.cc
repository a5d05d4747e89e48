#include "stoker/video/sampling.h"

#include <gtest/gtest.h>

namespace stoker::video {
namespace {

// Expected values worked by hand from qwen-vl-utils 0.0.14's formulas (see sampling.h).
TEST(SmartNframes, FpsDefaultsAndClamps) {
  VideoOptions o;
  // 300 frames at 30 fps, 2 fps → 20 frames.
  EXPECT_EQ(*smart_nframes(o, 300, 30.0), 20);
  // 10 frames at 30 fps → 0.67 → clamped up to min_frames 4.
  EXPECT_EQ(*smart_nframes(o, 10, 30.0), 4);
  // 3 frames: max_frames = floor(3/2)·2 = 2.
  EXPECT_EQ(*smart_nframes(o, 3, 30.0), 2);
  // 1 frame: refused as qwen-vl-utils refuses it.
  EXPECT_FALSE(smart_nframes(o, 1, 30.0).ok());
  // 100000 frames at 1 fps → 200000 → capped at 768.
  EXPECT_EQ(*smart_nframes(o, 100000, 1.0), 768);
  o.fps = 1.0;
  EXPECT_EQ(*smart_nframes(o, 251, 25.0), 10);  // 10.04 → floor to even 10
}

TEST(SmartNframes, Nframes) {
  VideoOptions o;
  o.nframes = 5;  // round(2.5) = 2 (half to even) → 4
  EXPECT_EQ(*smart_nframes(o, 100, 25.0), 4);
  o.nframes = 7;  // round(3.5) = 4 → 8
  EXPECT_EQ(*smart_nframes(o, 100, 25.0), 8);
  o.nframes = 200;
  EXPECT_FALSE(smart_nframes(o, 100, 25.0).ok());
  o.fps = 2.0;
  EXPECT_FALSE(o.validate().ok());
}

TEST(Linspace, RoundsHalfToEven) {
  // 0, 1.5, 3 → 0, 2, 3.
  EXPECT_EQ(linspace_round(0, 3, 3), (std::vector<std::int64_t>{0, 2, 3}));
  EXPECT_EQ(linspace_round(0, 9, 4), (std::vector<std::int64_t>{0, 3, 6, 9}));
  // torch.linspace(0, 62667, 372)[342] in float32 on torch 1.13 AVX2 rounds to 57768
  // (a double linspace gives 57768.6...: checked against torch in tests/video).
  auto v = linspace_round(0, 62667, 372);
  EXPECT_EQ(v.size(), 372u);
  EXPECT_EQ(v.front(), 0);
  EXPECT_EQ(v.back(), 62667);
}

TEST(ClipRange, TorchvisionSelection) {
  std::vector<std::int64_t> pts;
  for (int i = 0; i < 100; ++i) pts.push_back(i * 512);  // 25 fps at tb 1/12800
  auto all = clip_range(pts, 1, 12800, std::nullopt, std::nullopt);
  EXPECT_EQ(all.first, 0);
  EXPECT_EQ(all.count, 100);
  // start 1.0 s = 12800 = frame 25 exactly; end 2.0 s = 25600 = frame 50 (inclusive).
  auto a = clip_range(pts, 1, 12800, 1.0, 2.0);
  EXPECT_EQ(a.first, 25);
  EXPECT_EQ(a.count, 26);
  // start 1.01 s falls between frames 25 and 26: the preceding frame 25 is prepended.
  auto b = clip_range(pts, 1, 12800, 1.01, 2.0);
  EXPECT_EQ(b.first, 25);
  EXPECT_EQ(b.count, 26);
  // End beyond the last frame: clamped to the stream; start beyond it: nothing.
  auto c = clip_range(pts, 1, 12800, 3.0, 1000.0);
  EXPECT_EQ(c.first, 75);
  EXPECT_EQ(c.count, 25);
  auto d = clip_range(pts, 1, 12800, 100.0, 200.0);
  EXPECT_EQ(d.count, 1);  // only the preceding frame (torchvision returns it too)
}

TEST(FrameBudget, PerFrameMaxFromTotal) {
  VideoOptions o;
  // Qwen2.5 (factor 28): total default 128000·784·0.9 = 90316800; /768·2 = 235200 < 602112.
  auto [mn, mx] = frame_pixel_bounds(o, 768, 28);
  EXPECT_EQ(mn, 100352);
  EXPECT_DOUBLE_EQ(mx, 90316800.0 / 768 * 2);
  auto [mn2, mx2] = frame_pixel_bounds(o, 4, 28);
  EXPECT_EQ(mx2, 602112);
  o.max_pixels = 50000;  // below int(min·1.05): the user's cap still wins (qwen-vl-utils)
  EXPECT_EQ(frame_pixel_bounds(o, 4, 28).second, 50000);
}

TEST(QwenSmartResize, MatchesPythonRules) {
  auto s = qwen_smart_resize(1080, 1920, 28, 100352, 602112);
  ASSERT_TRUE(s.ok());
  // h·w = 2073600 > max: beta = sqrt(2073600/602112) = 1.8557..; 1080/β/28 = 20.78 → 560;
  // 1920/β/28 = 36.95 → 1008.
  EXPECT_EQ(s->height, 560);
  EXPECT_EQ(s->width, 1008);
  EXPECT_FALSE(qwen_smart_resize(10, 4000, 28, 100352, 602112).ok());  // aspect > 200
}

}  // namespace
}  // namespace stoker::video
