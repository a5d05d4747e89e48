// Decoder tests on media generated here with the encoders (encode.h), plus hand-made corrupt
// headers. Pixel parity with Pillow for every mode was checked with Pillow 9.4 during development
// (README.md "Verification"); these tests pin the conversions Pillow defines.
#include "stoker/image/decode.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <jpeglib.h>

#include "stoker/image/encode.h"

namespace stoker::image {
namespace {

RgbImage make_image(int w, int h, bool smooth = true) {
  RgbImage im;
  im.width = w;
  im.height = h;
  im.pixels.resize(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      std::uint8_t* p = im.row(y) + 3 * x;
      if (smooth) {
        p[0] = static_cast<std::uint8_t>(x * 255 / std::max(1, w - 1));
        p[1] = static_cast<std::uint8_t>(y * 255 / std::max(1, h - 1));
        p[2] = static_cast<std::uint8_t>((x + y) * 2);
      } else {
        p[0] = static_cast<std::uint8_t>(x * 37 + y * 11);
        p[1] = static_cast<std::uint8_t>(x * 5 + y * 91);
        p[2] = static_cast<std::uint8_t>(x * y);
      }
    }
  }
  return im;
}

double mean_abs_diff(const RgbImage& a, const RgbImage& b) {
  double sum = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) sum += std::abs(a.pixels[i] - b.pixels[i]);
  return sum / a.pixels.size();
}

RgbImage decode_ok(const std::vector<std::uint8_t>& bytes) {
  auto r = decode_rgb(bytes);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? *r : RgbImage{};
}

TEST(DecodeTest, JpegRoundTripAndProbe) {
  const RgbImage src = make_image(67, 45);
  for (bool progressive : {false, true}) {
    auto bytes = encode_jpeg(src, {.quality = 95, .progressive = progressive});
    ASSERT_TRUE(bytes.ok());
    auto h = probe_image(*bytes);
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->format, ImageFormat::kJpeg);
    EXPECT_EQ(h->width, 67);
    EXPECT_EQ(h->height, 45);
    EXPECT_EQ(h->mode, "RGB");
    EXPECT_EQ(h->progressive, progressive);
    const RgbImage out = decode_ok(*bytes);
    ASSERT_EQ(out.width, 67);
    ASSERT_EQ(out.height, 45);
    EXPECT_LT(mean_abs_diff(src, out), 3.0);
  }
}

TEST(DecodeTest, GrayJpegIsReplicated) {
  auto bytes = encode_jpeg(make_image(32, 16), {.grayscale = true});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(probe_image(*bytes)->mode, "L");
  const RgbImage out = decode_ok(*bytes);
  for (size_t p = 0; p < out.pixels.size(); p += 3) {
    ASSERT_EQ(out.pixels[p], out.pixels[p + 1]);
    ASSERT_EQ(out.pixels[p], out.pixels[p + 2]);
  }
}

TEST(DecodeTest, CmykJpegUsesAdobeInvertedConvention) {
  // The encoder stores inverted inks (as Adobe/Photoshop files do); Pillow's CMYK;I + cmyk2rgb
  // must bring the colours back close to the source.
  const RgbImage src = make_image(40, 24);
  auto bytes = encode_jpeg(src, {.quality = 98, .subsample_420 = false, .cmyk = true});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(probe_image(*bytes)->mode, "CMYK");
  EXPECT_LT(mean_abs_diff(src, decode_ok(*bytes)), 4.0);
}

TEST(DecodeTest, PngModesFollowPillowConvertRgb) {
  const RgbImage src = make_image(23, 17, /*smooth=*/false);
  // 8-bit RGB, RGBA (alpha dropped, no compositing), 16-bit RGB (high byte), interlaced.
  for (PngOptions o : {PngOptions{}, PngOptions{.color = PngColor::kRgba},
                       PngOptions{.color = PngColor::kRgb, .bit_depth = 16},
                       PngOptions{.color = PngColor::kRgba, .bit_depth = 16},
                       PngOptions{.interlaced = true}}) {
    auto bytes = encode_png(src, o);
    ASSERT_TRUE(bytes.ok());
    const RgbImage out = decode_ok(*bytes);
    EXPECT_EQ(out.pixels, src.pixels) << "color " << int(o.color) << " depth " << o.bit_depth;
  }
}

TEST(DecodeTest, PngGrayDepths) {
  const RgbImage src = make_image(19, 9, /*smooth=*/false);
  auto values_of = [&](int depth) {
    auto bytes = encode_png(src, {.color = PngColor::kGray, .bit_depth = depth});
    EXPECT_TRUE(bytes.ok());
    return decode_ok(*bytes);
  };
  // 1-bit → 0/255 ("1" → RGB); 2-bit → multiples of 85; 4-bit → multiples of 17.
  for (auto [depth, step] : {std::pair{1, 255}, std::pair{2, 85}, std::pair{4, 17}}) {
    const RgbImage out = values_of(depth);
    for (std::uint8_t v : out.pixels) ASSERT_EQ(v % step, 0) << "depth " << depth;
  }
  // 16-bit grey is Pillow mode "I"; I → RGB clips at 255 (it does not take the high byte):
  // every non-black sample (≥ 257 as 16-bit) becomes 255.
  const RgbImage out16 = values_of(16);
  for (std::uint8_t v : out16.pixels) ASSERT_TRUE(v == 0 || v == 255);
  auto h = probe_image(*encode_png(src, {.color = PngColor::kGray, .bit_depth = 16}));
  EXPECT_EQ(h->mode, "I");
}

