#include "stoker/synth/video.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/display.h>
#include <libavutil/opt.h>
}

#include "stoker/base/file.h"
#include "stoker/synth/audio.h"
#include "stoker/synth/rng.h"

namespace stoker::synth {
namespace {

const char* encoder_name(const std::string& codec) {
  if (codec == "h264") return "libx264";
  if (codec == "mpeg4") return "mpeg4";
  if (codec == "vp9") return "libvpx-vp9";
  if (codec == "av1") return "libaom-av1";
  return nullptr;
}

std::string av_err(int e) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(e, buf, sizeof buf);
  return buf;
}

struct Output {
  std::vector<std::uint8_t> data;
  std::int64_t pos = 0;
};

int write_cb(void* opaque, std::uint8_t* buf, int size) {
  auto* o = static_cast<Output*>(opaque);
  const std::size_t end = static_cast<std::size_t>(o->pos) + static_cast<std::size_t>(size);
  if (end > o->data.size()) o->data.resize(end);
  std::memcpy(o->data.data() + o->pos, buf, static_cast<std::size_t>(size));
  o->pos = static_cast<std::int64_t>(end);
  return size;
}

std::int64_t seek_cb(void* opaque, std::int64_t offset, int whence) {
  auto* o = static_cast<Output*>(opaque);
  whence &= ~AVSEEK_FORCE;
  if (whence == AVSEEK_SIZE) return static_cast<std::int64_t>(o->data.size());
  std::int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? o->pos
                      : whence == SEEK_END ? static_cast<std::int64_t>(o->data.size()) : -1;
  if (base < 0 || base + offset < 0) return AVERROR(EINVAL);
  o->pos = base + offset;
  return o->pos;
}

// Everything FFmpeg allocated, freed in one place.
struct Muxer {
  AVFormatContext* oc = nullptr;
  AVIOContext* avio = nullptr;
  AVCodecContext* video = nullptr;
  AVCodecContext* audio = nullptr;
  AVFrame* frame = nullptr;
  AVFrame* aframe = nullptr;
  AVPacket* pkt = nullptr;
  ~Muxer() {
    av_packet_free(&pkt);
    av_frame_free(&frame);
    av_frame_free(&aframe);
    avcodec_free_context(&video);
    avcodec_free_context(&audio);
    if (oc) avformat_free_context(oc);
    if (avio) {
      av_freep(&avio->buffer);
      avio_context_free(&avio);
    }
  }
};

Status check(int ret, const char* what) {
  if (ret < 0) return internal_error(std::string("synth video: ") + what + ": " + av_err(ret));
  return {};
}

// Sends one frame (or the flush, frame == nullptr) and writes every packet that comes out.
Status drain(Muxer& m, AVCodecContext* ctx, AVStream* st, AVFrame* frame) {
  STOKER_RETURN_IF_ERROR(check(avcodec_send_frame(ctx, frame), "encode"));
  while (true) {
    int ret = avcodec_receive_packet(ctx, m.pkt);
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return {};
    STOKER_RETURN_IF_ERROR(check(ret, "encode"));
    av_packet_rescale_ts(m.pkt, ctx->time_base, st->time_base);
    m.pkt->stream_index = st->index;
    STOKER_RETURN_IF_ERROR(check(av_interleaved_write_frame(m.oc, m.pkt), "write"));
  }
}

// The picture of frame i: a diagonal gradient that drifts, a box that travels, some noise.
void paint(AVFrame* f, int i, const VideoSpec& s, Rng& rng) {
  const int w = f->width, h = f->height;
  const bool c444 = f->format == AV_PIX_FMT_YUV444P;
  const int bx = (i * 7) % std::max(1, w), by = (i * 3) % std::max(1, h);
  const int box = std::max(4, std::min(w, h) / 4);
  for (int y = 0; y < h; ++y) {
    std::uint8_t* row = f->data[0] + static_cast<std::ptrdiff_t>(y) * f->linesize[0];
    for (int x = 0; x < w; ++x) {
      bool in_box = x >= bx && x < bx + box && y >= by && y < by + box;
      int v = in_box ? 235 : 16 + ((x + 2 * y + 3 * i) % 200);
      row[x] = static_cast<std::uint8_t>(std::clamp(v + static_cast<int>(rng.below(9)) - 4, 0, 255));
    }
  }
  const int cw = c444 ? w : (w + 1) / 2, ch = c444 ? h : (h + 1) / 2;
  for (int p = 1; p <= 2; ++p) {
    for (int y = 0; y < ch; ++y) {
      std::uint8_t* row = f->data[p] + static_cast<std::ptrdiff_t>(y) * f->linesize[p];
      for (int x = 0; x < cw; ++x) {
        row[x] = static_cast<std::uint8_t>(p == 1 ? 64 + (x * 3 + i) % 128 : 96 + (y * 5 + 2 * i) % 96);
      }
    }
  }
  (void)s;
}

}  // namespace

