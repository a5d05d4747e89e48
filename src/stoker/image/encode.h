// Image encoders, used by `stoker synth` and by tests to make media with the same libraries the
// decoders read (TurboJPEG, libpng, libwebp). Thread-safe. Errors: InvalidArgument (bad options),
// Internal (a codec failure).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/image/decode.h"

namespace stoker::image {

struct JpegOptions {
  int quality = 90;
  bool progressive = false;
  bool subsample_420 = true;  // false: 4:4:4
  bool grayscale = false;     // write a one-component JPEG
  bool cmyk = false;          // write an Adobe CMYK JPEG (pixels converted naively from RGB)
};
Result<std::vector<std::uint8_t>> encode_jpeg(const RgbImage& image, const JpegOptions& options);

enum class PngColor { kRgb, kRgba, kGray, kGrayAlpha, kPalette };
struct PngOptions {
  PngColor color = PngColor::kRgb;
  int bit_depth = 8;  // 8 (16 for kRgb/kGray; 1/2/4 for kGray/kPalette)
  // For kRgba / kGrayAlpha: per-pixel alpha (width*height bytes); empty → a generated ramp.
  std::vector<std::uint8_t> alpha = {};
  bool interlaced = false;    // Adam7
  bool palette_trns = false;  // kPalette: add a tRNS chunk (per-entry alpha)
};
// kPalette quantises to at most 2^bit_depth colours (deterministically).
Result<std::vector<std::uint8_t>> encode_png(const RgbImage& image, const PngOptions& options);

struct WebpOptions {
  bool lossless = false;
  float quality = 85.0f;
  bool with_alpha = false;  // adds a generated alpha ramp
};
Result<std::vector<std::uint8_t>> encode_webp(const RgbImage& image, const WebpOptions& options);

}  // namespace stoker::image
