// EXIF orientation the way Pillow 9.4 finds it. Each function below names the Pillow code it
// mirrors (PIL/Image.py Exif + getexif, TiffImagePlugin.ImageFileDirectory_v2, JpegImagePlugin
// APP, PngImagePlugin text/eXIf chunks, WebPImagePlugin); behaviour was checked case by case
// against /usr/bin/python3's Pillow 9.4 (tests/python/test_exif_parity.py keeps checking it).
#include "stoker/image/exif.h"

#include <webp/demux.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "stoker/base/result.h"

namespace stoker::image {
namespace detail {
namespace {

struct Reader {
  std::span<const std::uint8_t> b;
  bool big_endian;
  std::uint64_t u(size_t at, int n) const {  // n-byte unsigned at `at` (caller checked bounds)
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
      const int k = big_endian ? i : n - 1 - i;
      v = (v << 8) | b[at + k];
    }
    return v;
  }
};

// ImageFileDirectory_v2._load_dispatch: bytes per value of each TIFF type Pillow 9.4 loads;
// 0 = a type it skips (17, 18 and anything unknown).
int unit_size(std::uint64_t type) {
  switch (type) {
    case 1: case 2: case 6: case 7: return 1;   // BYTE ASCII SBYTE UNDEFINED
    case 3: case 8: return 2;                   // SHORT SSHORT
    case 4: case 9: case 11: case 13: return 4; // LONG SLONG FLOAT IFD
    case 5: case 10: case 12: case 16: return 8; // RATIONAL SRATIONAL DOUBLE LONG8
    default: return 0;
  }
}

// exif_transpose looks the value up in {2: ..., 8: ...}: a Python int, float or IFDRational
// equal to 2..8 matches (6.0 and 12/2 do); bytes (BYTE, UNDEFINED) and str (ASCII) never do.
// A multi-value tag counts by its first value (_setitem truncates to Orientation's length 1).
int effective_value(const Reader& r, size_t at, std::uint64_t type) {
  auto in_range = [](double v) {
    for (int k = 2; k <= 8; ++k) if (v == k) return k;
    return 1;
  };
  auto s = [&](int n) {  // sign-extend an n-byte value
    const std::uint64_t v = r.u(at, n);
    const int shift = 64 - 8 * n;
    return static_cast<std::int64_t>(v << shift) >> shift;
  };
  switch (type) {
    case 3: return in_range(static_cast<double>(r.u(at, 2)));
    case 4: case 13: return in_range(static_cast<double>(r.u(at, 4)));
    case 16: { const std::uint64_t v = r.u(at, 8); return v <= 8 ? in_range(double(v)) : 1; }
    case 6: return in_range(static_cast<double>(s(1)));
    case 8: return in_range(static_cast<double>(s(2)));
    case 9: return in_range(static_cast<double>(s(4)));
    case 11: { const std::uint32_t bits = static_cast<std::uint32_t>(r.u(at, 4));
               float f; std::memcpy(&f, &bits, 4); return in_range(f); }
    case 12: { const std::uint64_t bits = r.u(at, 8);
               double d; std::memcpy(&d, &bits, 8); return in_range(d); }
    case 5: case 10: {  // IFDRational: num/den as a Fraction; den 0 → nan, never equal
      const bool sign = type == 10;
      const std::uint64_t d = r.u(at + 4, 4);
      const std::int64_t num = sign ? s(4) : static_cast<std::int64_t>(r.u(at, 4));
      const std::int64_t den = sign ? std::int64_t{static_cast<std::int32_t>(d)}
                                    : static_cast<std::int64_t>(d);
      if (den == 0) return 1;
      for (int k = 2; k <= 8; ++k) if (num == k * den) return k;
      return 1;
    }
    default: return 1;  // BYTE, ASCII, UNDEFINED
  }
}

}  // namespace

// Exif.load: strip one "Exif\0\0", ImageFileDirectory_v2(head = first 8 bytes), seek to the IFD0
// offset, load(). load() catches OSError (a short read) and keeps the tags read so far.
TiffOrientation parse_exif_tiff(std::span<const std::uint8_t> b) {
  TiffOrientation out;
  if (b.size() >= 6 && std::memcmp(b.data(), "Exif\0\0", 6) == 0) b = b.subspan(6);
  if (b.empty()) return out;
  static constexpr const char* kPrefixes[] = {"MM\0*", "II*\0", "MM*\0", "II\0*", "MM\0+", "II+\0"};
  const bool tiff =
      b.size() >= 4 && std::any_of(std::begin(kPrefixes), std::end(kPrefixes), [&](const char* p) {
        return std::memcmp(b.data(), p, 4) == 0;
      });
  if (!tiff) {
    out.status = TiffOrientation::kNotTiff;
    return out;
  }
  // _bigtiff is `ifh[2] == 43`: only "II+\0" (Pillow's own quirk: "MM\0+" reads as classic).
  // A BigTIFF head needs 16 bytes but Exif.load reads 8: struct.error. So does a head < 8 bytes.
  if (b[2] == 43 || b.size() < 8) {
    out.status = TiffOrientation::kTruncatedHeader;
    return out;
  }
  out.status = TiffOrientation::kOk;
  const Reader r{b, b[0] == 'M'};
  size_t pos = r.u(4, 4);
  if (pos > b.size() || b.size() - pos < 2) return out;
  const std::uint64_t count = r.u(pos, 2);
  pos += 2;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (b.size() - pos < 12) return out;
    const std::uint64_t tag = r.u(pos, 2), type = r.u(pos + 2, 2), n = r.u(pos + 4, 4);
    const size_t entry = pos;
    pos += 12;
    const int unit = unit_size(type);
    if (unit == 0) continue;  // "unsupported type": skipped, not stored
    const std::uint64_t size = n * static_cast<std::uint64_t>(unit);
    size_t at = entry + 8;  // values of ≤ 4 bytes sit in the entry
    if (size > 4) {
      const std::uint64_t off = r.u(entry + 8, 4);
      // _safe_read past the end raises OSError: load() stops, later entries are lost.
      if (off > b.size() || b.size() - off < size) return out;
      at = static_cast<size_t>(off);
    }
    if (size == 0 || tag != 0x0112) continue;  // count 0: "if not data: continue"
    out.tag_present = true;  // a later duplicate overwrites (a dict)
    out.value = effective_value(r, at, type);
  }
  return out;
}

}  // namespace detail

