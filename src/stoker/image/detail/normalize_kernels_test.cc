// The normalise kernel on every compiled-and-supported Highway target against the scalar formula
// (the former per-channel lookup table), and normalize_patchify end to end per target.
#include "stoker/image/detail/normalize_kernels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include <hwy/targets.h>

#include "stoker/image/detail/patch_order_testing.h"
#include "stoker/image/processor.h"

namespace stoker::image::detail {
namespace {

// The slow processor's arithmetic, one value at a time (what processor.cc used to tabulate).
std::array<std::array<float, 256>, 3> scalar_table(const ImageProcessorConfig& c) {
  std::array<std::array<float, 256>, 3> lut{};
  for (int ch = 0; ch < 3; ++ch)
    for (int x = 0; x < 256; ++x) {
      float v = c.do_rescale ? static_cast<float>(static_cast<double>(x) * c.rescale_factor)
                             : static_cast<float>(x);
      if (c.do_normalize) v = (v - c.image_mean[ch]) / c.image_std[ch];
      lut[ch][x] = v;
    }
  return lut;
}

std::uint16_t scalar_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

std::vector<ImageProcessorConfig> configs() {
  std::vector<ImageProcessorConfig> out;
  out.push_back({.min_pixels = 3136, .max_pixels = 12845056});  // Qwen2/2.5-VL, P = 14
  out.push_back({.patch_size = 16, .min_pixels = 65536, .max_pixels = 16777216,
                 .image_mean = {0.5f, 0.5f, 0.5f}, .image_std = {0.5f, 0.5f, 0.5f}});  // Qwen3-VL
  ImageProcessorConfig odd = out[0];
  odd.patch_size = 5;
  odd.rescale_factor = 1.0 / 3.0;
  odd.image_mean = {-0.1f, 0.3f, 7.0f};
  odd.image_std = {0.3f, 1e-3f, 3.7f};
  out.push_back(odd);
  for (bool rescale : {false, true})
    for (bool normalize : {false, true}) {
      ImageProcessorConfig c = out[0];
      c.do_rescale = rescale;
      c.do_normalize = normalize;
      out.push_back(c);
    }
  return out;
}

NormalizeParams params_of(const ImageProcessorConfig& c) {
  NormalizeParams p;
  p.rescale_factor = c.rescale_factor;
  for (int ch = 0; ch < 3; ++ch) p.mean[ch] = c.image_mean[ch], p.std[ch] = c.image_std[ch];
  p.do_rescale = c.do_rescale;
  p.do_normalize = c.do_normalize;
  return p;
}

TEST(NormalizeKernelTest, EverySimdTargetMatchesTheScalarFormula) {
  std::mt19937 rng(17);
  const int kMax = 700;  // several 256-pixel chunks and ragged tails
  std::vector<std::uint8_t> rgb(3 * (kMax + kNormalizePad));
  for (auto& v : rgb) v = rng() % 256;
  for (int i = 0; i < 256; ++i) rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = i;  // all values
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (const ImageProcessorConfig& c : configs()) {
      const auto lut = scalar_table(c);
      NormalizeParams exact = params_of(c), fast = exact, fast2 = exact;
      fast.fast = verify_fast_normalize(fast);  // this target's FMA kernel, if it checks out
      fast2.fast = fast.fast == 0 ? 0 : 2;      // two corrections are never worse than one
      for (const NormalizeParams& p : {exact, fast, fast2})
      for (int n : {1, 7, 16, 196, 255, 256, 257, kMax}) {
        std::vector<float> f(3 * (n + kNormalizePad));
        std::vector<std::uint16_t> b(3 * (n + kNormalizePad));
        float* fo[3] = {f.data(), f.data() + n + kNormalizePad, f.data() + 2 * (n + kNormalizePad)};
        std::uint16_t* bo[3] = {b.data(), b.data() + n + kNormalizePad,
                                b.data() + 2 * (n + kNormalizePad)};
        normalize_rgb_f32(rgb.data(), n, p, fo);
        normalize_rgb_bf16(rgb.data(), n, p, bo);
        for (int ch = 0; ch < 3; ++ch)
          for (int i = 0; i < n; ++i) {
            const float want = lut[ch][rgb[3 * i + ch]];
            ASSERT_EQ(std::memcmp(&fo[ch][i], &want, 4), 0)
                << hwy::TargetName(target) << " n " << n << " c " << ch << " i " << i;
            ASSERT_EQ(bo[ch][i], scalar_bf16(want)) << hwy::TargetName(target) << " n " << n;
          }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);  // back to the real CPU
}

// The fast form is offered only with rescale and normalise both on, and on this machine's best
// target it verifies for the three Qwen presets' constants (CLIP mean/std; 0.5/0.5).
TEST(NormalizeKernelTest, FastFormIsVerifiedOnlyWhereItApplies) {
  for (const ImageProcessorConfig& c : configs()) {
    const NormalizeParams p = params_of(c);
    if (!c.do_rescale || !c.do_normalize) {
      EXPECT_EQ(verify_fast_normalize(p), 0);
    }
  }
  if (hwy::SupportedTargets() & (HWY_AVX2 | HWY_AVX3)) {  // FMA targets
    // One residual correction suffices for CLIP's mean/std and for 0.5/0.5 (checked offline
    // with exact rational arithmetic too).
    EXPECT_EQ(verify_fast_normalize(params_of(configs()[0])), 1);
    EXPECT_EQ(verify_fast_normalize(params_of(configs()[1])), 1);
  }
}

TEST(NormalizeKernelTest, EverySimdTargetPatchifiesLikeTheScalarReference) {
  std::mt19937 rng(23);
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (const ImageProcessorConfig& c : configs()) {
      auto proc = ImageProcessor::create(c);
      ASSERT_TRUE(proc.ok());
      const auto lut = scalar_table(c);
      const int P = c.patch_size, m = c.merge_size, T = c.temporal_patch_size;
      const int gh = 2 * m, gw = 3 * m;
      RgbImage img;
      img.width = gw * P;
      img.height = gh * P;
      img.pixels.resize(size_t(img.width) * img.height * 3);
      for (auto& v : img.pixels) v = rng() % 256;
      ImagePlan plan{.src_width = img.width, .src_height = img.height, .width = img.width,
                     .height = img.height, .grid_t = 1, .grid_h = gh, .grid_w = gw};
      const int64_t cols = proc->columns();
      std::vector<float> f(plan.rows() * cols);
      std::vector<std::uint16_t> b(plan.rows() * cols);
      proc->normalize_patchify(img, plan, PixelDType::kFloat32, f.data());
      proc->normalize_patchify(img, plan, PixelDType::kBFloat16, b.data());
      for_each_patch_element(P, T, m, gh, gw, [&](int64_t r, int64_t k, int y, int x, int ch) {
        const float want = lut[ch][img.row(y)[3 * x + ch]];
        const bool f_ok = std::memcmp(&f[r * cols + k], &want, 4) == 0;
        const bool b_ok = b[r * cols + k] == scalar_bf16(want);
        EXPECT_TRUE(f_ok) << hwy::TargetName(target) << " P " << P << " row " << r << " col " << k;
        EXPECT_TRUE(b_ok) << hwy::TargetName(target) << " P " << P << " row " << r << " col " << k;
        return f_ok && b_ok;  // stop at the first mismatch
      });
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace
}  // namespace stoker::image::detail
