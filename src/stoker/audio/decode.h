// Audio decoding from memory, as librosa 0.11 `load` reads a file: libsndfile first (WAV, AIFF,
// FLAC, OGG Vorbis/Opus, MP3, … through SF_VIRTUAL_IO over the bytes), and when libsndfile cannot
// open the bytes, FFmpeg's libraries (custom AVIOContext; M4A/AAC, audio tracks of video files)
// converting every frame to 16-bit samples exactly as the `ffmpeg -i F -f s16le -` child of
// audioread does. No files, no subprocess. An AudioSource streams interleaved float32 frames;
// memory is one block. Bounds (AudioLimits): sample rate, channels, decoded frames (so duration
// and decompression bombs), wall time (checked per block and by FFmpeg's interrupt callback), and
// the process-wide FFmpeg allocation cap of the video module (448 MiB). Header claims are only
// used to refuse early (a duration over the cap) and to detect truncation, never to size buffers.
// Single-threaded (one source per clip). Errors: DataLoss (not audio, truncated, corrupt, no
// samples, NaN/Inf samples), InvalidArgument (sample rate or channel count out of bounds, no
// audio stream), ResourceExhausted (more frames than the cap), DeadlineExceeded, Unimplemented
// (no FFmpeg decoder for the codec).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::audio {

struct AudioLimits {
  int min_sample_rate = 1000;
  int max_sample_rate = 384000;
  int max_channels = 64;
  double max_duration_s = 600;    // decoded audio (source frames / rate), also header claims
  double max_seconds = 60;        // wall clock per open + decode
};

enum class Backend { kSndfile, kFfmpeg };
const char* backend_name(Backend b);  // "sndfile" | "ffmpeg"

struct AudioInfo {
  Backend backend = Backend::kSndfile;
  std::string container;       // libsndfile major format ("WAV", "FLAC", "OGG", "MP3", ...) or FFmpeg demuxer
  std::string codec;           // libsndfile subtype ("PCM_16", "VORBIS", ...) or FFmpeg decoder name
  int sample_rate = 0;
  int channels = 0;
  // Source frames from the header: libsndfile's count (exact for PCM, FLAC and OGG; MP3 from its
  // Xing header or an estimate), or FFmpeg's stream/container duration × rate (an estimate:
  // encoder delay and padding). -1 when unknown.
  std::int64_t frames = -1;
  bool frames_exact = false;
  double duration_s() const { return frames >= 0 && sample_rate > 0 ? static_cast<double>(frames) / sample_rate : -1; }
};

// Header only, no decoding (for planning): libsndfile's open, or FFmpeg's open + stream info.
Result<AudioInfo> probe(std::span<const std::uint8_t> bytes, const AudioLimits& limits = {});

class AudioSource {
 public:
  // `bytes` must outlive the source. libsndfile first; FFmpeg when libsndfile cannot open them.
  static Result<std::unique_ptr<AudioSource>> open(std::span<const std::uint8_t> bytes,
                                                   const AudioLimits& limits = {});
  virtual ~AudioSource();

  const AudioInfo& info() const { return info_; }
  // Up to `max_frames` interleaved frames (channels() floats each) into `out`; 0 at the end.
  // libsndfile: sf_readf_float (normalised, what python-soundfile reads as float32);
  // FFmpeg: int16 (swresample, as the ffmpeg CLI converts) · 2^-15. Samples are checked
  // finite; the frame cap and the deadline are checked on every call; at the end the count is
  // checked against the header (truncation).
  Result<std::int64_t> read(float* out, std::int64_t max_frames);
  // Moves to source frame `frame` before the first read (librosa's `offset`): libsndfile seeks
  // (sf_seek, what soundfile's seek does); FFmpeg decodes and discards, as librosa's audioread
  // path does. A frame at or past the end is DataLoss.
  Status seek(std::int64_t frame);
  std::int64_t position() const { return position_; }  // source frame of the next read

 protected:
  AudioSource(AudioInfo info, const AudioLimits& limits);
  virtual Result<std::int64_t> read_impl(float* out, std::int64_t max_frames) = 0;
  virtual Status seek_impl(std::int64_t frame);  // default: read and discard
  // Called once when read_impl returns 0: a truncation check against the header.
  virtual Status at_end() { return {}; }
  Status check_time(const char* what) const;

  AudioInfo info_;
  AudioLimits limits_;
  std::int64_t max_frames_ = 0;  // limits_.max_duration_s × rate
  std::int64_t position_ = 0;
  std::int64_t returned_ = 0;    // frames handed out by read()
  std::int64_t decoded_ = 0;     // frames decoded (returned or discarded): the cap counts these
  std::int64_t deadline_ns_ = 0;
  bool ended_ = false;
};

// The whole clip decoded: interleaved float32 frames (tests and tools; the loader streams).
struct DecodedAudio {
  AudioInfo info;
  std::int64_t frames = 0;
  std::vector<float> samples;  // frames × channels
};
Result<DecodedAudio> decode_all(std::span<const std::uint8_t> bytes, const AudioLimits& limits = {});

namespace detail {
// The two backends (decode_sndfile.cc, decode_ffmpeg.cc). open_sndfile returns NotFound when
// libsndfile does not recognise the bytes (the caller then tries FFmpeg).
Result<std::unique_ptr<AudioSource>> open_sndfile(std::span<const std::uint8_t> bytes,
                                                  const AudioLimits& limits);
Result<std::unique_ptr<AudioSource>> open_ffmpeg(std::span<const std::uint8_t> bytes,
                                                 const AudioLimits& limits);
Result<AudioInfo> probe_ffmpeg(std::span<const std::uint8_t> bytes, const AudioLimits& limits);
Status check_info(const AudioInfo& info, const AudioLimits& limits);
std::int64_t deadline_after(double seconds);
}  // namespace detail

}  // namespace stoker::audio
