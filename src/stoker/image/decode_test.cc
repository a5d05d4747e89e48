// Decoder tests on media generated here with the encoders (encode.h), plus hand-made corrupt
// headers. Pixel parity with Pillow for every mode was checked with Pillow 9.4 during development
// (README.md "Verification"); these tests pin the conversions Pillow defines.
#include "stoker/image/decode.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

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

}  // namespace
}  // namespace stoker::image