TEST(DecodeTest, PngPaletteWithTransparencyDropsAlpha) {
  const RgbImage src = make_image(16, 16);  // more than 16 colours → grey-ramp palette at 4 bits
  for (int depth : {1, 2, 4, 8}) {
    auto bytes = encode_png(src, {.color = PngColor::kPalette, .bit_depth = depth,
                                  .palette_trns = true});
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(probe_image(*bytes)->mode, "P");
    const RgbImage out = decode_ok(*bytes);
    EXPECT_EQ(out.width, 16);
  }
  // A palette image whose colours fit is lossless.
  RgbImage few = make_image(8, 8);
  for (size_t i = 0; i < few.pixels.size(); ++i) few.pixels[i] = (i / 3) % 2 ? 200 : 10;
  auto bytes = encode_png(few, {.color = PngColor::kPalette, .bit_depth = 1, .palette_trns = true});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(decode_ok(*bytes).pixels, few.pixels);
}

TEST(DecodeTest, WebpLosslessIsExactAndLossyIsClose) {
  const RgbImage src = make_image(31, 21);
  for (bool alpha : {false, true}) {
    auto ll = encode_webp(src, {.lossless = true, .with_alpha = alpha});
    ASSERT_TRUE(ll.ok());
    EXPECT_EQ(probe_image(*ll)->mode, alpha ? "RGBA" : "RGB");
    // Lossless keeps RGB exactly where alpha > 0; under alpha = 0 libwebp's encoder may rewrite
    // colours (its default, non-"exact" mode). encode_webp's alpha ramp is (7x + 3y) mod 256.
    const RgbImage out = decode_ok(*ll);
    for (int y = 0; y < src.height; ++y)
      for (int x = 0; x < src.width; ++x) {
        if (alpha && ((7 * x + 3 * y) & 255) == 0) continue;
        for (int c = 0; c < 3; ++c) ASSERT_EQ(out.row(y)[3 * x + c], src.row(y)[3 * x + c]);
      }
    auto lossy = encode_webp(src, {.quality = 90, .with_alpha = alpha});
    ASSERT_TRUE(lossy.ok());
    EXPECT_LT(mean_abs_diff(src, decode_ok(*lossy)), 6.0);
  }
}

TEST(DecodeTest, EncodersAreDeterministic) {
  const RgbImage src = make_image(37, 29, /*smooth=*/false);
  EXPECT_EQ(*encode_jpeg(src, {.progressive = true}), *encode_jpeg(src, {.progressive = true}));
  EXPECT_EQ(*encode_jpeg(src, {.cmyk = true}), *encode_jpeg(src, {.cmyk = true}));
  EXPECT_EQ(*encode_png(src, {.color = PngColor::kPalette, .bit_depth = 8}),
            *encode_png(src, {.color = PngColor::kPalette, .bit_depth = 8}));
  EXPECT_EQ(*encode_webp(src, {.with_alpha = true}), *encode_webp(src, {.with_alpha = true}));
  EXPECT_EQ(*encode_webp(src, {.lossless = true}), *encode_webp(src, {.lossless = true}));
  EXPECT_FALSE(encode_jpeg(src, {.quality = 0}).ok());
  EXPECT_FALSE(encode_png(src, {.color = PngColor::kRgba, .bit_depth = 4}).ok());
  RgbImage broken = src;
  broken.pixels.pop_back();
  EXPECT_EQ(encode_png(broken, {}).error().code(), ErrorCode::kInvalidArgument);
}

TEST(DecodeTest, OutputBufferIsReused) {
  RgbImage out;
  auto big = encode_png(make_image(64, 64), {});
  auto small = encode_png(make_image(8, 4), {});
  ASSERT_TRUE(decode_rgb(*big, {}, &out).ok());
  const size_t cap = out.pixels.capacity();
  ASSERT_TRUE(decode_rgb(*small, {}, &out).ok());
  EXPECT_EQ(out.width, 8);
  EXPECT_EQ(out.pixels.size(), 8u * 4 * 3);
  EXPECT_EQ(out.pixels.capacity(), cap);
}

Error decode_error(const std::vector<std::uint8_t>& bytes, const DecodeLimits& limits = {}) {
  auto r = decode_rgb(bytes, limits);
  EXPECT_FALSE(r.ok());
  return r.ok() ? Error(ErrorCode::kInternal, "decoded") : r.error();
}

bool mentions(const Error& e, const std::string& word) {
  return e.to_string().find(word) != std::string::npos;
}

TEST(DecodeTest, EmptyAndGarbageAreDataLoss) {
  Error e = decode_error({});
  EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
  EXPECT_TRUE(mentions(e, "empty"));
  e = decode_error(std::vector<std::uint8_t>(100, 0x42));
  EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
  // Valid magic, garbage after it.
  std::vector<std::uint8_t> junk = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F'};
  junk.resize(300, 0x5A);
  EXPECT_EQ(decode_error(junk).code(), ErrorCode::kDataLoss);
}

TEST(DecodeTest, UnsupportedFormatsAreNamed) {
  auto bytes = [](std::string s) {
    s.resize(64, '\0');
    return std::vector<std::uint8_t>(s.begin(), s.end());
  };
  for (auto [magic, name] : {std::pair{"GIF89a", "GIF"}, std::pair{"BM", "BMP"},
                             std::pair{"II*", "TIFF"}}) {
    const Error e = decode_error(bytes(magic));
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << name;
    EXPECT_TRUE(mentions(e, name)) << e.to_string();
  }
}

TEST(DecodeTest, ValidJpegAfterCorruptOneOnTheSameThread) {
  // Regression: the per-thread TurboJPEG handle kept state from a failed decode and rejected the
  // next, valid file ("Bogus Huffman table definition").
  const RgbImage src = make_image(48, 32, /*smooth=*/false);
  const auto good = *encode_jpeg(src, {});
  const RgbImage expected = decode_ok(good);
  std::uint32_t seed = 99;
  for (int i = 0; i < 200; ++i) {
    std::vector<std::uint8_t> bad = good;
    seed = seed * 1664525u + 1013904223u;
    bad[seed % bad.size()] ^= std::uint8_t(1 + (seed >> 24) % 255);
    (void)decode_rgb(bad, {.max_pixels = 1 << 22});
    auto again = decode_rgb(good);
    ASSERT_TRUE(again.ok()) << "after mutation " << i << ": " << again.error().to_string();
    ASSERT_EQ(again->pixels, expected.pixels);
  }
}

