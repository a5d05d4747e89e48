// JpegRowDecoder: the libjpeg API driven a few scanlines at a time, with the settings and the
// acceptance rules of decode_rgb's TurboJPEG path (decode.cc), so the rows are bit-identical:
//   - TurboJPEG's tjDecompress2(flags 0, TJPF_RGB) = jpeg_read_header, out_color_space =
//     JCS_EXT_RGB, libjpeg's default DCT (ISLOW) and upsampling (fancy), scale 1/1,
//     jpeg_start_decompress, jpeg_read_scanlines, jpeg_finish_decompress. Reading in blocks
//     instead of all rows at once does not change any sample.
//   - decode_rgb's tjDecompressHeader3 refuses sampling layouts TurboJPEG cannot classify;
//     `turbojpeg_subsampling` below is its getSubsamp (2.1.5), so we refuse the same files.
//   - Warnings: TurboJPEG records only the first warning of a call (libjpeg's emit_message
//     formats the first one), and decode_rgb judges that one. Here every warning is judged, and
//     the first one outside the benign list stops decoding at once (longjmp), so damaged data
//     is never decoded further. That refuses a superset of what decode_rgb refuses.
//   - A fresh libjpeg object per file (decode_rgb, too, now starts a fresh TurboJPEG handle per
//     file: a reused one kept the previous file's DQT/DHT tables). A file that lacks its own
//     quantisation tables fails ("Quantization table 0x00 was not defined"); one without Huffman
//     tables gets libjpeg-turbo's standard ones, as any fresh decoder (Pillow's) does.
// libjpeg reports errors by longjmp: every libjpeg call lives in the two C-style functions
// open_core / read_core, whose frames hold only trivially destructible locals.
#include "stoker/image/decode.h"

#include <csetjmp>
#include <cstdio>  // jpeglib.h uses FILE and size_t without including their headers
#include <cstring>
#include <string>
#include <type_traits>

#include <jpeglib.h>
#include <turbojpeg.h>  // TJSAMP_*, tjMCUWidth/Height: the sampling classes decode_rgb accepts

#include "stoker/image/detail/decode_checks.h"

