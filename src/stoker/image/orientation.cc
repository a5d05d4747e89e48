// exif_transpose's pixel transforms (Pillow's Image.transpose), on interleaved 8-bit RGB.
// Mirror/flip/180° work row by row; the four that swap axes walk the output in 16×16 tiles so
// that the source columns they read stay in cache (a plain row-order walk would touch a new
// source cache line for every output pixel).
#include <algorithm>
#include <cstring>

#include "stoker/base/result.h"
#include "stoker/image/exif.h"

namespace stoker::image {
namespace {

// out(x, y) = in(sx, sy), output W' = H, H' = W. Pillow's names: 5 TRANSPOSE, 6 ROTATE_270
// (90° clockwise), 7 TRANSVERSE, 8 ROTATE_90 (90° counter-clockwise).
template <int kOrientation>
void swap_axes(const RgbImage& in, RgbImage* out) {
  constexpr int kTile = 16;
  const int w = in.width, h = in.height;  // output is h wide, w tall
  for (int ty = 0; ty < w; ty += kTile) {
    for (int tx = 0; tx < h; tx += kTile) {
      const int y_end = std::min(ty + kTile, w), x_end = std::min(tx + kTile, h);
      for (int y = ty; y < y_end; ++y) {
        std::uint8_t* d = out->row(y) + 3 * static_cast<size_t>(tx);
        const int sx = kOrientation == 5 || kOrientation == 6 ? y : w - 1 - y;
        for (int x = tx; x < x_end; ++x, d += 3) {
          const int sy = kOrientation == 5 || kOrientation == 8 ? x : h - 1 - x;
          std::memcpy(d, in.row(sy) + 3 * static_cast<size_t>(sx), 3);
        }
      }
    }
  }
}

void mirror_row(const std::uint8_t* src, int width, std::uint8_t* dst) {
  for (int x = 0; x < width; ++x) std::memcpy(dst + 3 * x, src + 3 * (width - 1 - x), 3);
}

}  // namespace

void apply_orientation(int orientation, const RgbImage& in, RgbImage* out) {
  STOKER_CHECK(out != &in, "apply_orientation: out must not alias in");
  const bool swap = orientation_swaps_axes(orientation);
  out->width = swap ? in.height : in.width;
  out->height = swap ? in.width : in.height;
  out->pixels.resize(in.pixels.size());
  const int w = in.width, h = in.height;
  const size_t stride = static_cast<size_t>(w) * 3;
  switch (orientation) {
    case 2:
      for (int y = 0; y < h; ++y) mirror_row(in.row(y), w, out->row(y));
      return;
    case 3:
      for (int y = 0; y < h; ++y) mirror_row(in.row(h - 1 - y), w, out->row(y));
      return;
    case 4:
      for (int y = 0; y < h; ++y) std::memcpy(out->row(y), in.row(h - 1 - y), stride);
      return;
    case 5: return swap_axes<5>(in, out);
    case 6: return swap_axes<6>(in, out);
    case 7: return swap_axes<7>(in, out);
    case 8: return swap_axes<8>(in, out);
    default:
      std::memcpy(out->pixels.data(), in.pixels.data(), in.pixels.size());
      return;
  }
}

}  // namespace stoker::image
