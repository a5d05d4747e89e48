#include "stoker/audio/features.h"
#include "stoker/audio/plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace stoker::audio {
namespace {

// Token counts worked out with Python's // and % (python3 -c "..."), incl. negative operands.
TEST(AudioTokensTest, PythonFloorDivision) {
  struct Case {
    std::int64_t frames, qwen2, qwen3;
  };
  const Case cases[] = {{0, 0, 0},     {1, 0, 1},       {2, 0, 1},       {3, 1, 1},       {4, 1, 1},
                        {5, 1, 1},     {99, 25, 13},    {100, 25, 13},   {101, 25, 14},   {199, 50, 26},
                        {200, 50, 26}, {201, 50, 27},   {230, 57, 30},   {300, 75, 39},   {3000, 750, 390},
                        {30000, 7500, 3900}};
  for (const Case& c : cases) {
    EXPECT_EQ(audio_token_count(AudioModel::kQwen2Audio, c.frames), c.qwen2) << c.frames;
    EXPECT_EQ(audio_token_count(AudioModel::kQwen25Omni, c.frames), c.qwen2) << c.frames;
    EXPECT_EQ(audio_token_count(AudioModel::kQwen3Omni, c.frames), c.qwen3) << c.frames;
  }
}

TEST(FeatureLayoutTest, PaddingModesAndMask) {
  const WhisperConfig q2 = WhisperConfig::for_model(AudioModel::kQwen2Audio);
  const WhisperConfig q25 = WhisperConfig::for_model(AudioModel::kQwen25Omni);
  const WhisperConfig q3 = WhisperConfig::for_model(AudioModel::kQwen3Omni);
  std::int64_t one[] = {16000 * 2 + 5};
  auto l2 = feature_layout(q2, one);
  ASSERT_TRUE(l2.ok());
  EXPECT_EQ(l2->padded_samples, 480000);
  EXPECT_EQ(l2->frames, 3000);
  EXPECT_EQ(mask_frames(*l2, one[0]), 201);  // ceil(32005 / 160)
  auto l25 = feature_layout(q25, one);
  EXPECT_EQ(l25->frames, 30000);
  auto l3 = feature_layout(q3, one);
  EXPECT_EQ(l3->padded_samples, 32005);
  EXPECT_EQ(l3->frames, 200);
  EXPECT_EQ(mask_frames(*l3, one[0]), 200);  // the longest clip: floor (its last mask column dropped)
  std::int64_t two[] = {32005, 16001};
  auto l3b = feature_layout(q3, two);
  EXPECT_EQ(mask_frames(*l3b, 16001), 101);  // a shorter clip of the same call: ceil
  std::int64_t longer[] = {480000 + 7};
  EXPECT_EQ(mask_frames(*feature_layout(q2, longer), longer[0]), 3000);  // truncated
  std::int64_t empty[] = {0};
  EXPECT_FALSE(feature_layout(q2, empty).ok());
  std::int64_t tiny[] = {100};
  EXPECT_FALSE(feature_layout(q3, tiny).ok());  // shorter than one hop: no frame
}

// The filter bank's defining properties (slaney, 0–8 kHz): 128 non-negative triangles with
// increasing peaks, area-normalised (height 2 / bandwidth: area 1 in Hz, so the 40 Hz-spaced
// samples of a filter spanning many bins sum to about 1 / 40).
TEST(WhisperFiltersTest, SlaneyTrianglesCoverTheBand) {
  auto ex = WhisperFeatureExtractor::create(WhisperConfig{});
  ASSERT_TRUE(ex.ok());
  const std::vector<double> d = ex->dense_filters();
  ASSERT_EQ(d.size(), 201u * 128u);
  int prev_peak = -1;
  for (int j = 0; j < 128; ++j) {
    int peak = 0, support = 0;
    double best = -1, area = 0;
    for (int b = 0; b < 201; ++b) {
      const double w = d[static_cast<std::size_t>(b) * 128 + static_cast<std::size_t>(j)];
      EXPECT_GE(w, 0.0);
      area += w * 40.0;
      support += w > 0 ? 1 : 0;
      if (w > best) {
        best = w;
        peak = b;
      }
    }
    EXPECT_GE(peak, prev_peak) << j;
    prev_peak = peak;
    EXPECT_GT(best, 0.0) << j;
    if (support >= 12) EXPECT_NEAR(area, 1.0, 0.02) << j;
  }
}

// Features of a clip zero-padded by the extractor equal those of the same clip padded by hand
// to the full length (no padding left to skip): the skipped all-zero frames are exact.
TEST(WhisperFeaturesTest, SkippingZeroFramesChangesNothing) {
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.f, 0.1f);
  std::vector<float> clip(16000 * 3 + 77);
  for (std::size_t i = 0; i < clip.size(); ++i) clip[i] = g(rng) + 0.3f * std::sin(0.05f * static_cast<float>(i));
  WhisperConfig c;  // 30 s, max_length
  auto ex = WhisperFeatureExtractor::create(c);
  ASSERT_TRUE(ex.ok());
  std::int64_t len[] = {static_cast<std::int64_t>(clip.size())};
  auto layout = feature_layout(c, len);
  ASSERT_TRUE(layout.ok());
  std::vector<float> a(128 * 3000), b(128 * 3000);
  auto ones = ex->extract(clip, *layout, a.data());
  ASSERT_TRUE(ones.ok());
  EXPECT_EQ(*ones, (static_cast<std::int64_t>(clip.size()) + 159) / 160);
  std::vector<float> padded = clip;
  padded.resize(480000, 0.0f);
  ASSERT_TRUE(ex->extract(padded, *layout, b.data()).ok());
  EXPECT_EQ(a, b);
}

