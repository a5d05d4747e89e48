// The audio kind, over audio/: a record's audio part (one fetch). Planned at prepare from the
// container header (audio::probe, plan_clip: the 16 kHz length; a header whose frame count is
// an estimate — MP3, everything FFmpeg reads — is decoded once to know the length exactly, so
// the token count is never a guess), then per sample (plan_sample: plan_call on the sample's
// clips in order — Qwen3-Omni pads them to the longest, the others to the chunk length): the
// padded frames F, the clip's feature_attention_mask sum and its token count (the placeholder's
// run). Produced at emit: decode + channel mean + libsoxr (audio::load) and the Whisper log-mel
// (WhisperFeatureExtractor::extract) straight into its rows: input_features [clips, n_mels, F]
// (a clip = n_mels rows of F columns, in the batch's pixel dtype), and its row of
// feature_attention_mask int32 [clips, F]. A batch's F is its widest clip's (Qwen3-Omni); a
// narrower clip's frames are zero beyond its own F, its mask zero there (HF's own call pads
// the same way, with its padding frames' values instead of zeros: masked either way).
// Uint8 wire form: the 16 kHz waveform (float32), featurised on the receiver.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "stoker/audio/load.h"
#include "stoker/audio/plan.h"
#include "stoker/audio/processor.h"
#include "stoker/pipeline/media.h"

namespace stoker::pipeline {
namespace {

std::int64_t audio_columns(const MediaEnv& env);
Status plan_audio_sample(const MediaEnv& env, std::span<Medium* const> media);

const Modality kAudios = {
    .name = "audio",
    .rows_tensor = "input_features",
    .meta = {{"feature_attention_mask", batch::DType::kInt32, kBatchWidth}},
    .always = false,
    .columns = audio_columns,
    .rows_group = 128,
    .plan_sample = plan_audio_sample,
};

// The modality's nominal width: the model's padded frames (Qwen2-Audio 3000, Qwen2.5-Omni
// 30000); Qwen3-Omni's vary per clip (Medium::columns).
std::int64_t audio_columns(const MediaEnv& env) {
  if (env.audio == nullptr) return 0;
  const audio::WhisperConfig& c = env.audio->extractor().config();
  return c.pad_to_max_length ? c.n_samples() / 160 : 0;
}

// float32 → bfloat16, round to nearest even (finite values only: features are finite).
void to_bf16(const float* in, std::size_t n, std::uint8_t* out) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, &in[i], 4);
    const std::uint32_t r = u + 0x7FFFu + ((u >> 16) & 1u);
    const std::uint16_t h = static_cast<std::uint16_t>(r >> 16);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

class AudioMedium final : public Medium {
 public:
  AudioMedium(audio::LoadOptions options, std::int64_t samples, std::vector<std::uint8_t> bytes,
              bool in_video = false)
      : options_(options), samples_(samples), bytes_(std::move(bytes)), in_video_(in_video) {}
  bool in_video() const override { return in_video_; }

  const MediaKind& kind() const override;
  std::int64_t rows() const override { return n_mels_; }
  std::int64_t columns(const MediaEnv&) const override { return frames_; }
  text::VisionGrid grid() const override {
    text::VisionGrid g;
    g.tokens = tokens_;
    return g;
  }
  std::int64_t audio_frames() const override { return mask_; }
  std::uint64_t held_bytes() const override { return bytes_.size(); }
  // Decoding and resampling scale with the clip; the padding frames are nearly free.
  std::int64_t cost() const override { return samples_ / 4; }

  // The sample's call (plan_sample): padded frames, this clip's mask sum and tokens.
  void set_call(std::int64_t n_mels, std::int64_t frames, std::int64_t mask, std::int64_t tokens) {
    n_mels_ = n_mels;
    frames_ = frames;
    mask_ = mask;
    tokens_ = tokens;
  }
  std::int64_t samples() const { return samples_; }