namespace stoker::image {
namespace {

// libjpeg's error manager, extended; `pub` first so cinfo->err can be cast back.
struct JpegErrorMgr {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];  // the fatal error or the refused warning
  bool warning;                   // the failure was a (non-benign) warning
};
static_assert(std::is_standard_layout_v<JpegErrorMgr>);

JpegErrorMgr* error_mgr(j_common_ptr c) { return reinterpret_cast<JpegErrorMgr*>(c->err); }

[[noreturn]] void on_error_exit(j_common_ptr c) {
  JpegErrorMgr* e = error_mgr(c);
  (*c->err->format_message)(c, e->message);
  e->warning = false;
  std::longjmp(e->jump, 1);
}

// msg_level < 0: a warning (corrupt data that libjpeg can step over); ≥ 0: a trace message.
void on_emit_message(j_common_ptr c, int msg_level) {
  if (msg_level >= 0) return;
  c->err->num_warnings++;
  char msg[JMSG_LENGTH_MAX];
  (*c->err->format_message)(c, msg);
  if (detail::benign_jpeg_warning(msg)) return;
  JpegErrorMgr* e = error_mgr(c);
  std::memcpy(e->message, msg, sizeof(msg));
  e->warning = true;
  std::longjmp(e->jump, 1);
}

void on_output_message(j_common_ptr) {}  // libjpeg's default prints to stderr

constexpr int kCoreOk = 0;
constexpr int kCoreFailed = 1;          // message in the error manager
constexpr int kCoreColourSpace = 2;     // CMYK / YCCK / unknown: decode_rgb's job
constexpr int kCoreSampling = 3;        // a layout TurboJPEG (so decode_rgb) does not classify
constexpr int kCoreNoProgress = 4;      // jpeg_read_scanlines returned no row (cannot happen)

// TurboJPEG 2.1.5's getSubsamp() (turbojpeg.c) for 1- and 3-component images: the TJSAMP_* class
// of the sampling factors, or -1, for which tjDecompressHeader3 fails ("Could not determine
// subsampling type for JPEG image"). Its CMYK/YCCK branches are left out: those never get here.
int turbojpeg_subsampling(const jpeg_decompress_struct* d) {
  static constexpr int kPixelSize[TJ_NUMSAMP] = {3, 3, 3, 1, 3, 3};
  if (d->num_components == 1 && d->jpeg_color_space == JCS_GRAYSCALE) return TJSAMP_GRAY;
  const jpeg_component_info* c = d->comp_info;
  for (int i = 0; i < TJ_NUMSAMP; ++i) {
    if (d->num_components != kPixelSize[i]) continue;
    if (c[0].h_samp_factor == tjMCUWidth[i] / 8 && c[0].v_samp_factor == tjMCUHeight[i] / 8) {
      int match = 0;
      for (int k = 1; k < d->num_components; ++k) {
        if (c[k].h_samp_factor == 1 && c[k].v_samp_factor == 1) ++match;
      }
      if (match == d->num_components - 1) return i;
    }
    // 4:2:2 and 4:4:0 with sampling factors specified in non-standard ways.
    if (c[0].h_samp_factor == 2 && c[0].v_samp_factor == 2 &&
        (i == TJSAMP_422 || i == TJSAMP_440)) {
      int match = 0;
      for (int k = 1; k < d->num_components; ++k) {
        if (c[k].h_samp_factor == tjMCUHeight[i] / 8 && c[k].v_samp_factor == tjMCUWidth[i] / 8) {
          ++match;
        }
      }
      if (match == d->num_components - 1) return i;
    }
    // 4:4:4 with sampling factors specified in non-standard ways.
    if (c[0].h_samp_factor * c[0].v_samp_factor <= D_MAX_BLOCKS_IN_MCU / kPixelSize[i] &&
        i == TJSAMP_444) {
      int match = 0;
      for (int k = 1; k < d->num_components; ++k) {
        if (c[k].h_samp_factor == c[0].h_samp_factor && c[k].v_samp_factor == c[0].v_samp_factor) {
          ++match;
        }
        if (match == d->num_components - 1) return i;
      }
    }
  }
  return -1;
}

// Creates the decompressor, reads the header and starts decompression (for a progressive file
// that reads every scan). `*created` is set before jpeg_create_decompress, so the caller destroys
// whatever exists after a failure. C-style: see the file comment.
int open_core(jpeg_decompress_struct* d, JpegErrorMgr* e, bool* created, const std::uint8_t* data,
              size_t size) {
  d->err = jpeg_std_error(&e->pub);
  e->pub.error_exit = on_error_exit;
  e->pub.emit_message = on_emit_message;
  e->pub.output_message = on_output_message;
  e->message[0] = '\0';
  e->warning = false;
  if (setjmp(e->jump)) return kCoreFailed;
  *created = true;
  jpeg_create_decompress(d);
  jpeg_mem_src(d, data, static_cast<unsigned long>(size));
  jpeg_read_header(d, TRUE);  // a tables-only stream is an error (JERR_NO_IMAGE)
  if (d->jpeg_color_space != JCS_YCbCr && d->jpeg_color_space != JCS_RGB &&
      d->jpeg_color_space != JCS_GRAYSCALE) {
    return kCoreColourSpace;
  }
  if (turbojpeg_subsampling(d) < 0) return kCoreSampling;
  // TJPF_RGB; grey sources are replicated by libjpeg-turbo's gray → RGB deconverter.
  d->out_color_space = JCS_EXT_RGB;
  jpeg_start_decompress(d);
  return kCoreOk;
}

int read_core(jpeg_decompress_struct* d, JpegErrorMgr* e, std::uint8_t* const* rows, int n,
              bool finish) {
  if (setjmp(e->jump)) return kCoreFailed;
  // libjpeg fills the rows it is given and never writes the pointer array.
  JSAMPARRAY out = const_cast<JSAMPARRAY>(rows);
  int done = 0;
  while (done < n) {
    const JDIMENSION got =
        jpeg_read_scanlines(d, out + done, static_cast<JDIMENSION>(n - done));
    if (got == 0) return kCoreNoProgress;  // only a suspending data source does this
    done += static_cast<int>(got);
  }
  if (finish) jpeg_finish_decompress(d);  // reads to EOI: a missing EOI warns "Premature end"
  return kCoreOk;
}

// The DataLoss text decode_rgb's jpeg_failure gives for the same message.
Error jpeg_error(const JpegErrorMgr& e) {
  const std::string msg = e.message;
  if (msg.find("Premature end of JPEG file") != std::string::npos) {
    return data_loss("truncated JPEG (image file is truncated): " + msg);
  }
  return data_loss(std::string("corrupt JPEG") + (e.warning ? " (corrupt data): " : ": ") + msg);
}

}  // namespace

