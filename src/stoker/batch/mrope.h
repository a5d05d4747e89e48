// 3-D mRoPE position ids (`get_rope_index`, spec §5.1), the position rule of the Qwen-VL
// families (model/: each family fills a RopeConfig — its token ids and its temporal rule; this
// file names no model): text runs advance all three rows together; each vision run gets
// (t, h, w) grid coordinates on top of the position where it starts; the next text continues
// after the largest position so far. Output: 3 × L int64 (rows temporal, height, width) and
// rope_delta = max + 1 − L. Pure function; thread-safe. Errors: InvalidArgument (fewer grids
// than vision runs, a run whose pad count does not match its grid, bad merge size).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/text/labels.h"

namespace stoker::batch {

struct GridTHW {
  std::int64_t t = 1, h = 0, w = 0;
};

// Qwen2.5-VL video temporal index: t_idx = long(t · second_per_grid_t · tokens_per_second).
enum class TimeIndexMode {
  // Multiply in float32, then truncate (HF before the 4.5x "normalize type" block, and Qwen's
  // own fine-tune code). t·s·tps is evaluated as (t·s)·tps in float32, like the torch code.
  kFloatThenTruncate,
  // The trap in some 4.5x versions: second_per_grid_t is cast to int64 *before* multiplying,
  // so fractional values truncate (0.5 → 0: every frame of a 4-fps video gets t_idx 0).
  kIntCastFirst,
};

// How a video's temporal coordinate advances.
enum class TemporalRule {
  kFrameGroup,    // t (Qwen2-VL)
  kSeconds,       // t · second_per_grid_t · tokens_per_second, per time_mode (Qwen2.5-VL)
  kGroupPerRun,   // every temporal group its own run of t = 1 (Qwen3-VL: timestamps in text)
};

// The token ids and rules of a family (no defaults for the ids: the family sets them).
struct RopeConfig {
  TemporalRule temporal = TemporalRule::kFrameGroup;
  int spatial_merge_size = 2;
  int image_token_id = -1;
  int video_token_id = -1;
  int vision_start_token_id = -1;
  int tokens_per_second = 2;  // kSeconds: vision_config.tokens_per_second
  TimeIndexMode time_mode = TimeIndexMode::kFloatThenTruncate;
};

struct RopeIndex {
  std::int64_t length = 0;
  std::vector<std::int64_t> positions;  // row-major 3 × length
  std::int64_t rope_delta = 0;

  std::int64_t at(int row, std::int64_t i) const { return positions[row * length + i]; }
  std::span<const std::int64_t> row(int r) const {
    return std::span<const std::int64_t>(positions).subspan(r * length, length);
  }
};

// `video_grids`: one per video as the processor reports it ([grid_t, grid_h, grid_w]); with
// kGroupPerRun each video is split into grid_t runs of (1, h, w) here, matching the per-frame
// `<|vision_start|>` blocks in the ids (spec §2.3). `second_per_grid_ts`: kSeconds only, one
// per video (default 1.0). `attention_mask`: optional; masked positions get 1 (HF init value).
Result<RopeIndex> get_rope_index(std::span<const std::int32_t> input_ids,
                                 std::span<const GridTHW> image_grids,
                                 std::span<const GridTHW> video_grids, const RopeConfig& config,
                                 std::span<const double> second_per_grid_ts = {},
                                 std::span<const std::uint8_t> attention_mask = {});

// The same for a sample from text::build_sample: uses the grids of the media the sample kept
// (after truncation a prefix of `images` / `videos`).
Result<RopeIndex> get_rope_index(const text::TokenizedSample& sample,
                                 std::span<const text::VisionGrid> images,
                                 std::span<const text::VisionGrid> videos, const RopeConfig& config,
                                 std::span<const double> second_per_grid_ts = {});

}  // namespace stoker::batch
