// The FFmpeg backend: what librosa's audioread fallback gets from `ffmpeg -i F -f s16le -`.
// The CLI picks the audio stream with the most channels (a default-disposition stream first),
// decodes it (libavcodec applies the container's encoder-delay skip and discard flags itself),
// and its filter graph converts each frame to packed int16 with libswresample (no dither, same
// rate and layout); audioread hands those bytes to librosa, which scales them by 2^-15. The same
// libraries do the same here, in memory.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/mem.h>
#include <libswresample/swresample.h>
}

#include "stoker/audio/decode.h"
#include "stoker/base/clock.h"

namespace stoker::audio::detail {
namespace {

std::string av_text(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(err, buf, sizeof buf);
  return buf;
}

struct MemoryInput {
  const std::uint8_t* data = nullptr;
  std::int64_t size = 0, pos = 0;
};

int read_memory(void* opaque, std::uint8_t* buf, int buf_size) {
  auto* in = static_cast<MemoryInput*>(opaque);
  const std::int64_t left = in->size - in->pos;
  if (left <= 0) return AVERROR_EOF;
  const int n = static_cast<int>(std::min<std::int64_t>(left, buf_size));
  std::memcpy(buf, in->data + in->pos, static_cast<std::size_t>(n));
  in->pos += n;
  return n;
}

std::int64_t seek_memory(void* opaque, std::int64_t offset, int whence) {
  auto* in = static_cast<MemoryInput*>(opaque);
  whence &= ~AVSEEK_FORCE;
  if (whence == AVSEEK_SIZE) return in->size;
  const std::int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? in->pos : whence == SEEK_END ? in->size : -1;
  if (base < 0) return AVERROR(EINVAL);
  const std::int64_t to = base + offset;
  if (to < 0 || to > in->size) return AVERROR(EINVAL);
  in->pos = to;
  return to;
}

// Everything FFmpeg allocated for one clip, freed in one place; the demuxer and stream choice.
struct Demuxer {
  MemoryInput input;
  AVIOContext* avio = nullptr;
  AVFormatContext* fmt = nullptr;
  std::int64_t deadline_ns = 0;
  int stream = -1;

  ~Demuxer() {
    if (fmt) avformat_close_input(&fmt);
    if (avio) {
      av_freep(&avio->buffer);
      avio_context_free(&avio);
    }
  }

  static int interrupt(void* opaque) { return now_ns() > static_cast<Demuxer*>(opaque)->deadline_ns ? 1 : 0; }

  Status open(std::span<const std::uint8_t> bytes, const AudioLimits& limits) {
    // The video module's process-wide settings (video/decode.cc): FFmpeg's log silenced (errors
    // come back as values) and no single allocation above 448 MiB (a fuzzed MP4 header once asked
    // for 943 MB). Set here too so that an audio-only process gets the same bound.
    static const bool quiet = [] {
      av_log_set_level(AV_LOG_QUIET);
      av_max_alloc(std::size_t{448} << 20);
      return true;
    }();
    (void)quiet;
    deadline_ns = deadline_after(limits.max_seconds);
    input = {bytes.data(), static_cast<std::int64_t>(bytes.size()), 0};
    constexpr int kBuf = 1 << 16;
    auto* buf = static_cast<std::uint8_t*>(av_malloc(kBuf));
    if (!buf) return resource_exhausted("audio: out of memory");
    avio = avio_alloc_context(buf, kBuf, 0, &input, read_memory, nullptr, seek_memory);
    if (!avio) {
      av_free(buf);
      return resource_exhausted("audio: out of memory");
    }
    fmt = avformat_alloc_context();
    if (!fmt) return resource_exhausted("audio: out of memory");
    fmt->pb = avio;
    fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    fmt->interrupt_callback = {&Demuxer::interrupt, this};
    int ret = avformat_open_input(&fmt, nullptr, nullptr, nullptr);
    if (ret < 0) {
      fmt = nullptr;  // freed by avformat_open_input
      if (now_ns() > deadline_ns) return deadline_exceeded("audio: opening took too long");
      return data_loss("audio: not a readable audio file (" + av_text(ret) + ")");
    }
    ret = avformat_find_stream_info(fmt, nullptr);
    if (ret < 0) {
      if (now_ns() > deadline_ns) return deadline_exceeded("audio: probing took too long");
      return data_loss("audio: cannot read stream info (" + av_text(ret) + ")");
    }
    // An interrupted probe can still return success with half-filled parameters (sample rate 0):
    // the deadline is the reason then, not the file.
    if (now_ns() > deadline_ns) return deadline_exceeded("audio: probing took too long");
    // The ffmpeg CLI's automatic audio stream (fftools/ffmpeg_opt.c, 5.1): the highest score
    // channels + 1e8 if probing saw its packets + 5e6 for a default disposition; the first on ties.
    long long best = -1;
    for (unsigned i = 0; i < fmt->nb_streams; ++i) {
      const AVStream* st = fmt->streams[i];
      if (st->codecpar->codec_type != AVMEDIA_TYPE_AUDIO) continue;
      const long long score = st->codecpar->ch_layout.nb_channels +
                              100000000LL * ((st->event_flags & AVSTREAM_EVENT_FLAG_NEW_PACKETS) ? 1 : 0) +
                              5000000LL * ((st->disposition & AV_DISPOSITION_DEFAULT) ? 1 : 0);
      if (score > best) {
        best = score;
        stream = static_cast<int>(i);
      }
    }
    if (stream < 0) return invalid_argument("audio: the file has no audio stream");
    for (unsigned i = 0; i < fmt->nb_streams; ++i) {
      if (static_cast<int>(i) != stream) fmt->streams[i]->discard = AVDISCARD_ALL;
    }
    return {};
  }

