#include "stoker/image/processor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <tuple>

#include "stoker/image/detail/exif_testing.h"
#include "stoker/image/detail/patch_order_testing.h"
#include "stoker/image/encode.h"
#include "stoker/image/resample.h"

namespace stoker::image {
namespace {

ImageProcessorConfig qwen25() {
  return {.min_pixels = 3136, .max_pixels = 12845056};
}

ImageProcessorConfig qwen3() {
  return {.patch_size = 16, .min_pixels = 65536, .max_pixels = 16777216,
          .image_mean = {0.5f, 0.5f, 0.5f}, .image_std = {0.5f, 0.5f, 0.5f}};
}

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

TEST(ProcessorTest, ValidateRejectsBadConfigs) {
  EXPECT_TRUE(qwen25().validate().ok());
  ImageProcessorConfig c = qwen25();
  c.patch_size = 0;
  EXPECT_FALSE(c.validate().ok());
  c = qwen25();
  c.max_pixels = c.min_pixels - 1;
  EXPECT_FALSE(c.validate().ok());
  c = qwen25();
  c.image_std[1] = 0.0f;
  EXPECT_EQ(c.validate().error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(ImageProcessor::create(c).ok());
}

TEST(ProcessorTest, PlanFollowsSpecWorkedExample) {
  // spec §1.1: 1024×768 → Qwen2.5 756×1036, grid 54×74, 3996 patches, 999 tokens;
  // Qwen3 768×1024, grid 48×64, 3072 patches, 768 tokens.
  ImageHeader h{.width = 1024, .height = 768, .mode = "RGB"};
  auto p25 = ImageProcessor::create(qwen25())->plan(h);
  ASSERT_TRUE(p25.ok());
  EXPECT_EQ(p25->height, 756);
  EXPECT_EQ(p25->width, 1036);
  EXPECT_EQ(p25->grid_h, 54);
  EXPECT_EQ(p25->grid_w, 74);
  EXPECT_EQ(p25->rows(), 3996);
  EXPECT_EQ(p25->tokens(2), 999);
  auto proc3 = ImageProcessor::create(qwen3());
  EXPECT_EQ(proc3->columns(), 1536);
  EXPECT_EQ(ImageProcessor::create(qwen25())->columns(), 1176);
  auto p3 = proc3->plan(h);
  EXPECT_EQ(p3->grid_h, 48);
  EXPECT_EQ(p3->grid_w, 64);
  EXPECT_EQ(p3->rows(), 3072);
  EXPECT_EQ(p3->tokens(2), 768);
}

TEST(ProcessorTest, PlanWithoutResizeNeedsMultiplesOfTheFactor) {
  ImageProcessorConfig c = qwen25();
  c.do_resize = false;
  auto proc = ImageProcessor::create(c);
  EXPECT_EQ(proc->plan(ImageHeader{.width = 100, .height = 56}).error().code(),
            ErrorCode::kInvalidArgument);
  auto p = proc->plan(ImageHeader{.width = 112, .height = 56});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->grid_w, 8);
  EXPECT_EQ(p->grid_h, 4);
}

TEST(ProcessorTest, PatchOrderIsTheClosedForm) {
  // With rescale and normalise off, each output value is the source byte: check every element
  // against spec §1.5's closed form.
  for (int P : {14, 4}) {
    ImageProcessorConfig c = qwen25();
    c.patch_size = P;
    c.do_rescale = false;
    c.do_normalize = false;
    auto proc = ImageProcessor::create(c);
    ASSERT_TRUE(proc.ok());
    const int m = 2, T = 2, gh = 6, gw = 4;
    const RgbImage img = make_image(gw * P, gh * P);
    ImagePlan plan{.src_width = img.width, .src_height = img.height, .width = img.width,
                   .height = img.height, .grid_t = 1, .grid_h = gh, .grid_w = gw};
    const int64_t cols = proc->columns();
    std::vector<float> out(plan.rows() * cols, -1.0f);
    proc->normalize_patchify(img, plan, PixelDType::kFloat32, out.data());
    detail::for_each_patch_element(P, T, m, gh, gw, [&](int64_t r, int64_t k, int y, int x, int ch) {
      EXPECT_EQ(out[r * cols + k], float(img.row(y)[3 * x + ch]))
          << "P " << P << " row " << r << " col " << k;
      return out[r * cols + k] == float(img.row(y)[3 * x + ch]);  // stop at the first mismatch
    });
  }
}

TEST(ProcessorTest, NormalisationMatchesNumpyFloat32) {
  // numpy: ((x.astype(float64) * (1/255)).astype(float32) - mean_f32) / std_f32 with CLIP
  // mean/std, printed by numpy 1.24 as float32 hex.
  const float expected[4][3] = {
      {-0x1.cad1b8p+0f, -0x1.c08970p+0f, -0x1.7aefb0p+0f},  // x = 0
      {-0x1.c714fep+0f, -0x1.bcb1e2p+0f, -0x1.774bc2p+0f},  // x = 1
      {0x1.38ac40p-4f, 0x1.59e6d6p-3f, 0x1.5c1b88p-2f},     // x = 128
      {0x1.ee2a82p+0f, 0x1.0995cap+1f, 0x1.12acc0p+1f},     // x = 255
  };
  const std::uint8_t xs[4] = {0, 1, 128, 255};
  auto proc = ImageProcessor::create(qwen25());
  ASSERT_TRUE(proc.ok());
  // A 28×28 image: one merge block; pixel (0,0) is at row 0, columns c·2·196.
  for (int i = 0; i < 4; ++i) {
    RgbImage img = make_image(28, 28);
    for (int c = 0; c < 3; ++c) img.row(0)[c] = xs[i];
    ImagePlan plan{.src_width = 28, .src_height = 28, .width = 28, .height = 28, .grid_t = 1,
                   .grid_h = 2, .grid_w = 2};
    std::vector<float> out(plan.rows() * proc->columns());
    proc->normalize_patchify(img, plan, PixelDType::kFloat32, out.data());
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(out[c * 2 * 196], expected[i][c]) << "x " << int(xs[i]) << " c " << c;
      EXPECT_EQ(out[c * 2 * 196 + 196], expected[i][c]);  // second temporal copy
    }
  }
}

TEST(ProcessorTest, BFloat16RoundsToNearestEven) {
  ImageProcessorConfig c = qwen25();
  c.do_rescale = false;
  c.do_normalize = true;
  // Pixel 0 with mean −v and std 1 yields exactly v, so hand-picked float32 bit patterns reach
  // the conversion.
  struct Case {
    float value;
    std::uint16_t bf16;
  } cases[] = {
      {1.0f, 0x3F80},          // exact
      {1.00390625f, 0x3F80},   // 0x3F808000: tie, even neighbour is 0x3F80
      {1.01171875f, 0x3F82},   // 0x3F818000: tie, odd 0x3F81 rounds up
      {0x1.010002p+0f, 0x3F81},  // 0x3F808001: just above the tie
      {-2.0f, 0xC000},
  };
  for (const Case& k : cases) {
    c.image_mean = {-k.value, -k.value, -k.value};  // x = 0 → (0 − (−v)) / 1 = v
    c.image_std = {1.0f, 1.0f, 1.0f};
    auto proc = ImageProcessor::create(c);
    ASSERT_TRUE(proc.ok());
    RgbImage img = make_image(28, 28);
    std::fill(img.pixels.begin(), img.pixels.end(), 0);
    ImagePlan plan{.src_width = 28, .src_height = 28, .width = 28, .height = 28, .grid_t = 1,
                   .grid_h = 2, .grid_w = 2};
    std::vector<std::uint16_t> out(plan.rows() * proc->columns());
    proc->normalize_patchify(img, plan, PixelDType::kBFloat16, out.data());
    EXPECT_EQ(out[0], k.bf16) << k.value;
    EXPECT_EQ(out.back(), k.bf16);
  }
}

TEST(ProcessorTest, ProcessEqualsDecodeResizePatchify) {
  const RgbImage src = make_image(300, 170);
  auto bytes = encode_png(src, {});
  ASSERT_TRUE(bytes.ok());
  for (const ImageProcessorConfig& cfg : {qwen25(), qwen3()}) {
    auto proc = ImageProcessor::create(cfg);
    auto plan = proc->plan(*bytes);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->src_width, 300);
    std::vector<float> out(plan->rows() * proc->columns());
    ImageScratch scratch;
    RgbImage resized;
    ASSERT_TRUE(proc->process(*bytes, *plan, PixelDType::kFloat32, out.data(), &scratch, &resized)
                    .ok());
    RgbImage expect_resized;
    resize_bicubic_exact(src, plan->width, plan->height, &expect_resized);
    EXPECT_EQ(resized.pixels, expect_resized.pixels);
    std::vector<float> expect(out.size());
    proc->normalize_patchify(expect_resized, *plan, PixelDType::kFloat32, expect.data());
    EXPECT_EQ(0, std::memcmp(out.data(), expect.data(), out.size() * sizeof(float)));
    // Without scratch, same result.
    std::vector<float> again(out.size());
    ASSERT_TRUE(proc->process(*bytes, *plan, PixelDType::kFloat32, again.data(), nullptr).ok());
    EXPECT_EQ(0, std::memcmp(out.data(), again.data(), out.size() * sizeof(float)));
  }
}

