// load(): bytes in memory → the mono 16 kHz float32 waveform that qwen-omni-utils gets from
// `librosa.load(path, sr=16000, offset=…, duration=…)[0]` (librosa 0.11): decode (decode.h:
// libsndfile, else FFmpeg as the ffmpeg CLI), skip `offset` (int(offset·sr) frames: sf_seek, or
// decode-and-discard on the FFmpeg path), keep int(duration·sr) frames, average the channels
// (resample.h: numpy's float32 mean) BEFORE resampling, then libsoxr HQ as python-soxr + the
// length fix — or nothing when the file is already at 16 kHz. Streaming: memory is the output
// plus one block and one resampler chunk. Thread-safe (no shared state). Errors: those of
// decode.h, InvalidArgument (offset/duration).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stoker/audio/decode.h"
#include "stoker/base/result.h"

namespace stoker::audio {

struct LoadOptions {
  AudioLimits limits;
  int target_rate = 16000;
  double offset_s = 0;     // qwen-omni-utils: audio_start (video_start for audio in video)
  double duration_s = -1;  // audio_end − audio_start; < 0: to the end
};

struct Waveform {
  std::vector<float> samples;   // mono, target_rate
  AudioInfo info;               // the source as opened
  std::int64_t source_frames = 0;  // source frames that went into the mix (after offset/duration)
};

Result<Waveform> load(std::span<const std::uint8_t> bytes, const LoadOptions& options = {});

// The number of 16 kHz samples load() returns for `source_frames` source frames at `rate`.
inline std::int64_t loaded_length(std::int64_t source_frames, int rate, int target_rate = 16000);

}  // namespace stoker::audio

#include "stoker/audio/resample.h"

namespace stoker::audio {
inline std::int64_t loaded_length(std::int64_t source_frames, int rate, int target_rate) {
  return rate == target_rate ? source_frames : resampled_length(source_frames, rate, target_rate);
}
}  // namespace stoker::audio
