// Videos given as a list of frame images (qwen-vl-utils' "video as a list of images"), as
// qwen-vl-utils reads them: each frame fetched and sized as an image (fetch_image: smart_resize
// with the element's min/max_pixels, else the image defaults 4·f² and 16384·f², then Pillow's
// exact bicubic), the frames stacked (every frame must resize to the first one's size), the count
// padded to even with the last frame, and the stack resized again as video frames (torch's
// bicubic, resize.h) to the plan's per-frame size. plan_frame_list reads headers only;
// read_frame_list decodes into the resized uint8 frames (the uint8 wire's form) and
// process_frame_list writes pixel_values_videos rows. Thread-safe (no shared state).
// Errors: the image decoders' (with "frame k"), InvalidArgument (frames that do not stack).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/video/processor.h"

namespace stoker::video {

struct FrameListPlan {
  VideoPlan plan;
  int frame_width = 0, frame_height = 0;  // each frame after its image resize
  // Resized uint8 frames (T × plan.frames.height × width × 3, T = plan.stream_positions.size()).
  std::uint64_t frames_bytes() const {
    return plan.stream_positions.size() * static_cast<std::uint64_t>(plan.frames.width) *
           plan.frames.height * 3;
  }
};

Result<FrameListPlan> plan_frame_list(const VideoProcessor& processor, const VideoOptions& options,
                                      std::span<const std::vector<std::uint8_t>> frames);
// The plan's resized frames into `out` (frames_bytes()).
Status read_frame_list(const FrameListPlan& plan, std::span<const std::vector<std::uint8_t>> frames,
                       std::uint8_t* out);
// pixel_values_videos rows (plan.rows() × columns of `dtype`) into `out`.
Status process_frame_list(const VideoProcessor& processor, const FrameListPlan& plan,
                          std::span<const std::vector<std::uint8_t>> frames, VideoDType dtype,
                          void* out);

}  // namespace stoker::video
