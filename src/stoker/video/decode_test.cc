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
