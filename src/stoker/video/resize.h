// The per-frame resize of qwen-vl-utils' video path: torchvision `transforms.functional.resize(
// uint8 TCHW, [h, w], BICUBIC, antialias=True)`, which (torchvision 0.14 on torch 1.13, and the
// v1 functional API since) converts to float32, runs PyTorch's separable antialiased bicubic
// (a = −0.5, support scaled by the downscale ratio; horizontal pass, then vertical), clamps to
// [0, 255] and rounds half to even back to uint8. Not Pillow's kernel (image/resample.h):
// float32 weights and sums instead of 22-bit fixed point.
// Weights are bit-identical to torch 1.13's AVX2 build (its cubic polynomial is FMA-contracted;
// reproduced with std::fma). Sums are fused multiply-adds in tap order: identical for
// upscaling; for downscaling ~4 % of the float sums differ from torch's by 1 ulp (PyTorch's
// exact summation order in its AVX2 kernel is not reproduced), which after rounding moves
// ~1e-5 of the uint8 values by 1 (max |Δ| = 1; video_parity_test measures it).
// Thread-safe; weights are cached per (source, target) length in a small bounded cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stoker::video {

struct ResizeScratch {
  std::vector<float> rows;  // the horizontally resampled image (float32, H × W' × 3)
};

// src: w × h RGB (stride bytes per row); dst: ow × oh × 3 packed. Same size → a copy.
void resize_bicubic_torch(const std::uint8_t* src, int w, int h, std::size_t stride, int ow,
                          int oh, std::uint8_t* dst, ResizeScratch* scratch);

}  // namespace stoker::video