struct JpegRowDecoder::State {
  jpeg_decompress_struct cinfo{};  // zeroed: safe to destroy even if creation failed early
  JpegErrorMgr err{};
  bool created = false;
  int width = 0;
  int height = 0;
  int rows_read = 0;
  Status failure;  // sticky: the first read() error

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    if (created) jpeg_destroy_decompress(&cinfo);  // also aborts an unfinished decompression
  }
};

JpegRowDecoder::JpegRowDecoder(std::unique_ptr<State> s) : s_(std::move(s)) {}
JpegRowDecoder::~JpegRowDecoder() = default;
JpegRowDecoder::JpegRowDecoder(JpegRowDecoder&&) noexcept = default;
JpegRowDecoder& JpegRowDecoder::operator=(JpegRowDecoder&&) noexcept = default;

int JpegRowDecoder::width() const { return s_->width; }
int JpegRowDecoder::height() const { return s_->height; }
int JpegRowDecoder::rows_read() const { return s_->rows_read; }

Result<JpegRowDecoder> JpegRowDecoder::open(std::span<const std::uint8_t> bytes,
                                            const DecodeLimits& limits) {
  // The same header checks, in the same order, as decode_rgb: sniff + marker walk, then limits.
  STOKER_ASSIGN_OR_RETURN(ImageHeader h, probe_image(bytes));
  if (h.format != ImageFormat::kJpeg) {
    return invalid_argument("JpegRowDecoder: not a JPEG (" + std::string(format_name(h.format)) +
                            ")");
  }
  if (h.mode == "CMYK") {
    return unimplemented("JpegRowDecoder: 4-component (CMYK/YCCK) JPEG; use decode_rgb");
  }
  STOKER_RETURN_IF_ERROR(detail::check_limits(h, limits));

  auto s = std::make_unique<State>();
  const int rc = open_core(&s->cinfo, &s->err, &s->created, bytes.data(), bytes.size());
  switch (rc) {
    case kCoreOk: break;
    case kCoreFailed: return jpeg_error(s->err);
    case kCoreColourSpace:
      return unimplemented("JpegRowDecoder: JPEG colour space " +
                           std::to_string(static_cast<int>(s->cinfo.jpeg_color_space)) +
                           " (not YCbCr, RGB or grey); use decode_rgb");
    case kCoreSampling:
      return unimplemented("JpegRowDecoder: sampling factors TurboJPEG does not classify; "
                           "use decode_rgb");
    default: return internal_error("JpegRowDecoder: unexpected open result");
  }
  const jpeg_decompress_struct& d = s->cinfo;
  if (static_cast<int>(d.image_width) != h.width || static_cast<int>(d.image_height) != h.height) {
    return data_loss("corrupt JPEG: inconsistent frame size");
  }
  if (static_cast<int>(d.output_width) != h.width ||
      static_cast<int>(d.output_height) != h.height || d.output_components != 3) {
    return internal_error("JpegRowDecoder: unexpected libjpeg output geometry");
  }
  s->width = h.width;
  s->height = h.height;
  return JpegRowDecoder(std::move(s));
}

Status JpegRowDecoder::read(std::uint8_t* const* rows, int n) {
  State& s = *s_;
  if (!s.failure.ok()) return s.failure;
  if (rows == nullptr || n < 1 || n > s.height - s.rows_read) {
    return invalid_argument("JpegRowDecoder::read: " + std::to_string(n) + " rows requested, " +
                            std::to_string(s.height - s.rows_read) + " left");
  }
  const bool last = s.rows_read + n == s.height;
  const int rc = read_core(&s.cinfo, &s.err, rows, n, last);
  if (rc == kCoreFailed) {
    s.failure = jpeg_error(s.err);
  } else if (rc == kCoreNoProgress) {
    s.failure = data_loss("corrupt JPEG: decoder made no progress");
  } else {
    s.rows_read += n;
    return ok_status();
  }
  return s.failure;
}

}  // namespace stoker::image
