#include "stoker/cli/inspect_audio.h"

#include <cstdio>
#include <map>

#include "stoker/audio/load.h"
#include "stoker/audio/plan.h"
#include "stoker/base/clock.h"
#include "stoker/base/json_text.h"
#include "stoker/base/printable.h"
#include "stoker/cli/inspect_format.h"
#include "stoker/pipeline/media.h"

namespace stoker::cli {
namespace {

// FFmpeg names a demuxer by its aliases ("mov,mp4,m4a,3gp,3g2,mj2"): the first one.
std::string short_container(const std::string& c) { return c.substr(0, c.find(',')); }

// "WAV PCM_16", "mov aac": at most 14 characters, the start kept.
std::string format_column(const audio::AudioInfo& info) {
  std::string s = printable(short_container(info.container) + " " + info.codec);
  return s.size() <= 14 ? s : s.substr(0, 14);
}

void fail(AudioRow& row, const Error& e) {
  row.ok = false;
  row.code = e.code();
  row.error = e.to_string();
}


}  // namespace

std::vector<AudioRow> inspect_record_audio(int line, const dataset::Conversation& conv,
                                           const dataset::MediaResolver& scope,
                                           const pipeline::Fetcher& fetcher,
                                           const audio::AudioProcessor& proc) {
  std::vector<AudioRow> rows;
  std::vector<std::vector<float>> waves;  // the ok rows' 16 kHz waveforms (until featurised)
  for (const dataset::Message& m : conv.messages) {
    for (const dataset::Part& p : m.parts) {
      const bool track = p.kind == dataset::Part::Kind::kVideo && p.video.use_audio_in_video;
      if (p.kind != dataset::Part::Kind::kAudio && !track) continue;
      AudioRow& row = rows.emplace_back();
      waves.emplace_back();
      row.line = line;
      row.path = p.value;
      row.track = track;
      if (track && !p.frames.empty()) {
        fail(row, invalid_argument("use_audio_in_video: a video given as frames has no audio track"));
        continue;
      }
      Result<std::string> uri = scope.resolve(p.value);
      if (!uri.ok()) {
        fail(row, uri.error());
        continue;
      }
      Result<std::vector<std::uint8_t>> bytes = fetcher.fetch(*uri);
      if (!bytes.ok()) {
        fail(row, bytes.error());
        continue;
      }
      row.bytes = static_cast<std::int64_t>(bytes->size());
      const audio::LoadOptions options = pipeline::audio_load_options(proc, p);
      // The header, as the engine plans a clip (no decoding).
      Result<audio::AudioInfo> info = audio::probe(*bytes, options.limits);
      if (!info.ok()) {
        fail(row, info.error());
        continue;
      }
      row.info = *info;
      // Decode + channel mean + libsoxr HQ to 16 kHz, timed.
      Stopwatch sw;
      Result<audio::Waveform> w = audio::load(*bytes, options);
      row.load_s = sw.elapsed_s();
      if (!w.ok()) {
        fail(row, w.error());
        continue;
      }
      row.samples = static_cast<std::int64_t>(w->samples.size());
      if (row.samples == 0) {
        fail(row, data_loss("audio: no samples in the requested range"));
        continue;
      }
      waves.back() = std::move(w->samples);
      row.ok = true;
    }
  }
  // The record's clips in one feature-extractor call (the engine's plan_sample): the padded
  // frames, each clip's mask sum and tokens.
  std::vector<std::int64_t> lengths;
  for (const AudioRow& r : rows) {
    if (r.ok) lengths.push_back(r.samples);
  }
  if (lengths.empty()) return rows;
  Result<audio::CallPlan> call = audio::plan_call(proc.model(), lengths);
  std::vector<float> features;
  std::size_t k = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    AudioRow& r = rows[i];
    if (!r.ok) continue;
    if (!call.ok()) {
      fail(r, call.error());
      continue;
    }
    r.frames = call->layout.frames;
    r.mask_frames = call->mask_frames[k];
    r.tokens = call->tokens[k];
    ++k;
    features.resize(static_cast<std::size_t>(call->n_mels * call->layout.frames));
    Stopwatch sw;
    Result<std::int64_t> mask = proc.extractor().extract(waves[i], call->layout, features.data());
    r.features_s = sw.elapsed_s();
    if (!mask.ok()) {
      fail(r, mask.error());
    } else if (*mask != r.mask_frames) {
      fail(r, internal_error("audio: mask sum " + std::to_string(*mask) + ", planned " +
                             std::to_string(r.mask_frames)));
    }
    waves[i] = {};
  }
  return rows;
}

