// The Qwen-VL image processor (spec/qwen-vl.md §1.3, §1.5), HF "slow" semantics:
// decode → RGB → EXIF orientation (as transformers' load_image) → smart_resize plan → exact
// bicubic resize (uint8) → rescale (float64 × 1/255 →
// float32) → normalise ((x − mean) / std in float32) → patchify, written straight into the
// caller's buffer as `pixel_values` rows (grid_t·grid_h·grid_w rows × C·T·P·P columns).
// A still image is two identical temporal frames (T = temporal_patch_size = 2).
// ImageProcessor is immutable after creation and thread-safe; scratch buffers are per call
// (or per caller via ImageScratch). Errors: those of decode_rgb and smart_resize, with context.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "stoker/base/result.h"
#include "stoker/image/decode.h"
#include "stoker/image/exif.h"
#include "stoker/image/resample.h"
#include "stoker/image/detail/normalize_kernels.h"
#include "stoker/image/smart_resize.h"

namespace stoker::image {

struct ImageProcessorConfig {
  int patch_size = 14;
  int temporal_patch_size = 2;
  int merge_size = 2;
  std::int64_t min_pixels = 56 * 56;
  std::int64_t max_pixels = 28 * 28 * 1280;
  std::array<float, 3> image_mean = {0.48145466f, 0.4578275f, 0.40821073f};
  std::array<float, 3> image_std = {0.26862954f, 0.26130258f, 0.27577711f};
  double rescale_factor = 1.0 / 255.0;
  bool do_resize = true;
  bool do_rescale = true;
  bool do_normalize = true;
  // Apply the EXIF orientation as transformers' load_image does (PIL.ImageOps.exif_transpose,
  // for images given as a path, URL or base64). Off: the pixels as stored, as when a recipe
  // opens images itself with Image.open (qwen-vl-utils' fetch_image, LLaMA-Factory's
  // mm_plugin; README.md "EXIF orientation").
  bool apply_exif_orientation = true;
  // kCurrent: transformers ≥ 4.53 (small images are enlarged); kRefuseBelowFactor: ≤ 4.52.
  SmartResizeRules resize_rules = SmartResizeRules::kCurrent;
  DecodeLimits limits = {};

  int factor() const { return patch_size * merge_size; }
  Status validate() const;
};

// The string forms of the two compatibility options (CLI flags, config files):
// --exif apply|ignore → apply_exif_orientation; --small-images resize|refuse → resize_rules.
// InvalidArgument for anything else.
Status set_exif_option(std::string_view value, ImageProcessorConfig* config);
Status set_small_images_option(std::string_view value, ImageProcessorConfig* config);

// kUInt8: for finishing on the trainer's device (issue 26) — the resized image itself, as the
// resize writes it: plan.height rows of plan.width × 3 bytes ([H, W, 3], raster order; one frame:
// no temporal copies, no rescale or normalise). That is rows() × 3·P·P bytes, the count
// columns(kUInt8) accounts a row for; stoker.finish cuts it into patches on the device (a view)
// and value_table() gives what rescale + normalise make of each byte.
enum class PixelDType { kFloat32, kBFloat16, kUInt8 };

// What an image will become, known from its header alone (before decoding).
struct ImagePlan {
  int src_width = 0, src_height = 0;  // as displayed: after the EXIF orientation
  int width = 0, height = 0;          // after smart_resize
  int grid_t = 1, grid_h = 0, grid_w = 0;
  int orientation = 1;  // the EXIF transform to apply after decoding (1: none, or not applied)
  // The size the decoder produces (before the orientation transform).
  int decoded_width() const { return orientation_swaps_axes(orientation) ? src_height : src_width; }
  int decoded_height() const { return orientation_swaps_axes(orientation) ? src_width : src_height; }
  std::int64_t rows() const { return std::int64_t{grid_t} * grid_h * grid_w; }
  // Number of LLM tokens the image expands to: rows / merge².
  std::int64_t tokens(int merge_size) const { return rows() / (merge_size * merge_size); }
};

// Where process() spent its time, when asked (tracing): the fused path interleaves the three
// phases row band by row band, so these are sums. decode = the decoder's calls (rows, or the
// whole image), normalise = rescale + normalise + patchify of finished bands, resize = the rest.
struct PhaseTimes {
  std::int64_t decode_ns = 0, resize_ns = 0, normalise_ns = 0;
};

// Reusable per-thread buffers so steady-state processing does not allocate.
struct ImageScratch {
  PhaseTimes* phases = nullptr;  // set by a caller that wants process()'s phases timed
  RgbImage decoded;
  RgbImage stored;  // the decoder's output before an EXIF transform (only when there is one)
  RgbImage resized;
  std::vector<std::uint8_t> band;    // one band of P·merge resized rows (the streaming path)
  std::vector<std::uint8_t> window;  // 16 decoded JPEG rows on their way to the resampler
};

// Rows of an RGB image held somewhere in memory: row y at base + (y − y0)·stride.
struct RgbRows {
  const std::uint8_t* base = nullptr;
  std::size_t stride = 0;
  int y0 = 0;
  const std::uint8_t* row(int y) const { return base + static_cast<std::size_t>(y - y0) * stride; }
};

class ImageProcessor {
 public:
  static Result<ImageProcessor> create(const ImageProcessorConfig& config);

