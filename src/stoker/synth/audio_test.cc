// synth's audio encoders × stoker's audio decoder (libsndfile / FFmpeg): every `--audio` kind
// decodes with the rate and channel count it was made with, about its length, deterministically.
#include "stoker/synth/audio.h"

#include <gtest/gtest.h>

#include <cmath>

#include "stoker/audio/decode.h"
#include "stoker/synth/video.h"

namespace stoker::synth {
namespace {

TEST(SynthAudioTest, EveryKindDecodesAsSpecifiedAndIsDeterministic) {
  for (int k = 0; k < 14; ++k) {
    const AudioKind kind = audio_kind(k, 5);
    const AudioSpec& a = kind.audio;
    Result<std::vector<std::uint8_t>> bytes = Error(ErrorCode::kInternal, "unset");
    if (kind.video) {
      VideoSpec v{.codec = "h264", .width = 64, .height = 48, .frames = static_cast<int>(std::lround(a.seconds * 25)),
                  .gop = 25, .bframes = 0, .audio = true, .seed = a.seed};
      v.audio_rate = a.sample_rate;
      v.audio_channels = a.channels;
      v.audio_content = a.content;
      bytes = encode_video(v);
    } else {
      bytes = encode_audio(a);
      auto again = encode_audio(a);
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(*bytes, *again) << audio_kind_name(kind);
    }
    ASSERT_TRUE(bytes.ok()) << audio_kind_name(kind) << ": " << bytes.error().to_string();
    audio::AudioLimits lim;
    auto d = audio::decode_all(*bytes, lim);
    ASSERT_TRUE(d.ok()) << audio_kind_name(kind) << ": " << d.error().to_string();
    EXPECT_EQ(d->info.sample_rate, a.sample_rate) << audio_kind_name(kind);
    EXPECT_EQ(d->info.channels, a.channels) << audio_kind_name(kind);
    const double want = a.seconds * a.sample_rate;
    const bool lossless = a.format == "wav" || a.format == "wav24" || a.format == "wav-float" || a.format == "flac";
    if (lossless && !kind.video) {
      EXPECT_EQ(static_cast<double>(d->frames), std::round(want)) << audio_kind_name(kind);
    } else {  // encoder delay and padding (AAC, MP3, Opus)
      EXPECT_NEAR(static_cast<double>(d->frames), want, 0.05 * want + 4096) << audio_kind_name(kind);
    }
    EXPECT_EQ(d->info.backend, a.format == "m4a" || kind.video ? audio::Backend::kFfmpeg : audio::Backend::kSndfile)
        << audio_kind_name(kind);
  }
}

TEST(SynthAudioTest, ContentIsWhatItSays) {
  AudioSpec s{.content = "silence", .sample_rate = 8000, .channels = 2, .seconds = 0.5};
  for (float v : render_audio(s)) EXPECT_EQ(v, 0.0f);
  s.content = "speech";
  const std::vector<float> x = render_audio(s);
  float peak = 0;
  for (float v : x) peak = std::max(peak, std::abs(v));
  EXPECT_NEAR(peak, 0.5f, 1e-6f);  // normalised to 0.5 on channel 0
  EXPECT_FALSE(AudioSpec{.format = "aiff"}.validate().ok());
  EXPECT_FALSE(AudioSpec{.sample_rate = 500}.validate().ok());
}

}  // namespace
}  // namespace stoker::synth