// A JPEG whose quantisation tables were cut out (DQT segments removed) is refused — also right
// after a good JPEG decoded on the same thread, whose tables a reused libjpeg state would keep
// and silently apply (it used to). Pillow starts fresh per image and refuses it too. Same for
// the image processor, whose streaming path falls back to decode_rgb.
TEST(DecodeTest, JpegWithoutItsTablesFailsEvenAfterAGoodOne) {
  const RgbImage src = make_image(64, 48, /*smooth=*/true);
  const auto good = *encode_jpeg(src, {});
  std::vector<std::uint8_t> no_dqt;
  size_t i = 2;
  no_dqt.assign(good.begin(), good.begin() + 2);  // SOI
  int removed = 0;
  while (i + 4 <= good.size() && good[i] == 0xFF && good[i + 1] != 0xDA) {
    const size_t len = (size_t(good[i + 2]) << 8) | good[i + 3];
    if (good[i + 1] == 0xDB) {
      ++removed;
    } else {
      no_dqt.insert(no_dqt.end(), good.begin() + i, good.begin() + i + 2 + len);
    }
    i += 2 + len;
  }
  no_dqt.insert(no_dqt.end(), good.begin() + i, good.end());  // SOS .. EOI
  ASSERT_GT(removed, 0);
  for (int round = 0; round < 2; ++round) {
    decode_ok(good);  // warm whatever per-thread state exists
    auto bad = decode_rgb(no_dqt);
    ASSERT_FALSE(bad.ok()) << "round " << round << ": decoded with another image's tables";
    EXPECT_EQ(bad.error().code(), ErrorCode::kDataLoss);
  }
  auto rows = JpegRowDecoder::open(no_dqt);
  if (rows.ok()) {
    std::vector<std::uint8_t> buf(64 * 3);
    std::uint8_t* row = buf.data();
    Status st = ok_status();
    while (st.ok() && rows->rows_read() < rows->height()) st = rows->read(&row, 1);
    EXPECT_FALSE(st.ok());
  }
}

TEST(DecodeTest, HarmlessJpegWarningsAreAccepted) {
  // Junk before EOI makes libjpeg warn "N extraneous bytes before marker 0xd9"; the pixels are
  // complete and Pillow decodes such files, so must we.
  auto bytes = *encode_jpeg(make_image(40, 30), {});
  const RgbImage clean = decode_ok(bytes);
  ASSERT_EQ(bytes[bytes.size() - 2], 0xFF);
  bytes.insert(bytes.end() - 2, {0x00, 0x11, 0x22, 0x33, 0x44});
  EXPECT_EQ(decode_ok(bytes).pixels, clean.pixels);
}

TEST(DecodeTest, TruncatedFilesAreDataLoss) {
  const RgbImage src = make_image(80, 60, /*smooth=*/false);
  for (auto bytes : {*encode_jpeg(src, {}), *encode_jpeg(src, {.progressive = true}),
                     *encode_png(src, {}), *encode_webp(src, {}),
                     *encode_webp(src, {.lossless = true})}) {
    bytes.resize(bytes.size() / 2);
    const Error e = decode_error(bytes);
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.to_string();
    EXPECT_TRUE(mentions(e, "truncated")) << e.to_string();
  }
}

TEST(DecodeTest, PixelLimitIsCheckedFromTheHeader) {
  // A JPEG that is only SOI + SOF0 claiming 60000×60000: refused before any decoding.
  const std::vector<std::uint8_t> jpeg = {0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0xEA, 0x60,
                                          0xEA, 0x60, 0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01,
                                          0x03, 0x11, 0x01, 0xFF, 0xD9};
  auto h = probe_image(jpeg);
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  EXPECT_EQ(h->width, 60000);
  Error e = decode_error(jpeg);
  EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
  EXPECT_TRUE(mentions(e, "60000x60000"));
  // PNG: signature + IHDR claiming 60000×60000 (CRC irrelevant: refused before libpng runs).
  std::vector<std::uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13,
                                   'I', 'H', 'D', 'R', 0, 0, 0xEA, 0x60, 0, 0, 0xEA, 0x60,
                                   8, 2, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(decode_error(png).code(), ErrorCode::kResourceExhausted);
  // A caller-set limit applies to real images too.
  auto small = encode_png(make_image(20, 20), {});
  EXPECT_EQ(decode_error(*small, {.max_pixels = 399}).code(), ErrorCode::kResourceExhausted);
  EXPECT_TRUE(decode_rgb(*small, {.max_pixels = 400}).ok());
}