// process() streams (decode → ring of resampled rows → one-band ring → patchify); with
// resized_out it takes the whole-image path. Both must give the same bytes for every kind of
// resize: none, horizontal only, vertical only, both up, both down (antialiased, wide windows),
// large upscales of tiny images (min_pixels), extreme aspect ratios; f32 and bf16.
TEST(ProcessorTest, StreamingPathEqualsWholeImagePathForEveryResizeKind) {
  ImageProcessorConfig small_max = qwen25();
  small_max.max_pixels = 60000;  // forces ~2–4× downscales
  const struct {
    int w, h;
    ImageProcessorConfig cfg;
  } cases[] = {{280, 196, qwen25()},  {300, 196, qwen25()}, {280, 170, qwen25()},
               {333, 177, qwen25()},  {30, 40, qwen25()},   {900, 700, small_max},
               {1000, 30, qwen25()},  {29, 900, qwen25()},  {320, 256, qwen3()},
               {1920, 1080, qwen3()}, {643, 1001, small_max}};
  for (const auto& c : cases) {
    const RgbImage src = make_image(c.w, c.h);
    auto bytes = encode_png(src, {});
    ASSERT_TRUE(bytes.ok());
    auto proc = ImageProcessor::create(c.cfg);
    auto plan = proc->plan(*bytes);
    ASSERT_TRUE(plan.ok()) << c.w << "x" << c.h;
    for (PixelDType dt : {PixelDType::kFloat32, PixelDType::kBFloat16}) {
      const size_t bytes_out = plan->rows() * proc->columns() * (dt == PixelDType::kFloat32 ? 4 : 2);
      std::vector<std::uint8_t> streamed(bytes_out, 0xAB), whole(bytes_out, 0xCD);
      ImageScratch scratch;
      RgbImage resized;
      ASSERT_TRUE(proc->process(*bytes, *plan, dt, streamed.data(), &scratch).ok());
      ASSERT_TRUE(proc->process(*bytes, *plan, dt, whole.data(), &scratch, &resized).ok());
      EXPECT_TRUE(streamed == whole) << c.w << "x" << c.h << " -> " << plan->width << "x"
                                     << plan->height;
      RgbImage expect;
      resize_bicubic_exact(src, plan->width, plan->height, &expect);
      EXPECT_EQ(resized.pixels, expect.pixels);
    }
  }
}

