// Qwen-VL image processor: plan from the header, decode, exact resize, then one pass that
// normalises with a SIMD kernel (exact IEEE arithmetic) and writes the patch rows in their final order.
#include "stoker/image/processor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "stoker/base/clock.h"
#include "stoker/image/detail/normalize_kernels.h"
#include "stoker/image/exif.h"
#include "stoker/image/resample.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace stoker::image {
namespace {

// Copies `bytes` to the batch buffer. The ~50 MB a 1080p image becomes is not read again by this
// core (the consumer copies it to the GPU), so aligned spans use non-temporal stores: no
// read-for-ownership, no eviction of the image rows we are still reading. The 8-byte head/tail
// use SSE2 (x86-64 baseline); the body goes through detail::stream_copy (Highway dispatch); other
// CPUs take memcpy.
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
    // The body with the widest streaming stores the CPU has (Highway dispatch; 64-byte stores
    // on AVX-512 measured ~25 % faster than 16-byte SSE2 ones for the float32 patchify on Zen 4).
    const size_t body = bytes & ~size_t{15};
    detail::stream_copy(d, s, body);
    d += body, s += body, bytes -= body;
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
// row column k = ((c·T + tp)·P + py)·P + px. Each patch's P runs of 3·P bytes are gathered into a
// small buffer, normalised by the SIMD kernel into one plane per channel, then written as 3·T
// contiguous P·P spans, strictly in address order. Source reads stay inside one band of P·m image
// rows (in L2). kP > 0 fixes the patch size at compile time (14 and 16: constant-size copies).
// Only merge-row bands [hb_begin, hb_end) are written (each band = P·m image rows = (gw/m)·m² rows
// of output), so a caller can patchify bands as the resampler finishes them.
template <typename T, int kP>
void patchify(const RgbRows& img, int patch, int tps, int merge, int grid_w, int hb_begin,
              int hb_end, const detail::NormalizeParams& norm, T* out) {
  const int P = kP > 0 ? kP : patch;
  const size_t plane = static_cast<size_t>(P) * P;
  const size_t cols = 3 * tps * plane;
  const size_t stride = plane + detail::kNormalizePad;  // per-channel plane with the kernel's slack
  std::vector<std::uint8_t> pix(3 * stride);
  std::vector<T> vbuf(3 * stride);
  T* const vals[3] = {vbuf.data(), vbuf.data() + stride, vbuf.data() + 2 * stride};
  T* row = out + static_cast<size_t>(hb_begin) * (grid_w / merge) * merge * merge * cols;
  for (int hb = hb_begin; hb < hb_end; ++hb) {
    for (int wb = 0; wb < grid_w / merge; ++wb) {
      for (int mh = 0; mh < merge; ++mh) {
        for (int mw = 0; mw < merge; ++mw, row += cols) {
          const int y0 = (hb * merge + mh) * P;
          const int x0 = (wb * merge + mw) * P;
          for (int py = 0; py < P; ++py) {
            std::memcpy(pix.data() + static_cast<size_t>(py) * 3 * P,
                        img.row(y0 + py) + static_cast<size_t>(x0) * 3, 3 * static_cast<size_t>(P));
          }
          if constexpr (sizeof(T) == sizeof(float)) {
            detail::normalize_rgb_f32(pix.data(), static_cast<int>(plane), norm, vals);
          } else {
            detail::normalize_rgb_bf16(pix.data(), static_cast<int>(plane), norm, vals);
          }
          for (int c = 0; c < 3; ++c) {
            for (int tp = 0; tp < tps; ++tp) {
              emit(row + (static_cast<size_t>(c) * tps + tp) * plane, vals[c], plane * sizeof(T));
            }
          }
        }
      }
    }
  }
  emit_fence();
}

template <typename T>
void patchify_any(const RgbRows& img, int patch, int tps, int merge, int grid_w, int hb_begin,
                  int hb_end, const detail::NormalizeParams& norm, T* out) {
  switch (patch) {
    case 14:
      return patchify<T, 14>(img, patch, tps, merge, grid_w, hb_begin, hb_end, norm, out);
    case 16:
      return patchify<T, 16>(img, patch, tps, merge, grid_w, hb_begin, hb_end, norm, out);
    default:
      return patchify<T, 0>(img, patch, tps, merge, grid_w, hb_begin, hb_end, norm, out);
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

Status set_exif_option(std::string_view value, ImageProcessorConfig* config) {
  if (value != "apply" && value != "ignore") {
    return invalid_argument("exif orientation: 'apply' or 'ignore', not '" + std::string(value) +
                            "'");
  }
  config->apply_exif_orientation = value == "apply";
  return ok_status();
}

Status set_small_images_option(std::string_view value, ImageProcessorConfig* config) {
  if (value != "resize" && value != "refuse") {
    return invalid_argument("small images: 'resize' (transformers >= 4.53) or 'refuse' "
                            "(<= 4.52), not '" + std::string(value) + "'");
  }
  config->resize_rules =
      value == "resize" ? SmartResizeRules::kCurrent : SmartResizeRules::kRefuseBelowFactor;
  return ok_status();
}

ImageProcessor::ImageProcessor(const ImageProcessorConfig& config) : config_(config) {
  // The slow processor's arithmetic: x.astype(float64) * rescale_factor, cast to float32; then
  // (v − mean_f32) / std_f32 in float32 (numpy casts mean/std to the image dtype).
  norm_.rescale_factor = config_.rescale_factor;
  for (int c = 0; c < 3; ++c) {
    norm_.mean[c] = config_.image_mean[c];
    norm_.std[c] = config_.image_std[c];
  }
  norm_.do_rescale = config_.do_rescale;
  norm_.do_normalize = config_.do_normalize;
  // The all-float32 kernel, only if it reproduces the exact formula for every byte value here.
  norm_.fast = detail::verify_fast_normalize(norm_);
}

Result<ImageProcessor> ImageProcessor::create(const ImageProcessorConfig& config) {
  STOKER_RETURN_IF_ERROR(config.validate());
  return ImageProcessor(config);
}

std::int64_t ImageProcessor::columns() const {
  return std::int64_t{3} * config_.temporal_patch_size * config_.patch_size * config_.patch_size;
}

std::int64_t ImageProcessor::columns(PixelDType dtype) const {
  return dtype == PixelDType::kUInt8 ? std::int64_t{3} * config_.patch_size * config_.patch_size
                                     : columns();
}

void ImageProcessor::value_table(PixelDType dtype, void* out) const {
  STOKER_CHECK(dtype != PixelDType::kUInt8, "value_table: a float dtype");
  // Every byte value in each channel, through the kernel normalize_patchify uses (with its slack).
  std::vector<std::uint8_t> rgb(3 * (256 + detail::kNormalizePad), 0);
  for (int x = 0; x < 256; ++x) rgb[3 * x] = rgb[3 * x + 1] = rgb[3 * x + 2] = static_cast<std::uint8_t>(x);
  constexpr size_t kStride = 256 + detail::kNormalizePad;
  if (dtype == PixelDType::kFloat32) {
    std::vector<float> v(3 * kStride);
    float* const planes[3] = {v.data(), v.data() + kStride, v.data() + 2 * kStride};
    detail::normalize_rgb_f32(rgb.data(), 256, norm_, planes);
    for (int c = 0; c < 3; ++c) std::memcpy(static_cast<float*>(out) + 256 * c, planes[c], 256 * 4);
  } else {
    std::vector<std::uint16_t> v(3 * kStride);
    std::uint16_t* const planes[3] = {v.data(), v.data() + kStride, v.data() + 2 * kStride};
    detail::normalize_rgb_bf16(rgb.data(), 256, norm_, planes);
    for (int c = 0; c < 3; ++c) {
      std::memcpy(static_cast<std::uint16_t*>(out) + 256 * c, planes[c], 256 * 2);
    }
  }
}

Result<ImagePlan> ImageProcessor::plan(const ImageHeader& header) const {
  ImagePlan p;
  if (config_.apply_exif_orientation) {
    // transformers' load_image: exif_transpose before anything else, so smart_resize sees the
    // displayed size (5..8 swap the axes). A file it raises on fails there.
    if (!header.exif_error.empty()) return data_loss(header.exif_error);
    p.orientation = header.orientation;
  }
  const bool swap = orientation_swaps_axes(p.orientation);
  p.src_width = swap ? header.height : header.width;
  p.src_height = swap ? header.width : header.height;
  const int factor = config_.factor();
  if (config_.do_resize) {
    STOKER_ASSIGN_OR_RETURN(ResizedSize s,
                            smart_resize(p.src_height, p.src_width, factor, config_.min_pixels,
                                         config_.max_pixels, config_.resize_rules));
    p.width = s.width;
    p.height = s.height;
  } else {
    if (p.src_width % factor != 0 || p.src_height % factor != 0) {
      return invalid_argument("do_resize is off but " + std::to_string(p.src_width) + "x" +
                              std::to_string(p.src_height) + " is not a multiple of " +
                              std::to_string(factor) + " (patch_size × merge_size)");
    }
    p.width = p.src_width;
    p.height = p.src_height;
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

Status ImageProcessor::decode(std::span<const std::uint8_t> bytes, const ImagePlan& plan,
                              RgbImage* out, RgbImage* stored) const {
  RgbImage local;
  RgbImage* raw = plan.orientation == 1 ? out : (stored != nullptr ? stored : &local);
  STOKER_RETURN_IF_ERROR(decode_rgb(bytes, config_.limits, raw));
  if (raw->width != plan.decoded_width() || raw->height != plan.decoded_height()) {
    return data_loss("decoded size " + std::to_string(raw->width) + "x" +
                     std::to_string(raw->height) + " differs from the header's " +
                     std::to_string(plan.decoded_width()) + "x" +
                     std::to_string(plan.decoded_height()));
  }
  if (raw != out) apply_orientation(plan.orientation, *raw, out);
  return ok_status();
}

Status ImageProcessor::check_plan(const ImagePlan& plan) const {
  const int P = config_.patch_size, m = config_.merge_size;
  if (plan.width != plan.grid_w * P || plan.height != plan.grid_h * P || plan.grid_t != 1 ||
      plan.grid_w % m != 0 || plan.grid_h % m != 0 || plan.width <= 0 || plan.height <= 0 ||
      plan.orientation < 1 || plan.orientation > 8) {
    return invalid_argument("image plan does not fit this processor (patch " + std::to_string(P) +
                            ", merge " + std::to_string(m) + ")");
  }
  return {};
}

Status ImageProcessor::process(std::span<const std::uint8_t> bytes, const ImagePlan& plan,
                               PixelDType dtype, void* out, ImageScratch* scratch,
                               RgbImage* resized_out) const {
  STOKER_RETURN_IF_ERROR(check_plan(plan));
  ImageScratch local;
  if (scratch == nullptr) scratch = &local;
  // Phase timing (tracing only): decode and normalise are timed where they run, resize is what
  // is left of the whole.
  PhaseTimes* phases = scratch->phases;
  const std::int64_t t_start = phases != nullptr ? now_ns() : 0;
  struct ResizeRest {
    PhaseTimes* p;
    std::int64_t t0, decode0, normalise0;
    ~ResizeRest() {
      if (p == nullptr) return;
      const std::int64_t own = (p->decode_ns - decode0) + (p->normalise_ns - normalise0);
      p->resize_ns += std::max<std::int64_t>(0, now_ns() - t0 - own);
    }
  } rest{phases, t_start, phases ? phases->decode_ns : 0, phases ? phases->normalise_ns : 0};
  if (resized_out == nullptr && plan.orientation == 1 && bytes.size() >= 2 && bytes[0] == 0xFF &&
      bytes[1] == 0xD8) {
    // JPEG: decode rows straight into the resampler, 16 at a time, so not even the decoded image
    // is written out. Anything this path does not take or cannot finish (CMYK, unusual sampling,
    // damage, a warning) is redone below by the whole-image path, whose outcome — pixels or the
    // canonical error — is authoritative; it rewrites every output row. EXIF orientations 2..8
    // take the whole-image path too: 3..8 need the last source row or a whole source column
    // before the first output row exists (README.md "EXIF orientation").
    auto dec = JpegRowDecoder::open(bytes, config_.limits);
    if (dec.ok() && dec->width() == plan.src_width && dec->height() == plan.src_height) {
      if (stream_jpeg(*dec, plan, dtype, out, scratch).ok()) return ok_status();
    }
  }
  const std::int64_t t_decode = phases != nullptr ? now_ns() : 0;
  Status decoded_ok = decode(bytes, plan, &scratch->decoded, &scratch->stored);
  if (phases != nullptr) phases->decode_ns += now_ns() - t_decode;
  STOKER_RETURN_IF_ERROR(std::move(decoded_ok));
  const RgbImage& decoded = scratch->decoded;
  if (resized_out != nullptr) {  // the whole resized image is wanted too (tools, tests)
    resize_bicubic_exact(decoded, plan.width, plan.height, &scratch->resized);
    normalize_patchify(scratch->resized, plan, dtype, out);
    *resized_out = scratch->resized;
    return ok_status();
  }
  int next_src = 0;
  return stream(
      [&](int n, const std::uint8_t** rows) {
        for (int r = 0; r < n; ++r) rows[r] = decoded.row(next_src + r);
        next_src += n;
        return ok_status();
      },
      plan, dtype, out, scratch);
}

Status ImageProcessor::stream_jpeg(JpegRowDecoder& dec, const ImagePlan& plan, PixelDType dtype,
                                   void* out, ImageScratch* scratch) const {
  constexpr int kBlock = 16;  // the resampler's block
  const size_t in_stride = static_cast<size_t>(dec.width()) * 3;
  scratch->window.resize(kBlock * in_stride);
  std::uint8_t* window[kBlock];
  for (int r = 0; r < kBlock; ++r) window[r] = scratch->window.data() + r * in_stride;
  STOKER_RETURN_IF_ERROR(stream(
      [&](int n, const std::uint8_t** rows) {
        for (int r = 0; r < n; ++r) rows[r] = window[r];
        if (scratch->phases == nullptr) return dec.read(window, n);
        const std::int64_t t0 = now_ns();
        Status st = dec.read(window, n);
        scratch->phases->decode_ns += now_ns() - t0;
        return st;
      },
      plan, dtype, out, scratch));
  // Rows below every resampling window are not needed, but decode_rgb reads to the end marker
  // and fails on damage there; so do we, to give the same outcome.
  const std::int64_t t0 = scratch->phases != nullptr ? now_ns() : 0;
  while (dec.rows_read() < dec.height()) {
    STOKER_RETURN_IF_ERROR(dec.read(window, std::min(kBlock, dec.height() - dec.rows_read())));
  }
  if (scratch->phases != nullptr) scratch->phases->decode_ns += now_ns() - t0;
  return ok_status();
}

// Streaming: the resampler writes each output row into a one-band ring (P·m rows) and the band
// is normalised + patchified the moment its last row is final, while it is in L2. No
// image-sized buffer is written after the decode.
Status ImageProcessor::stream(const RowSource& source, const ImagePlan& plan, PixelDType dtype,
                              void* out, ImageScratch* scratch) const {
  const int band_rows = config_.patch_size * config_.merge_size;
  const size_t stride = static_cast<size_t>(plan.width) * 3;
  if (dtype == PixelDType::kUInt8) {  // the resized image is the output: each row written in place
    auto* rows = static_cast<std::uint8_t*>(out);
    return resize_bicubic_exact_stream(
        plan.src_width, plan.src_height, source, plan.width, plan.height,
        [&](int y) { return rows + static_cast<size_t>(y) * stride; }, [](int) {});
  }
  scratch->band.resize(static_cast<size_t>(band_rows) * stride);
  std::uint8_t* band = scratch->band.data();
  int bands_done = 0;
  return resize_bicubic_exact_stream(
      plan.src_width, plan.src_height, source, plan.width, plan.height,
      [&](int y) { return band + static_cast<size_t>(y % band_rows) * stride; },
      [&](int rows) {
        if (rows < (bands_done + 1) * band_rows) return;
        const RgbRows view{band, stride, bands_done * band_rows};
        const std::int64_t t0 = scratch->phases != nullptr ? now_ns() : 0;
        write_bands(view, plan, dtype, bands_done, bands_done + 1, out);
        if (scratch->phases != nullptr) scratch->phases->normalise_ns += now_ns() - t0;
        ++bands_done;
      });
}

void ImageProcessor::normalize_patchify(const RgbImage& resized, const ImagePlan& plan,
                                        PixelDType dtype, void* out) const {
  STOKER_CHECK(resized.width == plan.width && resized.height == plan.height,
               "normalize_patchify: image size differs from the plan");
  STOKER_CHECK(plan.grid_w * config_.patch_size == plan.width &&
                   plan.grid_h * config_.patch_size == plan.height &&
                   plan.grid_w % config_.merge_size == 0 && plan.grid_h % config_.merge_size == 0,
               "normalize_patchify: plan grid does not tile the image");
  normalize_patchify(resized.pixels.data(), plan, dtype, out);
}

void ImageProcessor::normalize_patchify(const std::uint8_t* rgb, const ImagePlan& plan,
                                        PixelDType dtype, void* out) const {
  STOKER_CHECK(plan.grid_w * config_.patch_size == plan.width &&
                   plan.grid_h * config_.patch_size == plan.height &&
                   plan.grid_w % config_.merge_size == 0 && plan.grid_h % config_.merge_size == 0,
               "normalize_patchify: plan grid does not tile the image");
  if (dtype == PixelDType::kUInt8) {  // the rows are the resized image as it is
    std::memcpy(out, rgb, static_cast<size_t>(plan.width) * plan.height * 3);
    return;
  }
  write_bands(RgbRows{rgb, static_cast<size_t>(plan.width) * 3, 0}, plan, dtype, 0,
              plan.grid_h / config_.merge_size, out);
}

void ImageProcessor::write_bands(const RgbRows& img, const ImagePlan& plan, PixelDType dtype,
                                 int hb_begin, int hb_end, void* out) const {
  const int P = config_.patch_size, T = config_.temporal_patch_size, m = config_.merge_size;
  STOKER_CHECK(dtype != PixelDType::kUInt8, "write_bands: uint8 pixels are not patchified");
  if (dtype == PixelDType::kFloat32) {
    patchify_any(img, P, T, m, plan.grid_w, hb_begin, hb_end, norm_, static_cast<float*>(out));
  } else {
    patchify_any(img, P, T, m, plan.grid_w, hb_begin, hb_end, norm_,
                 static_cast<std::uint16_t*>(out));
  }
}

}  // namespace stoker::image
