#include "stoker/synth/audio.h"

#include <sndfile.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
}

#include "stoker/base/file.h"
#include "stoker/synth/rng.h"
#include "stoker/synth/video.h"

namespace stoker::synth {
namespace {

constexpr double kPi = 3.14159265358979323846;

// A two-pole resonator (centre f, bandwidth bw) with its state.
struct Resonator {
  double y1 = 0, y2 = 0;
  double step(double x, double f, double bw, double rate) {
    const double r = std::exp(-kPi * bw / rate), th = 2 * kPi * f / rate;
    const double y = (1 - r) * x + 2 * r * std::cos(th) * y1 - r * r * y2;
    y2 = y1;
    y1 = y;
    return y;
  }
};

// Syllables of voiced sound (a decaying pulse per glottal period through two formants) with
// short pauses, a pitch that wanders, and a little breath noise.
std::vector<double> speech(std::int64_t n, double rate, Rng& rng) {
  std::vector<double> out(static_cast<std::size_t>(n), 0.0);
  Resonator f1, f2;
  double phase = 0, f0 = rng.uniform(100, 200);
  std::int64_t i = 0;
  while (i < n) {
    const std::int64_t pause = static_cast<std::int64_t>(rate * rng.uniform(0.04, 0.2));
    const std::int64_t syl = static_cast<std::int64_t>(rate * rng.uniform(0.12, 0.32));
    const double F1 = rng.uniform(300, 800), F2 = std::min(rng.uniform(900, 2400), 0.42 * rate);
    const double F1b = std::min(F1, 0.4 * rate);
    const double pitch_to = std::clamp(f0 + rng.uniform(-40, 40), 90.0, 240.0);
    i += pause;
    for (std::int64_t k = 0; k < syl && i < n; ++k, ++i) {
      const double u = static_cast<double>(k) / static_cast<double>(syl);
      const double env = std::sin(kPi * u);
      const double f = f0 + (pitch_to - f0) * u;
      phase += f / rate;
      const double frac = phase - std::floor(phase);
      const double pulse = std::exp(-frac * 8.0) - 0.2;
      const double x = pulse + 0.05 * rng.uniform(-1, 1);
      const double y = f1.step(x, F1b, 90, rate) + 0.6 * f2.step(x, F2, 120, rate);
      out[static_cast<std::size_t>(i)] = env * y;
    }
    f0 = pitch_to;
  }
  return out;
}

std::vector<double> mono(const AudioSpec& s, std::int64_t n, Rng& rng) {
  const double rate = s.sample_rate;
  std::vector<double> m(static_cast<std::size_t>(n), 0.0);
  if (s.content == "speech") return speech(n, rate, rng);
  if (s.content == "tone") {
    const double f = 220.0 * (1 + static_cast<double>(rng.below(4)));
    for (std::int64_t i = 0; i < n; ++i) {
      const double t = static_cast<double>(i) / rate;
      m[static_cast<std::size_t>(i)] = std::sin(2 * kPi * f * t) + 0.3 * std::sin(2 * kPi * 3 * f * t);
    }
  } else if (s.content == "chirp") {
    const double f0 = 60, f1 = std::min(0.45 * rate, 9000.0), T = static_cast<double>(n) / rate;
    for (std::int64_t i = 0; i < n; ++i) {
      const double t = static_cast<double>(i) / rate;
      m[static_cast<std::size_t>(i)] = std::sin(2 * kPi * (f0 * t + (f1 - f0) * t * t / (2 * T)));
    }
  } else if (s.content == "noise") {
    for (double& v : m) v = rng.uniform(-1, 1);
  }
  return m;  // silence: zeros
}

// libsndfile writing into a growing buffer.
struct MemOut {
  std::vector<std::uint8_t> data;
  sf_count_t pos = 0;
};
sf_count_t mo_len(void* u) { return static_cast<sf_count_t>(static_cast<MemOut*>(u)->data.size()); }
sf_count_t mo_seek(sf_count_t off, int whence, void* u) {
  auto* o = static_cast<MemOut*>(u);
  const sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? o->pos : static_cast<sf_count_t>(o->data.size());
  if (base + off < 0) return -1;
  o->pos = base + off;
  return o->pos;
}
sf_count_t mo_read(void* p, sf_count_t n, void* u) {
  auto* o = static_cast<MemOut*>(u);
  const sf_count_t k = std::max<sf_count_t>(0, std::min<sf_count_t>(n, static_cast<sf_count_t>(o->data.size()) - o->pos));
  if (k > 0) std::memcpy(p, o->data.data() + o->pos, static_cast<std::size_t>(k));
  o->pos += k;
  return k;
}
sf_count_t mo_write(const void* p, sf_count_t n, void* u) {
  auto* o = static_cast<MemOut*>(u);
  if (static_cast<std::size_t>(o->pos + n) > o->data.size()) o->data.resize(static_cast<std::size_t>(o->pos + n));
  std::memcpy(o->data.data() + o->pos, p, static_cast<std::size_t>(n));
  o->pos += n;
  return n;
}
sf_count_t mo_tell(void* u) { return static_cast<MemOut*>(u)->pos; }

int sndfile_format(const std::string& f) {
  if (f == "wav") return SF_FORMAT_WAV | SF_FORMAT_PCM_16;
  if (f == "wav24") return SF_FORMAT_WAV | SF_FORMAT_PCM_24;
  if (f == "wav-float") return SF_FORMAT_WAV | SF_FORMAT_FLOAT;
  if (f == "flac") return SF_FORMAT_FLAC | SF_FORMAT_PCM_16;
  if (f == "ogg") return SF_FORMAT_OGG | SF_FORMAT_VORBIS;
  if (f == "opus") return SF_FORMAT_OGG | SF_FORMAT_OPUS;
  if (f == "mp3") return SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III;
  return 0;
}

// libsndfile gives each Ogg stream a random serial number (psf_rand_int32): rewrite it to a
// constant and recompute every page's CRC (polynomial 0x04c11db7, not reflected, initial 0), so
// the same spec gives the same bytes.
void fix_ogg_serial(std::vector<std::uint8_t>& b) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t r = i << 24;
      for (int k = 0; k < 8; ++k) r = (r & 0x80000000u) ? (r << 1) ^ 0x04c11db7u : r << 1;
      t[i] = r;
    }
    return t;
  }();
  std::size_t at = 0;
  while (at + 27 <= b.size() && std::memcmp(b.data() + at, "OggS", 4) == 0) {
    const std::size_t nseg = b[at + 26];
    if (at + 27 + nseg > b.size()) return;
    std::size_t len = 27 + nseg;
    for (std::size_t i = 0; i < nseg; ++i) len += b[at + 27 + i];
    if (at + len > b.size()) return;
    const std::uint8_t serial[4] = {0x53, 0x54, 0x4b, 0x52};  // "STKR"
    std::memcpy(b.data() + at + 14, serial, 4);
    std::memset(b.data() + at + 22, 0, 4);
    std::uint32_t crc = 0;
    for (std::size_t i = 0; i < len; ++i) crc = (crc << 8) ^ table[((crc >> 24) ^ b[at + i]) & 0xff];
    for (int k = 0; k < 4; ++k) b[at + 22 + k] = static_cast<std::uint8_t>(crc >> (8 * k));
    at += len;
  }
}

