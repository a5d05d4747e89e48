#include "stoker/batch/collate.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace stoker::batch {
namespace {

TEST(CollateTest, PadsRightWithHfValues) {
  BatchShape shape{.batch_size = 2, .length = 4, .position_rows = 3,
                   .media_front = {{"pixel_values", DType::kFloat32, {4, 6}, 0},
                                   {"image_grid_thw", DType::kInt64, {1, 3}, 0}},
                   .media_back = {{"second_per_grid_ts", DType::kFloat32, {2}, 0}}};
  std::vector<std::uint8_t> mem(layout_bytes(shape) + 128, 0xEE);
  BatchLayout layout = make_layout(shape, {128, layout_bytes(shape)});
  for (const TensorView& t : layout.tensors) EXPECT_EQ(t.offset % 64, 0u) << t.name;
  std::vector<std::int32_t> ids0 = {1, 2, 3}, lab0 = {-100, 2, 3};
  std::vector<double> pos0 = {0, 1, 2, 0, 1, 2, 0, 1, 2};
  std::vector<std::int32_t> ids1 = {9, 8, 7, 6}, lab1 = {9, 8, 7, 6};
  std::vector<double> pos1 = {0, 1, 2, 3, 0, 1, 2, 3, 0, 5, 6, 7};
  collate_row(mem.data(), layout, 0, {ids0, lab0, pos0}, 151643);
  collate_row(mem.data(), layout, 1, {ids1, lab1, pos1}, 151643);
  std::vector<std::uint64_t> sids = {17, 4};
  write_sample_ids(mem.data(), layout, sids);
  auto i64 = [&](const char* name) {
    return reinterpret_cast<const std::int64_t*>(mem.data() + layout.find(name)->offset);
  };
  EXPECT_EQ(std::vector<std::int64_t>(i64("input_ids"), i64("input_ids") + 8),
            (std::vector<std::int64_t>{1, 2, 3, 151643, 9, 8, 7, 6}));
  EXPECT_EQ(std::vector<std::int64_t>(i64("labels"), i64("labels") + 8),
            (std::vector<std::int64_t>{-100, 2, 3, -100, 9, 8, 7, 6}));
  EXPECT_EQ(std::vector<std::int64_t>(i64("attention_mask"), i64("attention_mask") + 8),
            (std::vector<std::int64_t>{1, 1, 1, 0, 1, 1, 1, 1}));
  // [3, B, L]: row r of sample b at (r * B + b) * L.
  EXPECT_EQ(std::vector<std::int64_t>(i64("position_ids"), i64("position_ids") + 24),
            (std::vector<std::int64_t>{0, 1, 2, 1, 0, 1, 2, 3,  //
                                       0, 1, 2, 1, 0, 1, 2, 3,  //
                                       0, 1, 2, 1, 0, 5, 6, 7}));
  EXPECT_EQ(i64("sample_ids")[0], 17);
  EXPECT_EQ(layout.find("pixel_values")->bytes(), 4u * 6 * 4);
  // The order batches have always had: token tensors, the front media tensors, sample_ids, the
  // back ones.
  std::vector<std::string> names;
  for (const TensorView& t : layout.tensors) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"input_ids", "labels", "attention_mask", "position_ids",
                                             "pixel_values", "image_grid_thw", "sample_ids",
                                             "second_per_grid_ts"}));
}

// A model with 1-D positions: position_ids [B, L], padded with 1, and the model's pad id.
TEST(CollateTest, OnePositionRowIsBatchByLength) {
  BatchShape shape{.batch_size = 2, .length = 3, .position_rows = 1, .media_front = {},
                   .media_back = {}};
  std::vector<std::uint8_t> mem(layout_bytes(shape), 0xEE);
  BatchLayout layout = make_layout(shape, {0, layout_bytes(shape)});
  EXPECT_EQ(layout.find("position_ids")->shape, (std::vector<std::int64_t>{2, 3}));
  std::vector<std::int32_t> ids0 = {5, 6}, ids1 = {7, 8, 9};
  std::vector<double> pos0 = {0, 1}, pos1 = {0, 1, 2};
  collate_row(mem.data(), layout, 0, {ids0, ids0, pos0}, 42);
  collate_row(mem.data(), layout, 1, {ids1, ids1, pos1}, 42);
  auto i64 = [&](const char* name) {
    return reinterpret_cast<const std::int64_t*>(mem.data() + layout.find(name)->offset);
  };
  EXPECT_EQ(std::vector<std::int64_t>(i64("position_ids"), i64("position_ids") + 6),
            (std::vector<std::int64_t>{0, 1, 1, 0, 1, 2}));
  EXPECT_EQ(std::vector<std::int64_t>(i64("input_ids"), i64("input_ids") + 6),
            (std::vector<std::int64_t>{5, 6, 42, 7, 8, 9}));
}