TEST(DecodeTest, CorruptedFilesNeverCrash) {
  // Random byte flips and cuts in valid files: every outcome must be a value (pixels or an error
  // with a data-related code), never a crash, leak or out-of-bounds access (run under ASan too).
  const RgbImage src = make_image(48, 32, /*smooth=*/false);
  const std::vector<std::vector<std::uint8_t>> files = {
      *encode_jpeg(src, {}), *encode_jpeg(src, {.progressive = true}),
      *encode_jpeg(src, {.cmyk = true}), *encode_png(src, {}),
      *encode_png(src, {.color = PngColor::kPalette, .bit_depth = 4, .interlaced = true}),
      *encode_webp(src, {}), *encode_webp(src, {.lossless = true, .with_alpha = true})};
  std::uint32_t seed = 12345;
  auto next = [&seed] { return seed = seed * 1664525u + 1013904223u; };
  const DecodeLimits limits{.max_pixels = 1 << 22};
  RgbImage out;
  int errors = 0;
  for (const auto& file : files) {
    for (int i = 0; i < 120; ++i) {
      std::vector<std::uint8_t> bad = file;
      const int flips = 1 + next() % 6;
      for (int f = 0; f < flips; ++f) bad[next() % bad.size()] ^= std::uint8_t(1 + next() % 255);
      if (i % 4 == 0) bad.resize(next() % bad.size());
      const Status st = decode_rgb(bad, limits, &out);
      if (!st.ok()) {
        ++errors;
        const ErrorCode c = st.error().code();
        EXPECT_TRUE(c == ErrorCode::kDataLoss || c == ErrorCode::kInvalidArgument ||
                    c == ErrorCode::kResourceExhausted)
            << st.error().to_string();
      }
    }
  }
  EXPECT_GT(errors, 0);
}

// ---------------------------------------------------------------- JpegRowDecoder

// Photo-like content: smooth ramps plus deterministic noise, so chroma upsampling and the DCT
// have edges and texture to get wrong.
RgbImage make_noisy_image(int w, int h, std::uint32_t seed) {
  RgbImage im = make_image(w, h);
  for (std::uint8_t& v : im.pixels) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<std::uint8_t>(std::clamp(int(v) + int(seed >> 27) - 16, 0, 255));
  }
  return im;
}

// A plain libjpeg encoder for layouts encode_jpeg does not write: any sampling factors, RGB and
// YCCK colour spaces, arithmetic coding, restart intervals.
struct LibjpegOptions {
  J_COLOR_SPACE space = JCS_YCbCr;  // JCS_YCbCr, JCS_RGB, JCS_GRAYSCALE or JCS_YCCK
  int h[3] = {2, 1, 1};             // sampling factors of components 0..2 (YCCK: K = component 0)
  int v[3] = {2, 1, 1};
  bool progressive = false;
  bool arithmetic = false;
  int restart_rows = 0;
  int quality = 90;
};

struct TestJpegError {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
};

[[noreturn]] void test_jpeg_error_exit(j_common_ptr c) {
  std::longjmp(reinterpret_cast<TestJpegError*>(c->err)->jump, 1);
}

// C-style (setjmp): everything libjpeg touches is owned by the caller.
bool libjpeg_compress_core(jpeg_compress_struct* c, TestJpegError* err, const LibjpegOptions* o,
                           int w, int h, int in_components, J_COLOR_SPACE in_space,
                           JSAMPROW* rows, unsigned char** buf, unsigned long* size) {
  c->err = jpeg_std_error(&err->pub);
  err->pub.error_exit = test_jpeg_error_exit;
  if (setjmp(err->jump)) {
    jpeg_destroy_compress(c);
    return false;
  }
  jpeg_create_compress(c);
  jpeg_mem_dest(c, buf, size);
  c->image_width = static_cast<JDIMENSION>(w);
  c->image_height = static_cast<JDIMENSION>(h);
  c->input_components = in_components;
  c->in_color_space = in_space;
  jpeg_set_defaults(c);
  jpeg_set_colorspace(c, o->space);
  jpeg_set_quality(c, o->quality, TRUE);
  c->dct_method = JDCT_ISLOW;
  for (int k = 0; k < c->num_components; ++k) {
    c->comp_info[k].h_samp_factor = o->h[k < 3 ? k : 0];
    c->comp_info[k].v_samp_factor = o->v[k < 3 ? k : 0];
  }
  c->arith_code = o->arithmetic ? TRUE : FALSE;
  c->restart_in_rows = o->restart_rows;
  if (o->progressive) jpeg_simple_progression(c);
  jpeg_start_compress(c, TRUE);
  while (c->next_scanline < c->image_height) {
    jpeg_write_scanlines(c, rows + c->next_scanline, c->image_height - c->next_scanline);
  }
  jpeg_finish_compress(c);
  jpeg_destroy_compress(c);
  return true;
}

std::vector<std::uint8_t> encode_libjpeg(const RgbImage& im, const LibjpegOptions& o) {
  // Input: RGB for YCbCr/RGB, luma for grey, naive CMYK for YCCK.
  int comps = 3;
  J_COLOR_SPACE in_space = JCS_RGB;
  std::vector<std::uint8_t> in = im.pixels;
  const size_t n = static_cast<size_t>(im.width) * im.height;
  if (o.space == JCS_GRAYSCALE) {
    comps = 1;
    in_space = JCS_GRAYSCALE;
    in.resize(n);
    for (size_t p = 0; p < n; ++p) {
      const std::uint8_t* s = &im.pixels[3 * p];
      in[p] = static_cast<std::uint8_t>((299 * s[0] + 587 * s[1] + 114 * s[2]) / 1000);
    }
  } else if (o.space == JCS_YCCK) {
    comps = 4;
    in_space = JCS_CMYK;
    in.resize(n * 4);
    for (size_t p = 0; p < n; ++p) {
      const std::uint8_t* s = &im.pixels[3 * p];
      for (int c = 0; c < 3; ++c) in[4 * p + c] = static_cast<std::uint8_t>(255 - s[c]);
      in[4 * p + 3] = static_cast<std::uint8_t>(std::max({s[0], s[1], s[2]}));
    }
  }
  std::vector<JSAMPROW> rows(im.height);
  for (int y = 0; y < im.height; ++y) rows[y] = &in[static_cast<size_t>(y) * im.width * comps];
  jpeg_compress_struct c{};
  TestJpegError err{};
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const bool ok = libjpeg_compress_core(&c, &err, &o, im.width, im.height, comps, in_space,
                                        rows.data(), &buf, &size);
  std::vector<std::uint8_t> out;
  if (ok) out.assign(buf, buf + size);
  std::free(buf);
  EXPECT_TRUE(ok) << "libjpeg compression failed";
  return out;
}

