// audio: an audio file's bytes (byte 0 = options) → audio::probe, then audio::load (libsndfile's
// virtual I/O, else FFmpeg's AVIOContext over memory; channel mean; libsoxr) → the Whisper
// features of one model (byte 0) with an offset/duration (byte 0). libsndfile, libsoxr and FFmpeg
// are Debian's, uninstrumented: their bugs show only through what they do to our memory. Seeds:
// synth's encoders (WAV 16/24/float, FLAC, Vorbis, Opus, MP3, M4A; mono to 6 channels; 8 kHz to
// 96 kHz) and an MP4 with an AAC track.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "stoker/audio/features.h"
#include "stoker/audio/load.h"
#include "stoker/fuzz/scratch.h"
#include "stoker/fuzz/targets.h"
#include "stoker/synth/audio.h"
#include "stoker/synth/video.h"

namespace stoker::fuzz {
namespace {

// Caps as in production, smaller: 20 s of audio, 10 s of wall time per input.
audio::AudioLimits limits() {
  audio::AudioLimits l;
  l.max_duration_s = 20;
  l.max_seconds = 10;
  return l;
}

const audio::WhisperFeatureExtractor& extractor(audio::AudioModel m) {
  static const auto make = [](audio::AudioModel model) {
    Result<audio::WhisperFeatureExtractor> r = audio::WhisperFeatureExtractor::create(audio::WhisperConfig::for_model(model));
    check(r.ok(), "the whisper config is valid");
    return *std::move(r);
  };
  static const audio::WhisperFeatureExtractor q2 = make(audio::AudioModel::kQwen2Audio);
  static const audio::WhisperFeatureExtractor q3 = make(audio::AudioModel::kQwen3Omni);
  return m == audio::AudioModel::kQwen3Omni ? q3 : q2;
}

void run_audio(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return;
  const std::uint8_t opt = data[0];
  const std::span<const std::uint8_t> bytes(data + 1, size - 1);
  const audio::AudioLimits lim = limits();
  Result<audio::AudioInfo> info = audio::probe(bytes, lim);
  if (!info.ok()) {
    check_error_named(info);
  } else {
    check(info->sample_rate >= lim.min_sample_rate && info->sample_rate <= lim.max_sample_rate,
          "a probed rate is within the limits");
    check(info->channels >= 1 && info->channels <= lim.max_channels, "a probed channel count is within the limits");
  }
  audio::LoadOptions o;
  o.limits = lim;
  if (opt & 2) o.offset_s = 0.1 * ((opt >> 2) & 3);
  if (opt & 16) o.duration_s = 0.25 * (1 + ((opt >> 5) & 3));
  Result<audio::Waveform> w = audio::load(bytes, o);
  if (!w.ok()) {
    check_error_named(w);
    return;
  }
  const audio::AudioInfo& in = w->info;
  check(!w->samples.empty(), "a loaded clip has samples");
  check(w->source_frames >= 1 && static_cast<double>(w->source_frames) <= lim.max_duration_s * in.sample_rate + 1,
        "source frames within the duration cap");
  check(static_cast<std::int64_t>(w->samples.size()) == audio::loaded_length(w->source_frames, in.sample_rate),
        "16 kHz length = librosa's ceil(n · 16000 / sr)");
  for (float v : w->samples) check(std::isfinite(v), "finite samples");
  const audio::AudioModel model = (opt & 1) ? audio::AudioModel::kQwen3Omni : audio::AudioModel::kQwen2Audio;
  const audio::WhisperFeatureExtractor& ex = extractor(model);
  const std::int64_t len[] = {static_cast<std::int64_t>(w->samples.size())};
  Result<audio::FeatureLayout> layout = audio::feature_layout(ex.config(), len);
  if (!layout.ok()) {  // Qwen3-Omni: a clip shorter than one hop has no frame
    check_error_named(layout);
    return;
  }
  std::vector<float> f(static_cast<std::size_t>(ex.config().n_mels * layout->frames), NAN);
  Result<std::int64_t> ones = ex.extract(w->samples, *layout, f.data());
  check(ones.ok(), "features of a loaded clip");
  check(*ones >= 1 && *ones <= layout->frames, "mask sum within the frames");
  // (log10(x) + 4) / 4 with x in [1e-10, ∞) floored at max − 8: every value ≥ −1.5 and finite.
  for (float v : f) check(std::isfinite(v) && v >= -1.5f, "input_features written, finite, >= -1.5");
  check(audio::audio_token_count(model, *ones) >= 0, "a non-negative token count");
}

void audio_seeds(const std::string& dir) {
  const synth::AudioSpec specs[] = {
      {.format = "wav", .content = "speech", .sample_rate = 16000, .channels = 1, .seconds = 0.5},
      {.format = "wav24", .content = "tone", .sample_rate = 8000, .channels = 2, .seconds = 0.3},
      {.format = "wav-float", .content = "noise", .sample_rate = 22050, .channels = 1, .seconds = 0.2},
      {.format = "flac", .content = "chirp", .sample_rate = 44100, .channels = 2, .seconds = 0.3},
      {.format = "ogg", .content = "speech", .sample_rate = 32000, .channels = 1, .seconds = 0.4},
      {.format = "opus", .content = "speech", .sample_rate = 48000, .channels = 1, .seconds = 0.3},
      {.format = "mp3", .content = "tone", .sample_rate = 22050, .channels = 1, .seconds = 0.4},
      {.format = "m4a", .content = "speech", .sample_rate = 24000, .channels = 2, .seconds = 0.4},
      {.format = "flac", .content = "noise", .sample_rate = 96000, .channels = 6, .seconds = 0.05},
  };
  int k = 0;
  for (const synth::AudioSpec& s : specs) {
    Result<std::vector<std::uint8_t>> a = synth::encode_audio(s);
    if (!a.ok()) {
      std::fprintf(stderr, "audio seeds: %s: %s\n", s.format.c_str(), a.error().to_string().c_str());
      continue;
    }
    for (std::uint8_t opt : {0x00, 0x01, 0x16}) {  // Qwen2-Audio; Qwen3-Omni; an offset + duration
      std::string bytes(1, static_cast<char>(opt));
      bytes.append(a->begin(), a->end());
      write_seed(dir, s.format + "-" + std::to_string(k) + "-" + std::to_string(opt), bytes);
    }
    ++k;
  }
  synth::VideoSpec v{.codec = "h264", .width = 32, .height = 32, .frames = 5, .gop = 5, .bframes = 0, .audio = true};
  Result<std::vector<std::uint8_t>> mp4 = synth::encode_video(v);
  if (mp4.ok()) write_seed(dir, "mp4-aac", std::string(1, '\0') + std::string(mp4->begin(), mp4->end()));
}

}  // namespace

const Target kAudioTarget{"audio", "audio file: probe, load (libsndfile / FFmpeg from memory, channel mean, libsoxr), Whisper features",
                          nullptr, run_audio, audio_seeds};

}  // namespace stoker::fuzz
