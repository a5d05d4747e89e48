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
};

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

}  // namespace stoker::batch