Status VideoSpec::validate() const {
  if (!encoder_name(codec)) return invalid_argument("synth video: unknown codec " + codec);
  if (width < 2 || height < 2 || width > 8192 || height > 8192) {
    return invalid_argument("synth video: size out of range");
  }
  if (((width | height) & 1) && codec != "h264") {
    return invalid_argument("synth video: odd sizes need h264 (4:4:4)");
  }
  if (fps_num <= 0 || fps_den <= 0 || frames < 0 || frames > 100000 || gop < 1 || bframes < 0 ||
      bframes > 16) {
    return invalid_argument("synth video: bad rate, frame count, GOP or B-frames");
  }
  if (rotation % 90 != 0) return invalid_argument("synth video: rotation must be a multiple of 90");
  return {};
}

bool can_encode(const std::string& codec) {
  const char* name = encoder_name(codec);
  return name && avcodec_find_encoder_by_name(name) != nullptr;
}

Result<std::vector<std::uint8_t>> encode_video(const VideoSpec& s) {
  STOKER_RETURN_IF_ERROR(s.validate());
  static const bool quiet = [] {  // x264's banner and FFmpeg's notes would go to stderr
    av_log_set_level(AV_LOG_QUIET);
    return true;
  }();
  (void)quiet;
  const AVCodec* enc = avcodec_find_encoder_by_name(encoder_name(s.codec));
  if (!enc) return unimplemented(std::string("synth video: this FFmpeg has no ") + encoder_name(s.codec));
  Muxer m;
  Output out;
  STOKER_RETURN_IF_ERROR(check(avformat_alloc_output_context2(&m.oc, nullptr, s.container().c_str(), nullptr),
                               "muxer"));
  constexpr int kBuf = 1 << 16;
  auto* buf = static_cast<std::uint8_t*>(av_malloc(kBuf));
  m.avio = avio_alloc_context(buf, kBuf, 1, &out, nullptr, write_cb, seek_cb);
  if (!m.avio) return internal_error("synth video: out of memory");
  m.oc->pb = m.avio;

  m.video = avcodec_alloc_context3(enc);
  AVCodecContext* v = m.video;
  v->width = s.width;
  v->height = s.height;
  v->pix_fmt = ((s.width | s.height) & 1) ? AV_PIX_FMT_YUV444P : AV_PIX_FMT_YUV420P;
  v->framerate = AVRational{s.fps_num, s.fps_den};
  v->time_base = s.vfr ? AVRational{1, 90000} : AVRational{s.fps_den, s.fps_num};
  v->gop_size = s.gop;
  v->keyint_min = s.gop;
  v->max_b_frames = s.codec == "h264" || s.codec == "mpeg4" ? s.bframes : 0;
  v->thread_count = 1;
  if (s.codec == "h264") {
    av_opt_set(v->priv_data, "preset", "veryfast", 0);
    av_opt_set(v->priv_data, "x264-params", "scenecut=0", 0);
    av_opt_set(v->priv_data, "crf", "26", 0);
  } else if (s.codec == "mpeg4") {
    v->flags |= AV_CODEC_FLAG_QSCALE;
    v->global_quality = FF_QP2LAMBDA * 5;
  } else if (s.codec == "vp9") {
    v->bit_rate = 400000;
    av_opt_set(v->priv_data, "deadline", "realtime", 0);
    av_opt_set(v->priv_data, "cpu-used", "8", 0);
  } else {
    v->bit_rate = 400000;
    av_opt_set(v->priv_data, "cpu-used", "8", 0);
    av_opt_set(v->priv_data, "usage", "realtime", 0);
  }
  if (m.oc->oformat->flags & AVFMT_GLOBALHEADER) v->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  STOKER_RETURN_IF_ERROR(check(avcodec_open2(v, enc, nullptr), "open encoder"));
  AVStream* vst = avformat_new_stream(m.oc, nullptr);
  STOKER_RETURN_IF_ERROR(check(avcodec_parameters_from_context(vst->codecpar, v), "stream"));
  vst->time_base = v->time_base;
  vst->avg_frame_rate = v->framerate;
  if (s.rotation != 0) {
    auto* sd = reinterpret_cast<std::int32_t*>(
        av_stream_new_side_data(vst, AV_PKT_DATA_DISPLAYMATRIX, sizeof(std::int32_t) * 9));
    if (!sd) return internal_error("synth video: out of memory");
    av_display_rotation_set(sd, -static_cast<double>(s.rotation));
  }

  AVStream* ast = nullptr;
  if (s.audio) {
    const AVCodec* aenc = avcodec_find_encoder(AV_CODEC_ID_AAC);
    if (!aenc) return unimplemented("synth video: this FFmpeg has no AAC encoder");
    m.audio = avcodec_alloc_context3(aenc);
    AVCodecContext* a = m.audio;
    a->sample_fmt = AV_SAMPLE_FMT_FLTP;
    a->sample_rate = s.audio_rate;
    av_channel_layout_default(&a->ch_layout, s.audio_channels);
    a->bit_rate = 32000 * s.audio_channels;
    a->time_base = AVRational{1, a->sample_rate};
    a->thread_count = 1;
    if (m.oc->oformat->flags & AVFMT_GLOBALHEADER) a->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    STOKER_RETURN_IF_ERROR(check(avcodec_open2(a, aenc, nullptr), "open audio encoder"));
    ast = avformat_new_stream(m.oc, nullptr);
    STOKER_RETURN_IF_ERROR(check(avcodec_parameters_from_context(ast->codecpar, a), "audio stream"));
    ast->time_base = a->time_base;
  }
  STOKER_RETURN_IF_ERROR(check(avformat_write_header(m.oc, nullptr), "header"));

  m.pkt = av_packet_alloc();
  m.frame = av_frame_alloc();
  m.frame->format = v->pix_fmt;
  m.frame->width = s.width;
  m.frame->height = s.height;
  STOKER_RETURN_IF_ERROR(check(av_frame_get_buffer(m.frame, 0), "frame"));
  Rng rng(s.seed * 0x9e3779b97f4a7c15ull + 1);
  const double tick = 90000.0 * s.fps_den / s.fps_num;
  std::int64_t pts = 0;
  for (int i = 0; i < s.frames; ++i) {
    STOKER_RETURN_IF_ERROR(check(av_frame_make_writable(m.frame), "frame"));
    paint(m.frame, i, s, rng);
    if (s.vfr) {
      // Durations between 0.5 and 1.5 nominal frames, and a 0.4 s pause half way.
      if (i > 0) {
        pts += std::max<std::int64_t>(1, static_cast<std::int64_t>(tick * (0.5 + rng.below(101) / 100.0)));
        if (i == s.frames / 2) pts += 36000;
      }
      m.frame->pts = pts;
    } else {
      m.frame->pts = i;
    }
    STOKER_RETURN_IF_ERROR(drain(m, v, vst, m.frame));
  }
  STOKER_RETURN_IF_ERROR(drain(m, v, vst, nullptr));

  if (s.audio) {
    AVCodecContext* a = m.audio;
    m.aframe = av_frame_alloc();
    m.aframe->format = a->sample_fmt;
    m.aframe->nb_samples = a->frame_size > 0 ? a->frame_size : 1024;
    m.aframe->sample_rate = a->sample_rate;
    STOKER_RETURN_IF_ERROR(check(av_channel_layout_copy(&m.aframe->ch_layout, &a->ch_layout), "audio"));
    STOKER_RETURN_IF_ERROR(check(av_frame_get_buffer(m.aframe, 0), "audio frame"));
    const double seconds = static_cast<double>(s.frames) * s.fps_den / s.fps_num;
    const std::int64_t total = static_cast<std::int64_t>(seconds * a->sample_rate);
    std::vector<float> pcm;  // interleaved, from synth/audio.h when a content is named
    if (!s.audio_content.empty()) {
      pcm = render_audio({.format = "m4a", .content = s.audio_content, .sample_rate = s.audio_rate,
                          .channels = s.audio_channels, .seconds = seconds, .seed = s.seed});
    }
    const std::int64_t rendered = static_cast<std::int64_t>(pcm.size()) / s.audio_channels;
    for (std::int64_t t = 0; t < total; t += m.aframe->nb_samples) {
      STOKER_RETURN_IF_ERROR(check(av_frame_make_writable(m.aframe), "audio frame"));
      for (int c = 0; c < s.audio_channels; ++c) {
        auto* d = reinterpret_cast<float*>(m.aframe->data[c]);
        for (int k = 0; k < m.aframe->nb_samples; ++k) {
          const std::int64_t i = t + k;
          d[k] = s.audio_content.empty()
                     ? 0.2f * static_cast<float>(std::sin(2 * M_PI * 440.0 * static_cast<double>(i) / a->sample_rate))
                     : (i < rendered ? pcm[static_cast<std::size_t>(i * s.audio_channels + c)] : 0.0f);
        }
      }
      m.aframe->pts = t;
      STOKER_RETURN_IF_ERROR(drain(m, a, ast, m.aframe));
    }
    STOKER_RETURN_IF_ERROR(drain(m, a, ast, nullptr));
  }
  STOKER_RETURN_IF_ERROR(check(av_write_trailer(m.oc), "trailer"));
  avio_flush(m.avio);
  return std::move(out.data);
}