// The expected bytes come from the building blocks in Pillow's order: decode, transpose
// (apply_orientation, itself checked against mirror/flip/transpose compositions), resize,
// patchify. Pixel parity with Pillow's exif_transpose: tests/python/test_exif_parity.py.
TEST(ProcessorTest, ExifOrientationIsAppliedBeforeResize) {
  const RgbImage src = make_image(90, 50);
  const std::vector<std::uint8_t> files[] = {*encode_jpeg(src, {}), *encode_png(src, {})};
  for (const auto& plain : files) {
    const bool jpeg = plain[0] == 0xFF;
    const RgbImage decoded = *decode_rgb(plain);
    for (const ImageProcessorConfig& cfg : {qwen25(), qwen3()}) {
      auto proc = ImageProcessor::create(cfg);
      for (int o = 1; o <= 8; ++o) {
        const auto app1 = testing::exif_app1_payload(o);  // "Exif\0\0" + TIFF; eXIf holds the TIFF
        const auto bytes = jpeg ? testing::jpeg_with_segments(plain, {{0xE1, app1}})
                                : testing::png_with_chunks(plain, {testing::png_chunk("eXIf",
                                      std::vector<std::uint8_t>(app1.begin() + 6, app1.end()))}, {});
        auto plan = proc->plan(bytes);
        ASSERT_TRUE(plan.ok()) << plan.error().to_string();
        EXPECT_EQ(plan->orientation, o);
        EXPECT_EQ(plan->src_width, o >= 5 ? 50 : 90);
        EXPECT_EQ(plan->decoded_width(), 90);
        RgbImage oriented, expect_resized;
        apply_orientation(o, decoded, &oriented);
        resize_bicubic_exact(oriented, plan->width, plan->height, &expect_resized);
        std::vector<float> expect(plan->rows() * proc->columns()), out(expect.size()), whole(expect.size());
        proc->normalize_patchify(expect_resized, *plan, PixelDType::kFloat32, expect.data());
        ImageScratch scratch;
        RgbImage resized, via_decode;
        ASSERT_TRUE(proc->process(bytes, *plan, PixelDType::kFloat32, out.data(), &scratch).ok());
        ASSERT_TRUE(proc->process(bytes, *plan, PixelDType::kFloat32, whole.data(), &scratch, &resized).ok());
        EXPECT_EQ(out, expect) << "orientation " << o << (jpeg ? " JPEG" : " PNG");
        EXPECT_EQ(whole, expect);
        EXPECT_EQ(resized.pixels, expect_resized.pixels);
        ASSERT_TRUE(proc->decode(bytes, *plan, &via_decode).ok());
        EXPECT_EQ(via_decode.pixels, oriented.pixels);
        EXPECT_EQ(via_decode.width, plan->src_width);
      }
      // Orientation off: the stored pixels, as Image.open gives them.
      ImageProcessorConfig off = cfg;
      off.apply_exif_orientation = false;
      auto plan_off = ImageProcessor::create(off)->plan(
          testing::jpeg_with_segments(*encode_jpeg(src, {}), {{0xE1, testing::exif_app1_payload(6)}}));
      ASSERT_TRUE(plan_off.ok());
      EXPECT_EQ(plan_off->orientation, 1);
      EXPECT_EQ(plan_off->src_width, 90);
    }
  }
}

