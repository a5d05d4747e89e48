// Image targets: probe → plan → ImageProcessor::process (decode, EXIF orientation, resize,
// normalise, patchify) for JPEG, PNG and WebP, each a target of its own (an input of another
// format returns at once, so each target's corpus and executions are its decoder's). JPEG also
// goes through decode_rgb (TurboJPEG), which process() only uses as the fallback.
// Caps, as production caps them: DecodeLimits.max_pixels (checked from the header before any
// image-sized allocation) at 1 Mpx instead of Pillow's 179 Mpx, so one input stays < 100 MB and
// well under a second under ASan; the output at 28·28·64 pixels (min 56·56: small ones enlarged).
#include <string>
#include <vector>

#include "stoker/fuzz/scratch.h"
#include "stoker/fuzz/targets.h"
#include "stoker/image/encode.h"
#include "stoker/image/decode.h"
#include "stoker/image/processor.h"

namespace stoker::fuzz {
namespace {

using image::ImageFormat;

const image::ImageProcessor& processor() {
  static const image::ImageProcessor p = [] {
    image::ImageProcessorConfig c;
    c.max_pixels = 28 * 28 * 64;
    c.limits.max_pixels = std::int64_t{1} << 20;
    auto r = image::ImageProcessor::create(c);
    check(r.ok(), "the harness's processor config is valid");
    return *r;
  }();
  return p;
}

void run_image(ImageFormat want, const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  Result<image::ImageHeader> h = image::probe_image(bytes);
  if (!h.ok() || h->format != want) return;
  const image::ImageProcessor& p = processor();
  if (want == ImageFormat::kJpeg) {
    Result<image::RgbImage> rgb = image::decode_rgb(bytes, p.config().limits);
    if (rgb.ok()) {
      check(rgb->pixels.size() == std::size_t{3} * rgb->width * rgb->height, "RGB size");
      check(std::int64_t{rgb->width} * rgb->height <= p.config().limits.max_pixels, "limit kept");
    } else {
      check(!rgb.error().message().empty(), "an error carries a message");
    }
  }
  Result<image::ImagePlan> plan = p.plan(*h);
  if (!plan.ok()) return;
  // smart_resize (as HF's) keeps a side of at least one factor: a thin image can then go over
  // max_pixels, never otherwise.
  const int f = p.config().factor();
  check(plan->rows() > 0 && (plan->width * std::int64_t{plan->height} <= p.config().max_pixels ||
                             plan->width == f || plan->height == f),
        "the plan is within max_pixels");
  static thread_local image::ImageScratch scratch;
  static thread_local std::vector<float> out;
  out.assign(static_cast<std::size_t>(plan->rows() * p.columns()), 0.0f);
  const auto dtype = (size & 1) ? image::PixelDType::kBFloat16 : image::PixelDType::kFloat32;
  Status s = p.process(bytes, *plan, dtype, out.data(), &scratch);
  if (!s.ok()) check(!s.error().message().empty(), "an error carries a message");
}

// Small images from the project's own encoders (the same libraries as the decoders), every
// variant the encoders offer; stoker synth and the bad-input suite add photo-like and broken ones.
image::RgbImage pattern(int w, int h) {
  image::RgbImage img{.width = w, .height = h, .pixels = {}};
  img.pixels.resize(std::size_t{3} * w * h);
  for (std::size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<std::uint8_t>(i * 37 + i / 7);
  return img;
}

void save(const std::string& dir, const std::string& name, const Result<std::vector<std::uint8_t>>& b) {
  check(b.ok(), "the encoder makes a seed");
  write_seed(dir, name, std::string_view(reinterpret_cast<const char*>(b->data()), b->size()));
}

void jpeg_seeds(const std::string& dir) {
  int i = 0;
  for (auto [w, h] : {std::pair{16, 12}, {33, 7}, {64, 64}})
    for (image::JpegOptions o : {image::JpegOptions{}, {.progressive = true}, {.subsample_420 = false},
                                 {.grayscale = true}, {.cmyk = true}})
      save(dir, "enc-" + std::to_string(i++), image::encode_jpeg(pattern(w, h), o));
}

void png_seeds(const std::string& dir) {
  using image::PngColor;
  int i = 0;
  for (auto [w, h] : {std::pair{16, 12}, {5, 31}})
    for (image::PngOptions o :
         {image::PngOptions{}, {.color = PngColor::kRgb, .bit_depth = 16}, {.color = PngColor::kRgba},
          {.color = PngColor::kGray, .bit_depth = 1}, {.color = PngColor::kGrayAlpha},
          {.color = PngColor::kPalette, .bit_depth = 4, .palette_trns = true},
          {.color = PngColor::kRgb, .interlaced = true}})
      save(dir, "enc-" + std::to_string(i++), image::encode_png(pattern(w, h), o));
}

void webp_seeds(const std::string& dir) {
  int i = 0;
  for (auto [w, h] : {std::pair{16, 12}, {37, 9}})
    for (image::WebpOptions o : {image::WebpOptions{}, {.lossless = true}, {.with_alpha = true},
                                 {.lossless = true, .with_alpha = true}})
      save(dir, "enc-" + std::to_string(i++), image::encode_webp(pattern(w, h), o));
}

void run_jpeg(const std::uint8_t* d, std::size_t n) { run_image(ImageFormat::kJpeg, d, n); }
void run_png(const std::uint8_t* d, std::size_t n) { run_image(ImageFormat::kPng, d, n); }
void run_webp(const std::uint8_t* d, std::size_t n) { run_image(ImageFormat::kWebp, d, n); }

}  // namespace

const Target kJpegTarget{"jpeg", "JPEG: probe, decode_rgb (TurboJPEG), plan, process (libjpeg rows, EXIF, resize, patchify)",
                         nullptr, run_jpeg, jpeg_seeds};
const Target kPngTarget{"png", "PNG: probe (eXIf after IDAT too), plan, process", nullptr, run_png, png_seeds};
const Target kWebpTarget{"webp", "WebP: probe, plan, process", nullptr, run_webp, webp_seeds};

}  // namespace stoker::fuzz