// Streams `bytes` through JpegRowDecoder in blocks of `block` rows (0: blocks of 1, 2, 3, ...).
Result<RgbImage> stream_rows(std::span<const std::uint8_t> bytes, int block,
                             const DecodeLimits& limits = {}) {
  STOKER_ASSIGN_OR_RETURN(JpegRowDecoder dec, JpegRowDecoder::open(bytes, limits));
  RgbImage out;
  out.width = dec.width();
  out.height = dec.height();
  // Poison, so a row the decoder never wrote cannot pass as decode_rgb's.
  out.pixels.assign(static_cast<size_t>(out.width) * out.height * 3, 0xA5);
  std::vector<std::uint8_t*> rows;
  for (int step = 1; dec.rows_read() < dec.height(); ++step) {
    const int n = std::min(block > 0 ? block : step, dec.height() - dec.rows_read());
    rows.clear();
    for (int i = 0; i < n; ++i) rows.push_back(out.row(dec.rows_read() + i));
    const int before = dec.rows_read();
    STOKER_RETURN_IF_ERROR(dec.read(rows.data(), n));
    if (dec.rows_read() != before + n) return internal_error("rows_read did not advance by n");
  }
  return out;
}

// Every row of every block size equals decode_rgb's row.
void expect_rows_match_decode_rgb(const std::vector<std::uint8_t>& bytes, const std::string& what) {
  ASSERT_FALSE(bytes.empty()) << what;
  auto ref = decode_rgb(bytes);
  ASSERT_TRUE(ref.ok()) << what << ": " << ref.error().to_string();
  for (int block : {1, 7, 16, ref->height, 0}) {
    auto got = stream_rows(bytes, block);
    ASSERT_TRUE(got.ok()) << what << " block " << block << ": " << got.error().to_string();
    ASSERT_EQ(got->width, ref->width) << what;
    ASSERT_EQ(got->height, ref->height) << what;
    for (int y = 0; y < ref->height; ++y) {
      ASSERT_EQ(std::memcmp(got->row(y), ref->row(y), static_cast<size_t>(ref->width) * 3), 0)
          << what << " block " << block << ": row " << y << " differs from decode_rgb";
    }
  }
}

constexpr std::pair<int, int> kStreamSizes[] = {{1, 1},   {2, 3},   {17, 5},  {5, 17},
                                                {16, 16}, {33, 31}, {7, 1},   {1, 9},
                                                {333, 177}};

TEST(JpegRowDecoderTest, MatchesDecodeRgbOnEncoderVariants) {
  for (auto [w, h] : kStreamSizes) {
    const RgbImage src = make_noisy_image(w, h, static_cast<std::uint32_t>(w * 1000 + h));
    for (bool progressive : {false, true}) {
      for (auto [sub420, grey] : {std::pair{true, false}, std::pair{false, false},
                                  std::pair{true, true}}) {
        auto bytes = encode_jpeg(src, {.quality = 85, .progressive = progressive,
                                       .subsample_420 = sub420, .grayscale = grey});
        ASSERT_TRUE(bytes.ok());
        expect_rows_match_decode_rgb(
            *bytes, std::to_string(w) + "x" + std::to_string(h) +
                        (progressive ? " progressive" : " baseline") +
                        (grey ? " grey" : sub420 ? " 4:2:0" : " 4:4:4"));
      }
    }
  }
}

TEST(JpegRowDecoderTest, MatchesDecodeRgbOnLibjpegLayouts) {
  struct Variant {
    const char* name;
    LibjpegOptions o;
  };
  const Variant variants[] = {
      {"4:2:2", {.h = {2, 1, 1}, .v = {1, 1, 1}}},
      {"4:2:2 progressive", {.h = {2, 1, 1}, .v = {1, 1, 1}, .progressive = true}},
      {"4:4:0", {.h = {1, 1, 1}, .v = {2, 1, 1}}},
      {"4:1:1", {.h = {4, 1, 1}, .v = {1, 1, 1}}},
      {"4:2:2 as Y 2x2, C 1x2", {.h = {2, 1, 1}, .v = {2, 2, 2}}},
      {"4:4:0 as Y 2x2, C 2x1", {.h = {2, 2, 2}, .v = {2, 1, 1}}},
      {"4:4:4 as 2x1 everywhere", {.h = {2, 2, 2}, .v = {1, 1, 1}}},
      {"RGB colour space (Adobe transform 0)", {.space = JCS_RGB, .h = {1, 1, 1}, .v = {1, 1, 1}}},
      {"grey with 2x2 sampling factors", {.space = JCS_GRAYSCALE, .h = {2, 1, 1}, .v = {2, 1, 1}}},
      {"4:2:0 arithmetic", {.arithmetic = true}},
      {"4:2:2 arithmetic progressive",
       {.h = {2, 1, 1}, .v = {1, 1, 1}, .progressive = true, .arithmetic = true}},
      {"4:2:0 restart every MCU row", {.restart_rows = 1}},
      {"4:2:0 quality 100", {.quality = 100}},
      {"4:2:0 quality 20", {.quality = 20}},
  };
  for (auto [w, h] : kStreamSizes) {
    const RgbImage src = make_noisy_image(w, h, static_cast<std::uint32_t>(w * 7 + h));
    for (const Variant& v : variants) {
      const auto bytes = encode_libjpeg(src, v.o);
      expect_rows_match_decode_rgb(bytes, std::to_string(w) + "x" + std::to_string(h) + " " +
                                              v.name);
    }
  }
}

