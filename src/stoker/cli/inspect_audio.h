// `stoker inspect` for models that take audio (inspect_cmd.cc): per audio clip of a record — an
// audio part, or the track of a video part with use_audio_in_video — its container and codec,
// sample rate, channels and header duration (audio::probe), the time to decode + mix + resample
// it to 16 kHz (audio::load) and to compute its Whisper log-mel features (the model's
// WhisperFeatureExtractor), its feature frames (feature_attention_mask sum, of the padded frames
// of the record's feature-extractor call) and its audio tokens (audio::plan_call: the model's
// formula); then a summary. The clips are fetched through the engine's sources (the same trust
// boundary, store and caps as images); a bad clip is its own error row, the run goes on.
// The token count is the one `stoker run` gives the clip: the record's clips planned in one call
// (Qwen3-Omni pads them to the longest), lengths from the decode.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/audio/decode.h"
#include "stoker/audio/processor.h"
#include "stoker/base/result.h"
#include "stoker/dataset/conversation.h"
#include "stoker/dataset/record_source.h"
#include "stoker/pipeline/fetcher.h"

namespace stoker::cli {

struct AudioRow {
  int line = 0;
  std::string path;     // the reference as written in the record
  bool track = false;   // a video's audio track (use_audio_in_video)
  bool ok = false;
  ErrorCode code = ErrorCode::kInternal;
  std::string error;
  audio::AudioInfo info;
  std::int64_t bytes = 0;
  std::int64_t samples = 0;      // 16 kHz samples after offset/duration, mix and resampling
  std::int64_t frames = 0;       // the call's padded feature frames (input_features width)
  std::int64_t mask_frames = 0;  // this clip's feature_attention_mask sum
  std::int64_t tokens = 0;
  double load_s = 0, features_s = 0;
  double total_s() const { return load_s + features_s; }
  double seconds() const { return samples / 16000.0; }
};

// The audio of one record, in record order. `scope`: the record's trust boundary.
std::vector<AudioRow> inspect_record_audio(int line, const dataset::Conversation& conv,
                                           const dataset::MediaResolver& scope,
                                           const pipeline::Fetcher& fetcher,
                                           const audio::AudioProcessor& proc);

// One row as a JSON line / as a table line (stdout).
void emit_audio_row(const AudioRow& r, bool json);

// "Whisper log-mel, 128 mels, padded to 300 s (max_length), truncated beyond" — for the summary.
std::string describe_audio_features(const audio::AudioProcessor& proc);

// The summary of the rows: text lines, or `,"audios":…` fields for the JSON summary object.
void print_audio_summary(const std::vector<AudioRow>& rows, const audio::AudioProcessor& proc);
std::string audio_summary_json(const std::vector<AudioRow>& rows);

}  // namespace stoker::cli
