// The catalogue of encoded image variants synth writes (container × colour mode × coding
// options), and the one function that encodes an RGB image as a variant through image/encode.h —
// the same libraries the decoders read. `mode` is what Pillow 9.4 reports after Image.open, so
// tests can compare a decoder's probe with the independent reference.
// Immutable tables; thread-safe. Errors: those of the encoders.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/image/decode.h"
#include "stoker/synth/rng.h"

namespace stoker::synth {

enum class Variant {
  kJpeg420, kJpeg444, kJpegProgressive420, kJpegProgressive444, kJpegGray, kJpegCmyk,
  kPngRgb, kPngRgb16, kPngRgba, kPngGray, kPngGray16, kPngGray1, kPngGray2, kPngGray4,
  kPngGrayAlpha, kPngPalette, kPngPalette1, kPngPalette2, kPngPalette4,
  kWebpLossy, kWebpLossless, kWebpLossyAlpha, kWebpLosslessAlpha,
};

struct VariantInfo {
  Variant variant;
  std::string_view name;       // "jpeg-progressive-444", "png-palette-4bit", ...
  std::string_view extension;  // "jpg", "png", "webp"
  image::ImageFormat format;
  std::string_view mode;       // Pillow 9.4's Image.mode for the file
  int bit_depth;               // PNG sample depth; 8 otherwise
  bool progressive;
  double weight;               // relative frequency in a default dataset
  int max_side;                // larger sizes are scaled down (encode time / realism)
};

std::span<const VariantInfo> all_variants();
const VariantInfo& variant_info(Variant v);
// A variant by its name, or by the images-only aliases "jpeg", "jpeg-progressive", "jpeg444",
// "png", "webp". Errors: InvalidArgument listing the accepted names.
Result<Variant> parse_variant(std::string_view name);

// Encodes `rgb` as `variant`; alpha planes and JPEG quality come from `rng`.
Result<std::vector<std::uint8_t>> encode_variant(Variant variant, const image::RgbImage& rgb, Rng& rng);

}  // namespace stoker::synth
