// TMRoPE for Qwen2.5-Omni and Qwen3-Omni: the processor's token layout of a video whose audio
// track is used (`use_audio_in_video`), and the position ids of transformers' `get_rope_index`
// of those models (modeling_qwen2_5_omni.py / modeling_qwen3_omni_moe.py, transformers 4.57),
// transcribed operation by operation, quirks included:
// - Qwen2.5-Omni: int64 positions; video time index long(float32(t·spg)·25); audio-in-video
//   splits video and audio positions into chunks of int(25·2.0) = 50 time units (the processor's
//   `get_chunked_index`, which opens a new chunk per token past each threshold) and interleaves
//   them chunk by chunk (video first); the two bos share one position, the two eos another;
//   every "next start" is the *last appended run's* max + 1 (not the global max).
// - Qwen3-Omni: float32 positions (time index t·spg·13 unrounded); the two bos/eos get two
//   positions each; audio in video merges token by token (a video token first while its time ≤
//   the next audio position); audio lengths by the 3-Omni formula (13 per 100 frames).
// - Both: audio-only sequences and sequences without image/video grids get plain positions
//   (cumsum of the mask − 1; masked positions 1 for 2.5-Omni, 0 for 3-Omni).
// Pure functions; thread-safe. Errors: InvalidArgument (a run without its grid or audio length,
// a pad that is not where the walk expects it, a vision start as the last token).
//
// Lives in batch/ beside mrope.h (the VL families' get_rope_index): positions are a function of
// the token sequence and every medium's grid/length, not of audio; the Omni family seam can call
// it like mrope. The audio token counts (audio_seqlens → tokens) use audio/features.h's formulas,
// restated here (batch does not depend on audio).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/batch/mrope.h"

namespace stoker::batch {

enum class OmniFamily { kQwen25Omni, kQwen3Omni };

struct OmniRopeConfig {
  OmniFamily family = OmniFamily::kQwen25Omni;
  int spatial_merge_size = 2;
  std::int32_t image_token_id = 151655;
  std::int32_t video_token_id = 151656;
  std::int32_t audio_token_id = 151646;
  std::int32_t vision_start_token_id = 151652;
  std::int32_t audio_start_token_id = 151647;
  double position_id_per_seconds = 25;  // config: 25 (2.5-Omni), 13 (3-Omni hub config)
  double seconds_per_chunk = 2.0;       // 2.5-Omni only

  // transformers' class defaults (token ids of the thinker config). Qwen3-Omni's hub config uses
  // other ids (<|audio_start|>/<|audio_pad|>: UNCONFIRMED here): pass the folder's values.
  static OmniRopeConfig qwen25_omni();
  static OmniRopeConfig qwen3_omni();
};

// ---- the processor side: how `<|vision_bos|><|VIDEO|><|vision_eos|>` expands with audio ----
struct TokenRun {
  bool audio = false;
  std::int64_t count = 0;
};
// The runs between `<|vision_bos|><|audio_bos|>` and `<|audio_eos|><|vision_eos|>`: video tokens
// (grid_t·(h/m)·(w/m)) and `audio_tokens` audio tokens in the processor's order (2.5-Omni:
// chunk j's video then chunk j's audio, times in float64 = t·spg·25; 3-Omni: token-level merge
// with times t·spg·13). `second_per_grid` = temporal_patch_size / fps.
std::vector<TokenRun> audio_in_video_layout(const OmniRopeConfig& config, const GridTHW& video_grid,
                                            double second_per_grid, std::int64_t audio_tokens);

// Audio tokens of a clip whose feature_attention_mask sums to `frames` (the models' formulas with
// Python floor division; audio/features.h audio_token_count gives the same numbers).
std::int64_t omni_audio_tokens(OmniFamily family, std::int64_t frames);

// ---- the model side ----
struct OmniRopeIndex {
  std::int64_t length = 0;
  // Row-major 3 × length (temporal, height, width): int64 values for 2.5-Omni, float32 values
  // for 3-Omni, both exactly representable here.
  std::vector<double> positions;
  double rope_delta = 0;  // max + 1 − (unmasked length)
  double at(int row, std::int64_t i) const { return positions[static_cast<std::size_t>(row * length + i)]; }
};

// `audio_frames`: each audio's feature_attention_mask sum, in order of appearance (standalone
// audios and videos' audio tracks alike); `second_per_grids`: one per video. Positions of masked
// tokens (attention_mask 0) are the model's init value (1 for 2.5-Omni, 0 for 3-Omni).
Result<OmniRopeIndex> get_omni_rope_index(std::span<const std::int32_t> input_ids,
                                          std::span<const GridTHW> image_grids,
                                          std::span<const GridTHW> video_grids,
                                          std::span<const double> second_per_grids,
                                          std::span<const std::int64_t> audio_frames,
                                          bool use_audio_in_video, const OmniRopeConfig& config,
                                          std::span<const std::uint8_t> attention_mask = {});

}  // namespace stoker::batch
