// Which libjpeg warnings the JPEG decoders accept (decode_rgb through TurboJPEG, JpegRowDecoder
// through the libjpeg API). One list, so both decoders refuse the same damage.
#pragma once

#include <string_view>

namespace stoker::image::detail {

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
