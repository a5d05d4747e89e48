// EXIF orientation: expected values follow Pillow 9.4's rules as read from its source
// (README.md "EXIF orientation"; tests/python/test_exif_parity.py checks the same cases against
// the real Pillow), never printed by the code under test. Files come from our encoders with
// metadata spliced in (detail/exif_testing.h).
#include "stoker/image/exif.h"

#include <gtest/gtest.h>

#include <random>

#include "stoker/image/detail/exif_testing.h"
#include "stoker/image/encode.h"

namespace stoker::image {
namespace {

using namespace testing;  // NOLINT: test helpers
using namespace std::string_literals;
using detail::parse_exif_tiff;
using detail::TiffOrientation;

RgbImage small_image(int w, int h) {
  RgbImage im{w, h, std::vector<std::uint8_t>(size_t(w) * h * 3)};
  for (size_t i = 0; i < im.pixels.size(); ++i) im.pixels[i] = std::uint8_t(i * 7 + i / 3);
  return im;
}

TiffOrientation one(std::uint16_t type, std::uint32_t count, Bytes value, bool big = false) {
  return parse_exif_tiff(tiff_block(big, {{0x0112, type, count, std::move(value)}}));
}

TEST(ExifTiffTest, ShortInBothByteOrders) {
  for (bool big : {false, true}) {
    for (int v : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 65535}) {
      const TiffOrientation t = one(3, 1, big ? be(v, 2) : le(v, 2), big);
      EXPECT_EQ(t.status, TiffOrientation::kOk);
      EXPECT_TRUE(t.tag_present);
      EXPECT_EQ(t.value, v >= 2 && v <= 8 ? v : 1) << v << (big ? " MM" : " II");
    }
  }
}

TEST(ExifTiffTest, NumericTypesCompareByValue) {
  // Python: {2: ..}.get(x) matches ints, floats and IFDRationals equal to 2..8.
  EXPECT_EQ(one(4, 1, le(6, 4)).value, 6);       // LONG
  EXPECT_EQ(one(13, 1, le(6, 4)).value, 6);      // IFD
  EXPECT_EQ(one(16, 1, le(6, 8)).value, 6);      // LONG8 (out of line)
  EXPECT_EQ(one(6, 1, {6}).value, 6);            // SBYTE
  EXPECT_EQ(one(8, 1, le(6, 2)).value, 6);       // SSHORT
  EXPECT_EQ(one(9, 1, le(6, 4)).value, 6);       // SLONG
  EXPECT_EQ(one(8, 1, le(0xFFFA, 2)).value, 1);  // SSHORT −6
  float f = 6.0f, g = 6.5f;
  std::uint32_t fb, gb;
  std::memcpy(&fb, &f, 4);
  std::memcpy(&gb, &g, 4);
  EXPECT_EQ(one(11, 1, le(fb, 4)).value, 6);  // FLOAT 6.0
  EXPECT_EQ(one(11, 1, le(gb, 4)).value, 1);  // FLOAT 6.5
  double d = 8.0;
  std::uint64_t db;
  std::memcpy(&db, &d, 8);
  EXPECT_EQ(one(12, 1, le(db, 8)).value, 8);                    // DOUBLE (out of line)
  Bytes r = le(12, 4), r0 = le(6, 4), sr = le(0xFFFFFFF4u, 4);  // 12/2, 6/0, −12/−2
  r.insert(r.end(), {2, 0, 0, 0});
  r0.insert(r0.end(), {0, 0, 0, 0});
  const Bytes m2 = le(0xFFFFFFFEu, 4);
  sr.insert(sr.end(), m2.begin(), m2.end());
  EXPECT_EQ(one(5, 1, r).value, 6);
  EXPECT_EQ(one(5, 1, r0).value, 1);  // denominator 0 → nan
  EXPECT_EQ(one(10, 1, sr).value, 6);
}

TEST(ExifTiffTest, NonNumericTypesAreIgnoredButCountAsPresent) {
  for (const auto& t : {one(1, 1, {6}), one(2, 2, {'6', 0}), one(7, 1, {6})}) {
    EXPECT_TRUE(t.tag_present);
    EXPECT_EQ(t.value, 1);
  }
}

TEST(ExifTiffTest, EntryEdgeCases) {
  Bytes two = le(6, 2);
  two.insert(two.end(), {1, 0});
  EXPECT_EQ(one(3, 2, two).value, 6);              // count 2: the first value
  EXPECT_FALSE(one(3, 0, le(6, 2)).tag_present);   // count 0: skipped
  EXPECT_FALSE(one(99, 1, le(6, 2)).tag_present);  // unknown type: skipped
  EXPECT_FALSE(one(17, 1, le(6, 8)).tag_present);  // SLONG8: not loaded by Pillow 9.4
  // Duplicates: the last wins.
  EXPECT_EQ(parse_exif_tiff(tiff_block(false, {{0x0112, 3, 1, le(6, 2)}, {0x0112, 3, 1, le(3, 2)}}))
                .value,
            3);
  // An out-of-line value past the end stops the IFD: entries after it are lost.
  // (ASCII × 100 at offset 5000 in a ~60-byte block.)
  Bytes before = tiff_block(false, {{0x010F, 2, 100, le(5000, 4)}, {0x0112, 3, 1, le(6, 2)}});
  EXPECT_FALSE(parse_exif_tiff(before).tag_present);
  Bytes after = tiff_block(false, {{0x0112, 3, 1, le(6, 2)}, {0x010F, 2, 100, le(5000, 4)}});
  EXPECT_EQ(parse_exif_tiff(after).value, 6);
  // IFD0 offset past the end, or a tag count larger than the entries present.
  Bytes far = tiff_block(false, {{0x0112, 3, 1, le(6, 2)}});
  far[4] = 0xE8;
  far[5] = 0x03;
  EXPECT_EQ(parse_exif_tiff(far).status, TiffOrientation::kOk);
  EXPECT_FALSE(parse_exif_tiff(far).tag_present);
  Bytes many = tiff_block(false, {{0x0112, 3, 1, le(6, 2)}});
  many[8] = 5;
  EXPECT_EQ(parse_exif_tiff(many).value, 6);
}

TEST(ExifTiffTest, HeaderCases) {
  const Bytes good = tiff_block(false, {{0x0112, 3, 1, le(6, 2)}});
  Bytes prefixed = bytes_of(std::string_view("Exif\0\0", 6));
  prefixed.insert(prefixed.end(), good.begin(), good.end());
  EXPECT_EQ(parse_exif_tiff(prefixed).value, 6);
  Bytes twice = bytes_of(std::string_view("Exif\0\0", 6));
  twice.insert(twice.end(), prefixed.begin(), prefixed.end());
  EXPECT_EQ(parse_exif_tiff(twice).status, TiffOrientation::kNotTiff);  // stripped once
  EXPECT_EQ(parse_exif_tiff({}).status, TiffOrientation::kNoData);
  EXPECT_EQ(parse_exif_tiff(bytes_of(std::string_view("Exif\0\0", 6))).status,
            TiffOrientation::kNoData);
  EXPECT_EQ(parse_exif_tiff(bytes_of(std::string_view("Exif\0", 5))).status,
            TiffOrientation::kNotTiff);
  EXPECT_EQ(parse_exif_tiff(bytes_of("XX*\0\x08\0\0\0"s)).status, TiffOrientation::kNotTiff);
  EXPECT_EQ(parse_exif_tiff(bytes_of("II*")).status, TiffOrientation::kNotTiff);
  EXPECT_EQ(parse_exif_tiff(bytes_of(std::string_view("II*\0\x08\0", 6))).status,
            TiffOrientation::kTruncatedHeader);
  EXPECT_EQ(parse_exif_tiff(bytes_of(std::string_view("II+\0\x08\0\0\0\0\0\0\0", 12))).status,
            TiffOrientation::kTruncatedHeader);  // BigTIFF
  Bytes odd = good;  // "II\0*" and "MM\0+" (read as classic TIFF) are accepted prefixes
  odd[2] = 0;
  odd[3] = '*';
  EXPECT_EQ(parse_exif_tiff(odd).value, 6);
  Bytes mm = tiff_block(true, {{0x0112, 3, 1, be(8, 2)}});
  mm[3] = '+';
  EXPECT_EQ(parse_exif_tiff(mm).value, 8);
}

TEST(ExifJpegTest, FirstExifApp1) {
  const Bytes jpeg = *encode_jpeg(small_image(20, 12), {});
  EXPECT_EQ(read_exif_orientation(jpeg, ImageFormat::kJpeg).value, 1);
  for (int o = 1; o <= 8; ++o) {
    const auto r = read_exif_orientation(
        jpeg_with_segments(jpeg, {{0xE1, exif_app1_payload(o, o % 2)}}), ImageFormat::kJpeg);
    EXPECT_EQ(r.value, o);
    EXPECT_TRUE(r.error.empty());
  }
  const Bytes xmp =
      bytes_of("http://ns.adobe.com/xap/1.0/\0<tiff:Orientation>6</tiff:Orientation>"s);
  EXPECT_EQ(
      read_exif_orientation(jpeg_with_segments(jpeg, {{0xE1, xmp}}), ImageFormat::kJpeg).value, 1);
  const Bytes two =
      jpeg_with_segments(jpeg, {{0xE1, exif_app1_payload(3)}, {0xE1, exif_app1_payload(6)}});
  EXPECT_EQ(read_exif_orientation(two, ImageFormat::kJpeg).value, 3);
}

TEST(ExifJpegTest, MalformedBlockDependsOnAnEarlierJfifDpi) {
  const Bytes jpeg = *encode_jpeg(small_image(20, 12), {});
  const Bytes bad = bytes_of(std::string_view("Exif\0\0XX*\0\x08\0\0\0", 14));
  // Without "dpi", Pillow reads the EXIF while opening and swallows the SyntaxError.
  auto r = read_exif_orientation(jpeg_with_segments(jpeg, {{0xE1, bad}}), ImageFormat::kJpeg);
  EXPECT_TRUE(r.error.empty());
  EXPECT_EQ(r.value, 1);
  r = read_exif_orientation(jpeg_with_segments(jpeg, {{0xE1, bad}, {0xE0, jfif_payload(1)}}),
                            ImageFormat::kJpeg);
  EXPECT_TRUE(r.error.empty());
  r = read_exif_orientation(jpeg_with_segments(jpeg, {{0xE0, jfif_payload(0)}, {0xE1, bad}}),
                            ImageFormat::kJpeg);
  EXPECT_TRUE(r.error.empty());
  // After a JFIF APP0 in dots per inch, exif_transpose meets the error and raises.
  r = read_exif_orientation(jpeg_with_segments(jpeg, {{0xE0, jfif_payload(1)}, {0xE1, bad}}),
                            ImageFormat::kJpeg);
  EXPECT_FALSE(r.error.empty());
  // A truncated header is struct.error: fatal either way.
  const Bytes short_head = bytes_of(std::string_view("Exif\0\0II*\0\x08\0", 12));
  EXPECT_FALSE(
      read_exif_orientation(jpeg_with_segments(jpeg, {{0xE1, short_head}}), ImageFormat::kJpeg)
          .error.empty());
}

Bytes text_chunk(std::string_view type, std::string_view key, const Bytes& rest) {
  Bytes d = bytes_of(key);
  d.push_back(0);
  d.insert(d.end(), rest.begin(), rest.end());
  return png_chunk(type, d);
}

Bytes tiff6() { return tiff_block(false, {{0x0112, 3, 1, le(6, 2)}}); }

TEST(ExifPngTest, ChunksPillowReads) {
  const Bytes png = *encode_png(small_image(20, 12), {});
  auto o = [&](const std::vector<Bytes>& pre, const std::vector<Bytes>& post = {}) {
    return read_exif_orientation(png_with_chunks(png, pre, post), ImageFormat::kPng);
  };
  EXPECT_EQ(o({}).value, 1);
  EXPECT_EQ(o({png_chunk("eXIf", tiff6())}).value, 6);
  EXPECT_EQ(o({}, {png_chunk("eXIf", tiff6())}).value, 6);  // after IDAT: read after load()
  const Bytes t3 = tiff_block(false, {{0x0112, 3, 1, le(3, 2)}});
  EXPECT_EQ(o({png_chunk("eXIf", t3)}, {png_chunk("eXIf", tiff6())}).value, 3);  // no load()
  EXPECT_EQ(o({text_chunk("tEXt", "exif", tiff6())}).value, 6);  // tEXt "exif" stays bytes
  EXPECT_FALSE(o({text_chunk("zTXt", "exif",
                             [] {
                               Bytes z{0};
                               auto c = zlib_compress(tiff6());
                               z.insert(z.end(), c.begin(), c.end());
                               return z;
                             }())})
                   .error.empty());  // zTXt gives str: TypeError
  Bytes prefixed = bytes_of(std::string_view("Exif\0\0", 6));
  prefixed.insert(prefixed.end(), t3.begin(), t3.end());
  EXPECT_FALSE(o({png_chunk("eXIf", prefixed)}).error.empty());  // "Exif\0\0" twice
  EXPECT_EQ(o({png_chunk("eXIf", {})}).value, 1);
}

TEST(ExifPngTest, RawProfileAndXmp) {
  const Bytes png = *encode_png(small_image(20, 12), {});
  auto o = [&](const std::vector<Bytes>& pre, const std::vector<Bytes>& post = {}) {
    return read_exif_orientation(png_with_chunks(png, pre, post), ImageFormat::kPng);
  };
  std::string hex = "\nexif\n      30\n";
  for (std::uint8_t c : tiff6()) {
    static const char* d = "0123456789abcdef";
    hex += d[c >> 4];
    hex += d[c & 15];
    if (hex.size() % 16 == 0) hex += '\n';
  }
  EXPECT_EQ(o({text_chunk("tEXt", "Raw profile type exif", bytes_of(hex))}).value, 6);
  EXPECT_EQ(o({text_chunk("tEXt", "Raw profile type exif", bytes_of(hex + " \t\r"))}).value, 6);
  EXPECT_FALSE(o({text_chunk("tEXt", "Raw profile type exif", bytes_of(hex + "0"))}).error.empty());
  EXPECT_FALSE(
      o({text_chunk("tEXt", "Raw profile type exif", bytes_of("\nexif\n 1\nzz"))}).error.empty());
  const Bytes xmp = bytes_of("<x:xmpmeta><rdf:Description tiff:Orientation=\"8\"/></x:xmpmeta>");
  const Bytes itxt_head{0, 0, 0, 0};  // flag, method, empty language, empty translated key
  Bytes itxt = itxt_head;
  itxt.insert(itxt.end(), xmp.begin(), xmp.end());
  EXPECT_EQ(o({text_chunk("iTXt", "XML:com.adobe.xmp", itxt)}).value, 8);
  EXPECT_EQ(o({}, {text_chunk("iTXt", "XML:com.adobe.xmp", itxt)}).value, 8);
  EXPECT_EQ(o({text_chunk("tEXt", "XML:com.adobe.xmp",
                          bytes_of("<tiff:Orientation>5</tiff:Orientation>"))})
                .value,
            5);
  // IFD0 has an orientation (even 1): XMP is not consulted; IFD0 without one: it is.
  const Bytes t1 = tiff_block(false, {{0x0112, 3, 1, le(1, 2)}});
  EXPECT_EQ(o({png_chunk("eXIf", t1), text_chunk("iTXt", "XML:com.adobe.xmp", itxt)}).value, 1);
  const Bytes no_tag = tiff_block(false, {{0x010F, 2, 2, {'x', 0}}});
  EXPECT_EQ(o({png_chunk("eXIf", no_tag), text_chunk("iTXt", "XML:com.adobe.xmp", itxt)}).value, 8);
  Bytes bad_utf8 = itxt_head;
  bad_utf8.push_back(0xFF);
  bad_utf8.insert(bad_utf8.end(), xmp.begin(), xmp.end());
  EXPECT_EQ(o({text_chunk("iTXt", "XML:com.adobe.xmp", bad_utf8)}).value, 1);  // chunk dropped
  Bytes zipped{1, 0, 0, 0};
  const Bytes z = zlib_compress(xmp);
  zipped.insert(zipped.end(), z.begin(), z.end());
  EXPECT_EQ(o({text_chunk("iTXt", "XML:com.adobe.xmp", zipped)}).value, 8);
}

TEST(ExifWebpTest, ExifChunkNeedsTheVp8xFlag) {
  const RgbImage im = small_image(20, 12);
  const Bytes simple = *encode_webp(im, {});
  EXPECT_EQ(read_exif_orientation(simple, ImageFormat::kWebp).value, 1);
  EXPECT_EQ(read_exif_orientation(webp_with_exif(simple, 20, 12, tiff6(), true), ImageFormat::kWebp)
                .value,
            6);
  EXPECT_EQ(read_exif_orientation(webp_with_exif(simple, 20, 12, exif_app1_payload(8), true),
                                  ImageFormat::kWebp)
                .value,
            8);
  EXPECT_EQ(
      read_exif_orientation(webp_with_exif(simple, 20, 12, tiff6(), false), ImageFormat::kWebp)
          .value,
      1);
  EXPECT_FALSE(read_exif_orientation(webp_with_exif(simple, 20, 12, bytes_of("nonsense"), true),
                                     ImageFormat::kWebp)
                   .error.empty());
  // The container still decodes, to the same pixels.
  auto a = decode_rgb(simple), b = decode_rgb(webp_with_exif(simple, 20, 12, tiff6(), true));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->pixels, b->pixels);
  auto h = probe_image(webp_with_exif(simple, 20, 12, tiff6(), true));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->orientation, 6);
}