TEST(ProcessorTest, MalformedExifFailsOnlyWhenOrientationIsApplied) {
  const auto png = testing::png_with_chunks(*encode_png(make_image(60, 40), {}),
                                            {testing::png_chunk("eXIf", testing::bytes_of("not tiff"))}, {});
  auto on = ImageProcessor::create(qwen25())->plan(png);
  ASSERT_FALSE(on.ok());
  EXPECT_EQ(on.error().code(), ErrorCode::kDataLoss);
  EXPECT_NE(on.error().message().find("EXIF"), std::string::npos);
  ImageProcessorConfig off = qwen25();
  off.apply_exif_orientation = false;
  EXPECT_TRUE(ImageProcessor::create(off)->plan(png).ok());
}

TEST(ProcessorTest, SmallImagesFollowTheConfiguredRules) {
  // H 9 × W 13 → grid [1, 4, 6] (Qwen2.5) and [1, 14, 20] (Qwen3), spec §1.1 step 2.
  const RgbImage src = make_image(13, 9);
  auto bytes = encode_png(src, {});
  for (const auto& [cfg, gh, gw] : {std::tuple{qwen25(), 4, 6}, std::tuple{qwen3(), 14, 20}}) {
    auto proc = ImageProcessor::create(cfg);
    auto plan = proc->plan(*bytes);
    ASSERT_TRUE(plan.ok()) << plan.error().to_string();
    EXPECT_EQ(plan->grid_h, gh);
    EXPECT_EQ(plan->grid_w, gw);
    std::vector<float> out(plan->rows() * proc->columns()), expect(out.size());
    ASSERT_TRUE(proc->process(*bytes, *plan, PixelDType::kFloat32, out.data(), nullptr).ok());
    RgbImage resized;
    resize_bicubic_exact(src, plan->width, plan->height, &resized);
    proc->normalize_patchify(resized, *plan, PixelDType::kFloat32, expect.data());
    EXPECT_EQ(out, expect);
    ImageProcessorConfig legacy = cfg;
    legacy.resize_rules = SmartResizeRules::kRefuseBelowFactor;
    EXPECT_EQ(ImageProcessor::create(legacy)->plan(*bytes).error().code(), ErrorCode::kInvalidArgument);
  }
}