namespace {

using detail::TiffOrientation;

ExifOrientation failure(std::string why) { return ExifOrientation{1, std::move(why)}; }

// What exif_transpose does with a parsed block when its errors propagate.
ExifOrientation from_block(const TiffOrientation& t, std::string_view where) {
  switch (t.status) {
    case TiffOrientation::kNotTiff:
      return failure(std::string(where) + ": EXIF data is not a TIFF structure (Pillow's "
                     "exif_transpose raises SyntaxError)");
    case TiffOrientation::kTruncatedHeader:
      return failure(std::string(where) + ": EXIF TIFF header is truncated or BigTIFF (Pillow's "
                     "exif_transpose raises struct.error)");
    default: return ExifOrientation{t.value, {}};
  }
}

bool has(std::span<const std::uint8_t> b, size_t at, std::string_view s) {
  return b.size() >= at + s.size() && std::memcmp(b.data() + at, s.data(), s.size()) == 0;
}

// ---------------------------------------------------------------- JPEG

// JpegImagePlugin: the first APP1 whose payload starts "Exif\0" (5 bytes) before the scan is
// info["exif"]. At the end of each APP segment, while info has no "dpi", Pillow calls getexif()
// to read the resolution and swallows SyntaxError (struct.error escapes: the file does not
// open). getexif() caches even a failed load, so exif_transpose later sees no tags. "dpi" comes
// from a JFIF APP0 with density unit 1 — only when one precedes the EXIF APP1 does the later
// exif_transpose meet (and raise) a SyntaxError.
ExifOrientation jpeg_orientation(std::span<const std::uint8_t> b) {
  size_t i = 2;
  bool dpi = false;
  while (true) {
    while (i < b.size() && b[i] != 0xFF) ++i;
    while (i < b.size() && b[i] == 0xFF) ++i;
    if (i >= b.size()) return {};
    const std::uint8_t m = b[i++];
    if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) continue;
    if (m == 0xD9 || m == 0xDA || b.size() - i < 2) return {};
    const size_t len = (size_t{b[i]} << 8) | b[i + 1];
    if (len < 2 || b.size() - i < len) return {};
    const auto seg = b.subspan(i + 2, len - 2);
    if (m == 0xE0 && has(seg, 0, "JFIF") && seg.size() >= 12 && seg[7] == 1) dpi = true;
    if (m == 0xE1 && has(seg, 0, std::string_view("Exif\0", 5))) {
      const TiffOrientation t = detail::parse_exif_tiff(seg);
      if (t.status == TiffOrientation::kNotTiff && !dpi) return {};  // swallowed at open
      if (t.status == TiffOrientation::kTruncatedHeader && !dpi) {
        return failure("JPEG APP1: EXIF TIFF header is truncated or BigTIFF (Pillow cannot open "
                       "the file: struct.error)");
      }
      return from_block(t, "JPEG APP1");
    }
    i += len;
  }
}

// ---------------------------------------------------------------- PNG