// Malformed metadata never crashes and never reads outside the bytes (run under ASan too):
// random bit flips, overwritten runs and truncations of files with EXIF/XMP in every place.
TEST(ExifFuzzTest, MutatedFilesNeverCrash) {
  const RgbImage im = small_image(20, 12);
  const Bytes jpeg = *encode_jpeg(im, {}), png = *encode_png(im, {}), webp = *encode_webp(im, {});
  Bytes hex = bytes_of("\nexif\n 30\n");
  for (std::uint8_t c : tiff6()) {
    hex.push_back("0123456789abcdef"[c >> 4]);
    hex.push_back("0123456789abcdef"[c & 15]);
  }
  const std::vector<std::pair<Bytes, ImageFormat>> seeds = {
      {jpeg_with_segments(jpeg, {{0xE0, jfif_payload(1)}, {0xE1, exif_app1_payload(6)}}),
       ImageFormat::kJpeg},
      {png_with_chunks(
           png, {png_chunk("eXIf", tiff6()), text_chunk("tEXt", "Raw profile type exif", hex)},
           {text_chunk("iTXt", "XML:com.adobe.xmp", bytes_of("\0\0\0\0<tiff:Orientation>6"s))}),
       ImageFormat::kPng},
      {webp_with_exif(webp, 20, 12, tiff6(), true), ImageFormat::kWebp},
  };
  std::mt19937 rng(1234);
  int iterations = 0;
  for (const auto& [seed, format] : seeds) {
    for (int k = 0; k < 4000; ++k, ++iterations) {
      Bytes d = seed;
      switch (k % 4) {
        case 0:
          for (int n = 1 + rng() % 6; n > 0; --n)
            d[rng() % d.size()] ^= std::uint8_t(1u << (rng() % 8));
          break;
        case 1:
          d.resize(rng() % d.size());
          break;
        case 2: {  // overwrite a run inside the first 160 bytes (where the metadata is)
          const size_t at = rng() % std::min<size_t>(160, d.size());
          for (size_t i = at; i < std::min(d.size(), at + 1 + rng() % 24); ++i)
            d[i] = std::uint8_t(rng());
          break;
        }
        default:
          for (int n = 0; n < 3; ++n)
            d[rng() % std::min<size_t>(160, d.size())] = std::uint8_t(rng() % 10);
      }
      const ExifOrientation r = read_exif_orientation(d, format);
      ASSERT_GE(r.value, 1);
      ASSERT_LE(r.value, 8);
      (void)probe_image(d);
    }
  }
  for (int k = 0; k < 20000; ++k, ++iterations) {  // random TIFF blocks
    Bytes d(rng() % 64);
    for (auto& c : d) c = std::uint8_t(rng() % 4 == 0 ? rng() % 10 : rng());
    if (d.size() >= 4 && k % 2) std::memcpy(d.data(), k % 4 == 1 ? "II*\0" : "MM\0*", 4);
    const TiffOrientation t = parse_exif_tiff(d);
    ASSERT_GE(t.value, 1);
    ASSERT_LE(t.value, 8);
  }
  EXPECT_EQ(iterations, 32000);
}