TEST(ProcessorTest, ConcurrentCallsGiveIdenticalOutput) {
  // One processor shared by threads, each with its own scratch (per-thread TurboJPEG handles and
  // resampler buffers underneath).
  auto proc = ImageProcessor::create(qwen25());
  const std::vector<std::vector<std::uint8_t>> files = {*encode_jpeg(make_image(330, 190), {}),
                                                        *encode_png(make_image(200, 300), {})};
  std::vector<ImagePlan> plans;
  std::vector<std::vector<float>> expected;
  for (const auto& f : files) {
    plans.push_back(*proc->plan(f));
    expected.emplace_back(plans.back().rows() * proc->columns());
    const Status st =
        proc->process(f, plans.back(), PixelDType::kFloat32, expected.back().data(), nullptr);
    ASSERT_TRUE(st.ok()) << st.error().to_string();
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ImageScratch scratch;
      for (int i = 0; i < 10; ++i) {
        const size_t k = (t + i) % files.size();
        std::vector<float> out(expected[k].size());
        if (!proc->process(files[k], plans[k], PixelDType::kFloat32, out.data(), &scratch).ok() ||
            out != expected[k]) {
          ++mismatches[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST(ProcessorTest, ProcessErrors) {
  auto proc = ImageProcessor::create(qwen25());
  const std::vector<std::uint8_t> junk(64, 7);
  EXPECT_EQ(proc->plan(junk).error().code(), ErrorCode::kDataLoss);
  auto bytes = encode_png(make_image(60, 60), {});
  auto plan = proc->plan(*bytes);
  ASSERT_TRUE(plan.ok());
  std::vector<float> out(plan->rows() * proc->columns());
  EXPECT_EQ(proc->process(junk, *plan, PixelDType::kFloat32, out.data(), nullptr).error().code(),
            ErrorCode::kDataLoss);
  ImagePlan bad = *plan;
  bad.grid_w += 1;
  EXPECT_EQ(proc->process(*bytes, bad, PixelDType::kFloat32, out.data(), nullptr).error().code(),
            ErrorCode::kInvalidArgument);
  // A plan made for another image's size.
  ImagePlan other = *plan;
  other.src_width = 61;
  EXPECT_FALSE(proc->process(*bytes, other, PixelDType::kFloat32, out.data(), nullptr).ok());
  // Pixel limit applies at plan time.
  ImageProcessorConfig tight = qwen25();
  tight.limits.max_pixels = 100;
  EXPECT_EQ(ImageProcessor::create(tight)->plan(*bytes).error().code(),
            ErrorCode::kResourceExhausted);
}

}  // namespace
}  // namespace stoker::image
