// Encoders for synthetic media and tests. Output is deterministic: same pixels and options give
// the same bytes (no timestamps, single-threaded codecs).
#include "stoker/image/encode.h"

#include <png.h>
#include <turbojpeg.h>
#include <webp/encode.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>

namespace stoker::image {
namespace {

Status check_image(const RgbImage& im) {
  if (im.width <= 0 || im.height <= 0 ||
      im.pixels.size() != static_cast<size_t>(im.width) * im.height * 3) {
    return invalid_argument("encode: image buffer does not match its size");
  }
  return ok_status();
}

// ITU-R 601 luma in integers, as Pillow's RGB → L (L = R·299/1000 + G·587/1000 + B·114/1000).
inline std::uint8_t luma(const std::uint8_t* p) {
  return static_cast<std::uint8_t>((p[0] * 299 + p[1] * 587 + p[2] * 114 + 500) / 1000);
}

std::vector<std::uint8_t> make_alpha(const RgbImage& im, const std::vector<std::uint8_t>& given) {
  if (!given.empty()) return given;
  std::vector<std::uint8_t> a(static_cast<size_t>(im.width) * im.height);
  for (int y = 0; y < im.height; ++y) {
    for (int x = 0; x < im.width; ++x) {
      a[static_cast<size_t>(y) * im.width + x] = static_cast<std::uint8_t>((x * 7 + y * 3) & 255);
    }
  }
  return a;
}

}  // namespace

Result<std::vector<std::uint8_t>> encode_jpeg(const RgbImage& image, const JpegOptions& o) {
  STOKER_RETURN_IF_ERROR(check_image(image));
  if (o.quality < 1 || o.quality > 100) return invalid_argument("jpeg quality must be 1..100");
  if (o.grayscale && o.cmyk) return invalid_argument("jpeg: grayscale and cmyk are exclusive");
  std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitCompress(), tjDestroy);
  if (!tj) return internal_error("tjInitCompress failed");
  const size_t n = static_cast<size_t>(image.width) * image.height;
  const std::uint8_t* src = image.pixels.data();
  int pf = TJPF_RGB;
  int samp = o.subsample_420 ? TJSAMP_420 : TJSAMP_444;
  std::vector<std::uint8_t> converted;
  if (o.grayscale) {
    converted.resize(n);
    for (size_t p = 0; p < n; ++p) converted[p] = luma(src + 3 * p);
    pf = TJPF_GRAY;
    samp = TJSAMP_GRAY;
  } else if (o.cmyk) {
    // Naive ink separation, stored inverted (Adobe convention, which Pillow assumes on read):
    // k = 255 − max(R,G,B), c = 255·(max − R)/max, ...
    converted.resize(n * 4);
    for (size_t p = 0; p < n; ++p) {
      const std::uint8_t* s = src + 3 * p;
      const int mx = std::max({s[0], s[1], s[2]});
      std::uint8_t* d = &converted[p * 4];
      for (int c = 0; c < 3; ++c) {
        const int ink = mx == 0 ? 0 : (255 * (mx - s[c]) + mx / 2) / mx;
        d[c] = static_cast<std::uint8_t>(255 - ink);
      }
      d[3] = static_cast<std::uint8_t>(mx);  // 255 − k
    }
    pf = TJPF_CMYK;
  }
  const std::uint8_t* in = converted.empty() ? src : converted.data();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const int flags = (o.progressive ? TJFLAG_PROGRESSIVE : 0) | TJFLAG_ACCURATEDCT;
  if (tjCompress2(tj.get(), in, image.width, 0, image.height, pf, &buf, &size, samp, o.quality,
                  flags) != 0) {
    if (buf != nullptr) tjFree(buf);
    return internal_error(std::string("tjCompress2: ") + tjGetErrorStr2(tj.get()));
  }
  std::vector<std::uint8_t> out(buf, buf + size);
  tjFree(buf);
  return out;
}

// ---------------------------------------------------------------- PNG

namespace {

struct PngSink {
  std::vector<std::uint8_t>* out;
  char error[200];
};

void png_write_cb(png_structp png, png_bytep data, png_size_t n) {
  auto* sink = static_cast<PngSink*>(png_get_io_ptr(png));
  sink->out->insert(sink->out->end(), data, data + n);
}
void png_flush_cb(png_structp) {}
void png_enc_error_cb(png_structp png, png_const_charp msg) {
  auto* sink = static_cast<PngSink*>(png_get_error_ptr(png));
  std::snprintf(sink->error, sizeof(sink->error), "%s", msg);
  png_longjmp(png, 1);
}

struct PngPlan {
  int width, height, bit_depth, color_type;
  bool interlaced;
  const png_color* palette;
  int palette_size;
  const std::uint8_t* trns;
  int trns_size;
  std::uint8_t** rows;  // already packed at bit_depth
};

// C-style core (setjmp): only trivially destructible locals. The sink's vector lives in the
// caller's frame; libpng's frames between here and png_error are C.
int png_encode_core(PngSink* sink, const PngPlan& p) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, sink, png_enc_error_cb, nullptr);
  if (png == nullptr) return 1;
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    return 1;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return 1;
  }
  png_set_write_fn(png, sink, png_write_cb, png_flush_cb);
  png_set_compression_level(png, 6);
  png_set_IHDR(png, info, p.width, p.height, p.bit_depth, p.color_type,
               p.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (p.palette != nullptr) png_set_PLTE(png, info, p.palette, p.palette_size);
  if (p.trns != nullptr) png_set_tRNS(png, info, p.trns, p.trns_size, nullptr);
  png_write_info(png, info);
  png_write_image(png, p.rows);
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return 0;
}