  const ImageProcessorConfig& config() const { return config_; }
  std::int64_t columns() const;  // C · T · P · P (1176 for P = 14, 1536 for P = 16)
  // Elements per row in `dtype`: columns(), or P · P · 3 for kUInt8 (bytes of the resized image
  // per row: a kUInt8 output is rows() × that, laid out [H, W, 3], not row by row).
  std::int64_t columns(PixelDType dtype) const;
  // What normalise makes of every byte: out[c·256 + x] = the value (float32 or bf16 bits) the
  // rows of `dtype` hold for byte x of channel c — computed by the same kernel on this CPU, so a
  // table lookup reproduces pixel_values bit for bit (stoker.finish). `dtype` ≠ kUInt8.
  void value_table(PixelDType dtype, void* out) const;

  // Errors: smart_resize's; DataLoss for EXIF that makes Pillow's exif_transpose raise (only
  // when apply_exif_orientation).
  Result<ImagePlan> plan(const ImageHeader& header) const;
  Result<ImagePlan> plan(std::span<const std::uint8_t> bytes) const;

  // Decodes `bytes` into the plan's source image (src_width × src_height RGB, the EXIF transform
  // applied): for callers that resize themselves (the engine's per-sample path, inspect);
  // process() does it all in one pass. `out` and `stored` (the untransformed decode, used only
  // for orientations 2..8; a local buffer when null) are reused. DataLoss when the decoded size
  // is not the header's.
  Status decode(std::span<const std::uint8_t> bytes, const ImagePlan& plan, RgbImage* out,
                RgbImage* stored = nullptr) const;

  // Whether `plan` fits this processor (its size is its grid × patch, the grid tiles merge
  // blocks, one frame, a known orientation): InvalidArgument otherwise. process() checks it; a
  // plan from elsewhere (the cluster's wire) is checked before its pixels are finished.
  Status check_plan(const ImagePlan& plan) const;
  // Writes plan.rows() × columns(dtype) elements of `dtype` into `out` (must be that large).
  // If `resized_out` is non-null it receives the resized uint8 image (for parity checks).
  Status process(std::span<const std::uint8_t> bytes, const ImagePlan& plan, PixelDType dtype,
                 void* out, ImageScratch* scratch, RgbImage* resized_out = nullptr) const;

  // Normalise + patchify an already resized image (plan.width × plan.height).
  void normalize_patchify(const RgbImage& resized, const ImagePlan& plan, PixelDType dtype,
                          void* out) const;
  // The same for resized pixels held elsewhere: plan.height rows of plan.width × 3 bytes at
  // `rgb` (scale-out's uint8 wire: the receiver normalises what a worker resized).
  void normalize_patchify(const std::uint8_t* rgb, const ImagePlan& plan, PixelDType dtype,
                          void* out) const;

 private:
  explicit ImageProcessor(const ImageProcessorConfig& config);
  // Writes the output rows of merge-row bands [hb_begin, hb_end) (normalize_patchify = all).
  // Resample rows from `source` (plan.src size) and patchify band by band (the streaming path).
  Status stream(const RowSource& source, const ImagePlan& plan, PixelDType dtype, void* out,
                ImageScratch* scratch) const;
  Status stream_jpeg(JpegRowDecoder& dec, const ImagePlan& plan, PixelDType dtype, void* out,
                     ImageScratch* scratch) const;
  void write_bands(const RgbRows& img, const ImagePlan& plan, PixelDType dtype, int hb_begin,
                   int hb_end, void* out) const;
  ImageProcessorConfig config_;
  // Rescale/normalise constants for the SIMD kernel (detail/normalize_kernels.h).
  detail::NormalizeParams norm_;
};

}  // namespace stoker::image
