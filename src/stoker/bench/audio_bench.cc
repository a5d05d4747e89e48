#include "stoker/bench/audio_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stoker/audio/features.h"
#include "stoker/audio/load.h"
#include "stoker/base/clock.h"
#include "stoker/base/file.h"
#include "stoker/bench/paths.h"
#include "stoker/bench/peer.h"
#include "stoker/synth/audio.h"

namespace stoker::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Format {
  const char* format;
  int rate, channels;
};
constexpr Format kFormats[] = {{"wav", 16000, 1}, {"wav", 44100, 2}, {"flac", 22050, 1},
                               {"ogg", 48000, 2}, {"mp3", 44100, 1}, {"m4a", 24000, 2}};

struct Mine {
  std::vector<std::uint32_t> wave_crc, feat_crc;
  std::int64_t samples = 0, frames = 0, mask_sum = 0, tokens = 0;
  std::string backend;
};

}  // namespace

Result<Outcome> run_audio_bench(const AudioBenchOptions& in) {
  AudioBenchOptions o = in;
  if (o.clips <= 0) o.clips = o.quick ? 6 : 12;
  if (o.seconds <= 0) o.seconds = o.quick ? 5 : 10;
  STOKER_ASSIGN_OR_RETURN(audio::AudioModel model, audio::parse_audio_model(o.model));
  const int core = o.core >= 0 ? o.core : last_allowed_cpu();
  STOKER_RETURN_IF_ERROR(pin_to_core(core));
  std::optional<TempDir> tmp;
  std::string work = o.dir;
  if (work.empty()) {
    STOKER_ASSIGN_OR_RETURN(TempDir t, TempDir::make("stoker-bench-audio"));
    work = t.path();
    tmp.emplace(std::move(t));
  }
  fs::create_directories(work + "/peer");

  std::vector<std::vector<std::uint8_t>> blobs;
  std::string list, kinds;
  double audio_seconds = 0;
  for (int k = 0; k < o.clips; ++k) {
    const Format& f = kFormats[static_cast<std::size_t>(k) % std::size(kFormats)];
    synth::AudioSpec s{.format = f.format, .content = "speech", .sample_rate = f.rate, .channels = f.channels,
                       .seconds = o.seconds, .seed = static_cast<std::uint64_t>(k + 1)};
    STOKER_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, synth::encode_audio(s));
    const std::string path = work + "/clip_" + std::to_string(k) + "." + s.extension();
    STOKER_RETURN_IF_ERROR(write_file(path, bytes));
    list += path + "\n";
    if (k < static_cast<int>(std::size(kFormats))) {
      char khz[16];
      std::snprintf(khz, sizeof khz, "%.4g", f.rate / 1000.0);
      kinds += std::string(k ? ", " : "") + f.format + " " + khz + " kHz" + (f.channels == 2 ? " stereo" : "");
    }
    audio_seconds += o.seconds;
    blobs.push_back(std::move(bytes));
  }
  STOKER_RETURN_IF_ERROR(write_text_file(work + "/list.txt", list));
  std::printf("stoker bench audio: %d clips of %.0f s speech-like sound (%s); model %s; core %d; %s (%s)\n",
              o.clips, o.seconds, kinds.c_str(), o.model.c_str(), core, o.repeat.text().c_str(), build_kind());
  std::fflush(stdout);

  // stoker: bytes in memory → load (decode, mean, resample) → features, one clip per call.
  STOKER_ASSIGN_OR_RETURN(audio::WhisperFeatureExtractor ex,
                          audio::WhisperFeatureExtractor::create(audio::WhisperConfig::for_model(model)));
  std::vector<Mine> mine(blobs.size());
  std::vector<std::vector<float>> last_features(blobs.size());
  BestOf stoker_time;
  std::vector<float> feats;
  for (int pass = -o.repeat.warmup; pass < o.repeat.passes; ++pass) {
    PassTime t;
    for (std::size_t k = 0; k < blobs.size(); ++k) {
      const double c0 = process_cpu_s();
      const std::int64_t w0 = now_ns();
      STOKER_ASSIGN_OR_RETURN(audio::Waveform w, audio::load(blobs[k]));
      const std::int64_t len[] = {static_cast<std::int64_t>(w.samples.size())};
      STOKER_ASSIGN_OR_RETURN(audio::FeatureLayout layout, audio::feature_layout(ex.config(), len));
      feats.resize(static_cast<std::size_t>(ex.config().n_mels * layout.frames));
      STOKER_ASSIGN_OR_RETURN(std::int64_t ones, ex.extract(w.samples, layout, feats.data()));
      t.cpu_s += process_cpu_s() - c0;
      t.wall_s += static_cast<double>(now_ns() - w0) * 1e-9;
      if (pass < 0) continue;
      Mine& m = mine[k];
      m.wave_crc.push_back(crc32(w.samples.data(), w.samples.size() * sizeof(float)));
      m.feat_crc.push_back(crc32(feats.data(), feats.size() * sizeof(float)));
      m.samples = static_cast<std::int64_t>(w.samples.size());
      m.frames = layout.frames;
      m.mask_sum = ones;
      m.tokens = audio::audio_token_count(model, ones);
      m.backend = audio::backend_name(w.info.backend);
      if (pass == 0) last_features[k] = feats;
    }
    if (pass >= 0) stoker_time.add(t);
  }

  // The peer, on the same core (children inherit the pinning).
  STOKER_ASSIGN_OR_RETURN(fs::path script, find_bench_file("audio_peer.py"));
  STOKER_ASSIGN_OR_RETURN(
      std::string out,
      run_capture({o.python, script.string(), "--model", o.model, "--warmup", std::to_string(o.repeat.warmup),
                   "--passes", std::to_string(o.repeat.passes), "--list", work + "/list.txt", "--dump-dir",
                   work + "/peer"},
                  single_thread_env()));
  json peer = json::parse(last_json_line(out), nullptr, false);
  if (peer.is_discarded() || !peer.contains("passes")) return internal_error("audio peer: no JSON result in its output");
  BestOf peer_time;
  for (const auto& p : peer["passes"]) peer_time.add({p["cpu_s"].get<double>(), p["wall_s"].get<double>()});

  // Same outputs on every timed pass: waveform and feature CRCs; shapes, masks, token counts.
  Comparison cmp;
  std::int64_t bit_identical = 0, compared = 0, ffmpeg_clips = 0, tokens = 0;
  double worst = 0;
  for (std::size_t k = 0; k < blobs.size(); ++k) {
    const json& pc = peer["clips"][k];
    const Mine& m = mine[k];
    const std::string name = "clip " + std::to_string(k);
    ffmpeg_clips += m.backend == "ffmpeg" ? 1 : 0;
    tokens += m.tokens;
    cmp.compared(static_cast<std::int64_t>(m.wave_crc.size()));
    cmp.expect_equal(m.samples, pc["samples"].get<std::int64_t>(), name + " waveform length");
    cmp.expect_equal(m.frames, pc["frames"].get<std::int64_t>(), name + " feature frames");
    cmp.expect_equal(m.mask_sum, pc["mask_sum"].get<std::int64_t>(), name + " feature_attention_mask");
    cmp.expect_equal(m.tokens, pc["tokens"].get<std::int64_t>(), name + " audio tokens");
    const auto pw = pc["wave_crc"].get<std::vector<std::uint32_t>>();
    const auto pf = pc["feat_crc"].get<std::vector<std::uint32_t>>();
    cmp.expect_equal(m.wave_crc, pw, name + " 16 kHz waveform (CRC-32 per pass)");
    for (std::size_t p = 0; p < m.feat_crc.size() && p < pf.size(); ++p) {
      ++compared;
      if (m.feat_crc[p] == pf[p]) {
        ++bit_identical;
        continue;
      }
      // Not bit-identical: within the 1e-5 of the peer's dumped features?
      STOKER_ASSIGN_OR_RETURN(std::vector<std::uint8_t> raw, read_file(work + "/peer/" + std::to_string(k) + ".f32"));
      const std::vector<float>& f = last_features[k];
      if (!cmp.expect_equal(raw.size(), f.size() * sizeof(float), name + " input_features size")) continue;
      const auto* pv = reinterpret_cast<const float*>(raw.data());
      double d = 0;
      for (std::size_t i = 0; i < f.size(); ++i) d = std::max(d, std::abs(static_cast<double>(pv[i]) - f[i]));
      worst = std::max(worst, d);
      if (d > 1e-5) cmp.differ(name + " input_features differ by " + std::to_string(d));
    }
  }

  const double n = static_cast<double>(blobs.size());
  std::printf("  reference: librosa.load rules (soundfile %s on %s, audioread + %s for M4A, numpy %s mean, "
              "%s HQ as python-soxr) + transformers' NumPy WhisperFeatureExtractor\n",
              peer["versions"].value("soundfile", "?").c_str(), peer["versions"].value("libsndfile", "?").c_str(),
              peer["versions"].value("ffmpeg", "?").substr(0, 20).c_str(), peer["versions"].value("numpy", "?").c_str(),
              peer["versions"].value("soxr", "?").c_str());
  std::printf("  stoker   %8.2f clips/s  (%.2f ms CPU per clip, %.1f x real time)\n", n / stoker_time.cpu_s(),
              1e3 * stoker_time.cpu_s() / n, audio_seconds / stoker_time.cpu_s());
  std::printf("  python   %8.2f clips/s  (%.2f ms CPU per clip, incl. the ffmpeg children of %lld M4A clips)\n",
              n / peer_time.cpu_s(), 1e3 * peer_time.cpu_s() / n, static_cast<long long>(ffmpeg_clips));
  std::printf("  wall: stoker %.2f ms, python %.2f ms per clip\n", 1e3 * stoker_time.wall_s() / n,
              1e3 * peer_time.wall_s() / n);
  std::printf("  outputs: 16 kHz waveforms identical; input_features bit-identical in %lld of %lld clip-passes "
              "(max |diff| elsewhere %.3g); %lld audio tokens per pass, masks equal\n",
              static_cast<long long>(bit_identical), static_cast<long long>(compared), worst,
              static_cast<long long>(tokens));
  return finish(cmp, "clips", "the Python reference path (one core, CPU time)", peer_time.cpu_s() / stoker_time.cpu_s());
}

}  // namespace stoker::bench
