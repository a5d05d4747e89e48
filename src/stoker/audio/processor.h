// What the engine holds for a model that takes audio: the model's feature rules (padding,
// chunk length, token formula: features.h), its WhisperFeatureExtractor (built once), and the
// decode bounds. The media kind (pipeline/media_audio.cc) plans with plan_clip / plan_call and
// produces with load() + extract(). Immutable after create(); thread-safe.
#pragma once

#include "stoker/audio/decode.h"
#include "stoker/audio/features.h"
#include "stoker/base/result.h"

namespace stoker::audio {

class AudioProcessor {
 public:
  static Result<AudioProcessor> create(AudioModel model, const AudioLimits& limits = {});
  AudioModel model() const { return model_; }
  const AudioLimits& limits() const { return limits_; }
  const WhisperFeatureExtractor& extractor() const { return extractor_; }
  int n_mels() const { return extractor_.config().n_mels; }

 private:
  AudioProcessor(AudioModel model, const AudioLimits& limits, WhisperFeatureExtractor e)
      : model_(model), limits_(limits), extractor_(std::move(e)) {}
  AudioModel model_;
  AudioLimits limits_;
  WhisperFeatureExtractor extractor_;
};

}  // namespace stoker::audio
