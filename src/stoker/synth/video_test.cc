// The synth video encoder checked by the video decoder (an independent FFmpeg demux/decode path
// is the parity test's job: tests/python/test_video_parity.py decodes these files with PyAV).
#include "stoker/synth/video.h"

#include <gtest/gtest.h>

#include <set>

#include "stoker/video/decode.h"

namespace stoker::synth {
namespace {

video::StreamInfo info_of(const std::vector<std::uint8_t>& bytes) {
  auto r = video::VideoReader::open(bytes);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? (*r)->info() : video::StreamInfo{};
}

TEST(SynthVideo, FramesGopAndSize) {
  VideoSpec s{.codec = "h264", .width = 96, .height = 64, .frames = 30, .gop = 10, .bframes = 2};
  auto bytes = encode_video(s);
  ASSERT_TRUE(bytes.ok()) << bytes.error().to_string();
  video::StreamInfo i = info_of(*bytes);
  EXPECT_EQ(i.pts.size(), 30u);
  EXPECT_EQ(i.keyframes, 3);
  EXPECT_EQ(i.width, 96);
  EXPECT_EQ(i.height, 64);
  EXPECT_DOUBLE_EQ(i.average_fps, 25.0);
  // Same spec, same bytes.
  EXPECT_EQ(*encode_video(s), *bytes);
}

TEST(SynthVideo, VfrOddRotationAudio) {
  VideoSpec s{.codec = "h264", .width = 33, .height = 21, .fps_num = 24000, .fps_den = 1001,
              .frames = 20, .gop = 20, .bframes = 1, .vfr = true, .audio = true, .rotation = 90};
  auto bytes = encode_video(s);
  ASSERT_TRUE(bytes.ok()) << bytes.error().to_string();
  video::StreamInfo i = info_of(*bytes);
  EXPECT_EQ(i.pts.size(), 20u);
  EXPECT_EQ(i.width, 33);
  EXPECT_EQ(i.rotation, 90);
  // Irregular durations: not all steps equal.
  std::set<std::int64_t> steps;
  for (std::size_t k = 1; k < i.pts.size(); ++k) steps.insert(i.pts[k] - i.pts[k - 1]);
  EXPECT_GT(steps.size(), 3u);
}

TEST(SynthVideo, OtherCodecsAndDegenerateFiles) {
  for (const char* codec : {"mpeg4", "vp9"}) {
    if (!can_encode(codec)) continue;
    VideoSpec s{.codec = codec, .width = 64, .height = 48, .frames = 12, .gop = 6, .bframes = 0};
    auto bytes = encode_video(s);
    ASSERT_TRUE(bytes.ok()) << codec << ": " << bytes.error().to_string();
    EXPECT_EQ(info_of(*bytes).pts.size(), 12u) << codec;
  }
  VideoSpec one{.codec = "h264", .width = 64, .height = 48, .frames = 1, .gop = 1, .bframes = 0};
  EXPECT_EQ(info_of(*encode_video(one)).pts.size(), 1u);
  VideoSpec zero{.codec = "h264", .width = 64, .height = 48, .frames = 0, .gop = 1, .bframes = 0};
  auto z = encode_video(zero);
  ASSERT_TRUE(z.ok());
  EXPECT_FALSE(video::VideoReader::open(*z).ok());
  VideoSpec odd{.codec = "mpeg4", .width = 33, .height = 21};
  EXPECT_FALSE(encode_video(odd).ok());
}

}  // namespace
}  // namespace stoker::synth
