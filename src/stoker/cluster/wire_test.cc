// The messages between ranks: a result survives encode → decode field by field, with a medium of
// every kind (an image, a video file, a frame-list video, an audio clip; with and without their encoded bytes:
// the encoded wire and the others), and a damaged one — every truncation, trailing bytes, a lying
// count, sizes that disagree, an unknown media kind — is DataLoss, never a read past the end or a
// huge allocation.
#include "stoker/cluster/wire.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "stoker/audio/processor.h"
#include "stoker/synth/audio.h"
#include "stoker/synth/media.h"
#include "stoker/synth/pattern.h"
#include "stoker/synth/video.h"
#include "stoker/video/processor.h"

namespace stoker::cluster {
namespace {

std::vector<std::uint8_t> jpeg(int w, int h, std::uint64_t seed) {
  synth::Rng rng(seed);
  image::RgbImage rgb = synth::render_content(synth::Content::kPhoto, w, h, rng);
  return *synth::encode_variant(synth::Variant::kJpeg420, rgb, rng);
}

struct Env {
  image::ImageProcessor image = *image::ImageProcessor::create({});
  video::VideoProcessor video = *video::VideoProcessor::create({});
  // Qwen3-Omni's rules: the clip's width is its own (Medium::columns), not the modality's.
  audio::AudioProcessor audio = *audio::AudioProcessor::create(audio::AudioModel::kQwen3Omni);
  pipeline::MediaEnv env{&image, &video, &audio};
};
const Env& env() {
  static const Env e;
  return e;
}

std::unique_ptr<pipeline::Medium> plan(const dataset::Part& part,
                                       std::vector<std::vector<std::uint8_t>> bytes) {
  const pipeline::MediaKind* kind = pipeline::kind_for(part);
  EXPECT_NE(kind, nullptr);
  Result<std::unique_ptr<pipeline::Medium>> m = kind->plan(env().env, part, std::move(bytes));
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  return std::move(m).value();
}

// An image, a video file (synth's H.264) and a video of three frames.
SampleResult sample() {
  SampleResult r;
  r.ticket = 77;
  pipeline::Prepared& p = r.prepared;
  p.item.seq = 5;
  p.item.sample = 42;
  p.tokens.input_ids = {1, 2, 3, 151655, 151655, 4};
  p.tokens.labels = {-100, -100, -100, -100, -100, 4};
  p.tokens.vision.push_back({.video = false, .media_index = 0, .group = 0, .begin = 3, .count = 2});
  p.tokens.num_images = 1;
  p.tokens.num_videos = 2;
  p.tokens.num_messages = 2;
  p.positions.assign(18, 7);
  // Qwen3-Omni's float32 TMRoPE positions keep their fractions (t · 2/3 s · 13 = 8.666667f):
  // the wire carries the doubles bit for bit.
  p.positions[7] = static_cast<double>(1.0f * (2.0f / 3.0f) * 13.0f);
  p.positions[8] = static_cast<double>(2.0f * (2.0f / 3.0f) * 13.0f) + 12.0;
  dataset::Part image;
  image.kind = dataset::Part::Kind::kImage;
  image.value = "a.jpg";
  p.media.push_back(plan(image, {jpeg(100, 60, 1)}));
  synth::VideoSpec spec;
  spec.width = 64;
  spec.height = 48;
  spec.frames = 12;
  dataset::Part file;
  file.kind = dataset::Part::Kind::kVideo;
  file.value = "v.mp4";
  p.media.push_back(plan(file, {*synth::encode_video(spec)}));
  dataset::Part frames;
  frames.kind = dataset::Part::Kind::kVideo;
  frames.frames = {"f0", "f1", "f2"};
  p.media.push_back(plan(frames, {jpeg(80, 80, 2), jpeg(80, 80, 3), jpeg(80, 80, 4)}));
  dataset::Part clip;
  clip.kind = dataset::Part::Kind::kAudio;
  clip.value = "a.flac";
  synth::AudioSpec aspec;
  aspec.format = "flac";
  aspec.sample_rate = 22050;
  aspec.channels = 2;
  aspec.seconds = 1.3;
  p.media.push_back(plan(clip, {*synth::encode_audio(aspec)}));
  pipeline::Medium* const audio_media[] = {p.media.back().get()};
  EXPECT_TRUE(p.media.back()->modality()
                  .plan_sample(env().env, std::span<pipeline::Medium* const>(audio_media))
                  .ok());
  r.payloads = {12345, 0, 777, 99};
  return r;
}

std::vector<std::uint8_t> saved(const pipeline::Medium& m, bool with_bytes) {
  ByteWriter w;
  m.save(w, with_bytes);
  return w.take();
}

TEST(ClusterWire, ResultRoundTripsWithEveryMediaKind) {
  const SampleResult in = sample();
  for (bool with_bytes : {true, false}) {
    Result<SampleResult> out = decode_result(encode(in, with_bytes));
    ASSERT_TRUE(out.ok()) << out.error().to_string();
    const pipeline::Prepared& a = in.prepared;
    const pipeline::Prepared& b = out->prepared;
    EXPECT_EQ(out->ticket, 77u);
    EXPECT_EQ(out->payloads, in.payloads);
    EXPECT_EQ(b.item.sample, 42u);
    EXPECT_EQ(b.tokens.input_ids, a.tokens.input_ids);
    EXPECT_EQ(b.tokens.labels, a.tokens.labels);
    ASSERT_EQ(b.tokens.vision.size(), 1u);
    EXPECT_EQ(b.tokens.vision[0].begin, 3);
    EXPECT_EQ(b.tokens.vision[0].count, 2);
    EXPECT_EQ(b.tokens.num_messages, 2);
    EXPECT_EQ(b.positions, a.positions);
    ASSERT_EQ(b.media.size(), 4u);
    for (std::size_t j = 0; j < 4; ++j) {
      EXPECT_EQ(&b.media[j]->kind(), &a.media[j]->kind()) << j;
      EXPECT_EQ(b.media[j]->rows(), a.media[j]->rows()) << j;
      EXPECT_EQ(b.media[j]->resized_bytes(), a.media[j]->resized_bytes()) << j;
      EXPECT_EQ(b.media[j]->second_per_grid(), a.media[j]->second_per_grid()) << j;
      // The plan (and the bytes, on the encoded wire) exactly.
      EXPECT_EQ(saved(*b.media[j], true), saved(*a.media[j], with_bytes)) << j;
    }
    EXPECT_EQ(b.media[0]->modality().name, "image");
    EXPECT_EQ(b.media[1]->modality().name, "video");
    EXPECT_EQ(b.media[2]->modality().name, "video");
    EXPECT_EQ(b.media[3]->modality().name, "audio");
    EXPECT_EQ(b.media[3]->columns(env().env), a.media[3]->columns(env().env));
    EXPECT_EQ(b.media[3]->audio_frames(), a.media[3]->audio_frames());
    EXPECT_EQ(b.media[3]->grid().tokens, a.media[3]->grid().tokens);
    EXPECT_GT(a.media[3]->grid().tokens, 0);
    EXPECT_FALSE(b.failure.has_value());
  }
}

TEST(ClusterWire, EveryKindProducesTheSameRowsFromTheWire) {
  // A medium decoded from the encoded wire produces the rows the original does; from the uint8
  // wire, finish() of the original's resized pixels gives them too.
  const SampleResult in = sample();
  Result<SampleResult> out = decode_result(encode(in, true));
  ASSERT_TRUE(out.ok());
  for (std::size_t j = 0; j < 4; ++j) {
    const pipeline::Medium& a = *in.prepared.media[j];
    const pipeline::Medium& b = *out->prepared.media[j];
    const std::size_t n = static_cast<std::size_t>(a.rows() * a.columns(env().env));
    std::vector<float> want(n), got(n, -1), finished(n, -2);
    ASSERT_TRUE(a.produce(env().env, image::PixelDType::kFloat32,
                          reinterpret_cast<std::uint8_t*>(want.data()), {}).ok());
    ASSERT_TRUE(b.produce(env().env, image::PixelDType::kFloat32,
                          reinterpret_cast<std::uint8_t*>(got.data()), {}).ok());
    EXPECT_EQ(got, want) << j;
    std::vector<std::uint8_t> resized(a.resized_bytes());
    ASSERT_TRUE(a.resize(env().env, resized.data()).ok());
    b.finish(env().env, resized.data(), image::PixelDType::kFloat32,
             reinterpret_cast<std::uint8_t*>(finished.data()));
    EXPECT_EQ(finished, want) << j;
    EXPECT_EQ(payload_bytes(a, Wire::kFloat, env().env, image::PixelDType::kFloat32), n * 4);
    EXPECT_EQ(payload_bytes(a, Wire::kFloat, env().env, image::PixelDType::kBFloat16), n * 2);
    EXPECT_EQ(payload_bytes(a, Wire::kUint8, env().env, image::PixelDType::kFloat32), resized.size());
    EXPECT_EQ(payload_bytes(a, Wire::kEncoded, env().env, image::PixelDType::kFloat32), 0u);
    EXPECT_TRUE(b.fits(env().env).ok()) << j;
    // --finish device: an image's or a video's uint8 form is its resized pixels as they are, made
    // in place (produce) or copied from the uint8 wire (finish); audio stays float.
    if (pipeline::rows_dtype(a.modality(), image::PixelDType::kUInt8) == image::PixelDType::kUInt8) {
      const std::uint64_t u8n = payload_bytes(a, Wire::kFloat, env().env, image::PixelDType::kUInt8);
      ASSERT_EQ(u8n, resized.size()) << j;
      std::vector<std::uint8_t> made(u8n + 16, 0xEE), copied(u8n + 16, 0xEE);
      ASSERT_TRUE(b.produce(env().env, image::PixelDType::kUInt8, made.data(), {}).ok());
      b.finish(env().env, resized.data(), image::PixelDType::kUInt8, copied.data());
      EXPECT_TRUE(std::equal(resized.begin(), resized.end(), made.begin())) << j;
      EXPECT_TRUE(std::equal(resized.begin(), resized.end(), copied.begin())) << j;
      for (std::size_t k = u8n; k < made.size(); ++k) ASSERT_EQ(made[k] & copied[k], 0xEE) << j;
    }
  }
  EXPECT_EQ(in.prepared.media[0]->resized_bytes(), 112u * 56 * 3);  // smart_resize of 100 × 60
  EXPECT_FALSE(parse_wire("fp16").ok());
}

// A plan whose sizes disagree with its grid (an image 28 pixels wider than grid_w·P; a video
// with a temporal group more than its frames make, or narrower frames) loads — the wire cannot know
// the processor — but fits() refuses it, so the receiver fails the sample instead of letting
// produce/finish write past the medium's rows.
TEST(ClusterWire, PlansThatDisagreeWithTheProcessorDoNotFit) {
  const SampleResult in = sample();
  auto reload = [](const pipeline::Medium& m, const std::function<void(std::vector<std::uint8_t>&)>& edit) {
    ByteWriter w;
    m.save(w, true);
    std::vector<std::uint8_t> bytes = w.take();
    edit(bytes);
    ByteReader r(bytes);
    return m.kind().load(r);
  };
  auto set32 = [](std::vector<std::uint8_t>& b, std::size_t at, std::int32_t v) {
    std::memcpy(b.data() + at, &v, 4);
  };
  auto get32 = [](const std::vector<std::uint8_t>& b, std::size_t at) {
    std::int32_t v;
    std::memcpy(&v, b.data() + at, 4);
    return v;
  };
  // The image: {src_w, src_h, width, height, grid_t, grid_h, grid_w, orientation} int32s first.
  const pipeline::Medium& image = *in.prepared.media[0];
  auto same = reload(image, [](std::vector<std::uint8_t>&) {});
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE((*same)->fits(env().env).ok());
  auto wider = reload(image, [&](std::vector<std::uint8_t>& b) { set32(b, 8, get32(b, 8) + 28); });
  ASSERT_TRUE(wider.ok());
  Status st = (*wider)->fits(env().env);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().to_string().find("does not fit"), std::string::npos) << st.error().to_string();
  std::vector<std::uint8_t> rows(static_cast<std::size_t>((*wider)->rows() * 3 * 14 * 14), 0);
  EXPECT_FALSE((*wider)->produce(env().env, image::PixelDType::kUInt8, rows.data(), {}).ok());
  // The video file: its plan starts with total_frames (int64), video_fps (double), the indices
  // (a u64 count + int64s), sample_fps (double), then {width, height, src_w, src_h, grid_t,
  // grid_h, grid_w} int32s.
  const pipeline::Medium& video = *in.prepared.media[1];
  std::size_t at = 0;
  {
    ByteWriter w;
    video.save(w, true);
    const std::vector<std::uint8_t> b = w.take();
    std::uint64_t n;
    std::memcpy(&n, b.data() + 16, 8);
    at = 16 + 8 + 8 * n + 8;
  }
  auto more_groups = reload(video, [&](std::vector<std::uint8_t>& b) { set32(b, at + 16, get32(b, at + 16) + 1); });
  auto narrower = reload(video, [&](std::vector<std::uint8_t>& b) { set32(b, at, get32(b, at) - 28); });
  for (auto* r : {&more_groups, &narrower}) {
    ASSERT_TRUE(r->ok());
    Status s = (**r)->fits(env().env);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().to_string().find("video plan does not fit"), std::string::npos);
    std::vector<std::uint8_t> out(static_cast<std::size_t>((**r)->rows() * env().env.video->columns()), 0);
    EXPECT_FALSE((**r)->produce(env().env, image::PixelDType::kUInt8, out.data(), {}).ok());
  }
}

