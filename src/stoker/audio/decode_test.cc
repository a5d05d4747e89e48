#include "stoker/audio/decode.h"

#include <gtest/gtest.h>
#include <sndfile.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "stoker/audio/load.h"

namespace stoker::audio {
namespace {

void put16(std::vector<std::uint8_t>& b, std::uint16_t v) {
  b.push_back(static_cast<std::uint8_t>(v));
  b.push_back(static_cast<std::uint8_t>(v >> 8));
}
void put32(std::vector<std::uint8_t>& b, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void tag(std::vector<std::uint8_t>& b, const char* t) { b.insert(b.end(), t, t + 4); }

// A RIFF/WAVE file by hand: fmt (format 1 = PCM, 3 = IEEE float) and a data chunk whose header
// may claim more bytes than it holds.
std::vector<std::uint8_t> wav(int format, int channels, std::uint32_t rate, int bits,
                              const std::vector<std::uint8_t>& data, std::uint32_t claimed = 0) {
  std::vector<std::uint8_t> b;
  const std::uint32_t data_size = claimed ? claimed : static_cast<std::uint32_t>(data.size());
  tag(b, "RIFF");
  put32(b, 4 + 8 + 16 + 8 + data_size);
  tag(b, "WAVE");
  tag(b, "fmt ");
  put32(b, 16);
  put16(b, static_cast<std::uint16_t>(format));
  put16(b, static_cast<std::uint16_t>(channels));
  put32(b, rate);
  put32(b, rate * static_cast<std::uint32_t>(channels * bits / 8));
  put16(b, static_cast<std::uint16_t>(channels * bits / 8));
  put16(b, static_cast<std::uint16_t>(bits));
  tag(b, "data");
  put32(b, data_size);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

std::vector<std::uint8_t> pcm16(const std::vector<std::int16_t>& s) {
  std::vector<std::uint8_t> d;
  for (std::int16_t v : s) put16(d, static_cast<std::uint16_t>(v));
  return d;
}

std::vector<std::uint8_t> f32(const std::vector<float>& s) {
  std::vector<std::uint8_t> d(s.size() * 4);
  std::memcpy(d.data(), s.data(), d.size());
  return d;
}

// A FLAC written by libsndfile into memory (virtual I/O): `seconds` of one sample value.
std::vector<std::uint8_t> flac(double seconds, int rate, float value) {
  struct Out {
    std::vector<std::uint8_t> data;
    sf_count_t pos = 0;
  } out;
  SF_VIRTUAL_IO vio{
      [](void* u) -> sf_count_t { return static_cast<sf_count_t>(static_cast<Out*>(u)->data.size()); },
      [](sf_count_t off, int whence, void* u) -> sf_count_t {
        auto* o = static_cast<Out*>(u);
        o->pos = whence == SEEK_SET ? off : whence == SEEK_CUR ? o->pos + off : static_cast<sf_count_t>(o->data.size()) + off;
        return o->pos;
      },
      [](void* p, sf_count_t n, void* u) -> sf_count_t {
        auto* o = static_cast<Out*>(u);
        const sf_count_t k = std::max<sf_count_t>(0, std::min<sf_count_t>(n, static_cast<sf_count_t>(o->data.size()) - o->pos));
        std::memcpy(p, o->data.data() + o->pos, static_cast<std::size_t>(k));
        o->pos += k;
        return k;
      },
      [](const void* p, sf_count_t n, void* u) -> sf_count_t {
        auto* o = static_cast<Out*>(u);
        if (static_cast<std::size_t>(o->pos + n) > o->data.size()) o->data.resize(static_cast<std::size_t>(o->pos + n));
        std::memcpy(o->data.data() + o->pos, p, static_cast<std::size_t>(n));
        o->pos += n;
        return n;
      },
      [](void* u) -> sf_count_t { return static_cast<Out*>(u)->pos; }};
  SF_INFO info{};
  info.samplerate = rate;
  info.channels = 1;
  info.format = SF_FORMAT_FLAC | SF_FORMAT_PCM_16;
  SNDFILE* sf = sf_open_virtual(&vio, SFM_WRITE, &info, &out);
  EXPECT_NE(sf, nullptr) << sf_strerror(nullptr);
  std::vector<float> block(4096, value);
  sf_count_t left = static_cast<sf_count_t>(seconds * rate);
  while (left > 0) {
    const sf_count_t n = std::min<sf_count_t>(left, 4096);
    sf_writef_float(sf, block.data(), n);
    left -= n;
  }
  sf_close(sf);
  return out.data;
}

TEST(AudioDecodeTest, Pcm16WavIsNormalisedLikeSoundfile) {
  const auto bytes = wav(1, 1, 8000, 16, pcm16({0, 16384, -32768, 32767, -1}));
  auto d = decode_all(bytes);
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->info.backend, Backend::kSndfile);
  EXPECT_EQ(d->info.container, "WAV");
  EXPECT_EQ(d->info.sample_rate, 8000);
  EXPECT_EQ(d->frames, 5);
  EXPECT_EQ(d->samples, (std::vector<float>{0.f, 0.5f, -1.f, 32767.f / 32768.f, -1.f / 32768.f}));
}

TEST(AudioDecodeTest, StereoLoadAveragesChannelsBeforeResampling) {
  // 16 kHz stereo: no resampling, so the output is exactly the float32 channel mean.
  const auto bytes = wav(1, 2, 16000, 16, pcm16({1000, 3000, -2000, 2000, 32767, 32767, 5, 6}));
  auto w = load(bytes);
  ASSERT_TRUE(w.ok()) << w.error().to_string();
  ASSERT_EQ(w->samples.size(), 4u);
  EXPECT_EQ(w->samples[0], (1000.f / 32768.f + 3000.f / 32768.f) / 2.f);
  EXPECT_EQ(w->samples[1], 0.f);
  EXPECT_EQ(w->samples[3], (5.f / 32768.f + 6.f / 32768.f) / 2.f);
}

TEST(AudioDecodeTest, OffsetAndDurationFollowLibrosa) {
  std::vector<std::int16_t> s(100);
  for (int i = 0; i < 100; ++i) s[static_cast<std::size_t>(i)] = static_cast<std::int16_t>(i * 100);
  const auto bytes = wav(1, 1, 16000, 16, pcm16(s));
  LoadOptions o;
  o.offset_s = 10.7 / 16000;    // int(offset · sr) = 10
  o.duration_s = 20.9 / 16000;  // int(duration · sr) = 20
  auto w = load(bytes, o);
  ASSERT_TRUE(w.ok()) << w.error().to_string();
  ASSERT_EQ(w->samples.size(), 20u);
  EXPECT_EQ(w->samples[0], 1000.f / 32768.f);
  EXPECT_EQ(w->samples[19], 2900.f / 32768.f);
  o.offset_s = 200.0 / 16000;
  EXPECT_EQ(load(bytes, o).error().code(), ErrorCode::kDataLoss);  // starts past the end
}

TEST(AudioBadInputTest, NanOrInfinityInAFloatWav) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float bad : {nan, inf, -inf}) {
    auto d = decode_all(wav(3, 1, 16000, 32, f32({0.1f, 0.2f, bad, 0.3f})));
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().code(), ErrorCode::kDataLoss);
    EXPECT_NE(d.error().message().find("frame 2"), std::string::npos) << d.error().message();
  }
}

