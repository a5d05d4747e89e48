// A training batch as it lies in arena memory: named tensors (dtype, shape, byte offset) inside
// one arena Block. The layout is a plain description so that it can cross a process boundary
// (the node-local server sends it over a socket) and be wrapped zero-copy (DLPack, torch).
// Tensors (HF names and dtypes; B = batch size, L = padded length):
//   input_ids int64 [B, L]; labels int64 [B, L] (-100 = ignored); attention_mask int64 [B, L];
//   position_ids int64 [R, B, L] (R rows of the model's position rule, e.g. 3 for mRoPE; [B, L]
//   for R = 1; padding = 1, HF's init value); the media tensors of the pipeline's modalities
//   (pixel_values float32|bfloat16 [rows, C·T·P·P] and image_grid_thw int64 [N, 3]; with videos
//   pixel_values_videos, video_grid_thw, second_per_grid_ts); sample_ids uint64 [B] (global
//   record ids). Padding is on the right with the model's pad id (model/family.h).
// Plain value; thread-compatible.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "stoker/batch/arena.h"

namespace stoker::batch {

enum class DType { kInt64, kUInt64, kFloat32, kBFloat16, kInt32, kUInt8 };
int dtype_size(DType t);

struct TensorView {
  std::string name;
  DType dtype = DType::kInt64;
  std::vector<std::int64_t> shape;
  std::uint64_t offset = 0;  // from the arena base
  std::uint64_t bytes() const;
};

struct BatchLayout {
  Block block;  // the arena block holding every tensor below
  std::vector<TensorView> tensors;
  std::uint64_t step = 0;        // 0-based batch index in this rank's stream
  std::uint64_t epoch = 0;
  const TensorView* find(const std::string& name) const;
};

// `tensors` placed one after another from block.offset, each at a 64-byte aligned offset; the
// block must be empty (size 0: not checked) or hold them all (a bug otherwise: abort).
// placed_bytes(tensors) is how large such a block must be.
BatchLayout place_tensors(std::vector<TensorView> tensors, Block block);
std::uint64_t placed_bytes(const std::vector<TensorView>& tensors);

}  // namespace stoker::batch