  AudioInfo info() const {
    const AVStream* st = fmt->streams[stream];
    const AVCodecParameters* par = st->codecpar;
    AudioInfo info;
    info.backend = Backend::kFfmpeg;
    info.container = fmt->iformat && fmt->iformat->name ? fmt->iformat->name : "?";
    const AVCodec* dec = avcodec_find_decoder(par->codec_id);
    info.codec = dec ? dec->name : avcodec_get_name(par->codec_id);
    info.sample_rate = par->sample_rate;
    info.channels = par->ch_layout.nb_channels;
    double seconds = -1;
    if (st->duration != AV_NOPTS_VALUE && st->duration > 0 && st->time_base.den > 0) {
      seconds = static_cast<double>(st->duration) * av_q2d(st->time_base);
    } else if (fmt->duration != AV_NOPTS_VALUE && fmt->duration > 0) {
      seconds = static_cast<double>(fmt->duration) / AV_TIME_BASE;
    }
    if (seconds >= 0 && info.sample_rate > 0 && seconds < 1e9) {
      info.frames = static_cast<std::int64_t>(seconds * info.sample_rate + 0.5);
    }
    info.frames_exact = false;
    return info;
  }
};

class FfmpegSource final : public AudioSource {
 public:
  FfmpegSource(AudioInfo info, const AudioLimits& limits, std::unique_ptr<Demuxer> dm)
      : AudioSource(std::move(info), limits), dm_(std::move(dm)) {}
  ~FfmpegSource() override {
    av_channel_layout_uninit(&in_layout_);
    swr_free(&swr_);
    av_frame_free(&frame_);
    av_packet_free(&pkt_);
    avcodec_free_context(&codec_);
  }

  Status init() {
    const AVStream* st = dm_->fmt->streams[dm_->stream];
    const AVCodec* dec = avcodec_find_decoder(st->codecpar->codec_id);
    if (!dec) return unimplemented("audio: no FFmpeg decoder for codec " + info_.codec);
    codec_ = avcodec_alloc_context3(dec);
    pkt_ = av_packet_alloc();
    frame_ = av_frame_alloc();
    if (!codec_ || !pkt_ || !frame_) return resource_exhausted("audio: out of memory");
    int ret = avcodec_parameters_to_context(codec_, st->codecpar);
    if (ret < 0) return data_loss("audio: bad codec parameters (" + av_text(ret) + ")");
    codec_->pkt_timebase = st->time_base;
    codec_->thread_count = 1;
    ret = avcodec_open2(codec_, dec, nullptr);
    if (ret < 0) return data_loss("audio: cannot open the " + info_.codec + " decoder (" + av_text(ret) + ")");
    return {};
  }

 protected:
  Result<std::int64_t> read_impl(float* out, std::int64_t max_frames) override {
    const int ch = info_.channels;
    while (pending_at_ >= pending_frames_) {
      if (finished_) return std::int64_t{0};
      STOKER_RETURN_IF_ERROR(next_frame());
    }
    const std::int64_t n = std::min(max_frames, pending_frames_ - pending_at_);
    const std::int16_t* src = pending_.data() + pending_at_ * ch;
    const std::size_t count = static_cast<std::size_t>(n) * static_cast<std::size_t>(ch);
    for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<float>(src[i]) * (1.0f / 32768.0f);
    pending_at_ += n;
    return n;
  }

  Status at_end() override {
    // A container's duration is an estimate (encoder delay, padding): only a large shortfall is a
    // truncated file.
    if (info_.frames > 0) {
      const std::int64_t slack = std::max<std::int64_t>(8192, info_.frames / 50);
      if (position_ + slack < info_.frames) {
        return data_loss("audio: truncated: the container says ~" + std::to_string(info_.frames) +
                         " frames, " + std::to_string(position_) + " decoded");
      }
    }
    return {};
  }