  Status produce(const MediaEnv& env, image::PixelDType dtype, std::uint8_t* dst,
                 const EmitTrace&) const override {
    STOKER_ASSIGN_OR_RETURN(std::vector<float> wave, waveform(env));
    return featurise(env, wave, dtype, dst);
  }
  void write_meta(std::span<std::uint8_t* const> meta) const override {
    auto* mask = reinterpret_cast<std::int32_t*>(meta[0]);
    std::fill(mask, mask + mask_, 1);
    std::fill(mask + mask_, mask + frames_, 0);
  }
  void save(ByteWriter& w, bool with_bytes) const override {
    w.put(options_.offset_s);
    w.put(options_.duration_s);
    w.put<std::uint8_t>(in_video_ ? 1 : 0);
    for (std::int64_t v : {samples_, n_mels_, frames_, mask_, tokens_}) w.put(v);
    w.vec(with_bytes ? bytes_ : std::vector<std::uint8_t>());
  }
  std::uint64_t resized_bytes() const override { return static_cast<std::uint64_t>(samples_) * 4; }
  Status resize(const MediaEnv& env, std::uint8_t* dst) const override {
    STOKER_ASSIGN_OR_RETURN(std::vector<float> wave, waveform(env));
    std::memcpy(dst, wave.data(), wave.size() * 4);
    return ok_status();
  }
  void finish(const MediaEnv& env, const std::uint8_t* resized, image::PixelDType dtype,
              std::uint8_t* dst) const override {
    std::vector<float> wave(static_cast<std::size_t>(samples_));
    std::memcpy(wave.data(), resized, wave.size() * 4);
    // The waveform was checked against the plan where it was made; the features of a planned
    // length cannot fail.
    Status st = featurise(env, wave, dtype, dst);
    STOKER_CHECK(st.ok(), "audio: features of a checked waveform: " + st.error().to_string());
  }

  // Loaded from the wire (untrusted: bounded here).
  static Result<std::unique_ptr<Medium>> load(ByteReader& r) {
    audio::LoadOptions o;
    std::int64_t v[5];
    std::uint8_t in_video = 0;
    if (!r.get(&o.offset_s) || !r.get(&o.duration_s) || !r.get(&in_video) || in_video > 1) {
      return data_loss("audio plan");
    }
    for (std::int64_t& x : v) {
      if (!r.get(&x)) return data_loss("audio plan");
    }
    std::vector<std::uint8_t> bytes;
    if (!r.vec(&bytes)) return data_loss("audio plan");
    const std::int64_t samples = v[0], n_mels = v[1], frames = v[2], mask = v[3], tokens = v[4];
    const std::int64_t max_samples = std::int64_t{16000} * 3600 * 4;
    if (!std::isfinite(o.offset_s) || !std::isfinite(o.duration_s) || samples <= 0 ||
        samples > max_samples || n_mels != 128 || frames <= 0 || frames > max_samples / 160 ||
        mask < 0 || mask > frames || tokens < 0 || tokens > frames) {
      return data_loss("audio plan");
    }
    auto m = std::make_unique<AudioMedium>(o, samples, std::move(bytes), in_video == 1);
    m->set_call(n_mels, frames, mask, tokens);
    return std::unique_ptr<Medium>(std::move(m));
  }

 private:
  // The 16 kHz waveform, checked against the plan (the tokens were counted from it).
  Result<std::vector<float>> waveform(const MediaEnv& env) const {
    if (env.audio == nullptr) return failed_precondition("this model takes no audio");
    audio::LoadOptions o = options_;
    o.limits = env.audio->limits();
    STOKER_ASSIGN_OR_RETURN(audio::Waveform w, audio::load(bytes_, o));
    if (static_cast<std::int64_t>(w.samples.size()) != samples_) {
      return data_loss("audio: decoded " + std::to_string(w.samples.size()) +
                       " samples at 16 kHz, planned " + std::to_string(samples_));
    }
    return std::move(w.samples);
  }

  Status featurise(const MediaEnv& env, const std::vector<float>& wave, image::PixelDType dtype,
                   std::uint8_t* dst) const {
    const audio::FeatureLayout layout{frames_ * 160, frames_};
    const std::size_t n = static_cast<std::size_t>(n_mels_ * frames_);
    std::int64_t mask = 0;
    if (dtype == image::PixelDType::kFloat32) {
      STOKER_ASSIGN_OR_RETURN(mask, env.audio->extractor().extract(wave, layout, reinterpret_cast<float*>(dst)));
    } else {
      std::vector<float> tmp(n);
      STOKER_ASSIGN_OR_RETURN(mask, env.audio->extractor().extract(wave, layout, tmp.data()));
      to_bf16(tmp.data(), n, dst);
    }
    if (mask != mask_) {
      return internal_error("audio: mask sum " + std::to_string(mask) + ", planned " +
                            std::to_string(mask_));
    }
    return ok_status();
  }