// Deterministic palette: the image's own colours when they fit, else a fixed grid
// (bit depth 8: 6×6×6 cube; smaller depths: a grey ramp, which always fits).
void build_palette(const RgbImage& im, int bits, std::vector<png_color>* pal,
                   std::vector<std::uint8_t>* idx) {
  const size_t n = static_cast<size_t>(im.width) * im.height;
  const size_t max_colors = size_t{1} << bits;
  std::map<std::uint32_t, int> seen;
  idx->resize(n);
  bool fits = true;
  for (size_t p = 0; p < n && fits; ++p) {
    const std::uint8_t* s = &im.pixels[3 * p];
    const std::uint32_t key = (s[0] << 16) | (s[1] << 8) | s[2];
    auto [it, inserted] = seen.emplace(key, static_cast<int>(seen.size()));
    if (inserted && seen.size() > max_colors) fits = false;
    (*idx)[p] = static_cast<std::uint8_t>(it->second);
  }
  pal->clear();
  if (fits) {
    pal->resize(seen.size());
    for (auto [key, i] : seen) {
      (*pal)[i] = png_color{static_cast<png_byte>(key >> 16), static_cast<png_byte>(key >> 8),
                            static_cast<png_byte>(key)};
    }
    return;
  }
  if (bits == 8) {
    for (int r = 0; r < 6; ++r)
      for (int g = 0; g < 6; ++g)
        for (int b = 0; b < 6; ++b)
          pal->push_back(png_color{static_cast<png_byte>(r * 51), static_cast<png_byte>(g * 51),
                                   static_cast<png_byte>(b * 51)});
    for (size_t p = 0; p < n; ++p) {
      const std::uint8_t* s = &im.pixels[3 * p];
      auto q = [](int v) { return (v + 25) / 51; };
      (*idx)[p] = static_cast<std::uint8_t>(q(s[0]) * 36 + q(s[1]) * 6 + q(s[2]));
    }
    return;
  }
  const int levels = static_cast<int>(max_colors);
  for (int i = 0; i < levels; ++i) {
    const auto v = static_cast<png_byte>(i * 255 / (levels - 1));
    pal->push_back(png_color{v, v, v});
  }
  for (size_t p = 0; p < n; ++p) {
    (*idx)[p] = static_cast<std::uint8_t>((luma(&im.pixels[3 * p]) * (levels - 1) + 127) / 255);
  }
}

// Packs one row of sample values (one per element, already < 2^bits) MSB-first.
void pack_row(const std::uint8_t* v, int count, int bits, std::uint8_t* dst) {
  const int per_byte = 8 / bits;
  const int bytes = (count + per_byte - 1) / per_byte;
  std::memset(dst, 0, bytes);
  for (int i = 0; i < count; ++i) {
    const int shift = 8 - bits * (i % per_byte + 1);
    dst[i / per_byte] |= static_cast<std::uint8_t>(v[i] << shift);
  }
}

}  // namespace

