// Decoders. Each codec follows the same shape: sniff the magic bytes, read the header (cheap),
// check the pixel limit, then decode straight into the caller's RgbImage.
// Pillow parity notes live next to each conversion; README.md lists them.
#include "stoker/image/decode.h"

#include <png.h>
#include <turbojpeg.h>
#include <webp/decode.h>
#include <webp/demux.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "stoker/image/detail/decode_checks.h"
#include "stoker/image/exif.h"

namespace stoker::image {

std::string_view format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::kJpeg: return "JPEG";
    case ImageFormat::kPng: return "PNG";
    case ImageFormat::kWebp: return "WebP";
  }
  return "?";
}

namespace {

constexpr std::uint8_t kPngMagic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

bool starts_with(std::span<const std::uint8_t> b, const void* magic, size_t n, size_t at = 0) {
  return b.size() >= at + n && std::memcmp(b.data() + at, magic, n) == 0;
}

// Identifies the container from magic bytes. Formats we recognise but do not decode get a clear
// InvalidArgument naming them; anything else is DataLoss (corrupt or not an image).
Result<ImageFormat> sniff(std::span<const std::uint8_t> b) {
  if (b.empty()) return data_loss("empty image data (0 bytes)");
  if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return ImageFormat::kJpeg;
  if (starts_with(b, kPngMagic, 8)) return ImageFormat::kPng;
  if (starts_with(b, "RIFF", 4) && starts_with(b, "WEBP", 4, 8)) return ImageFormat::kWebp;
  const char* other = nullptr;
  if (starts_with(b, "GIF87a", 6) || starts_with(b, "GIF89a", 6)) other = "GIF";
  else if (starts_with(b, "BM", 2)) other = "BMP";
  else if (starts_with(b, "II*\0", 4) || starts_with(b, "MM\0*", 4)) other = "TIFF";
  else if (starts_with(b, "ftyp", 4, 4)) other = "HEIF/AVIF (ISO-BMFF)";
  else if (b.size() >= 2 && b[0] == 0xFF && b[1] == 0x0A) other = "JPEG XL";
  else if (starts_with(b, "\0\0\0\x0CJXL ", 8)) other = "JPEG XL";
  if (other != nullptr) {
    return invalid_argument(std::string("unsupported image format ") + other +
                            " (supported: JPEG, PNG, WebP)");
  }
  if (b.size() < 8) return data_loss("not an image: only " + std::to_string(b.size()) + " bytes");
  return data_loss("not an image: unrecognised data (not JPEG, PNG or WebP)");
}

void size_output(int w, int h, RgbImage* out) {
  out->width = w;
  out->height = h;
  out->pixels.resize(static_cast<size_t>(w) * h * 3);
}

// ---------------------------------------------------------------- JPEG

// Walks the marker segments up to the first SOFn: size, components, progressive. Pure parsing,
// so probing needs no TurboJPEG handle.
Result<ImageHeader> probe_jpeg(std::span<const std::uint8_t> b) {
  size_t i = 2;
  while (true) {
    while (i < b.size() && b[i] != 0xFF) ++i;  // tolerate junk between segments
    while (i < b.size() && b[i] == 0xFF) ++i;  // fill bytes
    if (i >= b.size()) return data_loss("truncated JPEG: no frame header (SOF) found");
    const std::uint8_t m = b[i++];
    if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) continue;  // no length
    if (m == 0xD9 || m == 0xDA) return data_loss("corrupt JPEG: scan data before frame header");
    if (i + 2 > b.size()) return data_loss("truncated JPEG header");
    const size_t len = (size_t{b[i]} << 8) | b[i + 1];
    if (len < 2) return data_loss("corrupt JPEG: bad marker segment length");
    const bool sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
    if (sof) {
      if (i + 8 > b.size() || len < 8) return data_loss("truncated JPEG frame header");
      ImageHeader h;
      h.format = ImageFormat::kJpeg;
      h.bit_depth = b[i + 2];
      h.height = (b[i + 3] << 8) | b[i + 4];
      h.width = (b[i + 5] << 8) | b[i + 6];
      const int comps = b[i + 7];
      h.progressive = (m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE);
      if (m == 0xC3 || m == 0xC7 || m == 0xCB || m == 0xCF) {
        return invalid_argument("unsupported JPEG: lossless (SOF" + std::to_string(m - 0xC0) + ")");
      }
      // Arithmetic-coded (SOF9/10) JPEGs pass: libjpeg-turbo decodes them, as Pillow does.
      if (h.bit_depth != 8) {
        return invalid_argument("unsupported JPEG: " + std::to_string(h.bit_depth) +
                                "-bit samples");
      }
      if (comps == 1) h.mode = "L";
      else if (comps == 3) h.mode = "RGB";
      else if (comps == 4) h.mode = "CMYK";
      else return invalid_argument("unsupported JPEG: " + std::to_string(comps) + " components");
      if (h.height == 0) return invalid_argument("unsupported JPEG: height defined by DNL marker");
      return h;
    }
    i += len;
  }
}

