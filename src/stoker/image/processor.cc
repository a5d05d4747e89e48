// Qwen-VL image processor: plan from the header, decode, exact resize, then one pass that
// normalises through a per-channel table and writes the patch rows in their final order.
#include "stoker/image/processor.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "stoker/image/resample.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace stoker::image {
namespace {

// float32 → bfloat16, round to nearest even (values here are finite).
inline std::uint16_t to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

// Copies `bytes` to the batch buffer. The ~50 MB a 1080p image becomes is not read again by this
// core (the consumer copies it to the GPU), so aligned spans use non-temporal stores: no
// read-for-ownership, no eviction of the image rows we are still reading. SSE2 is part of the
// x86-64 baseline, so this needs no dispatch; other CPUs take memcpy.
inline void emit(void* dst, const void* src, size_t bytes) {
#if defined(__SSE2__)
  auto addr = reinterpret_cast<std::uintptr_t>(dst);
  if (((addr | bytes) & 7) == 0) {
    auto* d = static_cast<std::uint8_t*>(dst);
    const auto* s = static_cast<const std::uint8_t*>(src);
    auto stream8 = [&] {
      long long v;
      std::memcpy(&v, s, sizeof(v));
      _mm_stream_si64(reinterpret_cast<long long*>(d), v);
      d += 8, s += 8, bytes -= 8;
    };
    if ((addr & 15) != 0 && bytes >= 8) stream8();  // 8-byte head to reach 16-byte alignment
    for (; bytes >= 16; d += 16, s += 16, bytes -= 16) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(d),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
    }
    if (bytes == 8) stream8();
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

inline void emit_fence() {
#if defined(__SSE2__)
  _mm_sfence();  // order the streaming stores before the caller publishes the buffer
#endif
}

// Writes rows in output order (spec §1.5): row r = ((hb·(gw/m) + wb)·m + mh)·m + mw, and inside a
// row column k = ((c·T + tp)·P + py)·P + px. Each row is gathered (P runs of P pixels through the
// lookup table) into a small per-channel block, then written as 3·T contiguous P·P spans, strictly
// in address order. Source reads stay inside one band of P·m image rows (in L2).
// kP > 0 fixes the patch size at compile time (14 and 16: the inner loops unroll).
// Only merge-row bands [hb_begin, hb_end) are written (each band = P·m image rows = (gw/m)·m² rows
// of output), so a caller can patchify bands as the resampler finishes them.
template <typename T, int kP>
void patchify(const RgbImage& img, int patch, int tps, int merge, int grid_h, int grid_w,
              int hb_begin, int hb_end, const std::array<std::array<float, 256>, 3>& lut,
              T* out) {
  const int P = kP > 0 ? kP : patch;
  const size_t plane = static_cast<size_t>(P) * P;
  const size_t cols = 3 * tps * plane;
  std::vector<float> fbuf(3 * plane);
  std::vector<T> tbuf(sizeof(T) == sizeof(float) ? 0 : 3 * plane);
  float* vals[3] = {fbuf.data(), fbuf.data() + plane, fbuf.data() + 2 * plane};
  const float* __restrict l = lut[0].data();  // the 3 tables are contiguous: l[c·256 + x]
  static_assert(sizeof(lut) == 3 * 256 * sizeof(float), "lut must be contiguous");
  float* __restrict v = fbuf.data();
  T* row = out + static_cast<size_t>(hb_begin) * (grid_w / merge) * merge * merge * cols;
  for (int hb = hb_begin; hb < hb_end; ++hb) {
    for (int wb = 0; wb < grid_w / merge; ++wb) {
      for (int mh = 0; mh < merge; ++mh) {
        for (int mw = 0; mw < merge; ++mw, row += cols) {
          const int y0 = (hb * merge + mh) * P;
          const int x0 = (wb * merge + mw) * P;
          for (int py = 0; py < P; ++py) {
            const std::uint8_t* __restrict s = img.row(y0 + py) + static_cast<size_t>(x0) * 3;
            float* __restrict vp = v + py * P;
            for (int px = 0; px < P; ++px) {
              vp[px] = l[s[3 * px + 0]];
              vp[plane + px] = l[256 + s[3 * px + 1]];
              vp[2 * plane + px] = l[512 + s[3 * px + 2]];
            }
          }
          for (int c = 0; c < 3; ++c) {
            const void* src = vals[c];
            if constexpr (sizeof(T) != sizeof(float)) {
              T* t = tbuf.data() + c * plane;
              for (size_t i = 0; i < plane; ++i) t[i] = to_bf16(vals[c][i]);
              src = t;
            }
            for (int tp = 0; tp < tps; ++tp) {
              emit(row + (static_cast<size_t>(c) * tps + tp) * plane, src, plane * sizeof(T));
            }
          }
        }
      }
    }
  }
  emit_fence();
}

template <typename T>
void patchify_any(const RgbImage& img, int patch, int tps, int merge, int grid_h, int grid_w,
                  int hb_begin, int hb_end, const std::array<std::array<float, 256>, 3>& lut,
                  T* out) {
  switch (patch) {
    case 14:
      return patchify<T, 14>(img, patch, tps, merge, grid_h, grid_w, hb_begin, hb_end, lut, out);
    case 16:
      return patchify<T, 16>(img, patch, tps, merge, grid_h, grid_w, hb_begin, hb_end, lut, out);
    default:
      return patchify<T, 0>(img, patch, tps, merge, grid_h, grid_w, hb_begin, hb_end, lut, out);
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
    // Patchify each band of P·m rows as soon as the resampler has finished it, while those rows
    // are still in cache, instead of re-reading the whole resized image afterwards.
    const int band_rows = P * m;
    int bands_done = 0;
    resize_bicubic_exact(decoded, plan.width, plan.height, &scratch->resized, [&](int rows) {
      const int ready = rows / band_rows;
      if (ready > bands_done) {
        write_bands(scratch->resized, plan, dtype, bands_done, ready, out);
        bands_done = ready;
      }
    });
    img = &scratch->resized;
  } else {
    normalize_patchify(*img, plan, dtype, out);
  }
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
  write_bands(resized, plan, dtype, 0, plan.grid_h / config_.merge_size, out);
}

void ImageProcessor::write_bands(const RgbImage& img, const ImagePlan& plan, PixelDType dtype,
                                 int hb_begin, int hb_end, void* out) const {
  const int P = config_.patch_size, T = config_.temporal_patch_size, m = config_.merge_size;
  if (dtype == PixelDType::kFloat32) {
    patchify_any(img, P, T, m, plan.grid_h, plan.grid_w, hb_begin, hb_end, lut_,
                 static_cast<float*>(out));
  } else {
    patchify_any(img, P, T, m, plan.grid_h, plan.grid_w, hb_begin, hb_end, lut_,
                 static_cast<std::uint16_t*>(out));
  }
}

}  // namespace stoker::image
