// Whisper log-mel features exactly as transformers' WhisperFeatureExtractor computes them on its
// NumPy path (4.57: feature_extraction_whisper.py + audio_utils.spectrogram), and the audio token
// counts of Qwen2-Audio, Qwen2.5-Omni and Qwen3-Omni.
//   pad (right, 0.0) to the call's padded length P — `max_length` = chunk_length·16000 with
//   truncation (Qwen2-Audio 30 s, Qwen2.5-Omni 300 s per its preprocessor_config.json), or the
//   longest clip of the call without truncation (Qwen3-Omni: padding=True, truncation=False);
//   reflect-pad by 200; frames of 400 every 160 × periodic Hann (float64); rfft rounded to
//   complex64; |X|² in float64; slaney mel filters (128 × 201, 0–8 kHz, float64);
//   max(1e-10, ·); log10; float32; drop the last frame (F = P / 160); max(x, max − 8) with the
//   max over the whole clip incl. padding frames; (x + 4) / 4.
//   attention mask = mask[:, ::160], minus its last column when P % 160 ≠ 0 (current
//   transformers): ones for min(ceil(min(L, P) / 160), F) frames.
// Speed: frames lying wholly in the zero padding have a known value (log10(1e-10)) and are not
// transformed — a 2 s clip padded to 300 s costs 2 s of FFTs plus writing the 128 × 30000 output.
// A WhisperFeatureExtractor is immutable after create(); extract() is thread-safe.
// Errors: InvalidArgument (config, empty clip, output too large).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "stoker/audio/fft.h"
#include "stoker/base/result.h"

namespace stoker::audio {

enum class AudioModel { kQwen2Audio, kQwen25Omni, kQwen3Omni };
Result<AudioModel> parse_audio_model(std::string_view name);  // qwen2-audio | qwen2.5-omni | qwen3-omni
const char* audio_model_name(AudioModel m);

struct WhisperConfig {
  int n_mels = 128;
  int chunk_length_s = 30;
  bool pad_to_max_length = true;  // padding="max_length"; false: padding=True (the longest)
  bool truncation = true;
  static WhisperConfig for_model(AudioModel m);
  std::int64_t n_samples() const { return std::int64_t{chunk_length_s} * 16000; }
  Status validate() const;
};

// Audio tokens for a clip whose feature_attention_mask sums to `frames`, with Python floor
// division: Qwen2-Audio / Qwen2.5-Omni `t = (L−1)//2+1; (t−2)//2+1`; Qwen3-Omni
// `((((L%100)−1)//2+1 −1)//2+1 −1)//2+1 + (L//100)·13` (0 extra tokens when L % 100 = 0).
std::int64_t audio_token_count(AudioModel m, std::int64_t frames);

// One processor call's shape: the padded length P and the frames F = P / 160 (= mask length).
struct FeatureLayout {
  std::int64_t padded_samples = 0;
  std::int64_t frames = 0;
};
// `lengths`: the 16 kHz lengths of the clips given to one feature-extractor call (a sample's
// audios, in order). Refuses an empty clip.
Result<FeatureLayout> feature_layout(const WhisperConfig& c, std::span<const std::int64_t> lengths);
// The feature_attention_mask sum of a clip of `length` samples in that layout.
std::int64_t mask_frames(const FeatureLayout& layout, std::int64_t length);

struct WhisperFeatures {
  std::int64_t clips = 0, n_mels = 0, frames = 0;
  std::vector<float> input_features;          // clips × n_mels × frames
  std::vector<std::int32_t> attention_mask;   // clips × frames
  std::vector<std::int64_t> mask_sums;        // per clip
};

class WhisperFeatureExtractor {
 public:
  static Result<WhisperFeatureExtractor> create(const WhisperConfig& config);
  const WhisperConfig& config() const { return config_; }

  // One clip in `layout`: n_mels × layout.frames float32, row-major (mel-major, like
  // input_features[i]), into `out`. Returns the clip's mask sum.
  Result<std::int64_t> extract(std::span<const float> wave, const FeatureLayout& layout, float* out) const;

  // A whole feature-extractor call on these clips (batch semantics of the padding mode).
  Result<WhisperFeatures> extract(std::span<const std::span<const float>> clips) const;

  // The mel filters as transformers builds them (201 × n_mels, bin-major, float64), for tests.
  std::vector<double> dense_filters() const;

 private:
  WhisperFeatureExtractor() = default;
  struct Filter {
    int first_bin = 0;
    std::vector<double> weights;  // bins first_bin .. first_bin + size − 1
  };
  WhisperConfig config_;
  std::vector<Filter> filters_;
  std::vector<double> window_;  // 400, periodic Hann (numpy.hanning(401)[:-1])
  RealFft fft_;
  float zero_frame_log_ = 0;  // float32(log10(1e-10)): the value of an all-zero frame
};

}  // namespace stoker::audio
