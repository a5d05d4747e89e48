#include "stoker/video/decode.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace stoker::video
