// Collation of a padded batch inside one arena block: make_layout() places the tensors of
// batch.h (64-byte aligned, in a fixed order) for a BatchShape; collate_row() writes one sample's
// ids / labels / attention mask / mRoPE positions into its row and pads the rest on the right
// (pad id, label −100, mask 0, position 1 — HF's values); write_grids / write_sample_ids fill the
// small per-batch tensors. Pixel rows are not written here: the pipeline normalises + patchifies
// each image straight into pixel_values at pixel_row_offset(). Pure functions on caller memory;
// rows may be written concurrently from different threads. Sizes that do not fit are bugs (abort).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stoker/batch/batch.h"
#include "stoker/batch/mrope.h"

namespace stoker::batch {

inline constexpr std::int64_t kPadTokenId = 151643;  // <|endoftext|>
inline constexpr std::int64_t kLabelIgnore = -100;

struct BatchShape {
  std::int64_t batch_size = 0;   // rows B
  std::int64_t length = 0;       // padded length L
  std::int64_t images = 0;       // N
  std::int64_t pixel_rows = 0;   // sum of the images' grid_t·grid_h·grid_w
  std::int64_t pixel_cols = 0;   // C·T·P·P
  DType pixel_dtype = DType::kFloat32;
  // Videos (only when > 0 are their tensors placed): pixel_values_videos [video_rows, cols]
  // (pixel_dtype), video_grid_thw int64 [videos, 3], second_per_grid_ts float32 [videos].
  std::int64_t videos = 0;
  std::int64_t video_rows = 0;
};

// The video tensors for `videos` videos of `rows` rows in total (none when videos == 0),
// appended after a layout's image tensors (padded and packed layouts alike).
void append_video_tensors(std::vector<TensorView>* tensors, std::int64_t videos,
                          std::int64_t rows, std::int64_t cols, DType dtype);

// Tensors of batch.h at offsets from `block.offset` (the arena base); block.size is left as
// given. layout_bytes(shape) is how large the block must be.
BatchLayout make_layout(const BatchShape& shape, Block block);
std::uint64_t layout_bytes(const BatchShape& shape);

// One sample's token data. `positions` is 3 × ids.size(), row-major (RopeIndex::positions).
struct SampleRow {
  std::span<const std::int32_t> input_ids;
  std::span<const std::int32_t> labels;
  std::span<const std::int64_t> positions;
};

void collate_row(std::uint8_t* arena_base, const BatchLayout& layout, std::int64_t row,
                 const SampleRow& sample, std::int64_t pad_id = kPadTokenId);
void write_grids(std::uint8_t* arena_base, const BatchLayout& layout,
                 std::span<const GridTHW> grids);
void write_sample_ids(std::uint8_t* arena_base, const BatchLayout& layout,
                      std::span<const std::uint64_t> ids);
// Where image rows starting at `row` go inside pixel_values.
std::uint8_t* pixel_row_address(std::uint8_t* arena_base, const BatchLayout& layout,
                                std::int64_t row);
// Video grids and Qwen2.5-VL second_per_grid_ts (one per video, samples in order), and where
// video rows starting at `row` go inside pixel_values_videos.
void write_video_grids(std::uint8_t* arena_base, const BatchLayout& layout,
                       std::span<const GridTHW> grids, std::span<const double> second_per_grid_ts);
std::uint8_t* video_row_address(std::uint8_t* arena_base, const BatchLayout& layout,
                                std::int64_t row);

}  // namespace stoker::batch