TEST(ClusterWire, FailureRoundTrips) {
  SampleResult in;
  in.ticket = 3;
  in.prepared.failure = pipeline::SampleFailure{9, "data.jsonl", 10, pipeline::FailureStage::kDecode,
                                                 ErrorCode::kDataLoss, "bad"};
  Result<SampleResult> out = decode_result(encode(in, false));
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->prepared.failure.has_value());
  EXPECT_EQ(out->prepared.failure->file, "data.jsonl");
  EXPECT_EQ(out->prepared.failure->stage, pipeline::FailureStage::kDecode);
  EXPECT_EQ(out->prepared.failure->code, ErrorCode::kDataLoss);
  EXPECT_EQ(out->prepared.failure->reason, "bad");
}

TEST(ClusterWire, DamagedMessagesAreDataLoss) {
  const std::vector<std::uint8_t> good = encode(sample(), false);
  for (std::size_t n = 0; n < good.size(); ++n) {
    std::vector<std::uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    Result<SampleResult> r = decode_result(cut);
    ASSERT_FALSE(r.ok()) << "truncated to " << n;
    EXPECT_EQ(r.error().code(), ErrorCode::kDataLoss);
  }
  std::vector<std::uint8_t> longer = good;
  longer.push_back(0);
  EXPECT_FALSE(decode_result(longer).ok());
  // A lying element count (the input_ids length, right after the header) asks for more than the
  // message holds: refused before any allocation.
  std::vector<std::uint8_t> lying = good;
  const std::size_t ids_count = 8 + 8 + 8 + 1;
  for (int i = 0; i < 8; ++i) lying[ids_count + i] = 0xFF;
  EXPECT_FALSE(decode_result(lying).ok());
  // Payloads for another number of media; an unknown media kind.
  SampleResult bad = sample();
  bad.payloads.push_back(1);
  EXPECT_FALSE(decode_result(encode(bad, false)).ok());
  SampleResult one;
  one.prepared.media.push_back(std::move(bad.prepared.media[0]));
  std::vector<std::uint8_t> kind = encode(one, false);
  const std::size_t id_at = 8 + 8 + 8 + 1 + 8 + 8 + 8 + 4 + 4 + 4 + 1 + 8 + 4;
  ASSERT_EQ(kind[id_at], pipeline::kind_id(one.prepared.media[0]->kind()));
  kind[id_at] = 250;
  EXPECT_FALSE(decode_result(kind).ok());
  EXPECT_FALSE(decode_request({1, 2, 3}).ok());
}

}  // namespace
}  // namespace stoker::cluster
