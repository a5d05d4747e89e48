// Inner loops of resize_bicubic_torch, compiled twice: with FMA instructions (runtime-detected)
// and portable (std::fma from libm: same results, slower). Not a public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stoker::video::detail {

struct AxisWeights {
  int taps = 0;                       // row length in `weights`
  std::vector<std::int32_t> first;    // first source index per output index
  std::vector<std::int32_t> count;    // taps used per output index
  std::vector<float> weights;         // out × taps
};

// Horizontal: src u8 rows (w × 3 with stride) → tmp float (h × ow × 3).
// Vertical: tmp float (h × ow × 3) → dst u8 (oh × ow × 3), clamp + round half to even.
void horizontal_fma(const std::uint8_t* src, int h, std::size_t stride, const AxisWeights& wx,
                    int ow, float* tmp);
void vertical_fma(const float* tmp, int ow, const AxisWeights& wy, int oh, std::uint8_t* dst);
void horizontal_portable(const std::uint8_t* src, int h, std::size_t stride,
                         const AxisWeights& wx, int ow, float* tmp);
void vertical_portable(const float* tmp, int ow, const AxisWeights& wy, int oh, std::uint8_t* dst);

}  // namespace stoker::video::detail
