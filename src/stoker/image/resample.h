// Resampling of 8-bit RGB images.
// resize_bicubic_exact is bit-identical to Pillow 9.4 `Image.resize((w, h), BICUBIC)` on an RGB
// image: separable (horizontal pass over only the rows the vertical pass needs, then vertical),
// antialiased (support scaled by the downscale ratio), a = -0.5, 22-bit fixed-point coefficients,
// uint8 clamped intermediate. Same size in and out → a copy, as Pillow does.
// Coefficients depend only on (source size, target size) and are cached process-wide
// (thread-safe, bounded). Blocking CPU work; no errors beyond invalid sizes (a bug: checked).
#pragma once

#include <functional>

#include "stoker/image/decode.h"

namespace stoker::image {

// dst is resized to dst_w × dst_h (capacity reused).
void resize_bicubic_exact(const RgbImage& src, int dst_w, int dst_h, RgbImage* dst);

// The same, calling rows_ready(n) whenever dst rows [0, n) are final (n grows; the last call has
// n = dst_h), so a consumer can use a band of rows while it is still in cache.
using RowsReady = std::function<void(int rows)>;
void resize_bicubic_exact(const RgbImage& src, int dst_w, int dst_h, RgbImage* dst,
                          const RowsReady& rows_ready);

}  // namespace stoker::image