Result<std::vector<std::uint8_t>> encode_png(const RgbImage& image, const PngOptions& o) {
  STOKER_RETURN_IF_ERROR(check_image(image));
  const int bd = o.bit_depth;
  const bool ok_depth =
      bd == 8 || (bd == 16 && (o.color == PngColor::kRgb || o.color == PngColor::kGray ||
                               o.color == PngColor::kRgba || o.color == PngColor::kGrayAlpha)) ||
      ((bd == 1 || bd == 2 || bd == 4) &&
       (o.color == PngColor::kGray || o.color == PngColor::kPalette));
  if (!ok_depth) return invalid_argument("png: unsupported bit depth for this colour type");
  const int w = image.width, h = image.height;
  const size_t n = static_cast<size_t>(w) * h;
  const bool has_alpha = o.color == PngColor::kRgba || o.color == PngColor::kGrayAlpha;
  std::vector<std::uint8_t> alpha;
  if (has_alpha) {
    alpha = make_alpha(image, o.alpha);
    if (alpha.size() != n) return invalid_argument("png: alpha must hold width*height bytes");
  }
  int channels = 3, ct = PNG_COLOR_TYPE_RGB;
  switch (o.color) {
    case PngColor::kRgb: break;
    case PngColor::kRgba: channels = 4; ct = PNG_COLOR_TYPE_RGB_ALPHA; break;
    case PngColor::kGray: channels = 1; ct = PNG_COLOR_TYPE_GRAY; break;
    case PngColor::kGrayAlpha: channels = 2; ct = PNG_COLOR_TYPE_GRAY_ALPHA; break;
    case PngColor::kPalette: channels = 1; ct = PNG_COLOR_TYPE_PALETTE; break;
  }
  // Sample values per pixel, 8-bit first; widened or packed afterwards.
  std::vector<std::uint8_t> samples(n * channels);
  std::vector<png_color> palette;
  std::vector<std::uint8_t> trns;
  if (o.color == PngColor::kPalette) {
    build_palette(image, bd, &palette, &samples);
    if (o.palette_trns) {
      trns.resize(palette.size());
      for (size_t i = 0; i < trns.size(); ++i) trns[i] = static_cast<std::uint8_t>(i * 37);
    }
  } else {
    for (size_t p = 0; p < n; ++p) {
      const std::uint8_t* s = &image.pixels[3 * p];
      std::uint8_t* d = &samples[p * channels];
      if (o.color == PngColor::kGray || o.color == PngColor::kGrayAlpha) {
        d[0] = luma(s);
        if (bd < 8) d[0] = static_cast<std::uint8_t>(d[0] >> (8 - bd));
      } else {
        d[0] = s[0], d[1] = s[1], d[2] = s[2];
      }
      if (has_alpha) d[channels - 1] = alpha[p];
    }
  }
  const size_t row_bytes = bd >= 8 ? static_cast<size_t>(w) * channels * (bd / 8)
                                   : (static_cast<size_t>(w) * bd + 7) / 8;
  std::vector<std::uint8_t> packed(row_bytes * h);
  std::vector<std::uint8_t*> rows(h);
  for (int y = 0; y < h; ++y) {
    std::uint8_t* dst = packed.data() + row_bytes * y;
    const std::uint8_t* src = samples.data() + static_cast<size_t>(y) * w * channels;
    rows[y] = dst;
    if (bd == 8) {
      std::memcpy(dst, src, row_bytes);
    } else if (bd == 16) {
      // v·257 spreads 8-bit values over the 16-bit range; the low byte varies so decoders that
      // keep it would differ from those taking the high byte — what tests want to catch.
      for (int i = 0; i < w * channels; ++i) {
        const int v = src[i] * 257 - ((i + y) % 3 == 0 ? 0 : (src[i] > 0 ? 1 : 0));
        dst[2 * i] = static_cast<std::uint8_t>(v >> 8);
        dst[2 * i + 1] = static_cast<std::uint8_t>(v & 255);
      }
    } else {
      pack_row(src, w, bd, dst);
    }
  }
  std::vector<std::uint8_t> out;
  PngSink sink{&out, {0}};
  PngPlan plan{w, h, bd, ct, o.interlaced,
               palette.empty() ? nullptr : palette.data(), static_cast<int>(palette.size()),
               trns.empty() ? nullptr : trns.data(), static_cast<int>(trns.size()), rows.data()};
  if (png_encode_core(&sink, plan) != 0) return internal_error(std::string("libpng: ") + sink.error);
  return out;
}

// ---------------------------------------------------------------- WebP

Result<std::vector<std::uint8_t>> encode_webp(const RgbImage& image, const WebpOptions& o) {
  STOKER_RETURN_IF_ERROR(check_image(image));
  if (!(o.quality >= 0.0f && o.quality <= 100.0f)) return invalid_argument("webp quality 0..100");
  const int w = image.width, h = image.height;
  std::uint8_t* buf = nullptr;
  size_t size = 0;
  if (o.with_alpha) {
    const std::vector<std::uint8_t> alpha = make_alpha(image, {});
    std::vector<std::uint8_t> rgba(static_cast<size_t>(w) * h * 4);
    for (size_t p = 0; p < alpha.size(); ++p) {
      std::memcpy(&rgba[p * 4], &image.pixels[p * 3], 3);
      rgba[p * 4 + 3] = alpha[p];
    }
    size = o.lossless ? WebPEncodeLosslessRGBA(rgba.data(), w, h, w * 4, &buf)
                      : WebPEncodeRGBA(rgba.data(), w, h, w * 4, o.quality, &buf);
  } else {
    size = o.lossless ? WebPEncodeLosslessRGB(image.pixels.data(), w, h, w * 3, &buf)
                      : WebPEncodeRGB(image.pixels.data(), w, h, w * 3, o.quality, &buf);
  }
  if (size == 0 || buf == nullptr) {
    if (buf != nullptr) WebPFree(buf);
    return internal_error("libwebp encode failed (size " + std::to_string(w) + "x" +
                          std::to_string(h) + ")");
  }
  std::vector<std::uint8_t> out(buf, buf + size);
  WebPFree(buf);
  return out;
}

}  // namespace stoker::image