// One tone, computed here the slow way from the definitions (long double DFT of the reflect-
// padded, Hann-windowed frames; the dense filters; log10; floor; normalise) and compared.
TEST(WhisperFeaturesTest, MatchesASlowIndependentComputation) {
  std::vector<float> clip(4000);
  for (std::size_t i = 0; i < clip.size(); ++i) {
    clip[i] = 0.5f * std::sin(2.f * 3.14159265f * 440.f * static_cast<float>(i) / 16000.f) *
              (1.f + 0.3f * std::sin(0.001f * static_cast<float>(i)));
  }
  const WhisperConfig c = WhisperConfig::for_model(AudioModel::kQwen3Omni);
  auto ex = WhisperFeatureExtractor::create(c);
  ASSERT_TRUE(ex.ok());
  std::int64_t len[] = {4000};
  auto layout = feature_layout(c, len);
  ASSERT_TRUE(layout.ok());
  const std::int64_t F = layout->frames;  // 25
  std::vector<float> got(static_cast<std::size_t>(128 * F));
  ASSERT_TRUE(ex->extract(clip, *layout, got.data()).ok());
  const std::vector<double> filt = ex->dense_filters();
  const long double pi = 3.141592653589793238462643383279502884L;
  std::vector<double> logmel(static_cast<std::size_t>(128 * F));
  double mx = -1e300;
  const std::int64_t P = 4000;
  for (std::int64_t f = 0; f < F; ++f) {
    std::vector<long double> frame(400);
    for (int i = 0; i < 400; ++i) {
      std::int64_t t = f * 160 - 200 + i;
      if (t < 0) t = -t;
      if (t >= P) t = 2 * (P - 1) - t;
      const long double w = 0.5L - 0.5L * std::cos(2 * pi * i / 400.0L);
      frame[static_cast<std::size_t>(i)] = static_cast<long double>(clip[static_cast<std::size_t>(t)]) * w;
    }
    std::vector<double> power(201);
    for (int k = 0; k <= 200; ++k) {
      long double re = 0, im = 0;
      for (int j = 0; j < 400; ++j) {
        const long double a = -2 * pi * ((j * k) % 400) / 400.0L;
        re += frame[static_cast<std::size_t>(j)] * std::cos(a);
        im += frame[static_cast<std::size_t>(j)] * std::sin(a);
      }
      power[static_cast<std::size_t>(k)] = static_cast<double>(re * re + im * im);
    }
    for (int m = 0; m < 128; ++m) {
      double acc = 0;
      for (int k = 0; k <= 200; ++k) acc += filt[static_cast<std::size_t>(k) * 128 + static_cast<std::size_t>(m)] * power[static_cast<std::size_t>(k)];
      const double v = std::log10(std::max(1e-10, acc));
      logmel[static_cast<std::size_t>(m * F + f)] = v;
      mx = std::max(mx, v);
    }
  }
  double worst = 0;
  for (std::size_t i = 0; i < logmel.size(); ++i) {
    const double want = (std::max(logmel[i], mx - 8.0) + 4.0) / 4.0;
    worst = std::max(worst, std::abs(want - static_cast<double>(got[i])));
  }
  EXPECT_LT(worst, 2e-6);
}

// Planning from header numbers: librosa's offset/duration frames, the 16 kHz length, one call.
TEST(AudioPlanTest, ClipAndCall) {
  AudioInfo info;
  info.sample_rate = 44100;
  info.channels = 2;
  info.frames = 101430;
  info.frames_exact = true;
  auto whole = plan_clip(info);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->samples, 36800);
  LoadOptions o;
  o.offset_s = 0.5;     // int(22050.0) = 22050
  o.duration_s = 1.01;  // int(44541.0) = 44541
  auto part = plan_clip(info, o);
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(part->source_frames, 44541);
  EXPECT_EQ(part->samples, resampled_length(44541, 44100));
  o.offset_s = 3;
  EXPECT_FALSE(plan_clip(info, o).ok());
  const std::int64_t lens[] = {36800, 16000};
  auto q3 = plan_call(AudioModel::kQwen3Omni, lens);
  ASSERT_TRUE(q3.ok());
  EXPECT_EQ(q3->layout.frames, 230);
  EXPECT_EQ(q3->mask_frames, (std::vector<std::int64_t>{230, 100}));
  EXPECT_EQ(q3->tokens, (std::vector<std::int64_t>{30, 13}));
  EXPECT_EQ(q3->feature_bytes(), 2 * 128 * 230 * 4);
  auto q25 = plan_call(AudioModel::kQwen25Omni, lens);
  EXPECT_EQ(q25->layout.frames, 30000);
  EXPECT_EQ(q25->tokens, (std::vector<std::int64_t>{57, 25}));
}

}  // namespace
}  // namespace stoker::audio