void emit_audio_row(const AudioRow& r, bool json) {
  const std::string shown = r.track ? r.path + " (audio track)" : r.path;
  if (json) {
    std::string s = "{\"line\":" + std::to_string(r.line) + ",\"audio\":" + json_string(r.path) +
                    ",\"track\":" + (r.track ? "true" : "false");
    if (!r.ok) {
      s += ",\"ok\":false,\"code\":" + json_string(error_code_name(r.code)) +
           ",\"error\":" + json_string(r.error) + "}";
    } else {
      char t[320];
      std::snprintf(t, sizeof t,
                    ",\"sample_rate\":%d,\"channels\":%d,\"header_frames\":%lld,\"duration_s\":%.6f,"
                    "\"samples\":%lld,\"seconds\":%.6f,\"frames\":%lld,\"feature_frames\":%lld,"
                    "\"tokens\":%lld,\"load_ms\":%.3f,\"features_ms\":%.3f,\"total_ms\":%.3f}",
                    r.info.sample_rate, r.info.channels, static_cast<long long>(r.info.frames),
                    r.info.duration_s(), static_cast<long long>(r.samples), r.seconds(),
                    static_cast<long long>(r.frames), static_cast<long long>(r.mask_frames),
                    static_cast<long long>(r.tokens), r.load_s * 1e3, r.features_s * 1e3,
                    r.total_s() * 1e3);
      s += ",\"ok\":true,\"backend\":" + json_string(audio::backend_name(r.info.backend)) +
           ",\"container\":" + json_string(r.info.container) +
           ",\"codec\":" + json_string(r.info.codec) + ",\"bytes\":" + std::to_string(r.bytes) + t;
    }
    std::printf("%s\n", s.c_str());
    return;
  }
  if (!r.ok) {
    std::printf("%5d  %-30s ERROR %s: %s\n", r.line, fit(printable(shown), 30).c_str(),
                std::string(error_code_name(r.code)).c_str(), printable(r.error).c_str());
    return;
  }
  char rate[32], secs[32], frames[32];
  std::snprintf(rate, sizeof rate, "%gk %dch", r.info.sample_rate / 1000.0, r.info.channels);
  std::snprintf(secs, sizeof secs, "%.3f s", r.seconds());
  std::snprintf(frames, sizeof frames, "%lld fr", static_cast<long long>(r.mask_frames));
  std::printf("%5d  %-30s %-14s %10s %10s %9s %6lld %9s %9s %9s %9s\n", r.line,
              fit(printable(shown), 30).c_str(),
              format_column(r.info).c_str(), rate, secs, frames,
              static_cast<long long>(r.tokens), human_time(r.load_s).c_str(), "-",
              human_time(r.features_s).c_str(), human_time(r.total_s()).c_str());
}

std::string describe_audio_features(const audio::AudioProcessor& proc) {
  const audio::WhisperConfig& c = proc.extractor().config();
  std::string s = "Whisper log-mel, " + std::to_string(c.n_mels) + " mels, ";
  s += c.pad_to_max_length
           ? "padded to " + std::to_string(c.chunk_length_s) + " s (max_length)"
           : std::string("padded to the record's longest clip");
  s += c.truncation ? ", truncated beyond" : ", no truncation";
  return s + "; tokens by " + audio::audio_model_name(proc.model()) + "'s formula";
}

namespace {

struct AudioTotals {
  std::vector<double> totals;
  std::vector<std::int64_t> tokens;
  double load = 0, features = 0, seconds = 0;
  std::int64_t bytes = 0, total_tokens = 0;
  std::size_t failed = 0;
  std::map<std::string, int> by_container;
  explicit AudioTotals(const std::vector<AudioRow>& rows) {
    for (const AudioRow& r : rows) {
      if (!r.ok) {
        ++failed;
        continue;
      }
      totals.push_back(r.total_s());
      tokens.push_back(r.tokens);
      total_tokens += r.tokens;
      load += r.load_s;
      features += r.features_s;
      seconds += r.seconds();
      bytes += r.bytes;
      by_container[short_container(r.info.container)]++;
    }
  }
  double busy() const { return load + features; }
  std::int64_t max_tokens() const {
    return tokens.empty() ? 0 : *std::max_element(tokens.begin(), tokens.end());
  }
};

}  // namespace

void print_audio_summary(const std::vector<AudioRow>& rows, const audio::AudioProcessor& proc) {
  const AudioTotals t(rows);
  std::printf("  audio features %s\n", describe_audio_features(proc).c_str());
  std::string containers;
  for (auto& [c, n] : t.by_container) {
    containers += (containers.empty() ? "" : ", ") + printable(c) + " " + std::to_string(n);
  }
  std::printf("  audio          %zu processed (%s), %zu failed; %s read, %.1f s of audio at 16 kHz\n",
              t.totals.size(), containers.empty() ? "none" : containers.c_str(), t.failed,
              human_bytes(static_cast<double>(t.bytes)).c_str(), t.seconds);
  if (t.totals.empty()) return;
  std::printf("  audio tokens   %s total; per clip p50 %s, max %s\n", with_commas(t.total_tokens).c_str(),
              with_commas(percentile(t.tokens, 50)).c_str(), with_commas(t.max_tokens()).c_str());
  const double busy = t.busy() > 0 ? t.busy() : 1e-12;
  std::printf("  time / clip    p50 %s, p99 %s (decode+resample %.0f%%, features %.0f%%)\n",
              human_time(percentile(t.totals, 50)).c_str(), human_time(percentile(t.totals, 99)).c_str(),
              100 * t.load / busy, 100 * t.features / busy);
  std::printf("  audio rate     %.1f clips/s, %.1f s of audio per s, on one core\n",
              t.totals.size() / busy, t.seconds / busy);
}

std::string audio_summary_json(const std::vector<AudioRow>& rows) {
  const AudioTotals t(rows);
  char buf[400];
  std::snprintf(buf, sizeof buf,
                ",\"audios\":%zu,\"audio_errors\":%zu,\"audio_tokens\":%lld,\"audio_tokens_p50\":%lld,"
                "\"audio_tokens_max\":%lld,\"audio_seconds\":%.3f,\"audio_time_p50_ms\":%.3f,"
                "\"audio_time_p99_ms\":%.3f,\"audios_per_s\":%.2f",
                t.totals.size(), t.failed, static_cast<long long>(t.total_tokens),
                static_cast<long long>(percentile(t.tokens, 50)), static_cast<long long>(t.max_tokens()),
                t.seconds, percentile(t.totals, 50) * 1e3, percentile(t.totals, 99) * 1e3,
                t.busy() > 0 ? t.totals.size() / t.busy() : 0.0);
  return buf;
}

}  // namespace stoker::cli
