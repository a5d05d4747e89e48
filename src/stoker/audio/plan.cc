#include "stoker/audio/plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace stoker::audio {

Result<ClipPlan> plan_clip(const AudioInfo& info, const LoadOptions& o) {
  if (info.frames < 0 || info.sample_rate <= 0) return invalid_argument("audio: the header gives no length");
  if (!(o.offset_s >= 0) || !std::isfinite(o.offset_s)) return invalid_argument("audio: the start must be >= 0");
  const std::int64_t start = static_cast<std::int64_t>(o.offset_s * info.sample_rate);
  if (start > 0 && start >= info.frames) {
    return invalid_argument("audio: the start (frame " + std::to_string(start) + ") is past the end (" +
                            std::to_string(info.frames) + " frames)");
  }
  std::int64_t n = info.frames - start;
  if (o.duration_s >= 0) {
    if (!std::isfinite(o.duration_s)) return invalid_argument("audio: the duration must be finite");
    n = std::min(n, static_cast<std::int64_t>(o.duration_s * info.sample_rate));
  }
  if (n <= 0) return invalid_argument("audio: no samples in the requested range");
  ClipPlan p;
  p.source_frames = n;
  p.samples = loaded_length(n, info.sample_rate, o.target_rate);
  p.exact = info.frames_exact;
  return p;
}

Result<CallPlan> plan_call(AudioModel model, std::span<const std::int64_t> samples) {
  const WhisperConfig c = WhisperConfig::for_model(model);
  CallPlan p;
  STOKER_ASSIGN_OR_RETURN(p.layout, feature_layout(c, samples));
  p.n_mels = c.n_mels;
  for (std::int64_t s : samples) {
    const std::int64_t m = mask_frames(p.layout, s);
    p.mask_frames.push_back(m);
    p.tokens.push_back(audio_token_count(model, m));
  }
  return p;
}

}  // namespace stoker::audio