TEST(JpegRowDecoderTest, CmykAndYcckAreUnimplemented) {
  const RgbImage src = make_image(40, 24);
  const auto cmyk = encode_jpeg(src, {.subsample_420 = false, .cmyk = true});
  ASSERT_TRUE(cmyk.ok());
  const auto ycck = encode_libjpeg(src, {.space = JCS_YCCK, .h = {1, 1, 1}, .v = {1, 1, 1}});
  for (const auto* bytes : {&*cmyk, &ycck}) {
    ASSERT_TRUE(decode_rgb(*bytes).ok());  // the fallback handles them
    auto dec = JpegRowDecoder::open(*bytes, {});
    ASSERT_FALSE(dec.ok());
    EXPECT_EQ(dec.error().code(), ErrorCode::kUnimplemented) << dec.error().to_string();
  }
}

TEST(JpegRowDecoderTest, RefusesTheSamplingLayoutsDecodeRgbRefuses) {
  // libjpeg decodes Y 2x2 / Cb 2x1 / Cr 1x1, but TurboJPEG cannot classify it and decode_rgb
  // fails; the row decoder must not silently accept what the whole-image path refuses.
  const auto bytes = encode_libjpeg(make_image(40, 24), {.h = {2, 2, 1}, .v = {2, 1, 1}});
  EXPECT_FALSE(decode_rgb(bytes).ok());
  auto dec = JpegRowDecoder::open(bytes, {});
  ASSERT_FALSE(dec.ok());
  EXPECT_EQ(dec.error().code(), ErrorCode::kUnimplemented) << dec.error().to_string();
}

ErrorCode open_error(std::span<const std::uint8_t> bytes, const DecodeLimits& limits = {}) {
  auto dec = JpegRowDecoder::open(bytes, limits);
  EXPECT_FALSE(dec.ok());
  return dec.ok() ? ErrorCode::kInternal : dec.error().code();
}

TEST(JpegRowDecoderTest, HeaderChecksMatchDecodeRgb) {
  EXPECT_EQ(open_error({}), ErrorCode::kDataLoss);
  EXPECT_EQ(open_error(std::vector<std::uint8_t>(100, 0x42)), ErrorCode::kDataLoss);
  std::vector<std::uint8_t> junk = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F'};
  junk.resize(300, 0x5A);
  EXPECT_EQ(open_error(junk), ErrorCode::kDataLoss);
  EXPECT_EQ(open_error(*encode_png(make_image(8, 8), {})), ErrorCode::kInvalidArgument);
  // SOI + SOF0 claiming 60000×60000: refused from the header, before libjpeg runs.
  const std::vector<std::uint8_t> huge = {0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0xEA,
                                          0x60, 0xEA, 0x60, 0x03, 0x01, 0x22, 0x00, 0x02,
                                          0x11, 0x01, 0x03, 0x11, 0x01, 0xFF, 0xD9};
  EXPECT_EQ(open_error(huge), ErrorCode::kResourceExhausted);
  const auto small = *encode_jpeg(make_image(20, 20), {});
  EXPECT_EQ(open_error(small, {.max_pixels = 399}), ErrorCode::kResourceExhausted);
  EXPECT_TRUE(JpegRowDecoder::open(small, {.max_pixels = 400}).ok());
}

// Offset range of the first scan's entropy-coded data (after the first SOS header, up to the
// next marker that is neither a stuffed 0xFF nor a restart marker).
std::pair<size_t, size_t> first_scan_data(const std::vector<std::uint8_t>& b) {
  size_t i = 2;
  while (i + 4 <= b.size()) {
    EXPECT_EQ(b[i], 0xFF);
    const std::uint8_t m = b[i + 1];
    const size_t len = (size_t{b[i + 2]} << 8) | b[i + 3];
    if (m == 0xDA) {
      const size_t begin = i + 2 + len;
      size_t end = begin;
      while (end + 1 < b.size() &&
             !(b[end] == 0xFF && b[end + 1] != 0x00 && (b[end + 1] < 0xD0 || b[end + 1] > 0xD7))) {
        ++end;
      }
      return {begin, end};
    }
    i += 2 + len;
  }
  ADD_FAILURE() << "no SOS marker";
  return {0, 0};
}

// Plants an EOI marker in the middle of the first scan's entropy data: the scan ends early
// ("Corrupt JPEG data: premature end of data segment"). Garbage entropy bytes would not do:
// libjpeg-turbo's fast Huffman path (taken while ≥ 512 bytes per block of an MCU remain) turns
// an invalid code into 0 without a warning, so such damage can decode silently in both decoders.
std::vector<std::uint8_t> with_marker_in_scan(std::vector<std::uint8_t> b) {
  auto [begin, end] = first_scan_data(b);
  size_t at = begin + (end - begin) / 2;
  if (at > begin && b[at - 1] == 0xFF) ++at;  // do not split a stuffed FF 00
  EXPECT_LT(at + 1, end);
  b[at] = 0xFF;
  b[at + 1] = 0xD9;
  return b;
}

// open() or some read() fails (DataLoss), and so does decode_rgb.
void expect_stream_fails(const std::vector<std::uint8_t>& bytes, const std::string& what,
                         const char* word = nullptr) {
  for (int block : {1, 16, 0}) {
    auto got = stream_rows(bytes, block);
    ASSERT_FALSE(got.ok()) << what << " block " << block << ": decoded";
    EXPECT_EQ(got.error().code(), ErrorCode::kDataLoss) << what << ": " << got.error().to_string();
    if (word != nullptr) {
      EXPECT_TRUE(mentions(got.error(), word)) << got.error().to_string();
    }
  }
}

