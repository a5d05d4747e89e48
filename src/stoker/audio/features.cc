#include "stoker/audio/features.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <numbers>
#include <string>

namespace stoker::audio {
namespace {

constexpr int kNfft = 400, kHop = 160, kBins = kNfft / 2 + 1, kHalf = kNfft / 2;
constexpr int kRate = 16000;

// Python's a // b for b > 0.
std::int64_t floordiv(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
std::int64_t pymod(std::int64_t a, std::int64_t b) { return a - floordiv(a, b) * b; }

// audio_utils.hertz_to_mel / mel_to_hertz, mel_scale="slaney", in the same operation order.
double hertz_to_mel(double f) {
  const double logstep = 27.0 / std::log(6.4);
  if (f >= 1000.0) return 15.0 + std::log(f / 1000.0) * logstep;
  return 3.0 * f / 200.0;
}
double mel_to_hertz(double m) {
  const double logstep = std::log(6.4) / 27.0;
  if (m >= 15.0) return 1000.0 * std::exp(logstep * (m - 15.0));
  return 200.0 * m / 3.0;
}

// numpy 'reflect' padding of a length-p signal, as a periodic index map (checked against np.pad
// for every p < 30 and pad widths up to 200).
std::int64_t reflect(std::int64_t t, std::int64_t p) {
  if (p == 1) return 0;
  const std::int64_t period = 2 * (p - 1);
  std::int64_t i = t % period;
  if (i < 0) i += period;
  return i >= p ? period - i : i;
}

}  // namespace

Result<AudioModel> parse_audio_model(std::string_view name) {
  if (name == "qwen2-audio") return AudioModel::kQwen2Audio;
  if (name == "qwen2.5-omni") return AudioModel::kQwen25Omni;
  if (name == "qwen3-omni") return AudioModel::kQwen3Omni;
  return invalid_argument("audio model: qwen2-audio | qwen2.5-omni | qwen3-omni, got '" + std::string(name) + "'");
}

const char* audio_model_name(AudioModel m) {
  switch (m) {
    case AudioModel::kQwen2Audio: return "qwen2-audio";
    case AudioModel::kQwen25Omni: return "qwen2.5-omni";
    default: return "qwen3-omni";
  }
}

WhisperConfig WhisperConfig::for_model(AudioModel m) {
  WhisperConfig c;
  switch (m) {
    case AudioModel::kQwen2Audio:  // processor: padding="max_length"; hub chunk_length 30
      c.chunk_length_s = 30;
      break;
    case AudioModel::kQwen25Omni:  // processor forces "max_length"; hub chunk_length 300 (n_samples 4,800,000)
      c.chunk_length_s = 300;
      break;
    case AudioModel::kQwen3Omni:  // processor: padding=True, truncation=False
      c.chunk_length_s = 30;
      c.pad_to_max_length = false;
      c.truncation = false;
      break;
  }
  return c;
}

Status WhisperConfig::validate() const {
  if (n_mels < 1 || n_mels > 512) return invalid_argument("whisper: n_mels must be in [1, 512]");
  if (chunk_length_s < 1 || chunk_length_s > 3600) return invalid_argument("whisper: chunk_length must be in [1, 3600] s");
  return {};
}

std::int64_t audio_token_count(AudioModel m, std::int64_t L) {
  if (m == AudioModel::kQwen3Omni) {
    const std::int64_t leave = pymod(L, 100);
    const std::int64_t feat = floordiv(leave - 1, 2) + 1;
    return floordiv(floordiv(feat - 1, 2) + 1 - 1, 2) + 1 + floordiv(L, 100) * 13;
  }
  const std::int64_t t = floordiv(L - 1, 2) + 1;
  return floordiv(t - 2, 2) + 1;
}

Result<FeatureLayout> feature_layout(const WhisperConfig& c, std::span<const std::int64_t> lengths) {
  if (lengths.empty()) return invalid_argument("whisper: no clips");
  std::int64_t longest = 0;
  for (std::int64_t l : lengths) {
    if (l <= 0) return invalid_argument("whisper: empty clip");
    longest = std::max(longest, l);
  }
  FeatureLayout out;
  out.padded_samples = c.pad_to_max_length ? c.n_samples() : longest;
  out.frames = out.padded_samples / kHop;
  if (out.frames < 1) return invalid_argument("whisper: a clip shorter than one hop (160 samples) has no frames");
  return out;
}

std::int64_t mask_frames(const FeatureLayout& layout, std::int64_t length) {
  const std::int64_t l = std::min(length, layout.padded_samples);
  return std::min((l + kHop - 1) / kHop, layout.frames);
}

Result<WhisperFeatureExtractor> WhisperFeatureExtractor::create(const WhisperConfig& config) {
  STOKER_RETURN_IF_ERROR(config.validate());
  WhisperFeatureExtractor e;
  e.config_ = config;
  STOKER_ASSIGN_OR_RETURN(e.fft_, RealFft::create(kNfft));
  // np.hanning(401)[:-1]: n = arange(-400, 401, 2); 0.5 + 0.5·cos(pi·n / 400).
  e.window_.resize(kNfft);
  for (int i = 0; i < kNfft; ++i) {
    const double n = static_cast<double>(2 * i - kNfft);
    e.window_[static_cast<std::size_t>(i)] = 0.5 + 0.5 * std::cos(std::numbers::pi * n / kNfft);
  }
  // mel_filter_bank(201, n_mels, 0.0, 8000.0, 16000, norm="slaney", mel_scale="slaney").
  const int n_mels = config.n_mels;
  const double mel_max = hertz_to_mel(8000.0), mel_min = hertz_to_mel(0.0);
  const double step = (mel_max - mel_min) / (n_mels + 1);  // np.linspace(mel_min, mel_max, n_mels + 2)
  std::vector<double> f(static_cast<std::size_t>(n_mels) + 2);
  for (int i = 0; i < n_mels + 2; ++i) {
    const double mel = i == n_mels + 1 ? mel_max : static_cast<double>(i) * step + mel_min;
    f[static_cast<std::size_t>(i)] = mel_to_hertz(mel);
  }
  for (int j = 0; j < n_mels; ++j) {
    const double fj = f[j], f1 = f[j + 1], f2 = f[j + 2];
    const double d0 = f1 - fj, d1 = f2 - f1, enorm = 2.0 / (f2 - fj);
    Filter flt;
    flt.first_bin = -1;
    for (int b = 0; b < kBins; ++b) {
      const double fft_freq = static_cast<double>(b) * 40.0;  // np.linspace(0, 8000, 201)
      const double down = -(fj - fft_freq) / d0, up = (f2 - fft_freq) / d1;
      const double w = std::max(0.0, std::min(down, up)) * enorm;
      if (w != 0.0 && flt.first_bin < 0) flt.first_bin = b;
      if (flt.first_bin >= 0) flt.weights.push_back(w);
    }
    if (flt.first_bin < 0) flt.first_bin = 0;
    while (!flt.weights.empty() && flt.weights.back() == 0.0) flt.weights.pop_back();
    e.filters_.push_back(std::move(flt));
  }
  e.zero_frame_log_ = static_cast<float>(std::log10(1e-10));
  return e;
}

std::vector<double> WhisperFeatureExtractor::dense_filters() const {
  const std::size_t n_mels = filters_.size();
  std::vector<double> d(static_cast<std::size_t>(kBins) * n_mels, 0.0);
  for (std::size_t j = 0; j < n_mels; ++j) {
    for (std::size_t k = 0; k < filters_[j].weights.size(); ++k) {
      d[(static_cast<std::size_t>(filters_[j].first_bin) + k) * n_mels + j] = filters_[j].weights[k];
    }
  }
  return d;
}

Result<std::int64_t> WhisperFeatureExtractor::extract(std::span<const float> wave, const FeatureLayout& layout,
                                                      float* out) const {
  const std::int64_t P = layout.padded_samples, F = layout.frames;
  if (wave.empty()) return invalid_argument("whisper: empty clip");
  if (P < 1 || F != P / kHop || F < 1) return invalid_argument("whisper: bad layout");
  const std::int64_t L = std::min<std::int64_t>(static_cast<std::int64_t>(wave.size()), P);  // truncation
  const int n_mels = config_.n_mels;
  // Frames that lie wholly in the zero padding (and whose end reflection stays in it) come after
  // all the others; only frames before `live` are transformed.
  std::int64_t live = F;
  if (L < P && P >= 2 * kNfft) {
    for (std::int64_t f = std::max<std::int64_t>(0, (L + kHalf) / kHop - 1); f < F; ++f) {
      const std::int64_t lo = f * kHop - kHalf, hi = lo + kNfft - 1;
      if (lo >= L && (hi <= P - 1 || 2 * (P - 1) - hi >= L)) {
        live = f;
        break;
      }
    }
  }
  std::vector<float> logmel(static_cast<std::size_t>(live) * static_cast<std::size_t>(n_mels));
  std::vector<double> frame(kNfft), power(kBins);
  std::vector<std::complex<double>> spec(kBins), scratch(fft_.scratch_size());
  float max_log = -std::numeric_limits<float>::infinity();
  for (std::int64_t f = 0; f < live; ++f) {
    const std::int64_t lo = f * kHop - kHalf;
    if (lo >= 0 && lo + kNfft <= L) {
      const float* x = wave.data() + lo;
      for (int i = 0; i < kNfft; ++i) frame[static_cast<std::size_t>(i)] = static_cast<double>(x[i]) * window_[static_cast<std::size_t>(i)];
    } else {
      for (int i = 0; i < kNfft; ++i) {
        const std::int64_t t = reflect(lo + i, P);
        const double v = t < L ? static_cast<double>(wave[static_cast<std::size_t>(t)]) : 0.0;
        frame[static_cast<std::size_t>(i)] = v * window_[static_cast<std::size_t>(i)];
      }
    }
    fft_.forward(frame.data(), spec.data(), scratch.data());
    for (int b = 0; b < kBins; ++b) {
      // np.empty(..., complex64) holds the rfft: re and im rounded to float32; then |X|² in float64.
      const double re = static_cast<float>(spec[static_cast<std::size_t>(b)].real());
      const double im = static_cast<float>(spec[static_cast<std::size_t>(b)].imag());
      power[static_cast<std::size_t>(b)] = re * re + im * im;
    }
    float* row = logmel.data() + static_cast<std::size_t>(f) * static_cast<std::size_t>(n_mels);
    for (int j = 0; j < n_mels; ++j) {
      const Filter& flt = filters_[static_cast<std::size_t>(j)];
      const double* p = power.data() + flt.first_bin;
      double acc = 0.0;
      for (std::size_t k = 0; k < flt.weights.size(); ++k) acc += flt.weights[k] * p[k];
      const float v = static_cast<float>(std::log10(std::max(1e-10, acc)));
      row[j] = v;
      max_log = std::max(max_log, v);
    }
  }
  if (live < F) max_log = std::max(max_log, zero_frame_log_);
  // np.maximum(log_spec, log_spec.max() - 8.0); (log_spec + 4.0) / 4.0, in float32.
  const float floor = max_log - 8.0f;
  const float zero_value = (std::max(zero_frame_log_, floor) + 4.0f) / 4.0f;
  for (int j = 0; j < n_mels; ++j) {
    float* dst = out + static_cast<std::size_t>(j) * static_cast<std::size_t>(F);
    for (std::int64_t f = 0; f < live; ++f) {
      const float v = logmel[static_cast<std::size_t>(f) * static_cast<std::size_t>(n_mels) + static_cast<std::size_t>(j)];
      dst[f] = (std::max(v, floor) + 4.0f) / 4.0f;
    }
    std::fill(dst + live, dst + F, zero_value);
  }
  return mask_frames(layout, static_cast<std::int64_t>(wave.size()));
}

Result<WhisperFeatures> WhisperFeatureExtractor::extract(std::span<const std::span<const float>> clips) const {
  std::vector<std::int64_t> lengths;
  for (const auto& c : clips) lengths.push_back(static_cast<std::int64_t>(c.size()));
  STOKER_ASSIGN_OR_RETURN(FeatureLayout layout, feature_layout(config_, lengths));
  WhisperFeatures out;
  out.clips = static_cast<std::int64_t>(clips.size());
  out.n_mels = config_.n_mels;
  out.frames = layout.frames;
  const std::size_t per_clip = static_cast<std::size_t>(config_.n_mels) * static_cast<std::size_t>(layout.frames);
  if (per_clip > (std::size_t{1} << 31) / clips.size()) return invalid_argument("whisper: features too large");
  out.input_features.resize(per_clip * clips.size());
  out.attention_mask.assign(static_cast<std::size_t>(layout.frames) * clips.size(), 0);
  for (std::size_t i = 0; i < clips.size(); ++i) {
    STOKER_ASSIGN_OR_RETURN(std::int64_t ones, extract(clips[i], layout, out.input_features.data() + i * per_clip));
    out.mask_sums.push_back(ones);
    std::fill_n(out.attention_mask.begin() + static_cast<std::ptrdiff_t>(i * static_cast<std::size_t>(layout.frames)),
                ones, 1);
  }
  return out;
}

}  // namespace stoker::audio
