#include "stoker/audio/decode.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "stoker/base/clock.h"

namespace stoker::audio {

const char* backend_name(Backend b) { return b == Backend::kSndfile ? "sndfile" : "ffmpeg"; }

namespace detail {

std::int64_t deadline_after(double seconds) {
  const double ns = std::min(seconds, 1e6) * 1e9;
  return now_ns() + static_cast<std::int64_t>(ns);
}

Status check_info(const AudioInfo& info, const AudioLimits& limits) {
  if (info.sample_rate < limits.min_sample_rate || info.sample_rate > limits.max_sample_rate) {
    return invalid_argument("audio: sample rate " + std::to_string(info.sample_rate) +
                            " Hz is outside [" + std::to_string(limits.min_sample_rate) + ", " +
                            std::to_string(limits.max_sample_rate) + "]");
  }
  if (info.channels < 1 || info.channels > limits.max_channels) {
    return invalid_argument("audio: " + std::to_string(info.channels) +
                            " channels (allowed 1 to " + std::to_string(limits.max_channels) + ")");
  }
  // A header may lie about its length (it is not trusted for anything else), but one that claims
  // more than the cap is refused before anything is decoded.
  if (info.frames > 0 && static_cast<double>(info.frames) / info.sample_rate > limits.max_duration_s) {
    return resource_exhausted("audio: the header claims " +
                              std::to_string(static_cast<double>(info.frames) / info.sample_rate) +
                              " s, more than the " + std::to_string(limits.max_duration_s) + " s cap");
  }
  return {};
}

}  // namespace detail

AudioSource::AudioSource(AudioInfo info, const AudioLimits& limits)
    : info_(std::move(info)), limits_(limits) {
  max_frames_ = static_cast<std::int64_t>(limits_.max_duration_s * info_.sample_rate);
  deadline_ns_ = detail::deadline_after(limits_.max_seconds);
}

AudioSource::~AudioSource() = default;

Status AudioSource::check_time(const char* what) const {
  if (now_ns() > deadline_ns_) {
    return deadline_exceeded(std::string("audio: ") + what + " took longer than " +
                             std::to_string(limits_.max_seconds) + " s");
  }
  return {};
}

Result<std::int64_t> AudioSource::read(float* out, std::int64_t max_frames) {
  if (ended_ || max_frames <= 0) return std::int64_t{0};
  STOKER_RETURN_IF_ERROR(check_time("decoding"));
  STOKER_ASSIGN_OR_RETURN(std::int64_t n, read_impl(out, max_frames));
  if (n == 0) {
    ended_ = true;
    if (returned_ == 0) return data_loss("audio: no samples (an empty or truncated file?)");
    STOKER_RETURN_IF_ERROR(at_end());
    return std::int64_t{0};
  }
  const std::size_t count = static_cast<std::size_t>(n) * static_cast<std::size_t>(info_.channels);
  for (std::size_t i = 0; i < count; ++i) {
    if (!std::isfinite(out[i])) {
      const std::int64_t frame = position_ + static_cast<std::int64_t>(i) / info_.channels;
      return data_loss("audio: sample at frame " + std::to_string(frame) + " is " +
                       (std::isnan(out[i]) ? "NaN" : "infinite"));
    }
  }
  position_ += n;
  returned_ += n;
  decoded_ += n;
  if (decoded_ > max_frames_) {
    return resource_exhausted("audio: more than " + std::to_string(limits_.max_duration_s) +
                              " s of audio decoded (cap; a decompression bomb or an overlong clip)");
  }
  return n;
}

Status AudioSource::seek(std::int64_t frame) {
  if (frame < 0) return invalid_argument("audio: negative start");
  if (frame == position_) return {};
  if (returned_ > 0 || frame < position_) return internal_error("audio: seek after reading");
  if (info_.frames >= 0 && frame >= info_.frames) {
    return data_loss("audio: the start (frame " + std::to_string(frame) + ") is at or past the end (" +
                     std::to_string(info_.frames) + " frames)");
  }
  return seek_impl(frame);
}

Status AudioSource::seek_impl(std::int64_t frame) {
  std::vector<float> scratch(static_cast<std::size_t>(4096) * static_cast<std::size_t>(info_.channels));
  while (position_ < frame) {
    STOKER_RETURN_IF_ERROR(check_time("decoding"));
    const std::int64_t want = std::min<std::int64_t>(4096, frame - position_);
    STOKER_ASSIGN_OR_RETURN(std::int64_t n, read_impl(scratch.data(), want));
    if (n == 0) {
      return data_loss("audio: the start (frame " + std::to_string(frame) + ") is past the end (" +
                       std::to_string(position_) + " frames)");
    }
    position_ += n;
    decoded_ += n;
    if (decoded_ > max_frames_) {
      return resource_exhausted("audio: more than " + std::to_string(limits_.max_duration_s) +
                                " s of audio decoded (cap)");
    }
  }
  return {};
}

Result<std::unique_ptr<AudioSource>> AudioSource::open(std::span<const std::uint8_t> bytes,
                                                       const AudioLimits& limits) {
  if (bytes.empty()) return data_loss("audio: empty file");
  auto s = detail::open_sndfile(bytes, limits);
  if (s.ok() || s.error().code() != ErrorCode::kNotFound) return s;
  // librosa falls back to audioread (the ffmpeg CLI) when soundfile cannot open the file.
  auto f = detail::open_ffmpeg(bytes, limits);
  if (!f.ok() && f.error().code() == ErrorCode::kDataLoss) {
    return data_loss(f.error().message() + "; " + s.error().message());
  }
  return f;
}

Result<AudioInfo> probe(std::span<const std::uint8_t> bytes, const AudioLimits& limits) {
  if (bytes.empty()) return data_loss("audio: empty file");
  auto s = detail::open_sndfile(bytes, limits);
  if (s.ok()) return (*s)->info();
  if (s.error().code() != ErrorCode::kNotFound) return s.error();
  auto f = detail::probe_ffmpeg(bytes, limits);
  if (!f.ok() && f.error().code() == ErrorCode::kDataLoss) {
    return data_loss(f.error().message() + "; " + s.error().message());
  }
  return f;
}

Result<DecodedAudio> decode_all(std::span<const std::uint8_t> bytes, const AudioLimits& limits) {
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<AudioSource> src, AudioSource::open(bytes, limits));
  DecodedAudio d;
  d.info = src->info();
  const std::size_t ch = static_cast<std::size_t>(d.info.channels);
  constexpr std::int64_t kBlock = 1 << 14;
  while (true) {
    const std::size_t at = d.samples.size();
    d.samples.resize(at + static_cast<std::size_t>(kBlock) * ch);
    STOKER_ASSIGN_OR_RETURN(std::int64_t n, src->read(d.samples.data() + at, kBlock));
    d.samples.resize(at + static_cast<std::size_t>(n) * ch);
    if (n == 0) break;
  }
  d.frames = static_cast<std::int64_t>(d.samples.size() / ch);
  return d;
}

}  // namespace stoker::audio
