// EXIF orientation as Pillow 9.4's `ImageOps.exif_transpose` reads it — the first thing
// transformers' `load_image` does to a path/URL/base64 image (spec/qwen-vl.md §1.1) — and the
// pixel transforms it applies (Pillow's `Image.transpose`). Which metadata counts, per format,
// and every malformed case are Pillow's; README.md "EXIF orientation" lists them.
// Pure functions over caller-owned bytes; thread-safe; never read outside `bytes`. A file whose
// metadata makes Pillow raise is reported in ExifOrientation::error (not a Result: the file may
// still be processed when orientation is not applied).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "stoker/image/decode.h"

namespace stoker::image {

struct ExifOrientation {
  // 1..8, the transform exif_transpose applies; 1 also when the tag is absent, out of range
  // (0, 9, 65535, ...) or of a type Pillow does not compare equal to 2..8 (BYTE, ASCII, ...).
  int value = 1;
  // Non-empty: opening the file and calling exif_transpose raises in Pillow 9.4 (why).
  std::string error = {};
};

// Reads the orientation from an encoded JPEG, PNG or WebP (header/metadata only, no pixels).
ExifOrientation read_exif_orientation(std::span<const std::uint8_t> bytes, ImageFormat format);

// Orientations 5..8 swap width and height.
constexpr bool orientation_swaps_axes(int orientation) { return orientation >= 5; }

// Writes `in` transformed as exif_transpose does for `orientation` (2 mirror, 3 rotate 180,
// 4 flip, 5 transpose, 6 rotate 90° clockwise, 7 transverse, 8 rotate 90° counter-clockwise;
// 1 copies). `out` is reused (capacity kept) and must not be `in`.
void apply_orientation(int orientation, const RgbImage& in, RgbImage* out);

namespace detail {

// What Pillow's Exif.load + ImageFileDirectory_v2 make of one EXIF block (the TIFF structure,
// with or without the "Exif\0\0" prefix): exposed for tests.
struct TiffOrientation {
  enum Status {
    kNoData,           // empty after the prefix: no EXIF at all
    kOk,               // IFD0 read (possibly partly: Pillow stops quietly at a truncation)
    kNotTiff,          // the header is not a TIFF header: Pillow raises SyntaxError
    kTruncatedHeader,  // 4..7 header bytes, or BigTIFF: Pillow raises struct.error
  };
  Status status = kNoData;
  bool tag_present = false;  // IFD0 holds 0x0112 (any type): Pillow then skips the XMP fallback
  int value = 1;             // 2..8 when the tag's first value equals one of them, else 1
};
TiffOrientation parse_exif_tiff(std::span<const std::uint8_t> block);

}  // namespace detail
}  // namespace stoker::image
