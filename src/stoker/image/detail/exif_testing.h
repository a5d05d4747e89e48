// Test helper: builds EXIF blocks (TIFF structures written byte by byte from the TIFF 6.0
// layout) and splices them into files our encoders made — APP segments into a JPEG, chunks into
// a PNG (CRC fixed up), a VP8X + EXIF container around a simple WebP. Tests only.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace stoker::image::testing {

using Bytes = std::vector<std::uint8_t>;

struct TiffEntry {
  std::uint16_t tag, type;
  std::uint32_t count;
  Bytes value;  // ≤ 4 bytes: stored in the entry (padded); longer: appended, offset written
};

inline void put(Bytes* b, std::uint64_t v, int n, bool big) {
  for (int i = 0; i < n; ++i) {
    const int shift = 8 * (big ? n - 1 - i : i);
    b->push_back(static_cast<std::uint8_t>(v >> shift));
  }
}

inline Bytes le(std::uint64_t v, int n) {
  Bytes b;
  put(&b, v, n, false);
  return b;
}
inline Bytes be(std::uint64_t v, int n) {
  Bytes b;
  put(&b, v, n, true);
  return b;
}

// "II*\0"/"MM\0*" header, IFD0 at 8 with `entries`, next-IFD 0, then out-of-line values.
inline Bytes tiff_block(bool big, const std::vector<TiffEntry>& entries) {
  Bytes b;
  for (char c : std::string_view(big ? "MM\0*" : "II*\0", 4))
    b.push_back(static_cast<std::uint8_t>(c));
  put(&b, 8, 4, big);
  put(&b, entries.size(), 2, big);
  std::uint32_t data_at = 8 + 2 + 12 * static_cast<std::uint32_t>(entries.size()) + 4;
  Bytes data;
  for (const TiffEntry& e : entries) {
    put(&b, e.tag, 2, big);
    put(&b, e.type, 2, big);
    put(&b, e.count, 4, big);
    if (e.value.size() <= 4) {
      Bytes v = e.value;
      v.resize(4, 0);
      b.insert(b.end(), v.begin(), v.end());
    } else {
      put(&b, data_at + data.size(), 4, big);
      data.insert(data.end(), e.value.begin(), e.value.end());
    }
  }
  put(&b, 0, 4, big);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

// An orientation SHORT in IFD0, with the "Exif\0\0" prefix a JPEG APP1 carries.
inline Bytes exif_app1_payload(int orientation, bool big = false) {
  Bytes b{'E', 'x', 'i', 'f', 0, 0};
  const Bytes t = tiff_block(big, {{0x0112, 3, 1, big ? be(orientation, 2) : le(orientation, 2)}});
  b.insert(b.end(), t.begin(), t.end());
  return b;
}

inline Bytes bytes_of(std::string_view s) { return Bytes(s.begin(), s.end()); }

// Inserts APP segments (marker, payload) right after SOI.
inline Bytes jpeg_with_segments(const Bytes& jpeg, const std::vector<std::pair<int, Bytes>>& segs) {
  Bytes out(jpeg.begin(), jpeg.begin() + 2);
  for (const auto& [marker, payload] : segs) {
    out.push_back(0xFF);
    out.push_back(static_cast<std::uint8_t>(marker));
    put(&out, payload.size() + 2, 2, true);
    out.insert(out.end(), payload.begin(), payload.end());
  }
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

// A JFIF APP0 payload with density unit `unit` (1 = dots per inch: Pillow then sets "dpi").
inline Bytes jfif_payload(int unit) {
  return {'J', 'F', 'I', 'F', 0, 1, 1, static_cast<std::uint8_t>(unit), 0, 72, 0, 72, 0, 0};
}

inline Bytes png_chunk(std::string_view type, const Bytes& data) {
  Bytes c;
  put(&c, data.size(), 4, true);
  for (char t : type)
    c.push_back(static_cast<std::uint8_t>(t));  // (insert: a GCC 12 false warning)
  for (std::uint8_t d : data) c.push_back(d);
  const uLong crc = crc32(crc32(0, reinterpret_cast<const Bytef*>(type.data()), 4), data.data(),
                          static_cast<uInt>(data.size()));
  put(&c, crc, 4, true);
  return c;
}

// Chunks `pre` right after IHDR, `post` right before IEND.
inline Bytes png_with_chunks(const Bytes& png, const std::vector<Bytes>& pre,
                             const std::vector<Bytes>& post) {
  const size_t after_ihdr = 8 + 25;
  const size_t iend = png.size() - 12;
  Bytes out(png.begin(), png.begin() + after_ihdr);
  for (const Bytes& c : pre) out.insert(out.end(), c.begin(), c.end());
  out.insert(out.end(), png.begin() + after_ihdr, png.begin() + iend);
  for (const Bytes& c : post) out.insert(out.end(), c.begin(), c.end());
  out.insert(out.end(), png.begin() + iend, png.end());
  return out;
}

inline Bytes zlib_compress(const Bytes& in) {
  uLongf n = compressBound(in.size());
  Bytes out(n);
  compress(out.data(), &n, in.data(), in.size());
  out.resize(n);
  return out;
}

// Wraps a simple (VP8/VP8L) WebP of w×h in an extended container: VP8X (EXIF flag per
// `flag`), the image chunk, then an EXIF chunk.
inline Bytes webp_with_exif(const Bytes& simple, int w, int h, const Bytes& exif, bool flag) {
  Bytes body{'W', 'E', 'B', 'P', 'V', 'P', '8', 'X'};
  put(&body, 10, 4, false);
  body.push_back(flag ? 0x08 : 0x00);
  body.insert(body.end(), {0, 0, 0});
  put(&body, w - 1, 3, false);
  put(&body, h - 1, 3, false);
  body.insert(body.end(), simple.begin() + 12, simple.end());  // the VP8/VP8L chunk(s)
  body.insert(body.end(), {'E', 'X', 'I', 'F'});
  put(&body, exif.size(), 4, false);
  body.insert(body.end(), exif.begin(), exif.end());
  if (exif.size() % 2) body.push_back(0);
  Bytes out{'R', 'I', 'F', 'F'};
  put(&out, body.size(), 4, false);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

}  // namespace stoker::image::testing
