#include "stoker/audio/processor.h"

namespace stoker::audio {

Result<AudioProcessor> AudioProcessor::create(AudioModel model, const AudioLimits& limits) {
  STOKER_ASSIGN_OR_RETURN(WhisperFeatureExtractor e,
                          WhisperFeatureExtractor::create(WhisperConfig::for_model(model)));
  return AudioProcessor(model, limits, std::move(e));
}

}  // namespace stoker::audio