// zlib.decompressobj().decompress(data, 1 MB): what a truncated stream gives is kept; corrupt
// data is an error; more than Pillow's MAX_TEXT_CHUNK makes Pillow refuse the file (ignored
// here: `*too_large`).
bool inflate_text(std::span<const std::uint8_t> in, std::string* out, bool* too_large) {
  constexpr size_t kMax = 1 << 20;
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return false;
  out->assign(kMax, '\0');
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out->data());
  z.avail_out = static_cast<uInt>(kMax);
  const int rc = inflate(&z, Z_FINISH);
  out->resize(kMax - z.avail_out);
  *too_large = z.avail_out == 0 && rc != Z_STREAM_END && z.avail_in > 0;
  inflateEnd(&z);
  return rc == Z_STREAM_END || rc == Z_BUF_ERROR || rc == Z_OK;
}

bool valid_utf8(std::string_view s) {  // Python's strict UTF-8 decoder
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    const size_t n = c >= 0xC2 && c <= 0xDF ? 1
                     : c >= 0xE0 && c <= 0xEF ? 2
                     : c >= 0xF0 && c <= 0xF4 ? 3
                                              : 0;
    if (n == 0 || s.size() - i <= n) return false;
    std::uint32_t cp = c & (0x7F >> (n + 1));
    for (size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 3 && (cp < 0x10000 || cp > 0x10FFFF))) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

// The three info[] keys getexif() consults, as PngImagePlugin's chunk handlers leave them.
struct PngText {
  bool has = false;
  bool is_str = false;  // zTXt/iTXt give str (tEXt "exif" and eXIf give bytes)
  std::string value;
};
struct PngInfo {
  PngText exif, raw_profile, xmp;
  PngText* slot(std::string_view key) {
    if (key == "exif") return &exif;
    if (key == "Raw profile type exif") return &raw_profile;
    if (key == "XML:com.adobe.xmp") return &xmp;
    return nullptr;
  }
};

std::string_view as_text(std::span<const std::uint8_t> s) {
  return {reinterpret_cast<const char*>(s.data()), s.size()};
}

std::span<const std::uint8_t> bytes_of(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// chunk_tEXt / chunk_zTXt / chunk_iTXt / chunk_eXIf for the keys above.
void png_chunk(std::string_view type, std::string_view d, PngInfo* info) {
  if (type == "eXIf") {
    info->exif = {true, false, std::string("Exif\0\0", 6) + std::string(d)};
    return;
  }
  const size_t nul = d.find('\0');
  const std::string_view key = d.substr(0, nul);
  PngText* slot = info->slot(key);
  if (slot == nullptr) return;
  std::string_view rest = nul == std::string_view::npos ? "" : d.substr(nul + 1);
  bool too_large = false;
  if (type == "tEXt") {
    *slot = {true, key != "exif", std::string(rest)};
  } else if (type == "zTXt") {
    if (!rest.empty() && rest[0] != 0) return;  // Pillow raises SyntaxError: not our concern
    std::string text;
    const auto z = rest.empty() ? rest : rest.substr(1);
    if (!inflate_text(bytes_of(z), &text, &too_large)) text.clear();  // zlib.error → b""
    if (!too_large) *slot = {true, true, std::move(text)};
  } else if (type == "iTXt") {
    if (nul == std::string_view::npos || rest.size() < 2) return;
    const char cf = rest[0], cm = rest[1];
    rest.remove_prefix(2);
    const size_t l1 = rest.find('\0');
    const size_t l2 = l1 == std::string_view::npos ? l1 : rest.find('\0', l1 + 1);
    if (l2 == std::string_view::npos) return;
    const std::string_view lang = rest.substr(0, l1), tk = rest.substr(l1 + 1, l2 - l1 - 1);
    std::string text(rest.substr(l2 + 1));
    if (cf != 0) {
      if (cm != 0) return;
      std::string plain;
      if (!inflate_text(bytes_of(text), &plain, &too_large) || too_large) {
        return;
      }
      text = std::move(plain);
    }
    if (!valid_utf8(lang) || !valid_utf8(tk) || !valid_utf8(text)) return;
    *slot = {true, true, std::move(text)};
  }
}

// bytes.fromhex("".join(text.split("\n")[3:])): hex pairs, ASCII whitespace allowed between
// pairs only; anything else raises ValueError.
bool from_hex(std::string_view text, std::string* out) {
  size_t start = 0;
  for (int line = 0; line < 3; ++line) {
    start = text.find('\n', start);
    if (start == std::string_view::npos) return out->clear(), true;
    ++start;
  }
  auto hex = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
  };
  out->clear();
  for (size_t i = start; i < text.size();) {
    const char c = text[i];
    if (c == '\n' || c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < text.size() && text[j] == '\n') ++j;  // the join removed the newlines
    if (j >= text.size() || hex(c) < 0 || hex(text[j]) < 0) return false;
    out->push_back(static_cast<char>(hex(c) * 16 + hex(text[j])));
    i = j + 1;
  }
  return true;
}

