#include "stoker/batch/mrope.h"

#include <gtest/gtest.h>

namespace stoker::batch {
namespace {

using Row = std::vector<std::int64_t>;

constexpr std::int32_t T = 100, X = 101, VS = 151652, VE = 151653, IP = 151655, VP = 151656;

// The rules of the three Qwen-VL families (model/qwen_vl_family.cc sets them from the model).
enum class ModelFamily { kQwen2VL, kQwen25VL, kQwen3VL };
RopeConfig cfg(ModelFamily f) {
  RopeConfig c;
  c.temporal = f == ModelFamily::kQwen2VL    ? TemporalRule::kFrameGroup
               : f == ModelFamily::kQwen25VL ? TemporalRule::kSeconds
                                             : TemporalRule::kGroupPerRun;
  c.image_token_id = IP;
  c.video_token_id = VP;
  c.vision_start_token_id = VS;
  return c;
}

Row row(const RopeIndex& r, int i) {
  auto s = r.row(i);
  return Row(s.begin(), s.end());
}

// ids: T T VS P P P P VE T, image grid 1×4×4, merge 2 → 2×2 = 4 tokens.
// text [0,3) → 0,1,2; vision at base 3: (t,h,w) = (0,0,0),(0,0,1),(0,1,0),(0,1,1) + 3;
// next = 4 + 1 = 5 → VE 5, T 6. delta = 6 + 1 − 9 = −2. Same for all three models (t = 0).
TEST(MropeTest, ImageHandWorkedAllModels) {
  std::vector<std::int32_t> ids = {T, T, VS, IP, IP, IP, IP, VE, T};
  std::vector<GridTHW> images = {{1, 4, 4}};
  for (ModelFamily f : {ModelFamily::kQwen2VL, ModelFamily::kQwen25VL, ModelFamily::kQwen3VL}) {
    RopeIndex r = *get_rope_index(ids, images, {}, cfg(f));
    EXPECT_EQ(row(r, 0), (Row{0, 1, 2, 3, 3, 3, 3, 5, 6}));
    EXPECT_EQ(row(r, 1), (Row{0, 1, 2, 3, 3, 4, 4, 5, 6}));
    EXPECT_EQ(row(r, 2), (Row{0, 1, 2, 3, 4, 3, 4, 5, 6}));
    EXPECT_EQ(r.rope_delta, -2);
  }
}

// ids: T VS P×8 VE T, video grid 2×4×4, merge 2 → gt 2, gh 2, gw 2 = 8 tokens; base = 2.
TEST(MropeTest, Qwen2VideoTemporalIndexIsT) {
  std::vector<std::int32_t> ids = {T, VS, VP, VP, VP, VP, VP, VP, VP, VP, VE, T};
  std::vector<GridTHW> videos = {{2, 4, 4}};
  RopeIndex r = *get_rope_index(ids, {}, videos, cfg(ModelFamily::kQwen2VL));
  EXPECT_EQ(row(r, 0), (Row{0, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 5}));
  EXPECT_EQ(row(r, 1), (Row{0, 1, 2, 2, 3, 3, 2, 2, 3, 3, 4, 5}));
  EXPECT_EQ(row(r, 2), (Row{0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 4, 5}));
  EXPECT_EQ(r.rope_delta, 5 + 1 - 12);
}

// Qwen2.5-VL: t_idx = long(t · second_per_grid_t · tokens_per_second), tps = 2.
TEST(MropeTest, Qwen25VideoTemporalIndexScalesWithSeconds) {
  std::vector<std::int32_t> ids = {T, VS, VP, VP, VP, VP, VP, VP, VP, VP, VE, T};
  std::vector<GridTHW> videos = {{2, 4, 4}};
  RopeConfig c = cfg(ModelFamily::kQwen25VL);
  // Default second_per_grid_t = 1.0 → t_idx 0, 2; the max is base + 2 = 4 → VE 5, T 6.
  RopeIndex r = *get_rope_index(ids, {}, videos, c);
  EXPECT_EQ(row(r, 0), (Row{0, 1, 2, 2, 2, 2, 4, 4, 4, 4, 5, 6}));
  EXPECT_EQ(row(r, 1), (Row{0, 1, 2, 2, 3, 3, 2, 2, 3, 3, 5, 6}));
  EXPECT_EQ(r.rope_delta, 6 + 1 - 12);
  // 0.5 s per grid (4 fps): t_idx = long(1·0.5·2) = 1, like Qwen2-VL.
  std::vector<double> half = {0.5};
  r = *get_rope_index(ids, {}, videos, c, half);
  EXPECT_EQ(row(r, 0), (Row{0, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 5}));
  // The int-cast trap: long(0.5) = 0 first, so both frames get t_idx 0.
  c.time_mode = TimeIndexMode::kIntCastFirst;
  r = *get_rope_index(ids, {}, videos, c, half);
  EXPECT_EQ(row(r, 0), (Row{0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 4, 5}));
}

// Float-then-truncate with 1/3 s per grid (6 fps): grid 4×2×2 → gh = gw = 1, 4 tokens.
// float32: 1·0.33333334·2 = 0.6666667 → 0; 2·… = 1.3333334 → 1; 3·0.33333334 = 1.0 (rounded
// in float32) ·2 = 2.0 → 2. So t_idx = 0, 0, 1, 2.
TEST(MropeTest, Qwen25FractionalSecondsTruncate) {
  std::vector<std::int32_t> ids = {VS, VP, VP, VP, VP, VE};
  std::vector<GridTHW> videos = {{4, 2, 2}};
  std::vector<double> third = {2.0 / 6.0};
  RopeIndex r = *get_rope_index(ids, {}, videos, cfg(ModelFamily::kQwen25VL), third);
  // base = 1 (VS at 0).
  EXPECT_EQ(row(r, 0), (Row{0, 1, 1, 2, 3, 4}));
  EXPECT_EQ(row(r, 1), (Row{0, 1, 1, 1, 1, 4}));
  EXPECT_EQ(row(r, 2), (Row{0, 1, 1, 1, 1, 4}));
}

// Qwen3-VL: the 2×4×4 video is two runs of (1,4,4), each after its timestamp text and its own
// <|vision_start|>: T X VS P×4 VE X VS P×4 VE T (16 ids).
// text [0,3) 0,1,2; run 1 at base 3 (t 0): t 3333, h 3344, w 3434; next 5.
// text [7,10) VE X VS → 5,6,7; run 2 at base 8: t 8888, h 8899, w 8989; next 10 → VE 10, T 11.
TEST(MropeTest, Qwen3VideoSplitsPerTemporalGroup) {
  std::vector<std::int32_t> ids = {T, X, VS, VP, VP, VP, VP, VE, X, VS, VP, VP, VP, VP, VE, T};
  std::vector<GridTHW> videos = {{2, 4, 4}};
  RopeIndex r = *get_rope_index(ids, {}, videos, cfg(ModelFamily::kQwen3VL));
  EXPECT_EQ(row(r, 0), (Row{0, 1, 2, 3, 3, 3, 3, 5, 6, 7, 8, 8, 8, 8, 10, 11}));
  EXPECT_EQ(row(r, 1), (Row{0, 1, 2, 3, 3, 4, 4, 5, 6, 7, 8, 8, 9, 9, 10, 11}));
  EXPECT_EQ(row(r, 2), (Row{0, 1, 2, 3, 4, 3, 4, 5, 6, 7, 8, 9, 8, 9, 10, 11}));
  EXPECT_EQ(r.rope_delta, 11 + 1 - 16);
}

// Image then video, order decided by position in the ids: T VS IP VE VS VP VP VE.
// image 1×2×2 → 1 token; video (Qwen2-VL) 2×2×2 → 2 tokens (t 0,1).
// text [0,2) 0,1; image at 2 → (2,2,2); next 3; text [3,5) VE VS → 3,4; video base 5: t 5,6,
// h 5,5, w 5,5; next 7 → VE 7.
TEST(MropeTest, MixedImageAndVideoInOrder) {
  std::vector<std::int32_t> ids = {T, VS, IP, VE, VS, VP, VP, VE};
  std::vector<GridTHW> images = {{1, 2, 2}}, videos = {{2, 2, 2}};
  RopeIndex r = *get_rope_index(ids, images, videos, cfg(ModelFamily::kQwen2VL));
  EXPECT_EQ(row(r, 0), (Row{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(row(r, 1), (Row{0, 1, 2, 3, 4, 5, 5, 7}));
  EXPECT_EQ(row(r, 2), (Row{0, 1, 2, 3, 4, 5, 5, 7}));
}

TEST(MropeTest, TextOnlyIsArangeAndMaskedPositionsAreOne) {
  std::vector<std::int32_t> ids = {T, T, T, T, T};
  RopeIndex r = *get_rope_index(ids, {}, {}, cfg(ModelFamily::kQwen25VL));
  for (int k = 0; k < 3; ++k) EXPECT_EQ(row(r, k), (Row{0, 1, 2, 3, 4}));
  EXPECT_EQ(r.rope_delta, 0);
  std::vector<std::uint8_t> mask = {0, 0, 1, 1, 1};
  r = *get_rope_index(ids, {}, {}, cfg(ModelFamily::kQwen25VL), {}, mask);
  EXPECT_EQ(row(r, 0), (Row{1, 1, 0, 1, 2}));
  EXPECT_EQ(r.rope_delta, 2 + 1 - 5);
}

TEST(MropeTest, MismatchesAreErrors) {
  std::vector<std::int32_t> ids = {T, VS, IP, IP, IP, VE};
  std::vector<GridTHW> images = {{1, 4, 4}};  // needs 4 pads, 3 present
  Result<RopeIndex> r = get_rope_index(ids, images, {}, cfg(ModelFamily::kQwen2VL));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("needs 4 pad tokens but 3 follow"), std::string::npos)
      << r.error().message();
  r = get_rope_index(ids, {}, {}, cfg(ModelFamily::kQwen2VL));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("no grid"), std::string::npos);
  std::vector<GridTHW> odd = {{1, 3, 3}};
  EXPECT_FALSE(get_rope_index(ids, odd, {}, cfg(ModelFamily::kQwen2VL)).ok());
}

// A truncated sample keeps one of two images: only the first grid is used.
TEST(MropeTest, FromTokenizedSampleUsesTheKeptMedia) {
  text::TokenizedSample s;
  s.input_ids = {T, VS, IP, IP, IP, IP, VE, T};
  s.num_images = 1;
  std::vector<text::VisionGrid> images = {{1, 4, 4, {}}, {1, 2, 2, {}}};
  RopeIndex r = *get_rope_index(s, images, {}, cfg(ModelFamily::kQwen2VL));
  // text [0,2) 0,1; image base 2: t 2222, h 2233, w 2323; next 4 → VE 4, T 5.
  EXPECT_EQ(row(r, 1), (Row{0, 1, 2, 2, 3, 3, 4, 5}));
  EXPECT_EQ(row(r, 2), (Row{0, 1, 2, 3, 2, 3, 4, 5}));
  s.num_images = 3;
  EXPECT_FALSE(get_rope_index(s, images, {}, cfg(ModelFamily::kQwen2VL)).ok());
}

}  // namespace
}  // namespace stoker::batch
