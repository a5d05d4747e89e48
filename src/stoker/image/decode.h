// Image decoding: header probe, then decode to 8-bit interleaved RGB with the colour conversions
// Pillow's `Image.convert("RGB")` applies (the HF slow processor's first step): L/LA → replicate,
// P → palette lookup, RGBA/LA → alpha dropped (no compositing), CMYK → Pillow's cmyk2rgb,
// 16-bit → high byte. JPEG via TurboJPEG, PNG via libpng, WebP via libwebp.
// The pixel limit is checked from the header before any large allocation (decompression bombs).
// Thread-safe (no shared state). Errors: InvalidArgument (unsupported format or mode),
// DataLoss (corrupt / truncated / empty), ResourceExhausted (over the pixel limit).
#pragma once

#include <cstdint>
#include <memory>
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
  // EXIF orientation as Pillow 9.4's ImageOps.exif_transpose would apply it (exif.h): 1..8,
  // 1 when absent. exif_error: why exif_transpose would raise on this file (empty if it would
  // not); ImageProcessor turns it into an error only when it applies the orientation.
  int orientation = 1;
  std::string exif_error = {};
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

// Reads only the header (and, for the orientation, the metadata segments/chunks — for a PNG
// without EXIF before its pixels, the chunk list after them too). Errors as decode_rgb for
// unreadable/unsupported data; malformed EXIF is not an error here (see exif_error).
Result<ImageHeader> probe_image(std::span<const std::uint8_t> bytes);

// Probes, checks the limits, and decodes. `out` is reused (its capacity is kept).
Status decode_rgb(std::span<const std::uint8_t> bytes, const DecodeLimits& limits, RgbImage* out);
Result<RgbImage> decode_rgb(std::span<const std::uint8_t> bytes, const DecodeLimits& limits = {});

// Streams a JPEG's RGB rows top to bottom, a few at a time, into the caller's buffers, so a
// consumer (the resampler) can use each block while it is still in cache. Same pixels as
// decode_rgb (libjpeg defaults = Pillow's: ISLOW DCT, fancy upsampling; grey replicated to RGB),
// through the libjpeg API instead of TurboJPEG (jpeg_rows.cc).
// Only YCbCr/RGB and greyscale JPEGs with the sampling factors TurboJPEG classifies (4:4:4,
// 4:2:2, 4:2:0, 4:4:0, 4:1:1, grey; decode_rgb refuses others): open() returns Unimplemented for
// CMYK/YCCK and other sampling layouts (the caller then uses decode_rgb). Any libjpeg error, and
// any warning decode_rgb's benign list does not accept — every warning is checked, not only the
// first as TurboJPEG reports them — makes open()/read() return DataLoss; callers fall back to
// decode_rgb, which gives the canonical error text. Other open() errors are decode_rgb's own:
// probe_image's, InvalidArgument for a non-JPEG, ResourceExhausted over `limits` (checked from
// the header before libjpeg allocates anything).
// The read() that delivers the last row also reads on to EOI, so a missing EOI or trailing
// damage fails as in decode_rgb; a caller that stops early skips that check (and may destroy the
// decoder at any point). `bytes` is not copied: it must outlive the decoder.
// Not thread-safe; one per thread/call. Movable; a moved-from decoder may only be destroyed or
// assigned to.
class JpegRowDecoder {
 public:
  static Result<JpegRowDecoder> open(std::span<const std::uint8_t> bytes,
                                     const DecodeLimits& limits = {});
  ~JpegRowDecoder();
  JpegRowDecoder(JpegRowDecoder&&) noexcept;
  JpegRowDecoder& operator=(JpegRowDecoder&&) noexcept;

  int width() const;
  int height() const;
  int rows_read() const;  // rows delivered so far

  // Decodes the next n rows (n ≥ 1, rows_read() + n ≤ height()) into rows[0..n), each
  // width()·3 bytes. InvalidArgument for a bad n (nothing decoded). After a failure the rows may
  // be partly written and every later read() returns the same error.
  Status read(std::uint8_t* const* rows, int n);

 private:
  struct State;  // jpeg_rows.cc
  explicit JpegRowDecoder(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace stoker::image