Result<std::vector<std::uint8_t>> encode_sndfile(const AudioSpec& s, const std::vector<float>& pcm) {
  MemOut out;
  SF_VIRTUAL_IO vio{mo_len, mo_seek, mo_read, mo_write, mo_tell};
  SF_INFO info{};
  info.samplerate = s.sample_rate;
  info.channels = s.channels;
  info.format = sndfile_format(s.format);
  if (!sf_format_check(&info)) return unimplemented("synth audio: libsndfile cannot write " + s.format + " at these settings");
  SNDFILE* sf = sf_open_virtual(&vio, SFM_WRITE, &info, &out);
  if (!sf) return unimplemented("synth audio: libsndfile cannot write " + s.format + ": " + sf_strerror(nullptr));
  const sf_count_t frames = static_cast<sf_count_t>(pcm.size()) / s.channels;
  const sf_count_t wrote = sf_writef_float(sf, pcm.data(), frames);
  const int err = sf_close(sf);
  if (wrote != frames || err) return internal_error("synth audio: libsndfile write failed");
  if ((info.format & SF_FORMAT_TYPEMASK) == SF_FORMAT_OGG) fix_ogg_serial(out.data);
  return std::move(out.data);
}

struct AvOut {
  std::vector<std::uint8_t> data;
  std::int64_t pos = 0;
};
int av_write(void* opaque, std::uint8_t* buf, int size) {
  auto* o = static_cast<AvOut*>(opaque);
  const std::size_t end = static_cast<std::size_t>(o->pos) + static_cast<std::size_t>(size);
  if (end > o->data.size()) o->data.resize(end);
  std::memcpy(o->data.data() + o->pos, buf, static_cast<std::size_t>(size));
  o->pos = static_cast<std::int64_t>(end);
  return size;
}
std::int64_t av_seek(void* opaque, std::int64_t off, int whence) {
  auto* o = static_cast<AvOut*>(opaque);
  whence &= ~AVSEEK_FORCE;
  if (whence == AVSEEK_SIZE) return static_cast<std::int64_t>(o->data.size());
  const std::int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? o->pos : static_cast<std::int64_t>(o->data.size());
  if (base + off < 0) return AVERROR(EINVAL);
  o->pos = base + off;
  return o->pos;
}

