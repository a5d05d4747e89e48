// `stoker bench audio`: stoker's audio path (audio::load — libsndfile / FFmpeg from memory,
// numpy-order channel mean, libsoxr HQ — then audio::WhisperFeatureExtractor) against the path a
// user runs today — qwen-omni-utils' librosa.load (soundfile, or audioread's ffmpeg child for
// M4A; numpy mean; libsoxr HQ as python-soxr) + transformers' NumPy WhisperFeatureExtractor
// (bench/audio_peer.py + audio_reference.py) — on the same files, the same pinned core, the same
// warm-up and repetitions. Set: speech-like clips encoded here (synth/audio.h) cycling WAV
// 16 kHz mono, WAV 44.1 kHz stereo, FLAC 22.05 kHz, OGG Vorbis 48 kHz stereo, MP3 44.1 kHz and
// M4A 24 kHz stereo. Same outputs: per clip and timed pass, the CRC-32 of the 16 kHz waveform
// and of input_features must equal the peer's (they are bit-identical; a difference falls back to
// a ≤ 1e-5 check against the peer's dumped features). Blocking; runs the peer as a child.
#pragma once

#include <string>

#include "stoker/base/result.h"
#include "stoker/bench/harness.h"

namespace stoker::bench {

struct AudioBenchOptions {
  bool quick = false;
  std::string model = "qwen3-omni";  // qwen2-audio | qwen2.5-omni | qwen3-omni
  int core = -1;
  std::string python = "/usr/bin/python3";
  std::string dir;       // keep the clips here (default: temp, removed)
  int clips = 0;         // 0: 6 quick, 12 full
  double seconds = 0;    // clip length; 0: 5 s quick, 10 s full
  Repeat repeat;
};

Result<Outcome> run_audio_bench(const AudioBenchOptions& options);

}  // namespace stoker::bench