struct TjDeleter {
  void operator()(void* h) const { tjDestroy(h); }
};
using TjHandle = std::unique_ptr<void, TjDeleter>;

Status jpeg_failure(tjhandle tj, const char* what) {
  const std::string msg = tjGetErrorStr2(tj);
  const bool warning = tjGetErrorCode(tj) == TJERR_WARNING;
  if (warning && detail::benign_jpeg_warning(msg)) return ok_status();
  if (msg.find("Premature end of JPEG file") != std::string::npos) {
    return data_loss("truncated JPEG (image file is truncated): " + msg);
  }
  return data_loss(std::string(what) + (warning ? " (corrupt data): " : ": ") + msg);
}

inline std::uint8_t muldiv255(int a, int b) {
  const int t = a * b + 128;
  return static_cast<std::uint8_t>(((t >> 8) + t) >> 8);
}

Status decode_jpeg(std::span<const std::uint8_t> b, const ImageHeader& h, RgbImage* out) {
  // A fresh decompressor per file. Reusing one per thread saved nothing measurable and is wrong:
  // libjpeg keeps the quantisation and Huffman tables of the previous datastream (for abbreviated
  // streams), so a JPEG lacking its own tables decoded with the previous image's on a warm handle
  // and failed on a fresh one; Pillow, fresh per image, refuses it. (libjpeg-turbo 2.1.5 also
  // rejected the next valid file on a handle that had failed.)
  const TjHandle handle(tjInitDecompress());
  tjhandle tj = handle.get();
  if (tj == nullptr) return internal_error("tjInitDecompress failed");
  int w = 0, hh = 0, subsamp = 0, cs = 0;
  if (tjDecompressHeader3(tj, b.data(), static_cast<unsigned long>(b.size()), &w, &hh, &subsamp,
                          &cs) != 0) {
    STOKER_RETURN_IF_ERROR(jpeg_failure(tj, "corrupt JPEG header"));
  }
  if (w != h.width || hh != h.height) return data_loss("corrupt JPEG: inconsistent frame size");
  // Flags 0 = libjpeg's defaults, which are Pillow's: ISLOW DCT, fancy upsampling.
  const int flags = 0;
  if (cs == TJCS_CMYK || cs == TJCS_YCCK) {
    // Pillow reads 4-component JPEGs as "CMYK;I" (Adobe inverted) and convert("RGB") applies
    // cmyk2rgb: with ink = 255 - stored, out = nk - nk·ink/255 where nk = 255 - ink_k = stored_k.
    std::vector<std::uint8_t> cmyk(static_cast<size_t>(w) * hh * 4);
    if (tjDecompress2(tj, b.data(), static_cast<unsigned long>(b.size()), cmyk.data(), w, 0, hh,
                      TJPF_CMYK, flags) != 0) {
      STOKER_RETURN_IF_ERROR(jpeg_failure(tj, "corrupt JPEG"));
    }
    size_output(w, hh, out);
    std::uint8_t* o = out->pixels.data();
    const size_t n = static_cast<size_t>(w) * hh;
    for (size_t p = 0; p < n; ++p) {
      const std::uint8_t* s = &cmyk[p * 4];
      const int nk = s[3];
      for (int c = 0; c < 3; ++c) {
        const int v = nk - muldiv255(255 - s[c], nk);
        o[p * 3 + c] = static_cast<std::uint8_t>(std::clamp(v, 0, 255));
      }
    }
    return ok_status();
  }
  size_output(w, hh, out);
  // Grey JPEGs come out replicated into RGB, as Pillow's L → RGB.
  if (tjDecompress2(tj, b.data(), static_cast<unsigned long>(b.size()), out->pixels.data(), w, 0,
                    hh, TJPF_RGB, flags) != 0) {
    STOKER_RETURN_IF_ERROR(jpeg_failure(tj, "corrupt JPEG"));
  }
  return ok_status();
}

// ---------------------------------------------------------------- PNG

