// Qwen-VL image processor: plan from the header, decode, exact resize, then one pass that
// normalises through a per-channel table and writes the patch rows in their final order.
#include "stoker/image/processor.h"

#include <cmath>
#include <cstring>
#include <string>

#include "stoker/image/resample.h"

namespace stoker::image {
namespace {

// float32 → bfloat16, round to nearest even (values here are finite).
inline std::uint16_t to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

template <typename T>
inline void store(T* dst, const float* src, int n) {
  if constexpr (sizeof(T) == sizeof(float)) {
    std::memcpy(dst, src, sizeof(float) * n);
  } else {
    for (int i = 0; i < n; ++i) dst[i] = to_bf16(src[i]);
  }
}

// Writes rows in output order (spec §1.5): row r = ((hb·(gw/m) + wb)·m + mh)·m + mw, and inside a
// row column k = ((c·T + tp)·P + py)·P + px. Each output row (C·T·P·P values) is produced from P
// short source runs of P pixels, so reads stay within one band of P·m image rows (in L2) and
// writes are strictly sequential row after row (what the write-combining hardware likes).
template <typename T>
void patchify(const RgbImage& img, int patch, int tps, int merge, int grid_h, int grid_w,
              const std::array<std::array<float, 256>, 3>& lut, T* out) {
  const int P = patch;
  const size_t cols = static_cast<size_t>(3) * tps * P * P;
  const size_t plane = static_cast<size_t>(P) * P;  // one (c, tp) block inside a row
  float vals[3][64];                                 // P ≤ 64 (checked in validate)
  T* row = out;
  for (int hb = 0; hb < grid_h / merge; ++hb) {
    for (int wb = 0; wb < grid_w / merge; ++wb) {
      for (int mh = 0; mh < merge; ++mh) {
        for (int mw = 0; mw < merge; ++mw, row += cols) {
          const int y0 = (hb * merge + mh) * P;
          const int x0 = (wb * merge + mw) * P;
          for (int py = 0; py < P; ++py) {
            const std::uint8_t* s = img.row(y0 + py) + static_cast<size_t>(x0) * 3;
            for (int px = 0; px < P; ++px) {
              vals[0][px] = lut[0][s[3 * px + 0]];
              vals[1][px] = lut[1][s[3 * px + 1]];
              vals[2][px] = lut[2][s[3 * px + 2]];
            }
            for (int c = 0; c < 3; ++c) {
              for (int tp = 0; tp < tps; ++tp) {
                store(row + (static_cast<size_t>(c) * tps + tp) * plane + static_cast<size_t>(py) * P,
                      vals[c], P);
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

Status ImageProcessorConfig::validate() const {
  if (patch_size < 1 || patch_size > 64) return invalid_argument("patch_size must be in 1..64");
  if (temporal_patch_size < 1 || temporal_patch_size > 16) {
    return invalid_argument("temporal_patch_size must be in 1..16");
  }
  if (merge_size < 1 || merge_size > 16) return invalid_argument("merge_size must be in 1..16");
  if (min_pixels < 1) return invalid_argument("min_pixels must be positive");
  if (max_pixels < min_pixels) {
    return invalid_argument("max_pixels (" + std::to_string(max_pixels) +
                            ") must be >= min_pixels (" + std::to_string(min_pixels) + ")");
  }
  for (int c = 0; c < 3; ++c) {
    if (!std::isfinite(image_mean[c])) return invalid_argument("image_mean must be finite");
    if (!std::isfinite(image_std[c]) || image_std[c] == 0.0f) {
      return invalid_argument("image_std must be finite and non-zero");
    }
  }
  if (!std::isfinite(rescale_factor) || rescale_factor <= 0.0) {
    return invalid_argument("rescale_factor must be positive");
  }
  if (limits.max_pixels < 1) return invalid_argument("limits.max_pixels must be positive");
  return ok_status();
}

ImageProcessor::ImageProcessor(const ImageProcessorConfig& config) : config_(config) {
  // The slow processor's arithmetic, value by value: x.astype(float64) * rescale_factor, cast to
  // float32; then (v − mean_f32) / std_f32 in float32 (numpy casts mean/std to the image dtype).
  for (int c = 0; c < 3; ++c) {
    for (int x = 0; x < 256; ++x) {
      float v = config_.do_rescale
                    ? static_cast<float>(static_cast<double>(x) * config_.rescale_factor)
                    : static_cast<float>(x);
      if (config_.do_normalize) {
        const float diff = v - config_.image_mean[c];
        v = diff / config_.image_std[c];
      }
      lut_[c][x] = v;
    }
  }
}

Result<ImageProcessor> ImageProcessor::create(const ImageProcessorConfig& config) {
  STOKER_RETURN_IF_ERROR(config.validate());
  return ImageProcessor(config);
}

std::int64_t ImageProcessor::columns() const {
  return std::int64_t{3} * config_.temporal_patch_size * config_.patch_size * config_.patch_size;
}

Result<ImagePlan> ImageProcessor::plan(const ImageHeader& header) const {
  ImagePlan p;
  p.src_width = header.width;
  p.src_height = header.height;
  const int factor = config_.factor();
  if (config_.do_resize) {
    STOKER_ASSIGN_OR_RETURN(ResizedSize s, smart_resize(header.height, header.width, factor,
                                                        config_.min_pixels, config_.max_pixels));
    p.width = s.width;
    p.height = s.height;
  } else {
    if (header.width % factor != 0 || header.height % factor != 0) {
      return invalid_argument("do_resize is off but " + std::to_string(header.width) + "x" +
                              std::to_string(header.height) + " is not a multiple of " +
                              std::to_string(factor) + " (patch_size × merge_size)");
    }
    p.width = header.width;
    p.height = header.height;
  }
  p.grid_t = 1;  // one frame, padded to temporal_patch_size copies
  p.grid_h = p.height / config_.patch_size;
  p.grid_w = p.width / config_.patch_size;
  return p;
}

Result<ImagePlan> ImageProcessor::plan(std::span<const std::uint8_t> bytes) const {
  STOKER_ASSIGN_OR_RETURN(ImageHeader header, probe_image(bytes));
  const std::int64_t pixels = std::int64_t{header.width} * header.height;
  if (pixels > config_.limits.max_pixels) {
    return resource_exhausted("image size " + std::to_string(header.width) + "x" +
                              std::to_string(header.height) + " exceeds the limit of " +
                              std::to_string(config_.limits.max_pixels) + " pixels");
  }
  return plan(header);
}

Status ImageProcessor::process(std::span<const std::uint8_t> bytes, const ImagePlan& plan,
                               PixelDType dtype, void* out, ImageScratch* scratch,
                               RgbImage* resized_out) const {
  const int P = config_.patch_size, m = config_.merge_size;
  if (plan.width != plan.grid_w * P || plan.height != plan.grid_h * P || plan.grid_t != 1 ||
      plan.grid_w % m != 0 || plan.grid_h % m != 0 || plan.width <= 0 || plan.height <= 0) {
    return invalid_argument("image plan does not fit this processor (patch " + std::to_string(P) +
                            ", merge " + std::to_string(m) + ")");
  }
  ImageScratch local;
  if (scratch == nullptr) scratch = &local;
  STOKER_RETURN_IF_ERROR(decode_rgb(bytes, config_.limits, &scratch->decoded));
  const RgbImage& decoded = scratch->decoded;
  if (decoded.width != plan.src_width || decoded.height != plan.src_height) {
    return invalid_argument("decoded size " + std::to_string(decoded.width) + "x" +
                            std::to_string(decoded.height) + " differs from the plan's " +
                            std::to_string(plan.src_width) + "x" + std::to_string(plan.src_height));
  }
  const RgbImage* img = &decoded;
  if (plan.width != decoded.width || plan.height != decoded.height) {
    resize_bicubic_exact(decoded, plan.width, plan.height, &scratch->resized);
    img = &scratch->resized;
  }
  normalize_patchify(*img, plan, dtype, out);
  if (resized_out != nullptr) *resized_out = *img;
  return ok_status();
}

void ImageProcessor::normalize_patchify(const RgbImage& resized, const ImagePlan& plan,
                                        PixelDType dtype, void* out) const {
  STOKER_CHECK(resized.width == plan.width && resized.height == plan.height,
               "normalize_patchify: image size differs from the plan");
  STOKER_CHECK(plan.grid_w * config_.patch_size == plan.width &&
                   plan.grid_h * config_.patch_size == plan.height &&
                   plan.grid_w % config_.merge_size == 0 && plan.grid_h % config_.merge_size == 0,
               "normalize_patchify: plan grid does not tile the image");
  const int P = config_.patch_size, T = config_.temporal_patch_size, m = config_.merge_size;
  if (dtype == PixelDType::kFloat32) {
    patchify(resized, P, T, m, plan.grid_h, plan.grid_w, lut_, static_cast<float*>(out));
  } else {
    patchify(resized, P, T, m, plan.grid_h, plan.grid_w, lut_, static_cast<std::uint16_t*>(out));
  }
}

}  // namespace stoker::image
