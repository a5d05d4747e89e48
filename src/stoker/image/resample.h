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

// Streaming form, for a source that arrives row by row (a JPEG being decoded) and a consumer
// that wants rows while they are in cache (normalise + patchify by bands). Nothing image-sized
// is allocated: the horizontally resampled rows live in a ring of 2·16 + (widest window) rows.
//  * source(n, rows): make the next n source rows (top to bottom) available as rows[0..n); they
//    stay valid until the next call. n ≤ 16. A failure is returned as is, nothing more is read.
//  * sink(y): where output row y (dst_w·3 bytes) goes; called once per row, in order.
//  * rows_ready(n): output rows [0, n) are final — called after every output row, so a sink that
//    reuses memory (a ring of bands) may recycle a row's memory once the consumer is told.
// Same bytes as resize_bicubic_exact. Same size → the rows are copied through.
using RowSource = std::function<Status(int n, const std::uint8_t** rows)>;
using RowSink = std::function<std::uint8_t*(int y)>;
Status resize_bicubic_exact_stream(int src_w, int src_h, const RowSource& source, int dst_w,
                                   int dst_h, const RowSink& sink, const RowsReady& rows_ready);

}  // namespace stoker::image