// Pillow's PNG modes (PngImagePlugin._MODES) for (bit depth, colour type).
const char* png_mode(int depth, int color_type) {
  switch (color_type) {
    case PNG_COLOR_TYPE_GRAY: return depth == 1 ? "1" : depth == 16 ? "I" : "L";
    case PNG_COLOR_TYPE_RGB: return "RGB";
    case PNG_COLOR_TYPE_PALETTE: return "P";
    case PNG_COLOR_TYPE_GRAY_ALPHA: return depth == 16 ? "RGBA" : "LA";
    case PNG_COLOR_TYPE_RGB_ALPHA: return "RGBA";
  }
  return "?";
}

Result<ImageHeader> probe_png(std::span<const std::uint8_t> b) {
  // Signature (8) + IHDR length/type (8) + IHDR data (13).
  if (b.size() < 8 + 8 + 13) return data_loss("truncated PNG header");
  if (std::memcmp(b.data() + 12, "IHDR", 4) != 0) return data_loss("corrupt PNG: no IHDR chunk");
  const std::uint8_t* d = b.data() + 16;
  auto be32 = [](const std::uint8_t* p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
           p[3];
  };
  const std::uint32_t w = be32(d), h = be32(d + 4);
  if (w == 0 || h == 0 || w > 0x7FFFFFFF || h > 0x7FFFFFFF) {
    return data_loss("corrupt PNG: invalid size");
  }
  ImageHeader hdr;
  hdr.format = ImageFormat::kPng;
  hdr.width = static_cast<int>(w);
  hdr.height = static_cast<int>(h);
  hdr.bit_depth = d[8];
  hdr.mode = png_mode(d[8], d[9]);
  if (hdr.mode == "?") return data_loss("corrupt PNG: invalid colour type");
  return hdr;
}

// State shared with libpng's C callbacks. Plain data only: libpng reports errors by longjmp, which
// must never cross a frame holding C++ objects with destructors.
struct PngIo {
  const std::uint8_t* data;
  size_t size;
  size_t pos;
  char error[200];
};

void png_read_cb(png_structp png, png_bytep dst, png_size_t n) {
  auto* io = static_cast<PngIo*>(png_get_io_ptr(png));
  if (n > io->size - io->pos) png_error(png, "image file is truncated");
  std::memcpy(dst, io->data + io->pos, n);
  io->pos += n;
}

void png_error_cb(png_structp png, png_const_charp msg) {
  auto* io = static_cast<PngIo*>(png_get_error_ptr(png));
  std::snprintf(io->error, sizeof(io->error), "%s", msg);
  png_longjmp(png, 1);
}

void png_warning_cb(png_structp, png_const_charp) {}  // Pillow ignores ancillary-chunk issues

// What the transformed rows look like, decided from IHDR by png_setup below.
struct PngLayout {
  int width, height, bytes_per_pixel;
  bool gray16;  // rows are 16-bit grey, converted by clamping (Pillow mode "I" → RGB)
};

// Everything between png_create_read_struct and the last libpng call lives in this C-style
// function: only trivially destructible locals, so longjmp is safe. `rows` is filled by the caller
// once the layout is known (through `alloc`), so no allocation happens here.
// Returns 0 on success, 1 on a libpng error (message in io->error).
using PngAlloc = std::uint8_t** (*)(void* ctx, const PngLayout& layout);

