#include "stoker/video/resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "stoker/video/detail/resize_kernels.h"

namespace stoker::video {
namespace {

using detail::AxisWeights;

// PyTorch's antialiased bicubic filter (a = −0.5) as its AVX2 build evaluates it: |x| < 1 in
// double, 1 ≤ |x| < 2 in float with the polynomial's multiply-adds fused, times a in double.
float cubic_aa(float x) {
  const double a = -0.5;
  if (x < 0) x = -x;
  if (x < 1.0f) {
    double xd = x;
    return static_cast<float>(std::fma(std::fma(a + 2.0, xd, -(a + 3.0)) * xd, xd, 1.0));
  }
  if (x < 2.0f) {
    float t = std::fma(std::fma(x - 5.0f, x, 8.0f), x, -4.0f);
    return static_cast<float>(t * a);
  }
  return 0.0f;
}

// torch's _compute_weights_aa with scalar_t = float (interp_size 4): the mixed float/double
// arithmetic of the C++ expressions is spelled out.
std::shared_ptr<const AxisWeights> compute_weights(int in, int out) {
  auto w = std::make_shared<AxisWeights>();
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const float support = scale >= 1.0f ? static_cast<float>(2.0 * scale) : 2.0f;
  w->taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  w->first.resize(static_cast<std::size_t>(out));
  w->count.resize(static_cast<std::size_t>(out));
  w->weights.assign(static_cast<std::size_t>(out) * w->taps, 0.0f);
  const float invscale = scale >= 1.0f ? static_cast<float>(1.0 / scale) : 1.0f;
  for (int i = 0; i < out; ++i) {
    const float center = static_cast<float>(scale * (i + 0.5));
    std::int64_t xmin = std::max<std::int64_t>(static_cast<std::int64_t>(center - support + 0.5), 0);
    std::int64_t xsize =
        std::min<std::int64_t>(static_cast<std::int64_t>(center + support + 0.5), in) - xmin;
    float* wp = w->weights.data() + static_cast<std::size_t>(i) * w->taps;
    float total = 0.0f;
    for (std::int64_t j = 0; j < xsize; ++j) {
      float arg = static_cast<float>((static_cast<float>(j + xmin) - center + 0.5) * invscale);
      float v = cubic_aa(arg);
      wp[j] = v;
      total += v;
    }
    for (std::int64_t j = 0; j < xsize; ++j) {
      if (total != 0.0f) wp[j] /= total;
    }
    w->first[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(xmin);
    w->count[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(std::max<std::int64_t>(xsize, 1));
  }
  return w;
}

std::shared_ptr<const AxisWeights> weights(int in, int out) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, std::shared_ptr<const AxisWeights>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(in, out);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= 64) cache.clear();
  auto w = compute_weights(in, out);
  cache.emplace(key, w);
  return w;
}

bool has_fma() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

}  // namespace

void resize_bicubic_torch(const std::uint8_t* src, int w, int h, std::size_t stride, int ow,
                          int oh, std::uint8_t* dst, ResizeScratch* scratch) {
  if (ow == w && oh == h) {
    for (int y = 0; y < h; ++y) {
      std::memcpy(dst + static_cast<std::size_t>(y) * w * 3, src + static_cast<std::size_t>(y) * stride,
                  static_cast<std::size_t>(w) * 3);
    }
    return;
  }
  auto wx = weights(w, ow);
  auto wy = weights(h, oh);
  ResizeScratch local;
  if (!scratch) scratch = &local;
  scratch->rows.resize(static_cast<std::size_t>(h) * ow * 3);
  // A dimension whose size does not change is an exact identity in torch too (weights 0,1,0,0).
  const bool fma = has_fma();
  if (fma) {
    detail::horizontal_fma(src, h, stride, *wx, ow, scratch->rows.data());
    detail::vertical_fma(scratch->rows.data(), ow, *wy, oh, dst);
  } else {
    detail::horizontal_portable(src, h, stride, *wx, ow, scratch->rows.data());
    detail::vertical_portable(scratch->rows.data(), ow, *wy, oh, dst);
  }
}

}  // namespace stoker::video