// re.search(r'tiff:Orientation(="|>)([0-9])', xmp)
int xmp_orientation(std::string_view xmp) {
  constexpr std::string_view kKey = "tiff:Orientation";
  for (size_t at = xmp.find(kKey); at != std::string_view::npos; at = xmp.find(kKey, at + 1)) {
    std::string_view tail = xmp.substr(at + kKey.size());
    if (tail.substr(0, 2) == "=\"") tail.remove_prefix(2);
    else if (tail.substr(0, 1) == ">") tail.remove_prefix(1);
    else continue;
    if (!tail.empty() && tail[0] >= '0' && tail[0] <= '9') {
      const int v = tail[0] - '0';
      return v >= 2 && v <= 8 ? v : 1;
    }
  }
  return 1;
}

// PngImagePlugin keeps info[] for chunks before the first IDAT; getexif() reads the rest of the
// file (load() → load_end, chunk CRCs unchecked) only when no "exif" key exists by then.
ExifOrientation png_orientation(std::span<const std::uint8_t> b) {
  PngInfo all, pre;
  bool seen_idat = false;
  for (size_t pos = 8; b.size() - pos >= 8;) {
    const size_t len = (size_t{b[pos]} << 24) | (size_t{b[pos + 1]} << 16) |
                       (size_t{b[pos + 2]} << 8) | b[pos + 3];
    const std::string_view type = as_text(b.subspan(pos + 4, 4));
    const bool word = std::all_of(type.begin(), type.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    });
    if (!word || len > b.size() - pos - 8 || type == "IEND") break;
    if (type == "IDAT" && !seen_idat) {
      pre = all;
      seen_idat = true;
    } else if (type == "eXIf" || type == "tEXt" || type == "zTXt" || type == "iTXt") {
      png_chunk(type, as_text(b.subspan(pos + 8, len)), &all);
    }
    pos += 12 + len;
    if (pos > b.size()) break;
  }
  const PngInfo& info = seen_idat && pre.exif.has ? pre : all;
  std::string block;
  if (info.exif.has) {
    if (info.exif.is_str && !info.exif.value.empty()) {
      return failure("PNG text chunk \"exif\" is compressed/international text (Pillow's "
                     "exif_transpose raises TypeError)");
    }
    if (!info.exif.is_str) block = info.exif.value;
  } else if (info.raw_profile.has && !from_hex(info.raw_profile.value, &block)) {
    return failure("PNG \"Raw profile type exif\" is not hex (Pillow's exif_transpose raises "
                   "ValueError)");
  }
  const TiffOrientation t = detail::parse_exif_tiff(bytes_of(block));
  if (t.status == TiffOrientation::kNotTiff || t.status == TiffOrientation::kTruncatedHeader) {
    return from_block(t, "PNG");
  }
  if (t.tag_present) return ExifOrientation{t.value, {}};
  // XMP only when IFD0 has no orientation tag at all (Exif.__contains__).
  return ExifOrientation{info.xmp.has ? xmp_orientation(info.xmp.value) : 1, {}};
}

// ---------------------------------------------------------------- WebP

// WebPImagePlugin: the demuxer's first "EXIF" chunk (kept only when the VP8X header's EXIF flag
// is set). No XMP fallback: Pillow 9.4 stores WebP XMP as info["xmp"], which getexif ignores.
ExifOrientation webp_orientation(std::span<const std::uint8_t> b) {
  if (b.size() < 21 || !has(b, 12, "VP8X") || (b[20] & 0x08) == 0) return {};
  WebPData data{b.data(), b.size()};
  WebPDemuxer* demux = WebPDemux(&data);
  if (demux == nullptr) return {};  // Pillow cannot open it either; the decoder reports why
  WebPChunkIterator it;
  ExifOrientation out;
  if (WebPDemuxGetChunk(demux, "EXIF", 1, &it)) {
    if (it.chunk.size > 0) {
      out = from_block(detail::parse_exif_tiff({it.chunk.bytes, it.chunk.size}), "WebP EXIF chunk");
    }
    WebPDemuxReleaseChunkIterator(&it);
  }
  WebPDemuxDelete(demux);
  return out;
}

}  // namespace

ExifOrientation read_exif_orientation(std::span<const std::uint8_t> bytes, ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg: return jpeg_orientation(bytes);
    case ImageFormat::kPng: return bytes.size() >= 8 ? png_orientation(bytes) : ExifOrientation{};
    case ImageFormat::kWebp: return webp_orientation(bytes);
  }
  return {};
}

}  // namespace stoker::image
