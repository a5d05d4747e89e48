// Synthetic audio for tests and benchmarks, rendered from the seed (own PRNG) and encoded in
// memory: WAV (PCM 16/24-bit, float), FLAC, OGG Vorbis, OGG Opus and MP3 through libsndfile's
// virtual I/O (MP3 by LAME), M4A (AAC) through libavcodec/libavformat; plus videos with an AAC
// track (video.h). Content: tones, a chirp, white noise, speech-like sound (a glottal pulse train
// at a wandering pitch through two moving formant resonators, in syllables with pauses), and
// silence; any sample rate and channel count the encoder takes. Same spec → same bytes (for a
// given set of codec libraries). Thread-safe. Errors: InvalidArgument (spec), Unimplemented (an
// encoder this build lacks), Internal (a library call failed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::synth {

struct AudioSpec {
  std::string format = "wav";     // wav | wav24 | wav-float | flac | ogg | opus | mp3 | m4a
  std::string content = "speech"; // speech | tone | chirp | noise | silence
  int sample_rate = 16000;
  int channels = 1;
  double seconds = 2.0;
  std::uint64_t seed = 0;
  Status validate() const;
  std::string extension() const;  // wav | flac | ogg | opus | mp3 | m4a
};

// Interleaved float32 frames in [-1, 1] (channels differ slightly: a per-channel gain and delay).
std::vector<float> render_audio(const AudioSpec& spec);
Result<std::vector<std::uint8_t>> encode_audio(const AudioSpec& spec);
bool can_encode_audio(const std::string& format);

// The kinds `stoker synth --audio N` cycles through: speech 16 kHz WAV, float stereo 44.1 kHz
// WAV, a FLAC chirp, OGG Vorbis stereo 48 kHz, MP3, M4A stereo 24 kHz, 8 kHz silence, 6-channel
// 96 kHz FLAC noise, a short 24-bit 11.025 kHz WAV, OGG Opus, a 31 s clip (past Qwen2-Audio's
// 30 s), a clip at 1343 Hz (librosa's length rounding), then videos with audio tracks.
struct AudioKind {
  bool video = false;  // an MP4 (H.264 + AAC) for use_audio_in_video
  AudioSpec audio;
};
AudioKind audio_kind(int k, std::uint64_t seed);
std::string audio_kind_name(const AudioKind& kind);

struct AudioMixResult {
  int records = 0;
  std::vector<std::string> paths;  // relative to out_dir
  std::int64_t bytes = 0;
};
// Writes out_dir/audio/<k>_<kind>.<ext> for k < count, appends one record per file to
// out_dir/data.jsonl (an audio part {"type":"audio","audio":path}, or for a video kind
// {"type":"video","video":path,"use_audio_in_video":true}, with a question and an answer), and
// describes each in out_dir/audio.jsonl (path, format, content, rate, channels, seconds, frames,
// video, bytes). Deterministic.
Result<AudioMixResult> add_audio_records(const std::string& out_dir, int count, std::uint64_t seed);

}  // namespace stoker::synth
