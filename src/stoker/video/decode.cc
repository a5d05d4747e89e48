#include "stoker/video/decode.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/imgutils.h>
#include <libavutil/mem.h>
#include <libswscale/swscale.h>
}

namespace stoker::video {
namespace {

using Clock = std::chrono::steady_clock;

std::string av_error_text(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(err, buf, sizeof(buf));
  return buf;
}

struct MemoryInput {
  const std::uint8_t* data = nullptr;
  std::int64_t size = 0;
  std::int64_t pos = 0;
};

int read_memory(void* opaque, std::uint8_t* buf, int buf_size) {
  auto* in = static_cast<MemoryInput*>(opaque);
  std::int64_t left = in->size - in->pos;
  if (left <= 0) return AVERROR_EOF;
  int n = static_cast<int>(std::min<std::int64_t>(left, buf_size));
  std::memcpy(buf, in->data + in->pos, static_cast<std::size_t>(n));
  in->pos += n;
  return n;
}

std::int64_t seek_memory(void* opaque, std::int64_t offset, int whence) {
  auto* in = static_cast<MemoryInput*>(opaque);
  whence &= ~AVSEEK_FORCE;
  if (whence == AVSEEK_SIZE) return in->size;
  std::int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? in->pos : whence == SEEK_END ? in->size : -1;
  if (base < 0) return AVERROR(EINVAL);
  std::int64_t target = base + offset;
  if (target < 0 || target > in->size) return AVERROR(EINVAL);
  in->pos = target;
  return target;
}

struct PacketEntry {
  std::int64_t pts = 0, dts = 0;
  bool key = false;
};

}  // namespace

struct VideoReader::Impl {
  DecodeLimits limits;
  MemoryInput input;
  AVIOContext* avio = nullptr;
  AVFormatContext* fmt = nullptr;
  AVCodecContext* codec = nullptr;
  SwsContext* sws = nullptr;
  AVPacket* pkt = nullptr;
  AVFrame* frame = nullptr;
  int stream = -1;
  StreamInfo info;
  Clock::time_point deadline;

  // The scan: every video packet in decode order (discard-flagged ones included, they may be
  // references), the non-discard ones' pts → packet index, keyframes' packet indices.
  std::vector<PacketEntry> packets;
  std::unordered_map<std::int64_t, std::int64_t> packet_of_pts;
  std::vector<std::int64_t> key_packets;  // packet indices of keyframes, ascending
  std::int64_t min_dts = 0;

  // Decoder/demuxer state.
  std::int64_t next_packet = 0;  // packet index of the next video packet av_read_frame yields
  bool pending = false;          // `pkt` holds the packet `next_packet` (read, not yet sent)
  bool demux_eof = false, flushed = false, active = false;
  std::unordered_set<std::int64_t> wanted;

  // RGB conversion buffer (PyAV's av_image_alloc(align 16) layout).
  std::uint8_t* rgb = nullptr;
  int rgb_linesize = 0, rgb_w = 0, rgb_h = 0;

  ~Impl() {
    av_freep(&rgb);
    sws_freeContext(sws);
    av_frame_free(&frame);
    av_packet_free(&pkt);
    avcodec_free_context(&codec);
    if (fmt) avformat_close_input(&fmt);
    if (avio) {
      av_freep(&avio->buffer);
      avio_context_free(&avio);
    }
  }

  static int interrupt(void* opaque) {
    return Clock::now() > static_cast<Impl*>(opaque)->deadline ? 1 : 0;
  }

  Status check_time(const char* what) const {
    if (Clock::now() > deadline) {
      return deadline_exceeded(std::string("video: ") + what + " took longer than " +
                               std::to_string(limits.max_seconds) + " s");
    }
    return {};
  }

