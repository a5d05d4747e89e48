// Collation of one pack — whole samples concatenated into a single row — inside one arena
// block, in the two forms trainers consume (spec/next-capabilities.md §A1, §A6;
// spec/qwen-vl.md §5.2–5.3):
//   Hugging Face varlen (PackFormat::kHF): input_ids / labels int64 [1, N] (labels unshifted,
//     −100 at every sub-sequence's first position), position_ids int64 [4, 1, N] (row 0 arange
//     per sub-sequence, rows 1–3 the sample's own mRoPE rows) or [3, 1, N], cu_seq_lens_q/_k
//     int32 [k+1], max_length_q/_k int64 [] (0-d), no attention_mask; N = Σ lengths, no padding.
//   Megatron THD (PackFormat::kMegatron): input_ids int64 [1, T], labels int64 [1, T] shifted
//     per sub-sequence (labels[t] = next token's label, the last of each −100), loss_mask
//     float32 [1, T], position_ids int64 [1, T] (arange over each aligned sub-sequence, so an
//     alignment gap continues its sequence's positions), cu_seqlens_q/_kv int32 [k+1] (real
//     lengths), cu_seqlens_q_padded/_kv_padded int32 [k+1] (offsets in the row), max_seqlen_q/_kv
//     int32 [] (longest aligned sub-sequence); each sub-sequence padded to a multiple of `align`
//     with the pad id (label −100, loss 0); T = Σ aligned lengths.
//   Both: the media tensors the caller describes (pixel_values [rows, C·T·P·P], image_grid_thw
//     int64 [n_img, 3], ...: written by the pipeline's media), sample_ids uint64 [k] (one per
//     sub-sequence).
// Pure functions on caller memory. Sizes that do not fit are bugs (abort).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stoker/batch/batch.h"
#include "stoker/batch/collate.h"

namespace stoker::batch {

enum class PackFormat { kHF, kMegatron };

struct PackShape {
  PackFormat format = PackFormat::kHF;
  int sample_rows = 3;               // rows of a sample's positions (the model's rule: 3 mRoPE, 1)
  int position_rows = 4;             // HF with 3-row samples: 4 (text row + mRoPE) or 3 (mRoPE
                                     // only); 1-row samples: position_ids [1, N], the samples' own
  DType position_dtype = DType::kInt64;  // HF: int64, or float32 (collate.h BatchShape); Megatron's
                                        // arange positions are int64 always
  std::int64_t align = 1;            // Megatron: sub-sequence length multiple
  std::int64_t sequences = 0;        // k
  std::int64_t tokens = 0;           // row length: N (HF) or T (Megatron, aligned)
  // Media tensors as in BatchShape (collate.h): after the token tensors / after sample_ids.
  std::vector<TensorView> media_front, media_back;
};

// The row length a sub-sequence of `length` tokens takes in this format.
std::int64_t packed_length(PackFormat format, std::int64_t align, std::int64_t length);

BatchLayout make_pack_layout(const PackShape& shape, Block block);
std::uint64_t pack_layout_bytes(const PackShape& shape);

// Writes every token tensor of the pack (ids, labels, loss mask, positions, cu_seqlens, max
// lengths) and the sample ids; media tensors are written by the caller. `samples` in pack order;
// their lengths must sum to the shape's.
void collate_pack(std::uint8_t* arena_base, const BatchLayout& layout, const PackShape& shape,
                  std::span<const SampleRow> samples, std::span<const std::uint64_t> sample_ids,
                  std::int64_t pad_id);

}  // namespace stoker::batch
