// The video processor: qwen-vl-utils' fetch_video (torchvision backend semantics, sampling.h)
// followed by the transformers video processor as Qwen's examples call it (do_resize=False,
// frames already sized): fused rescale+normalise in float32, (x − 255·mean) / (255·std) with
// mean/std as float32 tensors times 255 (transformers' _fuse_mean_std_and_rescale_factor), then
// temporal patching (spec §1.5: T frames → grid_t = T/2) into `pixel_values_videos` rows.
// Side outputs: video_grid_thw, second_per_grid_ts (Qwen2.5-VL: temporal_patch_size /
// sample_fps) and the Qwen3-VL timestamps (frame index / original fps, averaged per group).
// A VideoProcessor is immutable and thread-safe; a VideoReader is per call.
// Errors: those of VideoReader and plan_frames, with context.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/video/decode.h"
#include "stoker/video/resize.h"
#include "stoker/video/sampling.h"

namespace stoker::video {

struct VideoProcessorConfig {
  int patch_size = 14;
  int temporal_patch_size = 2;
  int merge_size = 2;
  std::array<float, 3> mean = {0.48145466f, 0.4578275f, 0.40821073f};
  std::array<float, 3> std = {0.26862954f, 0.26130258f, 0.27577711f};
  DecodeLimits limits = {};

  int factor() const { return patch_size * merge_size; }
  Status validate() const;
};

// kUInt8: for finishing on the trainer's device (issue 26): the resized frames themselves,
// grid_t · temporal_patch_size of them, each [H, W, 3] (raster order) — [F, H, W, 3], a last
// frame repeated for the temporal padding as patchify does. That is rows() × columns() bytes;
// stoker.finish cuts it into patches on the device and value_table() gives what normalise makes
// of each byte.
enum class VideoDType { kFloat32, kBFloat16, kUInt8 };

struct VideoPlan {
  FramePlan frames;                          // indices are into the clip
  std::vector<std::int64_t> stream_positions;  // the same frames as indices into info().pts
  int src_width = 0, src_height = 0;
  int grid_t = 0, grid_h = 0, grid_w = 0;
  double second_per_grid_t = 0;       // Qwen2.5-VL: temporal_patch_size / sample_fps
  std::vector<double> group_seconds;  // Qwen3-VL timestamps, one per temporal group
  std::int64_t rows() const { return std::int64_t{grid_t} * grid_h * grid_w; }
  std::int64_t tokens(int merge) const { return rows() / (merge * merge); }
};

// Resized uint8 frames, T × height × width × 3 (what qwen-vl-utils returns before `.float()`).
struct VideoFrames {
  int width = 0, height = 0;
  std::vector<std::uint8_t> pixels;
  std::int64_t count() const {
    return width && height ? static_cast<std::int64_t>(pixels.size()) / (std::int64_t{width} * height * 3) : 0;
  }
  std::uint8_t* frame(std::int64_t t) { return pixels.data() + t * width * height * 3; }
  const std::uint8_t* frame(std::int64_t t) const { return pixels.data() + t * width * height * 3; }
};

class VideoProcessor {
 public:
  static Result<VideoProcessor> create(const VideoProcessorConfig& config);
  const VideoProcessorConfig& config() const { return config_; }
  std::int64_t columns() const;  // 3 · tps · P · P (the same count for kUInt8 rows, in bytes)
  // out[c·256 + x] = the value (float32 or bf16 bits) patchify writes for byte x of channel c:
  // (float32(x) − mean255) / std255 in float32, bf16 by round-to-nearest-even. `dtype` ≠ kUInt8.
  void value_table(VideoDType dtype, void* out) const;

  // The plan of a video file already opened (its packet scan done).
  Result<VideoPlan> plan(const VideoReader& reader, const VideoOptions& options) const;
  // A video given as a list of frames (qwen-vl-utils: each frame is fetched as an image; the
  // count is padded to even with the last frame; sample_fps defaults to 2.0).
  Result<VideoPlan> plan_frame_list(int frame_count, int width, int height,
                                    const VideoOptions& options) const;

  // Decodes and resizes the planned frames (memory: the resized frames only).
  Status read_frames(VideoReader& reader, const VideoPlan& plan, VideoFrames* out,
                     DecodeStats* stats = nullptr) const;
  // The same into caller memory: stream_positions.size() frames of plan.frames.width ×
  // height × 3 bytes (the uint8 wire's form of a video).
  Status read_frames(VideoReader& reader, const VideoPlan& plan, std::uint8_t* out,
                     DecodeStats* stats = nullptr) const;
  // Normalise + patchify resized frames into plan.rows() × columns() elements of `dtype`.
  void patchify(const VideoFrames& frames, const VideoPlan& plan, VideoDType dtype,
                void* out) const;
  // The same for `count` resized frames held at `frames` (plan.frames.width × height × 3 each).
  void patchify(const std::uint8_t* frames, std::int64_t count, const VideoPlan& plan,
                VideoDType dtype, void* out) const;
  // The rows of temporal group `gt` from its temporal_patch_size resized frames (`frames[tp]`,
  // plan.frames.width × height × 3), at `out` + gt · (grid_h·grid_w) rows.
  void patchify_group(const std::uint8_t* const* frames, const VideoPlan& plan, int gt,
                      VideoDType dtype, void* out) const;
  // Whether `plan` fits this processor (frames of grid × patch pixels, the grid tiles merge
  // blocks, 1 … grid_t·temporal_patch_size frames, grid_t of them making grid_t groups):
  // InvalidArgument otherwise. process() and process_frame_list check it; a plan from elsewhere
  // (the cluster's wire) is checked before its pixels are finished.
  Status check_plan(const VideoPlan& plan) const;
  // Streaming: decode → resize → patchify group by group straight into `out` (rows × columns of
  // `dtype`); memory: one temporal group of resized frames.
  Status process(VideoReader& reader, const VideoPlan& plan, VideoDType dtype, void* out,
                 DecodeStats* stats = nullptr) const;

 private:
  explicit VideoProcessor(const VideoProcessorConfig& c);
  VideoProcessorConfig config_;
  std::array<float, 3> mean255_{}, std255_{};
};

// Convenience for tools and tests: open + plan + process (streaming: pixel_values, stats), and
// the resized frames from a second decode.
struct ProcessedVideo {
  StreamInfo info;
  VideoPlan plan;
  VideoFrames frames;
  std::vector<float> pixel_values;  // rows × columns
  DecodeStats stats;
};
Result<ProcessedVideo> process_video(std::span<const std::uint8_t> bytes,
                                     const VideoProcessor& processor, const VideoOptions& options);

}  // namespace stoker::video
