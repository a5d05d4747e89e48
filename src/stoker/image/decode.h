// Image decoding: header probe, then decode to 8-bit interleaved RGB with the colour conversions
// Pillow's `Image.convert("RGB")` applies (the HF slow processor's first step): L/LA → replicate,
// P → palette lookup, RGBA/LA → alpha dropped (no compositing), CMYK → Pillow's cmyk2rgb,
// 16-bit → high byte. JPEG via TurboJPEG, PNG via libpng, WebP via libwebp.
// The pixel limit is checked from the header before any large allocation (decompression bombs).
// Thread-safe (no shared state). Errors: InvalidArgument (unsupported format or mode),
// DataLoss (corrupt / truncated / empty), ResourceExhausted (over the pixel limit).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::image {

enum class ImageFormat { kJpeg, kPng, kWebp };
std::string_view format_name(ImageFormat f);

struct ImageHeader {
  ImageFormat format = ImageFormat::kJpeg;
  int width = 0;
  int height = 0;
  // Source colour mode in Pillow's vocabulary: "RGB", "RGBA", "L", "LA", "P", "CMYK", "1", ...
  std::string mode = {};
  bool progressive = false;  // JPEG only
  int bit_depth = 8;         // PNG only
};

struct DecodeLimits {
  // Pillow's hard limit (2 × MAX_IMAGE_PIXELS): a header above it is refused before decoding.
  std::int64_t max_pixels = 178956970;
};

// Interleaved 8-bit RGB, row-major, stride = 3 * width, owned.
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> pixels;

  std::uint8_t* row(int y) { return pixels.data() + static_cast<size_t>(y) * 3 * width; }
  const std::uint8_t* row(int y) const { return pixels.data() + static_cast<size_t>(y) * 3 * width; }
};

// Reads only the header. Errors as decode_rgb for unreadable/unsupported data.
Result<ImageHeader> probe_image(std::span<const std::uint8_t> bytes);

// Probes, checks the limits, and decodes. `out` is reused (its capacity is kept).
Status decode_rgb(std::span<const std::uint8_t> bytes, const DecodeLimits& limits, RgbImage* out);
Result<RgbImage> decode_rgb(std::span<const std::uint8_t> bytes, const DecodeLimits& limits = {});

}  // namespace stoker::image
