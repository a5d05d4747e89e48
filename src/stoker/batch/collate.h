// Collation of a padded batch inside one arena block: make_layout() places the token tensors of
// batch.h and the media tensors the caller describes (64-byte aligned, in a fixed order) for a
// BatchShape; collate_row() writes one sample's ids / labels / attention mask / positions into
// its row and pads the rest on the right (the model's pad id, label −100, mask 0, position 1 —
// HF's values);
// write_sample_ids fills sample_ids. Media tensors are not written here: the pipeline's media
// write their rows and metadata (pipeline/media.h). Pure functions on caller memory; rows may be
// written concurrently from different threads. Sizes that do not fit are bugs (abort).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stoker/batch/batch.h"

namespace stoker::batch {

inline constexpr std::int64_t kLabelIgnore = -100;

struct BatchShape {
  std::int64_t batch_size = 0;   // rows B
  std::int64_t length = 0;       // padded length L
  // Rows of a sample's positions (the model's position rule): position_ids is [R, B, L] (3 for
  // mRoPE), or [B, L] for R = 1.
  int position_rows = 1;
  // position_ids' dtype: int64 (HF's), or float32 for a model whose positions are fractional
  // (Qwen3-Omni: transformers keeps its TMRoPE positions float32; model::Model::float_positions).
  DType position_dtype = DType::kInt64;
  // The media tensors (name, dtype, shape; offsets are set here): `media_front` right after the
  // token tensors, `media_back` after sample_ids.
  std::vector<TensorView> media_front, media_back;
};

// Tensors of batch.h at offsets from `block.offset` (the arena base); block.size is left as
// given. layout_bytes(shape) is how large the block must be.
BatchLayout make_layout(const BatchShape& shape, Block block);
std::uint64_t layout_bytes(const BatchShape& shape);

// One sample's token data. `positions` is R × ids.size(), row-major (R: the layout's position
// rows; mRoPE: RopeIndex::positions). Doubles hold both kinds exactly (int64 positions below 2^53,
// float32 ones always); the layout's position dtype decides what is written.
struct SampleRow {
  std::span<const std::int32_t> input_ids;
  std::span<const std::int32_t> labels;
  std::span<const double> positions;
};

// The index of the first value of `positions` that `dtype` does not hold exactly, or -1 if all
// fit: int64 — finite, whole, |x| <= 2^53 (a double is exact there); float32 — finite, within
// float32's range and a float32 value. Positions from outside the process (a cluster worker's
// doubles) are checked with this before collation: the cast of NaN, ±Inf or an out-of-range
// double is undefined, and a fraction in an int64 model would be truncated silently.
std::int64_t first_unrepresentable_position(std::span<const double> positions, DType dtype);

// `pad_id`: the model's (model::Model::pad_id).
void collate_row(std::uint8_t* arena_base, const BatchLayout& layout, std::int64_t row,
                 const SampleRow& sample, std::int64_t pad_id);
void write_sample_ids(std::uint8_t* arena_base, const BatchLayout& layout,
                      std::span<const std::uint64_t> ids);

}  // namespace stoker::batch
