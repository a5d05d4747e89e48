// Frame sampling and per-frame size rules of qwen-vl-utils 0.0.14 (QwenLM/Qwen3-VL @
// 96588727e44c78b25ba03ea03b8e12f7e64fd0da, qwen-vl-utils/src/qwen_vl_utils/vision_process.py),
// with its torchvision backend's semantics (`_read_video_torchvision`, the backend qwen-vl-utils
// falls back to and the one that runs here: torchvision 0.14 `io.read_video` on PyAV):
//  * the frames of a clip are the decoded frames whose pts lies in [floor(start/tb), ceil(end/tb)],
//    sorted by pts (duplicates counted once), plus — when the start is not 0 and no frame sits
//    exactly on it — the last frame before the start (torchvision's `_read_from_stream`);
//  * total_frames = their count, video_fps = the stream's average frame rate;
//  * nframes = smart_nframes(), indices = torch.linspace(0, total − 1, nframes) in float32 with
//    torch 1.13's AVX2 kernel, rounded half to even; sample_fps = nframes / total · video_fps;
//  * per-frame pixel budget: max(min(768·f², total_pixels / nframes · 2), int(min_pixels · 1.05)),
//    capped by a user max_pixels; the qwen-vl-utils smart_resize (not transformers') with it.
// Pure functions, thread-safe. Errors: InvalidArgument naming the rule that refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::video {

inline constexpr int kFrameFactor = 2;
inline constexpr double kDefaultFps = 2.0;
inline constexpr int kFpsMinFrames = 4;
inline constexpr int kFpsMaxFrames = 768;
inline constexpr int kVideoMinTokens = 128;
inline constexpr int kVideoMaxTokens = 768;
inline constexpr std::int64_t kModelSeqLen = 128000;  // qwen-vl-utils MODEL_SEQ_LEN default

// The per-video keys qwen-vl-utils reads from a {"type": "video", ...} part. Unset = its default.
struct VideoOptions {
  std::optional<double> fps;        // sampling rate (default 2.0); exclusive with nframes
  std::optional<double> nframes;    // exact frame count (rounded to a multiple of 2)
  std::optional<double> min_frames, max_frames;
  std::optional<double> video_start, video_end;  // seconds
  std::optional<double> min_pixels, max_pixels, total_pixels;
  // Image-list videos: the sampling rate to report (qwen-vl-utils "sample_fps", default 2.0)
  // and the original rate for timestamps ("raw_fps", default sample_fps).
  std::optional<double> sample_fps, raw_fps;

  Status validate() const;  // fps and nframes both set; negative or non-finite values
};

// Python's round() (half to even) of a double.
double round_half_even(double x);

// smart_nframes: how many frames to sample from `total_frames` at `video_fps`.
// InvalidArgument when the result is outside [2, total_frames] (qwen-vl-utils' ValueError).
Result<int> smart_nframes(const VideoOptions& options, std::int64_t total_frames, double video_fps);

// torch.linspace(start, end, steps) (float32, torch 1.13 CPU AVX2 kernel: 8-lane blocks of
// `base + k·step` computed from the block's first index) then .round() half-to-even → int64.
std::vector<std::int64_t> linspace_round(double start, double end, std::int64_t steps);

// The frames a clip covers, as torchvision's read_video selects them from a video's frame pts
// (`sorted_pts`: ascending, unique). Returns indices into sorted_pts. `time_base` = num/den.
struct ClipRange {
  std::int64_t first = 0;  // index into sorted_pts
  std::int64_t count = 0;
};
ClipRange clip_range(const std::vector<std::int64_t>& sorted_pts, int tb_num, int tb_den,
                     std::optional<double> video_start, std::optional<double> video_end);

// The frame plan of one video: which of the clip's frames to keep and the per-frame size.
struct FramePlan {
  std::int64_t total_frames = 0;       // in the clip
  double video_fps = 0;                // original (average) frame rate
  std::vector<std::int64_t> indices;   // into the clip, as qwen-vl-utils' frames_indices
  double sample_fps = 0;               // nframes / total · video_fps
  int width = 0, height = 0;           // per-frame size after smart_resize
};

// qwen-vl-utils smart_resize (its own, with float pixel bounds): InvalidArgument for an aspect
// ratio over 200 or a side that rounds to 0.
struct FrameSize {
  int height = 0, width = 0;
};
Result<FrameSize> qwen_smart_resize(int height, int width, int factor, double min_pixels,
                                    double max_pixels);

// The per-frame pixel bounds for `nframes` frames (fetch_video): {min_pixels, max_pixels}.
std::pair<double, double> frame_pixel_bounds(const VideoOptions& options, int nframes,
                                             int factor);

// Everything above for a decoded video's metadata. `factor` = patch · merge (28 or 32).
Result<FramePlan> plan_frames(const VideoOptions& options, std::int64_t total_frames,
                              double video_fps, int src_width, int src_height, int factor);

}  // namespace stoker::video