// AAC in an MP4 (.m4a), in memory.
Result<std::vector<std::uint8_t>> encode_m4a(const AudioSpec& s, const std::vector<float>& pcm) {
  static const bool quiet = [] {
    av_log_set_level(AV_LOG_QUIET);
    return true;
  }();
  (void)quiet;
  const AVCodec* enc = avcodec_find_encoder(AV_CODEC_ID_AAC);
  if (!enc) return unimplemented("synth audio: this FFmpeg has no AAC encoder");
  AvOut out;
  AVFormatContext* oc = nullptr;
  AVCodecContext* a = nullptr;
  AVFrame* frame = nullptr;
  AVPacket* pkt = nullptr;
  AVIOContext* avio = nullptr;
  auto cleanup = [&] {
    av_packet_free(&pkt);
    av_frame_free(&frame);
    avcodec_free_context(&a);
    if (oc) avformat_free_context(oc);
    if (avio) {
      av_freep(&avio->buffer);
      avio_context_free(&avio);
    }
  };
  auto fail = [&](const char* what) -> Error {
    cleanup();
    return internal_error(std::string("synth audio: m4a: ") + what);
  };
  if (avformat_alloc_output_context2(&oc, nullptr, "mp4", nullptr) < 0) return fail("muxer");
  auto* buf = static_cast<std::uint8_t*>(av_malloc(1 << 16));
  avio = avio_alloc_context(buf, 1 << 16, 1, &out, nullptr, av_write, av_seek);
  if (!avio) return fail("avio");
  oc->pb = avio;
  a = avcodec_alloc_context3(enc);
  a->sample_fmt = AV_SAMPLE_FMT_FLTP;
  a->sample_rate = s.sample_rate;
  av_channel_layout_default(&a->ch_layout, s.channels);
  a->bit_rate = 48000 * s.channels;
  a->time_base = AVRational{1, s.sample_rate};
  a->thread_count = 1;
  if (oc->oformat->flags & AVFMT_GLOBALHEADER) a->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  if (avcodec_open2(a, enc, nullptr) < 0) return fail("open encoder");
  AVStream* st = avformat_new_stream(oc, nullptr);
  if (!st || avcodec_parameters_from_context(st->codecpar, a) < 0) return fail("stream");
  st->time_base = a->time_base;
  if (avformat_write_header(oc, nullptr) < 0) return fail("header");
  pkt = av_packet_alloc();
  frame = av_frame_alloc();
  frame->format = a->sample_fmt;
  frame->nb_samples = a->frame_size > 0 ? a->frame_size : 1024;
  frame->sample_rate = a->sample_rate;
  if (av_channel_layout_copy(&frame->ch_layout, &a->ch_layout) < 0 || av_frame_get_buffer(frame, 0) < 0) {
    return fail("frame");
  }
  auto drain = [&](AVFrame* f) -> bool {
    if (avcodec_send_frame(a, f) < 0) return false;
    while (true) {
      const int ret = avcodec_receive_packet(a, pkt);
      if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return true;
      if (ret < 0) return false;
      av_packet_rescale_ts(pkt, a->time_base, st->time_base);
      pkt->stream_index = st->index;
      if (av_interleaved_write_frame(oc, pkt) < 0) return false;
    }
  };
  const std::int64_t frames = static_cast<std::int64_t>(pcm.size()) / s.channels;
  for (std::int64_t t = 0; t < frames; t += frame->nb_samples) {
    if (av_frame_make_writable(frame) < 0) return fail("frame");
    for (int c = 0; c < s.channels; ++c) {
      auto* d = reinterpret_cast<float*>(frame->data[c]);
      for (int k = 0; k < frame->nb_samples; ++k) {
        const std::int64_t i = t + k;
        d[k] = i < frames ? pcm[static_cast<std::size_t>(i * s.channels + c)] : 0.0f;
      }
    }
    frame->pts = t;
    if (!drain(frame)) return fail("encode");
  }
  if (!drain(nullptr)) return fail("flush");
  if (av_write_trailer(oc) < 0) return fail("trailer");
  avio_flush(avio);
  std::vector<std::uint8_t> bytes = std::move(out.data);
  cleanup();
  return bytes;
}

}  // namespace

