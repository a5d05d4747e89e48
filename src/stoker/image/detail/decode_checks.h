// Checks shared by the decoders (decode_rgb in decode.cc, JpegRowDecoder in jpeg_rows.cc), one
// copy each so both refuse the same inputs with the same words: the header's size against the
// pixel limit, and which libjpeg warnings are accepted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "stoker/base/result.h"
#include "stoker/image/decode.h"

namespace stoker::image::detail {

// A header's size: DataLoss when not positive, ResourceExhausted over limits.max_pixels —
// before anything image-sized is allocated (decompression bombs).
inline Status check_limits(const ImageHeader& h, const DecodeLimits& limits) {
  if (h.width <= 0 || h.height <= 0) {
    return data_loss("invalid image size " + std::to_string(h.width) + "x" +
                     std::to_string(h.height));
  }
  const std::int64_t pixels = std::int64_t{h.width} * h.height;
  if (pixels > limits.max_pixels) {
    return resource_exhausted("image size " + std::to_string(h.width) + "x" +
                              std::to_string(h.height) + " (" + std::to_string(pixels) +
                              " pixels) exceeds the limit of " +
                              std::to_string(limits.max_pixels) + " pixels");
  }
  return ok_status();
}

// libjpeg-turbo reports recoverable problems as warnings and still returns every pixel. Pillow
// raises "image file is truncated" when the data ends early, so a premature end is an error here,
// and so is every warning about damaged entropy-coded data (bad Huffman code, lost restart
// marker, premature end of a segment): Pillow would decode grey garbage there, and we never
// return a silently wrong sample. Warnings about harmless oddities of valid files are accepted,
// as Pillow accepts them. `msg` is libjpeg's formatted message (format_message).
inline bool benign_jpeg_warning(std::string_view msg) {
  static constexpr std::string_view kBenign[] = {
      "extraneous bytes before marker",        // padding before a marker / EOI
      "unknown JFIF revision number",          // JFIF 2.x files
      "Unknown Adobe color transform code",    // treated as no transform
      "Invalid SOS parameters for sequential",  // odd but decodable baseline scans
      "Inconsistent progression sequence",     // odd but decodable progressive scans
      "bad ICC marker",                        // colour profile is not used
  };
  for (std::string_view b : kBenign) {
    if (msg.find(b) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace stoker::image::detail
