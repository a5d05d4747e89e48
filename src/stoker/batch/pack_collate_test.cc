#include "stoker/batch/pack_collate.h"

#include <gtest/gtest.h>

#include <vector>

namespace stoker::batch {
namespace {

struct Mem {
  std::vector<std::uint8_t> bytes;
  BatchLayout layout;
  template <typename T>
  std::vector<T> get(const char* name) const {
    const TensorView* t = layout.find(name);
    EXPECT_NE(t, nullptr) << name;
    if (t == nullptr) return {};
    const T* p = reinterpret_cast<const T*>(bytes.data() + t->offset);
    return std::vector<T>(p, p + t->bytes() / sizeof(T));
  }
};

// Two samples: A = 3 tokens (labels on its last two), B = 2 tokens (label on its last).
const std::vector<std::int32_t> kIdsA = {10, 11, 12}, kLabA = {-100, 11, 12};
const std::vector<double> kPosA = {0, 1, 2, 0, 1, 5, 0, 1, 7};
const std::vector<std::int32_t> kIdsB = {20, 21}, kLabB = {-100, 21};
const std::vector<double> kPosB = {0, 1, 0, 3, 0, 4};

Mem pack(PackShape shape) {
  Mem m;
  std::vector<SampleRow> rows = {{kIdsA, kLabA, kPosA}, {kIdsB, kLabB, kPosB}};
  shape.sequences = 2;
  shape.tokens = packed_length(shape.format, shape.align, 3) + packed_length(shape.format, shape.align, 2);
  shape.media_front = {{"pixel_values", DType::kFloat32, {4, 6}, 0},
                       {"image_grid_thw", DType::kInt64, {1, 3}, 0}};
  m.bytes.assign(pack_layout_bytes(shape) + 64, 0xEE);
  m.layout = make_pack_layout(shape, {64, pack_layout_bytes(shape)});
  for (const TensorView& t : m.layout.tensors) EXPECT_EQ(t.offset % 64, 0u) << t.name;
  std::vector<std::uint64_t> ids = {7, 3};
  collate_pack(m.bytes.data(), m.layout, shape, rows, ids, 151643);
  return m;
}

TEST(PackCollateTest, HuggingFaceVarlenWithFourPositionRows) {
  Mem m = pack({.format = PackFormat::kHF, .position_rows = 4});
  EXPECT_EQ(m.layout.find("attention_mask"), nullptr);
  EXPECT_EQ(m.layout.find("input_ids")->shape, (std::vector<std::int64_t>{1, 5}));
  EXPECT_EQ(m.get<std::int64_t>("input_ids"), (std::vector<std::int64_t>{10, 11, 12, 20, 21}));
  // Unshifted; −100 at every sub-sequence's first position (B's first label was −100 already).
  EXPECT_EQ(m.get<std::int64_t>("labels"), (std::vector<std::int64_t>{-100, 11, 12, -100, 21}));
  EXPECT_EQ(m.layout.find("position_ids")->shape, (std::vector<std::int64_t>{4, 1, 5}));
  EXPECT_EQ(m.get<std::int64_t>("position_ids"),
            (std::vector<std::int64_t>{0, 1, 2, 0, 1,    // text row: arange per sub-sequence
                                       0, 1, 2, 0, 1,    // mRoPE t of A, then of B
                                       0, 1, 5, 0, 3,    // h
                                       0, 1, 7, 0, 4})); // w
  EXPECT_EQ(m.get<std::int32_t>("cu_seq_lens_q"), (std::vector<std::int32_t>{0, 3, 5}));
  EXPECT_EQ(m.get<std::int32_t>("cu_seq_lens_k"), (std::vector<std::int32_t>{0, 3, 5}));
  EXPECT_TRUE(m.layout.find("max_length_q")->shape.empty());
  EXPECT_EQ(m.get<std::int64_t>("max_length_q"), (std::vector<std::int64_t>{3}));
  EXPECT_EQ(m.get<std::int64_t>("max_length_k"), (std::vector<std::int64_t>{3}));
  EXPECT_EQ(m.get<std::uint64_t>("sample_ids"), (std::vector<std::uint64_t>{7, 3}));
  EXPECT_EQ(m.layout.find("pixel_values")->shape, (std::vector<std::int64_t>{4, 6}));
}

// float32 positions (Qwen3-Omni): the text row's arange and the samples' rows as float32.
TEST(PackCollateTest, HuggingFaceFloatPositions) {
  Mem m = pack({.format = PackFormat::kHF, .position_rows = 4, .position_dtype = DType::kFloat32});
  EXPECT_EQ(m.layout.find("position_ids")->dtype, DType::kFloat32);
  EXPECT_EQ(m.get<float>("position_ids"),
            (std::vector<float>{0, 1, 2, 0, 1, 0, 1, 2, 0, 1, 0, 1, 5, 0, 3, 0, 1, 7, 0, 4}));
  EXPECT_EQ(m.get<std::int64_t>("input_ids"), (std::vector<std::int64_t>{10, 11, 12, 20, 21}));
}

TEST(PackCollateTest, HuggingFaceThreeRowsAreTheMropeRowsAlone) {
  Mem m = pack({.format = PackFormat::kHF, .position_rows = 3});
  EXPECT_EQ(m.layout.find("position_ids")->shape, (std::vector<std::int64_t>{3, 1, 5}));
  EXPECT_EQ(m.get<std::int64_t>("position_ids"),
            (std::vector<std::int64_t>{0, 1, 2, 0, 1, 0, 1, 5, 0, 3, 0, 1, 7, 0, 4}));
}

// A model with 1-D positions: HF's position_ids is [1, N], the samples' own positions.
TEST(PackCollateTest, HuggingFaceOneRowSamples) {
  PackShape shape{.format = PackFormat::kHF, .sample_rows = 1, .position_rows = 4};
  std::vector<double> pa = {0, 1, 2}, pb = {0, 1};
  std::vector<SampleRow> rows = {{kIdsA, kLabA, pa}, {kIdsB, kLabB, pb}};
  shape.sequences = 2;
  shape.tokens = 5;
  Mem m;
  m.bytes.assign(pack_layout_bytes(shape), 0xEE);
  m.layout = make_pack_layout(shape, {0, pack_layout_bytes(shape)});
  std::vector<std::uint64_t> ids = {7, 3};
  collate_pack(m.bytes.data(), m.layout, shape, rows, ids, 9);
  EXPECT_EQ(m.layout.find("position_ids")->shape, (std::vector<std::int64_t>{1, 5}));
  EXPECT_EQ(m.get<std::int64_t>("position_ids"), (std::vector<std::int64_t>{0, 1, 2, 0, 1}));
  EXPECT_EQ(m.get<std::int64_t>("labels"), (std::vector<std::int64_t>{-100, 11, 12, -100, 21}));
}

TEST(PackCollateTest, MegatronThdShiftsLabelsAndAlignsSubSequences) {
  Mem m = pack({.format = PackFormat::kMegatron, .align = 4});
  // A: 3 → 4 tokens, B: 2 → 4 tokens; T = 8.
  EXPECT_EQ(m.layout.find("input_ids")->shape, (std::vector<std::int64_t>{1, 8}));
  EXPECT_EQ(m.get<std::int64_t>("input_ids"),
            (std::vector<std::int64_t>{10, 11, 12, 151643, 20, 21, 151643, 151643}));
  // labels[t] = label of t + 1 inside the sub-sequence; the last real token and the gap: −100.
  EXPECT_EQ(m.get<std::int64_t>("labels"),
            (std::vector<std::int64_t>{11, 12, -100, -100, 21, -100, -100, -100}));
  EXPECT_EQ(m.get<float>("loss_mask"), (std::vector<float>{1, 1, 0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(m.get<std::int64_t>("position_ids"), (std::vector<std::int64_t>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(m.get<std::int32_t>("cu_seqlens_q"), (std::vector<std::int32_t>{0, 3, 5}));
  EXPECT_EQ(m.get<std::int32_t>("cu_seqlens_kv"), (std::vector<std::int32_t>{0, 3, 5}));
  EXPECT_EQ(m.get<std::int32_t>("cu_seqlens_q_padded"), (std::vector<std::int32_t>{0, 4, 8}));
  EXPECT_EQ(m.get<std::int32_t>("cu_seqlens_kv_padded"), (std::vector<std::int32_t>{0, 4, 8}));
  EXPECT_EQ(m.get<std::int32_t>("max_seqlen_q"), (std::vector<std::int32_t>{4}));
  EXPECT_EQ(m.get<std::int32_t>("max_seqlen_kv"), (std::vector<std::int32_t>{4}));
  EXPECT_EQ(m.get<std::uint64_t>("sample_ids"), (std::vector<std::uint64_t>{7, 3}));
}

TEST(PackCollateTest, MegatronWithoutAlignmentHasNoGaps) {
  Mem m = pack({.format = PackFormat::kMegatron, .align = 1});
  EXPECT_EQ(m.get<std::int64_t>("labels"), (std::vector<std::int64_t>{11, 12, -100, 21, -100}));
  EXPECT_EQ(m.get<std::int32_t>("cu_seqlens_q_padded"), (std::vector<std::int32_t>{0, 3, 5}));
}

}  // namespace
}  // namespace stoker::batch