Status AudioSpec::validate() const {
  if (!sndfile_format(format) && format != "m4a") return invalid_argument("synth audio: unknown format " + format);
  if (content != "speech" && content != "tone" && content != "chirp" && content != "noise" && content != "silence") {
    return invalid_argument("synth audio: unknown content " + content);
  }
  if (sample_rate < 1000 || sample_rate > 384000 || channels < 1 || channels > 8) {
    return invalid_argument("synth audio: sample rate or channel count out of range");
  }
  if (!(seconds > 0) || seconds > 3600) return invalid_argument("synth audio: seconds out of range");
  return {};
}

std::string AudioSpec::extension() const {
  if (format == "wav24" || format == "wav-float") return "wav";
  return format;
}

std::vector<float> render_audio(const AudioSpec& s) {
  Rng rng(s.seed * 0x9e3779b97f4a7c15ull + 7);
  const std::int64_t n = std::max<std::int64_t>(1, std::llround(s.seconds * s.sample_rate));
  const std::vector<double> m = mono(s, n, rng);
  double peak = 0;
  for (double v : m) peak = std::max(peak, std::abs(v));
  const double scale = peak > 0 ? 0.5 / peak : 0.0;
  std::vector<float> out(static_cast<std::size_t>(n) * static_cast<std::size_t>(s.channels));
  for (int c = 0; c < s.channels; ++c) {
    const double gain = scale * (1.0 - 0.12 * c);
    const std::int64_t delay = 3 * c;
    for (std::int64_t i = 0; i < n; ++i) {
      const double v = i >= delay ? m[static_cast<std::size_t>(i - delay)] : 0.0;
      out[static_cast<std::size_t>(i * s.channels + c)] = static_cast<float>(v * gain);
    }
  }
  return out;
}

bool can_encode_audio(const std::string& format) {
  if (format == "m4a") return avcodec_find_encoder(AV_CODEC_ID_AAC) != nullptr;
  SF_INFO info{};
  info.samplerate = format == "opus" ? 48000 : 44100;
  info.channels = 1;
  info.format = sndfile_format(format);
  return info.format != 0 && sf_format_check(&info);
}

Result<std::vector<std::uint8_t>> encode_audio(const AudioSpec& s) {
  STOKER_RETURN_IF_ERROR(s.validate());
  const std::vector<float> pcm = render_audio(s);
  if (s.format == "m4a") return encode_m4a(s, pcm);
  return encode_sndfile(s, pcm);
}

AudioKind audio_kind(int k, std::uint64_t seed) {
  std::vector<AudioKind> kinds;
  auto add = [&](bool video, AudioSpec a) { kinds.push_back({video, a}); };
  add(false, {.format = "wav", .content = "speech", .sample_rate = 16000, .channels = 1, .seconds = 3.0});
  add(false, {.format = "wav-float", .content = "tone", .sample_rate = 44100, .channels = 2, .seconds = 2.2});
  add(false, {.format = "flac", .content = "chirp", .sample_rate = 22050, .channels = 1, .seconds = 4.1});
  add(false, {.format = "ogg", .content = "speech", .sample_rate = 48000, .channels = 2, .seconds = 3.3});
  add(false, {.format = "mp3", .content = "speech", .sample_rate = 44100, .channels = 1, .seconds = 2.7});
  add(false, {.format = "m4a", .content = "speech", .sample_rate = 24000, .channels = 2, .seconds = 2.5});
  add(true, {.format = "m4a", .content = "speech", .sample_rate = 44100, .channels = 2, .seconds = 2.0});
  add(false, {.format = "wav", .content = "silence", .sample_rate = 8000, .channels = 1, .seconds = 1.5});
  add(false, {.format = "flac", .content = "noise", .sample_rate = 96000, .channels = 6, .seconds = 1.2});
  add(false, {.format = "wav24", .content = "tone", .sample_rate = 11025, .channels = 1, .seconds = 0.7});
  add(false, {.format = "opus", .content = "speech", .sample_rate = 48000, .channels = 1, .seconds = 2.0});
  add(false, {.format = "wav", .content = "speech", .sample_rate = 8000, .channels = 1, .seconds = 31.0});
  add(false, {.format = "wav", .content = "tone", .sample_rate = 1343, .channels = 1, .seconds = 3.0});
  add(true, {.format = "m4a", .content = "tone", .sample_rate = 16000, .channels = 1, .seconds = 3.0});
  AudioKind kind = kinds[static_cast<std::size_t>(k) % kinds.size()];
  kind.audio.seed = seed * 1000003u + static_cast<std::uint64_t>(k);
  return kind;
}

