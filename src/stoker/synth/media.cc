#include "stoker/synth/media.h"

#include "stoker/image/encode.h"
#include "stoker/synth/pattern.h"

namespace stoker::synth {
namespace {

using image::ImageFormat;
constexpr ImageFormat J = ImageFormat::kJpeg, P = ImageFormat::kPng, W = ImageFormat::kWebp;
constexpr int kAny = 1 << 20;

// Order must follow the Variant enum.
constexpr VariantInfo kVariants[] = {
    {Variant::kJpeg420, "jpeg-420", "jpg", J, "RGB", 8, false, 20, kAny},
    {Variant::kJpeg444, "jpeg-444", "jpg", J, "RGB", 8, false, 6, kAny},
    {Variant::kJpegProgressive420, "jpeg-progressive-420", "jpg", J, "RGB", 8, true, 6, kAny},
    {Variant::kJpegProgressive444, "jpeg-progressive-444", "jpg", J, "RGB", 8, true, 3, kAny},
    {Variant::kJpegGray, "jpeg-gray", "jpg", J, "L", 8, false, 3, kAny},
    {Variant::kJpegCmyk, "jpeg-cmyk", "jpg", J, "CMYK", 8, false, 1.5, 2048},
    {Variant::kPngRgb, "png-rgb", "png", P, "RGB", 8, false, 8, 2048},
    {Variant::kPngRgb16, "png-rgb-16bit", "png", P, "RGB", 16, false, 1, 1024},
    {Variant::kPngRgba, "png-rgba", "png", P, "RGBA", 8, false, 4, 2048},
    {Variant::kPngGray, "png-gray", "png", P, "L", 8, false, 2, 2048},
    // Pillow opens 16-bit grey as mode "I" and convert("RGB") clips it at 255 (not >> 8).
    {Variant::kPngGray16, "png-gray-16bit", "png", P, "I", 16, false, 0.7, 1024},
    {Variant::kPngGray1, "png-gray-1bit", "png", P, "1", 1, false, 1, 2048},
    {Variant::kPngGray2, "png-gray-2bit", "png", P, "L", 2, false, 0.5, 2048},
    {Variant::kPngGray4, "png-gray-4bit", "png", P, "L", 4, false, 0.5, 2048},
    {Variant::kPngGrayAlpha, "png-gray-alpha", "png", P, "LA", 8, false, 1.5, 2048},
    {Variant::kPngPalette, "png-palette", "png", P, "P", 8, false, 3, 2048},
    {Variant::kPngPalette1, "png-palette-1bit", "png", P, "P", 1, false, 0.5, 2048},
    {Variant::kPngPalette2, "png-palette-2bit", "png", P, "P", 2, false, 0.5, 2048},
    {Variant::kPngPalette4, "png-palette-4bit", "png", P, "P", 4, false, 1, 2048},
    {Variant::kWebpLossy, "webp-lossy", "webp", W, "RGB", 8, false, 6, 2048},
    {Variant::kWebpLossless, "webp-lossless", "webp", W, "RGB", 8, false, 2, 1280},
    {Variant::kWebpLossyAlpha, "webp-lossy-alpha", "webp", W, "RGBA", 8, false, 2, 2048},
    {Variant::kWebpLosslessAlpha, "webp-lossless-alpha", "webp", W, "RGBA", 8, false, 1.5, 1280},
};

struct Alias {
  std::string_view name;
  Variant variant;
};
constexpr Alias kAliases[] = {
    {"jpeg", Variant::kJpeg420}, {"jpg", Variant::kJpeg420},
    {"jpeg-progressive", Variant::kJpegProgressive420}, {"jpeg444", Variant::kJpeg444},
    {"png", Variant::kPngRgb}, {"webp", Variant::kWebpLossy},
};

}  // namespace

std::span<const VariantInfo> all_variants() { return kVariants; }

const VariantInfo& variant_info(Variant v) { return kVariants[static_cast<int>(v)]; }

Result<Variant> parse_variant(std::string_view name) {
  for (const Alias& a : kAliases)
    if (a.name == name) return a.variant;
  for (const VariantInfo& v : kVariants)
    if (v.name == name) return v.variant;
  std::string known;
  for (const Alias& a : kAliases) known += std::string(a.name) + ", ";
  for (const VariantInfo& v : kVariants) known += std::string(v.name) + ", ";
  known.resize(known.size() - 2);
  return invalid_argument("unknown image format '" + std::string(name) + "' (one of: " + known + ")");
}

Result<std::vector<std::uint8_t>> encode_variant(Variant variant, const image::RgbImage& rgb, Rng& rng) {
  const VariantInfo& info = variant_info(variant);
  switch (info.format) {
    case ImageFormat::kJpeg: {
      image::JpegOptions o;
      o.quality = rng.range(60, 97);
      o.progressive = info.progressive;
      o.subsample_420 = variant != Variant::kJpeg444 && variant != Variant::kJpegProgressive444;
      o.grayscale = variant == Variant::kJpegGray;
      o.cmyk = variant == Variant::kJpegCmyk;
      return image::encode_jpeg(rgb, o);
    }
    case ImageFormat::kPng: {
      image::PngOptions o;
      o.bit_depth = info.bit_depth;
      switch (variant) {
        case Variant::kPngRgba: o.color = image::PngColor::kRgba; break;
        case Variant::kPngGrayAlpha: o.color = image::PngColor::kGrayAlpha; break;
        case Variant::kPngGray: case Variant::kPngGray16: case Variant::kPngGray1:
        case Variant::kPngGray2: case Variant::kPngGray4: o.color = image::PngColor::kGray; break;
        case Variant::kPngPalette: case Variant::kPngPalette1: case Variant::kPngPalette2:
        case Variant::kPngPalette4: o.color = image::PngColor::kPalette; break;
        default: o.color = image::PngColor::kRgb; break;
      }
      if (o.color == image::PngColor::kRgba || o.color == image::PngColor::kGrayAlpha)
        o.alpha = render_alpha(rgb.width, rgb.height, rng);
      return image::encode_png(rgb, o);
    }
    case ImageFormat::kWebp: {
      image::WebpOptions o;
      o.lossless = variant == Variant::kWebpLossless || variant == Variant::kWebpLosslessAlpha;
      o.with_alpha = variant == Variant::kWebpLossyAlpha || variant == Variant::kWebpLosslessAlpha;
      o.quality = static_cast<float>(rng.range(50, 95));
      return image::encode_webp(rgb, o);
    }
  }
  return internal_error("unknown variant");
}

}  // namespace stoker::synth
