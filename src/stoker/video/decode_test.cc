#include "stoker/video/decode.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" {
#include <libavutil/mem.h>
}

namespace stoker::video {
namespace {

TEST(VideoReader, RefusesGarbage) {
  std::vector<std::uint8_t> junk(4096, 0x5a);
  auto r = VideoReader::open(junk);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kDataLoss) << r.error().to_string();
  std::vector<std::uint8_t> empty;
  EXPECT_FALSE(VideoReader::open(empty).ok());
}

// Issue 30 §18: a PNG given as a video said "nframes should be in [2, 1]"; it says what it is.
TEST(VideoReader, AStillImageIsNotAVideo) {
  // A 2x2 RGB PNG (Pillow 9.4, Image.new("RGB", (2, 2), (200, 10, 10)).save(..., "PNG")).
  const std::vector<std::uint8_t> png = {
      0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
      0x52, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x08, 0x02, 0x00, 0x00, 0x00, 0xfd,
      0xd4, 0x9a, 0x73, 0x00, 0x00, 0x00, 0x16, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x3c,
      0xc1, 0xc5, 0xc5, 0xc0, 0xc0, 0xc0, 0xc4, 0xc0, 0xc0, 0xc0, 0xc0, 0xc0, 0x00, 0x00, 0x0b,
      0x38, 0x00, 0xe0, 0x11, 0xf4, 0xd5, 0xd6, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44,
      0xae, 0x42, 0x60, 0x82};
  auto r = VideoReader::open(png);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().to_string().find("still image (PNG), not a video"), std::string::npos)
      << r.error().to_string();
}

// Fuzz finding (tests/data/fuzz/README.md): a 3,427-byte MP4 whose header made the mov demuxer
// ask for 943 MB inside avformat_open_input. It must fail with a reason, and FFmpeg must refuse
// any single allocation over 448 MiB once a reader was opened (decode.cc) — the bound that keeps
// a hostile header from reserving a gibibyte.
TEST(VideoReader, HeaderClaimingAGigabyteIsRefusedNotAllocated) {
  std::ifstream in(std::string(STOKER_SOURCE_DIR_FOR_TESTS) +
                       "/tests/data/fuzz/video-mov-943mb-alloc.mp4",
                   std::ios::binary);
  ASSERT_TRUE(in.good());
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_EQ(bytes.size(), 3427u);
  auto r = VideoReader::open(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.error().message().empty());
  void* big = av_malloc(std::size_t{449} << 20);
  EXPECT_EQ(big, nullptr) << "av_max_alloc not in effect";
  av_free(big);
  void* fine = av_malloc(std::size_t{64} << 20);  // a frame's worth still works
  EXPECT_NE(fine, nullptr);
  av_free(fine);
}

}  // namespace
}  // namespace stoker::video