// Qwen3-Omni's TMRoPE positions are float32 in transformers: position_ids float32, the values as
// given (fractions kept), padding 1.0; the other tensors as always.
TEST(CollateTest, FloatPositionsAreWrittenAsFloat32) {
  BatchShape shape{.batch_size = 2, .length = 3, .position_rows = 3,
                   .position_dtype = DType::kFloat32, .media_front = {}, .media_back = {}};
  std::vector<std::uint8_t> mem(layout_bytes(shape), 0xEE);
  BatchLayout layout = make_layout(shape, {0, layout_bytes(shape)});
  EXPECT_EQ(layout.find("position_ids")->dtype, DType::kFloat32);
  EXPECT_EQ(layout.find("position_ids")->bytes(), 3u * 2 * 3 * 4);
  EXPECT_EQ(layout.find("input_ids")->dtype, DType::kInt64);
  std::vector<std::int32_t> ids0 = {5, 6}, ids1 = {7, 8, 9};
  std::vector<double> pos0 = {0, 1, 0, 1, 0, 1};
  std::vector<double> pos1 = {0, 6.5, 16.5, 0, 1, 2, 0.25, 1, 3};  // float32-exact values
  collate_row(mem.data(), layout, 0, {ids0, ids0, pos0}, 42);
  collate_row(mem.data(), layout, 1, {ids1, ids1, pos1}, 42);
  const float* p = reinterpret_cast<const float*>(mem.data() + layout.find("position_ids")->offset);
  EXPECT_EQ(std::vector<float>(p, p + 18),
            (std::vector<float>{0, 1, 1, 0, 6.5f, 16.5f,  //
                                0, 1, 1, 0, 1, 2,         //
                                0, 1, 1, 0.25f, 1, 3}));
}

// What the engine checks before collating positions that came over the cluster wire (doubles):
// int64 positions whole, finite, exact (|x| <= 2^53); float32 ones finite float32 values.
TEST(CollateTest, UnrepresentablePositionsAreFound) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const double frac3 = static_cast<double>(2.0f / 3.0f * 13.0f);  // Qwen3-Omni's 8.666667f
  using V = std::vector<double>;
  EXPECT_EQ(first_unrepresentable_position(V{}, DType::kInt64), -1);
  EXPECT_EQ(first_unrepresentable_position(V{0, 1, -5, 9007199254740992.0}, DType::kInt64), -1);
  EXPECT_EQ(first_unrepresentable_position(V{0, 1, 2.5}, DType::kInt64), 2);
  EXPECT_EQ(first_unrepresentable_position(V{0, nan}, DType::kInt64), 1);
  EXPECT_EQ(first_unrepresentable_position(V{-inf, 0}, DType::kInt64), 0);
  EXPECT_EQ(first_unrepresentable_position(V{1e19}, DType::kInt64), 0);  // past int64
  EXPECT_EQ(first_unrepresentable_position(V{9007199254740994.0}, DType::kInt64), 0);  // past 2^53
  EXPECT_EQ(first_unrepresentable_position(V{0, 1, 2.5, frac3, static_cast<double>(1e30f), -7}, DType::kFloat32), -1);
  EXPECT_EQ(first_unrepresentable_position(V{0, 2.0 / 3.0}, DType::kFloat32), 1);  // not float32
  EXPECT_EQ(first_unrepresentable_position(V{nan}, DType::kFloat32), 0);
  EXPECT_EQ(first_unrepresentable_position(V{1, inf}, DType::kFloat32), 1);
  EXPECT_EQ(first_unrepresentable_position(V{1e39}, DType::kFloat32), 0);  // past float32's range
}

}  // namespace
}  // namespace stoker::batch