std::string audio_kind_name(const AudioKind& kind) {
  const AudioSpec& a = kind.audio;
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.3gs", a.seconds);
  return std::string(kind.video ? "video_" : "") + a.content + "_" + a.format + "_" + std::to_string(a.sample_rate) +
         "hz_" + std::to_string(a.channels) + "ch_" + secs;
}

Result<AudioMixResult> add_audio_records(const std::string& out_dir, int count, std::uint64_t seed) {
  if (count < 0) return invalid_argument("synth: --audio must be >= 0");
  AudioMixResult r;
  std::string records, meta;
  const std::string dir = out_dir + "/audio";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return permission_denied("synth: cannot create " + dir + ": " + ec.message());
  for (int k = 0; k < count; ++k) {
    const AudioKind kind = audio_kind(k, seed);
    const AudioSpec& a = kind.audio;
    std::vector<std::uint8_t> bytes;
    std::string rel;
    if (kind.video) {
      VideoSpec v{.codec = "h264", .width = 160, .height = 96, .fps_num = 25, .fps_den = 1,
                  .frames = static_cast<int>(std::lround(a.seconds * 25)), .gop = 25, .bframes = 2,
                  .audio = true, .seed = a.seed};
      v.audio_rate = a.sample_rate;
      v.audio_channels = a.channels;
      v.audio_content = a.content;
      STOKER_ASSIGN_OR_RETURN(bytes, encode_video(v));
      rel = "audio/" + std::to_string(k) + "_" + audio_kind_name(kind) + ".mp4";
    } else {
      STOKER_ASSIGN_OR_RETURN(bytes, encode_audio(a));
      rel = "audio/" + std::to_string(k) + "_" + audio_kind_name(kind) + "." + a.extension();
    }
    STOKER_RETURN_IF_ERROR(write_file(out_dir + "/" + rel, bytes));
    r.bytes += static_cast<std::int64_t>(bytes.size());
    r.paths.push_back(rel);
    char line[640];
    std::snprintf(line, sizeof line,
                  "{\"path\": \"%s\", \"format\": \"%s\", \"content\": \"%s\", \"sample_rate\": %d, "
                  "\"channels\": %d, \"seconds\": %.17g, \"frames\": %lld, \"video\": %s, \"bytes\": %zu}\n",
                  rel.c_str(), kind.video ? "mp4" : a.format.c_str(), a.content.c_str(), a.sample_rate,
                  a.channels, a.seconds, static_cast<long long>(std::max<long long>(1, std::llround(a.seconds * a.sample_rate))),
                  kind.video ? "true" : "false", bytes.size());
    meta += line;
    const std::string id = "\"id\": \"audio-" + std::to_string(k) + "\"";
    if (kind.video) {
      records += "{" + id + ", \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"video\", \"video\": \"" +
                 rel + "\", \"use_audio_in_video\": true}, {\"type\": \"text\", \"text\": "
                 "\"What do you see and hear in this clip?\"}]}, {\"role\": \"assistant\", \"content\": "
                 "\"A square moves across a gradient while a voice-like sound plays.\"}]}\n";
    } else {
      records += "{" + id + ", \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"audio\", \"audio\": \"" +
                 rel + "\"}, {\"type\": \"text\", \"text\": \"Describe this sound.\"}]}, {\"role\": "
                 "\"assistant\", \"content\": \"A synthetic " + a.content + " signal, " +
                 std::to_string(a.sample_rate) + " Hz.\"}]}\n";
    }
    ++r.records;
  }
  {
    std::ofstream f(out_dir + "/data.jsonl", std::ios::app | std::ios::binary);
    f << records;
    if (!f) return data_loss("synth: cannot append to " + out_dir + "/data.jsonl");
  }
  STOKER_RETURN_IF_ERROR(write_file(out_dir + "/audio.jsonl",
                                    std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(meta.data()), meta.size())));
  return r;
}

}  // namespace stoker::synth