  Status open(std::span<const std::uint8_t> bytes) {
    // FFmpeg's own log lines (concealment, "Packet corrupt", ...) would go to stderr from every
    // worker; stoker reports failures as errors instead.
    // And a bound on any single FFmpeg allocation: a 3,428-byte MP4 (fuzz, 2026-12-01) made the
    // mov demuxer ask for 943 MB inside avformat_open_input on a header's claim. 448 MiB is
    // above what the frame cap legitimately needs (8192 x 8192 YUV 4:4:4 at 16 bits: 402 MB)
    // and below the fuzzer's 512 MiB allocation limit. Process-wide (FFmpeg has one setting):
    // it bounds other FFmpeg users in this process the same way.
    static const bool quiet = [] {
      av_log_set_level(AV_LOG_QUIET);
      av_max_alloc(std::size_t{448} << 20);
      return true;
    }();
    (void)quiet;
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(limits.max_seconds));
    if (bytes.empty()) return data_loss("video: empty file");
    input = {bytes.data(), static_cast<std::int64_t>(bytes.size()), 0};
    constexpr int kBuf = 1 << 16;
    auto* buf = static_cast<std::uint8_t*>(av_malloc(kBuf));
    if (!buf) return resource_exhausted("video: out of memory");
    avio = avio_alloc_context(buf, kBuf, 0, &input, read_memory, nullptr, seek_memory);
    if (!avio) {
      av_free(buf);
      return resource_exhausted("video: out of memory");
    }
    fmt = avformat_alloc_context();
    if (!fmt) return resource_exhausted("video: out of memory");
    fmt->pb = avio;
    fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    fmt->interrupt_callback = {&Impl::interrupt, this};
    int ret = avformat_open_input(&fmt, nullptr, nullptr, nullptr);
    if (ret < 0) {
      fmt = nullptr;  // freed by avformat_open_input on failure
      STOKER_RETURN_IF_ERROR(check_time("opening"));
      return data_loss("video: not a readable container (" + av_error_text(ret) + ")");
    }
    // FFmpeg opens a still image too (png_pipe, jpeg_pipe, webp_pipe, image2, ...): one frame,
    // which failed later as "nframes should be in [2, 1]" (issue 30 §18). Say what it is.
    if (const std::string demuxer = fmt->iformat && fmt->iformat->name ? fmt->iformat->name : "";
        demuxer == "image2" || demuxer == "image2pipe" ||
        (demuxer.size() > 5 && demuxer.compare(demuxer.size() - 5, 5, "_pipe") == 0)) {
      std::string kind = demuxer.substr(0, demuxer.find('_'));
      for (char& c : kind) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      return invalid_argument("video: the file is a still image (" + kind +
                              "), not a video; give it as an image part (\"type\": \"image\")"
                              " or as a video's list of frames");
    }
    ret = avformat_find_stream_info(fmt, nullptr);
    if (ret < 0) {
      STOKER_RETURN_IF_ERROR(check_time("probing"));
      return data_loss("video: cannot read stream info (" + av_error_text(ret) + ")");
    }
    // torchvision reads container.streams.video[0]: the first video stream.
    for (unsigned i = 0; i < fmt->nb_streams; ++i) {
      if (fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO) {
        stream = static_cast<int>(i);
        break;
      }
    }
    if (stream < 0) return invalid_argument("video: the file has no video stream");
    AVStream* st = fmt->streams[stream];
    const AVCodecParameters* par = st->codecpar;
    info.width = par->width;
    info.height = par->height;
    if (info.width <= 0 || info.height <= 0) {
      return data_loss("video: the video stream has no frame size");
    }
    if (info.width > limits.max_side || info.height > limits.max_side ||
        std::int64_t{info.width} * info.height > limits.max_frame_pixels) {
      return invalid_argument("video: frame size " + std::to_string(info.width) + "x" +
                              std::to_string(info.height) + " exceeds the limit (" +
                              std::to_string(limits.max_side) + " per side, " +
                              std::to_string(limits.max_frame_pixels) + " pixels)");
    }
    info.tb_num = st->time_base.num;
    info.tb_den = st->time_base.den;
    if (info.tb_num <= 0 || info.tb_den <= 0) return data_loss("video: invalid stream time base");
    if (st->avg_frame_rate.num > 0 && st->avg_frame_rate.den > 0) {
      info.average_fps = av_q2d(st->avg_frame_rate);
    }
    const AVCodec* dec = avcodec_find_decoder(par->codec_id);
    info.codec = dec ? dec->name : avcodec_get_name(par->codec_id);
    if (!dec) return unimplemented("video: no decoder for codec " + info.codec);
    if (const std::uint8_t* m = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, nullptr)) {
      double r = av_display_rotation_get(reinterpret_cast<const std::int32_t*>(m));
      if (r == r) info.rotation = ((static_cast<int>(std::lround(r)) % 360) + 360) % 360;
    }
    for (unsigned i = 0; i < fmt->nb_streams; ++i) {
      if (static_cast<int>(i) != stream) fmt->streams[i]->discard = AVDISCARD_ALL;
    }
    pkt = av_packet_alloc();
    frame = av_frame_alloc();
    if (!pkt || !frame) return resource_exhausted("video: out of memory");
    STOKER_RETURN_IF_ERROR(scan());
    codec = avcodec_alloc_context3(dec);
    if (!codec) return resource_exhausted("video: out of memory");
    ret = avcodec_parameters_to_context(codec, par);
    if (ret < 0) return data_loss("video: bad codec parameters (" + av_error_text(ret) + ")");
    codec->pkt_timebase = st->time_base;
    codec->thread_count = limits.threads;
    codec->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
    ret = avcodec_open2(codec, dec, nullptr);
    if (ret < 0) return data_loss("video: cannot open the " + info.codec + " decoder (" + av_error_text(ret) + ")");
    return {};
  }

  // Demuxes the video stream once (no decoding).
  Status scan() {
    std::vector<std::int64_t> pts;
    min_dts = INT64_MAX;
    std::int64_t nopts = 0;
    while (true) {
      int ret = av_read_frame(fmt, pkt);
      if (ret == AVERROR_EOF) break;
      if (ret < 0) {
        STOKER_RETURN_IF_ERROR(check_time("scanning"));
        return data_loss("video: the container is unreadable after " +
                         std::to_string(packets.size()) + " video packets (" +
                         av_error_text(ret) + "; truncated?)");
      }
      if (pkt->stream_index != stream) {
        av_packet_unref(pkt);
        continue;
      }
      if (pkt->flags & AV_PKT_FLAG_CORRUPT) {
        std::int64_t at = static_cast<std::int64_t>(packets.size());
        av_packet_unref(pkt);
        return data_loss("video: corrupt or truncated packet #" + std::to_string(at));
      }
      if (static_cast<std::int64_t>(packets.size()) >= limits.max_frames) {
        av_packet_unref(pkt);
        return resource_exhausted("video: more than " + std::to_string(limits.max_frames) +
                                  " video packets");
      }
      PacketEntry e{pkt->pts, pkt->dts, (pkt->flags & AV_PKT_FLAG_KEY) != 0};
      bool discard = (pkt->flags & AV_PKT_FLAG_DISCARD) != 0;
      av_packet_unref(pkt);
      std::int64_t index = static_cast<std::int64_t>(packets.size());
      if (e.dts != AV_NOPTS_VALUE) min_dts = std::min(min_dts, e.dts);
      packets.push_back(e);
      if (discard) continue;
      if (e.pts == AV_NOPTS_VALUE) {
        ++nopts;
        continue;
      }
      if (e.key) key_packets.push_back(index);
      if (packet_of_pts.emplace(e.pts, index).second) pts.push_back(e.pts);
    }
    if (nopts > 0) {
      return data_loss("video: " + std::to_string(nopts) + " frame(s) without timestamps");
    }
    if (pts.empty()) return data_loss("video: the video stream has no frames");
    if (key_packets.empty()) return data_loss("video: the video stream has no keyframe");
    AVStream* st = fmt->streams[stream];
    if (st->nb_frames > 0 && static_cast<std::int64_t>(packets.size()) < st->nb_frames) {
      return data_loss("video: truncated: the header lists " + std::to_string(st->nb_frames) +
                       " frames, " + std::to_string(packets.size()) + " are present");
    }
    std::sort(pts.begin(), pts.end());
    info.pts = std::move(pts);
    info.keyframes = static_cast<std::int64_t>(key_packets.size());
    if (min_dts == INT64_MAX) min_dts = 0;
    return rewind();
  }

  Status rewind() {
    int ret = av_seek_frame(fmt, stream, min_dts, AVSEEK_FLAG_BACKWARD);
    if (ret < 0) ret = avformat_seek_file(fmt, stream, INT64_MIN, min_dts, min_dts, 0);
    if (ret < 0) return data_loss("video: cannot seek to the start (" + av_error_text(ret) + ")");
    next_packet = 0;
    pending = false;
    demux_eof = false;
    return {};
  }

  // Reads the next video packet into `pkt`; false at end of stream.
  Result<bool> read_packet() {
    while (true) {
      int ret = av_read_frame(fmt, pkt);
      if (ret == AVERROR_EOF) return false;
      if (ret < 0) {
        STOKER_RETURN_IF_ERROR(check_time("demuxing"));
        return data_loss("video: demux error (" + av_error_text(ret) + ")");
      }
      if (pkt->stream_index == stream) return true;
      av_packet_unref(pkt);
    }
  }

  // The keyframe (packet index) to start decoding from for the frame with pts `p`: the last
  // keyframe in decode order whose pts is ≤ p.
  std::int64_t keyframe_for(std::int64_t p) const {
    std::int64_t best = key_packets.front();
    for (std::int64_t k : key_packets) {
      if (packets[static_cast<std::size_t>(k)].pts <= p) best = k;
    }
    return best;
  }

  // Positions the demuxer so that `pkt` holds keyframe packet `kd` (pending), decoder flushed.
  Status jump_to(std::int64_t kd, DecodeStats* stats) {
    if (active || flushed) avcodec_flush_buffers(codec);
    active = true;
    flushed = false;
    constexpr std::int64_t kSkipReadMax = 256;
    if (pending && next_packet == kd) return {};
    if (pending) {
      av_packet_unref(pkt);
      pending = false;
      ++next_packet;
      ++stats->packets_skipped;
    }
    if (!(kd >= next_packet && kd - next_packet <= kSkipReadMax && !demux_eof)) {
      const PacketEntry& k = packets[static_cast<std::size_t>(kd)];
      std::int64_t ts = k.dts != AV_NOPTS_VALUE ? std::min(k.dts, k.pts) : k.pts;
      ++stats->seeks;
      int ret = av_seek_frame(fmt, stream, ts, AVSEEK_FLAG_BACKWARD);
      bool known = false;
      if (ret >= 0) {
        // Where did it land? The first packet with a known pts tells (packets before it with
        // unknown pts are skipped; a landing after the keyframe falls back to a rewind).
        while (true) {
          STOKER_ASSIGN_OR_RETURN(bool got, read_packet());
          if (!got) break;
          auto it = pkt->pts != AV_NOPTS_VALUE ? packet_of_pts.find(pkt->pts) : packet_of_pts.end();
          if (it == packet_of_pts.end()) {
            av_packet_unref(pkt);
            ++stats->packets_skipped;
            continue;
          }
          if (it->second <= kd) {
            next_packet = it->second;
            pending = true;
            demux_eof = false;
            known = true;
          }
          break;
        }
      }
      if (!known) {
        if (pending) av_packet_unref(pkt);
        pending = false;
        STOKER_RETURN_IF_ERROR(rewind());
      }
    }
    // Skip-read up to the keyframe.
    while (true) {
      STOKER_RETURN_IF_ERROR(check_time("decoding"));
      if (!pending) {
        STOKER_ASSIGN_OR_RETURN(bool got, read_packet());
        if (!got) {
          demux_eof = true;
          return data_loss("video: keyframe packet #" + std::to_string(kd) + " not found again");
        }
        pending = true;
      }
      if (next_packet == kd) return {};
      av_packet_unref(pkt);
      pending = false;
      ++next_packet;
      ++stats->packets_skipped;
    }
  }

  // Feeds packets until the decoder returns the frame with pts `p`; converts it into `rgb`.
  Status decode_until(std::int64_t p, DecodeStats* stats) {
    while (true) {
      STOKER_RETURN_IF_ERROR(check_time("decoding"));
      int ret = avcodec_receive_frame(codec, frame);
      if (ret == 0) {
        ++stats->frames_decoded;
        std::int64_t fp = frame->pts != AV_NOPTS_VALUE ? frame->pts : frame->best_effort_timestamp;
        if (fp == p) {
          Status s = convert(stats);
          av_frame_unref(frame);
          return s;
        }
        av_frame_unref(frame);
        if (fp > p || fp == AV_NOPTS_VALUE) {
          return data_loss("video: the frame at pts " + std::to_string(p) +
                           " was not produced (the decoder went on to pts " + std::to_string(fp) +
                           "; corrupt stream?)");
        }
        continue;
      }
      if (ret == AVERROR_EOF) {
        return data_loss("video: the stream ended before the frame at pts " + std::to_string(p) +
                         " (corrupt or truncated)");
      }
      if (ret != AVERROR(EAGAIN)) {
        return data_loss("video: decode error before pts " + std::to_string(p) + " (" +
                         av_error_text(ret) + ")");
      }
      if (flushed) {
        return data_loss("video: the decoder stopped before the frame at pts " + std::to_string(p));
      }
      if (!pending) {
        STOKER_ASSIGN_OR_RETURN(bool got, read_packet());
        if (!got) {
          demux_eof = true;
          flushed = true;
          ret = avcodec_send_packet(codec, nullptr);
          if (ret < 0 && ret != AVERROR_EOF) {
            return data_loss("video: decoder flush failed (" + av_error_text(ret) + ")");
          }
          continue;
        }
        pending = true;
      }
      // Frames nobody wants and nobody references are dropped by the decoder itself.
      bool want = pkt->pts != AV_NOPTS_VALUE && wanted.count(pkt->pts) != 0;
      codec->skip_frame = want ? AVDISCARD_DEFAULT : AVDISCARD_NONREF;
      std::int64_t at = pkt->pts;
      ret = avcodec_send_packet(codec, pkt);
      av_packet_unref(pkt);
      pending = false;
      ++next_packet;
      ++stats->packets_sent;
      if (ret < 0 && ret != AVERROR(EAGAIN)) {
        return data_loss("video: corrupt packet at pts " + std::to_string(at) + " (" +
                         av_error_text(ret) + ")");
      }
    }
  }

  Status convert(DecodeStats* stats) {
    if (frame->width != info.width || frame->height != info.height) {
      return data_loss("video: frame at pts " + std::to_string(frame->pts) + " is " +
                       std::to_string(frame->width) + "x" + std::to_string(frame->height) +
                       ", the stream is " + std::to_string(info.width) + "x" +
                       std::to_string(info.height) + " (size changes are not supported)");
    }
    if (frame->format < 0) return data_loss("video: decoded frame without pixel format");
    // PyAV 10 VideoFrame.to_rgb(): sws_getCachedContext(w, h, fmt → w, h, rgb24, SWS_BILINEAR),
    // colourspace details left at swscale's defaults.
    sws = sws_getCachedContext(sws, frame->width, frame->height,
                               static_cast<AVPixelFormat>(frame->format), frame->width,
                               frame->height, AV_PIX_FMT_RGB24, SWS_BILINEAR, nullptr, nullptr,
                               nullptr);
    if (!sws) {
      return unimplemented(std::string("video: cannot convert pixel format ") +
                           av_get_pix_fmt_name(static_cast<AVPixelFormat>(frame->format)));
    }
    if (!rgb || rgb_w != frame->width || rgb_h != frame->height) {
      av_freep(&rgb);
      std::uint8_t* data[4] = {};
      int lines[4] = {};
      int ret = av_image_alloc(data, lines, frame->width, frame->height, AV_PIX_FMT_RGB24, 16);
      if (ret < 0) return resource_exhausted("video: out of memory for an RGB frame");
      rgb = data[0];
      rgb_linesize = lines[0];
      rgb_w = frame->width;
      rgb_h = frame->height;
    }
    std::uint8_t* dst[4] = {rgb, nullptr, nullptr, nullptr};
    int dst_lines[4] = {rgb_linesize, 0, 0, 0};
    sws_scale(sws, frame->data, frame->linesize, 0, frame->height, dst, dst_lines);
    ++stats->frames_converted;
    return {};
  }

  RgbFrame current(std::int64_t p) const {
    return RgbFrame{rgb_w, rgb_h, static_cast<std::size_t>(rgb_linesize), rgb, p};
  }
};