TEST(JpegRowDecoderTest, TruncatedAndCorruptFilesFail) {
  const RgbImage src = make_noisy_image(96, 80, 5);
  const std::vector<std::pair<std::string, std::vector<std::uint8_t>>> files = {
      {"baseline", *encode_jpeg(src, {})},
      {"progressive", *encode_jpeg(src, {.progressive = true})},
      {"grey", *encode_jpeg(src, {.grayscale = true})},
      {"4:4:4 progressive", *encode_jpeg(src, {.progressive = true, .subsample_420 = false})},
      {"arithmetic", encode_libjpeg(src, {.arithmetic = true})}};
  for (const auto& [name, good] : files) {
    auto half = good;
    half.resize(half.size() / 2);
    EXPECT_FALSE(decode_rgb(half).ok()) << name;
    expect_stream_fails(half, name + " cut in half", "truncated");

    // Every pixel is there, only EOI is missing: decode_rgb refuses it ("Premature end of JPEG
    // file" while reading to EOI); so does the read() that delivers the last row.
    auto no_eoi = good;
    ASSERT_EQ(no_eoi[no_eoi.size() - 2], 0xFF);
    no_eoi.resize(no_eoi.size() - 2);
    EXPECT_FALSE(decode_rgb(no_eoi).ok()) << name;
    expect_stream_fails(no_eoi, name + " without EOI", "truncated");

    // The scans are complete and followed by zero bytes instead of EOI: only reading on to EOI
    // after the last row (jpeg_finish_decompress) notices, as decode_rgb does.
    auto zeros_for_eoi = no_eoi;
    zeros_for_eoi.insert(zeros_for_eoi.end(), 2000, 0x00);
    EXPECT_FALSE(decode_rgb(zeros_for_eoi).ok()) << name;
    expect_stream_fails(zeros_for_eoi, name + " with zeros instead of EOI", "truncated");

    const auto bad = with_marker_in_scan(good);
    EXPECT_FALSE(decode_rgb(bad).ok()) << name;
    expect_stream_fails(bad, name + " with a marker in the scan", "Corrupt JPEG data");
  }
}

TEST(JpegRowDecoderTest, EveryWarningIsJudgedNotOnlyTheFirst) {
  // A benign warning first ("extraneous bytes before marker 0xda"), then damaged scan data. The
  // row decoder refuses the file. (TurboJPEG reports only a call's first warning, so decode_rgb
  // judges only that one; callers fall back to decode_rgb on any row-decoder error.)
  auto bytes = with_marker_in_scan(*encode_jpeg(make_noisy_image(64, 48, 3), {}));
  const size_t sos = first_scan_data(bytes).first;
  size_t marker = sos - 1;
  while (!(bytes[marker] == 0xFF && bytes[marker + 1] == 0xDA)) --marker;
  bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(marker), {0x01, 0x02, 0x03});
  expect_stream_fails(bytes, "benign warning, then a marker in the scan",
                      "premature end of data segment");
}

TEST(JpegRowDecoderTest, HarmlessWarningsAreAccepted) {
  // Junk before EOI: libjpeg warns "N extraneous bytes before marker 0xd9" while the last read()
  // reads on to EOI; decode_rgb accepts the file, so must the row decoder.
  auto bytes = *encode_jpeg(make_noisy_image(40, 30, 9), {});
  ASSERT_EQ(bytes[bytes.size() - 2], 0xFF);
  bytes.insert(bytes.end() - 2, {0x00, 0x11, 0x22, 0x33, 0x44});
  expect_rows_match_decode_rgb(bytes, "extraneous bytes before EOI");
}

TEST(JpegRowDecoderTest, NeverAcceptsWhatDecodeRgbRefuses) {
  // Random byte flips and cuts: whenever the row decoder delivers every row, decode_rgb accepts
  // the file and gives the same pixels; whenever decode_rgb refuses it, the row decoder fails
  // too (open() or read()). Errors carry a data-related code; nothing crashes.
  // On a thread of its own: decode_rgb's per-thread TurboJPEG handle keeps tables (DQT, DHT) from
  // earlier images, which a mutant that lost its own may pick up, so the outcome must not depend
  // on which tests ran before.
  std::thread([] {
    const RgbImage src = make_noisy_image(48, 40, 77);
    const std::vector<std::vector<std::uint8_t>> files = {
        *encode_jpeg(src, {}), *encode_jpeg(src, {.progressive = true}),
        *encode_jpeg(src, {.grayscale = true}), *encode_jpeg(src, {.subsample_420 = false}),
        encode_libjpeg(src, {.h = {2, 1, 1}, .v = {1, 1, 1}, .restart_rows = 1}),
        encode_libjpeg(src, {.arithmetic = true})};
    std::uint32_t seed = 2024;
    auto next = [&seed] { return seed = seed * 1664525u + 1013904223u; };
    const DecodeLimits limits{.max_pixels = 1 << 22};
    int both_ok = 0, both_failed = 0, only_decode_rgb_ok = 0;
    for (const auto& file : files) {
      for (int i = 0; i < 150; ++i) {
        std::vector<std::uint8_t> bad = file;
        const int flips = 1 + next() % 4;
        for (int f = 0; f < flips; ++f) bad[next() % bad.size()] ^= std::uint8_t(1 + next() % 255);
        if (i % 5 == 0) bad.resize(next() % bad.size());
        auto ref = decode_rgb(bad, limits);
        auto got = stream_rows(bad, 1 + static_cast<int>(next() % 20), limits);
        if (got.ok()) {
          ASSERT_TRUE(ref.ok()) << "file " << &file - files.data() << " mutation " << i
                                << ": decode_rgb refuses (" << ref.error().to_string()
                                << ") what the row decoder accepted";
          ASSERT_EQ(got->pixels, ref->pixels) << "mutation " << i;
          ++both_ok;
          continue;
        }
        const ErrorCode c = got.error().code();
        EXPECT_TRUE(c == ErrorCode::kDataLoss || c == ErrorCode::kInvalidArgument ||
                    c == ErrorCode::kResourceExhausted || c == ErrorCode::kUnimplemented)
            << got.error().to_string();
        ++(ref.ok() ? only_decode_rgb_ok : both_failed);
      }
    }
    EXPECT_GT(both_failed, 0);
    EXPECT_GT(both_ok, 0);  // flips in APPn payloads and the like leave valid files
    // Refused here, accepted there (callers fall back): a benign first warning hiding later
    // damage, and mutants that lost a DQT/DHT segment (this thread's decode_rgb reuses the
    // previous file's tables; a fresh libjpeg object refuses or uses the standard tables).
    EXPECT_LT(only_decode_rgb_ok, 50);
  }).join();
}