int png_decode_core(PngIo* io, PngAlloc alloc, void* ctx) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, io, png_error_cb, png_warning_cb);
  if (png == nullptr) {
    std::snprintf(io->error, sizeof(io->error), "png_create_read_struct failed");
    return 1;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    std::snprintf(io->error, sizeof(io->error), "png_create_info_struct failed");
    return 1;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return 1;
  }
  png_set_read_fn(png, io, png_read_cb);
  // Pillow does not verify ancillary-chunk CRCs strictly either; critical chunks stay checked.
  png_set_crc_action(png, PNG_CRC_DEFAULT, PNG_CRC_WARN_DISCARD);
  png_set_user_limits(png, 0x7FFFFFFF, 0x7FFFFFFF);
  // libpng allocates (and zeroes) a text/ICC chunk's buffer from its length field before reading
  // it, even over the chunk malloc cap (only a warning in 1.6.39): a 156-byte file whose iTXt
  // claimed 1 GiB took 1 GiB and a minute under ASan (found by the fuzzer). The pixels need none
  // of these chunks (EXIF comes from probe_image; Pillow's convert("RGB") ignores ICC), so they
  // are skipped unread; the cap guards whatever else libpng buffers.
  static const png_byte kSkipped[] = "tEXt\0zTXt\0iTXt\0iCCP\0sPLT\0eXIf\0pCAL\0sCAL";
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, kSkipped, 8);
  png_set_chunk_malloc_max(png, std::max<png_alloc_size_t>(io->size, png_alloc_size_t{8} << 20));
  png_read_info(png, info);
  const int depth = png_get_bit_depth(png, info);
  const int ct = png_get_color_type(png, info);
  PngLayout layout{static_cast<int>(png_get_image_width(png, info)),
                   static_cast<int>(png_get_image_height(png, info)), 3, false};
  if (ct == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);  // P → RGB via PLTE
  if (ct == PNG_COLOR_TYPE_GRAY && depth < 8) {
    // 1 → 0/255, 2 → ×85, 4 → ×17: the same as Pillow's "1" and "L;2"/"L;4" unpackers.
    png_set_expand_gray_1_2_4_to_8(png);
  }
  if (ct == PNG_COLOR_TYPE_GRAY && depth == 16) {
    layout.gray16 = true;  // keep 16-bit, clamp below (Pillow "I" → RGB clips at 255)
    layout.bytes_per_pixel = 2;
  } else {
    if (depth == 16) png_set_strip_16(png);  // high byte: Pillow's RGB;16B / RGBA;16B / LA;16B
    if (ct == PNG_COLOR_TYPE_GRAY || ct == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  }
  // Alpha, and tRNS expanded to alpha by palette_to_rgb, is dropped: no compositing.
  png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int channels = png_get_channels(png, info);
  if (channels * (layout.gray16 ? 2 : 1) != layout.bytes_per_pixel ||
      png_get_rowbytes(png, info) !=
          static_cast<size_t>(layout.width) * static_cast<size_t>(layout.bytes_per_pixel)) {
    std::snprintf(io->error, sizeof(io->error), "unexpected PNG transform result");
    png_destroy_read_struct(&png, &info, nullptr);
    return 1;
  }
  std::uint8_t** rows = alloc(ctx, layout);
  png_read_image(png, rows);
  // No png_read_end: trailing chunks (and a missing IEND) do not affect pixels, as in Pillow.
  png_destroy_read_struct(&png, &info, nullptr);
  return 0;
}

struct PngTarget {
  RgbImage* out;
  std::vector<std::uint8_t> gray16;
  std::vector<std::uint8_t*> rows;
};

std::uint8_t** png_alloc(void* ctx, const PngLayout& layout) {
  auto* t = static_cast<PngTarget*>(ctx);
  size_output(layout.width, layout.height, t->out);
  std::uint8_t* base = t->out->pixels.data();
  size_t stride = static_cast<size_t>(layout.width) * 3;
  if (layout.gray16) {
    t->gray16.resize(static_cast<size_t>(layout.width) * layout.height * 2);
    base = t->gray16.data();
    stride = static_cast<size_t>(layout.width) * 2;
  }
  t->rows.resize(layout.height);
  for (int y = 0; y < layout.height; ++y) t->rows[y] = base + stride * y;
  return t->rows.data();
}

Status decode_png(std::span<const std::uint8_t> b, RgbImage* out) {
  PngIo io{b.data(), b.size(), 0, {0}};
  PngTarget target{out, {}, {}};
  if (png_decode_core(&io, png_alloc, &target) != 0) {
    const std::string msg = io.error;
    if (msg.find("truncated") != std::string::npos) return data_loss("truncated PNG: " + msg);
    return data_loss("corrupt PNG: " + msg);
  }
  if (!target.gray16.empty()) {
    const size_t n = static_cast<size_t>(out->width) * out->height;
    const std::uint8_t* s = target.gray16.data();
    std::uint8_t* o = out->pixels.data();
    for (size_t p = 0; p < n; ++p) {
      const int v = (s[2 * p] << 8) | s[2 * p + 1];  // big-endian sample
      o[3 * p] = o[3 * p + 1] = o[3 * p + 2] = static_cast<std::uint8_t>(std::min(v, 255));
    }
  }
  return ok_status();
}

// ---------------------------------------------------------------- WebP

Result<ImageHeader> probe_webp(std::span<const std::uint8_t> b, WebPBitstreamFeatures* f) {
  const VP8StatusCode st = WebPGetFeatures(b.data(), b.size(), f);
  if (st == VP8_STATUS_NOT_ENOUGH_DATA) return data_loss("truncated WebP header");
  if (st != VP8_STATUS_OK) return data_loss("corrupt WebP header (status " + std::to_string(st) + ")");
  ImageHeader h;
  h.format = ImageFormat::kWebp;
  h.width = f->width;
  h.height = f->height;
  h.mode = f->has_alpha ? "RGBA" : "RGB";
  return h;
}

std::string webp_status(VP8StatusCode st) {
  switch (st) {
    case VP8_STATUS_NOT_ENOUGH_DATA: return "image file is truncated";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    default: return "status " + std::to_string(st);
  }
}

