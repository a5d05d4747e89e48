// Pixels for finishing on the trainer's device (issue 26): a PixelDType::kUInt8 output is the
// resized image itself ([H, W, 3], raster order, written in place by the resize) — checked
// against the whole-image resize (and, for a lossless source, an independent one); value_table()
// is what the float rows hold for each byte, so cutting those pixels into patches by spec §1.5's
// closed form and looking each byte up reproduces process()'s float32 / bf16 rows bit for bit
// (what stoker.finish does in torch; tests/python_api/test_finish.py checks the tables against
// numpy's arithmetic and the whole batch against the CPU path).
#include <gtest/gtest.h>

#include <cstring>

#include "stoker/image/detail/patch_order_testing.h"
#include "stoker/image/encode.h"
#include "stoker/image/processor.h"
#include "stoker/image/resample.h"

namespace stoker::image {
namespace {

ImageProcessorConfig qwen25() { return {.min_pixels = 3136, .max_pixels = 12845056}; }

ImageProcessorConfig qwen3() {
  return {.patch_size = 16, .min_pixels = 65536, .max_pixels = 16777216,
          .image_mean = {0.5f, 0.5f, 0.5f}, .image_std = {0.5f, 0.5f, 0.5f}};
}

// Every byte value in every channel (x·7 + y·13 + c·101 mod 256 covers them all).
RgbImage make_image(int w, int h) {
  RgbImage im;
  im.width = w;
  im.height = h;
  im.pixels.resize(size_t(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) im.row(y)[3 * x + c] = std::uint8_t(x * 7 + y * 13 + c * 101);
  return im;
}

TEST(ProcessorUint8Test, OutputIsTheResizedImage) {
  ImageProcessorConfig small_max = qwen25();
  small_max.max_pixels = 60000;  // a downscale
  const struct {
    int w, h;
    ImageProcessorConfig cfg;
  } cases[] = {{300, 170, qwen25()}, {30, 40, qwen25()}, {900, 700, small_max}, {320, 256, qwen3()}};
  for (const auto& c : cases) {
    const RgbImage src = make_image(c.w, c.h);
    for (bool jpeg : {false, true}) {  // PNG: whole rows; JPEG: the fused streaming path
      auto bytes = jpeg ? encode_jpeg(src, {}) : encode_png(src, {});
      ASSERT_TRUE(bytes.ok());
      auto proc = ImageProcessor::create(c.cfg);
      ASSERT_TRUE(proc.ok());
      auto plan = proc->plan(*bytes);
      ASSERT_TRUE(plan.ok());
      const int P = c.cfg.patch_size;
      const std::int64_t cols = proc->columns(PixelDType::kUInt8);
      ASSERT_EQ(cols, 3 * P * P);
      ASSERT_EQ(plan->rows() * cols, std::int64_t{plan->width} * plan->height * 3);
      std::vector<std::uint8_t> out(plan->rows() * cols + 64, 0xEE);  // 64 guard bytes
      ImageScratch scratch;
      ASSERT_TRUE(proc->process(*bytes, *plan, PixelDType::kUInt8, out.data(), &scratch).ok());
      // The resized image the float path normalises (its whole-image form).
      std::vector<float> f32(plan->rows() * proc->columns());
      RgbImage resized;
      ASSERT_TRUE(proc->process(*bytes, *plan, PixelDType::kFloat32, f32.data(), &scratch, &resized)
                      .ok());
      if (!jpeg) {  // an independent resize for the lossless source
        RgbImage expect;
        resize_bicubic_exact(src, plan->width, plan->height, &expect);
        ASSERT_EQ(resized.pixels, expect.pixels);
      }
      const std::vector<std::uint8_t> got(out.begin(), out.end() - 64);
      EXPECT_TRUE(got == resized.pixels) << c.w << "x" << c.h << " jpeg " << jpeg;
      for (std::size_t i = got.size(); i < out.size(); ++i) ASSERT_EQ(out[i], 0xEE) << "past the end";
      // The wire's form (a resized image finished on a receiver) gives the same bytes.
      std::vector<std::uint8_t> wire(got.size(), 0);
      proc->normalize_patchify(resized, *plan, PixelDType::kUInt8, wire.data());
      EXPECT_TRUE(wire == resized.pixels);
    }
  }
}

// out[r][((c·T + t)·P + y)·P + x] = table[c][pixel (y', x') of the image, channel c] for every
// t, with (r, col) → (y', x') by spec §1.5's closed form: the patching + lookup stoker.finish does,
// here in C++ against process()'s own float32 and bf16 rows.
TEST(ProcessorUint8Test, TableLookupOfThePatchedPixelsGivesTheFloatRowsBitForBit) {
  for (const ImageProcessorConfig& cfg : {qwen25(), qwen3()}) {
    for (int w : {333, 1920}) {
      const RgbImage src = make_image(w, w == 1920 ? 1080 : 177);
      auto bytes = encode_jpeg(src, {});
      ASSERT_TRUE(bytes.ok());
      auto proc = ImageProcessor::create(cfg);
      ASSERT_TRUE(proc.ok());
      auto plan = proc->plan(*bytes);
      ASSERT_TRUE(plan.ok());
      const int P = cfg.patch_size, T = cfg.temporal_patch_size;
      const std::int64_t rows_n = plan->rows(), cols = proc->columns();
      std::vector<std::uint8_t> u8(rows_n * 3 * P * P);
      ASSERT_TRUE(proc->process(*bytes, *plan, PixelDType::kUInt8, u8.data(), nullptr).ok());
      for (PixelDType dt : {PixelDType::kFloat32, PixelDType::kBFloat16}) {
        const int size = dt == PixelDType::kFloat32 ? 4 : 2;
        std::vector<std::uint8_t> want(rows_n * cols * size), table(3 * 256 * size);
        ASSERT_TRUE(proc->process(*bytes, *plan, dt, want.data(), nullptr).ok());
        proc->value_table(dt, table.data());
        std::vector<std::uint8_t> got(want.size(), 0xAB);
        detail::for_each_patch_element(
            P, T, cfg.merge_size, plan->grid_h, plan->grid_w,
            [&](std::int64_t r, std::int64_t k, int y, int x, int ch) {
              const std::uint8_t b = u8[(std::size_t(y) * plan->width + x) * 3 + ch];
              std::memcpy(&got[(r * cols + k) * size], &table[(ch * 256 + b) * size], size);
              return true;
            });
        EXPECT_TRUE(got == want) << "P " << P << " width " << w << " dtype "
                                 << (dt == PixelDType::kFloat32 ? "f32" : "bf16");
      }
    }
  }
}

TEST(ProcessorUint8Test, TableHoldsTheNormalisedValueOfEachByte) {
  // One value checked against the formula by hand (numpy float32, CLIP mean/std): byte 0 of
  // channel 0 is (0 − 0.48145466) / 0.26862954 = -0x1.cad1b8p+0; byte 255 of channel 2 is
  // 0x1.12acc0p+1 (processor_test's NormalisationMatchesNumpyFloat32 has the others).
  auto proc = ImageProcessor::create(qwen25());
  ASSERT_TRUE(proc.ok());
  float t[3 * 256];
  proc->value_table(PixelDType::kFloat32, t);
  EXPECT_EQ(t[0], -0x1.cad1b8p+0f);
  EXPECT_EQ(t[2 * 256 + 255], 0x1.12acc0p+1f);
  for (int c = 0; c < 3; ++c)
    for (int x = 1; x < 256; ++x) EXPECT_LT(t[c * 256 + x - 1], t[c * 256 + x]) << c << " " << x;
  std::uint16_t h[3 * 256];
  proc->value_table(PixelDType::kBFloat16, h);
  for (int i = 0; i < 3 * 256; ++i) {  // round-to-nearest-even of the float32 value
    std::uint32_t u;
    std::memcpy(&u, &t[i], 4);
    EXPECT_EQ(h[i], std::uint16_t((u + 0x7FFF + ((u >> 16) & 1)) >> 16)) << i;
  }
}

}  // namespace
}  // namespace stoker::image