// Fuzz finding (2026-12-02): finite float samples near FLT_MAX overflow in libsoxr's filter (or
// in the channel sum) and came out as inf; refused with a reason.
TEST(AudioBadInputTest, HugeFiniteFloatsOverflowToARefusal) {
  std::vector<float> s(4410, 0.25f);
  for (int i = 100; i < 140; ++i) s[static_cast<std::size_t>(i)] = 3.3e38f;
  auto resampled = load(wav(3, 1, 22050, 32, f32(s)));
  ASSERT_FALSE(resampled.ok());
  EXPECT_EQ(resampled.error().code(), ErrorCode::kDataLoss);
  EXPECT_NE(resampled.error().message().find("not finite"), std::string::npos) << resampled.error().message();
  auto mixed = load(wav(3, 2, 16000, 32, f32({3.3e38f, 3.3e38f, 0.1f, 0.2f})));  // 16 kHz: the mean overflows
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().message().find("not finite at sample 0"), std::string::npos) << mixed.error().message();
}

TEST(AudioBadInputTest, AbsurdRatesAndChannelCounts) {
  auto slow = decode_all(wav(1, 1, 1, 16, pcm16({1, 2, 3})));
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.error().code(), ErrorCode::kInvalidArgument) << slow.error().to_string();
  auto fast = decode_all(wav(1, 1, 50'000'000, 16, pcm16({1, 2, 3})));
  ASSERT_FALSE(fast.ok());
  auto many = decode_all(wav(1, 200, 16000, 16, pcm16(std::vector<std::int16_t>(400, 1))));
  ASSERT_FALSE(many.ok());
  EXPECT_EQ(many.error().code(), ErrorCode::kInvalidArgument) << many.error().to_string();
  EXPECT_NE(many.error().message().find("200 channels"), std::string::npos);
}

TEST(AudioBadInputTest, EmptyZeroLengthTruncatedGarbage) {
  EXPECT_EQ(decode_all({}).error().code(), ErrorCode::kDataLoss);
  auto zero = decode_all(wav(1, 1, 16000, 16, {}));
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().code(), ErrorCode::kDataLoss);
  // The data chunk claims 2 s but holds 50 samples; and one that claims ~75 hours.
  for (std::uint32_t claimed : {64000u, 0xF0000000u}) {
    auto cut = decode_all(wav(1, 1, 16000, 16, pcm16(std::vector<std::int16_t>(50, 7)), claimed));
    ASSERT_FALSE(cut.ok());
    EXPECT_EQ(cut.error().code(), ErrorCode::kDataLoss);
    EXPECT_NE(cut.error().message().find("truncated"), std::string::npos) << cut.error().message();
  }
  std::mt19937 rng(1);
  std::vector<std::uint8_t> junk(5000);
  for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
  auto g = decode_all(junk);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code(), ErrorCode::kDataLoss) << g.error().to_string();
  // A FLAC cut in the middle of its frames.
  auto f = flac(3, 16000, 0.25f);
  f.resize(f.size() * 2 / 3);
  auto cf = decode_all(f);
  ASSERT_FALSE(cf.ok());
  EXPECT_EQ(cf.error().code(), ErrorCode::kDataLoss) << cf.error().to_string();
}

TEST(AudioBadInputTest, LongSilenceIsCappedBeforeItIsDecoded) {
  // 20 minutes of one value compress to a few KB of FLAC: a decompression bomb for the cap.
  const auto bomb = flac(1200, 8000, 0.0f);
  EXPECT_LT(bomb.size(), 400000u);
  AudioLimits limits;
  limits.max_duration_s = 60;
  const auto t0 = std::chrono::steady_clock::now();
  auto d = decode_all(bomb, limits);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), ErrorCode::kResourceExhausted) << d.error().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  auto p = probe(bomb, limits);
  EXPECT_EQ(p.error().code(), ErrorCode::kResourceExhausted);
  limits.max_duration_s = 1300;
  auto ok = probe(bomb, limits);
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  EXPECT_EQ(ok->frames, 1200 * 8000);
  EXPECT_TRUE(ok->frames_exact);
}

}  // namespace
}  // namespace stoker::audio