TEST(JpegRowDecoderTest, ReadChecksArgumentsStopsEarlyAndMoves) {
  const auto bytes = *encode_jpeg(make_noisy_image(50, 40, 11), {.progressive = true});
  const RgbImage ref = decode_ok(bytes);
  RgbImage out = ref;
  std::fill(out.pixels.begin(), out.pixels.end(), 0);
  auto rows_from = [&out](int y, int n) {
    std::vector<std::uint8_t*> r;
    for (int i = 0; i < n; ++i) r.push_back(out.row(y + i));
    return r;
  };
  {
    auto dec = JpegRowDecoder::open(bytes, {});
    ASSERT_TRUE(dec.ok()) << dec.error().to_string();
    EXPECT_EQ(dec->width(), 50);
    EXPECT_EQ(dec->height(), 40);
    EXPECT_EQ(dec->rows_read(), 0);
    auto r = rows_from(0, 40);
    EXPECT_EQ(dec->read(r.data(), 0).error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(dec->read(nullptr, 1).error().code(), ErrorCode::kInvalidArgument);
    ASSERT_TRUE(dec->read(r.data(), 3).ok());
    r = rows_from(3, 38);
    EXPECT_EQ(dec->read(r.data(), 38).error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(dec->rows_read(), 3);  // a refused read decodes nothing

    // Move-construct and move-assign mid-image; the new owner carries on.
    JpegRowDecoder moved(std::move(*dec));
    EXPECT_EQ(moved.rows_read(), 3);
    ASSERT_TRUE(moved.read(r.data(), 17).ok());
    auto other = JpegRowDecoder::open(*encode_jpeg(make_image(8, 8), {}), {});
    ASSERT_TRUE(other.ok());
    *other = std::move(moved);
    EXPECT_EQ(other->rows_read(), 20);
    r = rows_from(20, 20);
    ASSERT_TRUE(other->read(r.data(), 20).ok());
    EXPECT_EQ(other->rows_read(), 40);
    EXPECT_EQ(out.pixels, ref.pixels);
    EXPECT_EQ(other->read(r.data(), 1).error().code(), ErrorCode::kInvalidArgument);
  }
  {
    // Stopping early (the resampler may not need the last rows) and destroying is fine.
    auto dec = JpegRowDecoder::open(bytes, {});
    ASSERT_TRUE(dec.ok());
    auto r = rows_from(0, 5);
    ASSERT_TRUE(dec->read(r.data(), 5).ok());
  }
  {
    // A failed read is sticky.
    auto half = *encode_jpeg(make_noisy_image(64, 64, 1), {});
    half.resize(half.size() / 2);
    auto dec = JpegRowDecoder::open(half, {});
    ASSERT_TRUE(dec.ok()) << dec.error().to_string();  // baseline: the header is intact
    out = make_image(64, 64);
    auto r = rows_from(0, 64);
    const Status st = dec->read(r.data(), 64);
    ASSERT_FALSE(st.ok());
    const Status again = dec->read(r.data(), 1);
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().to_string(), st.error().to_string());
  }
}

// Fuzzer finding (src/stoker/fuzz, target png; the input as found): a 156-byte PNG whose iTXt
// chunk claims 1 GiB. libpng allocated and zeroed the whole chunk buffer before reading it (1 GiB
// of RSS, a minute under ASan); the chunk cap makes it fail as truncated, allocating nothing big.
TEST(DecodeTest, PngChunkClaimingAGibibyteIsNotAllocated) {
  const std::string png(
      "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x05\x00\x00\x00\x1f"
      "\x10\x02\x00\x00\x00\xf0\xd0\x4c\x0c\x40\x00\x00\x98\x69\x54\x58\x74\x4d\x44\x41\x54\x28\x91\xed"
      "\xd2\xc1\x85\x14\x22\xa4\x21\x42\xe9\xbf\x8a\x38\x70\xf8\x42\xc2\x97\xba\x4f\x6d\x6a\x3b\x29\xa0"
      "\x03\x30\x36\x00\xf4\x88\x11\xd6\x20\xec\x34\x54\x9f\x34\x4e\x41\x8e\xe1\x77\x58\x12\x8b\x47\x50"
      "\x70\x6e\x71\x3c\x67\x00\x51\xc3\x50\x92\x29\x7e\x63\xf9\xb8\xc1\x0d\x96\xe8\x32\x38\x76\x87\x2d"
      "\xa6\xca\x2b\x34\x54\x9f\x15\xd8\xc1\x42\xf5\xd4\xd8\x53\x7b\xdc\xfa\x54\xa4\xc0\xa1\xe0\xcb\x16"
      "\x27\xc2\xd4\xe6\xcc\x88\x4e\x44\xae\x42\x60\x2d",
      156);
  struct rusage before {};
  getrusage(RUSAGE_SELF, &before);
  Result<RgbImage> r = decode_rgb(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(png.data()), png.size()));
  struct rusage after {};
  getrusage(RUSAGE_SELF, &after);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kDataLoss) << r.error().to_string();
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 256 * 1024) << "KiB of peak RSS added";
}

}  // namespace
}  // namespace stoker::image