// Pillow decodes WebP through WebPAnimDecoder into straight (not premultiplied) RGBA and drops
// alpha for RGB; for a still image that is exactly libwebp's RGB output (same upsampler, alpha is
// a separate plane). Animated files: the first frame, composited as the anim decoder does.
Status decode_webp(std::span<const std::uint8_t> b, const WebPBitstreamFeatures& f,
                   RgbImage* out) {
  if (f.has_animation) {
    WebPAnimDecoderOptions opts;
    if (!WebPAnimDecoderOptionsInit(&opts)) return internal_error("WebPAnimDecoderOptionsInit");
    opts.color_mode = MODE_RGBA;
    opts.use_threads = 0;
    WebPData data{b.data(), b.size()};
    std::unique_ptr<WebPAnimDecoder, void (*)(WebPAnimDecoder*)> dec(
        WebPAnimDecoderNew(&data, &opts), WebPAnimDecoderDelete);
    if (!dec) return data_loss("corrupt animated WebP");
    WebPAnimInfo info;
    if (!WebPAnimDecoderGetInfo(dec.get(), &info)) return data_loss("corrupt animated WebP");
    std::uint8_t* rgba = nullptr;
    int ts = 0;
    if (!WebPAnimDecoderGetNext(dec.get(), &rgba, &ts)) {
      return data_loss("corrupt or truncated animated WebP (first frame)");
    }
    size_output(static_cast<int>(info.canvas_width), static_cast<int>(info.canvas_height), out);
    const size_t n = static_cast<size_t>(out->width) * out->height;
    for (size_t p = 0; p < n; ++p) std::memcpy(&out->pixels[p * 3], rgba + p * 4, 3);
    return ok_status();
  }
  size_output(f.width, f.height, out);
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) return internal_error("WebPInitDecoderConfig");
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = out->pixels.data();
  config.output.u.RGBA.stride = out->width * 3;
  config.output.u.RGBA.size = out->pixels.size();
  const VP8StatusCode st = WebPDecode(b.data(), b.size(), &config);
  WebPFreeDecBuffer(&config.output);
  if (st == VP8_STATUS_NOT_ENOUGH_DATA) return data_loss("truncated WebP: image file is truncated");
  if (st != VP8_STATUS_OK) return data_loss("corrupt WebP: " + webp_status(st));
  return ok_status();
}

}  // namespace

Result<ImageHeader> probe_image(std::span<const std::uint8_t> bytes) {
  STOKER_ASSIGN_OR_RETURN(ImageFormat fmt, sniff(bytes));
  Result<ImageHeader> h = internal_error("unreachable");
  switch (fmt) {
    case ImageFormat::kJpeg: h = probe_jpeg(bytes); break;
    case ImageFormat::kPng: h = probe_png(bytes); break;
    case ImageFormat::kWebp: {
      WebPBitstreamFeatures f;
      h = probe_webp(bytes, &f);
      break;
    }
  }
  if (h.ok()) {
    ExifOrientation o = read_exif_orientation(bytes, fmt);
    h->orientation = o.value;
    h->exif_error = std::move(o.error);
  }
  return h;
}

Status decode_rgb(std::span<const std::uint8_t> bytes, const DecodeLimits& limits, RgbImage* out) {
  STOKER_ASSIGN_OR_RETURN(ImageFormat fmt, sniff(bytes));
  switch (fmt) {
    case ImageFormat::kJpeg: {
      STOKER_ASSIGN_OR_RETURN(ImageHeader h, probe_jpeg(bytes));
      STOKER_RETURN_IF_ERROR(detail::check_limits(h, limits));
      return decode_jpeg(bytes, h, out);
    }
    case ImageFormat::kPng: {
      STOKER_ASSIGN_OR_RETURN(ImageHeader h, probe_png(bytes));
      STOKER_RETURN_IF_ERROR(detail::check_limits(h, limits));
      return decode_png(bytes, out);
    }
    case ImageFormat::kWebp: {
      WebPBitstreamFeatures f;
      STOKER_ASSIGN_OR_RETURN(ImageHeader h, probe_webp(bytes, &f));
      STOKER_RETURN_IF_ERROR(detail::check_limits(h, limits));
      return decode_webp(bytes, f, out);
    }
  }
  return internal_error("unreachable");
}

Result<RgbImage> decode_rgb(std::span<const std::uint8_t> bytes, const DecodeLimits& limits) {
  RgbImage img;
  STOKER_RETURN_IF_ERROR(decode_rgb(bytes, limits, &img));
  return img;
}

}  // namespace stoker::image