VideoReader::VideoReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VideoReader::~VideoReader() = default;

Result<std::unique_ptr<VideoReader>> VideoReader::open(std::span<const std::uint8_t> bytes,
                                                       const DecodeLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->limits = limits;
  STOKER_RETURN_IF_ERROR(impl->open(bytes));
  return std::unique_ptr<VideoReader>(new VideoReader(std::move(impl)));
}

const StreamInfo& VideoReader::info() const { return impl_->info; }

Status VideoReader::decode(std::span<const std::int64_t> positions, const Sink& sink,
                           DecodeStats* stats) {
  DecodeStats local;
  if (!stats) stats = &local;
  Impl& m = *impl_;
  const auto& pts = m.info.pts;
  m.wanted.clear();
  for (std::size_t k = 0; k < positions.size(); ++k) {
    std::int64_t i = positions[k];
    if (i < 0 || i >= static_cast<std::int64_t>(pts.size()) || (k > 0 && i < positions[k - 1])) {
      return invalid_argument("video: frame positions must be ascending and within the stream");
    }
    m.wanted.insert(pts[static_cast<std::size_t>(i)]);
  }
  std::int64_t last_done = -1;
  for (std::size_t k = 0; k < positions.size(); ++k) {
    std::int64_t i = positions[k];
    std::int64_t p = pts[static_cast<std::size_t>(i)];
    if (i != last_done) {
      std::int64_t kd = m.keyframe_for(p);
      // Not decoding yet, or the wanted frame's keyframe has not been fed to the decoder (packets
      // before next_packet have been): jump there, skip-reading or seeking past everything in
      // between. Otherwise decode forward inside the current GOP.
      if (!m.active || m.flushed || kd >= m.next_packet) STOKER_RETURN_IF_ERROR(m.jump_to(kd, stats));
      STOKER_RETURN_IF_ERROR(m.decode_until(p, stats));
      last_done = i;
    }
    STOKER_RETURN_IF_ERROR(sink(k, m.current(p)));
  }
  return {};
}

}  // namespace stoker::video
