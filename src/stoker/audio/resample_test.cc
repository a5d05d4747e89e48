#include "stoker/audio/resample.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace stoker::audio {
namespace {

// librosa's int(np.ceil(n * (16000 / sr))), values from numpy; the last two are where the double
// product lands above the exact integer (the exact ceil would give 16000 and 4000).
TEST(ResampledLengthTest, LibrosasDoubleProduct) {
  EXPECT_EQ(resampled_length(44100, 44100), 16000);
  EXPECT_EQ(resampled_length(101430, 44100), 36800);
  EXPECT_EQ(resampled_length(12345, 11025), 17916);
  EXPECT_EQ(resampled_length(1, 8000), 2);
  EXPECT_EQ(resampled_length(7, 96000), 2);
  EXPECT_EQ(resampled_length(441, 44100), 160);
  EXPECT_EQ(resampled_length(1343, 1343), 16001);
  EXPECT_EQ(resampled_length(313, 1252), 4001);
}

// numpy's float32 mean over channels: 0 + a + b for 2..7 channels; 8 accumulators from 8 on.
TEST(MixToMonoTest, NumpysSummationOrder) {
  // Values where the order matters in float32 (expected values from numpy 1.24: np.mean(a.T, 0)).
  const float big = 1e8f, one = 1.0f;
  std::vector<float> frame9 = {big, 3, 3, 3, 3, 3, 3, 3, -big};
  float out = 0;
  mix_to_mono(frame9.data(), 1, 9, &out);
  EXPECT_EQ(out, 16.0f / 9.0f);  // pairwise: 16 / 9; a sequential sum would give 0
  std::vector<float> frame3 = {big, one, -big};
  mix_to_mono(frame3.data(), 1, 3, &out);
  EXPECT_EQ(out, 0.0f);  // ((0 + 1e8) + 1) − 1e8 = 0 in float32 (1e8 + 1 rounds to 1e8)
  std::vector<float> mono = {-0.0f, 0.25f};
  std::vector<float> m(2);
  mix_to_mono(mono.data(), 2, 1, m.data());
  EXPECT_TRUE(std::signbit(m[0]));  // one channel: untouched
}

// libsoxr's output does not depend on how the input arrives: the stream fed in odd pieces equals
// the stream fed whole (python-soxr feeds whole chunks; the loader streams blocks).
TEST(SoxrStreamTest, PiecesDoNotChangeTheOutput) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> x(123457);
  for (float& v : x) v = u(rng);
  for (double rate : {44100.0, 22050.0, 8000.0, 48000.0, 1343.0}) {
    auto a = SoxrStream::create(rate, 16000);
    auto b = SoxrStream::create(rate, 16000);
    ASSERT_TRUE(a.ok() && b.ok());
    std::vector<float> whole, pieces;
    ASSERT_TRUE(a->push(x, &whole).ok());
    ASSERT_TRUE(a->finish(&whole).ok());
    std::size_t at = 0, step = 1;
    while (at < x.size()) {
      const std::size_t n = std::min(step, x.size() - at);
      ASSERT_TRUE(b->push(std::span<const float>(x.data() + at, n), &pieces).ok());
      at += n;
      step = step * 3 + 7;
    }
    ASSERT_TRUE(b->finish(&pieces).ok());
    EXPECT_EQ(static_cast<std::int64_t>(whole.size()), resampled_length(static_cast<std::int64_t>(x.size()), rate));
    EXPECT_EQ(whole, pieces) << rate;
  }
}

TEST(SoxrStreamTest, ResamplesAToneToTheSameTone) {
  const double rate = 44100;
  std::vector<float> x(44100);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(0.5 * std::sin(2 * M_PI * 1000.0 * static_cast<double>(i) / rate));
  auto s = SoxrStream::create(rate, 16000);
  ASSERT_TRUE(s.ok());
  std::vector<float> y;
  ASSERT_TRUE(s->push(x, &y).ok());
  ASSERT_TRUE(s->finish(&y).ok());
  ASSERT_EQ(y.size(), 16000u);
  double worst = 0;
  for (std::size_t i = 200; i < 15800; ++i) {
    worst = std::max(worst, std::abs(y[i] - 0.5 * std::sin(2 * M_PI * 1000.0 * static_cast<double>(i) / 16000)));
  }
  EXPECT_LT(worst, 1e-3);  // HQ: ~20-bit passband accuracy, linear phase (no delay)
}

}  // namespace
}  // namespace stoker::audio