VideoSpec video_kind(int k, std::uint64_t seed) {
  VideoSpec s;
  s.seed = seed * 1000003u + static_cast<std::uint64_t>(k);
  std::vector<VideoSpec> kinds;
  auto add = [&](VideoSpec v) { kinds.push_back(v); };
  add({.codec = "h264", .width = 320, .height = 180, .fps_num = 25, .fps_den = 1, .frames = 75, .gop = 250, .bframes = 2});
  add({.codec = "mpeg4", .width = 176, .height = 144, .fps_num = 30000, .fps_den = 1001, .frames = 60, .gop = 15, .bframes = 2});
  add({.codec = "h264", .width = 161, .height = 91, .fps_num = 24000, .fps_den = 1001, .frames = 48, .gop = 24, .bframes = 3, .vfr = true});
  add({.codec = "h264", .width = 256, .height = 144, .fps_num = 60, .fps_den = 1, .frames = 120, .gop = 60, .bframes = 2, .audio = true});
  add({.codec = "h264", .width = 240, .height = 136, .fps_num = 25, .fps_den = 1, .frames = 50, .gop = 12, .bframes = 0, .rotation = 90});
  add({.codec = "h264", .width = 320, .height = 240, .fps_num = 30000, .fps_den = 1001, .frames = 60, .gop = 5, .bframes = 1});
  if (can_encode("vp9")) add({.codec = "vp9", .width = 192, .height = 108, .fps_num = 25, .fps_den = 1, .frames = 50, .gop = 25, .bframes = 0});
  if (can_encode("av1")) add({.codec = "av1", .width = 128, .height = 72, .fps_num = 25, .fps_den = 1, .frames = 25, .gop = 25, .bframes = 0});
  VideoSpec v = kinds[static_cast<std::size_t>(k) % kinds.size()];
  v.seed = s.seed;
  return v;
}

