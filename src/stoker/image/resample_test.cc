// Exact bicubic tests: tiny goldens produced by Pillow 9.4 `Image.resize(size, BICUBIC)`, and a
// plain two-pass reference written from the algorithm's description (README.md "Resampling")
// that the optimised paths (padded fixed-tap SIMD kernels, generic loops, fused row blocks)
// must equal byte for byte on many sizes. The pytest suite compares with Pillow at scale.
#include "stoker/image/resample.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

#include <hwy/targets.h>

namespace stoker::image {
namespace {

// The 4×3 source used for the Pillow goldens: pixel (x, y, c) = (37x + 91y + 53c) mod 256.
RgbImage golden_source() {
  RgbImage im;
  im.width = 4;
  im.height = 3;
  im.pixels.resize(4 * 3 * 3);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x)
      for (int c = 0; c < 3; ++c) im.row(y)[3 * x + c] = (x * 37 + y * 91 + c * 53) % 256;
  return im;
}

TEST(ResampleTest, MatchesPillowGoldens) {
  const RgbImage src = golden_source();
  struct Case {
    int w, h;
    std::vector<std::uint8_t> expected;
  };
  const Case cases[] = {
      {7, 5, {0,   43,  96,  3,   56,  108, 27,  80,  133, 49,  102, 165, 70,  123, 196, 94,
              147, 220, 107, 160, 232, 27,  77,  142, 37,  94,  159, 61,  126, 182, 90,  149,
              151, 116, 169, 118, 141, 193, 141, 153, 205, 158, 88,  141, 194, 101, 154, 217,
              125, 178, 239, 147, 200, 125, 168, 221, 10,  192, 245, 32,  205, 255, 55,  151,
              217, 91,  171, 167, 108, 193, 83,  131, 127, 87,  99,  63,  118, 67,  82,  142,
              90,  102, 154, 107, 186, 255, 17,  210, 168, 29,  231, 13,  53,  107, 5,   85,
              0,   44,  116, 4,   68,  141, 28,  81,  153}},
      {2, 2, {51, 109, 158, 127, 181, 142, 162, 138, 107, 90, 124, 91}},
      {4, 1, {91, 144, 119, 128, 103, 156, 87, 140, 93, 124, 177, 130}},
  };
  for (const Case& c : cases) {
    RgbImage out;
    resize_bicubic_exact(src, c.w, c.h, &out);
    EXPECT_EQ(out.width, c.w);
    EXPECT_EQ(out.height, c.h);
    EXPECT_EQ(out.pixels, c.expected) << c.w << "x" << c.h;
  }
}

// ---- straightforward reference: Pillow's algorithm, one pixel at a time, full intermediate.

double cubic(double x) {
  const double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

struct Taps {
  std::vector<int> lo, n;
  std::vector<std::vector<int>> k;
};

Taps taps_for(int in, int out) {
  Taps t;
  const double scale = double(in) / out, fs = std::max(scale, 1.0), support = 2.0 * fs;
  for (int i = 0; i < out; ++i) {
    const double center = (i + 0.5) * scale;
    const int lo = std::max(0, int(center - support + 0.5));
    const int hi = std::min(in, int(center + support + 0.5));
    std::vector<double> w;
    double sum = 0;
    for (int x = lo; x < hi; ++x) {
      w.push_back(cubic((x - center + 0.5) * (1.0 / fs)));
      sum += w.back();
    }
    std::vector<int> k;
    for (double v : w) {
      v = sum != 0 ? v / sum : v;
      k.push_back(int(v < 0 ? -0.5 + v * (1 << 22) : 0.5 + v * (1 << 22)));
    }
    t.lo.push_back(lo);
    t.n.push_back(hi - lo);
    t.k.push_back(k);
  }
  return t;
}

std::uint8_t clip(int acc) { return std::uint8_t(std::clamp(acc >> 22, 0, 255)); }

RgbImage reference_resize(const RgbImage& src, int w, int h) {
  if (w == src.width && h == src.height) return src;
  RgbImage tmp = src;
  if (w != src.width) {
    const Taps t = taps_for(src.width, w);
    tmp.width = w;
    tmp.pixels.assign(size_t(w) * src.height * 3, 0);
    for (int y = 0; y < src.height; ++y)
      for (int x = 0; x < w; ++x)
        for (int c = 0; c < 3; ++c) {
          int acc = 1 << 21;
          for (int i = 0; i < t.n[x]; ++i) acc += src.row(y)[3 * (t.lo[x] + i) + c] * t.k[x][i];
          tmp.row(y)[3 * x + c] = clip(acc);
        }
  }
  if (h == src.height) return tmp;
  const Taps t = taps_for(src.height, h);
  RgbImage out;
  out.width = w;
  out.height = h;
  out.pixels.assign(size_t(w) * h * 3, 0);
  for (int y = 0; y < h; ++y)
    for (int i = 0; i < 3 * w; ++i) {
      int acc = 1 << 21;
      for (int j = 0; j < t.n[y]; ++j) acc += tmp.row(t.lo[y] + j)[i] * t.k[y][j];
      out.row(y)[i] = clip(acc);
    }
  return out;
}

RgbImage random_image(int w, int h, std::mt19937* rng) {
  RgbImage im;
  im.width = w;
  im.height = h;
  im.pixels.resize(size_t(w) * h * 3);
  // Mix noise and hard edges so that clipping at 0 and 255 is exercised.
  for (auto& v : im.pixels) v = ((*rng)() % 3 == 0) ? ((*rng)() % 2) * 255 : (*rng)() % 256;
  return im;
}

TEST(ResampleTest, EqualsReferenceOnManySizes) {
  std::mt19937 rng(7);
  const std::pair<std::pair<int, int>, std::pair<int, int>> fixed[] = {
      {{192, 108}, {196, 112}},  // slight upscale: 5-tap kernels
      {{300, 200}, {150, 100}},  // 2× down: 9 taps
      {{300, 200}, {110, 70}},   // 2.7× down: 13 taps
      {{500, 90}, {60, 30}},     // 8× / 3× down: generic horizontal, fixed vertical
      {{3, 2}, {40, 30}},        // source smaller than the kernel: generic paths
      {{57, 9}, {57, 200}},      // vertical only
      {{9, 57}, {200, 57}},      // horizontal only
      {{1, 1}, {5, 3}},
      {{64, 17}, {3, 1}},
      // Tall enough that the ring of resampled rows (2·16 + widest window) wraps many times.
      {{150, 700}, {156, 728}},  // slight upscale, 4 taps
      {{120, 900}, {126, 310}},  // 2.9× down vertically: 13-tap windows
      {{90, 1000}, {90, 140}},   // 7× down vertically: generic windows over the ring
  };
  auto check = [&](int sw, int sh, int dw, int dh) {
    const RgbImage src = random_image(sw, sh, &rng);
    RgbImage out;
    resize_bicubic_exact(src, dw, dh, &out);
    const RgbImage ref = reference_resize(src, dw, dh);
    ASSERT_EQ(out.pixels, ref.pixels) << sw << "x" << sh << " -> " << dw << "x" << dh;
  };
  for (const auto& [s, d] : fixed) check(s.first, s.second, d.first, d.second);
  for (int i = 0; i < 40; ++i) {
    check(1 + rng() % 120, 1 + rng() % 120, 1 + rng() % 160, 1 + rng() % 160);
  }
}

TEST(ResampleTest, EverySimdTargetGivesTheSameBytes) {
  // Highway dispatches at run time; force each compiled-and-supported target (e.g. AVX-512,
  // AVX2, SSE4, scalar) in turn so all of them are checked on this machine.
  std::mt19937 rng(11);
  const RgbImage src = random_image(150, 97, &rng);
  const int sizes[][2] = {{157, 101}, {75, 48}, {60, 40}, {50, 33}, {57, 200}};
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (const auto& sz : sizes) {
      RgbImage out;
      resize_bicubic_exact(src, sz[0], sz[1], &out);
      ASSERT_EQ(out.pixels, reference_resize(src, sz[0], sz[1]).pixels)
          << hwy::TargetName(target) << " " << sz[0] << "x" << sz[1];
    }
  }
  hwy::SetSupportedTargetsForTest(0);  // back to the real CPU
}

TEST(ResampleTest, RowsReadyReportsFinalRowsInOrder) {
  std::mt19937 rng(5);
  const RgbImage src = random_image(90, 70, &rng);
  for (const auto& sz : {std::pair{95, 73}, std::pair{40, 30}, std::pair{90, 150},
                         std::pair{200, 70}, std::pair{90, 70}}) {
    RgbImage out;
    std::vector<std::uint8_t> seen;  // rows copied at the moment they were reported ready
    int last = 0;
    bool monotonic = true;
    resize_bicubic_exact(src, sz.first, sz.second, &out, [&](int rows) {
      monotonic = monotonic && rows >= last && rows <= sz.second;
      seen.insert(seen.end(), out.row(0) + size_t(last) * 3 * sz.first,
                  out.row(0) + size_t(rows) * 3 * sz.first);
      last = rows;
    });
    EXPECT_TRUE(monotonic);
    EXPECT_EQ(last, sz.second);
    EXPECT_EQ(seen, reference_resize(src, sz.first, sz.second).pixels)
        << sz.first << "x" << sz.second;
  }
}

TEST(ResampleTest, SameSizeIsACopyAndConstantsStayConstant) {
  std::mt19937 rng(1);
  const RgbImage src = random_image(33, 21, &rng);
  RgbImage out;
  resize_bicubic_exact(src, 33, 21, &out);
  EXPECT_EQ(out.pixels, src.pixels);
  // Fixed-point weights sum to 2^22 within rounding, far below the 2^21 bias: flat stays flat.
  for (std::uint8_t v : {0, 1, 128, 254, 255}) {
    RgbImage flat;
    flat.width = 50;
    flat.height = 40;
    flat.pixels.assign(50 * 40 * 3, v);
    resize_bicubic_exact(flat, 77, 13, &out);
    for (std::uint8_t o : out.pixels) ASSERT_EQ(o, v);
  }
}

TEST(ResampleTest, ThreadsShareTheCoefficientCache) {
  std::mt19937 rng(3);
  const RgbImage src = random_image(140, 90, &rng);
  const int sizes[][2] = {{150, 100}, {70, 45}, {141, 91}, {28, 56}};
  std::vector<RgbImage> expected;
  for (const auto& s : sizes) expected.push_back(reference_resize(src, s[0], s[1]));
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      RgbImage out;
      for (int i = 0; i < 20; ++i) {
        const int k = (t + i) % 4;
        resize_bicubic_exact(src, sizes[k][0], sizes[k][1], &out);
        if (out.pixels != expected[k].pixels) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

}  // namespace
}  // namespace stoker::image

namespace stoker::image {
namespace {

// The streaming form reads the source in order, block by block, stops at the first failed read
// (returning that error), and writes each output row once, in order, through the sink.
TEST(ResampleStreamTest, ReadsInOrderAndStopsAtTheFirstFailedRead) {
  std::mt19937 rng(5);
  const RgbImage src = random_image(97, 61, &rng);
  RgbImage expect;
  resize_bicubic_exact(src, 130, 40, &expect);
  RgbImage got{130, 40, std::vector<std::uint8_t>(130 * 40 * 3)};
  int next = 0, last_sink = -1, reads = 0;
  Status ok = resize_bicubic_exact_stream(
      97, 61,
      [&](int n, const std::uint8_t** rows) {
        EXPECT_LE(n, 16);
        for (int r = 0; r < n; ++r) rows[r] = src.row(next + r);
        next += n;
        ++reads;
        return ok_status();
      },
      130, 40,
      [&](int y) {
        EXPECT_EQ(y, last_sink + 1);
        last_sink = y;
        return got.row(y);
      },
      {});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(got.pixels, expect.pixels);
  EXPECT_LE(next, 61);

  next = 0;
  reads = 0;
  Status failed = resize_bicubic_exact_stream(
      97, 61,
      [&](int n, const std::uint8_t** rows) -> Status {
        if (++reads == 3) return data_loss("row source broke");
        for (int r = 0; r < n; ++r) rows[r] = src.row(next + r);
        next += n;
        return ok_status();
      },
      130, 40, [&](int y) { return got.row(y); }, {});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code(), ErrorCode::kDataLoss);
  EXPECT_EQ(reads, 3);
}

}  // namespace
}  // namespace stoker::image
