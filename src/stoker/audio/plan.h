// Planning an audio part before decoding it (the engine's prepare stage): how many 16 kHz samples
// a clip will have, and what one feature-extractor call on a sample's clips produces — frames,
// mask sums, token counts, bytes. Pure functions of header numbers; thread-safe.
// Exactness: `samples` is exact when the header's frame count is (libsndfile: PCM, FLAC, OGG);
// MP3 and everything FFmpeg reads carry an estimate (encoder delay and padding, a Xing header or
// none): plan those from a decode (load() costs ~1 ms per second of audio) or re-plan at emit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stoker/audio/decode.h"
#include "stoker/audio/features.h"
#include "stoker/audio/load.h"
#include "stoker/base/result.h"

namespace stoker::audio {

struct ClipPlan {
  std::int64_t source_frames = 0;  // after offset/duration (librosa's int(offset·sr), int(duration·sr))
  std::int64_t samples = 0;        // at 16 kHz: loaded_length(source_frames, rate)
  bool exact = false;              // false: an estimate from the header
};
// Errors: InvalidArgument (unknown length, the offset past the end, bad offset/duration).
Result<ClipPlan> plan_clip(const AudioInfo& info, const LoadOptions& options = {});

struct CallPlan {
  FeatureLayout layout;                 // padded samples P, frames F (= mask length)
  std::vector<std::int64_t> mask_frames;  // per clip: feature_attention_mask sum
  std::vector<std::int64_t> tokens;       // per clip: audio tokens (the model's formula)
  std::int64_t n_mels = 128;
  // input_features bytes of the call: clips × n_mels × F × 4 (float32).
  std::int64_t feature_bytes() const {
    return static_cast<std::int64_t>(mask_frames.size()) * n_mels * layout.frames * 4;
  }
};
// One feature-extractor call on clips of these 16 kHz lengths (a sample's audios, in order:
// Qwen3-Omni pads them to the longest; the others to their chunk length).
Result<CallPlan> plan_call(AudioModel model, std::span<const std::int64_t> samples);

}  // namespace stoker::audio