  audio::LoadOptions options_;
  std::int64_t samples_ = 0;  // 16 kHz samples (exact: from the header, or from a decode)
  std::int64_t n_mels_ = 128, frames_ = 0, mask_ = 0, tokens_ = 0;
  std::vector<std::uint8_t> bytes_;
  bool in_video_ = false;
};

// An audio medium from a clip's bytes (an audio part, or a video's track).
Result<std::unique_ptr<Medium>> plan_clip_medium(const MediaEnv& env, const dataset::Part& part,
                                                 std::vector<std::uint8_t> bytes, bool in_video) {
  if (env.audio == nullptr) return failed_precondition("this model takes no audio");
  const audio::LoadOptions o = audio_load_options(*env.audio, part);
  STOKER_ASSIGN_OR_RETURN(audio::AudioInfo info, audio::probe(bytes, o.limits));
  STOKER_ASSIGN_OR_RETURN(audio::ClipPlan clip, audio::plan_clip(info, o));
  std::int64_t samples = clip.samples;
  if (!clip.exact) {
    // An estimated length (MP3, FFmpeg): the decode is the truth (≈1 ms per second of audio).
    STOKER_ASSIGN_OR_RETURN(audio::Waveform w, audio::load(bytes, o));
    samples = static_cast<std::int64_t>(w.samples.size());
    if (samples == 0) return data_loss("audio: no samples in the requested range");
  }
  return std::unique_ptr<Medium>(new AudioMedium(o, samples, std::move(bytes), in_video));
}

// The sample's clips in one feature-extractor call (audio/plan.h).
Status plan_audio_sample(const MediaEnv& env, std::span<Medium* const> media) {
  if (env.audio == nullptr) return failed_precondition("this model takes no audio");
  std::vector<std::int64_t> lengths;
  for (Medium* m : media) lengths.push_back(static_cast<AudioMedium*>(m)->samples());
  STOKER_ASSIGN_OR_RETURN(audio::CallPlan call, audio::plan_call(env.audio->model(), lengths));
  for (std::size_t i = 0; i < media.size(); ++i) {
    static_cast<AudioMedium*>(media[i])->set_call(call.n_mels, call.layout.frames,
                                                  call.mask_frames[i], call.tokens[i]);
  }
  return ok_status();
}

class AudioKind final : public MediaKind {
 public:
  std::string_view name() const override { return "audio"; }
  const Modality& modality() const override;
  bool takes(const dataset::Part& part) const override {
    return part.kind == dataset::Part::Kind::kAudio;
  }
  std::vector<std::string_view> refs(const dataset::Part& part) const override {
    return {part.value};
  }
  Result<std::unique_ptr<Medium>> plan(const MediaEnv& env, const dataset::Part& part,
                                       std::vector<std::vector<std::uint8_t>> bytes) const override {
    return plan_clip_medium(env, part, std::move(bytes[0]), false);
  }
  Result<std::unique_ptr<Medium>> load(ByteReader& r) const override {
    return AudioMedium::load(r);
  }
};

const AudioKind kAudioKind;

const Modality& AudioKind::modality() const { return kAudios; }
const MediaKind& AudioMedium::kind() const { return kAudioKind; }

}  // namespace

const MediaKind& audio_kind() { return kAudioKind; }

audio::LoadOptions audio_load_options(const audio::AudioProcessor& p, const dataset::Part& part) {
  audio::LoadOptions o;
  o.limits = p.limits();
  if (part.kind == dataset::Part::Kind::kVideo) {
    // The audio track of a video (use_audio_in_video): the video's own range.
    o.offset_s = part.video.video_start.value_or(0.0);
    if (part.video.video_end) o.duration_s = *part.video.video_end - o.offset_s;
  } else {
    o.offset_s = part.audio.audio_start.value_or(0.0);
    if (part.audio.audio_end) o.duration_s = *part.audio.audio_end - o.offset_s;
  }
  return o;
}

Result<std::unique_ptr<Medium>> plan_video_audio(const MediaEnv& env, const dataset::Part& part,
                                                 std::vector<std::uint8_t> bytes) {
  Result<std::unique_ptr<Medium>> m = plan_clip_medium(env, part, std::move(bytes), true);
  if (!m.ok()) return std::move(m.error().with_context("its audio track (use_audio_in_video)"));
  return m;
}

}  // namespace stoker::pipeline