// Pillow's transpose methods composed from the three primitives they are defined by: mirror
// (x → W−1−x), flip (y → H−1−y) and transpose (x ↔ y).
TEST(OrientationTest, TransformsAreCompositionsOfMirrorFlipTranspose) {
  const RgbImage in = small_image(7, 4);
  auto at = [](const RgbImage& im, int x, int y) {
    const std::uint8_t* p = im.row(y) + 3 * x;
    return (p[0] << 16) | (p[1] << 8) | p[2];
  };
  auto mirror = [&](const RgbImage& im) {
    RgbImage o = im;
    for (int y = 0; y < im.height; ++y)
      for (int x = 0; x < im.width; ++x)
        std::memcpy(o.row(y) + 3 * x, im.row(y) + 3 * (im.width - 1 - x), 3);
    return o;
  };
  auto flip = [&](const RgbImage& im) {
    RgbImage o = im;
    for (int y = 0; y < im.height; ++y)
      std::memcpy(o.row(y), im.row(im.height - 1 - y), 3 * im.width);
    return o;
  };
  auto transpose = [&](const RgbImage& im) {
    RgbImage o{im.height, im.width, std::vector<std::uint8_t>(im.pixels.size())};
    for (int y = 0; y < o.height; ++y)
      for (int x = 0; x < o.width; ++x) std::memcpy(o.row(y) + 3 * x, im.row(x) + 3 * y, 3);
    return o;
  };
  const RgbImage expect[9] = {in,
                              in,
                              mirror(in),
                              flip(mirror(in)),
                              flip(in),
                              transpose(in),
                              mirror(transpose(in)),
                              flip(mirror(transpose(in))),
                              flip(transpose(in))};
  for (int o = 1; o <= 8; ++o) {
    RgbImage out;
    apply_orientation(o, in, &out);
    ASSERT_EQ(out.width, expect[o].width) << o;
    ASSERT_EQ(out.height, expect[o].height) << o;
    EXPECT_EQ(out.pixels, expect[o].pixels) << "orientation " << o;
  }
  // 6 = rotate 90° clockwise: the bottom-left pixel goes to the top-left.
  RgbImage r6;
  apply_orientation(6, in, &r6);
  EXPECT_EQ(at(r6, 0, 0), at(in, 0, in.height - 1));
  // Larger than one 16×16 tile, odd sizes.
  const RgbImage big = small_image(53, 37);
  RgbImage t5, t7;
  apply_orientation(5, big, &t5);
  apply_orientation(7, big, &t7);
  EXPECT_EQ(t5.pixels, transpose(big).pixels);
  EXPECT_EQ(t7.pixels, flip(mirror(transpose(big))).pixels);
}

}  // namespace
}  // namespace stoker::image