std::string video_kind_name(const VideoSpec& v) {
  char fps[32];
  std::snprintf(fps, sizeof fps, "%.3g", static_cast<double>(v.fps_num) / v.fps_den);
  std::string name = v.codec + "_" + fps + "fps_gop" + std::to_string(v.gop) + "_bf" +
                     std::to_string(v.bframes) + "_" + std::to_string(v.width) + "x" +
                     std::to_string(v.height);
  if (v.vfr) name += "_vfr";
  if (v.audio) name += "_audio";
  if (v.rotation) name += "_rot" + std::to_string(v.rotation);
  return name;
}

Result<VideoMixResult> add_video_records(const std::string& out_dir, int count, std::uint64_t seed) {
  if (count < 0) return invalid_argument("synth: --videos must be >= 0");
  VideoMixResult r;
  std::string records, meta;
  const std::string dir = out_dir + "/videos";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return permission_denied("synth: cannot create " + dir + ": " + ec.message());
  auto write = [&](const std::string& rel, const VideoSpec& v, bool referenced) -> Status {
    STOKER_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, encode_video(v));
    STOKER_RETURN_IF_ERROR(write_file(out_dir + "/" + rel, bytes));
    r.bytes += static_cast<std::int64_t>(bytes.size());
    char line[512];
    std::snprintf(line, sizeof line,
                  "{\"path\": \"%s\", \"codec\": \"%s\", \"width\": %d, \"height\": %d, "
                  "\"fps\": \"%d/%d\", \"frames\": %d, \"gop\": %d, \"bframes\": %d, "
                  "\"vfr\": %s, \"audio\": %s, \"rotation\": %d, \"bytes\": %zu, \"referenced\": %s}\n",
                  rel.c_str(), v.codec.c_str(), v.width, v.height, v.fps_num, v.fps_den, v.frames,
                  v.gop, v.bframes, v.vfr ? "true" : "false", v.audio ? "true" : "false",
                  v.rotation, bytes.size(), referenced ? "true" : "false");
    meta += line;
    return {};
  };
  for (int k = 0; k < count; ++k) {
    VideoSpec v = video_kind(k, seed);
    const std::string rel = "videos/" + std::to_string(k) + "_" + video_kind_name(v) + "." + v.container();
    STOKER_RETURN_IF_ERROR(write(rel, v, true));
    r.paths.push_back(rel);
    const char* fps = k % 3 == 0 ? "2.0" : k % 3 == 1 ? "1.0" : "4.0";
    records += "{\"id\": \"video-" + std::to_string(k) +
               "\", \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"video\", "
               "\"video\": \"" + rel + "\", \"fps\": " + fps +
               "}, {\"type\": \"text\", \"text\": \"What moves in this clip, and where does it go?\"}]}, "
               "{\"role\": \"assistant\", \"content\": \"A bright square travels diagonally across a "
               "drifting gradient.\"}]}\n";
    ++r.records;
  }
  VideoSpec one{.codec = "h264", .width = 64, .height = 48, .frames = 1, .gop = 1, .bframes = 0};
  STOKER_RETURN_IF_ERROR(write("videos/one_frame.mp4", one, false));
  VideoSpec zero{.codec = "h264", .width = 64, .height = 48, .frames = 0, .gop = 1, .bframes = 0};
  STOKER_RETURN_IF_ERROR(write("videos/zero_frames.mp4", zero, false));
  {
    std::ofstream f(out_dir + "/data.jsonl", std::ios::app | std::ios::binary);
    f << records;
    if (!f) return data_loss("synth: cannot append to " + out_dir + "/data.jsonl");
  }
  STOKER_RETURN_IF_ERROR(write_file(out_dir + "/videos.jsonl",
                                    std::span<const std::uint8_t>(
                                        reinterpret_cast<const std::uint8_t*>(meta.data()), meta.size())));
  return r;
}

}  // namespace stoker::synth
