#include "stoker/batch/omni_rope.h"

#include <gtest/gtest.h>

#include <vector>

namespace stoker::batch {
namespace {

constexpr std::int32_t kVs = 151652, kVe = 151653, kAs = 151647, kAe = 151648, kA = 151646, kV = 151656;

// Worked by hand from modeling_qwen2_5_omni.py: a 2-frame video at spg 4.0 (fps 0.5; time
// indices 0 and 100) with 100 audio tokens (400 mask frames). The processor's chunks: video
// {0}, {100}; audio [0, 50), [50, 100) → V, A×50, V, A×50. The bos pair shares position 1; the
// eos pair goes after the *last chunk's* max (101), i.e. at 102 — the same temporal position as
// the second frame (102).
TEST(OmniRopeTest, Qwen25AudioInVideoChunksAndTheLastBlockQuirk) {
  const OmniRopeConfig c = OmniRopeConfig::qwen25_omni();
  const GridTHW video{2, 2, 2};
  const auto runs = audio_in_video_layout(c, video, 4.0, 100);
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_FALSE(runs[0].audio);
  EXPECT_EQ(runs[0].count, 1);
  EXPECT_TRUE(runs[1].audio);
  EXPECT_EQ(runs[1].count, 50);
  EXPECT_EQ(runs[2].count, 1);
  EXPECT_EQ(runs[3].count, 50);
  std::vector<std::int32_t> ids = {7, kVs, kAs, kV};
  ids.insert(ids.end(), 50, kA);
  ids.push_back(kV);
  ids.insert(ids.end(), 50, kA);
  ids.insert(ids.end(), {kAe, kVe, 9});
  const std::vector<GridTHW> videos = {video};
  const std::vector<double> spg = {4.0};
  const std::vector<std::int64_t> frames = {400};
  auto r = get_omni_rope_index(ids, {}, videos, spg, frames, true, c);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->at(0, 0), 0);
  EXPECT_EQ(r->at(0, 1), 1);
  EXPECT_EQ(r->at(0, 2), 1);
  EXPECT_EQ(r->at(0, 3), 2);   // first frame (t 0 + 2)
  EXPECT_EQ(r->at(1, 3), 2);
  EXPECT_EQ(r->at(0, 4), 2);   // first audio token
  EXPECT_EQ(r->at(0, 53), 51);
  EXPECT_EQ(r->at(0, 54), 102);  // second frame: 100 + 2
  EXPECT_EQ(r->at(2, 54), 2);
  EXPECT_EQ(r->at(0, 55), 52);
  EXPECT_EQ(r->at(0, 104), 101);
  EXPECT_EQ(r->at(0, 105), 102);  // eos pair after the last block's max
  EXPECT_EQ(r->at(0, 106), 102);
  EXPECT_EQ(r->at(0, 107), 103);
  EXPECT_EQ(r->rope_delta, 104.0 - 108.0);
}

// modeling_qwen3_omni_moe.py: spg 2.0 × 13 → frame times 0 and 26; 20 mask frames → 3 tokens;
// token-level merge V A A A V; two bos (0, 1) and two eos (after the last block: 29, 30).
TEST(OmniRopeTest, Qwen3AudioInVideoMergesTokenByToken) {
  const OmniRopeConfig c = OmniRopeConfig::qwen3_omni();
  EXPECT_EQ(omni_audio_tokens(OmniFamily::kQwen3Omni, 20), 3);
  const GridTHW video{2, 2, 2};
  const auto runs = audio_in_video_layout(c, video, 2.0, 3);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[1].count, 3);
  const std::vector<std::int32_t> ids = {kVs, kAs, kV, kA, kA, kA, kV, kAe, kVe};
  const std::vector<GridTHW> videos = {video};
  const std::vector<double> spg = {2.0};
  const std::vector<std::int64_t> frames = {20};
  auto r = get_omni_rope_index(ids, {}, videos, spg, frames, true, c);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const double t[] = {0, 1, 2, 2, 3, 4, 28, 29, 30};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(r->at(0, i), t[i]) << i;
  EXPECT_EQ(r->at(1, 6), 2);
}

TEST(OmniRopeTest, RefusesMediaWithoutTheirGridsOrLengths) {
  const OmniRopeConfig c = OmniRopeConfig::qwen25_omni();
  const std::vector<std::int32_t> ids = {kVs, kV, kVe, kAs, kA, kAe};
  const std::vector<GridTHW> videos = {{2, 2, 2}};  // 2 tokens, but the ids have 1
  const std::vector<std::int64_t> frames = {11};
  EXPECT_FALSE(get_omni_rope_index(ids, {}, videos, {}, frames, false, c).ok());
  const std::vector<GridTHW> one = {{1, 2, 2}};
  EXPECT_FALSE(get_omni_rope_index(ids, {}, one, {}, {}, false, c).ok());  // no audio length
  const std::vector<std::int32_t> last = {5, kVs};
  EXPECT_FALSE(get_omni_rope_index(last, {}, one, {}, {}, false, c).ok());
}

}  // namespace
}  // namespace stoker::batch