 private:
  // Decodes the next frame into `pending_` (int16, interleaved), or sets finished_.
  Status next_frame() {
    while (true) {
      int ret = avcodec_receive_frame(codec_, frame_);
      if (ret == 0) {
        Status s = convert();
        av_frame_unref(frame_);
        return s;
      }
      if (ret == AVERROR_EOF) {
        finished_ = true;
        return {};
      }
      if (ret != AVERROR(EAGAIN)) return data_loss("audio: decoding failed (" + av_text(ret) + ")");
      if (demux_eof_) {
        finished_ = true;
        return {};
      }
      STOKER_RETURN_IF_ERROR(check_time("decoding"));
      ret = av_read_frame(dm_->fmt, pkt_);
      if (ret == AVERROR_EOF) {
        demux_eof_ = true;
        ret = avcodec_send_packet(codec_, nullptr);
        if (ret < 0 && ret != AVERROR_EOF) return data_loss("audio: decoder flush failed (" + av_text(ret) + ")");
        continue;
      }
      if (ret < 0) {
        STOKER_RETURN_IF_ERROR(check_time("demuxing"));
        return data_loss("audio: the container is unreadable after " + std::to_string(position_) +
                         " frames (" + av_text(ret) + "; truncated?)");
      }
      if (pkt_->stream_index != dm_->stream) {
        av_packet_unref(pkt_);
        continue;
      }
      if (pkt_->flags & AV_PKT_FLAG_CORRUPT) {
        av_packet_unref(pkt_);
        return data_loss("audio: corrupt or truncated packet after " + std::to_string(position_) + " frames");
      }
      ret = avcodec_send_packet(codec_, pkt_);
      av_packet_unref(pkt_);
      if (ret < 0 && ret != AVERROR(EAGAIN)) {
        return data_loss("audio: corrupt packet after " + std::to_string(position_) + " frames (" + av_text(ret) + ")");
      }
    }
  }

  Status convert() {
    const int ch = frame_->ch_layout.nb_channels;
    if (frame_->sample_rate != info_.sample_rate || ch != info_.channels ||
        (swr_ && (frame_->format != in_format_ || av_channel_layout_compare(&frame_->ch_layout, &in_layout_) != 0))) {
      return data_loss("audio: the sample rate, channel layout or sample format changes mid-stream");
    }
    if (!swr_) {
      in_format_ = frame_->format;
      if (av_channel_layout_copy(&in_layout_, &frame_->ch_layout) < 0) return resource_exhausted("audio: out of memory");
      int ret = swr_alloc_set_opts2(&swr_, &frame_->ch_layout, AV_SAMPLE_FMT_S16, frame_->sample_rate,
                                    &frame_->ch_layout, static_cast<AVSampleFormat>(frame_->format),
                                    frame_->sample_rate, 0, nullptr);
      if (ret < 0 || swr_init(swr_) < 0) return internal_error("audio: cannot set up the int16 conversion");
    }
    const int n = frame_->nb_samples;
    pending_.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(ch));
    std::uint8_t* out[1] = {reinterpret_cast<std::uint8_t*>(pending_.data())};
    const int got = swr_convert(swr_, out, n, const_cast<const std::uint8_t**>(frame_->extended_data), n);
    if (got < 0) return data_loss("audio: sample conversion failed (" + av_text(got) + ")");
    pending_frames_ = got;
    pending_at_ = 0;
    return {};
  }

  std::unique_ptr<Demuxer> dm_;
  AVCodecContext* codec_ = nullptr;
  AVPacket* pkt_ = nullptr;
  AVFrame* frame_ = nullptr;
  SwrContext* swr_ = nullptr;
  int in_format_ = -1;
  AVChannelLayout in_layout_{};
  std::vector<std::int16_t> pending_;
  std::int64_t pending_frames_ = 0, pending_at_ = 0;
  bool demux_eof_ = false, finished_ = false;
};

}  // namespace

Result<AudioInfo> probe_ffmpeg(std::span<const std::uint8_t> bytes, const AudioLimits& limits) {
  Demuxer dm;
  STOKER_RETURN_IF_ERROR(dm.open(bytes, limits));
  AudioInfo info = dm.info();
  STOKER_RETURN_IF_ERROR(check_info(info, limits));
  return info;
}

Result<std::unique_ptr<AudioSource>> open_ffmpeg(std::span<const std::uint8_t> bytes,
                                                 const AudioLimits& limits) {
  auto dm = std::make_unique<Demuxer>();
  STOKER_RETURN_IF_ERROR(dm->open(bytes, limits));
  AudioInfo info = dm->info();
  STOKER_RETURN_IF_ERROR(check_info(info, limits));
  auto src = std::make_unique<FfmpegSource>(std::move(info), limits, std::move(dm));
  STOKER_RETURN_IF_ERROR(src->init());
  return std::unique_ptr<AudioSource>(std::move(src));
}

}  // namespace stoker::audio::detail
